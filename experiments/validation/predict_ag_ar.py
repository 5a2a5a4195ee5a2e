"""Predict all-gather and all-reduce times on the H200 preset with no new fit (experiments/validation/README.md).

The same system config that reproduces reduce_scatter_4gpu.csv (NCCL ring Simple protocol, 24 channels,
start-up's software part fitted on the RS rows only) simulates all-gather and all-reduce over 2 and 4 GPUs at
6..192 MiB. ``size_mb`` is the collective's array on each GPU in MiB, as in the RS file: all-gather: the
gathered output (``torch.distributed.all_gather_into_tensor``'s output; each GPU contributes size_mb/N);
all-reduce: the tensor. Writes ``predicted_ag_ar.csv``: the measured CSV's columns with the simulated time
in ``simulated_us`` instead of ``median_us``, plus the algorithm/protocol NCCL 2.28's own tuning model
picks for the row (``nccl_choice``; only Ring/Simple is simulated).

Usage: python experiments/validation/predict_ag_ar.py [--jobs N] [--out CSV]
"""
import argparse
import csv
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEM = HERE.parents[1] / "configs/systems/h200-4gpu.yaml"
SIZES_MIB = (6, 12, 24, 48, 96, 192)

# NCCL 2.28.9 src/graph/tuning.cc on this system (nNodes 1, Hopper, NVLink, 12 search channels of 30 GB/s):
# time = latency + bytes / (1000 x algorithm bandwidth); ring latency = base + steps x hwLatency
# (t3sim/config/collective_latency.py: model_latency_us).
_BUS_GBPS = {"Simple": 12 * 30.0, "LL128": min(12 * 30.0 * 0.92, 12 * 36.7), "LL": min(141.0, 12 * 30.0 * 0.5)}


def nccl_choice(collective: str, n: int, size_mib: float) -> str:
    """Protocol NCCL's default tuning model picks for a ring (Tree/NVLS/PAT are not faster here; NVLS is off)."""
    from t3sim.config.collective_latency import model_latency_us

    steps = 2 * (n - 1) if collective == "all_reduce" else n - 1
    nbytes = size_mib * (1 << 20)
    best = min(_BUS_GBPS, key=lambda p: model_latency_us("nccl", collective, "ring", p.lower(), "nvlink", n)
               + nbytes / (1e3 * _BUS_GBPS[p] * n / steps))
    return f"Ring/{best}"


def _one(args):
    coll, gpus, mb = args
    from t3sim.config import load_system
    from t3sim.validation.rows import simulate_collective_row
    o = simulate_collective_row(load_system(SYSTEM), coll, gpus, mb, "bf16")
    return coll, gpus, mb, o.sim_us, o.wall_s


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "predicted_ag_ar.csv"))
    a = ap.parse_args(argv)
    tasks = [(c, g, mb) for c in ("all_gather", "all_reduce") for g in (2, 4) for mb in SIZES_MIB]
    order = sorted(tasks, key=lambda t: -(t[2] * (2 if t[0] == "all_reduce" else 1)))
    with ProcessPoolExecutor(a.jobs) as pool:
        res = {(c, g, mb): (s, w) for c, g, mb, s, w in pool.map(_one, order)}
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["collective", "gpus", "size_mb", "dtype", "simulated_us", "nccl_choice", "wall_s"])
        for c, g, mb in tasks:
            s, wall = res[(c, g, mb)]
            w.writerow([c, g, mb, "bf16", f"{s:.1f}", nccl_choice(c, g, mb), f"{wall:.0f}"])


if __name__ == "__main__":
    main()
