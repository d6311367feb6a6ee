#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# datapath.sh: proofs about the data path and the library's quality.
#   bypass      post_send/post_recv/poll_cq make no syscall and send no control
#               request in the steady state: strace -c over ib_write_bw with 2,000
#               and with 40,000 iterations; the counts must not grow with the work
#               (sched_yield, which a poll that finds nothing takes every 64th
#               time by design, is reported but not counted).
#   zero_copy   every payload byte moves once, from the source MR to the
#               destination MR: the engine's copied-byte counter equals the bytes
#               the vRNICs sent, for page-aligned (perftest) buffers and for
#               unaligned ones (ibv_rc_pingpong -s 4000 uses malloc'd buffers).
#   valgrind    no valgrind error in the library over an ibv_rc_pingpong run.
#   clang       the whole tree builds with clang -Wall -Wextra -Werror.
. "$(dirname "$0")/lib.sh"

admin() { "$UNIRDMA" --json "$@"; }

# syscalls FILE: total calls in an strace -c summary, without sched_yield.
# (strace -c rows: % time, seconds, usecs/call, calls, [errors,] syscall)
syscalls() {
	awk '$1 ~ /^[0-9.]+$/ && $NF != "total" && $NF != "sched_yield" { n += $4 } END { print n + 0 }' "$1"
}

calls_of() { awk -v s="$2" '$1 ~ /^[0-9.]+$/ && $NF == s { n += $4 } END { print n + 0 }' "$1"; }

case_bypass() {
	require_prog ib_write_bw strace
	local n small big
	for n in 2000 40000; do
		run_pair "ib_write_bw -F -s 4096 -n $n" \
			"strace -f -c -o $WORK/strace.$n ib_write_bw -F -s 4096 -n $n $IP_A" || return 1
		say "--- strace -c of the client, $n iterations ---"
		sed 's/^/  | /' "$WORK/strace.$n"
	done
	small=$(syscalls "$WORK/strace.2000")
	big=$(syscalls "$WORK/strace.40000")
	say "syscalls without sched_yield: $small for 2,000 writes, $big for 40,000 writes"
	say "sched_yield: $(calls_of "$WORK/strace.2000" sched_yield) and $(calls_of "$WORK/strace.40000" sched_yield)"
	# 38,000 more post_send + poll_cq calls may add a handful of futex wakes
	# (when the engine had gone to sleep) but nothing per operation.
	check "syscalls do not grow with the number of operations (+$((big - small)) for +38,000 writes)" \
		test $((big - small)) -lt 200
	checks_result
}

engine_copied() { admin daemon ping | python3 -c 'import json,sys; print(json.load(sys.stdin)["engine"]["copied_bytes"])'; }
vrnic_tx() { admin vrnic show "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["vrnic"]["counters"]["tx_bytes"])'; }

case_zero_copy() {
	require_prog ib_write_bw ibv_rc_pingpong
	local c0 c1 tx
	c0=$(engine_copied)
	run_pair "ib_write_bw -F -s 65536 -n 2000" "ib_write_bw -F -s 65536 -n 2000 $IP_A" || return 1
	c1=$(engine_copied)
	tx=$(($(vrnic_tx "$VR_A") + $(vrnic_tx "$VR_B")))
	say "RDMA WRITE: the vRNICs sent $tx bytes; the engine copied $((c1 - c0)) bytes"
	check "at least 2,000 x 64 KiB were written" test "$tx" -ge $((2000 * 65536))
	check "each byte was copied exactly once" test "$((c1 - c0))" -eq "$tx"

	c0=$c1
	run_pair "ibv_rc_pingpong -g 0 -s 4000 -n 500" "ibv_rc_pingpong -g 0 -s 4000 -n 500 $IP_A" || return 1
	c1=$(engine_copied)
	local tx2=$(($(vrnic_tx "$VR_A") + $(vrnic_tx "$VR_B") - tx))
	say "SEND/RECV of unaligned 4000-byte malloc buffers: sent $tx2 bytes, copied $((c1 - c0))"
	check "1,000 sends of 4000 bytes" test "$tx2" -eq $((1000 * 4000))
	check "each byte was copied exactly once" test "$((c1 - c0))" -eq "$tx2"
	checks_result
}

case_valgrind() {
	require_prog valgrind ibv_rc_pingpong
	case ${UNIRDMA_EXEC_PRELOAD:-} in *libasan*) skip "valgrind and AddressSanitizer cannot share a process (the sanitizer run)" ;; esac
	local vg="valgrind -q --vgdb=no --error-exitcode=99 --track-origins=yes"
	run_pair "$vg ibv_rc_pingpong -g 0 -n 200" "$vg ibv_rc_pingpong -g 0 -n 200 $IP_A" || return 1
	check "no valgrind error on the server" bash -c "! grep -q '==[0-9]*==' '$PAIR_SERVER_OUT'"
	check "no valgrind error on the client" bash -c "! grep -q '==[0-9]*==' '$PAIR_CLIENT_OUT'"
	checks_result
}

case_clang() {
	require_prog clang
	local out
	out=$(mktemp -d /tmp/unirdma-clang.XXXXXX)
	# -O0: clang's warnings come from its front end, whatever the
	# optimisation level, and the build takes a quarter of the time
	say "+ make CC=clang OPT=-O0 BUILD=$out (-Wall -Wextra -Werror)"
	if make -s -j"$(nproc)" -C "$TOP" CC=clang OPT=-O0 BUILD="$out" all >"$out.log" 2>&1; then
		rm -rf "$out" "$out.log"
		return 0
	fi
	tail -n 40 "$out.log"
	rm -rf "$out" "$out.log"
	return 1
}

add_case bypass case_bypass
add_case zero_copy case_zero_copy
add_case valgrind case_valgrind
add_case clang case_clang
run_cases "$@"
