#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rxe_interop.sh: unirdma's wire against Linux's own SoftRoCE (rdma_rxe) in a
# QEMU TCG guest (tests/vm/build-rxe-image.sh) with rdma-core's unmodified
# programs, on the multi-host underlay of mhlib.sh.  The guest's NIC 1 is on
# br0 at 10.78.0.200 (rxe0 on it, RoCEv2 GID index 1); its NIC 2 is on tenant
# t1's LAN at 10.78.0.201 with a /32 route to the container's address, so the
# programs' TCP exchange goes over the LAN and RoCE over the underlay.  The
# underlay is captured with tshark and checked (mhlib.sh mh_pcap_check).
#
# rxe_selfcheck   the harness alone: two rxe guests (10.78.0.200 and .202)
#                 run ibv_rc_pingpong -c, ib_write_bw and rping (rdma_cm over
#                 the kernel's IB CM) over br0; the capture must be clean
#                 RoCEv2.  No unirdma involved: it checks the harness (the
#                 guest image, the capture checker), which every other case
#                 here also needs, so it runs only with UNIRDMA_TEST_HARNESS=1
#                 (23 s of make test's 20 minutes).
# rxe_pingpong (ibv_rc_pingpong, ibv_ud_pingpong), rxe_perftest (ib_write_bw,
# ib_read_lat, ib_atomic_bw), rxe_ib_send_bw (4 sizes)  a container of vRNIC
#                 h1v1 (10.78.0.11, host 1, --underlay ul0) against the guest,
#                 each case on one boot of it: first the guest serves and the
#                 container is the client, then the other way round
#                 (both_ways).
# rxe_uc_guest_client  the same, only the container serving.
# rxe_cm_guest_server, rxe_cm_guest_client  rping and rstream (rdma_cm),
#                 the guest serving / the guest the client, one boot each.
#                 The cases against a container skip until the daemon has
#                 the wire and `unirdma peer admit` (the guest as an external
#                 peer of t1).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mhlib.sh"

CASE_SETUP=:
GUEST=10.78.0.200
GUEST_LAN=10.78.0.201
# retry CMD...: shell text that runs CMD until it connects (a server that is
# not listening yet: the guest is slow under TCG), at most 30 times
RETRY='retry() { i=0; while :; do "$@" >/tmp/retry.out 2>&1; rc=$?; cat /tmp/retry.out; grep -Eq "Couldn.t connect|Connection refused|Unable to open file descriptor" /tmp/retry.out || return $rc; i=$((i + 1)); [ $i -lt 30 ] || return $rc; echo "(not listening yet: retry $i)"; sleep 1; done; }'

rxe_selfcheck() {
	local a b rc
	[ "${UNIRDMA_TEST_HARNESS:-0}" = 1 ] || skip "the harness's own check: UNIRDMA_TEST_HARNESS=1 runs it"
	mh_setup 0
	mh_rxe_prepare
	mh_capture start
	a="echo URD-LISTEN
ibv_rc_pingpong -d rxe0 -g 1 -c -n 20 -s 4096; echo \"URD-CMD-EXIT \$?\"
ib_write_bw -d rxe0 -x 1 -F -n 200; echo \"URD-CMD-EXIT \$?\"
rping -s -a $GUEST -v -C 3; echo \"URD-CMD-EXIT \$?\""
	b="$RETRY
retry ibv_rc_pingpong -d rxe0 -g 1 -c -n 20 -s 4096 $GUEST || exit 1
sleep 1
retry ib_write_bw -d rxe0 -x 1 -F -n 200 $GUEST || exit 1
sleep 1
rping -c -a $GUEST -v -C 3"
	mh_rxe_boot srv "$GUEST" "$a"
	mh_rxe_boot cli 10.78.0.202 "$b"
	mh_rxe_finish cli 120
	rc=$?
	mh_rxe_finish srv 20
	check "the client guest's programs succeeded" test "$rc" -eq 0
	check "the server guest's pingpong, ib_write_bw and rping succeeded" \
		test "$(tr -d '\r' <"${MH_RXE_DIR[srv]}/console" | grep -c '^URD-CMD-EXIT 0$')" -eq 3
	check "rping (rdma_cm: IB CM over QP1) between the guests: 3 pings" \
		test "$(grep -c 'ping data: rdma-ping-' "${MH_RXE_DIR[cli]}/console")" -eq 3
	check "the pingpong checked its data (-c) and finished" grep -q '20 iters in' "${MH_RXE_DIR[cli]}/console"
	mh_capture stop
	check "the underlay capture is clean RoCEv2" mh_pcap_check "$MH_PCAP"
	checks_result
}
add_case rxe_selfcheck rxe_selfcheck

# rxe_lan: the guest's two NICs without RDMA: TCP both ways between the guest
# (NIC 2, 10.78.0.201) and a container on host 1 over tenant t1's LAN, the
# guest's source address right; the guest reaches host 1's ul0 over NIC 1.
# Needs a daemon (for the container), not the wire.
rxe_lan() {
	local script spid out=$WORK/lan.server sum pidf=$WORK/lan.pid i
	mh_setup 1
	mh_rxe_prepare
	mh_daemon 1 || return 1
	mh_vrnic 1 1
	# a second vRNIC for the second container: each container of a vRNIC has
	# its address, two at once would be two hosts with one address on the LAN
	mh_vrnic 1 2
	mh_tenant_lan t1
	mh_exec_cmd 1
	"${MH_EXEC[@]}" --pidfile "$pidf" h1v1 -- python3 "$TOP/tests/netsim/netprobe.py" tcpserve 18601 50000 >"$out" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((i = 0; i < 200; i++)); do
		[ -s "$pidf" ] && listening "$(cat "$pidf")" 18601 && break
		sleep 0.05
	done
	script="echo URD-LISTEN
nc -l -p 18600 >/tmp/got </dev/null; echo \"got \$(wc -c </tmp/got) sha256 \$(sha256sum </tmp/got | cut -d' ' -f1)\"
head -c 50000 /dev/urandom >/tmp/d; echo \"sent sha256 \$(sha256sum </tmp/d | cut -d' ' -f1)\"
echo \"answer \$(nc -w 10 $(mh_ip 1 1) 18601 </tmp/d)\"
ping -c 2 -W 2 $MH_NET.1 >/dev/null && echo URD-UNDERLAY-OK"
	mh_rxe_boot rxe "$GUEST" "$script" t1 "$GUEST_LAN" "$(mh_ip 1 1)" "$(mh_ip 1 2)"
	mh_rxe_wait rxe URD-LISTEN 60 || { mh_rxe_finish rxe 1; die "the guest did not come up"; }
	sum=$(mh_container 1 h1v2 -- python3 "$TOP/tests/netsim/netprobe.py" tcpput "$GUEST_LAN" 18600 100000 | awk '{ print $2 }')
	mh_rxe_finish rxe 60
	local con=${MH_RXE_DIR[rxe]}/console
	check "container -> guest over the LAN: 100000 bytes intact" grep -q "got 100000 sha256 $sum" "$con"
	wait_for_exit "$spid" 10
	sed 's/^/  | /' "$out"
	check "guest -> container: the container saw the guest's LAN address" grep -q "served 50000 bytes from $GUEST_LAN" "$out"
	check "and answered the digest of what the guest sent" \
		test "$(sed -n 's/^sent sha256 //p' "$con" | tr -d '\r')" = "$(sed -n 's/^answer //p' "$con" | tr -d '\r')"
	check "the guest reaches host 1's ul0 over NIC 1" grep -q URD-UNDERLAY-OK "$con"
	checks_result
}
add_case rxe_lan rxe_lan

# interop_setup: host 1's daemon on the underlay, vRNIC h1v1, tenant LAN t1,
# the guest admitted as an external peer of t1.
interop_setup() {
	mh_has_wire || skip "unirdmad has no --underlay yet (the wire, issue 11)"
	mh_setup 1
	"$UNIRDMA" peer admit --help >/dev/null 2>&1 ||
		skip "unirdma has no 'peer admit' yet (the directory, issue 11): the daemon would drop the guest's packets"
	mh_rxe_prepare
	mh_daemon 1 || return 1
	mh_vrnic 1 1
	mh_tenant_lan t1
	mh_cli 1 peer admit "$GUEST" --tenant t1 || die "peer admit $GUEST failed"
	mh_capture start
}

# both_ways [--guest-client] GUEST_CMD CONTAINER_CMD [ARGS...]: both
# directions on one set-up and one boot of the guest.  For each ARGS (one
# word list, e.g. "-s 1024"; none: one run) in turn:
#   1. the guest serves: the guest runs GUEST_CMD ARGS as the server, the
#      container CONTAINER_CMD ARGS GUEST_LAN as the client;
#   2. then the container serves: it runs CONTAINER_CMD ARGS as the server,
#      the guest GUEST_CMD ARGS to the container's address (over the LAN) as
#      the client.
# A command with an @ has ARGS in its place instead of after it (several
# programs on one boot: "@ -d rxe0 -x 1 -F" with ARGS "ib_write_bw -n 200").
# Each half's underlay traffic is captured on its own (the first
# $MH_CAPTURE_MAX frames of each) and checked.  A container's client that
# fails in half 1 leaves the guest's server waiting: the case stops there.
# --guest-client: half 2 only.
both_ways() {
	local serve=1 gcmd ccmd ip script a n rc=0 out tmo pidf spid src='' i pcap1
	if [ "$1" = --guest-client ]; then
		serve=0
		shift
	fi
	gcmd=$1 ccmd=$2
	shift 2
	[ $# -gt 0 ] || set -- ""
	# each run's whole commands
	local gl=() cl=()
	for a in "$@"; do
		if [[ $gcmd == *@* ]]; then
			gl+=("${gcmd//@/"$a"}") cl+=("${ccmd//@/"$a"}")
		else
			gl+=("$gcmd $a") cl+=("$ccmd $a")
		fi
	done
	ip=$(mh_ip 1 1)
	interop_setup || return 1
	# the guest's script: its servers (half 1), URD-CLIENTS, its clients (half
	# 2).  Half 2's container is not half 1's: the same address, another MAC
	# address.  A SYN to the one the guest learnt in half 1 would go nowhere,
	# for a minute of TCP's retries: fresh CMD forgets it before each try.
	script=$RETRY$'\n'"fresh() { ip neigh flush dev eth1 >/dev/null 2>&1; \"\$@\"; }"$'\n'
	n=0
	if [ "$serve" = 1 ]; then
		for a in "${gl[@]}"; do
			script+="echo URD-LISTEN $n; $a; echo \"URD-SERVER-EXIT \$?\""$'\n'
			n=$((n + 1))
		done
	fi
	script+="echo URD-CLIENTS"$'\n'"rc=0"$'\n'
	for a in "${gl[@]}"; do
		script+="sleep 1; retry fresh $a $ip; r=\$?; echo \"URD-CLIENT-EXIT \$r\"; [ \$r -eq 0 ] || rc=\$r"$'\n'
	done
	script+='exit $rc'
	mh_rxe_boot rxe "$GUEST" "$script" t1 "$GUEST_LAN" "$ip"

	# ---- half 1: the guest serves, the container's clients ----
	n=0
	if [ "$serve" = 1 ]; then
		for a in "${cl[@]}"; do
			mh_rxe_wait rxe "URD-LISTEN $n" 90 || { mh_rxe_finish rxe 1; die "the guest did not get to run $n"; }
			out=$WORK/client$n.out
			say "+ client in container h1v1: $a $GUEST_LAN"
			# shellcheck disable=SC2086 # word lists
			timeout 120 env UNIRDMA_STATE_DIR="${MH_STATE[1]}" "$UNIRDMA" exec h1v1 -- \
				sh -c "$RETRY; retry $a $GUEST_LAN" >"$out" 2>&1
			rc=$?
			sed 's/^/  | /' "$out"
			check "the container's client ($a) succeeded" test "$rc" -eq 0
			n=$((n + 1))
			# a failed client leaves the guest's server waiting: stop here
			[ "$rc" -eq 0 ] || break
		done
		if [ "$rc" -ne 0 ]; then
			mh_rxe_finish rxe 1
			mh_capture stop
			mh_pcap_check "$MH_PCAP"
			return 1
		fi
	fi
	# the guest's servers end (or it boots, with --guest-client) before its clients
	tmo=$([ "$serve" = 1 ] && echo 60 || echo 90)
	if ! mh_rxe_wait rxe URD-CLIENTS "$tmo"; then
		mh_rxe_finish rxe 1
		[ "$serve" = 0 ] || check "the guest's server ran $# times, each successful" \
			test "$(tr -d '\r' <"${MH_RXE_DIR[rxe]}/console" | grep -c '^URD-SERVER-EXIT 0$')" -eq "$#"
		mh_capture stop
		[ "$serve" = 0 ] || mh_pcap_check "$MH_PCAP"
		die "the guest did not get to its clients in $tmo s"
	fi
	if [ "$serve" = 1 ]; then
		check "the guest's server ran $# times, each successful" \
			test "$(tr -d '\r' <"${MH_RXE_DIR[rxe]}/console" | grep -c '^URD-SERVER-EXIT 0$')" -eq "$#"
		# half 2 in a capture of its own (checked at the end, not while the
		# guest runs)
		mh_capture stop
		pcap1=$MH_TMP/guest-serves.pcap
		mv "$MH_PCAP" "$pcap1"
		mh_capture start
	fi

	# ---- half 2: the container serves each run in turn, the guest's clients ----
	out=$WORK/server.out
	pidf=$WORK/server.pid
	mh_exec_cmd 1
	# shellcheck disable=SC2016 # expanded by the container's shell
	"${MH_EXEC[@]}" --pidfile "$pidf" h1v1 -- sh -c 'rc=0; for c in "$@"; do $c || rc=$?; done; exit $rc' \
		sh "${cl[@]}" >"$out" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	# until the guest powers off (150 s at most); a container's server that
	# ended in failure leaves the guest's clients retrying, 30 s each: the
	# guest has 10 s more then
	for ((i = 0; i < 1500; i++)); do
		kill -0 "${MH_RXE_PID[rxe]}" 2>/dev/null || break
		if [ -z "$src" ] && ! kill -0 "$spid" 2>/dev/null; then
			wait "$spid"
			src=$?
		fi
		[ "${src:-0}" -eq 0 ] || break
		sleep 0.1
	done
	mh_rxe_finish rxe "$([ "${src:-0}" -eq 0 ] && echo 1 || echo 10)"
	rc=$?
	check "the guest's clients succeeded" test "$rc" -eq 0
	if [ -z "$src" ] && wait_for_exit "$spid" 10; then
		wait "$spid"
		src=$?
	fi
	if [ -n "$src" ]; then
		check "the container's server succeeded" test "$src" -eq 0
	else
		hang_report "$(cat "$pidf" 2>/dev/null)"
		check "the container's server finished" false
	fi
	say "--- the container's server ---"
	sed 's/^/  | /' "$out"
	mh_capture stop
	[ "$serve" = 0 ] ||
		check "the underlay capture is clean RoCEv2 (the guest serving)" mh_pcap_check "$pcap1"
	check "the underlay capture is clean RoCEv2$([ "$serve" = 1 ] && echo " (the container serving)")" \
		mh_pcap_check "$MH_PCAP"
	checks_result
}

# rdma-core's ibv_*_pingpong: the guest's GID index is 1 (index 0 is fe80::),
# the container's 0; -c checks the data.
add_case rxe_pingpong both_ways "@ -d rxe0 -g 1 -c -n 50" "@ -g 0 -c -n 50" \
	"ibv_rc_pingpong -s 4096" "ibv_ud_pingpong -s 512"
# UC: one way in the suite, the guest as the client (the other way passed by hand)
add_case rxe_uc_guest_client both_ways --guest-client "ibv_uc_pingpong -d rxe0 -g 1 -c -n 50 -s 4096" "ibv_uc_pingpong -g 0 -c -n 50 -s 4096"
# perftest: -x GID index, -F no CPU-frequency check; ib_send_bw with several
# message sizes around the 1024-byte active MTU of a 1500-byte link
add_case rxe_perftest both_ways "@ -d rxe0 -x 1 -F" "@ -x 0 -F" \
	"ib_write_bw -n 200" "ib_read_lat -n 100" "ib_atomic_bw -n 200"
add_case rxe_ib_send_bw both_ways "ib_send_bw -n 100 -d rxe0 -x 1 -F" "ib_send_bw -n 100 -x 0 -F" \
	"-s 1000" "-s 1024" "-s 2048" "-s 4500"

# rdma_cm against the kernel's: rping's connection set-up is IB CM MADs
# between our librdmacm's agent (QP1 of vRNIC h1v1) and the guest's ib_cm
# on rxe0's QP1, then RC traffic checked by -v.  The guest has no LAN here:
# its rdma_cm accepts a request only from an address it routes through
# rxe0's netdev (cma's validate_net_dev), so the container's address is
# reached over the underlay (host 1 answers ARP for it on ul0).  A client
# retries while the other side is not listening yet (REJECTED, 8; rstream's
# asynchronous connect says it as "rpoll: Transport endpoint is not
# connected": a CI run saw the container's rping take a moment to exit).
CM_RETRY='cmretry() { i=0; while :; do "$@" >/tmp/retry.out 2>&1; rc=$?; cat /tmp/retry.out; grep -Eq "REJECTED|refused|rpoll: Transport endpoint is not connected" /tmp/retry.out || return $rc; i=$((i + 1)); [ $i -lt 40 ] || return $rc; echo "(not listening yet: retry $i)"; sleep 0.5; done; }'
RSTREAM_ARGS="-S 4096 -C 20 -T v"
# rping, then rstream (rsockets against rdma-core's: the connection's private
# data, RDMA WRITE with immediate into the other's buffer, credits and
# shutdown are rdma-core's protocol; -T v: rstream checks the data itself),
# with the guest serving both, on one boot of the guest.
cm_guest_server() {
	local out=$WORK/cm.client rc
	interop_setup || return 1
	mh_rxe_boot rxe "$GUEST" "echo URD-LISTEN 0; rping -s -a $GUEST -v -C 5; echo \"URD-CMD-EXIT \$?\"
echo URD-LISTEN 1; rstream -b $GUEST $RSTREAM_ARGS; echo \"URD-CMD-EXIT \$?\""
	mh_rxe_wait rxe "URD-LISTEN 0" 90 || { mh_rxe_finish rxe 1; die "the guest did not come up"; }
	say "+ client in container h1v1: rping -c -a $GUEST -v -C 5"
	timeout 120 env UNIRDMA_STATE_DIR="${MH_STATE[1]}" "$UNIRDMA" exec h1v1 -- \
		sh -c "$CM_RETRY; cmretry rping -c -a $GUEST -v -C 5" >"$out" 2>&1
	rc=$?
	sed 's/^/  | /' "$out"
	check "the container's rping client succeeded" test "$rc" -eq 0
	check "5 pings came back, checked (-v)" test "$(grep -c '^ping data: rdma-ping-' "$out")" -eq 5
	mh_rxe_wait rxe "URD-LISTEN 1" 60 || { mh_rxe_finish rxe 1; die "the guest's rping did not end"; }
	say "+ client in container h1v1: rstream -s $GUEST $RSTREAM_ARGS"
	timeout 120 env UNIRDMA_STATE_DIR="${MH_STATE[1]}" "$UNIRDMA" exec h1v1 -- \
		sh -c "$CM_RETRY; cmretry rstream -s $GUEST $RSTREAM_ARGS" >"$out" 2>&1
	rc=$?
	sed 's/^/  | /' "$out"
	check "the container's rstream client succeeded" test "$rc" -eq 0
	check "its result line" grep -Eq '^custom +[0-9.]+[kmg]? +20 ' "$out"
	mh_rxe_finish rxe 60
	check "the guest's rping and rstream servers succeeded" \
		test "$(tr -d '\r' <"${MH_RXE_DIR[rxe]}/console" | grep -c '^URD-CMD-EXIT 0$')" -eq 2
	check "and rping saw the 5 pings" \
		test "$(grep -c 'server ping data: rdma-ping-' "${MH_RXE_DIR[rxe]}/console")" -eq 5
	mh_capture stop
	check "the underlay capture is clean RoCEv2 (the CM's MADs included)" mh_pcap_check "$MH_PCAP"
	checks_result
}
cm_guest_client() {
	local out=$WORK/cm.server pidf=$WORK/cm.pid spid rc ip
	ip=$(mh_ip 1 1)
	interop_setup || return 1
	mh_exec_cmd 1
	"${MH_EXEC[@]}" --pidfile "$pidf" h1v1 -- \
		sh -c "rping -s -a $ip -v -C 5 && rstream -b $ip $RSTREAM_ARGS" >"$out" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	mh_rxe_boot rxe "$GUEST" "$CM_RETRY
cmretry rping -c -a $ip -v -C 5 || exit 1
cmretry rstream -s $ip $RSTREAM_ARGS"
	mh_rxe_finish rxe 120
	rc=$?
	check "the guest's rping and rstream clients succeeded" test "$rc" -eq 0
	check "5 pings came back to the guest, checked (-v)" \
		test "$(grep -c 'ping data: rdma-ping-' "${MH_RXE_DIR[rxe]}/console")" -eq 5
	check "the guest's rstream result line" grep -Eq 'custom +[0-9.]+[kmg]? +20 ' "${MH_RXE_DIR[rxe]}/console"
	if wait_for_exit "$spid" 10; then
		wait "$spid"
		check "the container's rping and rstream servers succeeded" test $? -eq 0
	else
		hang_report "$(cat "$pidf" 2>/dev/null)"
		check "the container's servers finished" false
	fi
	sed 's/^/  | /' "$out"
	mh_capture stop
	check "the underlay capture is clean RoCEv2 (the CM's MADs included)" mh_pcap_check "$MH_PCAP"
	checks_result
}
add_case rxe_cm_guest_server cm_guest_server
add_case rxe_cm_guest_client cm_guest_client

run_cases "$@"
