"""The fused GEMV+AllReduce study (``configs/experiments/fused-gemv.yaml``): per GEMV, the baseline's and
the fused kernel's times and the reduction, beside the numbers the fused-collective paper states (pure: reads
results only).

Reduction = ``1 - fused total / baseline total`` (the paper's "lower execution time"); the averages are plain means
over the GEMVs of a group (``model``: the T3 Table 2 decode GEMVs and the paper's M = 64k; ``msweep``: the
sensitivity sweep of M at K = 4096).
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path
from typing import Dict, List

from t3sim.analysis.runs import load_runs

#: what the paper states about GEMV+AllReduce (the fused computation-collective paper: abstract and Sec. IV-B; its conclusion swaps the
#: GEMV and GEMM figures) and about occupancy (Secs. III-C, IV-C, of its embedding kernel)
STATED = {
    "mean_reduction": (0.13, "Sec. IV-B: 'on average 13% ... lower execution time'"),
    "max_reduction": (0.22, "Sec. IV-B: '(and up to 22%)'"),
    "occupancy_reduction": (0.125, "Secs. III-C, IV-C: '12.5% lower occupancy' (the fused embedding kernel)"),
}
TREND = "Sec. IV-B: 'The latency reduction is lower for the larger inputs (M = 64k)' (link contention)"

FIELDS = ("gemv", "group", "M", "K", "mode", "base_gemv_us", "base_allreduce_us", "base_total_us", "fused_gemv_us",
          "fused_allreduce_tail_us", "fused_total_us", "reduction", "fused_grid_wgs", "fused_occupancy_reduction")


def rows(root: str | Path, experiment: str = "fused-gemv") -> List[Dict[str, object]]:
    """One row per GEMV that has both schemes' results, ordered by M then K."""
    by: Dict[str, Dict[str, object]] = {}
    for r in load_runs(root, experiment, every_size=True):
        name = str(r.cfg("workload.gemv.name"))
        by.setdefault(name, {})[r.scheme] = r
    out = []
    for name, runs in by.items():
        b, f = runs.get("gemv_ar"), runs.get("fused_gemv_ar")
        if b is None or f is None:
            continue
        bt, ft = float(b.summary["total_us"]), float(f.summary["total_us"])
        out.append({"gemv": name, "group": "msweep" if name.startswith("msweep") else "model",
                    "M": int(b.cfg("workload.gemv.M")), "K": int(b.cfg("workload.gemv.K")),
                    "mode": b.cfg("simulation.mode"), "base_gemv_us": float(b.summary["gemm_us"]),
                    "base_allreduce_us": float(b.summary["rs_us"]), "base_total_us": bt,
                    "fused_gemv_us": float(f.summary["gemm_us"]), "fused_allreduce_tail_us": float(f.summary["rs_us"]),
                    "fused_total_us": ft, "reduction": round(1 - ft / bt, 6),
                    "fused_grid_wgs": f.stat("fused.grid_wgs"),
                    "fused_occupancy_reduction": f.stat("fused.occupancy_reduction")})
    return sorted(out, key=lambda r: (r["M"], r["K"], r["gemv"]))


def summary(rs: List[Dict[str, object]]) -> Dict[str, Dict[str, float]]:
    """Per group: mean, max and min reduction, and the number of GEMVs."""
    out = {}
    for g in sorted({r["group"] for r in rs}):
        red = [float(r["reduction"]) for r in rs if r["group"] == g]
        out[g] = {"mean": statistics.mean(red), "max": max(red), "min": min(red), "n": len(red)}
    return out


def markdown(rs: List[Dict[str, object]]) -> str:
    """The rows as a Markdown table (times in us)."""
    lines = ["| GEMV | M | K (K/4 per GPU) | mode | baseline GEMV | baseline all-reduce | baseline total | fused GEMV "
             "part | fused all-reduce tail | fused total | reduction |", "|" + "---|" * 11]
    for r in rs:
        lines.append(f"| {r['gemv']} | {r['M']} | {r['K']} ({int(r['K']) // 4}) | {r['mode']} | {r['base_gemv_us']:.1f} "
                     f"| {r['base_allreduce_us']:.1f} | {r['base_total_us']:.1f} | {r['fused_gemv_us']:.1f} | "
                     f"{r['fused_allreduce_tail_us']:.1f} | {r['fused_total_us']:.1f} | {100 * float(r['reduction']):.1f} % |")
    return "\n".join(lines)


def write_csv(rs: List[Dict[str, object]], path: str | Path) -> Path:
    path = Path(path)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        for r in rs:
            w.writerow({k: r[k] for k in FIELDS})
    return path
