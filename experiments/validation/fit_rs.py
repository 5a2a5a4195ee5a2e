"""Fit the software part of the H200 reduce-scatter's start-up (experiments/validation/README.md, "Fit procedure").

Simulates every row of reduce_scatter_4gpu.csv with collective.latency.software_ns = 0 (every other field
as configured, from its source: NCCL's 8.4 us Ring/Simple base latency stays in the start-up), then finds the
software part L minimising sum_i ln((sim_i + L) / meas_i)^2 (least squares on log errors, the quantity the error
metrics are built from). The start-up is additive in the simulator (every GPU waits it once before its first op;
only DRAM refreshes meet the run at other points, a few tenths of a us), so one simulation per row suffices. ``--lat`` repeats this for other interconnect.link_latency_ns values
(a sensitivity study: the configured latency comes from NCCL's tuning constants, not from this fit).

``--set FIELD=VALUE`` (repeatable) refits with other fields changed: a sensitivity study of what a fit would
need, e.g. ``--set interconnect.sm_store_payload_B=64`` (experiments/validation/README.md, "Remaining gap").

Usage: python experiments/validation/fit_rs.py [--system CONFIG] [--lat 300,1000] [--set F=V ...] [--jobs N] [--out fit.json]
"""
import argparse
import csv
import itertools
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def golden_min(f, lo, hi, tol=1e-4):
    """Minimum of a unimodal ``f`` on ``[lo, hi]`` by golden-section search (f is convex in L here)."""
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    while b - a > tol:
        if f(c) < f(d):
            b, d = d, c
            c = b - g * (b - a)
        else:
            a, c = c, d
            d = a + g * (b - a)
    return (a + b) / 2


def _sim(args):
    system_path, lat, mb, sets = args
    from t3sim.config import load_system
    from t3sim.validation.rows import simulate_collective_row
    over = ["collective.latency.software_ns=0"] + list(sets) + ([f"interconnect.link_latency_ns={lat}"] if lat is not None else [])
    s = load_system(system_path, over)
    o = simulate_collective_row(s, "reduce_scatter", 4, mb, "bf16")
    return lat, mb, o.sim_us, o.wall_s


def line(xs, ys):
    """Least-squares slope and intercept of ys over xs."""
    k, c = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)
    return float(k), float(c)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", default=str(HERE.parents[1] / "configs/systems/h200-4gpu.yaml"))
    ap.add_argument("--csv", default=str(HERE / "reduce_scatter_4gpu.csv"))
    ap.add_argument("--lat", default="", help="comma-separated link latencies (ns) to try; default: the configured one")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a system field for the fit (sensitivity study); repeatable")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="-")
    a = ap.parse_args(argv)
    rows = list(csv.DictReader(open(a.csv)))
    meas = {float(r["size_mb"]): float(r["median_us"]) for r in rows}
    lats = [float(x) for x in a.lat.split(",")] if a.lat else [None]
    tasks = sorted(((a.system, lat, mb, tuple(a.set)) for lat, mb in itertools.product(lats, meas)), key=lambda t: -t[2])
    with ProcessPoolExecutor(a.jobs) as pool:
        res = list(pool.map(_sim, tasks))
    sizes = sorted(meas)
    out = {"set": a.set, "rows": [dict(lat_ns=l, size_mib=m, sim0_us=s, wall_s=w) for l, m, s, w in res], "fits": [],
           "measured_line_us_per_MiB_and_us": line(sizes, [meas[m] for m in sizes])}
    for lat in lats:
        sims = {m: s for l, m, s, _ in res if l == lat}
        f = lambda L: sum(math.log((sims[m] + L) / meas[m]) ** 2 for m in sizes)  # noqa: E731
        L = golden_min(f, 0.0, 200.0)
        logs = [math.log((sims[m] + L) / meas[m]) for m in sizes]
        errs = [math.exp(e) - 1 for e in logs]
        out["fits"].append(dict(
            lat_ns=lat, software_us=L, sse_log=float(f(L)),
            geomean_error=math.exp(float(np.mean([math.log(max(abs(e), 1e-4)) for e in errs]))),
            log_ratio_error=math.exp(float(np.mean(np.abs(logs)))) - 1,
            bias=math.exp(float(np.mean(logs))) - 1, max_error=max(abs(e) for e in errs),
            simulated_line_us_per_MiB_and_us=line(sizes, [sims[m] + L for m in sizes]),
            per_row={str(m): e for m, e in zip(sizes, errs)}))
    text = json.dumps(out, indent=1)
    (sys.stdout.write(text + "\n") if a.out == "-" else Path(a.out).write_text(text + "\n"))


if __name__ == "__main__":
    main()
