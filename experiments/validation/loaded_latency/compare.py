"""Simulate the measured idle and loaded latency rows on a system preset and compare (``measure.py``'s experiment run
by ``t3sim.validation.loaded_latency.simulate_chase``).

* idle: the chase alone over the largest measured footprint;
* loaded: the chase beside a streaming kernel on each measured SM count (``ctas_per_sm`` 1), every SM keeping the
  bytes in flight that the measured one-SM row implies by Little's law (its bandwidth x its latency, rounded down to
  whole 1 KiB lanes): the SM's bound on misses in flight, measured, not fitted to any latency row;
* rows whose stream bandwidth exceeds the preset's HBM peak, or whose chase did not run beside the stream (the
  ``chase_overlapped`` column, where the CSV has it), are listed and left out (they do not measure HBM latency);
* the measured peak bandwidth is the most any row moved within the HBM's peak, the two- and four-CTA rows included
  (their chase ran after the stream, but their bandwidth is the stream's): where no chase row reaches 90 % of it, the
  comparison there is None.

Prints and writes (``--out``) the simulated curve beside the measured one, and the three numbers of
``t3sim.analysis.latency_curve.compare``: idle latency, latency at 50 % and 90 % of the measured peak bandwidth. The
idle rows up to ``CYCLE_MAX_B`` (inside and around the L2) are simulated as measured, a warm random cycle
(``simulate_chase``'s ``cycle``), and written beside the measured ones (``compare_idle_SYSTEM.csv``).

Run: ``python3 compare.py --dir h100 --system h800-8gpu -j 2``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))


def _system(name: str, sets=()):
    from t3sim.config import load_system
    return load_system(HERE.parents[2] / "configs" / "systems" / f"{name}.yaml", sets)


def _one(args):
    name, sets, k, inflight_B, footprint_B, hops = args
    from t3sim.validation.loaded_latency import simulate_chase
    r = simulate_chase(_system(name, sets), k, inflight_B, hops=hops, footprint_B=footprint_B)
    return k, r.ns_per_hop, r.stream_GBps, r.wall_s


def _idle(args):
    name, sets, footprint_B, hops = args
    from t3sim.validation.loaded_latency import simulate_chase
    return footprint_B, simulate_chase(_system(name, sets), hops=hops, footprint_B=footprint_B, cycle=True).ns_per_hop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="a measured data folder (idle_latency.csv, loaded_latency.csv)")
    ap.add_argument("--system", required=True, help="a preset under configs/systems/ (without .yaml)")
    ap.add_argument("--set", action="append", default=[], help="a system override, as t3sim's --set")
    ap.add_argument("--hops", type=int, default=300)
    ap.add_argument("--out", help="CSV of the simulated curve (default: DIR/compare_SYSTEM.csv)")
    ap.add_argument("-j", type=int, default=1)
    args = ap.parse_args()
    from t3sim.analysis.latency_curve import compare
    d = Path(args.dir)
    idle = list(csv.DictReader(open(d / "idle_latency.csv")))
    big = max(idle, key=lambda r: int(r["footprint_B"]))
    every = list(csv.DictReader(open(d / "loaded_latency.csv")))
    rows = [r for r in every if r["ctas_per_sm"] == "1"]
    s = _system(args.system, args.set)
    peak = s.hbm.peak_bandwidth_GBps
    # the measured peak: the most any streaming row moved that the HBM can (two and four CTAs per SM included, whose
    # chase ran after the stream)
    meas_peak = max(float(r["stream_GBps"]) for r in every if float(r["stream_GBps"]) <= peak)
    keep, dropped = [], []
    for r in rows:
        why = ("above the HBM peak" if float(r["stream_GBps"]) > peak else
               "chase not beside the stream" if r.get("chase_overlapped") == "0" else "")
        (dropped if why else keep).append((r, why))
    one = min(keep, key=lambda rw: int(rw[0]["stream_sms"]))[0]
    inflight = int(float(one["stream_GBps"]) * float(one["ns_per_hop"]) // 1024 * 1024) // int(one["stream_sms"])
    tasks = [(args.system, args.set, 0, 0, int(big["footprint_B"]), args.hops)]
    tasks += [(args.system, args.set, int(r["stream_sms"]), inflight, int(big["footprint_B"]), args.hops)
              for r, _ in keep]
    with ProcessPoolExecutor(args.j) as ex:
        res = {k: (ns, g, w) for k, ns, g, w in ex.map(_one, sorted(tasks, key=lambda t: -t[2]))}
    out = Path(args.out) if args.out else d / f"compare_{args.system}.csv"
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["stream_sms", "meas_GBps", "meas_ns", "sim_GBps", "sim_ns", "sim_inflight_per_sm_B"])
        w.writerow([0, 0, big["ns_per_hop"], 0, round(res[0][0], 2), 0])
        for r, _ in keep:
            k = int(r["stream_sms"])
            w.writerow([k, r["stream_GBps"], r["ns_per_hop"], round(res[k][1], 1), round(res[k][0], 2), inflight])
    for r, why in dropped:
        print(f"left out: {r['stream_sms']} SMs ({r['stream_GBps']} GB/s, {r['ns_per_hop']} ns): {why}")
    cmp = compare(float(big["ns_per_hop"]), res[0][0],
                  [(float(r["stream_GBps"]), float(r["ns_per_hop"])) for r, _ in keep],
                  [(res[int(r["stream_sms"])][1], res[int(r["stream_sms"])][0]) for r, _ in keep], peak_GBps=meas_peak)
    # the idle rows inside and around the L2: the measured cycle, warm (simulate_chase's ``cycle``)
    from t3sim.validation.loaded_latency import CYCLE_MAX_B
    small = [r for r in idle if int(r["footprint_B"]) <= CYCLE_MAX_B]
    with ProcessPoolExecutor(args.j) as ex:
        sim_idle = dict(ex.map(_idle, [(args.system, args.set, int(r["footprint_B"]), max(args.hops, 1000))
                                       for r in small]))
    out_idle = out.with_name(out.stem.replace("compare_", "compare_idle_") + ".csv")
    with open(out_idle, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["footprint_B", "meas_ns", "sim_ns", "error"])
        for r in small:
            fp, meas = int(r["footprint_B"]), float(r["ns_per_hop"])
            w.writerow([fp, meas, round(sim_idle[fp], 2), round(sim_idle[fp] / meas - 1, 4)])
            print(f"idle {fp >> 20} MiB: measured {meas:.1f} ns, simulated {sim_idle[fp]:.1f} ns "
                  f"({sim_idle[fp] / meas - 1:+.1%})")
    print(f"in flight per SM: {inflight} B (the {one['stream_sms']}-SM row: {one['stream_GBps']} GB/s x "
          f"{one['ns_per_hop']} ns); HBM peak of {args.system}: {peak:.0f} GB/s; wrote {out}")
    print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in cmp.items()}, indent=1))


if __name__ == "__main__":
    main()
