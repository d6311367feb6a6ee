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
#   rdmacm_cm UCP's client-server (sockaddr) connection through UCX's rdmacm
#            connection manager over our librdmacm (UCX_SOCKADDR_TLS_PRIORITY=
#            rdmacm): io_demo (ucx-utils) writes and reads checked data for 3 s.
#            Not ucx_perftest: 1.13's peers exchange worker addresses over a
#            TCP socket of its own (-p), it has no ucp_listener mode.
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

# The rdmacm CM listens in the rdma_cm TCP port space, not on a TCP socket:
# the server is ready when its CM agent says so (UNIRDMA_CM_DEBUG), on
# service ID 0x0106 << 16 | port (RDMA_PS_TCP).
case_rdmacm_cm() {
	require_ucx
	require_prog io_demo
	local port=13337 pidf=$WORK/iodemo.pid sout=$WORK/iodemo.server.out cout=$WORK/iodemo.client.out
	local args="-p $port -q -o read,write -d 1024:65536" spid cpid crc init tcp i before after svc
	svc=$(printf 'rdmacm: listening on service 0x%x' $((0x0106 << 16 | port)))
	check "ucx_info lists the rdmacm connection manager" bash -c \
		"grep -qx '# Connection manager: rdmacm' <<<\"\$1\"" _ "$(in_container "$VR_A" ucx_info -d 2>&1)"
	export UCX_TLS=rc_verbs,ud_verbs,self UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_LOG_LEVEL=debug UNIRDMA_CM_DEBUG=2 "$IODEMO_UCX"
	before=$(tx_bytes_of "$VR_A" "$VR_B")
	say "+ server in container $VR_A ($IP_A): io_demo $args"
	# shellcheck disable=SC2086
	"$UNIRDMA" exec --pidfile "$pidf" "$VR_A" -- $LINEBUF io_demo $args >"$sout" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((i = 0; i < 300; i++)); do
		grep -qF "$svc" "$sout" 2>/dev/null && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	if ! grep -qF "$svc" "$sout"; then
		say "the server did not listen through the rdmacm CM; its output:"
		grep -v ' DEBUG ' "$sout" | tail -n 30 | sed 's/^/  | /'
		return 1
	fi
	init=$(cat "$pidf" 2>/dev/null)
	tcp=no
	[ -n "$init" ] && listening "$init" "$port" && tcp=yes
	check "the server listens on rdma_cm port $port, not on a TCP socket" test "$tcp" = no
	say "+ client in container $VR_B ($IP_B): io_demo $args -i 10000000 -l 3s $IP_A"
	# shellcheck disable=SC2086
	timeout -k 5 "$CLIENT_TIMEOUT" "$UNIRDMA" exec "$VR_B" -- $LINEBUF io_demo $args -i 10000000 -l 3s "$IP_A" >"$cout" 2>&1 &
	cpid=$!
	SERVER_PIDS+=("$cpid")
	wait "$cpid"
	crc=$?
	sleep 0.5       # the server's side of the disconnect
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	after=$(tx_bytes_of "$VR_A" "$VR_B")
	say "--- client output (exit code $crc; UCX's debug lines but the CM's left out) ---"
	grep -v ' DEBUG ' "$cout" | sed 's/^/  | /'
	grep -E 'on cm rdmacm|lane\[[0-9]+\]: cm ' "$cout" | sed 's/^/  | /'
	say "--- server output (stopped after the client) ---"
	grep -v ' DEBUG ' "$sout" | sed 's/^/  | /'
	grep -E 'on the [a-z]+ sockaddr transport|lane\[[0-9]+\]: cm ' "$sout" | sed 's/^/  | /'
	check "the client connected and ran its 3 s (exit code 0)" bash -c \
		"[ $crc = 0 ] && grep -q 'Connected to server' \"\$1\"" _ "$cout"
	check "data was written and read back, checked (-q)" awk '
		/\[DEMO\] total / { for (i = 1; i < NF; i++) { if ($i == "read") r += $(i + 1); if ($i == "write") w += $(i + 1) } }
		END { exit !(r > 0 && w > 0) }' "$cout"
	check "the client's UCP endpoint wired up through the rdmacm CM" grep -q 'client created ep .* on cm rdmacm' "$cout"
	check "the server took the request from the rdmacm CM" grep -q 'connection request on the rdmacm sockaddr transport' "$sout"
	check "the CM agents exchanged REQ, REP and RTU (UNIRDMA_CM_DEBUG)" bash -c \
		"grep -qx 'rdmacm: send REQ' \"\$1\" && grep -qx 'rdmacm: recv REP' \"\$1\" &&
		 grep -qx 'rdmacm: recv REQ' \"\$2\" && grep -qx 'rdmacm: recv RTU' \"\$2\"" _ "$cout" "$sout"
	say "  $VR_A and $VR_B sent $((after - before)) bytes"
	check "  the traffic went through the vRNICs (>= 1 MiB)" test $((after - before)) -ge 1048576
	checks_result
}

add_case info case_info
add_case rc_ud case_transports rc_verbs,ud_verbs,self
add_case ud_only case_transports ud_verbs
add_case rdmacm_cm case_rdmacm_cm
run_cases "$@"
