#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmacm.sh: Debian's unmodified rdma_cm programs (rdmacm-utils, perftest -R)
# in containers of two vRNICs through our librdmacm.so.1 (lib/rdmacm/): the
# connections are set up with IB CM MADs on the vRNICs' QP1.
. "$(dirname "$0")/lib.sh"

case_rping() {
	require_prog rping
	check "rping -s / rping -c: both exit 0" cm_pair "rping -s -v -C 10" "rping -c -a $IP_A -v -C 10"
	check "the client printed 10 ping lines" test "$(grep -c '^ping data: rdma-ping-' "$PAIR_CLIENT_OUT")" -eq 10
	check "the server printed 10 ping lines" test "$(grep -c '^server ping data: rdma-ping-' "$PAIR_SERVER_OUT")" -eq 10
	checks_result
}

# valgrind (memcheck, leaks too) over rping and ucmatose, both sides: no
# error in the library (nothing of ours suppressed).
case_valgrind() {
	require_prog valgrind rping ucmatose
	case ${UNIRDMA_EXEC_PRELOAD:-} in *libasan*) skip "valgrind and AddressSanitizer cannot share a process (the sanitizer run)" ;; esac
	# "possibly lost": only the TLS of threads still running at exit (rping's own,
	# libibverbs' event thread, our CM thread), as valgrind reports any such thread
	local vg="valgrind -q --vgdb=no --error-exitcode=99 --leak-check=full --show-possibly-lost=no --errors-for-leak-kinds=definite"
	check "rping under valgrind: both exit 0" cm_pair "$vg rping -s -v -C 3" "$vg rping -c -a $IP_A -v -C 3"
	check "rping: the client printed 3 ping lines" test "$(grep -c '^ping data: rdma-ping-' "$PAIR_CLIENT_OUT")" -eq 3
	check "rping: no valgrind report" bash -c "! grep -q '==[0-9]*==' '$PAIR_SERVER_OUT' '$PAIR_CLIENT_OUT'"
	check "ucmatose under valgrind: both exit 0" cm_pair "$vg ucmatose -C 2" "$vg ucmatose -s $IP_A -C 2"
	check "ucmatose: both completed" test "$(cat "$PAIR_SERVER_OUT" "$PAIR_CLIENT_OUT" | grep -c 'test complete')" -eq 2
	check "ucmatose: no valgrind report" bash -c "! grep -q '==[0-9]*==' '$PAIR_SERVER_OUT' '$PAIR_CLIENT_OUT'"
	checks_result
}

# REJ: nobody listens on the port: the peer's CM answers REJ "invalid
# service ID" (8) and rping's client fails at once, as against a kernel.
case_reject() {
	require_prog rping
	local t0 t1
	t0=$(date +%s)
	CM_CLIENT_TIMEOUT=20 cm_pair "rping -s -v -C 1" "rping -c -a $IP_A -p 7999 -v -C 1"
	t1=$(date +%s)
	check "the client failed (exit code $CM_CLIENT_RC)" test "$CM_CLIENT_RC" != 0 -a "$CM_CLIENT_RC" != 124
	check "it was rejected" grep -q "REJECTED\|status 8\|reject" "$PAIR_CLIENT_OUT"
	check "within 10 s" test $((t1 - t0)) -lt 10
	checks_result
}

case_ucmatose() {
	require_prog ucmatose
	check "ucmatose: both exit 0" cm_pair "ucmatose" "ucmatose -s $IP_A"
	check "the client completed" grep -q "test complete" "$PAIR_CLIENT_OUT"
	check "the server completed" grep -q "test complete" "$PAIR_SERVER_OUT"
	checks_result
}

case_udaddy() {
	require_prog udaddy
	check "udaddy: both exit 0" cm_pair "udaddy" "udaddy -s $IP_A"
	check "the client completed" grep -q "test complete" "$PAIR_CLIENT_OUT"
	check "the server completed" grep -q "test complete" "$PAIR_SERVER_OUT"
	checks_result
}

case_rdma_server() {
	require_prog rdma_server
	check "rdma_server / rdma_client: both exit 0" cm_pair "rdma_server" "rdma_client -s $IP_A"
	check "the client says success" grep -q "rdma_client: end 0" "$PAIR_CLIENT_OUT"
	check "the server says success" grep -q "rdma_server: end 0" "$PAIR_SERVER_OUT"
	checks_result
}

case_rdma_xserver() {
	require_prog rdma_xserver
	check "rdma_xserver / rdma_xclient: both exit 0" cm_pair "rdma_xserver" "rdma_xclient -s $IP_A"
	check "the client says success" grep -q "rdma_xclient: end 0" "$PAIR_CLIENT_OUT"
	check "the server says success" grep -q "rdma_xserver: end 0" "$PAIR_SERVER_OUT"
	checks_result
}

# perftest -R: the 8 RC tests, one after the other on one pair of vRNICs
# (perftest's own connection set-up through rdma_cm, then its data).
perf_pair() { CM_CLIENT_TIMEOUT=20 cm_pair "$1 -R -n 100" "$1 -R -n 100 $IP_A"; }
case_perftest() {
	local t all=(ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_atomic_bw ib_atomic_lat)
	for t in "${all[@]}"; do
		require_prog "$t"
	done
	# the client's result line (the server of a read or atomic latency
	# test prints none)
	perftest_cm perf_pair "${all[@]}"
	check "8 perftest -R tests printed their results on both sides (failed: ${PERF_FAILED[*]:-none})" test "$PERF_OK" -eq 8
	checks_result
}

# qperf -cm1: the test connection through rdma_cm (qperf's own control
# connection is TCP, port 19765; its server serves until it is stopped).
case_qperf() {
	require_prog qperf
	check "qperf -cm1 rc_bw rc_lat: the client exits 0" \
		run_pair -p 19765 --persistent "qperf" "qperf -cm1 $IP_A -t 1 rc_bw rc_lat"
	check "it measured rc_bw" grep -Eq '^ *bw += +[0-9.]+ [KMG]?B/sec' "$PAIR_CLIENT_OUT"
	check "it measured rc_lat" grep -Eq '^ *latency += +[0-9.]+ (ns|us|ms)' "$PAIR_CLIENT_OUT"
	checks_result
}

case_cmtime() {
	require_prog cmtime
	# cmtime's server serves until it is stopped
	check "cmtime: the client exits 0" cm_pair --persistent "cmtime -c 10" "cmtime -s $IP_A -c 10"
	check "the client timed connect and disconnect" \
		grep -Eq "^connect +:" "$PAIR_CLIENT_OUT" && grep -Eq "^disconnect +:" "$PAIR_CLIENT_OUT"
	checks_result
}

# mckey: the receiver joins 239.1.2.3 and waits for the sender's messages.
case_mckey() {
	require_prog mckey
	check "mckey receiver / sender: both exit 0" \
		cm_pair "mckey -m 239.1.2.3 -b $IP_A -C 4" "mckey -m 239.1.2.3 -b $IP_B -s -C 4"
	# the receiver prints this only after it polled 4 receive completions
	check "the receiver got the messages" grep -q "^data transfers complete" "$PAIR_SERVER_OUT"
	check "the sender sent them" grep -q "^data transfers complete" "$PAIR_CLIENT_OUT"
	checks_result
}

add_case rping case_rping
add_case valgrind case_valgrind
add_case reject case_reject
add_case ucmatose case_ucmatose
add_case udaddy case_udaddy
add_case rdma_server case_rdma_server
add_case rdma_xserver case_rdma_xserver
add_case perftest case_perftest
add_case qperf case_qperf
add_case cmtime case_cmtime
add_case mckey case_mckey
run_cases "$@"
