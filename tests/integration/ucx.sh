#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# ucx.sh: UCX (Debian's ucx-utils) on vRNICs inside `unirdma exec` containers,
# with default settings: nothing set by hand but the transports to use.
#   info     ucx_info -d lists the vRNIC as a memory domain with rc_verbs and
#            ud_verbs; the container has what UCX reads for that:
#            /dev/infiniband/uverbs0 and /sys/class/infiniband/<vRNIC> (GID 0
#            of type RoCE v2 on eth0)
#   rc_ud    ucx_perftest UCP tag_lat, tag_bw and ucp_put_bw between two
#            tenants' containers over UCX_TLS=rc_verbs,ud_verbs,self
#   ud_only  the same over ud_verbs alone (UCX's UD drops a packet whose GRH
#            destination it does not find in its GID table: wc.sl tells it the
#            GRH area holds an IPv4 header, as ConnectX does)
# Each ucx_perftest run is checked for its final figures and for the bytes the
# vRNICs counted: the traffic went through them, not through UCX's tcp or shm.
. "$(dirname "$0")/lib.sh"

require_ucx() { require_prog ucx_info ucx_perftest; }

case_info() {
	require_ucx
	local out types gid
	out=$(in_container "$VR_A" ucx_info -d 2>&1)
	check "ucx_info lists $VR_A as a memory domain" grep -q "# Memory domain: $VR_A\$" <<<"$out"
	check "with rc_verbs on $VR_A:1" bash -c "grep -A2 'Transport: rc_verbs' <<<\"\$1\" | grep -q 'Device: $VR_A:1'" _ "$out"
	check "and ud_verbs on $VR_A:1" bash -c "grep -A2 'Transport: ud_verbs' <<<\"\$1\" | grep -q 'Device: $VR_A:1'" _ "$out"
	out=$(in_container "$VR_A" sh -c "test -c /dev/infiniband/uverbs0 && echo node;
		cat /sys/class/infiniband/$VR_A/ports/1/gid_attrs/types/0 /sys/class/infiniband/$VR_A/ports/1/gid_attrs/ndevs/0 \
		    /sys/class/infiniband/$VR_A/ports/1/gids/0 /sys/class/infiniband/$VR_A/ports/1/link_layer;
		ls /sys/class/net; touch /sys/class/infiniband/x 2>/dev/null && echo writable" 2>&1)
	sed 's/^/  | /' <<<"$out"
	check "/dev/infiniband/uverbs0 is a character device" grep -qx node <<<"$out"
	check "GID 0 is RoCE v2 on eth0, ::ffff:$IP_A, link layer Ethernet" bash -c \
		"grep -qx 'RoCE v2' <<<\"\$1\" && grep -qx eth0 <<<\"\$1\" && grep -qx Ethernet <<<\"\$1\" &&
		 grep -qx \"0000:0000:0000:0000:0000:ffff:\$(printf '%02x%02x:%02x%02x' \${2//./ })\" <<<\"\$1\"" _ "$out" "$IP_A"
	check "the other classes are still there (net)" grep -qx lo <<<"$out"
	check "and /sys/class is read-only" bash -c "! grep -qx writable <<<\"\$1\"" _ "$out"
	checks_result
}

# perf TLS TEST SIZE ITERS: one ucx_perftest pair over UCX_TLS=TLS.
perf() {
	local tls=$1 t=$2 size=$3 n=$4 before after
	before=$(tx_bytes_of "$VR_A" "$VR_B")
	UCX_TLS=$tls run_pair -p 13337 "ucx_perftest" "ucx_perftest $IP_A -t $t -s $size -n $n" || return 1
	after=$(tx_bytes_of "$VR_A" "$VR_B")
	check "$t over $tls: final figures, all positive" awk '
		$1 == "Final:" && NF == 9 { ok = 1; for (i = 2; i <= NF; i++) if ($i + 0 <= 0) ok = 0 }
		END { exit !ok }' "$PAIR_CLIENT_OUT"
	say "  $VR_A and $VR_B sent $((after - before)) bytes"
	check "  the traffic went through the vRNICs (>= $((size * n)) bytes)" test $((after - before)) -ge $((size * n))
}

case_transports() {
	require_ucx
	local tls=$1
	export UCX_TLS=$tls
	perf "$tls" tag_lat 8 2000
	perf "$tls" tag_bw 65536 500
	perf "$tls" ucp_put_bw 65536 500
	checks_result
}

add_case info case_info
add_case rc_ud case_transports rc_verbs,ud_verbs,self
add_case ud_only case_transports ud_verbs
run_cases "$@"
