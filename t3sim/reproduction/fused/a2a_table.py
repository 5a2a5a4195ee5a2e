"""The fused All-to-All studies: ``configs/experiments/fused-a2a.yaml`` (embedding + All-to-All)
and ``configs/experiments/fused-gemm-a2a.yaml`` (MoE GEMM + All-to-All combine): per point, the baseline's and the
fused kernel's times and the reduction ``1 - fused total / baseline total``, beside the paper's stated numbers
(pure: reads results only).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Dict, List

from t3sim.analysis.runs import load_runs

#: what the fused computation-collective paper states about these two operators (intra-node)
STATED = {
    "fused-a2a": ((0.20, 0.32), "Sec. IV-B: embedding + All-to-All 'on average 20% (and up to 32%) lower execution "
                                "time'; 'lower for smaller batch sizes (e.g., 512)'"),
    "fused-gemm-a2a": ((0.12, 0.20), "Sec. IV-B: GEMM + All-to-All 'lowers execution time by 12% on average and up "
                                     "to 20%'; 'the GEMM dominates the overall execution time'"),
}
#: experiment -> (baseline scheme, fused scheme, the config fields that name a point)
STUDIES = {
    "fused-a2a": ("emb_a2a", "fused_emb_a2a", ("workload.embedding_bag.global_batch",
                                               "workload.embedding_bag.tables_per_gpu")),
    "fused-gemm-a2a": ("gemm_a2a", "fused_gemm_a2a", ("workload.gemm.name", "workload.gemm.M", "workload.gemm.N",
                                                      "workload.gemm.K")),
}


def rows(root: str | Path, experiment: str) -> List[Dict[str, object]]:
    """One row per point that has both schemes' results."""
    base, fused, keys = STUDIES[experiment]
    by: Dict[tuple, Dict[str, object]] = {}
    for r in load_runs(root, experiment, every_size=True):
        by.setdefault(tuple(r.cfg(k) for k in keys), {})[r.scheme] = r
    out = []
    for key, runs in sorted(by.items(), key=lambda kv: [str(v).zfill(12) for v in kv[0]]):
        b, f = runs.get(base), runs.get(fused)
        if b is None or f is None:
            continue
        bt, ft = float(b.summary["total_us"]), float(f.summary["total_us"])
        out.append({**{k.split(".")[-1]: v for k, v in zip(keys, key)},
                    "base_compute_us": float(b.summary["gemm_us"]), "base_a2a_us": float(b.summary["rs_us"]),
                    "base_total_us": bt, "fused_compute_us": float(f.summary["gemm_us"]),
                    "fused_a2a_tail_us": float(f.summary["rs_us"]), "fused_total_us": ft, "reduction": 1 - ft / bt,
                    "fused_occupancy_reduction": f.stat("fused.occupancy_reduction")})
    return out


def markdown(rs: List[Dict[str, object]]) -> str:
    if not rs:
        return ""
    cols = list(rs[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rs:
        lines.append("| " + " | ".join(f"{v:.1f}" if isinstance(v, float) and not c.endswith("reduction") else
                                        f"{100 * v:.1f} %" if isinstance(v, float) else str(v)
                                        for c, v in r.items()) + " |")
    return "\n".join(lines)


def summary(rs: List[Dict[str, object]]) -> Dict[str, float]:
    red = [float(r["reduction"]) for r in rs]
    return {"n": len(red), "mean": statistics.mean(red), "max": max(red), "min": min(red)} if red else {"n": 0}
