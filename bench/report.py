#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""report.py: turn a results directory of bench/run.sh into report.md, PNG
plots (gnuplot) and a one-screen summary on stdout.

    bench/report.py RESULTS_DIR
    bench/report.py --compare BEFORE_DIR AFTER_DIR    key figures side by side
    bench/report.py --compare B1,B2 A1,A2    several runs a side, pooled (run
                                             them alternately: B1 A1 B2 A2)

Reads RESULTS_DIR/raw/*.jsonl (one JSON object per measured point, written by
urd_bench, urd_floor and the runner's wrappers of perftest and ucx_perftest),
machine.md and placement.txt.  Every figure is the median over the
repetitions with [min, max] beside it; ratios between designs are taken per
repetition (the two were measured back to back in the same repetition) and
then summarised the same way.  Only the Python standard library and gnuplot.
"""
import glob
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict

KIB, MIB = 1024, 1 << 20
DPNAME = {"mapped": "unirdma", "forward": "forwarding"}


# ------------------------------------------------------------------ loading

def load(rdir):
    recs = []
    for path in sorted(glob.glob(os.path.join(rdir, "raw", "*.jsonl"))):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        recs.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    return recs


def sel(recs, **kw):
    out = []
    for r in recs:
        if all(r.get(k) == v for k, v in kw.items()):
            out.append(r)
    return out


def get(r, path):
    v = r
    for p in path.split("."):
        if not isinstance(v, dict) or p not in v:
            return None
        v = v[p]
    return v


class Stat:
    """median [min, max] of a list of numbers"""

    def __init__(self, vals):
        self.vals = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]

    def __bool__(self):
        return bool(self.vals)

    @property
    def med(self):
        return statistics.median(self.vals) if self.vals else None

    @property
    def lo(self):
        return min(self.vals) if self.vals else None

    @property
    def hi(self):
        return max(self.vals) if self.vals else None

    def fmt(self, f="{:.3g}", rng=True):
        if not self.vals:
            return "–"
        s = f.format(self.med)
        if rng and len(self.vals) > 1:
            s += " [" + f.format(self.lo) + "–" + f.format(self.hi) + "]"
        return s


def stat_of(recs, path):
    return Stat([get(r, path) for r in recs])


def paired_ratio(a_recs, b_recs, path, invert=False):
    """per-repetition ratio a/b of the metric at path"""
    a = {r.get("rep"): get(r, path) for r in a_recs}
    b = {r.get("rep"): get(r, path) for r in b_recs}
    vals = []
    for rep in sorted(set(a) & set(b), key=lambda x: (x is None, x)):
        x, y = a[rep], b[rep]
        if x is None or y is None or not y or not x:
            continue
        vals.append(y / x if invert else x / y)
    return Stat(vals)


def size_name(s):
    if s >= MIB and s % MIB == 0:
        return "%d MiB" % (s // MIB)
    if s >= KIB and s % KIB == 0:
        return "%d KiB" % (s // KIB)
    return "%d B" % s


def gbps(mbps):
    return None if mbps is None else mbps / 1000.0


# ------------------------------------------------------------------ goals

def verdict(st, goal, higher_better):
    if not st:
        return "not measured"
    ok = st.med >= goal if higher_better else st.med <= goal
    if ok and len(st.vals) > 1:
        worst = st.lo if higher_better else st.hi
        ok_all = worst >= goal if higher_better else worst <= goal
        return "met" if ok_all else "met (median; not in every repetition)"
    return "met" if ok else "MISSED"


def compute(recs):
    """Every figure the summary and the goals need, in one dict."""
    R = {}
    sz = [r for r in recs if r.get("section") == "sizes"]

    def pt(dp, test, kind, size):
        return sel(sz, datapath=dp, test=test, kind=kind, size=size)

    # G1: message rate at 64 B, WRITE (and READ, SEND for the table)
    for test in ("write", "read", "send"):
        R["rate64_ratio_" + test] = paired_ratio(pt("mapped", test, "bw", 64), pt("forward", test, "bw", 64), "Mops")
        R["rate64_mapped_" + test] = stat_of(pt("mapped", test, "bw", 64), "Mops")
        R["rate64_forward_" + test] = stat_of(pt("forward", test, "bw", 64), "Mops")
        R["lat2_ratio_" + test] = paired_ratio(pt("mapped", test, "lat", 2), pt("forward", test, "lat", 2), "lat_us.p50")
        R["lat2_mapped_" + test] = stat_of(pt("mapped", test, "lat", 2), "lat_us.p50")
        R["lat2_forward_" + test] = stat_of(pt("forward", test, "lat", 2), "lat_us.p50")
    R["nop_mapped"] = stat_of(sel(sz, datapath="mapped", test="nop"), "lat_us.p50")
    R["nop_forward"] = stat_of(sel(sz, datapath="forward", test="nop"), "lat_us.p50")

    # G3: 1 MiB WRITE over the two-process copy floor
    fl = [r for r in recs if r.get("section") == "floor"]
    w1m = pt("mapped", "write", "bw", MIB)
    R["write1m"] = stat_of(w1m, "MBps")
    R["shm1m"] = stat_of(sel(fl, test="shmcopy", size=MIB), "MBps")
    R["memcpy1m"] = stat_of(sel(fl, test="memcpy", size=MIB), "MBps")
    R["write1m_over_shm"] = paired_ratio(w1m, sel(fl, test="shmcopy", size=MIB), "MBps")
    # the same per CPU-second of the copying party (engine / copier): robust
    # against a shared machine taking CPU away from either
    eff_w = [dict(rep=r.get("rep"), v=r["MBps"] / get(r, "cpu_cores.engine"))
             for r in w1m if get(r, "cpu_cores.engine")]
    eff_s = [dict(rep=r.get("rep"), v=r["MBps"] / get(r, "cpu_cores.copier"))
             for r in sel(fl, test="shmcopy", size=MIB) if get(r, "cpu_cores.copier")]
    R["write1m_over_shm_percpu"] = paired_ratio(eff_w, eff_s, "v")
    R["write1m_percpu"] = Stat([e["v"] for e in eff_w])
    R["write_4096"] = stat_of(pt("mapped", "write", "bw", 4096), "MBps")
    R["load1"] = Stat([r.get("load1") for r in recs if r.get("load1") is not None])
    # how much of a core the engine got while it had work (RDMA WRITE bandwidth, 64 KiB and up)
    R["engine_share"] = Stat([get(r, "cpu_cores.engine") for r in sz if r.get("datapath") == "mapped"
                              and r.get("test") == "write" and r.get("kind") == "bw" and r["size"] >= 65536])

    # G4: WRITE over UCX put at 64 KiB and 1 MiB
    ux = [r for r in recs if r.get("section") == "ucx"]
    for s in (64 * KIB, MIB):
        R["ucxput_%d" % s] = stat_of(sel(ux, test="ucp_put_bw", size=s), "MBps")
        R["write_%d" % s] = stat_of(pt("mapped", "write", "bw", s), "MBps")
        R["write_over_ucx_%d" % s] = paired_ratio(pt("mapped", "write", "bw", s), sel(ux, test="ucp_put_bw", size=s), "MBps")

    # G5: 256 QPs over 1 QP
    qp = [r for r in recs if r.get("section") == "qps"]
    R["qp_sizes"] = sorted({r["size"] for r in qp})
    R["qp_counts"] = sorted({r["qps"] for r in qp})
    for s in R["qp_sizes"]:
        hi = max(R["qp_counts"])
        R["qp_ratio_%d" % s] = paired_ratio(sel(qp, qps=hi, size=s), sel(qp, qps=1, size=s), "MBps")
    R["qp_max"] = max(R["qp_counts"]) if R["qp_counts"] else None

    # G6: idle engine
    idle = [r for r in recs if r.get("section") == "idle"]
    R["idle_engine"] = stat_of(sel(idle, bench="runner"), "cpu_cores.engine")
    R["idle_engine_connected"] = stat_of(sel(idle, bench="urd_bench"), "cpu_cores.engine")
    R["idle_daemon"] = stat_of(sel(idle, bench="runner"), "cpu_cores.unirdmad")
    return R


def goals(R):
    rows = []
    rows.append(("unirdma / forwarding, message rate, RDMA WRITE 64 B", ">= 6x",
                 R["rate64_ratio_write"], "{:.3g}x", verdict(R["rate64_ratio_write"], 6, True)))
    rows.append(("unirdma / forwarding, latency p50, RDMA WRITE 2 B", "<= 0.4x",
                 R["lat2_ratio_write"], "{:.3g}x", verdict(R["lat2_ratio_write"], 0.4, False)))
    rows.append(("RDMA WRITE 1 MiB / two-process shm copy, bandwidth", ">= 0.8",
                 R["write1m_over_shm"], "{:.3g}", verdict(R["write1m_over_shm"], 0.8, True)))
    for s in (64 * KIB, MIB):
        st = R["write_over_ucx_%d" % s]
        rows.append(("RDMA WRITE / UCX put (shm), bandwidth, %s" % size_name(s), ">= 0.8", st, "{:.3g}",
                     verdict(st, 0.8, True)))
    for s in R["qp_sizes"]:
        st = R["qp_ratio_%d" % s]
        what = "message rate" if s < 4096 else "bandwidth"
        rows.append(("%s QPs / 1 QP, aggregate %s, WRITE %s" % (R["qp_max"], what, size_name(s)), ">= 0.9", st,
                     "{:.3g}", verdict(st, 0.9, True)))
    st = Stat([v * 100 for v in R["idle_engine"].vals])
    rows.append(("engine CPU when idle (% of a core)", "< 1%", st, "{:.3g}%", verdict(st, 1.0, False)))
    st = Stat([v * 100 for v in R["idle_engine_connected"].vals])
    rows.append(("engine CPU, idle with 256 connected QPs (% of a core)", "< 1%", st, "{:.3g}%",
                 verdict(st, 1.0, False)))
    return rows


# ------------------------------------------------------------------ plots

GP_HEAD = """set terminal pngcairo size 1000,620 font "DejaVu Sans,10" noenhanced
set grid xtics ytics mytics lc rgb "#dddddd"
set key outside right top
set logscale x 2
set xtics ("2 B" 2, "16 B" 16, "128 B" 128, "1 KiB" 1024, "8 KiB" 8192, "64 KiB" 65536, "512 KiB" 524288, "4 MiB" 4194304)
set format y "%%g"
set xlabel "message size"
"""


def have_gnuplot():
    return shutil.which("gnuplot") is not None


def gp_terminal_ok():
    try:
        out = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True, timeout=20)
        return "pngcairo" in (out.stdout + out.stderr)
    except (OSError, subprocess.SubprocessError):
        return False


class Plotter:
    def __init__(self, rdir):
        self.dir = os.path.join(rdir, "plots")
        self.data = os.path.join(self.dir, "data")
        os.makedirs(self.data, exist_ok=True)
        self.ok = have_gnuplot()
        self.head = GP_HEAD if gp_terminal_ok() else GP_HEAD.replace("pngcairo", "png").replace(
            'font "DejaVu Sans,10" ', "")
        self.made = []

    def series(self, name, rows):
        """rows: (x, median, min, max) -> data file; returns its path"""
        path = os.path.join(self.data, name + ".dat")
        with open(path, "w") as f:
            for row in rows:
                if row[1] is None:
                    continue
                f.write(" ".join("%.9g" % v for v in row) + "\n")
        return path if any(r[1] is not None for r in rows) else None

    def plot(self, name, title, body_lines, plots):
        """plots: list of (datafile, 'using ... with ... title ...')"""
        plots = [(d, spec) for d, spec in plots if d]
        if not self.ok or not plots:
            return None
        gp = os.path.join(self.dir, name + ".gp")
        png = os.path.join(self.dir, name + ".png")
        with open(gp, "w") as f:
            f.write(self.head.replace("%%", "%"))
            f.write('set output "%s"\n' % png)
            f.write('set title "%s"\n' % title)
            for line in body_lines:
                f.write(line + "\n")
            f.write("plot " + ", \\\n     ".join('"%s" %s' % (d, spec) for d, spec in plots) + "\n")
        res = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
        if res.returncode != 0 or not os.path.exists(png):
            sys.stderr.write("report: gnuplot failed for %s: %s\n" % (name, res.stderr.strip()[-400:]))
            return None
        self.made.append(name)
        return "plots/%s.png" % name


def by_size(recs, path, scale=1.0):
    groups = defaultdict(list)
    for r in recs:
        v = get(r, path)
        if v is not None:
            groups[r["size"]].append(v * scale)
    return [(s, statistics.median(v), min(v), max(v)) for s, v in sorted(groups.items())]


STYLE = {
    ("mapped", "write"): 'lc rgb "#1f77b4" pt 7',
    ("mapped", "read"): 'lc rgb "#2ca02c" pt 5',
    ("mapped", "send"): 'lc rgb "#9467bd" pt 9',
    ("forward", "write"): 'lc rgb "#1f77b4" dt 2 pt 6',
    ("forward", "read"): 'lc rgb "#2ca02c" dt 2 pt 4',
    ("forward", "send"): 'lc rgb "#9467bd" dt 2 pt 8',
}


def make_plots(P, recs, R):
    sz = [r for r in recs if r.get("section") == "sizes"]
    fl = [r for r in recs if r.get("section") == "floor"]
    ux = [r for r in recs if r.get("section") == "ucx"]
    figs = {}

    def dp_series(kind, path, scale, fname):
        out = []
        for dp in ("mapped", "forward"):
            for test in ("write", "read", "send"):
                d = P.series("%s_%s_%s" % (fname, dp, test), by_size(sel(sz, datapath=dp, test=test, kind=kind), path, scale))
                label = ("unirdma " if dp == "mapped" else "forwarding ") + test.upper()
                out.append((d, "using 1:2:3:4 with yerrorlines %s lw 2 title \"%s\"" % (STYLE[(dp, test)], label)))
        return out

    # bandwidth
    plots = dp_series("bw", "MBps", 1e-3, "bw")
    plots.append((P.series("bw_memcpy", by_size(sel(fl, test="memcpy"), "MBps", 1e-3)),
                  'using 1:2:3:4 with yerrorlines lc rgb "#7f7f7f" pt 1 lw 1 title "floor: memcpy, 1 core"'))
    plots.append((P.series("bw_shmcopy", by_size(sel(fl, test="shmcopy"), "MBps", 1e-3)),
                  'using 1:2:3:4 with yerrorlines lc rgb "#000000" pt 2 lw 2 title "floor: 2-process shm copy"'))
    plots.append((P.series("bw_ucxput", by_size(sel(ux, test="ucp_put_bw"), "MBps", 1e-3)),
                  'using 1:2:3:4 with yerrorlines lc rgb "#d62728" pt 3 lw 2 title "UCX put (shm)"'))
    plots.append((P.series("bw_ucxtag", by_size(sel(ux, test="tag_bw"), "MBps", 1e-3)),
                  'using 1:2:3:4 with yerrorlines lc rgb "#ff7f0e" pt 3 lw 1 title "UCX tag (shm)"'))
    figs["bw"] = P.plot("bw", "Bandwidth (median, bars: min-max over repetitions)",
                        ['set ylabel "GB/s (10^9 B/s)"', "set logscale y 10"], plots)

    # message rate
    plots = dp_series("bw", "Mops", 1.0, "rate")
    plots.append((P.series("rate_shmcopy", by_size(sel(fl, test="shmcopy"), "Mops")),
                  'using 1:2:3:4 with yerrorlines lc rgb "#000000" pt 2 lw 2 title "floor: 2-process shm copy"'))
    plots.append((P.series("rate_ucxput", by_size(sel(ux, test="ucp_put_bw"), "Mops")),
                  'using 1:2:3:4 with yerrorlines lc rgb "#d62728" pt 3 lw 2 title "UCX put (shm)"'))
    figs["rate"] = P.plot("rate", "Message rate, one QP, 128 outstanding (median, min-max)",
                          ['set ylabel "million messages / s"', "set logscale y 10"], plots)

    # latency p50
    plots = dp_series("lat", "lat_us.p50", 1.0, "lat")
    plots.append((P.series("lat_ucxput", by_size(sel(ux, test="ucp_put_lat"), "lat_us.p50")),
                  'using 1:2:3:4 with yerrorlines lc rgb "#d62728" pt 3 lw 2 title "UCX put latency (shm)"'))
    plots.append((P.series("lat_ucxtag", by_size(sel(ux, test="tag_lat"), "lat_us.p50")),
                  'using 1:2:3:4 with yerrorlines lc rgb "#ff7f0e" pt 3 lw 1 title "UCX tag latency (shm)"'))
    pp = stat_of(sel(fl, test="pingpong"), "lat_us.p50")
    body = ['set ylabel "microseconds (p50; WRITE/SEND one-way, READ whole operation)"', "set logscale y 10"]
    if pp:
        body.append("set yrange [%g:*]" % (pp.med / 2))
        body.append('set arrow from graph 0, first %g to graph 1, first %g nohead lc rgb "#000000" dt 3' % (pp.med, pp.med))
        body.append('set label "floor: cache-line ping-pong %.2f us" at graph 0.02, first %g offset 0,0.7' % (pp.med, pp.med * 1.15))
    figs["lat"] = P.plot("lat", "Latency, median of each run's p50 (bars: min-max)", body, plots)

    # latency tails at every size for WRITE
    plots = []
    for dp, dt in (("mapped", 1), ("forward", 2)):
        for q, col in (("p50", "#1f77b4"), ("p99", "#ff7f0e"), ("p999", "#d62728")):
            d = P.series("tail_%s_%s" % (dp, q), by_size(sel(sz, datapath=dp, test="write", kind="lat"), "lat_us." + q))
            plots.append((d, 'using 1:2 with linespoints lc rgb "%s" dt %d lw 2 title "%s %s"' % (
                col, dt, "unirdma" if dp == "mapped" else "forwarding", q)))
    figs["tail"] = P.plot("tail", "RDMA WRITE ping-pong latency percentiles (median over repetitions)",
                          ['set ylabel "microseconds, one-way"', "set logscale y 10"], plots)

    # ratio unirdma / forwarding
    plots = []
    for test in ("write", "read", "send"):
        rows, rows_l = [], []
        for s in sorted({r["size"] for r in sz}):
            st = paired_ratio(sel(sz, datapath="mapped", test=test, kind="bw", size=s),
                              sel(sz, datapath="forward", test=test, kind="bw", size=s), "Mops")
            if st:
                rows.append((s, st.med, st.lo, st.hi))
            st = paired_ratio(sel(sz, datapath="mapped", test=test, kind="lat", size=s),
                              sel(sz, datapath="forward", test=test, kind="lat", size=s), "lat_us.p50")
            if st:
                rows_l.append((s, st.med, st.lo, st.hi))
        plots.append((P.series("ratio_rate_" + test, rows),
                      "using 1:2:3:4 with yerrorlines %s lw 2 title \"throughput ratio %s\"" % (STYLE[("mapped", test)], test.upper())))
        plots.append((P.series("ratio_lat_" + test, rows_l),
                      "using 1:2:3:4 with yerrorlines %s lw 2 title \"latency ratio %s\"" % (STYLE[("forward", test)], test.upper())))
    figs["ratio"] = P.plot("ratio", "unirdma / forwarding, per-repetition ratio (median, min-max)",
                           ['set ylabel "ratio (log)"', "set logscale y 10",
                            'set arrow from graph 0, first 6 to graph 1, first 6 nohead lc rgb "#1f77b4" dt 3',
                            'set label "goal: throughput >= 6x" at graph 0.02, first 7.5',
                            'set arrow from graph 0, first 0.4 to graph 1, first 0.4 nohead lc rgb "#d62728" dt 3',
                            'set label "goal: latency <= 0.4x" at graph 0.02, first 0.32'], plots)

    # QPs
    qp = [r for r in recs if r.get("section") == "qps"]
    if qp:
        plots = []
        for s, col in zip(R["qp_sizes"], ("#1f77b4", "#2ca02c", "#d62728", "#9467bd")):
            rows = []
            for q in R["qp_counts"]:
                st = paired_ratio(sel(qp, qps=q, size=s), sel(qp, qps=1, size=s), "MBps")
                if st:
                    rows.append((q, st.med, st.lo, st.hi))
            plots.append((P.series("qps_%d" % s, rows),
                          'using 1:2:3:4 with yerrorlines lc rgb "%s" lw 2 title "WRITE %s"' % (col, size_name(s))))
        figs["qps"] = P.plot("qps", "Aggregate throughput with N QPs per pair, relative to 1 QP",
                             ['set xlabel "QPs per pair"', "set xtics auto", 'set format x "%g"', 'set ylabel "throughput / throughput with 1 QP (log)"',
                              "set logscale y 10", "set yrange [0.1:*]",
                              'set arrow from graph 0, first 0.9 to graph 1, first 0.9 nohead lc rgb "#d62728" dt 3',
                              'set label "goal 0.9" at graph 0.02, first 0.85'], plots)

    # pairs
    pr = [r for r in recs if r.get("section") == "pairs"]
    if pr:
        plots = []
        for s, col in ((64, "#1f77b4"), (65536, "#2ca02c")):
            agg, low = defaultdict(list), defaultdict(list)
            for n in sorted({int(r["pairs"]) for r in pr}):
                for rep in sorted({r["rep"] for r in pr}):
                    rr = [r for r in pr if int(r["pairs"]) == n and r["rep"] == rep and r["size"] == s]
                    if len(rr) == n:
                        tot = sum(r["MBps"] for r in rr)
                        agg[n].append(tot)
                        low[n].append(min(r["MBps"] for r in rr) * n / tot if tot else 0)
            base = statistics.median(agg[1]) if agg.get(1) else None
            if base:
                rows = [(n, statistics.median(v) / base, min(v) / base, max(v) / base) for n, v in sorted(agg.items())]
                plots.append((P.series("pairs_%d" % s, rows),
                              'using 1:2:3:4 with yerrorlines lc rgb "%s" lw 2 title "aggregate, WRITE %s"' % (col, size_name(s))))
                rows = [(n, statistics.median(v), min(v), max(v)) for n, v in sorted(low.items())]
                plots.append((P.series("pairs_fair_%d" % s, rows),
                              'using 1:2 with linespoints lc rgb "%s" dt 2 title "slowest pair x N / aggregate, %s"' % (col, size_name(s))))
        figs["pairs"] = P.plot("pairs", "N container pairs at once: aggregate relative to one pair, and fairness",
                               ['set xlabel "container pairs"', "set xtics auto", 'set format x "%g"', 'set ylabel "ratio"', "set yrange [0:*]"], plots)

    # CPU
    plots = []
    for dp, who, col, dt, label in (("mapped", "engine", "#1f77b4", 1, "unirdma: engine"),
                                    ("mapped", "client", "#2ca02c", 1, "unirdma: client app"),
                                    ("forward", "engine", "#1f77b4", 2, "forwarding: engine"),
                                    ("forward", "ctrl_client", "#d62728", 2, "forwarding: client's control thread"),
                                    ("forward", "client", "#2ca02c", 2, "forwarding: client app")):
        d = P.series("cpu_%s_%s" % (dp, who), by_size(sel(sz, datapath=dp, test="write", kind="bw"), "cpu_cores." + who))
        plots.append((d, 'using 1:2:3:4 with yerrorlines lc rgb "%s" dt %d lw 2 title "%s"' % (col, dt, label)))
    figs["cpu"] = P.plot("cpu", "CPU during RDMA WRITE bandwidth (cores = CPU time / wall time)",
                         ['set ylabel "cores"', "set yrange [0:*]"], plots)
    return figs


# ------------------------------------------------------------------ report

def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def fmt(v, f="{:.3g}"):
    return "–" if v is None else f.format(v)


def read(path):
    try:
        with open(path) as f:
            return f.read().rstrip()
    except OSError:
        return "(missing)"


def observations(recs, R):
    """Plain statements computed from the data: where each message's time goes."""
    sz = [r for r in recs if r.get("section") == "sizes"]
    fl = [r for r in recs if r.get("section") == "floor"]
    ux = [r for r in recs if r.get("section") == "ucx"]
    out = []
    m64 = sel(sz, datapath="mapped", test="write", kind="bw", size=64)
    f64 = sel(sz, datapath="forward", test="write", kind="bw", size=64)
    mops = stat_of(m64, "Mops").med
    if mops:
        eng = stat_of(m64, "cpu_cores.engine").med
        cli = stat_of(m64, "cpu_cores.client").med
        shm = stat_of(sel(fl, test="shmcopy", size=64), "Mops").med
        put = stat_of(sel(ux, test="ucp_put_bw", size=64), "Mops").med
        out.append("Small messages are bound by per-message work, not by bytes: RDMA WRITE 64 B runs at %s M "
                   "messages/s, i.e. %s ns each, where the engine spends %s ns and the application %s ns of CPU "
                   "per message (rings, doorbell, completion); a two-process hand-over through shared memory "
                   "does %s M/s and UCX put %s M/s at the same size."
                   % (fmt(mops), fmt(1e3 / mops, "{:.0f}"), fmt(eng * 1e3 / mops if eng else None, "{:.0f}"),
                      fmt(cli * 1e3 / mops if cli else None, "{:.0f}"), fmt(shm), fmt(put)))
    fm = stat_of(f64, "Mops").med
    if fm and R["nop_forward"]:
        out.append("Forwarding pays one request to the daemon per work request and per poll: %s us for an "
                   "empty poll against %s us mapped; at 64 B it reaches %s M messages/s, where the "
                   "daemon's control thread of the client's vRNIC uses %s of a core."
                   % (R["nop_forward"].fmt("{:.3g}", False), R["nop_mapped"].fmt("{:.3g}", False), fmt(fm),
                      fmt(stat_of(f64, "cpu_cores.ctrl_client").med, "{:.2f}")))
    w1 = sel(sz, datapath="mapped", test="write", kind="bw", size=MIB)
    if w1 and R["write1m_over_shm_percpu"]:
        eff = R["write1m_over_shm_percpu"].med
        share = stat_of(w1, "cpu_cores.engine").med
        why = []
        if share is not None and share < 0.9:
            why.append("the engine got only %.2f of its core" % share)
        if eff < 0.95:
            why.append("its copy (an sg_copy of registered memory through both vRNIC file mappings) does %.0f%% "
                       "less per CPU-second than a plain memcpy into shared memory" % (100 * (1 - eff)))
        out.append("Large messages are bound by the engine's copy: RDMA WRITE 1 MiB moves %s GB/s with the "
                   "engine at %s of a core, %s of what the two-process copy floor achieves per CPU-second of "
                   "the copying thread%s."
                   % (fmt(gbps(stat_of(w1, "MBps").med)), fmt(share, "{:.2f}"),
                      R["write1m_over_shm_percpu"].fmt("{:.3g}", False),
                      ("; what is missing: " + "; ".join(why)) if why else ""))
    for size in (64 * KIB, MIB):
        w = sel(sz, datapath="mapped", test="write", kind="bw", size=size)
        u = stat_of(sel(ux, test="ucp_put_bw", size=size), "MBps").med
        eff = Stat([r["MBps"] / get(r, "cpu_cores.engine") for r in w if get(r, "cpu_cores.engine")])
        if w and u and eff and size == MIB:
            out.append("UCX put copies in the client itself, straight into the peer's shared segment, with no "
                       "third party; unirdma hands each message to its engine. Per CPU-second of the engine, "
                       "RDMA WRITE moves %s GB/s at 64 KiB and %s GB/s at 1 MiB, against %s and %s GB/s for UCX "
                       "put in wall-clock time. %s"
                       % (fmt(gbps(Stat([r["MBps"] / get(r, "cpu_cores.engine") for r in
                                         sel(sz, datapath="mapped", test="write", kind="bw", size=64 * KIB)
                                         if get(r, "cpu_cores.engine")]).med)),
                          fmt(gbps(eff.med)),
                          fmt(gbps(stat_of(sel(ux, test="ucp_put_bw", size=64 * KIB), "MBps").med)), fmt(gbps(u)),
                          ("Where unirdma falls short of UCX here, the engine's share of its core is the first "
                           "thing to look at, then the copy itself."
                           if eff.med < u else
                           "unirdma is ahead at 1 MiB, most likely because of pages: its regions sit on 2 MiB pages "
                           "(machine.md, 'pages'), while UCX's shared memory (POSIX shm, CMA) gets 4 KiB pages unless "
                           "shmem_enabled allows more; on this machine a 1 MiB copy on 4 KiB pages ran about 25% "
                           "slower than on 2 MiB pages.")))
    ml = sel(sz, datapath="mapped", test="write", kind="lat", size=2)
    pp = stat_of(sel(fl, test="pingpong"), "lat_us.p50").med
    if ml and pp:
        out.append("Latency: a 2 B RDMA WRITE one-way takes %s us (p50) against %s us for a cache line "
                   "bouncing between the two cores and %s us for UCX put; each round trip here includes two "
                   "hand-overs of the applications' shared core (see the note on small machines)."
                   % (fmt(stat_of(ml, "lat_us.p50").med), fmt(pp),
                      fmt(stat_of(sel(ux, test="ucp_put_lat", size=2), "lat_us.p50").med)))
    qp = [r for r in recs if r.get("section") == "qps"]
    if qp and R["qp_counts"]:
        hi = max(R["qp_counts"])
        a = stat_of(sel(qp, qps=1, size=64), "Mops").med
        b = stat_of(sel(qp, qps=hi, size=64), "Mops").med
        if a and b:
            out.append("%d QPs reach %s M messages/s at 64 B against %s with one: cost does not grow with "
                       "the number of QPs%s." % (hi, fmt(b), fmt(a),
                                                 "; one QP is slower than many, which points at per-QP "
                                                 "serialisation (the same ring indices and doorbell bouncing "
                                                 "between application and engine for every message)"
                                                 if b > 1.2 * a else ""))
    pr = [r for r in recs if r.get("section") == "pairs"]
    if pr:
        n = max(int(r["pairs"]) for r in pr)
        big = [r for r in pr if int(r["pairs"]) == n and r["size"] == 65536]
        one = [r for r in pr if int(r["pairs"]) == 1 and r["size"] == 65536]
        reps = sorted({r["rep"] for r in big})
        agg = Stat([sum(r["MBps"] for r in big if r["rep"] == rep) for rep in reps])
        base = stat_of(one, "MBps")
        if agg and base and agg.med < 0.8 * base.med:
            out.append("%d pairs at once move %s GB/s in total at 64 KiB against %s GB/s for one pair: the engine "
                       "ran at %s of a core and each client at %s, because all %d applications share one core "
                       "here and each client refills its queue only when its turn comes; the engine, which could "
                       "serve them all, waits. This measures the small machine more than the design: with cores for "
                       "the applications the engine would stay busy."
                       % (n, fmt(gbps(agg.med)), fmt(gbps(base.med)), fmt(stat_of(big, "cpu_cores.engine").med, "{:.2f}"),
                          fmt(stat_of(big, "cpu_cores.client").med, "{:.2f}"), 2 * n))
    return out


def machine_cpus(rdir):
    try:
        with open(os.path.join(rdir, "machine.md")) as f:
            for line in f:
                if "online CPUs" in line:
                    return int(line.split("online CPUs")[0].split(",")[-1].strip())
    except (OSError, ValueError):
        pass
    return None


def write_report(rdir, recs, R, figs):
    sz = [r for r in recs if r.get("section") == "sizes"]
    fl = [r for r in recs if r.get("section") == "floor"]
    ux = [r for r in recs if r.get("section") == "ucx"]
    pt = [r for r in recs if r.get("section") == "perftest"]
    qp = [r for r in recs if r.get("section") == "qps"]
    pr = [r for r in recs if r.get("section") == "pairs"]
    sizes = sorted({r["size"] for r in sz if r.get("kind") == "bw"})
    L = []
    A = L.append

    A("# unirdma benchmark report")
    A("")
    A("Generated by `bench/report.py` from `%s` (raw data in `raw/`, logs in `logs/`, the exact commands in "
      "`logs/commands.log`). What is compared and how is described in `bench/README.md`." % os.path.basename(rdir))
    A("")
    A("## Goals")
    A("")
    A("Median over repetitions, [min–max] beside it. Ratios between designs are taken within each repetition "
      "(measured back to back), then summarised. A goal counts as met when the median meets it; where some "
      "repetition did not, the verdict says so.")
    A("")
    A(table(["figure", "goal", "measured", "verdict"],
            [(n, g, st.fmt(f), v) for n, g, st, f, v in goals(R)]))
    A("")
    if R["write1m_over_shm_percpu"]:
        A("Per CPU-second of the copying party (the engine; the floor's copier), which a shared machine "
          "disturbs less: RDMA WRITE 1 MiB / shm copy = %s." % R["write1m_over_shm_percpu"].fmt("{:.3g}"))
        A("")
    ncpu = machine_cpus(rdir)
    if R["load1"]:
        A("The 1-minute load average during the measurements was %s on %s CPUs; while it moved "
          "unirdma's engine, which has a core to itself here, got %s of a core (median [min–max] over "
          "the RDMA WRITE bandwidth points of 64 KiB and more)."
          % (R["load1"].fmt("{:.3g}"), ncpu or "?", R["engine_share"].fmt("{:.2f}")))
        if ncpu and R["load1"].med > ncpu:
            A("")
            A("**The machine was overloaded by other work during this run** (load above the number of "
              "CPUs): pinned parties lost their cores to other processes for long stretches, so absolute "
              "figures are low and scattered, and ratios whose [min–max] ranges are wide say little. The "
              "per-CPU-second figures and the CPU nanoseconds per message (section CPU) are the least "
              "disturbed. Run again on a quiet machine for figures to quote.")
        A("")
    A("Context for the ratios: unirdma message rate at 64 B %s Mops (forwarding %s); WRITE p50 latency at 2 B "
      "%s us (forwarding %s); one empty `ibv_poll_cq` costs %s us mapped and %s us forwarded."
      % (R["rate64_mapped_write"].fmt(), R["rate64_forward_write"].fmt(), R["lat2_mapped_write"].fmt(),
         R["lat2_forward_write"].fmt(), R["nop_mapped"].fmt(), R["nop_forward"].fmt()))
    A("")
    obs = observations(recs, R)
    if obs:
        A("## What the figures say")
        A("")
        for o in obs:
            A("- " + o)
        A("")
    A("## The machine and where everything ran")
    A("")
    A(read(os.path.join(rdir, "machine.md")))
    A("")
    A("```")
    A(read(os.path.join(rdir, "placement.txt")))
    A("```")
    A("")
    A("**What a small machine distorts.** unirdma's software engine plays the NIC and needs a core of its own; "
      "on real hardware the NIC does that work without a host CPU. With 2 CPUs the engine gets CPU 0 and both "
      "applications share CPU 1; in ping-pong tests three parties spin (engine, client, server) on two cores, so "
      "every round trip includes a hand-over of CPU 1 between client and server (both yield while they wait, "
      "as the library's poll does). Latency figures here are therefore upper bounds of what the design costs, "
      "and tails (p99, p99.9) mostly show scheduling. The forwarding baseline adds a fourth party, the "
      "daemon's control threads, which share CPU 0 with the engine and wait for work on a futex, so it pays "
      "for wake-ups that a router with cores of its own would not. Unmodified perftest spins without "
      "yielding, so its latency tests suffer most from the shared core. A shared machine (other sessions' "
      "processes, listed above) adds noise: compare ratios, which were measured back to back, more than "
      "absolute figures.")
    A("")

    def add_fig(key, text):
        if figs.get(key):
            A("![%s](%s)" % (key, figs[key]))
            A("")
        if text:
            A(text)
            A("")

    A("## Bandwidth and message rate against message size")
    A("")
    add_fig("bw", "One QP, 128 work requests outstanding, every 16th signaled, one WR per `ibv_post_send` (as "
                  "perftest). unirdma = resource-mapped data path; forwarding = every verb a request to the daemon "
                  "(FreeFlow's design, bench/README.md). Floors: `urd_floor` on the engine's core.")
    rows = []
    for s in sizes:
        row = [size_name(s)]
        for dp in ("mapped", "forward"):
            for test in ("write", "read", "send"):
                row.append(fmt(gbps(stat_of(sel(sz, datapath=dp, test=test, kind="bw", size=s), "MBps").med)))
        row.append(fmt(gbps(stat_of(sel(fl, test="memcpy", size=s), "MBps").med)))
        row.append(fmt(gbps(stat_of(sel(fl, test="shmcopy", size=s), "MBps").med)))
        row.append(fmt(gbps(stat_of(sel(ux, test="ucp_put_bw", size=s), "MBps").med)))
        row.append(fmt(gbps(stat_of(sel(ux, test="tag_bw", size=s), "MBps").med)))
        rows.append(row)
    A("GB/s, medians:")
    A("")
    A(table(["size", "unirdma WRITE", "READ", "SEND", "fwd WRITE", "fwd READ", "fwd SEND", "memcpy",
             "shm copy", "UCX put", "UCX tag"], rows))
    A("")
    add_fig("rate", None)
    rows = []
    for s in sizes:
        row = [size_name(s)]
        for dp in ("mapped", "forward"):
            for test in ("write", "read", "send"):
                row.append(stat_of(sel(sz, datapath=dp, test=test, kind="bw", size=s), "Mops").fmt("{:.3g}", False))
        row.append(paired_ratio(sel(sz, datapath="mapped", test="write", kind="bw", size=s),
                                sel(sz, datapath="forward", test="write", kind="bw", size=s), "Mops").fmt("{:.3g}x"))
        rows.append(row)
    A("Million messages/s, medians, and the per-repetition ratio unirdma/forwarding for WRITE:")
    A("")
    A(table(["size", "unirdma WRITE", "READ", "SEND", "fwd WRITE", "fwd READ", "fwd SEND", "WRITE ratio"], rows))
    A("")
    add_fig("ratio", "Ratios unirdma/forwarding per message size: throughput (message rate) and p50 latency.")

    A("## Latency against message size")
    A("")
    add_fig("lat", "WRITE: ping-pong on the last byte of the buffer (as `ib_write_lat`); SEND: ping-pong through "
                   "receive completions; both one-way = round trip / 2. READ: one read, post to completion. "
                   "Small messages are inline (up to 220 B, perftest's default).")
    add_fig("tail", None)
    rows = []
    lat_sizes = sorted({r["size"] for r in sz if r.get("kind") == "lat" and r.get("test") != "nop"})
    for s in lat_sizes:
        row = [size_name(s)]
        for test in ("write", "send", "read"):
            for dp in ("mapped", "forward"):
                st = sel(sz, datapath=dp, test=test, kind="lat", size=s)
                row.append("%s / %s" % (stat_of(st, "lat_us.p50").fmt("{:.3g}", False),
                                        stat_of(st, "lat_us.p99").fmt("{:.3g}", False)))
        rows.append(row)
    A("p50 / p99 in microseconds (medians over repetitions):")
    A("")
    A(table(["size", "unirdma WRITE", "fwd WRITE", "unirdma SEND", "fwd SEND", "unirdma READ", "fwd READ"], rows))
    A("")
    pp = sel(fl, test="pingpong")
    A("Floor: cache-line ping-pong between the two cores, one-way %s us (p50 of batch means); UCX put latency "
      "2 B %s us, tag %s us. Cost of one data verb that finds nothing to do (an empty `ibv_poll_cq`): "
      "unirdma %s us, forwarding %s us (p50)."
      % (stat_of(pp, "lat_us.p50").fmt(), stat_of(sel(ux, test="ucp_put_lat", size=2), "lat_us.p50").fmt(),
         stat_of(sel(ux, test="tag_lat", size=2), "lat_us.p50").fmt(), R["nop_mapped"].fmt(), R["nop_forward"].fmt()))
    A("")

    A("## Scaling: QPs per pair and container pairs")
    A("")
    if qp:
        add_fig("qps", None)
        rows = []
        for q in R["qp_counts"]:
            row = [q]
            for s in R["qp_sizes"]:
                st = sel(qp, qps=q, size=s)
                row.append("%s GB/s, %s Mops" % (fmt(gbps(stat_of(st, "MBps").med)), fmt(stat_of(st, "Mops").med)))
                row.append(fmt(stat_of(st, "cpu_cores.engine").med, "{:.2f}"))
            rows.append(row)
        hdr = ["QPs"]
        for s in R["qp_sizes"]:
            hdr += ["WRITE %s" % size_name(s), "engine cores"]
        A(table(hdr, rows))
        A("")
    else:
        A("(QP sweep not run)")
        A("")
    if pr:
        add_fig("pairs", "All pairs start their measured window at the same moment (`--start-at`); servers and "
                         "clients of every pair share the applications' CPU.")
        rows = []
        for n in sorted({int(r["pairs"]) for r in pr}):
            row = [n]
            for s in (64, 65536):
                aggs, lows = [], []
                for rep in sorted({r["rep"] for r in pr}):
                    rr = [r for r in pr if int(r["pairs"]) == n and r["rep"] == rep and r["size"] == s]
                    if len(rr) == n:
                        aggs.append(sum(r["MBps"] for r in rr))
                        lows.append(min(r["MBps"] for r in rr))
                row.append("%s GB/s (%s Mops)" % (fmt(gbps(statistics.median(aggs)) if aggs else None),
                                                  fmt(statistics.median(aggs) / s if aggs else None)))
                row.append(fmt(gbps(statistics.median(lows)) if lows else None))
            rows.append(row)
        A(table(["pairs", "aggregate WRITE 64 B", "slowest pair", "aggregate WRITE 64 KiB", "slowest pair"], rows))
        A("")
    else:
        A("(pairs sweep not run)")
        A("")

    A("## CPU")
    A("")
    add_fig("cpu", None)
    rows = []
    for s in sizes:
        row = [size_name(s)]
        for dp in ("mapped", "forward"):
            st = sel(sz, datapath=dp, test="write", kind="bw", size=s)
            mops = stat_of(st, "Mops").med
            for who in ("engine", "client", "server", "ctrl_client", "unirdmad"):
                row.append(fmt(stat_of(st, "cpu_cores." + who).med, "{:.2f}"))
            eng = stat_of(st, "cpu_cores.engine").med
            cli = stat_of(st, "cpu_cores.client").med
            row.append("%s / %s" % (fmt(eng * 1e3 / mops if eng and mops else None, "{:.0f}"),
                                    fmt(cli * 1e3 / mops if cli and mops else None, "{:.0f}")))
        rows.append(row)
    A("RDMA WRITE bandwidth runs, cores used (median); the last column of each design is CPU nanoseconds per "
      "message of the engine / the client (cores ÷ message rate), which says where each message's time goes:")
    A("")
    A(table(["size", "engine", "client", "server", "ctrl (client's vRNIC)", "unirdmad total", "ns/msg eng/client",
             "fwd: engine", "client", "server", "ctrl (client's vRNIC)", "unirdmad total", "ns/msg eng/client"], rows))
    A("")
    A("Idle: the engine used %s of a core with no tenant (%s of unirdmad in total, all threads), and %s with a "
      "connected pair holding 256 idle QPs. CPU time of the engine and control threads comes from "
      "`/proc/<pid>/task/<tid>/schedstat` (nanoseconds; `stat` ticks as a cross-check), of unirdmad from "
      "`/proc/<pid>/stat`, of the applications from `CLOCK_PROCESS_CPUTIME_ID`."
      % (Stat([v * 100 for v in R["idle_engine"].vals]).fmt("{:.3g}%"),
         Stat([v * 100 for v in R["idle_daemon"].vals]).fmt("{:.3g}%"),
         Stat([v * 100 for v in R["idle_engine_connected"].vals]).fmt("{:.3g}%")))
    A("")

    A("## Unmodified perftest")
    A("")
    if pt:
        rows = []
        for r in sorted(pt, key=lambda r: (r["test"], r["size"], r.get("datapath", ""))):
            if r["kind"] == "bw":
                rows.append((r["test"], DPNAME.get(r.get("datapath")), size_name(r["size"]), r["ops"],
                             "%.3g GB/s, %.3g Mops" % (r["MBps"] / 1e3, r["Mops"]), ""))
            else:
                lat = r.get("lat_us", {})
                rows.append((r["test"], DPNAME.get(r.get("datapath")), size_name(r["size"]), r["ops"],
                             "typical %s us" % lat.get("p50"),
                             "min %s, avg %s, p99 %s, p99.9 %s, max %s" % (lat.get("min"), lat.get("avg"),
                                                                          lat.get("p99"), lat.get("p999"),
                                                                          lat.get("max"))))
        A("One run each (perftest repeats internally); perftest's MB are 2^20 bytes, converted here; "
          "`t_typical` is perftest's median. `ib_write_lat` waits for its peer's write by reading memory "
          "in a loop that never yields; with client and server sharing the applications' core, each side "
          "holds the core until the scheduler preempts it, so its typical latency here measures the "
          "scheduler (milliseconds), not the data path. `ib_send_lat` and `ib_read_lat` wait in "
          "`ibv_poll_cq`, which yields when it finds nothing, and show the data path; so does the suite's "
          "own WRITE ping-pong, which yields too.")
        A("")
        A(table(["program", "data path", "size", "iterations", "result", "latency detail (us)"], rows))
        A("")
        for test, key in (("ib_write_bw", "Mops"),):
            m = [r for r in pt if r["test"] == test and r.get("datapath") == "mapped" and r["size"] == 64]
            f = [r for r in pt if r["test"] == test and r.get("datapath") == "forward" and r["size"] == 64]
            if m and f and f[0][key]:
                A("perftest agrees with the suite's own program: `ib_write_bw` 64 B message rate unirdma/forwarding "
                  "= %.3gx." % (m[0][key] / f[0][key]))
        for test in ("ib_write_lat", "ib_send_lat", "ib_read_lat"):
            m = [r for r in pt if r["test"] == test and r.get("datapath") == "mapped"]
            f = [r for r in pt if r["test"] == test and r.get("datapath") == "forward"]
            if m and f and get(f[0], "lat_us.p50"):
                A("`%s` 2 B typical latency unirdma/forwarding = %.3gx." % (
                    test, float(get(m[0], "lat_us.p50")) / float(get(f[0], "lat_us.p50"))))
        A("")
    else:
        A("(perftest not run)")
        A("")

    A("## Method")
    A("")
    A("- Every point: a warm-up, then a timed window; bandwidth counts the completions inside the window; "
      "latency records every iteration in the window and takes percentiles. Repetitions run the whole sweep "
      "again; inside a repetition unirdma and forwarding run back to back, so that drift of a shared machine "
      "hits both.")
    A("- unirdma and forwarding use the same engine, daemon, library, containers and programs; only "
      "`UNIRDMA_DATAPATH=forward` differs.")
    A("- GB/s = 10^9 bytes/s everywhere; perftest's and UCX's MiB/s were converted.")
    A("- UCX: `ucx_perftest` on the host (`UCX_TLS=sm,self`), server on the engine's core, client on the "
      "applications' core; `ucp_put_bw`/`tag_bw` bandwidth, `ucp_put_lat`/`tag_lat` one-way latency.")
    A("- The two-process copy floor writes every message to the same shared destination buffer, as the "
      "verbs benchmarks do, so both have the same cache footprint.")
    A("")
    with open(os.path.join(rdir, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def summary(rdir, R):
    lines = []
    lines.append("unirdma benchmark summary (%s)" % os.path.basename(os.path.abspath(rdir)))
    lines.append("%-58s %-8s %-22s %s" % ("figure", "goal", "median [min-max]", "verdict"))
    for n, g, st, f, v in goals(R):
        lines.append("%-58s %-8s %-22s %s" % (n[:58], g, st.fmt(f), v))
    lines.append("")
    lines.append("%-34s %14s %14s" % ("", "unirdma", "forwarding"))
    lines.append("%-34s %14s %14s" % ("WRITE 64 B message rate (Mops)", R["rate64_mapped_write"].fmt("{:.3g}", False),
                                      R["rate64_forward_write"].fmt("{:.3g}", False)))
    for test in ("write", "send", "read"):
        lines.append("%-34s %14s %14s" % ("%s 2 B latency p50 (us)" % test.upper(),
                                          R["lat2_mapped_%s" % test].fmt("{:.3g}", False),
                                          R["lat2_forward_%s" % test].fmt("{:.3g}", False)))
    lines.append("%-34s %14s %14s" % ("empty poll_cq (us)", R["nop_mapped"].fmt("{:.3g}", False),
                                      R["nop_forward"].fmt("{:.3g}", False)))
    lines.append("%-34s %14s   shm copy %s, UCX put %s" % ("WRITE 1 MiB (GB/s)", fmt(gbps(R["write1m"].med)),
                                                          fmt(gbps(R["shm1m"].med)), fmt(gbps(R["ucxput_%d" % MIB].med))))
    ncpu = machine_cpus(rdir)
    if R["load1"] and ncpu and R["load1"].med > ncpu:
        lines.append("WARNING: the machine was overloaded (load %.3g on %d CPUs; the engine got %s of its "
                     "core): figures are noisy, see report.md" % (R["load1"].med, ncpu, R["engine_share"].fmt("{:.2f}", False)))
    text = "\n".join(lines)
    with open(os.path.join(rdir, "summary.txt"), "w") as f:
        f.write(text + "\n")
    return text


KEYS = [
    ("WRITE 64 B message rate, unirdma (Mops)", "rate64_mapped_write"),
    ("WRITE 64 B message rate, forwarding (Mops)", "rate64_forward_write"),
    ("WRITE 2 B latency p50, unirdma (us)", "lat2_mapped_write"),
    ("SEND 2 B latency p50, unirdma (us)", "lat2_mapped_send"),
    ("READ 2 B latency p50, unirdma (us)", "lat2_mapped_read"),
    ("WRITE 2 B latency p50, forwarding (us)", "lat2_forward_write"),
    ("empty poll_cq, unirdma (us)", "nop_mapped"),
    ("empty poll_cq, forwarding (us)", "nop_forward"),
    ("unirdma / forwarding, WRITE 64 B message rate", "rate64_ratio_write"),
    ("READ 64 B message rate, unirdma (Mops)", "rate64_mapped_read"),
    ("SEND 64 B message rate, unirdma (Mops)", "rate64_mapped_send"),
    ("WRITE 4 KiB bandwidth (MB/s)", "write_4096"),
    ("WRITE 64 KiB bandwidth (MB/s)", "write_65536"),
    ("WRITE 1 MiB bandwidth (MB/s)", "write1m"),
    ("WRITE 1 MiB per engine CPU-second (MB/s)", "write1m_percpu"),
    ("WRITE 1 MiB / shm copy", "write1m_over_shm"),
    ("WRITE / UCX put, 64 KiB", "write_over_ucx_65536"),
    ("WRITE / UCX put, 1 MiB", "write_over_ucx_1048576"),
    ("idle engine (cores)", "idle_engine"),
]


def load_pooled(dirs):
    """The records of several results directories as one set of repetitions
    (repetition r of the k-th directory becomes 1000 * k + r, so paired
    ratios still pair points of the same run)."""
    recs = []
    for k, d in enumerate(dirs.split(",")):
        for r in load(d):
            if isinstance(r.get("rep"), int):
                r["rep"] += 1000 * k
            recs.append(r)
    return recs


def compare(before, after):
    Rb, Ra = compute(load_pooled(before)), compute(load_pooled(after))

    def label(dirs):
        return ",".join(os.path.basename(d.rstrip("/")) for d in dirs.split(","))[:22]

    print("%-46s %22s %22s %8s" % ("figure (median [min-max] over repetitions)", label(before),
                                   label(after), "after/before"))
    for name, k in KEYS:
        b, a = Rb.get(k), Ra.get(k)
        bm = b.med if b else None
        am = a.med if a else None
        ratio = "%.3g" % (am / bm) if am is not None and bm else "–"
        bs = "%s [%s-%s]" % (fmt(bm), fmt(b.lo), fmt(b.hi)) if b else "–"
        as_ = "%s [%s-%s]" % (fmt(am), fmt(a.lo), fmt(a.hi)) if a else "–"
        print("%-46s %22s %22s %8s" % (name, bs, as_, ratio))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    rdir = sys.argv[1]
    recs = load(rdir)
    if not recs:
        sys.stderr.write("report: no results in %s/raw\n" % rdir)
        return 1
    R = compute(recs)
    P = Plotter(rdir)
    if not P.ok:
        sys.stderr.write("report: gnuplot is not installed (apt-get install gnuplot-nox): no plots\n")
    figs = make_plots(P, recs, R)
    write_report(rdir, recs, R, figs)
    print(summary(rdir, R))
    return 0


if __name__ == "__main__":
    sys.exit(main())
