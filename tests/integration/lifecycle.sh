#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# lifecycle.sh: what happens when applications and the daemon die
# (DESIGN.md section 7; daemon/ctrl.c liveness, lib/event.c DEVICE_FATAL).
#
#   kill_mid_transfer   two containers stream RDMA WRITEs and SENDs over RC
#                       (build/tools/lifeprobe stream); one is SIGKILLed: the
#                       survivor gets IBV_EVENT_QP_FATAL, its outstanding WRs
#                       complete with IBV_WC_WR_FLUSH_ERR within a couple of
#                       seconds and it exits cleanly; `vrnic show` of the
#                       killed side is back to 0 objects and 0 bytes within 1 s.
#                       The killed side's QPs have min_rnr_timer 28 (164 ms):
#                       the survivor's SENDs sit in long RNR waits when their
#                       receiver dies, and the QP that waits is destroyed
#                       right after its flush
#   kill_loop           the same 120 times without containers (lifeprobe loop,
#                       under 60 s), plus 30 kills at random moments of a
#                       child's setup (inside control verbs); the daemon's open
#                       fds must not grow, its VmRSS and the region file's
#                       memory not by more than 4 MiB between kill 20 and the end
#   other_tenant        a third tenant's ibv_rc_pingpong runs (with -c, data
#                       validated) go on untouched while the kills go on
#   daemon_sigterm      SIGTERM: unirdmad exits 0 promptly and leaves no vRNIC
#                       directory, region file, admin socket or pid file; a
#                       running application gets IBV_EVENT_DEVICE_FATAL and its
#                       control verbs fail, nothing hangs (lifeprobe hold)
#   daemon_sigkill      SIGKILL under running applications (one on the host
#                       creating CQs in a loop, one in a container): both get
#                       IBV_EVENT_DEVICE_FATAL within 1 s, control verbs fail
#                       with an error, never hang
#   pingpong_daemon_sigterm, pingpong_daemon_sigkill
#                       an unmodified ibv_rc_pingpong pair in the middle of a
#                       long run when the daemon is stopped or killed: both
#                       programs must end with an error within 5 s, not hang
#   daemon_restart      a daemon restarted on the state directory of a
#                       SIGKILLed one (an application of the old one still
#                       alive) serves vRNICs of the same names, and
#                       ibv_rc_pingpong runs; it then stops as cleanly as one
#                       that was never killed
. "$(dirname "$0")/lib.sh"

LIFEPROBE=$BUILD/tools/lifeprobe

# Sanitizer builds are slower, and ASan keeps freed memory in quarantine (the
# daemon's RSS grows without a leak; LeakSanitizer watches leaks there).
ASAN_BUILD=
ldd "$UNIRDMAD" 2>/dev/null | grep -q libasan && ASAN_BUILD=1
SCALE=${UNIRDMA_TEST_TIME_SCALE:-$([ -n "$ASAN_BUILD" ] && echo 3 || echo 1)}
export UNIRDMA_TEST_TIME_SCALE=$SCALE

admin() { "$UNIRDMA" --json "$@"; }

# vrnic_objects VRNIC: "contexts pds mrs cqs qps srqs mem_bytes" of `vrnic show`.
# (bash only, no python: the release time is measured with it)
vrnic_objects() {
	local js k out=()
	js=$(admin vrnic show "$1") || return 1
	for k in contexts pds mrs cqs qps srqs mem_bytes; do
		[[ $js =~ \"$k\":([0-9]+) ]] || return 1
		out+=("${BASH_REMATCH[1]}")
	done
	echo "${out[*]}"
}
vrnic_counter() {
	admin vrnic show "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["vrnic"]["counters"][sys.argv[1]])' "$2"
}
vrnic_dir() {
	admin vrnic show "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["vrnic"]["dir"])'
}
ms_now() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

setup_lifecycle() {
	require_root
	require_prog python3
	[ -x "$LIFEPROBE" ] || die "$LIFEPROBE is not built (run make)"
	start_daemon
	make_vrnics
}
CASE_SETUP=setup_lifecycle

# wait_line FILE PATTERN SECONDS [PID]: 0 once FILE has a line matching PATTERN.
wait_line() {
	local i
	for ((i = 0; i < $3 * 50; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		if [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; then
			grep -q "$2" "$1" 2>/dev/null
			return
		fi
		sleep 0.02
	done
	return 1
}

# finish PID SECONDS: sets RC to the exit code of a background job of this
# shell, or to "timeout" (then it is killed). Not in $(...): a subshell
# cannot wait for this shell's children.
finish() {
	if wait_for_exit "$1" "$2"; then
		wait "$1"
		RC=$?
	else
		kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		RC=timeout
	fi
}

show() { say "--- $1 ---"; sed 's/^/  | /' "$2"; }

# devdir VRNIC...: $WORK/dev with links to those vRNICs (UNIRDMA_DEVDIR).
devdir() {
	local v
	rm -rf "${WORK:?}/dev"
	mkdir -p "$WORK/dev"
	for v in "$@"; do
		ln -s "$(vrnic_dir "$v")" "$WORK/dev/$v" || return 1
	done
}

# restart_daemon: a new unirdmad on the same state directory (started as
# lib.sh's start_daemon starts one).
restart_daemon() {
	local i
	ASAN_OPTIONS=${UNIRDMA_DAEMON_ASAN_OPTIONS:-${ASAN_OPTIONS:-}} \
		"$UNIRDMAD" --state-dir "$STATE" --foreground --metrics 127.0.0.1:0 >>"$WORK/unirdmad.log" 2>&1 &
	DAEMON_PID=$!
	for ((i = 0; i < 500; i++)); do
		"$UNIRDMA" daemon ping >/dev/null 2>&1 && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.02
	done
	return 1
}

# stop_daemon_term: SIGTERM; sets TERM_RC and TERM_MS. The daemon must go.
stop_daemon_term() {
	local t0
	t0=$(ms_now)
	kill -TERM "$DAEMON_PID"
	finish "$DAEMON_PID" 10
	TERM_RC=$RC
	TERM_MS=$(($(ms_now) - t0))
	say "unirdmad exited with code $TERM_RC $TERM_MS ms after SIGTERM"
	DAEMON_PID= # gone: cleanup has nothing left to stop
}

# state_clean: nothing of a served vRNIC is left in $STATE.
state_clean() {
	local left
	left=$(cd "$STATE" && find . -mindepth 1 ! -name unirdmad.lock ! -name net.lock ! -path ./vrnics 2>/dev/null)
	if [ -n "$left" ]; then
		say "  left in $STATE:"
		printf '%s\n' "$left" | sed 's/^/    /'
		return 1
	fi
}
no_mount_left() {
	if mountpoint -q "$STATE/vrnics"; then
		say "  $STATE/vrnics is still a mount point: $(grep " $STATE/vrnics " /proc/mounts)"
		return 1
	fi
}

# A SIGKILLed daemon cannot unmount its tmpfs; the case does, so cleanup can
# remove the scratch directory.
umount_leftover() {
	mountpoint -q "$STATE/vrnics" && umount -l "$STATE/vrnics"
	return 0
}

# ---- cases ---------------------------------------------------------------------

case_kill_mid_transfer() {
	local apid bpid init prog t0 objs released=-1 arc brc i before
	rm -f "$WORK"/a.info "$WORK"/b.info
	say "+ survivor in container $VR_A, streamer in container $VR_B (lifeprobe stream)"
	"$UNIRDMA" exec "$VR_A" -- "$LIFEPROBE" stream --me "$WORK/a.info" \
		--peer "$WORK/b.info" --survive --timeout 30 >"$WORK/a.out" 2>&1 &
	apid=$!
	SERVER_PIDS+=("$apid")
	"$UNIRDMA" exec --pidfile "$WORK/b.pid" "$VR_B" -- "$LIFEPROBE" stream \
		--me "$WORK/b.info" --peer "$WORK/a.info" --rnr-timer 28 --timeout 30 >"$WORK/b.out" 2>&1 &
	bpid=$!
	SERVER_PIDS+=("$bpid")
	if ! wait_line "$WORK/a.out" STREAMING 15 "$apid" || ! wait_line "$WORK/b.out" STREAMING 15 "$bpid"; then
		show survivor "$WORK/a.out"
		show streamer "$WORK/b.out"
		return 1
	fi
	before=$(vrnic_objects "$VR_B")
	say "$VR_B while streaming (contexts pds mrs cqs qps srqs mem_bytes): $before"
	init=$(cat "$WORK/b.pid")
	prog=$(awk '{ print $1 }' "/proc/$init/task/$init/children")
	[ -n "$prog" ] || { say "cannot find the streamer's pid (container init $init)"; return 1; }
	say "+ kill -KILL $prog (the streamer, in the middle of the transfer)"
	kill -KILL "$prog"
	t0=$(ms_now)
	for ((i = 0; i < 150 * SCALE; i++)); do
		objs=$(vrnic_objects "$VR_B")
		if [ "$objs" = "0 0 0 0 0 0 0" ]; then
			released=$(($(ms_now) - t0))
			break
		fi
		sleep 0.01
	done
	say "$VR_B after the kill: $objs (released after $released ms)"
	finish "$apid" 5
	arc=$RC
	say "the survivor exited ($arc) $(($(ms_now) - t0)) ms after the kill"
	finish "$bpid" 5
	brc=$RC
	show "survivor (exit code $arc)" "$WORK/a.out"
	show "streamer (exit code $brc)" "$WORK/b.out"
	check "the streamer had resources while streaming ($before)" test "${before%% *}" = 1
	check "the streamer died of SIGKILL (exit code $brc)" test "$brc" = 137
	check "the killed side's contexts, objects and memory are released within 1 s ($released ms)" \
		eval '[ "$released" -ge 0 ] && [ "$released" -le $((1000 * SCALE)) ]'
	check "the survivor got QP_FATAL and the flush, and exited cleanly" test "$arc" = 0
	check "the survivor's vRNIC is empty after it exited ($(vrnic_objects "$VR_A"))" \
		test "$(vrnic_objects "$VR_A")" = "0 0 0 0 0 0 0"
	checks_result
}

# loop_figure NAME FIELD: a figure of the loop's "DAEMON NAME WARM END" line.
loop_figure() { awk -v n="$1" -v f="$2" '$1 == "DAEMON" && $2 == n { print $f }' "$WORK/loop.out"; }

case_kill_loop() {
	local rc t0 secs fw fe rw re gw ge
	devdir "$VR_A" "$VR_B" || return 1
	say "+ lifeprobe loop --keep $VR_A --kill $VR_B --iters 120 --warmup 20 --early-every 4 --rnr-timer 28"
	t0=$(ms_now)
	UNIRDMA_DEVDIR=$WORK/dev LD_LIBRARY_PATH=$UNIRDMA_LIBDIR timeout -k 5 $((90 * SCALE)) \
		"$LIFEPROBE" loop --keep "$VR_A" --kill "$VR_B" --iters 120 --warmup 20 --early-every 4 \
		--rnr-timer 28 >"$WORK/loop.out" 2>&1
	rc=$?
	secs=$((($(ms_now) - t0) / 1000))
	grep -v '^SURVIVOR' "$WORK/loop.out" | sed 's/^/  | /'
	grep -q '^SURVIVOR' "$WORK/loop.out" && grep '^SURVIVOR' "$WORK/loop.out" | head -5 | sed 's/^/  | /'
	fw=$(loop_figure fds 3) fe=$(loop_figure fds 4)
	rw=$(loop_figure rss_kb 3) re=$(loop_figure rss_kb 4)
	gw=$(loop_figure region_kb 3) ge=$(loop_figure region_kb 4)
	say "daemon after kill 20 -> after kill 120: open fds $fw -> $fe, VmRSS $rw -> $re kB, region file $gw -> $ge kB"
	check "120 kills mid-transfer, each with QP_FATAL, flush and release, and 30 during setup (exit code $rc)" \
		eval '[ "$rc" = 0 ] && grep -q "^KILLS 120 mid-transfer and 30 during setup" "$WORK/loop.out"'
	check "in under 60 s (${secs} s)" test "$secs" -lt $((60 * SCALE))
	check "the daemon's open fds did not grow ($fw -> $fe)" eval '[ -n "$fw" ] && [ "$fe" -le "$fw" ]'
	if [ -n "$ASAN_BUILD" ]; then
		say "  (VmRSS not checked: an ASan daemon keeps freed memory in quarantine)"
	else
		check "the daemon's VmRSS grew by at most 4 MiB ($rw -> $re kB)" \
			eval '[ -n "$rw" ] && [ $((re - rw)) -le 4096 ]'
	fi
	check "the region file's memory grew by at most 4 MiB ($gw -> $ge kB)" \
		eval '[ -n "$gw" ] && [ $((ge - gw)) -le 4096 ]'
	check "$VR_B is empty ($(vrnic_objects "$VR_B"))" test "$(vrnic_objects "$VR_B")" = "0 0 0 0 0 0 0"
	check "$VR_A is empty ($(vrnic_objects "$VR_A"))" test "$(vrnic_objects "$VR_A")" = "0 0 0 0 0 0 0"
	checks_result
}

case_other_tenant() {
	local lpid lrc k0 k1 n=$SUBNET v run
	"$UNIRDMA" vrnic create vr4 --tenant t3 --ip "10.77.$n.11/24" >/dev/null || return 1
	"$UNIRDMA" vrnic create vr5 --tenant t3 --ip "10.77.$n.12/24" >/dev/null || return 1
	devdir "$VR_A" "$VR_B" || return 1
	say "+ in the background: lifeprobe loop --keep $VR_A --kill $VR_B (tenant t1) until the pingpong ends"
	rm -f "$WORK/stop"
	UNIRDMA_DEVDIR=$WORK/dev LD_LIBRARY_PATH=$UNIRDMA_LIBDIR timeout -k 5 100 \
		"$LIFEPROBE" loop --keep "$VR_A" --kill "$VR_B" --iters 600 --warmup 0 --progress \
		--rnr-timer 28 --stop "$WORK/stop" >"$WORK/loop.out" 2>&1 &
	lpid=$!
	SERVER_PIDS+=("$lpid")
	wait_line "$WORK/loop.out" '^kill 2:' 15 "$lpid" || { show loop "$WORK/loop.out"; return 1; }
	k0=$(grep -c '^kill ' "$WORK/loop.out")
	# the third tenant, in containers, with data validation: three runs
	VR_A=vr4 VR_B=vr5 IP_A=10.77.$n.11 IP_B=10.77.$n.12
	for run in 1 2 3; do
		run_pair "ibv_rc_pingpong -g 0 -c -s 4096 -n 5000" "ibv_rc_pingpong -g 0 -c -s 4096 -n 5000 $IP_A"
		check "tenant t3's ibv_rc_pingpong run $run (data validated) completed" test $? = 0
	done
	k1=$(grep -c '^kill ' "$WORK/loop.out")
	touch "$WORK/stop"
	finish "$lpid" 20
	lrc=$RC
	grep -v '^kill \|^SURVIVOR' "$WORK/loop.out" | sed 's/^/  | /'
	grep '^SURVIVOR\|FAILED' "$WORK/loop.out" | head -5 | sed 's/^/  | /'
	say "tenant t1 kills while t3's pingpongs ran: $((k1 - k0))"
	check "tenant t1's kills went on meanwhile ($((k1 - k0)) kills)" test $((k1 - k0)) -ge 3
	check "every kill was handled (loop exit code $lrc)" test "$lrc" = 0
	for v in vr4 vr5; do
		check "$v: no error, no drop ($(vrnic_counter $v errors), $(vrnic_counter $v drops_other_tenant))" \
			test "$(vrnic_counter $v errors)$(vrnic_counter $v drops_other_tenant)" = 00
		check "$v is empty after the pingpong ($(vrnic_objects $v))" test "$(vrnic_objects $v)" = "0 0 0 0 0 0 0"
	done
	checks_result
}

# start_holders: lifeprobe hold --churn on the host ($VR_A) and lifeprobe hold
# in a container of $VR_B; sets HPID and CPID; 0 once both are READY.
start_holders() {
	say "+ lifeprobe hold --churn on $VR_A (host, creating CQs in a loop), lifeprobe hold in a container of $VR_B"
	"$UNIRDMA" exec --no-container "$VR_A" -- "$LIFEPROBE" hold --churn --timeout 20 \
		>"$WORK/hold.out" 2>&1 &
	HPID=$!
	SERVER_PIDS+=("$HPID")
	"$UNIRDMA" exec "$VR_B" -- "$LIFEPROBE" hold --timeout 20 >"$WORK/hold2.out" 2>&1 &
	CPID=$!
	SERVER_PIDS+=("$CPID")
	if ! wait_line "$WORK/hold.out" READY 10 "$HPID" || ! wait_line "$WORK/hold2.out" READY 10 "$CPID"; then
		show "host application" "$WORK/hold.out"
		show "container application" "$WORK/hold2.out"
		return 1
	fi
	sleep 0.2 # let the churn run
}

# check_holders T0 WHAT: both applications got DEVICE_FATAL within 1 s of T0,
# the CQ loop failed within 1 s, control verbs failed, nothing hung.
check_holders() {
	local t0=$1 hrc crc f1 f2 c1
	finish "$HPID" 10
	hrc=$RC
	finish "$CPID" 10
	crc=$RC
	show "host application, creating CQs in a loop (exit code $hrc)" "$WORK/hold.out"
	show "container application (exit code $crc)" "$WORK/hold2.out"
	f1=$(sed -n 's/^FATAL epoch_ms=//p' "$WORK/hold.out")
	f2=$(sed -n 's/^FATAL epoch_ms=//p' "$WORK/hold2.out")
	c1=$(sed -n 's/^CHURN-FAILED epoch_ms=\([0-9]*\).*/\1/p' "$WORK/hold.out")
	say "after $2: DEVICE_FATAL on the host after $((${f1:-0} - t0)) ms, in the container after" \
		"$((${f2:-0} - t0)) ms; the CQ loop failed after $((${c1:-0} - t0)) ms"
	check "host application: DEVICE_FATAL, control verbs fail, outstanding work completes in error, no hang" test "$hrc" = 0
	check "container application: DEVICE_FATAL, control verbs fail, outstanding work completes in error, no hang" test "$crc" = 0
	check "DEVICE_FATAL within 1 s on the host" eval '[ -n "$f1" ] && [ $((f1 - t0)) -le $((1000 * SCALE)) ]'
	check "DEVICE_FATAL within 1 s in the container" eval '[ -n "$f2" ] && [ $((f2 - t0)) -le $((1000 * SCALE)) ]'
	check "the control verb in flight failed within 1 s" eval '[ -n "$c1" ] && [ $((c1 - t0)) -le $((1000 * SCALE)) ]'
}

case_daemon_sigterm() {
	local t_term
	start_holders || return 1
	say "+ kill -TERM unirdmad ($DAEMON_PID)"
	t_term=$(ms_now)
	stop_daemon_term
	say "state dir after the stop: $(cd "$STATE" && find . -mindepth 1 | tr '\n' ' ')"
	check "unirdmad exited with code 0 (got $TERM_RC)" test "$TERM_RC" = 0
	check "within 3 s ($TERM_MS ms)" test "$TERM_MS" -le $((3000 * SCALE))
	check "no vRNIC directory, region file, admin socket or pid file is left" state_clean
	check "no tmpfs is left mounted on the state dir" no_mount_left
	check_holders "$t_term" SIGTERM
	checks_result
}

case_daemon_sigkill() {
	local t_kill
	start_holders || return 1
	say "+ kill -KILL unirdmad ($DAEMON_PID)"
	{
		kill -KILL "$DAEMON_PID"
		t_kill=$(ms_now)
		wait "$DAEMON_PID"
	} 2>/dev/null
	DAEMON_PID=
	check_holders "$t_kill" SIGKILL
	umount_leftover
	checks_result
}

case_daemon_restart() {
	local hpid hrc list objs
	say "+ lifeprobe hold --linger on $VR_A (host): it outlives its daemon"
	"$UNIRDMA" exec --no-container "$VR_A" -- "$LIFEPROBE" hold --timeout 20 \
		--linger "$WORK/linger" >"$WORK/hold.out" 2>&1 &
	hpid=$!
	SERVER_PIDS+=("$hpid")
	wait_line "$WORK/hold.out" READY 10 "$hpid" || { show hold "$WORK/hold.out"; return 1; }
	say "+ kill -KILL unirdmad ($DAEMON_PID)"
	{
		kill -KILL "$DAEMON_PID"
		wait "$DAEMON_PID"
	} 2>/dev/null
	DAEMON_PID=
	wait_line "$WORK/hold.out" LINGER 10 "$hpid"
	check "the old application saw the daemon die (DEVICE_FATAL)" grep -q '^FATAL' "$WORK/hold.out"

	say "+ unirdmad restarted on $STATE"
	restart_daemon || { tail -n 20 "$WORK/unirdmad.log"; return 1; }
	list=$(admin vrnic list | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["vrnics"]))')
	check "the new daemon serves no stale vRNIC ($list listed)" test "$list" = 0
	check "vrnic create $VR_A (same name and address) works" \
		"$UNIRDMA" vrnic create "$VR_A" --tenant t1 --ip "$IP_A/24"
	check "vrnic create $VR_B (same name and address) works" \
		"$UNIRDMA" vrnic create "$VR_B" --tenant t1 --ip "$IP_B/24"
	objs=$(vrnic_objects "$VR_A")
	check "the old application is no context of the new $VR_A ($objs)" test "$objs" = "0 0 0 0 0 0 0"
	run_pair "ibv_rc_pingpong -g 0 -c -n 500" "ibv_rc_pingpong -g 0 -c -n 500 $IP_A"
	check "ibv_rc_pingpong runs over the new vRNICs (data validated)" test $? = 0
	touch "$WORK/linger"
	finish "$hpid" 10
	hrc=$RC
	show "old application (exit code $hrc)" "$WORK/hold.out"
	check "the old application cleaned up without a hang" test "$hrc" = 0
	run_pair "ibv_rc_pingpong -g 0 -c -n 200" "ibv_rc_pingpong -g 0 -c -n 200 $IP_A"
	check "and again after it is gone" test $? = 0

	stop_daemon_term
	check "the restarted daemon exits 0 on SIGTERM (got $TERM_RC)" test "$TERM_RC" = 0
	check "and leaves no vRNIC directory, region file, admin socket or pid file" state_clean
	check "and no tmpfs mounted on the state dir" no_mount_left
	umount_leftover
	checks_result
}

# pingpong_daemon_gone SIGNAL: an unmodified ibv_rc_pingpong pair in the
# middle of a long run when the daemon gets SIGNAL: both must end with an
# error within 5 s, not poll an empty CQ forever.
pingpong_daemon_gone() {
	local sig=$1 spid cpid t0 i src crc init tx=0
	say "+ ibv_rc_pingpong pair (containers $VR_A, $VR_B), 100,000,000 iterations"
	# shellcheck disable=SC2086
	"$UNIRDMA" exec --pidfile "$WORK/s.pid" "$VR_A" -- $LINEBUF ibv_rc_pingpong -g 0 -n 100000000 \
		>"$WORK/s.out" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((i = 0; i < 200; i++)); do
		init=$(cat "$WORK/s.pid" 2>/dev/null)
		[ -n "$init" ] && listening "$init" 18515 && break
		sleep 0.05
	done
	# shellcheck disable=SC2086
	"$UNIRDMA" exec "$VR_B" -- $LINEBUF ibv_rc_pingpong -g 0 -n 100000000 "$IP_A" >"$WORK/c.out" 2>&1 &
	cpid=$!
	SERVER_PIDS+=("$cpid")
	for ((i = 0; i < 100 * SCALE; i++)); do
		tx=$(vrnic_counter "$VR_B" tx_ops)
		[ "$tx" -gt 10000 ] && break
		sleep 0.05
	done
	say "traffic: $VR_B tx_ops $tx; + kill -$sig unirdmad ($DAEMON_PID)"
	check "the pair was exchanging messages when the daemon went ($tx sends)" test "$tx" -gt 10000
	{
		kill "-$sig" "$DAEMON_PID"
		t0=$(ms_now)
		wait "$DAEMON_PID"
	} 2>/dev/null
	DAEMON_PID=
	finish "$spid" $((5 * SCALE))
	src=$RC
	finish "$cpid" $((5 * SCALE - ($(ms_now) - t0) / 1000))
	crc=$RC
	say "ibv_rc_pingpong after the daemon's $sig: server ${src/timeout/still running after 5 s, killed}," \
		"client ${crc/timeout/still running after 5 s, killed}"
	show "server (exit code $src)" "$WORK/s.out"
	show "client (exit code $crc)" "$WORK/c.out"
	check "the server ended with an error, no hang (exit code $src)" eval '[ "$src" != timeout ] && [ "$src" != 0 ]'
	check "the client ended with an error, no hang (exit code $crc)" eval '[ "$crc" != timeout ] && [ "$crc" != 0 ]'
	umount_leftover
	checks_result
}
case_pingpong_daemon_sigterm() { pingpong_daemon_gone TERM; }
case_pingpong_daemon_sigkill() { pingpong_daemon_gone KILL; }

add_case kill_mid_transfer case_kill_mid_transfer
add_case kill_loop case_kill_loop
add_case other_tenant case_other_tenant
add_case daemon_sigterm case_daemon_sigterm
add_case daemon_sigkill case_daemon_sigkill
add_case daemon_restart case_daemon_restart
add_case pingpong_daemon_sigterm case_pingpong_daemon_sigterm
add_case pingpong_daemon_sigkill case_pingpong_daemon_sigkill
run_cases "$@"
