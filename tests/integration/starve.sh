#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# starve.sh: a tenant cannot starve the engine, the daemon's lock, other
# tenants or the operator (issue 9, findings 3 and 9). tests/tools/starve.
#   big_writes    an attacker tenant (vRNIC va, its own container) keeps 4
#                 loopback RC QPs full of 256 MiB RDMA WRITEs (4 each).
#   lying_flush   an attacker tenant keeps 32 errored QPs' receive and send
#                 queues "full" by writing their producer indices a ring
#                 ahead (and its CQ's consumer index at its producer): the
#                 engine flushes WQEs that need no memory at all.
#   While either attack runs, a victim tenant (vRNIC vv, a container) posts
#   64-byte RDMA WRITEs one at a time, each checked at the target, and loops
#   over control verbs (create/destroy CQ and QP, reg/dereg MR) on a second
#   context; its worst WRITE completion must stay under
#   $UNIRDMA_STARVE_MAX_MS (100), and so must every control call but one at
#   most (none over 10x, unless a CPU stood still for half of it: the
#   host did not run that vCPU, tests/tools/stallwatch; a run whose only
#   fault is its control calls, when neither a stall nor the daemon's log
#   explains them, is run once more, and the second run counts). The
#   operator's `unirdma vrnic list` (four of five tries; none over 10 s)
#   and then `unirdma vrnic delete va` must each take under 2 s.
#   idle_128      128 vRNICs (URD_MAX_VRNICS), idle: the engine thread must
#                 sleep (under 5% of a core over 3 s; futex_waitv takes 128
#                 words at most, and the engine used to spin when it needed
#                 129), and a WRITE on the last vRNIC after each 20 ms pause
#                 (the engine asleep) completes within 100 ms: its wake-up
#                 is not lost.
#   The cases measure worst-case latencies on what may be a small machine
#   shared with other work: they run in a session of their own whose
#   scheduling autogroup gets niceness $UNIRDMA_STARVE_NICE (-20; as
#   bench/run.sh does), attacker, victim and daemon alike, so that other
#   sessions' load does not pass for the engine's.
. "$(dirname "$0")/lib.sh"

MAX_MS=${UNIRDMA_STARVE_MAX_MS:-100}
NICE=${UNIRDMA_STARVE_NICE:--20}
if [ -z "${STARVE_OWN_SESSION:-}" ] && [ "${1:-}" != --list ] && [ -w /proc/self/autogroup ]; then
	STARVE_OWN_SESSION=1 exec setsid -w "$0" "$@"
fi
[ -n "${STARVE_OWN_SESSION:-}" ] && echo "$NICE" >/proc/self/autogroup 2>/dev/null
CASE_SETUP=setup_starve

setup_starve() {
	require_root
	start_daemon
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# timed_ms VAR CMD...: runs CMD (10 s at most), stores its wall time in ms in VAR.
timed_ms() {
	local __var=$1 t0 rc
	shift
	t0=$(now_ms)
	timeout -k 2 10 "$@" >/dev/null 2>&1
	rc=$?
	printf -v "$__var" '%d' $(($(now_ms) - t0))
	return $rc
}

# How the daemon logs a control step of 500 ms or more (ctrl.c, note_slow).
SLOW_STEP=' took [0-9]* ms: '

# field NAME FILE: the value of NAME=VALUE in the victim's summary line.
field() { grep -o "$1=[0-9]*" "$2" | tail -n 1 | cut -d= -f2; }

# victim_start: the victim (vRNIC vv) for 6 s in the background (vpid), and
# stallwatch beside it (wpid): the CPUs' own stalls (a vCPU its host does
# not run, a kernel that does not yield), to tell them from a starved
# daemon (stallwatch.c).
victim_start() {
	"$BUILD/tools/stallwatch" >"$WORK/stalls.out" 2>&1 &
	wpid=$!
	SERVER_PIDS+=("$wpid")
	"$UNIRDMA" exec vv -- $LINEBUF "$BUILD/tools/starve" victim -t 6 --slow-ms "$MAX_MS" >"$WORK/victim.out" 2>&1 &
	vpid=$!
	SERVER_PIDS+=("$vpid")
}

# victim_end: waits for the victim (its exit code in vrc), stops stallwatch,
# prints both.
victim_end() {
	wait "$vpid"
	vrc=$?
	kill -TERM "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	sed 's/^/  | victim: /' "$WORK/victim.out"
	grep -v '^watching' "$WORK/stalls.out" | sed 's/^/  | stallwatch: /'
}

# victim_figures: the victim's summary into writes wmax cops cmax cslow cat,
# and in stalled how much of its slowest control call (ms) a CPU stall
# covered.
victim_figures() {
	writes=$(field writes "$WORK/victim.out")
	wmax=$(field write_max_us "$WORK/victim.out")
	cops=$(field ctrl_ops "$WORK/victim.out")
	cmax=$(field ctrl_max_us "$WORK/victim.out")
	cslow=$(field ctrl_slow "$WORK/victim.out")
	cat=$(field ctrl_max_at_ns "$WORK/victim.out")
	stalled=$(awk -v a="${cat:-0}" -v d="${cmax:-0}" '
		$1 == "stall" { s = e = 0
			for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "start_ns") s = kv[2]; if (kv[1] == "end_ns") e = kv[2] }
			lo = s > a ? s : a; hi = e < a + d * 1000 ? e : a + d * 1000
			if (hi - lo > best) best = hi - lo }
		END { printf "%d\n", best / 1000000 }' "$WORK/stalls.out")
}

# ctrl_ok: the victim's control calls (victim_figures) pass: at most one
# took MAX_MS or more, and none 10x that unless a CPU stall covered half of it.
ctrl_ok() {
	[ "${cslow:-9}" -le 1 ] &&
		{ [ "${cmax:-999999999}" -lt $((MAX_MS * 10000)) ] || [ "$((stalled * 2000))" -ge "${cmax:-999999999}" ]; }
}

case_attack() {
	local mode=$1 apid vpid wpid i ms list_max=0 list_slow=0 del_ms rc vrc
	local writes wmax cops cmax cslow cat stalled
	shift
	[ -x "$BUILD/tools/starve" ] || die "$BUILD/tools/starve is not built (run make)"
	"$UNIRDMA" vrnic create va --tenant ta --ip "10.81.$SUBNET.1/24" >/dev/null || die "vrnic create va failed"
	"$UNIRDMA" vrnic create vv --tenant tv --ip "10.82.$SUBNET.1/24" >/dev/null || die "vrnic create vv failed"
	say "attacker: va (tenant ta): starve $mode $*; victim: vv (tenant tv)"

	"$UNIRDMA" exec va -- $LINEBUF "$BUILD/tools/starve" "$mode" "$@" >"$WORK/attack.out" 2>&1 &
	apid=$!
	SERVER_PIDS+=("$apid")
	for ((i = 0; i < 600; i++)); do
		grep -q '^ready' "$WORK/attack.out" && break
		kill -0 "$apid" 2>/dev/null || break
		sleep 0.1
	done
	sed 's/^/  | /' "$WORK/attack.out"
	grep -q '^ready' "$WORK/attack.out" || die "the attacker did not start"
	sleep 1

	victim_start
	sleep 1
	for ((i = 0; i < 5; i++)); do
		timed_ms ms "$UNIRDMA" vrnic list || say "  vrnic list failed or timed out"
		say "  unirdma vrnic list: $ms ms"
		[ "$ms" -gt "$list_max" ] && list_max=$ms
		[ "$ms" -ge 2000 ] && list_slow=$((list_slow + 1))
		sleep 0.5
	done
	victim_end
	victim_figures
	# Slow control calls that no CPU stall explains and the daemon did not
	# take (its log has no slow step), in a run that is otherwise fine:
	# seen in clean-clone CI runs only (one call of 1.2 s and of 2.2 s;
	# two of 14280 over 100 ms, the worst 445 ms), among thousands of fast
	# ones, never twice in a row.  The victim runs once more while the
	# attack goes on and that run is judged: a starved control path is
	# slow again.
	if [ "$vrc" = 0 ] && [ "${wmax:-999999999}" -lt $((MAX_MS * 1000)) ] && ! ctrl_ok &&
		! grep -q "$SLOW_STEP" "$WORK/unirdmad.log" && kill -0 "$apid" 2>/dev/null; then
		say "  control calls: ${cslow} of ${cops} took $MAX_MS ms or more (worst ${cmax} us), no CPU stall covered them and the daemon logged no slow step: the victim runs again"
		victim_start
		victim_end
		victim_figures
	fi
	timed_ms del_ms "$UNIRDMA" vrnic delete va
	rc=$?
	say "  unirdma vrnic delete va (attack running): $del_ms ms, exit code $rc"
	kill -0 "$apid" 2>/dev/null && kill -TERM "$apid" 2>/dev/null
	wait "$apid" 2>/dev/null
	sed 's/^/  | attacker: /' "$WORK/attack.out" | tail -n 3

	check "the victim's verified traffic passed (exit code $vrc)" test "$vrc" = 0
	check "the victim completed WRITEs (${writes:-none}) and control calls (${cops:-none})" \
		test "${writes:-0}" -gt 0 -a "${cops:-0}" -gt 0
	check "the victim's worst 64 B WRITE took ${wmax:-?} us (< $MAX_MS ms)" \
		test "${wmax:-999999999}" -lt $((MAX_MS * 1000))
	# A starved control path is slow call after call; one slow call of
	# ~20000 is the shared machine stalling a thread (a clean-clone CI run
	# saw one of 454 ms while this victim's WRITEs, served by the same
	# daemon, took at most 12 ms and the operator's lists 13 ms).  That one
	# may take longer than 10x only while a CPU stood still for at least
	# half of it (stallwatch): CI runs saw single calls of 1.2 and 2.2 s,
	# the daemon's own log showing no slow step.
	check "the victim's control verbs: ${cslow:-?} of ${cops:-?} took $MAX_MS ms or more (at most 1; worst ${cmax:-?} us, < $((MAX_MS * 10)) ms unless a CPU stall covered half of it: ${stalled} ms did)" \
		ctrl_ok
	# the daemon logs each control step over 500 ms with where its time
	# went (ctrl.c, note_slow): none here means a slow call was not the
	# daemon serving it
	say "  the daemon's control steps over 500 ms: $(grep -c "$SLOW_STEP" "$WORK/unirdmad.log")"
	grep "$SLOW_STEP" "$WORK/unirdmad.log" | tail -n 5 | sed 's/^/  | /'
	# One slow list of five is the shared machine stalling this process (a
	# clean-clone ASan run saw 3.7 s once while the victim's control verbs,
	# served by the same daemon, took at most 6 ms); a starved operator is
	# slow every time.
	check "unirdma vrnic list: $list_slow of 5 took 2 s or more (at most 1; worst $list_max ms, < 10 s)" \
		test "$list_slow" -le 1 -a "$list_max" -lt 10000
	check "unirdma vrnic delete va worked in $del_ms ms (< 2000)" test "$rc" = 0 -a "$del_ms" -lt 2000
	check "the daemon is alive" daemon_alive
	checks_result
}

# CPU ticks (utime + stime) of the daemon's thread named $1.
thread_ticks() {
	local t
	for t in /proc/"$DAEMON_PID"/task/*; do
		if [ "$(cat "$t/comm" 2>/dev/null)" = "$1" ]; then
			# fields after the ")" of comm: state is $1, utime $12, stime $13
			sed 's/.*) //' "$t/stat" | awk '{ print $12 + $13 }'
			return 0
		fi
	done
	return 1
}

case_idle_128() {
	local i t0 t1 hz pct out
	[ -x "$BUILD/tools/starve" ] || die "$BUILD/tools/starve is not built (run make)"
	for ((i = 0; i < 128; i++)); do
		"$UNIRDMA" vrnic create "n$i" --tenant ti --ip "10.83.$SUBNET.$((i + 1))/24" >/dev/null ||
			die "vrnic create n$i failed"
	done
	say "128 vRNICs created"
	sleep 1.5
	hz=$(getconf CLK_TCK)
	t0=$(thread_ticks urd-engine) || die "no urd-engine thread"
	sleep 3
	t1=$(thread_ticks urd-engine)
	pct=$(((t1 - t0) * 100 / (3 * hz)))
	say "  urd-engine used $((t1 - t0)) ticks in 3 s ($pct% of a core)"
	check "the idle engine with 128 vRNICs uses under 5% of a core ($pct%)" test "$pct" -lt 5

	out=$WORK/victim.out
	in_container n127 $LINEBUF "$BUILD/tools/starve" victim -n 40 --gap-ms 20 -t 30 >"$out" 2>&1
	i=$?
	sed 's/^/  | victim on n127: /' "$out"
	check "verified WRITEs on the 128th vRNIC passed (exit code $i)" test "$i" = 0
	check "every WRITE after a pause completed within $MAX_MS ms ($(field write_max_us "$out") us): no lost wake-up" \
		test "$(field write_max_us "$out")" -lt $((MAX_MS * 1000)) -a "$(field writes "$out")" = 40
	checks_result
}

add_case big_writes case_attack write -q 4 -d 4 -s $((256 << 20)) -t 30
add_case lying_flush case_attack flush -q 32 -t 30
add_case idle_128 case_idle_128
run_cases "$@"
