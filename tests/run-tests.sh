#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# run-tests.sh: runs unirdma's test suite and prints one line per test.
#
# usage: tests/run-tests.sh [-t SECONDS] [-l] [FILTER...]
#   FILTER      run only tests whose name contains one of these substrings
#   -t SECONDS  timeout per test (default $UNIRDMA_TEST_TIMEOUT or 120)
#   -l          list the tests instead of running them
#
# The tests (build/ is $UNIRDMA_BUILD when set, e.g. build-asan):
#   build/tests/t_*            C tests of the verbs API (tests/verbs). They run on
#                              the host against one private daemon this runner
#                              starts, with two vRNICs of one tenant; env
#                              UNIRDMA_DEVDIR is a directory of links to both.
#                              t_opcodes also runs as `t_opcodes event` and
#                              `t_opcodes noglobal`, t_ah_rules as `t_ah_rules
#                              grhless` (those two on vRNICs created with
#                              --grhless-av on); each also runs as NAME:forward
#                              over the forwarding data path (UNIRDMA_DATAPATH),
#                              and issue 13's (t_mw, t_rereg, t_resize_cq, t_uc,
#                              t_mcast) as NAME:valgrind (not in the ASan run).
#   build/tests/u_*            unit tests of one daemon part (tests/unit), no daemon
#   tests/check-exports.sh     the library's exported symbols
#   tests/check-license.sh     every source file's SPDX line, the licence texts
#   tests/check-layering.sh    who calls whom: engine/ never up into daemon/
#   tests/integration/X.sh     one test per case (X:CASE); each starts its own
#                              daemon (tests/integration/lib.sh)
#
# Each prints `ok NAME (1.2s)`, `FAIL NAME` and the end of its log, or
# `SKIP NAME` (exit code 77). Logs go to $UNIRDMA_RESULTS (build/test-results).
# UNIRDMA_BINDIR and UNIRDMA_LIBDIR override where the programs and the library are.
# The last line is `N passed, N failed, N skipped`; the exit code is 1 if any
# test failed. $UNIRDMA_WRAP (e.g. "valgrind --error-exitcode=9 -q") is put in
# front of the C tests' command.
set -uo pipefail
# Debian's programs first, as tests/integration/lib.sh says why (a case
# script run alone sets it there too).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${UNIRDMA_BUILD:-build} # another build tree, e.g. build-asan
[[ $BUILD == /* ]] || BUILD=$TOP/$BUILD
export UNIRDMA_BUILD=$BUILD  # for tests/integration/lib.sh
BINDIR=${UNIRDMA_BINDIR:-$BUILD/bin}
UNIRDMA=$BINDIR/unirdma
UNIRDMAD=$BINDIR/unirdmad
LIBDIR=${UNIRDMA_LIBDIR:-$BUILD/lib}
RESULTS=${UNIRDMA_RESULTS:-$BUILD/test-results}
TIMEOUT=${UNIRDMA_TEST_TIMEOUT:-120}
WRAP=${UNIRDMA_WRAP:-}
LIST_ONLY=0

usage() { sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while getopts "t:lh" opt; do
	case $opt in
	t) TIMEOUT=$OPTARG ;;
	l) LIST_ONLY=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
FILTERS=("$@")

# ---- the list of tests: parallel arrays of name, kind and command ------------

T_NAME=()
T_KIND=() # c | script
T_CMD=()

# UNIRDMA_TEST_EXCLUDE: space-separated substrings of tests not to run (the
# sanitizer run leaves out the multi-host suites of Debian's uninstrumented
# programs; the wire itself runs under ASan in wire_verbs and cluster).
EXCLUDES=(${UNIRDMA_TEST_EXCLUDE:-})
selected() {
	local f
	for f in "${EXCLUDES[@]}"; do
		[[ $1 == *"$f"* ]] && return 1
	done
	[ ${#FILTERS[@]} -eq 0 ] && return 0
	for f in "${FILTERS[@]}"; do
		[[ $1 == *"$f"* ]] && return 0
	done
	return 1
}

add_test() {
	selected "$1" || return 0
	T_NAME+=("$1")
	T_KIND+=("$2")
	T_CMD+=("$3")
}

LIST_ERRORS=()
collect_tests() {
	local f name c cases
	for f in "$BUILD"/tests/t_*; do
		[ -f "$f" ] && [ -x "$f" ] || continue
		name=$(basename "$f")
		add_test "$name" c "$(printf '%q' "$f")"
		# the same test over the forwarding data path (every data verb a
		# request to the daemon: lib/fwd.c, daemon/fwd.c)
		add_test "$name:forward" c "$(printf 'env UNIRDMA_DATAPATH=forward %q' "$f")"
		if [ "$name" = t_opcodes ]; then
			add_test "$name:event" c "$(printf '%q event' "$f")"
			# connections without a GRH need vRNICs that allow them
			add_test "$name:noglobal" c "env UNIRDMA_DEVDIR=\"\$CWORK/dev-grhless\" $(printf '%q noglobal' "$f")"
		fi
		if [ "$name" = t_ah_rules ]; then
			add_test "$name:grhless" c "env UNIRDMA_DEVDIR=\"\$CWORK/dev-grhless\" $(printf '%q grhless' "$f")"
		fi
		# issue 13's verbs under valgrind too (not in the ASan build:
		# the two cannot share a process)
		case $name in t_mw | t_rereg | t_resize_cq | t_uc | t_mcast)
			case ${UNIRDMA_EXEC_PRELOAD:-} in *libasan*) ;; *)
				command -v valgrind >/dev/null 2>&1 &&
					add_test "$name:valgrind" c "$(printf 'env UNIRDMA_TEST_TIME_SCALE=10 valgrind -q --vgdb=no --error-exitcode=99 %q' "$f")" ;;
			esac ;;
		esac
	done
	for f in "$BUILD"/tests/u_*; do     # unit tests: one daemon part, no daemon
		[ -f "$f" ] && [ -x "$f" ] || continue
		add_test "$(basename "$f")" script "$(printf '%q' "$f")"
	done
	[ -f "$TOP/tests/check-exports.sh" ] &&
		add_test check-exports script "$(printf 'bash %q' "$TOP/tests/check-exports.sh")"
	[ -f "$TOP/tests/check-license.sh" ] &&
		add_test check-license script "$(printf 'bash %q' "$TOP/tests/check-license.sh")"
	[ -f "$TOP/tests/check-layering.sh" ] &&
		add_test check-layering script "$(printf 'bash %q %q' "$TOP/tests/check-layering.sh" "$BUILD")"
	for f in "$TOP"/tests/integration/*.sh; do
		case $(basename "$f") in lib.sh | mhlib.sh | podlib.sh) continue ;; esac
		name=$(basename "$f" .sh)
		if ! cases=$(bash "$f" --list 2>&1); then
			LIST_ERRORS+=("$name: could not list its cases: $cases")
			add_test "$name" script "$(printf 'bash %q' "$f")"
			continue
		fi
		for c in $cases; do
			add_test "$name:$c" script "$(printf 'bash %q %q' "$f" "$c")"
		done
	done
}

# ---- the private daemon of the C tests ---------------------------------------

CDAEMON_PID=
CWORK=
start_c_daemon() {
	local i vr dir tmp=/tmp
	# on tmpfs, as /run/unirdma is on Debian: the library moves registered
	# pages back with the application's writers held (userfaultfd), which a
	# region file on another file system does not allow (lib/mem.c)
	[ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && tmp=/dev/shm
	CWORK=$(mktemp -d "$tmp/unirdma-ctests.XXXXXX") || return 1
	mkdir -p "$CWORK/state" "$CWORK/dev"
	if [ ! -x "$UNIRDMAD" ] || [ ! -x "$UNIRDMA" ]; then
		echo "unirdmad or unirdma is not built in $BINDIR (run make)"
		return 1
	fi
	local UNIRDMA_STATE_DIR=$CWORK/state
	export UNIRDMA_STATE_DIR
	"$UNIRDMAD" --state-dir "$CWORK/state" --foreground --metrics 127.0.0.1:0 >>"$RESULTS/unirdmad-ctests.log" 2>&1 &
	CDAEMON_PID=$!
	for ((i = 0; i < 500; i++)); do
		"$UNIRDMA" daemon ping >/dev/null 2>&1 && break
		kill -0 "$CDAEMON_PID" 2>/dev/null || break
		sleep 0.02
	done
	"$UNIRDMA" daemon ping >/dev/null 2>&1 || {
		echo "unirdmad did not come up; see $RESULTS/unirdmad-ctests.log"
		return 1
	}
	# vr0, vr1: as created (RoCE's AV rule); vr2, vr3 (dev-grhless/) take
	# address vectors without a GRH (t_opcodes noglobal, t_ah_rules grhless)
	mkdir -p "$CWORK/dev-grhless"
	for vr in 0 1 2 3; do
		"$UNIRDMA" vrnic create "vr$vr" --tenant t1 --ip "10.77.250.$((vr + 1))/24" \
			$([ "$vr" -lt 2 ] || echo --grhless-av on) >/dev/null || return 1
		dir=$("$UNIRDMA" vrnic show "vr$vr" | awk '/^dir:/ { print $2 }')
		[ -n "$dir" ] || return 1
		if [ "$vr" -lt 2 ]; then
			ln -sfn "$dir" "$CWORK/dev/vr$vr"
		else
			ln -sfn "$dir" "$CWORK/dev-grhless/vr$vr"
		fi
	done
}

stop_c_daemon() {
	if [ -n "$CDAEMON_PID" ]; then
		if kill -0 "$CDAEMON_PID" 2>/dev/null; then
			"$UNIRDMA" --state-dir "$CWORK/state" daemon stop >/dev/null 2>&1 ||
				kill -KILL "$CDAEMON_PID" 2>/dev/null
		fi
		wait "$CDAEMON_PID" 2>/dev/null
		CDAEMON_PID=
	fi
	[ -n "$CWORK" ] && rm -rf "$CWORK"
	CWORK=
}

# A zombie (killed, not yet reaped by this shell) is not alive.
c_daemon_alive() {
	[ -n "$CDAEMON_PID" ] && kill -0 "$CDAEMON_PID" 2>/dev/null &&
		[ "$(awk '{ print $3 }' "/proc/$CDAEMON_PID/stat" 2>/dev/null)" != Z ]
}

on_exit() { stop_c_daemon; }
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- running -------------------------------------------------------------------

collect_tests
if [ "$LIST_ONLY" = 1 ]; then
	printf '%s\n' "${T_NAME[@]}"
	exit 0
fi

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
passed=0 failed=0 skipped=0
echo "running ${#T_NAME[@]} tests (timeout ${TIMEOUT}s each, logs in $RESULTS)"
for e in "${LIST_ERRORS[@]}"; do
	echo "warning: $e"
done

CDAEMON_ERROR=
for i in "${!T_NAME[@]}"; do
	name=${T_NAME[$i]}
	log=$RESULTS/$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_').log
	: >"$log"

	if [ "${T_KIND[$i]}" = c ] && ! c_daemon_alive && [ -z "$CDAEMON_ERROR" ]; then
		stop_c_daemon
		if ! start_c_daemon >"$RESULTS/unirdmad-ctests-start.log" 2>&1; then
			CDAEMON_ERROR=$(tail -n 3 "$RESULTS/unirdmad-ctests-start.log" | tr '\n' ' ')
			CDAEMON_ERROR=${CDAEMON_ERROR:-could not start it}
		fi
	fi

	t0=$EPOCHREALTIME
	if [ "${T_KIND[$i]}" = c ]; then
		if [ -n "$CDAEMON_ERROR" ] || ! c_daemon_alive; then
			echo "no daemon for the C tests: ${CDAEMON_ERROR:-it is not running}" >"$log"
			rc=1
		else
			eval "UNIRDMA_DEVDIR=\"\$CWORK/dev\" UNIRDMA_STATE_DIR=\"\$CWORK/state\" \
				LD_LIBRARY_PATH=\"\$LIBDIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\" \
				timeout -k 10 \"\$TIMEOUT\" $WRAP ${T_CMD[$i]}" </dev/null >"$log" 2>&1
			rc=$?
			if ! c_daemon_alive; then
				echo "unirdmad died during this test (its log: $RESULTS/unirdmad-ctests.log)" >>"$log"
				{ [ "$rc" = 0 ] || [ "$rc" = 77 ]; } && rc=1
			fi
		fi
	else
		eval "timeout -k 10 \"\$TIMEOUT\" ${T_CMD[$i]}" </dev/null >"$log" 2>&1
		rc=$?
	fi
	secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

	case $rc in
	0)
		passed=$((passed + 1))
		echo "ok $name (${secs}s)"
		;;
	77)
		skipped=$((skipped + 1))
		reason=$(sed -n 's/^SKIP: //p' "$log" | tail -n 1)
		echo "SKIP $name${reason:+: $reason}"
		;;
	*)
		failed=$((failed + 1))
		case $rc in
		124 | 137) why="timed out after ${TIMEOUT}s" ;;
		*) why="exit code $rc" ;;
		esac
		echo "FAIL $name (${secs}s, $why)"
		tail -n 30 "$log" | sed 's/^/    /'
		# the checks that failed, wherever they are in the log (a daemon's
		# log printed after them would push them out of the tail)
		if grep -q '^ *FAIL: ' "$log"; then
			echo "    --- failed checks ---"
			grep '^ *FAIL: ' "$log" | head -n 10 | sed 's/^ */    /'
		fi
		;;
	esac
done

if [ ${#T_NAME[@]} -eq 0 ]; then
	echo "no test matches: ${FILTERS[*]:-(no tests found)}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ ${#T_NAME[@]} -gt 0 ]
