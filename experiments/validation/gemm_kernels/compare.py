"""Simulate every measured GEMM of a ``gemm_kernels.csv`` on a system preset and compare with the measured times.

Each ``nn`` row (row-major ``torch.matmul``) of the ``grid``, ``ksweep`` and ``align`` sets runs as one GEMM on one
GPU (``t3sim.validation.rows.simulate_gemm_row``: the kernel the preset's library picks for the shape, launch
included) and is set beside the measured ``gpu_us`` (CUDA events with the GPU held busy while the host enqueues,
so the launch gap and the kernels, not the host: ``measure.py``). Writes ``--out`` (one row per shape: the measured
and simulated kernel, both times and the error) and prints the geometric mean of the absolute errors (``t3sim validate``'s
metric, :func:`t3sim.analysis.validation.geomean_error`), over all rows and over the rows with M <= 512.

Run: ``python3 compare.py --csv h100/gemm_kernels.csv --system h800-8gpu --max-flop 700 -j 16 --out h100/compare_h800.csv``.
"""

from __future__ import annotations

import argparse
import csv
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))


def _system(name: str):
    from t3sim.config import load_system
    return load_system(HERE.parents[2] / "configs" / "systems" / f"{name}.yaml")


def _one(args):
    system_name, row = args
    from t3sim.system.kernels import gemm_kernel_record
    from t3sim.validation.rows import simulate_gemm_row
    s = _system(system_name)
    M, N, K = int(row["M"]), int(row["N"]), int(row["K"])
    k = gemm_kernel_record(s, M, N, K, "bf16")
    out = simulate_gemm_row(s, M, N, K, "bf16")
    meas = float(row["gpu_us"])
    return {"set": row["set"], "M": M, "N": N, "K": K, "measured_kernel": row["kernel"],
            "simulated_kernel": k.kernel, "split_k": k.split_k, "gpu_us": meas, "sim_us": round(out.sim_us, 3),
            "error": round(out.sim_us / meas - 1, 4), "wall_s": round(out.wall_s, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", required=True)
    ap.add_argument("--system", required=True, help="a preset under configs/systems/ (without .yaml)")
    ap.add_argument("--out", required=True)
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--max-flop", type=float, default=float("inf"), help="skip rows above this many GFLOP")
    args = ap.parse_args()
    rows = [r for r in csv.DictReader(open(args.csv)) if r["layout"] == "nn" and r["set"] in ("grid", "ksweep", "align")
            and 2 * int(r["M"]) * int(r["N"]) * int(r["K"]) / 1e9 <= args.max_flop]
    rows.sort(key=lambda r: -int(r["M"]) * int(r["N"]) * int(r["K"]))  # long ones first
    with ProcessPoolExecutor(args.j) as ex:
        res = list(ex.map(_one, [(args.system, r) for r in rows]))
    res.sort(key=lambda r: (r["set"], r["N"], r["K"], r["M"]))
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, list(res[0]))
        w.writeheader()
        w.writerows(res)
    from t3sim.analysis.validation import geomean_error  # t3sim validate's metric: geomean of |sim/meas - 1|

    def err(rs):
        return geomean_error([r["sim_us"] for r in rs], [r["gpu_us"] for r in rs])

    small = [r for r in res if r["M"] <= 512]
    print(f"{len(res)} rows: geomean |error| {err(res):.1%}; M <= 512: {err(small):.1%} (worst "
          f"{max((r['error'] for r in small), key=abs):+.1%}); rows within 15 %: "
          f"{sum(abs(r['error']) <= 0.15 for r in small)}/{len(small)} of M <= 512")


if __name__ == "__main__":
    main()
