#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/run.sh: unirdma's benchmark suite (bench/README.md).  `make bench`
# and `make bench-full` call it after building; it needs root (containers).
#
# usage: bench/run.sh [--quick|--full] [--out DIR] [--reps N] [--only SECTIONS] [--nice N]
#   --quick        (default) a reduced sweep, under 5 minutes
#   --full         every size from 2 B to 4 MiB, QPs 1..256, pairs 1..16
#   --out DIR      where the results go (default results/<date>-<mode>)
#   --reps N       repetitions of every measured point (quick 3, full 5)
#   --only LIST    comma-separated sections: idle,sizes,qps,pairs,floor,ucx,perftest,wire,app
#   --nice N       niceness of everything it runs (default -10; 0 to leave it): on a
#                  machine shared with other work, the measured processes then lose
#                  their cores less often
#
# It starts a private unirdmad, pins it and every program it runs to CPUs
# (printed, and in placement.txt), creates vRNICs, runs each section, and
# writes raw/*.jsonl (one JSON object per measured point), machine.md,
# placement.txt, logs/, then bench/report.py turns them into report.md with
# PNG plots and prints the summary table.
#
# Placement (override with BENCH_CPU_ENGINE, BENCH_CPU_DAEMON, BENCH_CPU_SERVER,
# BENCH_CPU_CLIENT): the engine thread, which plays the NIC, gets a core of its
# own; 4+ CPUs: the rest of unirdmad (control threads: the forwarding
# baseline's router), the server and the client one core each; 2 CPUs: the
# engine on CPU 0, everything else on CPU 1.  The control threads share the
# applications' core rather than the engine's: on the engine's core the
# forwarding router and the engine starve each other (read latency 1 ms
# instead of 45 us), so this placement is the forwarding baseline's better one.
set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
BUILD=${UNIRDMA_BUILD:-build}
[[ $BUILD == /* ]] || BUILD=$TOP/$BUILD
UNIRDMA=$BUILD/bin/unirdma
UNIRDMAD=$BUILD/bin/unirdmad
URD_BENCH=$BUILD/bench/urd_bench
URD_FLOOR=$BUILD/bench/urd_floor
export UNIRDMA_LIBDIR=$BUILD/lib

MODE=quick OUT= REPS= ONLY= NICE=${BENCH_NICE:--10}
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--quick) MODE=quick ;;
	--full) MODE=full ;;
	--out) OUT=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--only) ONLY=$2; shift ;;
	--nice) NICE=$2; shift ;;
	-h | --help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
	shift
done

say() { printf '%s\n' "$*"; }
die() { say "bench: $*" >&2; exit 1; }
want() { [ -z "$ONLY" ] || [[ ,$ONLY, == *,$1,* ]]; }

[ "$(id -u)" -eq 0 ] || die "needs root (containers of unirdma exec); run as root"
# Every process the runner starts inherits the niceness.  With autogroup
# scheduling (a scheduling group per session) niceness counts only inside the
# session, so the runner moves into a session of its own and gives that
# group the niceness too.
if [ "$NICE" != 0 ]; then
	if [ -z "${BENCH_OWN_SESSION:-}" ] && [ -w /proc/self/autogroup ]; then
		BENCH_OWN_SESSION=1 exec setsid -w "$0" "${ARGS[@]}"
	fi
	[ -w /proc/self/autogroup ] && { echo "$NICE" >/proc/self/autogroup || die "cannot set the autogroup's niceness"; }
	renice -n "$NICE" -p $$ >/dev/null || die "cannot set niceness $NICE"
fi
for f in "$UNIRDMA" "$UNIRDMAD" "$URD_BENCH" "$URD_FLOOR" "$UNIRDMA_LIBDIR/libibverbs.so.1"; do
	[ -e "$f" ] || die "$f is not built (make bench-build)"
done

# ---- parameters of the two modes -----------------------------------------------

pow2s() { # pow2s FROM TO: FROM,2*FROM,...,TO
	local v=$1 out=
	while [ "$v" -le "$2" ]; do out+=${out:+,}$v; v=$((v * 2)); done
	say "$out"
}
if [ "$MODE" = quick ]; then
	SIZES=2,64,4096,65536,1048576,4194304
	: "${REPS:=3}"
	WARM_MS=40 WIN_MS=160
	QPS_LIST="1 16 256" QP_SIZES=64,65536
	PAIRS_LIST="1 4 16"
	IDLE_S=5
	UCX_BYTES=$((4 << 30)) UCX_LAT_N=20000
	PT_LAT_N=1000 PT_LAT_N_FWD=300 PT_BW_SIZES="64 1048576"
	APP_N=100 APP_REPS=1
else
	SIZES=$(pow2s 2 4194304)
	: "${REPS:=5}"
	WARM_MS=100 WIN_MS=400
	QPS_LIST="1 2 4 8 16 32 64 128 256" QP_SIZES=64,4096,65536
	PAIRS_LIST="1 2 4 8 16"
	IDLE_S=20
	UCX_BYTES=$((16 << 30)) UCX_LAT_N=100000
	PT_LAT_N=10000 PT_LAT_N_FWD=2000 PT_BW_SIZES="64 4096 65536 1048576"
	APP_N=1000 APP_REPS=3
fi

NCPU=$(nproc)
if [ "$NCPU" -ge 4 ]; then
	def=(0 1 2 3)
elif [ "$NCPU" -eq 3 ]; then
	def=(0 1 2 2)
elif [ "$NCPU" -eq 2 ]; then
	def=(0 1 1 1)
else
	def=(0 0 0 0)
fi
CPU_ENGINE=${BENCH_CPU_ENGINE:-${def[0]}}
CPU_DAEMON=${BENCH_CPU_DAEMON:-${def[1]}}
CPU_SERVER=${BENCH_CPU_SERVER:-${def[2]}}
CPU_CLIENT=${BENCH_CPU_CLIENT:-${def[3]}}

STAMP=$(date +%Y%m%d-%H%M%S)
OUT=${OUT:-results/$STAMP-$MODE}
mkdir -p "$OUT/raw" "$OUT/logs" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
RAW=$OUT/raw LOGS=$OUT/logs
CMDLOG=$LOGS/commands.log
: >"$CMDLOG"
START_S=$SECONDS

# ---- machine -------------------------------------------------------------------

cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat; }

describe_machine() {
	local f=$OUT/machine.md
	{
		say "- date: $(date -Is)"
		say "- host: $(uname -n), kernel $(uname -r) $(uname -m)"
		say "- OS: $(. /etc/os-release && say "$PRETTY_NAME")"
		say "- CPU: $(lscpu | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2 }'), $NCPU online CPUs ($(lscpu | awk -F: '/^Thread\(s\) per core/ { gsub(/ /, "", $2); print $2 }') thread(s) per core)"
		say "- hypervisor: $(lscpu | awk -F: '/Hypervisor vendor/ { gsub(/^ +/, "", $2); print $2 }' | grep . || say none)"
		say "- caches: $(lscpu | awk -F: '/L1d|L2|L3/ { gsub(/^ +/, "", $2); printf "%s %s; ", $1, $2 }')"
		say "- vector extensions: $(grep -o -w -E 'avx2|avx512f|erms|fsrm' /proc/cpuinfo | sort -u | tr '\n' ' ')"
		say "- memory: $(free -g | awk '/Mem:/ { print $2 " GiB" }')"
		say "- frequency governor: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || say 'n/a (no cpufreq in this guest)')"
		say "- compiler: $(${CC:-cc} --version | head -1)"
		say "- unirdma: git $(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || say '?')$(git -C "$TOP" diff --quiet HEAD 2>/dev/null || say ' + uncommitted changes'), build $BUILD"
		say "- perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null || say 'not installed'); ucx: $(dpkg-query -W -f='${Version}' ucx-utils 2>/dev/null || say 'not installed'); gnuplot: $(gnuplot --version 2>/dev/null || say 'not installed')"
		say "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
		say "- busiest processes at start (other sessions on a shared machine show here):"
		ps -eo pid,psr,pcpu,comm --sort=-pcpu | head -6 | sed 's/^/      /'
		say "- mode: $MODE, $REPS repetitions of every point, warm-up ${WARM_MS} ms, window ${WIN_MS} ms; niceness of every benchmark process: $NICE (and of its scheduling autogroup: $(cat /proc/self/autogroup 2>/dev/null || say none))"
	} >"$f"
	read -r BUSY0 IDLE0 < <(cpu_busy)
}

# ---- daemon, vRNICs, placement ---------------------------------------------------

SERVER_PIDS=()
DAEMON_PID=
STATE=
cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	for p in "${SERVER_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	if [ -n "$DAEMON_PID" ]; then
		UNIRDMA_STATE_DIR=$STATE "$UNIRDMA" daemon stop >/dev/null 2>&1 || kill -TERM "$DAEMON_PID" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
	fi
	if [ -n "$STATE" ]; then
		"$UNIRDMA" --state-dir "$STATE" net-down >/dev/null 2>&1
		rm -rf "$STATE"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

tids() { ls "/proc/$DAEMON_PID/task" 2>/dev/null | sort -n; }
declare -A ROLE=()          # tid -> role
declare -A CTRL_TID=()      # vrnic -> tid of its control thread
VRS=() IPS=()

start_daemon() {
	STATE=$(mktemp -d /tmp/unirdma-bench.XXXXXX) || die "mktemp failed"
	export UNIRDMA_STATE_DIR=$STATE
	taskset -c "$CPU_DAEMON" "$UNIRDMAD" --state-dir "$STATE" --foreground >"$LOGS/unirdmad.log" 2>&1 &
	DAEMON_PID=$!
	local i
	for ((i = 0; i < 250; i++)); do
		"$UNIRDMA" daemon ping >/dev/null 2>&1 && break
		kill -0 "$DAEMON_PID" 2>/dev/null || die "unirdmad exited; see $LOGS/unirdmad.log"
		sleep 0.02
	done
	[ "$i" -lt 250 ] || die "unirdmad did not answer"
	# Threads: main, then the engine (main.c starts it first), then the rest.
	# A thread named by pthread_setname_np wins over that order: exactly
	# "urd-engine" (not "urd-engine-wait", its helper for many vRNICs).
	local t all=($(tids)) eng=
	for t in "${all[@]}"; do
		[[ $(cat "/proc/$DAEMON_PID/task/$t/comm") == urd-engine ]] && eng=$t
	done
	[ -n "$eng" ] || eng=${all[1]}
	ENGINE_TID=$eng
	for t in "${all[@]}"; do
		if [ "$t" = "$DAEMON_PID" ]; then ROLE[$t]=main
		elif [ "$t" = "$eng" ]; then ROLE[$t]=engine
		else ROLE[$t]=other; fi
	done
	taskset -p -c "$CPU_ENGINE" "$ENGINE_TID" >/dev/null || die "cannot pin the engine thread"
}

# make_vrnics N: vRNICs b0..b(N-1), tenant bench, 10.99.0.(i+1)/24; records the
# control thread each one brings.
make_vrnics() {
	local n=$1 i before after t
	for ((i = 0; i < n; i++)); do
		before=" $(tids | tr '\n' ' ') "
		"$UNIRDMA" vrnic create "b$i" --tenant bench --ip "10.99.0.$((i + 1))/24" >/dev/null ||
			die "vrnic create b$i failed"
		after=$(tids)
		for t in $after; do
			if [[ $before != *" $t "* ]]; then
				ROLE[$t]="ctrl b$i"
				CTRL_TID[b$i]=$t
			fi
		done
		VRS+=("b$i")
		IPS+=("10.99.0.$((i + 1))")
	done
}

# File descriptors on the threads' /proc files, inherited by every program the
# runner starts: urd_bench reads them at the edges of its measured windows.
open_cpu_fds() {
	local v t f
	f=schedstat
	[ -r "/proc/$DAEMON_PID/task/$ENGINE_TID/schedstat" ] || f=stat
	CPU_SRC=$f
	exec {ENGINE_FD}<"/proc/$DAEMON_PID/task/$ENGINE_TID/$f"
	exec {ENGINE_STAT_FD}<"/proc/$DAEMON_PID/task/$ENGINE_TID/stat"
	exec {DAEMON_FD}<"/proc/$DAEMON_PID/stat"
	declare -gA CTRL_FD=()
	for v in "${!CTRL_TID[@]}"; do
		t=${CTRL_TID[$v]}
		exec {fd}<"/proc/$DAEMON_PID/task/$t/$f"
		CTRL_FD[$v]=$fd
	done
}

cpu_args() { # cpu_args SERVER_VRNIC CLIENT_VRNIC
	say "--cpu engine=$ENGINE_FD --cpu unirdmad=$DAEMON_FD --cpu ctrl_server=${CTRL_FD[$1]} --cpu ctrl_client=${CTRL_FD[$2]}"
}

# `unirdma exec` closes every inherited fd but those it is told to keep.
keep_fds() { # keep_fds SERVER_VRNIC CLIENT_VRNIC
	say "--keep-fd $ENGINE_FD --keep-fd $DAEMON_FD --keep-fd ${CTRL_FD[$1]} --keep-fd ${CTRL_FD[$2]}"
}

print_placement() {
	local t f=$OUT/placement.txt
	{
		say "CPU placement ($NCPU CPUs online; taskset affinity, as the kernel reports it)"
		say "  unirdmad pid $DAEMON_PID:"
		for t in $(tids); do
			printf '    tid %-8s %-14s comm=%-16s cpus %s\n' "$t" "${ROLE[$t]:-other}" \
				"$(cat "/proc/$DAEMON_PID/task/$t/comm")" \
				"$(awk '/Cpus_allowed_list/ { print $2 }' "/proc/$DAEMON_PID/task/$t/status")"
		done
		say "  verbs servers (urd_bench server, perftest server) ......... cpus $CPU_SERVER"
		say "  verbs clients (urd_bench client, perftest client) ......... cpus $CPU_CLIENT"
		say "  forwarding baseline: the control threads above do the application's data verbs"
		say "  urd_floor memcpy .................................... cpu  $CPU_ENGINE"
		say "  urd_floor shmcopy, pingpong (two processes) ......... cpus $CPU_ENGINE,$CPU_CLIENT"
		say "  ucx_perftest server / client ........................ cpus $CPU_ENGINE / $CPU_CLIENT"
		say "  (the engine's core is the one that copies for unirdma; the floors and UCX copy there too)"
		say "CPU time: engine and control threads from /proc/$DAEMON_PID/task/<tid>/$CPU_SRC, unirdmad"
		say "from /proc/$DAEMON_PID/stat, applications from their own CLOCK_PROCESS_CPUTIME_ID."
	} | tee "$f"
}

# ---- running things --------------------------------------------------------------

PORT=18600
T_SESSION=${BENCH_TIMEOUT:-120}
FAILS=0

# log_cmd TEXT: the commands log, with the time since the start.
log_cmd() { printf '[%4ds] %s\n' "$((SECONDS - START_S))" "$*" >>"$CMDLOG"; }

# tag SECTION REP [KEY VALUE]...: add fields to every JSON line of stdin,
# with the 1-minute load average (a shared machine's noise) at that moment.
tag() {
	local extra=",\"section\":\"$1\",\"rep\":$2,\"load1\":$(cut -d' ' -f1 /proc/loadavg)"
	shift 2
	while [ $# -ge 2 ]; do extra+=",\"$1\":\"$2\""; shift 2; done
	sed -e '/^{.*}$/!d' -e "s/}\$/$extra}/"
}

# wait_gone PID SECONDS
wait_gone() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}

# session SECTION REP DATAPATH SERVER_VRNIC CLIENT_VRNIC CLIENT_ARGS...: one
# urd_bench server/client pair; the client's JSON goes to raw/SECTION.jsonl.
session() {
	local sec=$1 rep=$2 dp=$3 vs=$4 vc=$5
	shift 5
	local port=$((PORT++)) ip spid rc log
	ip=${IPS[${vs#b}]}
	log=$LOGS/$sec.$port
	log_cmd "[$dp] taskset -c $CPU_SERVER unirdma exec $vs -- urd_bench server -p $port"
	log_cmd "[$dp] taskset -c $CPU_CLIENT unirdma exec $vc -- urd_bench client $ip -p $port $*"
	UNIRDMA_DATAPATH=$dp taskset -c "$CPU_SERVER" timeout -k 5 "$T_SESSION" \
		"$UNIRDMA" exec "$vs" -- "$URD_BENCH" server -p "$port" >"$log.server" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	# shellcheck disable=SC2046 # cpu_args is a word list
	UNIRDMA_DATAPATH=$dp taskset -c "$CPU_CLIENT" timeout -k 5 "$T_SESSION" \
		"$UNIRDMA" exec $(keep_fds "$vs" "$vc") "$vc" -- "$URD_BENCH" client "$ip" -p "$port" "$@" $(cpu_args "$vs" "$vc") \
		>"$log.client" 2>"$log.client.err"
	rc=$?
	wait_gone "$spid" 10 || kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	if grep -q "does not forward" "$log.client.err"; then
		die "the daemon refused the forwarding data path; see $log.client.err"
	fi
	tag "$sec" "$rep" <"$log.client" >>"$RAW/$sec.jsonl"
	if [ "$rc" != 0 ]; then
		FAILS=$((FAILS + 1))
		say "  ! $sec [$dp] $* failed (exit $rc): $(tail -n 2 "$log.client.err" | tr '\n' ' ')"
		tail -n 3 "$log.server" | sed 's/^/    server: /'
	fi
	return 0
}

section_time() { say "  ($1 took $((SECONDS - $2)) s)"; }

# ---- sections ----------------------------------------------------------------------

run_idle() {
	local t0=$SECONDS e0 e1 s0 s1 d0 d1 w0 w1
	say "== idle: the engine's CPU with no traffic (${IDLE_S} s, ${#VRS[@]} vRNICs)"
	sleep 1
	read -r e0 _ <"/proc/$DAEMON_PID/task/$ENGINE_TID/schedstat"
	s0=$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/task/$ENGINE_TID/stat")
	d0=$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat")
	w0=$(date +%s%N)
	sleep "$IDLE_S"
	read -r e1 _ <"/proc/$DAEMON_PID/task/$ENGINE_TID/schedstat"
	s1=$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/task/$ENGINE_TID/stat")
	d1=$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat")
	w1=$(date +%s%N)
	local hz
	hz=$(getconf CLK_TCK)
	printf '{"bench":"runner","test":"idle","kind":"idle","state":"no tenants","vrnics":%d,"secs":%.3f,"cpu_cores":{"engine":%.6f,"engine_stat":%.6f,"unirdmad":%.6f}}\n' \
		"${#VRS[@]}" "$(awk -v a="$w0" -v b="$w1" 'BEGIN { print (b - a) / 1e9 }')" \
		"$(awk -v a="$e0" -v b="$e1" -v w0="$w0" -v w1="$w1" 'BEGIN { print (b - a) / (w1 - w0) }')" \
		"$(awk -v a="$s0" -v b="$s1" -v hz="$hz" -v w0="$w0" -v w1="$w1" 'BEGIN { print (b - a) / hz / ((w1 - w0) / 1e9) }')" \
		"$(awk -v a="$d0" -v b="$d1" -v hz="$hz" -v w0="$w0" -v w1="$w1" 'BEGIN { print (b - a) / hz / ((w1 - w0) / 1e9) }')" |
		tag idle 1 >>"$RAW/idle.jsonl"
	# the same with a connected tenant pair holding 256 idle QPs
	session idle 1 mapped b0 b1 -t idle -q 256 --ms $((IDLE_S * 1000)) -s 64
	section_time idle "$t0"
}

run_sizes() {
	local t0=$SECONDS rep dp
	say "== sizes: WRITE, READ, SEND x bandwidth and latency, 2 B .. 4 MiB, mapped vs forward, $REPS repetitions"
	for ((rep = 1; rep <= REPS; rep++)); do
		# one session per data path and repetition, back to back; the
		# order alternates so that neither always runs first
		for dp in $([ $((rep % 2)) = 1 ] && say "mapped forward" || say "forward mapped"); do
			session sizes "$rep" "$dp" b0 b1 -t write,read,send,nop -m bw,lat -s "$SIZES" \
				--warmup-ms "$WARM_MS" --ms "$WIN_MS"
		done
		say "  repetition $rep done ($((SECONDS - t0)) s)"
	done
	section_time sizes "$t0"
}

run_qps() {
	local t0=$SECONDS rep list
	say "== qps: RDMA WRITE bandwidth with 1..256 QPs per pair (sizes $QP_SIZES), mapped"
	for ((rep = 1; rep <= REPS; rep++)); do
		# one session holds the most QPs; each point uses the first N of them,
		# so the QP counts are measured back to back, in alternating order
		list=$(say $QPS_LIST | tr ' ' '\n')
		[ $((rep % 2)) = 0 ] && list=$(say "$list" | tac)
		session qps "$rep" mapped b0 b1 -t write -m bw -q "$(say $list | tr ' ' ',')" -s "$QP_SIZES" \
			--warmup-ms "$WARM_MS" --ms "$WIN_MS"
	done
	section_time qps "$t0"
}

run_pairs() {
	local t0=$SECONDS rep n i port start spids cpids ip size
	say "== pairs: 1..16 container pairs at once, RDMA WRITE 64 B and 64 KiB, mapped"
	for ((rep = 1; rep <= REPS; rep++)); do
		for n in $PAIRS_LIST; do
			for size in 64 65536; do
				spids=() cpids=()
				start=$(($(date +%s%3N) + 500 + 120 * n))
				for ((i = 0; i < n; i++)); do
					port=$((PORT++))
					ip=${IPS[$((2 * i))]}
					log_cmd "[mapped] pair $i/$n: taskset -c $CPU_SERVER unirdma exec b$((2 * i)) -- urd_bench server -p $port; taskset -c $CPU_CLIENT unirdma exec b$((2 * i + 1)) -- urd_bench client $ip -p $port -t write -m bw -s $size --start-at $start"
					taskset -c "$CPU_SERVER" timeout -k 5 "$T_SESSION" "$UNIRDMA" exec "b$((2 * i))" -- \
						"$URD_BENCH" server -p "$port" >"$LOGS/pairs.$port.server" 2>&1 &
					spids+=($!)
					SERVER_PIDS+=($!)
					# shellcheck disable=SC2046
					taskset -c "$CPU_CLIENT" timeout -k 5 "$T_SESSION" "$UNIRDMA" exec \
						$(keep_fds "b$((2 * i))" "b$((2 * i + 1))") "b$((2 * i + 1))" -- \
						"$URD_BENCH" client "$ip" -p "$port" -t write -m bw -s "$size" \
						--warmup-ms "$WARM_MS" --ms "$WIN_MS" --start-at "$start" \
						$(cpu_args "b$((2 * i))" "b$((2 * i + 1))") \
						>"$LOGS/pairs.$port.client" 2>"$LOGS/pairs.$port.client.err" &
					cpids+=("$!:$port:$i")
				done
				for c in "${cpids[@]}"; do
					wait "${c%%:*}" || { FAILS=$((FAILS + 1)); say "  ! pair ${c##*:} of $n failed: $(tail -n 1 "$LOGS/pairs.$(echo "$c" | cut -d: -f2).client.err")"; }
					port=$(echo "$c" | cut -d: -f2)
					tag pairs "$rep" pairs "$n" pair "${c##*:}" <"$LOGS/pairs.$port.client" >>"$RAW/pairs.jsonl"
				done
				for c in "${spids[@]}"; do
					wait_gone "$c" 10 || kill -TERM "$c" 2>/dev/null
					wait "$c" 2>/dev/null
				done
			done
		done
	done
	section_time pairs "$t0"
}

run_floor() {
	local t0=$SECONDS rep
	say "== floor: memcpy, two-process shared-memory copy, cache-line ping-pong"
	for ((rep = 1; rep <= REPS; rep++)); do
		# the shared buffers on the same tmpfs as the vRNIC regions (huge
		# pages where unirdmad could mount it with huge=within_size)
		"$URD_FLOOR" memcpy -s "$SIZES" --cpus "$CPU_ENGINE" --warmup-ms "$WARM_MS" --ms "$WIN_MS" |
			tag floor "$rep" >>"$RAW/floor.jsonl"
		"$URD_FLOOR" shmcopy -s "$SIZES" --cpus "$CPU_ENGINE,$CPU_CLIENT" --shm-dir "$STATE/vrnics" \
			--warmup-ms "$WARM_MS" --ms "$WIN_MS" |
			tag floor "$rep" >>"$RAW/floor.jsonl"
		"$URD_FLOOR" pingpong --cpus "$CPU_ENGINE,$CPU_CLIENT" --warmup-ms "$WARM_MS" --ms "$WIN_MS" |
			tag floor "$rep" >>"$RAW/floor.jsonl"
	done
	log_cmd "urd_floor memcpy|shmcopy|pingpong --cpus $CPU_ENGINE[,$CPU_CLIENT] -s $SIZES (shmcopy: --shm-dir $STATE/vrnics)"
	section_time floor "$t0"
}

# listening PORT: a TCP socket of this network namespace listens on PORT
listening() {
	local hex
	hex=$(printf ':%04X' "$1")
	awk -v p="$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

run_ucx() {
	local t0=$SECONDS rep test size n w port spid out i
	if ! command -v ucx_perftest >/dev/null; then
		say "== ucx: ucx_perftest is not installed (apt-get install ucx-utils); skipped"
		return
	fi
	say "== ucx: ucx_perftest over shared memory (UCX_TLS=sm,self), put and tag"
	for ((rep = 1; rep <= REPS; rep++)); do
		for test in ucp_put_bw tag_bw ucp_put_lat tag_lat; do
			for size in ${SIZES//,/ }; do
				case $test in
				*_lat) n=$(((256 << 20) / size)); [ "$n" -gt "$UCX_LAT_N" ] && n=$UCX_LAT_N; [ "$n" -lt 100 ] && n=100 ;;
				ucp_put_bw) n=$((UCX_BYTES / size)); [ "$n" -gt 5000000 ] && n=5000000; [ "$n" -lt 200 ] && n=200 ;;
				*) n=$((UCX_BYTES / size)); [ "$n" -gt 100000 ] && n=100000; [ "$n" -lt 200 ] && n=200 ;;
				esac
				w=$((n / 10))      # warm-up iterations (UCX's default, 10000, is far too many at 4 MiB)
				port=$((PORT++))
				UCX_TLS=sm,self taskset -c "$CPU_ENGINE" timeout -k 5 60 ucx_perftest -p "$port" \
					>"$LOGS/ucx.$port.server" 2>&1 &
				spid=$!
				SERVER_PIDS+=("$spid")
				for ((i = 0; i < 200; i++)); do listening "$port" && break; sleep 0.02; done
				log_cmd "UCX_TLS=sm,self taskset -c $CPU_ENGINE ucx_perftest -p $port; UCX_TLS=sm,self taskset -c $CPU_CLIENT ucx_perftest 127.0.0.1 -p $port -t $test -s $size -n $n -w $w -f"
				# bash's time: the client's CPU over its whole run, start-up
				# included (so a lower bound of its share while it measured)
				out=$( { TIMEFORMAT='UCXTIME %3R %3U %3S'; time UCX_TLS=sm,self taskset -c "$CPU_CLIENT" \
					timeout -k 5 60 ucx_perftest 127.0.0.1 -p "$port" -t "$test" -s "$size" -n "$n" -w "$w" -f \
					2>"$LOGS/ucx.$port.client.err"; } 2>&1 )
				wait_gone "$spid" 5 || kill -TERM "$spid" 2>/dev/null
				wait "$spid" 2>/dev/null
				# Final: iters p50[us] avg[us] overall[us] MiB/s-avg MiB/s-overall msg/s-avg msg/s-overall
				awk -v t="$test" -v s="$size" -v c="$CPU_ENGINE,$CPU_CLIENT" '
					$1 == "UCXTIME" { cores = ($2 > 0) ? ($3 + $4) / $2 : 0 }
					$1 ~ /^[0-9]+$/ && NF >= 8 { line = $0 }
					END {
						if (line == "") exit
						split(line, f)
						$0 = line
						kind = (t ~ /_lat$/) ? "lat" : "bw"
						printf "{\"bench\":\"ucx_perftest\",\"test\":\"%s\",\"kind\":\"%s\",\"size\":%d,\"ops\":%d,", t, kind, s, $1
						printf "\"MBps\":%.3f,\"Mops\":%.6f,", $6 * 1.048576, $8 / 1e6
						printf "\"lat_def\":\"UCX one-way (half round trip) for _lat, per-operation overhead for _bw\",\"lat_us\":{\"p50\":%s,\"avg\":%s},\"cpus\":\"%s\",\"cpu_cores\":{\"client\":%.4f}}\n", $2, $3, c, cores
					}' <<<"$out" | tag ucx "$rep" >>"$RAW/ucx.jsonl"
				grep -qE "^ *[0-9]+ +[0-9.]+ " <<<"$out" || { FAILS=$((FAILS + 1)); say "  ! ucx_perftest $test -s $size failed: $(tail -n 1 "$LOGS/ucx.$port.client.err")"; }
			done
		done
	done
	section_time ucx "$t0"
}

# perftest PROG DATAPATH ARGS...: one unmodified perftest pair (one repetition:
# perftest does its own warm-up and repeats internally).
perftest_pair() {
	local prog=$1 dp=$2
	shift 2
	local port=$((PORT++)) pidf spid init i crc kind
	pidf=$LOGS/pt.$port.pid
	log_cmd "[$dp] taskset -c $CPU_SERVER unirdma exec b0 -- $prog -F -p $port $*; taskset -c $CPU_CLIENT unirdma exec b1 -- $prog -F -p $port $* ${IPS[0]}"
	UNIRDMA_DATAPATH=$dp taskset -c "$CPU_SERVER" timeout -k 5 "$T_SESSION" "$UNIRDMA" exec --pidfile "$pidf" b0 -- \
		"$prog" -F -p "$port" "$@" >"$LOGS/pt.$port.server" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((i = 0; i < 300; i++)); do
		init=$(cat "$pidf" 2>/dev/null)
		if [ -n "$init" ]; then
			local hex
			hex=$(printf ':%04X' "$port")
			awk -v p="$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
				"/proc/$init/net/tcp" "/proc/$init/net/tcp6" 2>/dev/null && break
		fi
		sleep 0.02
	done
	UNIRDMA_DATAPATH=$dp taskset -c "$CPU_CLIENT" timeout -k 5 "$T_SESSION" "$UNIRDMA" exec b1 -- \
		"$prog" -F -p "$port" "$@" "${IPS[0]}" >"$LOGS/pt.$port.client" 2>&1
	crc=$?
	wait_gone "$spid" 10 || kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	case $prog in *_bw) kind=bw ;; *) kind=lat ;; esac
	awk -v p="$prog" -v k="$kind" -v dp="$dp" '
		$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 && $3 ~ /^[0-9.]+$/ {
			printf "{\"bench\":\"perftest\",\"test\":\"%s\",\"kind\":\"%s\",\"datapath\":\"%s\",\"size\":%d,\"ops\":%d,", p, k, dp, $1, $2
			if (k == "bw")
				printf "\"MBps\":%.3f,\"Mops\":%.6f}\n", $4 * 1.048576, $5
			else
				printf "\"lat_def\":\"%s\",\"lat_us\":{\"min\":%s,\"max\":%s,\"p50\":%s,\"avg\":%s,\"p99\":%s,\"p999\":%s}}\n", (p == "ib_read_lat") ? "post to completion" : "round trip / 2", $3, $4, $5, $6, $8, $9
		}' "$LOGS/pt.$port.client" | tag perftest 1 >>"$RAW/perftest.jsonl"
	if [ "$crc" != 0 ]; then
		FAILS=$((FAILS + 1))
		say "  ! [$dp] $prog $* failed (exit $crc): $(tail -n 1 "$LOGS/pt.$port.client")"
	fi
}

run_perftest() {
	local t0=$SECONDS dp s n
	for p in ib_write_bw ib_write_lat ib_send_lat ib_read_lat; do
		command -v "$p" >/dev/null || { say "== perftest: $p is not installed (apt-get install perftest); skipped"; return; }
	done
	say "== perftest: unmodified ib_write_bw, ib_write_lat, ib_send_lat, ib_read_lat, mapped vs forward"
	for dp in mapped forward; do
		for s in $PT_BW_SIZES; do
			n=$(( (1 << 30) / s )); [ "$n" -gt 200000 ] && n=200000; [ "$n" -lt 1000 ] && n=1000
			[ "$dp" = forward ] && n=$((n / 10 < 1000 ? 1000 : n / 10))
			perftest_pair ib_write_bw "$dp" -s "$s" -n "$n"
		done
		n=$PT_LAT_N
		[ "$dp" = forward ] && n=$PT_LAT_N_FWD
		for p in ib_write_lat ib_send_lat ib_read_lat; do
			perftest_pair "$p" "$dp" -s 2 -n "$n"
		done
	done
	section_time perftest "$t0"
}

# wire: two hosts (network namespaces) over RoCEv2, bench/wire.sh; its own
# daemons (tests/integration/mhlib.sh), results in $OUT/wire/.
run_wire() {
	local t0=$SECONDS
	say "== wire: two hosts over RoCEv2 on one veth bridge vs kernel TCP and UCX over TCP (bench/wire.sh)"
	log_cmd "UNIRDMA_BUILD=$BUILD bench/wire.sh --$MODE --out $OUT/wire"
	UNIRDMA_BUILD=$BUILD "$TOP/bench/wire.sh" "--$MODE" --out "$OUT/wire" >"$LOGS/wire.log" 2>&1
	local rc=$?
	grep -v '^  |' "$LOGS/wire.log" | sed -n '/^- placement/,$p'
	if [ "$rc" = 77 ]; then
		say "  skipped: $(grep -m1 '^SKIP' "$LOGS/wire.log")"
	elif [ "$rc" != 0 ]; then
		FAILS=$((FAILS + 1))
		say "  ! bench/wire.sh exited $rc; its log: $LOGS/wire.log"
	fi
	# the same link with jumbo frames (port MTU 4096, as RoCE fabrics
	# run): bandwidth only, the section whose figures the MTU moves
	if [ "$rc" != 77 ]; then
		say "-- the same, bandwidth only, on an underlay of MTU 9000 (port MTU 4096)"
		log_cmd "BENCH_WIRE_SECTIONS=bw UNIRDMA_BUILD=$BUILD bench/wire.sh --$MODE --mtu 9000 --out $OUT/wire-mtu9000"
		BENCH_WIRE_SECTIONS=bw UNIRDMA_BUILD=$BUILD "$TOP/bench/wire.sh" "--$MODE" --mtu 9000 \
			--out "$OUT/wire-mtu9000" >"$LOGS/wire-mtu9000.log" 2>&1
		rc=$?
		grep -E '^(WRITE bw|  [0-9]+ KiB  |WRITE bw .*MTU|goal)' "$LOGS/wire-mtu9000.log"
		if [ "$rc" != 0 ]; then
			FAILS=$((FAILS + 1))
			say "  ! bench/wire.sh --mtu 9000 exited $rc; its log: $LOGS/wire-mtu9000.log"
		fi
	fi
	section_time wire "$t0"
}

# app_run NAME TLS [VAR=VALUE]: NetPIPE (NPopenmpi, Open MPI over UCX) from 1 B to 1 MiB;
# NAME unirdma* runs its ranks in containers of b0 and b1 (mpirun in the tenant's
# network on vRNIC bl, `unirdma rsh`, as the README shows), NAME sm both ranks on
# the host. Ranks unpinned (mpirun --bind-to none); the engine keeps its CPU.
app_run() {
	local name=$1 tls=$2 extra=${3:-} dat=$OUT/app/$1.dat
	local common=(--allow-run-as-root --leave-session-attached -np 2 --bind-to none --mca pml ucx --mca btl self
		-x "UCX_TLS=$tls" -x OMPI_ALLOW_RUN_AS_ROOT=1 -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
	[ -n "$extra" ] && common+=(-x "$extra")
	local np=(NPopenmpi -p 0 -u 1048576 -n "$APP_N" -o "$dat")
	if [ "$name" = sm ]; then
		# Open MPI takes UCX only over the transports it knows for networks
		# unless told that any will do
		common+=(--mca pml_ucx_tls any --mca pml_ucx_devices any)
		log_cmd "mpirun ${common[*]} --host localhost:2 ${np[*]}"
		(cd "$OUT/app" && timeout -k 5 300 mpirun "${common[@]}" --host localhost:2 "${np[@]}") \
			>"$LOGS/app.$name.log" 2>&1
	else
		log_cmd "unirdma exec --no-container --net bl -- mpirun ${common[*]} --host b0,b1 --mca plm_rsh_agent '$UNIRDMA rsh' ... ${np[*]}"
		(cd "$OUT/app" && UNIRDMA_EXEC_RW=$OUT/app timeout -k 5 300 "$UNIRDMA" exec --no-container --net bl -- \
			mpirun "${common[@]}" --host b0,b1 --mca plm_rsh_agent "$UNIRDMA rsh" \
			--mca plm_rsh_no_tree_spawn 1 --mca routed direct --mca oob_tcp_if_include eth0 "${np[@]}") \
			>"$LOGS/app.$name.log" 2>&1
	fi
	[ -s "$dat" ] || { FAILS=$((FAILS + 1)); say "  ! NetPIPE $name failed: $(tail -n 2 "$LOGS/app.$name.log" | tr '\n' ' ')"; }
}

# app_fig NAME: "lat_us MBps@64KiB MBps@1MiB" from NetPIPE's table (bytes, Mbit/s, seconds)
app_fig() {
	awk '$1 == 1 { lat = $3 * 1e6 } $1 == 65536 { k = $2 / 8 } $1 == 1048576 { m = $2 / 8 }
		END { printf "%.2f %.0f %.0f\n", lat, k, m }' "$OUT/app/$1.dat" 2>/dev/null
}

run_app() {
	local t0=$SECONDS rep
	if ! command -v NPopenmpi >/dev/null || ! command -v mpirun >/dev/null; then
		say "== app: NetPIPE/Open MPI are not installed (apt-get install netpipe-openmpi openmpi-bin); skipped"
		return
	fi
	say "== app: NetPIPE (Open MPI over UCX): unirdma rc_verbs in containers vs UCX shared memory vs forwarding"
	mkdir -p "$OUT/app"
	"$UNIRDMA" vrnic create bl --tenant bench --ip 10.99.0.250/24 >/dev/null || die "vrnic create bl failed"
	{
		printf '%-26s %12s %16s %16s\n' "NetPIPE, $APP_REPS runs" "latency us" "64 KiB MB/s" "1 MiB MB/s"
		for ((rep = 1; rep <= APP_REPS; rep++)); do
			app_run sm sm,self
			app_run unirdma rc_verbs,ud_verbs,self
			app_run forward rc_verbs,ud_verbs,self UNIRDMA_DATAPATH=forward
			for n in sm unirdma forward; do
				read -r l k m <<<"$(app_fig "$n")"
				printf '%-26s %12s %16s %16s\n' "$n (run $rep)" "${l:-?}" "${k:-?}" "${m:-?}"
				echo "$n $l $k $m" >>"$OUT/app/figures.txt"
			done
		done
		awk '{ l[$1] += $2; k[$1] += $3; m[$1] += $4; c[$1]++ }
			END {
				for (n in c) { l[n] /= c[n]; k[n] /= c[n]; m[n] /= c[n] }
				if (!c["sm"] || !m["sm"]) exit
				printf "unirdma / sm at 1 MiB: %.2fx (goal >= 0.9); at 64 KiB %.2fx; latency %.2fx\n", m["unirdma"] / m["sm"], k["unirdma"] / k["sm"], l["unirdma"] / l["sm"]
				if (m["forward"] > 0)
					printf "forward / sm at 1 MiB: %.2fx; unirdma / forward %.2fx\n", m["forward"] / m["sm"], m["unirdma"] / m["forward"]
			}' "$OUT/app/figures.txt"
		say "placement: ranks unpinned (2 ranks, mpirun --bind-to none), the engine on CPU $CPU_ENGINE"
	} | tee "$OUT/app/summary.txt"
	"$UNIRDMA" vrnic delete bl >/dev/null
	section_time app "$t0"
}

# ---- main --------------------------------------------------------------------------

say "unirdma benchmark suite: $MODE mode, results in $OUT"
describe_machine
start_daemon
{
	say "- pages: transparent huge pages $(grep -o '\[[a-z]*\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || say n/a) (anonymous), $(grep -o '\[[a-z_]*\]' /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null || say n/a) (shmem_enabled); region directory $(findmnt -no FSTYPE,OPTIONS "$STATE/vrnics" 2>/dev/null | tr -s ' ' || say '?')"
} >>"$OUT/machine.md"
NVR=2
for n in $PAIRS_LIST; do [ $((2 * n)) -gt "$NVR" ] && NVR=$((2 * n)); done
want pairs || NVR=2
make_vrnics "$NVR"
open_cpu_fds
print_placement
say

want idle && run_idle
want sizes && run_sizes
want qps && run_qps
want pairs && run_pairs
want floor && run_floor
want ucx && run_ucx
want perftest && run_perftest
want wire && run_wire
want app && run_app

read -r BUSY1 IDLE1 < <(cpu_busy)
{
	say "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
	say "- whole-machine CPU busy during the run: $(awk -v b0="$BUSY0" -v b1="$BUSY1" -v i0="$IDLE0" -v i1="$IDLE1" -v n="$NCPU" 'BEGIN { printf "%.0f%% of %d CPUs", 100 * (b1 - b0) / ((b1 - b0) + (i1 - i0)), n }')"
	say "- unirdmad CPU during the run: $(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat") ticks of $(getconf CLK_TCK)/s; per thread: $(for t in $(tids); do printf '%s=%s ' "${ROLE[$t]// /_}" "$(awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/task/$t/stat")"; done)"
	say "- busiest processes at end:"
	ps -eo pid,psr,pcpu,comm --sort=-pcpu | head -6 | sed 's/^/      /'
	say "- run time: $((SECONDS - START_S)) s, failed sessions: $FAILS"
} >>"$OUT/machine.md"
say
say "== report"
if compgen -G "$RAW/*.jsonl" >/dev/null; then
	python3 "$TOP/bench/report.py" "$OUT" || die "report failed"
else
	say "(no single-host section ran: the report has only the wire)"
	: >"$OUT/report.md"
fi
if [ -s "$OUT/app/summary.txt" ]; then
	{
		say
		say "## An application: NetPIPE over Open MPI and UCX (raw tables in app/)"
		say
		say '```'
		cat "$OUT/app/summary.txt"
		say '```'
	} >>"$OUT/report.md"
fi
if [ -s "$OUT/wire/summary.txt" ]; then
	{
		say
		say "## Two hosts over RoCEv2 (bench/wire.sh; raw figures and logs in wire/)"
		say
		say '```'
		cat "$OUT/wire/summary.txt"
		say '```'
	} >>"$OUT/report.md"
fi
if [ -s "$OUT/wire-mtu9000/summary.txt" ]; then
	{
		say
		say "## Two hosts over RoCEv2, jumbo frames: bandwidth on an underlay of MTU 9000 (raw figures in wire-mtu9000/)"
		say
		say '```'
		cat "$OUT/wire-mtu9000/summary.txt"
		say '```'
	} >>"$OUT/report.md"
fi
say "total time: $((SECONDS - START_S)) s; report: $OUT/report.md"
[ "$FAILS" -eq 0 ] || say "bench: $FAILS sessions failed; their logs are in $LOGS"
exit 0
