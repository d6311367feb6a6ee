# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# lib.sh: helpers for the integration tests (sourced, not run).
#
# A test file registers cases and hands over to run_cases:
#
#     . "$(dirname "$0")/lib.sh"
#     case_ping() { run_pair "ibv_rc_pingpong" "ibv_rc_pingpong $IP_A"; }
#     add_case rc_default case_ping
#     run_cases "$@"
#
#   FILE --list       prints the case names (what tests/run-tests.sh runs one by one)
#   FILE NAME...      runs those cases
#   FILE              runs every case
#
# Each case runs in a subshell of its own with a private daemon (start_daemon:
# a mktemp state directory, its own bridge namespace) and, unless the file sets
# CASE_SETUP, two vRNICs of tenant t1 in a subnet of its own (make_vrnics):
#   $VR_A $IP_A (10.77.N.1/24) and $VR_B $IP_B (10.77.N.2/24).
# Everything is removed when the case ends, also on failure or a signal.
# A case passes when its function returns 0; 77 (skip) marks it skipped.

# Debian's programs first: the suite runs what scripts/install-deps.sh
# installed (python3 with python3-grpcio, perftest, ...), never a user's
# shim in front of them (a pyenv python3 shim took 300 ms a start on the
# CI machine, Debian's 37 ms; the suite starts python3 hundreds of times).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P) # physical: exec refuses --ro paths through symlinks
BUILD=${UNIRDMA_BUILD:-build} # or another build tree, e.g. build-asan
[[ $BUILD == /* ]] || BUILD=$TOP/$BUILD
BINDIR=${UNIRDMA_BINDIR:-$BUILD/bin}
UNIRDMA=$BINDIR/unirdma
UNIRDMAD=$BINDIR/unirdmad
export UNIRDMA_LIBDIR=${UNIRDMA_LIBDIR:-$BUILD/lib}
# what `unirdma exec` containers show of the host besides /usr, /etc, ...:
# the source and build trees read-only, the case's scratch dir writable
export UNIRDMA_EXEC_RO=${UNIRDMA_EXEC_RO:-$TOP:$BUILD}
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-90} # seconds a client may run
SERVER_TIMEOUT=${SERVER_TIMEOUT:-30} # seconds a server may take to finish after its client
CASE_SETUP=${CASE_SETUP:-setup_two_vrnics}
# Line-buffered output, so that a program killed on a timeout still shows
# how far it got (stdbuf only preloads a buffering setting).
LINEBUF=$(command -v stdbuf >/dev/null && echo "stdbuf -oL -eL")
# UCX's io_demo (ucx.sh, multihost.sh) sends messages of 1-64 KiB.  UCX 1.13
# sends those above its rendezvous threshold as a rendezvous (the receiver
# READs them) and those below it as eager SENDs, 8 KiB each.  When io_demo
# closes an endpoint (mode force) while the receiver has part of a
# multi-fragment eager message, the rest never comes, and UCX neither
# completes nor cancels the receive: the close then waits for ever (UCX
# issues #10873 and #10874, reported against 1.18).  The window is the time
# between a message's first and last fragments; with a busy loop on one CPU
# 2 runs of 11 across hosts hung at exit so.  Rendezvous above 4 KiB: no
# message is multi-fragment eager, and 40 runs in a row closed well.
IODEMO_UCX="UCX_RNDV_THRESH=4k"

CASE_NAMES=()
CASE_CMDS=()
SERVER_PIDS=() # background programs cleanup stops: servers, clients
PREV_DIRS=()   # scratch and state dirs of daemons a case restarted (start_daemon)
CLEANUP_HOOKS=() # commands cleanup evaluates first (a script's own resources)
DAEMON_ARGS=()   # more options for unirdmad (start_daemon)
PAIR_SEQ=0
FAILED_CHECKS=0

say() { printf '%s\n' "$*"; }
skip() { say "SKIP: $*"; exit 77; }
die() { say "FAIL: $*"; exit 1; }

require_root() { [ "$(id -u)" -eq 0 ] || skip "needs root (namespaces)"; }
require_prog() {
	local p
	for p in "$@"; do
		command -v "$p" >/dev/null 2>&1 || skip "$p is not installed (scripts/install-deps.sh)"
	done
}
# Our binaries missing is a failure, not a skip: the build must provide them.
require_build() {
	local f
	for f in "$UNIRDMA" "$UNIRDMAD"; do
		[ -x "$f" ] || die "$f is not built (run make)"
	done
	[ -e "$UNIRDMA_LIBDIR/libibverbs.so.1" ] || die "$UNIRDMA_LIBDIR/libibverbs.so.1 is not built (run make)"
}

# check DESCRIPTION COMMAND...: runs COMMAND, records and prints the result.
check() {
	local desc=$1
	shift
	if "$@"; then
		say "  ok: $desc"
	else
		say "  FAIL: $desc"
		FAILED_CHECKS=$((FAILED_CHECKS + 1))
	fi
}
# A case function ends with `checks_result` to turn failed checks into its status.
checks_result() { [ "$FAILED_CHECKS" -eq 0 ]; }

# ---- daemon -----------------------------------------------------------------

cleanup() {
	local rc=$? pid
	trap - EXIT INT TERM
	for pid in "${SERVER_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${SERVER_PIDS[@]}"; do
		wait_for_exit "$pid" 5 || kill -KILL "$pid" 2>/dev/null
	done
	local hook
	for hook in "${CLEANUP_HOOKS[@]}"; do  # a script's own (podman containers, ...)
		eval "$hook"
	done
	if [ -n "${DAEMON_PID:-}" ]; then
		if kill -0 "$DAEMON_PID" 2>/dev/null; then
			"$UNIRDMA" daemon stop >/dev/null 2>&1 || true
			kill -KILL "$DAEMON_PID" 2>/dev/null
		fi
		wait "$DAEMON_PID" 2>/dev/null
		# a sanitizer build reports into the log (leaks at exit)
		if [ -n "${WORK:-}" ] && grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$WORK/unirdmad.log" 2>/dev/null; then
			say "unirdmad's sanitizer report:"
			grep -A 30 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$WORK/unirdmad.log" | head -n 60 | sed 's/^/  | /'
			[ "$rc" = 0 ] && rc=1
		fi
	fi
	if [ -n "${STATE:-}" ]; then
		"$UNIRDMA" --state-dir "$STATE" net-down >/dev/null 2>&1 || true
	fi
	# a daemon that was killed leaves the tmpfs of each vRNIC mounted
	if [ -n "${STATE:-}" ]; then
		local m
		for m in "$STATE"/vrnics/*/; do
			mountpoint -q "$m" 2>/dev/null && umount -l "$m"
		done
	fi
	# a daemon that was killed leaves the tmpfs it mounted on its vRNIC dir
	[ -n "${STATE:-}" ] && mountpoint -q "$STATE/vrnics" 2>/dev/null && umount -l "$STATE/vrnics"
	wait 2>/dev/null
	[ -n "${WORK:-}" ] && rm -rf "$WORK"
	[ -n "${STATE:-}" ] && rm -rf "$STATE"
	local d
	for d in "${PREV_DIRS[@]}"; do
		[ -n "$d" ] && rm -rf "$d"
	done
	exit "$rc"
}

# Starts a private unirdmad. Sets WORK (scratch dir, writable in containers),
# STATE (its state dir, beside WORK),
# DAEMON_PID, exports UNIRDMA_STATE_DIR; cleanup runs when the shell exits.
start_daemon() {
	require_build
	# a case that restarts the daemon: the first one's dirs go at cleanup too
	[ -n "${WORK:-}" ] && PREV_DIRS+=("$WORK" "${STATE:-}")
	WORK=$(mktemp -d /tmp/unirdma-it.XXXXXX) || die "mktemp failed"
	# the state dir lies outside WORK: containers may write WORK (--rw), and
	# exec refuses a writable path that holds the daemon's state
	STATE=$(mktemp -d /tmp/unirdma-state.XXXXXX) || die "mktemp failed"
	export UNIRDMA_STATE_DIR=$STATE
	export UNIRDMA_EXEC_RW=$WORK
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	# UNIRDMA_DAEMON_ASAN_OPTIONS: the sanitizer run checks the daemon for
	# leaks while the (uninstrumented) test programs run without
	ASAN_OPTIONS=${UNIRDMA_DAEMON_ASAN_OPTIONS:-${ASAN_OPTIONS:-}} \
		"$UNIRDMAD" --state-dir "$STATE" --foreground --metrics 127.0.0.1:0 "${DAEMON_ARGS[@]}" \
		>"$WORK/unirdmad.log" 2>&1 &
	DAEMON_PID=$!
	local i
	for ((i = 0; i < 500; i++)); do
		"$UNIRDMA" daemon ping >/dev/null 2>&1 && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.02
	done
	say "unirdmad did not come up; its log:"
	tail -n 30 "$WORK/unirdmad.log"
	die "no daemon"
}

# A zombie (killed, not yet reaped by this shell) is not alive.
# bridge_ns [STATE_DIR [TENANT]]: the name of the bridge namespace `unirdma exec`
# uses for a tenant (default t1) of a state dir: unirdma-<FNV-1a 32 of its real
# path>-<FNV-1a 64 of the tenant> (as cli/net.c computes them).
fnv1a() { # fnv1a 32|64 STRING (bash arithmetic wraps at 64 bits)
	local s=$2 h i c
	if [ "$1" = 32 ]; then h=2166136261; else h=0xcbf29ce484222325; fi
	for ((i = 0; i < ${#s}; i++)); do
		printf -v c '%d' "'${s:i:1}"
		if [ "$1" = 32 ]; then
			h=$(((h ^ (c & 255)) * 16777619 & 0xffffffff))
		else
			h=$(((h ^ (c & 255)) * 1099511628211))
		fi
	done
	if [ "$1" = 32 ]; then printf '%08x' "$h"; else printf '%016x' "$h"; fi
}
bridge_ns() {
	local path
	path=$(realpath "${1:-$STATE}") || return 1
	printf 'unirdma-%s-%s\n' "$(fnv1a 32 "$path")" "$(fnv1a 64 "${2:-t1}")"
}

daemon_alive() {
	[ -n "${DAEMON_PID:-}" ] && kill -0 "$DAEMON_PID" 2>/dev/null &&
		[ "$(awk '{ print $3 }' "/proc/$DAEMON_PID/stat" 2>/dev/null)" != Z ]
}

# make_vrnics [N]: vRNICs vr0 10.77.N.1/24 and vr1 10.77.N.2/24, tenant t1,
# with the options in the array VRNIC_ARGS (if set).  N defaults to a number
# derived from the case name (1..250), so that cases running side by side
# use different subnets.
make_vrnics() {
	local n=${1:-$SUBNET}
	VR_A=vr0 VR_B=vr1 IP_A=10.77.$n.1 IP_B=10.77.$n.2
	"$UNIRDMA" vrnic create "$VR_A" --tenant t1 --ip "$IP_A/24" ${VRNIC_ARGS[@]+"${VRNIC_ARGS[@]}"} >/dev/null ||
		die "vrnic create $VR_A failed"
	"$UNIRDMA" vrnic create "$VR_B" --tenant t1 --ip "$IP_B/24" ${VRNIC_ARGS[@]+"${VRNIC_ARGS[@]}"} >/dev/null ||
		die "vrnic create $VR_B failed"
	say "vRNICs: $VR_A $IP_A/24, $VR_B $IP_B/24 (tenant t1, state dir $STATE)"
}

setup_two_vrnics() {
	require_root
	start_daemon
	make_vrnics
}

# in_container VRNIC CMD...: runs CMD in a fresh container of VRNIC.
in_container() {
	local vr=$1
	shift
	"$UNIRDMA" exec "$vr" -- "$@"
}

# device_lines FILE: the device rows of ibv_devices output (after its two header lines).
device_lines() { awk 'NR > 2 && NF' "$1"; }

# uses_our_lib PROGRAM: whether PROGRAM resolves libibverbs.so.1 to ours.
uses_our_lib() {
	local path got ours
	path=$(command -v "$1") || return 1
	got=$(LD_LIBRARY_PATH="$UNIRDMA_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$path" |
		awk '$1 == "libibverbs.so.1" { print $3 }')
	ours=$(readlink -f "$UNIRDMA_LIBDIR/libibverbs.so.1")
	say "  $1 loads libibverbs.so.1 from ${got:-nowhere}"
	[ -n "$got" ] && [ "$(readlink -f "$got")" = "$ours" ]
}

# tx_bytes_of VRNIC...: the bytes those vRNICs sent, summed (vrnic show's
# counters): proof that a program's traffic went through the vRNICs.
tx_bytes_of() {
	local v sum=0
	for v in "$@"; do
		sum=$((sum + $("$UNIRDMA" --json vrnic show "$v" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["vrnic"]["counters"]["tx_bytes"])')))
	done
	echo "$sum"
}

# ---- server/client pairs -----------------------------------------------------

# perftest_cm RUN PROG...: each perftest PROG with its connection through
# rdma_cm, run by the caller's pair function `RUN PROG` (with -R -n 100);
# PERF_OK counts those whose client printed its result line (the message
# size, then the 100 iterations), PERF_FAILED names the others.
perftest_cm() {
	local run=$1 t
	shift
	PERF_OK=0 PERF_FAILED=()
	for t in "$@"; do
		if "$run" "$t" && grep -Eq '^ *[0-9]+ +100 ' "$PAIR_CLIENT_OUT"; then
			PERF_OK=$((PERF_OK + 1))
		else
			PERF_FAILED+=("$t")
		fi
	done
}

# listening PID PORT: whether a TCP socket in PID's network namespace listens on PORT.
listening() {
	local hex f
	hex=$(printf ':%04X' "$2")
	for f in /proc/"$1"/net/tcp /proc/"$1"/net/tcp6; do
		[ -r "$f" ] && awk -v p="$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' "$f" && return 0
	done
	return 1
}

# hang_report INIT_PID: where the processes under a container's init are
# stuck (states, kernel wait channels, user stacks), to tell a slow machine
# from a hang in the library or the daemon.
hang_report() {
	local init=$1 p
	if [ -z "$init" ]; then
		say "  (no pidfile: the container itself did not start)"
		return
	fi
	for p in $init $(pgrep -P "$init" 2>/dev/null); do
		[ -d /proc/"$p" ] || continue
		say "  pid $p $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null| cut -c1-80): state $(awk '{print $3}' /proc/"$p"/stat 2>/dev/null), wchan $(cat /proc/"$p"/wchan 2>/dev/null)"
		if command -v gdb >/dev/null && [ "$p" != "$init" ]; then
			timeout 20 gdb -p "$p" -batch -ex 'thread apply all bt 12' 2>/dev/null |
				grep -E '^(Thread|#)' | sed 's/^/    /' | head -60
		fi
	done
}

# wait_for_exit PID SECONDS: 0 when PID (a child of this shell) exited in time.
wait_for_exit() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}

# run_pair [-p PORT] [--persistent] SERVER_CMD CLIENT_CMD
# Runs SERVER_CMD in a container of $VR_A in the background, waits until it
# listens on TCP PORT (default 18515), runs CLIENT_CMD in a container of $VR_B
# (at most $CLIENT_TIMEOUT s), then waits for the server (at most
# $SERVER_TIMEOUT s; a --persistent server such as qperf's is stopped instead).
# Prints both outputs. Returns 0 when both exited 0. The client's output stays
# in $PAIR_CLIENT_OUT, the server's in $PAIR_SERVER_OUT.
run_pair() {
	local port=18515 persistent=0
	while [ $# -gt 2 ]; do
		case $1 in
		-p) port=$2; shift 2 ;;
		--persistent) persistent=1; shift ;;
		*) break ;;
		esac
	done
	local scmd=$1 ccmd=$2 n=$((PAIR_SEQ++))
	local pidf=$WORK/pair$n.pid spid cpid crc src=0 i init
	PAIR_SERVER_OUT=$WORK/pair$n.server.out
	PAIR_CLIENT_OUT=$WORK/pair$n.client.out

	say "+ server in container $VR_A ($IP_A): $scmd"
	# shellcheck disable=SC2086 # the commands are word lists
	"$UNIRDMA" exec --pidfile "$pidf" "$VR_A" -- $LINEBUF $scmd >"$PAIR_SERVER_OUT" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((i = 0; i < 300; i++)); do
		init=$(cat "$pidf" 2>/dev/null)
		[ -n "$init" ] && listening "$init" "$port" && break
		if ! kill -0 "$spid" 2>/dev/null; then
			wait "$spid"
			say "server exited (code $?) before listening on port $port; its output:"
			sed 's/^/  | /' "$PAIR_SERVER_OUT"
			return 1
		fi
		sleep 0.05
	done
	if [ "$i" -ge 300 ]; then
		say "server did not listen on TCP port $port within 15 s; its output:"
		sed 's/^/  | /' "$PAIR_SERVER_OUT"
		hang_report "$(cat "$pidf" 2>/dev/null)"
		kill -TERM "$spid" 2>/dev/null
		return 1
	fi

	say "+ client in container $VR_B ($IP_B): $ccmd"
	# In the background so that a signal to this shell interrupts `wait` and
	# cleanup stops the client too (timeout runs it in a process group of its own).
	# shellcheck disable=SC2086
	# A client that hangs is looked at (stacks of both sides) before it is
	# stopped; timeout is only the backstop.
	timeout -k 5 "$((CLIENT_TIMEOUT + 60))" "$UNIRDMA" exec --pidfile "$pidf.client" "$VR_B" -- \
		$LINEBUF $ccmd >"$PAIR_CLIENT_OUT" 2>&1 &
	cpid=$!
	SERVER_PIDS+=("$cpid")
	if ! wait_for_exit "$cpid" "$CLIENT_TIMEOUT"; then
		say "client still running after ${CLIENT_TIMEOUT}s; where the client is:"
		hang_report "$(cat "$pidf.client" 2>/dev/null)"
		say "and the server:"
		hang_report "$(cat "$pidf" 2>/dev/null)"
		kill -TERM "$cpid" 2>/dev/null
		wait "$cpid"
		crc=124
	else
		wait "$cpid"
		crc=$?
	fi

	if [ "$persistent" = 1 ]; then
		kill -TERM "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	else
		# A failed client leaves the server waiting: give it a short grace only.
		if wait_for_exit "$spid" "$([ "$crc" = 0 ] && echo "$SERVER_TIMEOUT" || echo 3)"; then
			wait "$spid"
			src=$?
		else
			kill -TERM "$spid" 2>/dev/null
			wait "$spid" 2>/dev/null
			src=timeout
		fi
	fi

	say "--- client output (exit code $crc$([ "$crc" = 124 ] && echo ": timed out after ${CLIENT_TIMEOUT}s")) ---"
	sed 's/^/  | /' "$PAIR_CLIENT_OUT"
	if [ "$persistent" = 0 ]; then
		say "--- server output (exit code $src) ---"
	else
		say "--- server output (stopped after the client) ---"
	fi
	sed 's/^/  | /' "$PAIR_SERVER_OUT"
	# Repeat the failing side's last lines, so the end of the log tells why.
	if [ "$crc" != 0 ]; then
		say "client failed (exit code $crc); its last lines:"
		tail -n 4 "$PAIR_CLIENT_OUT" | sed 's/^/  | /'
		return 1
	fi
	if [ "$src" != 0 ]; then
		say "server failed (exit code $src); its last lines:"
		tail -n 4 "$PAIR_SERVER_OUT" | sed 's/^/  | /'
		return 1
	fi
	return 0
}

# ---- cases --------------------------------------------------------------------

# rdma_cm and rsockets servers listen on no TCP port: cm_pair waits for the
# line our librdmacm prints when it listens or joins a group
# (UNIRDMA_CM_DEBUG=1, stderr).
# cm_pair [--persistent] [--udp PORT] SERVER_CMD CLIENT_CMD: the server in a
# container of $VR_A, the client in one of $VR_B; both exit 0 (a --persistent
# server is stopped after the client, only the client counts); a --udp server
# is waited for on its UDP port instead (udpong's rbind binds a real UDP
# socket and nothing listens on the CM).  The outputs stay in
# $PAIR_SERVER_OUT / $PAIR_CLIENT_OUT, the client's status in CM_CLIENT_RC.
# CM_CLIENT_TIMEOUT (s) bounds the client.
udp_bound() { # udp_bound PID PORT: a UDP socket in PID's net namespace has PORT
	local hex
	hex=$(printf ':%04X' "$2")
	awk -v p="$hex" 'NR > 1 && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
		/proc/"$1"/net/udp 2>/dev/null
}
cm_pair() {
	local persistent=0 udp=
	while :; do
		case $1 in
		--persistent) persistent=1; shift ;;
		--udp) udp=$2; shift 2 ;;
		*) break ;;
		esac
	done
	local scmd=$1 ccmd=$2 n=$((PAIR_SEQ++)) spid cpid crc src i init
	local tmo=${CM_CLIENT_TIMEOUT:-30} pidf=$WORK/cm$n.pid
	PAIR_SERVER_OUT=$WORK/cm$n.server.out
	PAIR_CLIENT_OUT=$WORK/cm$n.client.out
	say "+ server in container $VR_A ($IP_A): $scmd"
	# shellcheck disable=SC2086 # the commands are word lists
	"$UNIRDMA" exec --pidfile "$pidf" "$VR_A" -- env UNIRDMA_CM_DEBUG=1 $LINEBUF $scmd >"$PAIR_SERVER_OUT" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((i = 0; i < 300; i++)); do
		if [ -n "$udp" ]; then
			init=$(cat "$pidf" 2>/dev/null)
			[ -n "$init" ] && udp_bound "$init" "$udp" && break
		else
			grep -q "rdmacm: \(listening\|joined\)" "$PAIR_SERVER_OUT" 2>/dev/null && break
		fi
		if ! kill -0 "$spid" 2>/dev/null; then
			wait "$spid"
			say "server exited (code $?) before listening; its output:"
			sed 's/^/  | /' "$PAIR_SERVER_OUT"
			return 1
		fi
		sleep 0.05
	done
	say "+ client in container $VR_B ($IP_B): $ccmd"
	# shellcheck disable=SC2086
	timeout -k 5 "$tmo" "$UNIRDMA" exec "$VR_B" -- $LINEBUF $ccmd >"$PAIR_CLIENT_OUT" 2>&1 &
	cpid=$!
	SERVER_PIDS+=("$cpid")
	wait "$cpid"
	crc=$?
	if [ "$persistent" = 1 ]; then
		kill -TERM "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		src=0
	elif wait_for_exit "$spid" "$([ "$crc" = 0 ] && echo 15 || echo 3)"; then
		wait "$spid"
		src=$?
	else
		kill -TERM "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		src=timeout
	fi
	say "--- client output (exit code $crc) ---"
	sed 's/^/  | /' "$PAIR_CLIENT_OUT"
	say "--- server output (exit code $src) ---"
	sed 's/^/  | /' "$PAIR_SERVER_OUT"
	CM_CLIENT_RC=$crc
	[ "$crc" = 0 ] && [ "$src" = 0 ]
}

# add_case NAME FUNCTION [ARGS...]
add_case() {
	local name=$1
	shift
	CASE_NAMES+=("$name")
	CASE_CMDS+=("$(printf '%q ' "$@")")
}

# Runs one case in a subshell; prints nothing itself. Returns its status.
run_one_case() {
	local i=$1
	(
		FAILED_CHECKS=0
		SUBNET=$(($(printf '%s' "$(basename "$0"):${CASE_NAMES[$i]}" | cksum | cut -d' ' -f1) % 250 + 1))
		say "=== $(basename "$0") ${CASE_NAMES[$i]}"
		$CASE_SETUP
		eval "${CASE_CMDS[$i]}"
		rc=$?
		if [ "$rc" = 0 ] && [ -n "${DAEMON_PID:-}" ] && ! daemon_alive; then
			say "unirdmad died during the case; the end of its log:"
			tail -n 30 "$WORK/unirdmad.log"
			rc=1
		fi
		if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -n "${WORK:-}" ] && [ -s "$WORK/unirdmad.log" ]; then
			say "--- end of unirdmad's log ---"
			tail -n 20 "$WORK/unirdmad.log" | sed 's/^/  | /'
		fi
		exit "$rc"
	)
}

run_cases() {
	local i name found failed=0 passed=0 skipped=0 sel=()
	if [ "${1:-}" = --list ]; then
		printf '%s\n' "${CASE_NAMES[@]}"
		exit 0
	fi
	for name in "$@"; do
		found=
		for i in "${!CASE_NAMES[@]}"; do
			[ "${CASE_NAMES[$i]}" = "$name" ] && found=$i
		done
		[ -n "$found" ] || { say "no case named '$name' in $0 (--list shows them)"; exit 2; }
		sel+=("$found")
	done
	[ $# -gt 0 ] || sel=("${!CASE_NAMES[@]}")
	if [ ${#sel[@]} -eq 1 ]; then
		run_one_case "${sel[0]}"
		exit
	fi
	for i in "${sel[@]}"; do
		run_one_case "$i"
		case $? in
		0) passed=$((passed + 1)); say "ok ${CASE_NAMES[$i]}" ;;
		77) skipped=$((skipped + 1)); say "SKIP ${CASE_NAMES[$i]}" ;;
		*) failed=$((failed + 1)); say "FAIL ${CASE_NAMES[$i]}" ;;
		esac
	done
	say "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ] || exit 1
	[ "$passed" -gt 0 ] || [ "$skipped" -eq 0 ] || exit 77
	exit 0
}
