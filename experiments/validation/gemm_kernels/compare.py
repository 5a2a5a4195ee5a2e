"""Simulate every measured GEMM of a ``gemm_kernels.csv`` (and the row-shard sequences of its ``decomp.csv``) on a
system preset and compare with the measured times.

Each ``nn`` row (row-major ``torch.matmul``) of the ``grid``, ``ksweep`` and ``align`` sets runs as one GEMM on one
GPU, and each ``whole``/``rows8``/``rows64`` row of ``decomp.csv`` beside it as its row shards back to back on one
stream (``t3sim.validation.rows.simulate_gemm_sequence``: the kernel the preset's library picks for each shard's
shape, each kernel's launch gap included, timed after a warm-up pass as the measurements are).

What it is set beside: the measured ``gpu_us`` (CUDA events with the GPU held busy while the host enqueues, so the
GPU's time for the call: ``measure.py``) less the two CUDA events' own time, which no simulation has. That time is
``launch.csv``'s events-alone row where the data has one; otherwise it is derived from the data's one-kernel rows as
the median of ``gpu_us - kernel_us`` (the events plus one launch gap) less the preset's
``gpu.kernel_launch_overhead_ns``.

Writes ``--out`` (one row per shape: the measured and simulated kernel, both times and the error) and prints the
geometric mean of the absolute errors (``t3sim validate``'s metric, :func:`t3sim.analysis.validation.geomean_error`),
over all rows, over the rows with M <= 512, and over the sequences.

Run: ``python3 compare.py --csv h100/gemm_kernels.csv --system h800-8gpu --max-flop 700 -j 16 --out h100/compare_h800.csv``.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))


def _system(name: str):
    from t3sim.config import load_system
    return load_system(HERE.parents[2] / "configs" / "systems" / f"{name}.yaml")


def events_us(csv_path: Path, rows: list, launch_ns: float) -> tuple[float, str]:
    """The two CUDA events' own time (us) in this data, and how it was found (module doc)."""
    launch = csv_path.parent / "launch.csv"
    if launch.exists():
        for r in csv.DictReader(open(launch)):
            if r.get("kind", "events") == "events" and int(r["kernels"]) == 0:
                return float(r["gpu_us"]), f"{launch.name}: the events alone"
    one = [float(r["gpu_us"]) - float(r["kernel_us"]) for r in rows if r.get("n_kernels") == "1" and r["gpu_us"]]
    return (statistics.median(one) - launch_ns / 1e3,
            f"median gpu_us - kernel_us of {len(one)} one-kernel rows less the preset's launch gap")


def _one(args):
    system_name, row, ev_us = args
    from t3sim.system.kernels import gemm_kernel_record
    from t3sim.validation.rows import simulate_gemm_sequence
    s = _system(system_name)
    M, N, K = int(row["M"]), int(row["N"]), int(row["K"])
    pieces = int(row.get("pieces") or 1)
    k = gemm_kernel_record(s, M // pieces, N, K, "bf16")
    out = simulate_gemm_sequence(s, M, N, K, "bf16", pieces)
    meas = float(row["gpu_us"]) - ev_us
    return {"set": row.get("set") or row["form"], "M": M, "N": N, "K": K, "pieces": pieces,
            "measured_kernel": row.get("kernel") or row["kernels"], "simulated_kernel": k.kernel,
            "split_k": k.split_k, "gpu_us": float(row["gpu_us"]), "measured_us": round(meas, 3),
            "sim_us": round(out.sim_us, 3), "error": round(out.sim_us / meas - 1, 4), "wall_s": round(out.wall_s, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", required=True)
    ap.add_argument("--system", required=True, help="a preset under configs/systems/ (without .yaml)")
    ap.add_argument("--out", required=True)
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--max-flop", type=float, default=float("inf"), help="skip rows above this many GFLOP")
    ap.add_argument("--max-m", type=int, default=1 << 30, help="skip rows with more rows (M) than this")
    ap.add_argument("--no-decomp", action="store_true", help="leave out decomp.csv's sequences")
    args = ap.parse_args()
    path = Path(args.csv)
    measured = list(csv.DictReader(open(path)))
    ev_us, how = events_us(path, measured, _system(args.system).gpu.kernel_launch_overhead_ns)

    def keep(r):
        return 2 * int(r["M"]) * int(r["N"]) * int(r["K"]) / 1e9 <= args.max_flop and int(r["M"]) <= args.max_m

    rows = [r for r in measured if r["layout"] == "nn" and r["set"] in ("grid", "ksweep", "align") and keep(r)]
    decomp = path.parent / "decomp.csv"
    if not args.no_decomp and decomp.exists():
        rows += [r for r in csv.DictReader(open(decomp))
                 if r.get("gpu_us") and r["form"] in ("whole", "rows8", "rows64") and keep(r)]
    rows.sort(key=lambda r: -int(r["M"]) * int(r["N"]) * int(r["K"]))  # long ones first
    with ProcessPoolExecutor(args.j) as ex:
        res = list(ex.map(_one, [(args.system, r, ev_us) for r in rows]))
    res.sort(key=lambda r: (r["set"], r["N"], r["K"], r["M"]))
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, list(res[0]))
        w.writeheader()
        w.writerows(res)
    from t3sim.analysis.validation import geomean_error  # t3sim validate's metric: geomean of |sim/meas - 1|

    def err(rs):
        return geomean_error([r["sim_us"] for r in rs], [r["measured_us"] for r in rs]) if rs else float("nan")

    single = [r for r in res if r["set"] in ("grid", "ksweep", "align")]
    seq = [r for r in res if r not in single]
    small = [r for r in single if r["M"] <= 512]
    print(f"events' own time {ev_us:.3f} us ({how})")
    print(f"{len(single)} GEMMs: geomean |error| {err(single):.1%}; M <= 512: {err(small):.1%}"
          + (f" (worst {max((r['error'] for r in small), key=abs):+.1%}); rows within 15 %: "
             f"{sum(abs(r['error']) <= 0.15 for r in small)}/{len(small)} of M <= 512" if small else ""))
    if seq:
        print(f"{len(seq)} sequences (decomp.csv): geomean |error| {err(seq):.1%}; "
              + ", ".join(f"{r['set']} {r['M']}x{r['N']}x{r['K']} {r['error']:+.1%}" for r in seq))


if __name__ == "__main__":
    main()
