#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/wire.sh: unirdma across two hosts (issue 11), measured in one run
# against a kernel TCP stream and UCX over TCP on the same link.
#
# usage: bench/wire.sh [--quick|--full] [--out DIR] [--mtu N]
#   --mtu N   the underlay's MTU (default 1500; 9000 gives a port MTU of 4096)
#   BENCH_WIRE_SECTIONS="bw lat mr loss" (the default) picks sections;
#   BW_SIZES="65536 1048576" (the default) the bw section's message sizes;
#   BENCH_WIRE_PIN=0 pins nothing.
#
# Two hosts are two network namespaces (tests/integration/mhlib.sh) on one
# veth bridge (the underlay, MTU 1500), each with its own unirdmad
# (--underlay ul0 --cluster etcd); vRNIC h1v1 on host 1, h2v1 on host 2.
# Measured, all with the server on host 1 and the client on host 2:
#   WRITE bandwidth at 64 KiB and 1 MiB: ib_write_bw -x 0 vs qperf tcp_bw
#     (kernel TCP, same message size) and ucx_perftest ucp_put_bw UCX_TLS=tcp
#     (medians of 3 alternating runs each, 5 with --full; BW_REPS=N)
#   2-byte latency: ib_write_lat vs ucx_perftest tag_lat UCX_TLS=tcp
#     (and qperf tcp_lat for reference)
#   64-byte message rate: ib_write_bw -s 64
#   packets per system call of each daemon's wire (`unirdma hosts --json`)
#   CPU seconds per GB moved of each daemon (/proc/PID/stat utime+stime)
#   goodput with 1 % of UDP 4791 dropped on the bridge vs loss-free (medians
#     of 5 alternating runs each, 7 with --full)
# Placement (2 CPUs): host 1's daemon and its program on CPU A, host 2's on
# CPU B (every thread of the daemon, taskset -a), the TCP/UCX baselines the
# same way; printed at the start.  Needs root.  Cleans up (mhlib's traps).

set -u
TOP=$(cd "$(dirname "$0")/.." && pwd -P)
MODE=quick OUT="" MTU=1500
while [ $# -gt 0 ]; do
	case $1 in
	--quick) MODE=quick ;;
	--full) MODE=full ;;
	--out) OUT=$2; shift ;;
	--mtu) MTU=$2; shift ;;
	-h | --help) sed -n '3,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "wire.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
cd "$TOP" || exit 1
# shellcheck source=tests/integration/lib.sh
. "$TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/mhlib.sh
. "$TOP/tests/integration/mhlib.sh"

if [ "$MODE" = quick ]; then
	BW_BYTES=$((1 << 30)) LAT_N=2000 MR_N=200000 QPERF_T=3 LOSS_BYTES=$((256 << 20)) LOSS_REPS=${LOSS_REPS:-5}
	BW_REPS=${BW_REPS:-3}
else
	BW_BYTES=$((4 << 30)) LAT_N=20000 MR_N=1000000 QPERF_T=10 LOSS_BYTES=$((1 << 30)) LOSS_REPS=7
	BW_REPS=${BW_REPS:-5}
fi
OUT=${OUT:-results/$(date +%Y%m%d-%H%M%S)-wire-$MODE}
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
RES=$OUT/wire.txt
: >"$RES"
T0=$SECONDS
# shellcheck disable=SC2034 # mhlib.sh mh_pair reads it
CLIENT_TIMEOUT=120

NCPU=$(nproc)
CPU_A=${BENCH_CPU_HOST1:-0}
CPU_B=${BENCH_CPU_HOST2:-$((NCPU > 1 ? 1 : 0))}
put() { printf '%s %s\n' "$1" "$2" >>"$RES"; } # put KEY VALUE
get() { awk -v k="$1" '$1 == k { v = $2 } END { print v }' "$RES"; }
# put_median KEY PREFIX SUFFIX N: KEY is the median of PREFIX{1..N}SUFFIX
# (those measured); put_sum likewise their sum
reps_of() { local i; for ((i = 1; i <= $4; i++)); do get "$2$i$3"; done; }
put_median() {
	put "$1" "$(reps_of "$@" | sort -g | awk 'NF { v[n++] = $1 } END { if (n) print (n % 2) ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2 }')"
}
put_sum() { put "$1" "$(reps_of "$@" | awk '{ s += $1 } END { print s + 0 }')"; }

mh_need_wire
require_prog qperf ib_write_bw ib_write_lat taskset
# the daemons' UDP GSO trains pass the veths whole to the peer's UDP GRO, as
# TCP's TSO segments pass to its GRO (engine/wire.h; tests cut them, mhlib.sh)
MH_GSO_TRAINS=${MH_GSO_TRAINS:-1}
mh_setup 2 "$MTU" --etcd >/dev/null
mh_daemon 1 || die "host 1's daemon did not start"
mh_daemon 2 || die "host 2's daemon did not start"
# BENCH_WIRE_PIN=0: nothing pinned (the scheduler places everything)
if [ "${BENCH_WIRE_PIN:-1}" = 0 ]; then
	CPU_A=0-$((NCPU - 1)) CPU_B=0-$((NCPU - 1))
else
	taskset -a -p -c "$CPU_A" "${MH_DPID[1]}" >/dev/null || die "cannot pin host 1's daemon"
	taskset -a -p -c "$CPU_B" "${MH_DPID[2]}" >/dev/null || die "cannot pin host 2's daemon"
fi
mh_vrnic 1 1
mh_vrnic 2 1
mh_tenant_lan t1 >/dev/null
SRV=$(mh_ip 1 1)
for k in 1 2; do
	o=$((3 - k))
	for ((i = 0; i < 50; i++)); do
		mh_cli "$k" cluster gids 2>/dev/null | grep -qw "$(mh_ip "$o" 1)" && break
		sleep 0.1
	done
	[ "$i" -lt 50 ] || die "host $k does not know $(mh_ip "$o" 1)'s GID"
done

say "unirdma across two hosts ($MODE mode), results in $OUT"
say "- machine: $(uname -r), $NCPU CPUs ($(lscpu | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2 }')), load $(cut -d' ' -f1 /proc/loadavg)"
say "- underlay: veth pair per host on bridge br0 (netns $MH_BR), MTU $MH_MTU; host 1 $MH_NET.1, host 2 $MH_NET.2"
say "- placement (taskset affinity, as the kernel reports it):"
for k in 1 2; do
	say "    host $k unirdmad pid ${MH_DPID[$k]}: threads on cpus $(for t in /proc/"${MH_DPID[$k]}"/task/*; do awk '/Cpus_allowed_list/ { print $2 }' "$t/status"; done | sort -u | paste -sd' ')"
done
say "    server programs (perftest, qperf, ucx_perftest) on host 1: cpu $CPU_A; clients on host 2: cpu $CPU_B"
say

dcpu() { awk '{ print $14 + $15 }' "/proc/${MH_DPID[$1]}/stat"; } # ticks
HZ=$(getconf CLK_TCK)

# perftest NAME PROG ARGS...: PROG server on host 1, client on host 2 (pinned);
# the client's result row (bytes iters ...) in $NAME.out; daemon CPU ticks of
# the run in KEY NAME.cpu1/2.
perftest() {
	local name=$1 prog=$2 c1 c2
	shift 2
	c1=$(dcpu 1) c2=$(dcpu 2)
	if ! mh_pair 1 h1v1 "taskset -c $CPU_A $prog -F -x 0 $*" 2 h2v1 "taskset -c $CPU_B $prog -F -x 0 $* $SRV" >"$OUT/$name.log" 2>&1; then
		say "  ! $prog $* failed; see $OUT/$name.log"
		FAILS=$((FAILS + 1))
		return 1
	fi
	put "$name.cpu1" "$(($(dcpu 1) - c1))"
	put "$name.cpu2" "$(($(dcpu 2) - c2))"
	cp "$PAIR_CLIENT_OUT" "$OUT/$name.out"
}
# bw row: bytes iters peak avg(MB/s) msgrate(Mpps)
pt_bw() {
	perftest "$@" || return
	awk -v n="$1" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 {
		printf "%s.MBps %.1f\n%s.Mpps %.4f\n%s.bytes %.0f\n", n, $4 * 1.048576, n, $5, n, $1 * $2 }' "$OUT/$1.out" >>"$RES"
}
# lat row: bytes iters min max typical avg stdev p99 p99.9
pt_lat() {
	perftest "$@" || return
	awk -v n="$1" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 6 { printf "%s.us %s\n", n, $5 }' "$OUT/$1.out" >>"$RES"
}

FAILS=0
QPERF_PID=
UCX_PORT=13337
qperf_server() {
	ip netns exec "$(mh_ns 1)" taskset -c "$CPU_A" qperf >"$OUT/qperf.server.log" 2>&1 &
	QPERF_PID=$!
	SERVER_PIDS+=("$QPERF_PID")
	sleep 0.3
}
# qperf_run NAME ARGS...: qperf client on host 2; "NAME VALUE" in MB/s or us
qperf_run() {
	local name=$1
	shift
	ip netns exec "$(mh_ns 2)" taskset -c "$CPU_B" timeout 60 qperf -t "$QPERF_T" \
		"$MH_NET.1" "$@" >"$OUT/$name.qperf" 2>&1
	awk -v n="$name" '
		$1 == "bw" { v = $3; u = $4; m = (u ~ /^GB/) ? 1000 : (u ~ /^MB/) ? 1 : (u ~ /^KB/) ? 0.001 : 0.000001; printf "%s %.1f\n", n, v * m }
		$1 == "latency" { v = $3; u = $4; m = (u ~ /^ms/) ? 1000 : (u ~ /^ns/) ? 0.001 : 1; printf "%s %.2f\n", n, v * m }' \
		"$OUT/$name.qperf" >>"$RES"
	[ -n "$(get "$name")" ] || { say "  ! qperf $* failed: $(tail -n 1 "$OUT/$name.qperf")"; FAILS=$((FAILS + 1)); }
}
# ucx NAME TEST SIZE N: ucx_perftest over TCP between the hosts; MB/s or us
ucx() {
	local name=$1 test=$2 size=$3 n=$4 port=$((UCX_PORT++)) spid i
	UCX_TLS=tcp UCX_NET_DEVICES=ul0 ip netns exec "$(mh_ns 1)" taskset -c "$CPU_A" \
		timeout -k 5 90 ucx_perftest -p "$port" >"$OUT/$name.ucx.server" 2>&1 &
	spid=$!
	SERVER_PIDS+=("$spid")
	for ((i = 0; i < 100; i++)); do
		ip netns exec "$(mh_ns 1)" ss -ltn 2>/dev/null | grep -q ":$port " && break
		sleep 0.05
	done
	UCX_TLS=tcp UCX_NET_DEVICES=ul0 ip netns exec "$(mh_ns 2)" taskset -c "$CPU_B" \
		timeout -k 5 90 ucx_perftest "$MH_NET.1" -p "$port" -t "$test" -s "$size" -n "$n" -w $((n / 10)) -f \
		>"$OUT/$name.ucx" 2>&1
	wait_for_exit "$spid" 5 || kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	# Final: iters p50[us] avg[us] overall[us] MiB/s-avg MiB/s-overall msg/s-avg msg/s-overall
	awk -v n="$name" -v t="$test" '$1 ~ /^[0-9]+$/ && NF >= 8 { l = $0 }
		END { if (l == "") exit; split(l, f)
			if (t ~ /_lat$/) printf "%s %.2f\n", n, f[2]; else printf "%s %.1f\n", n, f[6] * 1.048576 }' \
		"$OUT/$name.ucx" >>"$RES"
	[ -n "$(get "$name")" ] || { say "  ! ucx_perftest $test -s $size failed: $(tail -n 1 "$OUT/$name.ucx")"; FAILS=$((FAILS + 1)); }
}

iters() { local n=$(($1 / $2)); [ "$n" -gt "$3" ] && n=$3; [ "$n" -lt 1000 ] && n=1000; echo "$n"; }

# BENCH_WIRE_SECTIONS: which of bw lat mr loss to run (default all)
SECTIONS=" ${BENCH_WIRE_SECTIONS:-bw lat mr loss} "
want() { [[ $SECTIONS == *" $1 "* ]]; }

qperf_server
if want bw; then
say "== WRITE bandwidth (ib_write_bw -x 0, 1 QP) vs kernel TCP (qperf tcp_bw) and UCX over TCP (ucp_put_bw)"
# The three alternate BW_REPS times and each one's median counts (single
# runs on this shared machine vary by a fifth); CPU per GB over all of them.
for s in ${BW_SIZES:-65536 1048576}; do
	for ((rep = 1; rep <= BW_REPS; rep++)); do
		pt_bw "wbw${s}_$rep" ib_write_bw -s "$s" -n "$(iters "$BW_BYTES" "$s" 100000)"
		qperf_run "tcp${s}_$rep" -m "$s" tcp_bw
		if command -v ucx_perftest >/dev/null; then
			ucx "ucx${s}_$rep" ucp_put_bw "$s" "$(iters "$BW_BYTES" "$s" 100000)"
		fi
		say "  $((s / 1024)) KiB, run $rep: unirdma $(get "wbw${s}_$rep.MBps"), TCP $(get "tcp${s}_$rep"), UCX-tcp $(get "ucx${s}_$rep") MB/s"
	done
	put_median "wbw$s.MBps" "wbw${s}_" .MBps "$BW_REPS"
	put_median "tcp$s" "tcp${s}_" "" "$BW_REPS"
	put_median "ucx$s" "ucx${s}_" "" "$BW_REPS"
	for k in cpu1 cpu2 bytes; do
		put_sum "wbw$s.$k" "wbw${s}_" ".$k" "$BW_REPS"
	done
done
fi
if want lat; then
say "== 2-byte latency (ib_write_lat) vs UCX over TCP (tag_lat), qperf tcp_lat for reference"
pt_lat lat2 ib_write_lat -s 2 -n "$LAT_N"
command -v ucx_perftest >/dev/null && ucx ucxlat2 tag_lat 2 "$LAT_N"
qperf_run tcplat2 -m 2 tcp_lat
fi
if want mr; then
say "== 64-byte message rate (ib_write_bw -s 64)"
pt_bw mr64 ib_write_bw -s 64 -n "$MR_N"
fi
if want loss; then
say "== goodput with 1 % of UDP 4791 dropped on the bridge (ib_write_bw -s 65536)"
# Loss is per packet on a real link: the hosts cut their GSO trains at ul0
# for this section (both runs), so the bridge drops packets, not trains.
segment() { for k in 1 2; do ip -n "$(mh_ns "$k")" link set ul0 gso_max_segs "$1"; done; }
segment 1
# Loss-free and lossy runs alternate LOSS_REPS times and each side's median
# counts: single runs on this shared machine vary by a third.
# h2_count KEY: host 2's (the requester's) counter KEY summed over its peers
# (timeouts: resend timer expiries; tail_probes: tail-loss probes)
h2_count() { mh_hosts_count 2 "$1"; }
for ((rep = 1; rep <= LOSS_REPS; rep++)); do
	t0=$(h2_count timeouts) p0=$(h2_count tail_probes)
	pt_bw "loss0_$rep" ib_write_bw -s 65536 -n "$(iters "$LOSS_BYTES" 65536 100000)"
	t1=$(h2_count timeouts) p1=$(h2_count tail_probes)
	mh_loss 1 >/dev/null
	pt_bw "loss1_$rep" ib_write_bw -s 65536 -n "$(iters "$LOSS_BYTES" 65536 100000)"
	put "loss1_$rep.dropped" "$(mh_loss_dropped)"
	mh_loss 0 >/dev/null
	t2=$(h2_count timeouts) p2=$(h2_count tail_probes)
	say "  run $rep: loss-free $(get "loss0_$rep.MBps") MB/s ($((t1 - t0)) resend timeouts, $((p1 - p0)) probes), 1 % loss $(get "loss1_$rep.MBps") MB/s ($(get "loss1_$rep.dropped") frames dropped, $((t2 - t1)) timeouts, $((p2 - p1)) probes)"
done
for k in loss0 loss1; do
	put_median "$k.MBps" "${k}_" .MBps "$LOSS_REPS"
done
put_sum loss1.dropped loss1_ .dropped "$LOSS_REPS"
[ "$MH_GSO_TRAINS" = 1 ] && segment 65535
fi
for k in 1 2; do
	mh_cli "$k" --json hosts >"$OUT/hosts$k.json" 2>&1 || mh_cli "$k" hosts --json >"$OUT/hosts$k.json" 2>&1
	python3 - "$OUT/hosts$k.json" "$k" >>"$RES" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
def find(o):
    if isinstance(o, dict):
        if "tx_calls" in o:
            return o
        for v in o.values():
            r = find(v)
            if r:
                return r
    if isinstance(o, list):
        for v in o:
            r = find(v)
            if r:
                return r
u = find(d)
if u:
    k = sys.argv[2]
    for key in ("tx_packets", "tx_calls", "rx_packets", "rx_calls"):
        print(f"h{k}.{key} {u.get(key, 0)}")
for h in d.get("hosts", []):
    c = h.get("counters", {})
    k = sys.argv[2]
    print(f"h{k}.retransmits {c.get('retransmits', 0)}")
    print(f"h{k}.timeouts {c.get('timeouts', 0)}")
    print(f"h{k}.tail_probes {c.get('tail_probes', 0)}")
    print(f"h{k}.held {c.get('held', 0)}")
    print(f"h{k}.naks_tx {sum(c.get('naks_tx', {}).values())}")
    print(f"h{k}.drops_psn {c.get('drops', {}).get('psn', 0)}")
EOF
	# shellcheck disable=SC2016 # awk's own $
	ip netns exec "$(mh_ns "$k")" awk '$1 == "Udp:" && !h { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
		$1 == "Udp:" { for (i = 2; i <= NF; i++) if (n[i] == "RcvbufErrors") print "h'"$k"'.udp_rcvbuf_errors", $i }' \
		/proc/net/snmp >>"$RES"
done

# ---- report ------------------------------------------------------------------------
kill -TERM "$QPERF_PID" 2>/dev/null
say
python3 - "$RES" "$HZ" "$MTU" <<'EOF' | tee "$OUT/summary.txt"
import sys
v = {}
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 2:
        try:
            v[p[0]] = float(p[1])
        except ValueError:
            pass
hz = float(sys.argv[2])
mtu = sys.argv[3]
def g(k):
    return v.get(k)
def r(a, b):
    return a / b if a is not None and b else None
def f(x, fmt="%.1f"):
    return fmt % x if x is not None else "n/a"
rows = []
print("%-34s %12s %12s %12s %9s %9s" % ("WRITE bw, MTU %s (MB/s, medians)" % mtu, "unirdma", "kernel TCP", "UCX tcp", "/TCP", "/UCX"))
for s in (65536, 1048576):
    a, t, u = g("wbw%d.MBps" % s), g("tcp%d" % s), g("ucx%d" % s)
    print("%-34s %12s %12s %12s %9s %9s" % ("  %d KiB" % (s // 1024), f(a), f(t), f(u), f(r(a, t), "%.2fx"), f(r(a, u), "%.2fx")))
    rows.append(("WRITE bw %d KiB vs TCP, MTU %s" % (s // 1024, mtu), ">= 1.0x", r(a, t), lambda x: x >= 1.0))
    rows.append(("WRITE bw %d KiB vs UCX-tcp, MTU %s" % (s // 1024, mtu), ">= 1.0x", r(a, u), lambda x: x >= 1.0))
l, ul, tl = g("lat2.us"), g("ucxlat2"), g("tcplat2")
print("%-34s %12s %12s %12s %9s %9s" % ("2-byte latency (us, one way)", f(l, "%.2f"), f(tl, "%.2f"), f(ul, "%.2f"), f(r(l, tl), "%.2fx"), f(r(l, ul), "%.2fx")))
rows.append(("2-byte latency vs UCX-tcp", "<= 1.0x", r(l, ul), lambda x: x <= 1.0))
print("%-34s %12s" % ("64-byte message rate (Mmsg/s)", f(g("mr64.Mpps"), "%.3f")))
g0, g1 = g("loss0.MBps"), g("loss1.MBps")
print("%-34s %12s  (loss-free %s MB/s; medians of alternating runs; %s frames dropped)" % ("goodput at 1% loss (MB/s)", f(g1), f(g0), f(g("loss1.dropped"), "%.0f")))
rows.append(("goodput 1% loss / loss-free", ">= 0.9", r(g1, g0), lambda x: x >= 0.9))
for k in (1, 2):
    tp, tc, rp, rc = (g("h%d.%s" % (k, x)) for x in ("tx_packets", "tx_calls", "rx_packets", "rx_calls"))
    print("host %d wire: %s packets sent per sendmsg-type call, %s received per receive call (%s / %s packets)" % (
        k, f(r(tp, tc), "%.2f"), f(r(rp, rc), "%.2f"), f(tp, "%.0f"), f(rp, "%.0f")))
for k in (1, 2):
    print("host %d RC: %s retransmitted, %s timeouts, %s tail-loss probes, %s NAKs sent, %s packets held after a gap, %s dropped out of sequence; UDP receive-buffer overflows %s (whole run)" % (
        k, *(f(g("h%d.%s" % (k, x)), "%.0f") for x in ("retransmits", "timeouts", "tail_probes", "naks_tx", "held", "drops_psn", "udp_rcvbuf_errors"))))
print("daemon CPU seconds per GB moved (ib_write_bw; host 1 = responder, host 2 = requester):")
for n in ("wbw65536", "wbw1048576", "mr64"):
    b = g(n + ".bytes")
    c1, c2 = g(n + ".cpu1"), g(n + ".cpu2")
    if b and c1 is not None:
        print("  %-12s host 1 %6.2f s/GB, host 2 %6.2f s/GB (%.2f GB moved)" % (n, c1 / hz / (b / 1e9), c2 / hz / (b / 1e9), b / 1e9))
print()
print("%-40s %-8s %10s  %s" % ("goal (issue 11)", "target", "measured", "met?"))
for name, tgt, x, ok in rows:
    print("%-40s %-8s %10s  %s" % (name, tgt, f(x, "%.2fx") if x is not None else "n/a", "n/a" if x is None else ("yes" if ok(x) else "NO")))
EOF
say "wire: $((SECONDS - T0)) s, failed runs: $FAILS; logs and raw figures in $OUT"
[ "$FAILS" -eq 0 ]
