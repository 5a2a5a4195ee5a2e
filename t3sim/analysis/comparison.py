"""Per-case comparison of the overlap schemes against Sequential: speedups and DRAM traffic (pure).

Input: run summaries (the ``summary`` dict of a :class:`~t3sim.results.store.RunResult`, or a
``summary.csv`` row): ``scheme, model, sublayer, tp, gemm_us, rs_us, ag_us, total_us`` (times in
microseconds) and ``{gemm,rs,ag}_{read,write,update}_MB`` (GPU 0's DRAM traffic in decimal MB,
the T3 paper's Fig. 18 categories; a near-memory update counts as a write). Nothing here simulates.

A *case* is ``(model, sublayer, tp)``. Per case and scheme (all relative to that case's
``sequential`` point):

* ``speedup_pct``  = ``100 * (T_seq / T_scheme - 1)`` (T3 Fig. 16: "speedup of 30 %");
* ``dram_red_pct`` = ``100 * (1 - B_scheme / B_seq)``, ``B`` = all GEMM+RS+AG DRAM bytes;
* ``rs_read_x``    = RS reads, sequential / scheme (T3: "RS's reads reduce by 2.4x");
* ``wr_red_pct``   = ``100 * (1 - W_scheme / W_seq)``, ``W`` = GEMM+RS writes and updates;
* ``gemm_read_x``  = GEMM reads, sequential / scheme;
* ``rs_nmc_pct``   = ``100 * (RS_seq / RS_scheme - 1)``, the isolated RS speedup (ideal_rs_nmc).

Aggregates over cases: geometric mean of the ratios (reported back in the same unit, e.g.
``100 * (geomean(T_seq / T) - 1)``) and the maximum. The T3 paper's Sec. 6 numbers computed from these:
:mod:`t3sim.reproduction.t3.comparison`.
"""

from __future__ import annotations

import math
from typing import Dict, Iterable, List, Mapping, Sequence, Tuple

from t3sim.analysis.runs import f

SCHEMES = ("sequential", "t3", "t3_mca", "ideal_gemm_rs_overlap", "ideal_rs_nmc")
CaseKey = Tuple[str, str, int]


def dram_bytes_MB(row: Mapping, cats: Sequence[str] = ("gemm", "rs", "ag"),
                  kinds: Sequence[str] = ("read", "write", "update")) -> float:
    """DRAM traffic of ``row`` summed over categories and kinds (MB)."""
    return sum(f(row, f"{c}_{k}_MB") for c in cats for k in kinds)


def group_cases(summaries: Iterable[Mapping]) -> Dict[CaseKey, Dict[str, Mapping]]:
    """``{(model, sublayer, tp): {scheme: summary}}``; a later duplicate point replaces an earlier one."""
    cases: Dict[CaseKey, Dict[str, Mapping]] = {}
    for s in summaries:
        key = (str(s["model"]), str(s["sublayer"]), int(s["tp"]))
        cases.setdefault(key, {})[str(s["scheme"])] = s
    return cases


def case_metrics(runs: Mapping[str, Mapping]) -> Dict[str, Dict[str, float]]:
    """``{scheme: {metric: value}}`` for one case (module doc); empty without a sequential point."""
    seq = runs.get("sequential")
    if seq is None:
        return {}
    t0 = f(seq, "total_us")
    b0 = dram_bytes_MB(seq)
    w0 = dram_bytes_MB(seq, ("gemm", "rs"), ("write", "update"))
    out: Dict[str, Dict[str, float]] = {}
    for name, r in runs.items():
        m = {"total_us": f(r, "total_us"), "speedup_pct": 100.0 * (t0 / f(r, "total_us") - 1.0)}
        m["dram_red_pct"] = 100.0 * (1.0 - dram_bytes_MB(r) / b0) if b0 else 0.0
        w = dram_bytes_MB(r, ("gemm", "rs"), ("write", "update"))
        m["wr_red_pct"] = 100.0 * (1.0 - w / w0) if w0 else 0.0
        for cat, key in (("rs", "rs_read_x"), ("gemm", "gemm_read_x")):
            rd = f(r, f"{cat}_read_MB")
            m[key] = f(seq, f"{cat}_read_MB") / rd if rd > 0 else math.inf
        if f(r, "rs_us") > 0 and name.startswith("ideal"):
            m["rs_nmc_pct"] = 100.0 * (f(seq, "rs_us") / f(r, "rs_us") - 1.0)
        out[name] = m
    if "t3" in runs and "t3_mca" in runs:
        out["t3_mca"]["over_t3_pct"] = 100.0 * (f(runs["t3"], "total_us") / f(runs["t3_mca"], "total_us") - 1.0)
    if "ideal_gemm_rs_overlap" in runs and "ideal_rs_nmc" in runs:
        out["ideal_rs_nmc"]["over_ideal_pct"] = 100.0 * (
            f(runs["ideal_gemm_rs_overlap"], "total_us") / f(runs["ideal_rs_nmc"], "total_us") - 1.0)
    return out

def _as_ratio(metric: str, v: float) -> float:
    """Metric value -> a positive ratio whose geomean is meaningful."""
    if metric.endswith("_x"):
        return v
    if metric in ("dram_red_pct", "wr_red_pct"):
        return 1.0 - v / 100.0  # traffic kept
    return 1.0 + v / 100.0  # speedup


def _from_ratio(metric: str, r: float) -> float:
    if metric.endswith("_x"):
        return r
    if metric in ("dram_red_pct", "wr_red_pct"):
        return 100.0 * (1.0 - r)
    return 100.0 * (r - 1.0)


def aggregate(values: Sequence[float], metric: str, agg: str) -> float:
    """Geomean (through :func:`_as_ratio`) or max of a metric over cases; NaN when empty."""
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return math.nan
    if agg == "max":
        return max(vals)
    return _from_ratio(metric, math.exp(sum(math.log(_as_ratio(metric, v)) for v in vals) / len(vals)))


def geomean_speedup_pct(vals: Sequence[float]) -> float:
    """Geomean of speedups in percent, over the finite values (NaN when none)."""
    return aggregate(vals, "speedup_pct", "geomean")


def ordering_violations(metrics: Mapping[str, Mapping[str, float]], tol: float) -> List[str]:
    """The T3 paper's ordering (Sec. 6.1) on one case's :func:`case_metrics`: sequential slower than t3; t3_mca no
    slower than t3, and neither T3 scheme faster than ideal_rs_nmc, each within relative ``tol``
    (e.g. 0.02 = 2 % of the compared time). Returns human-readable violations (empty: ordered)."""
    t = {k: v["total_us"] for k, v in metrics.items()}
    bad = []
    if "t3" in t and not t["t3"] < t["sequential"]:
        bad.append(f"t3 {t['t3']:.1f} us is not faster than sequential {t['sequential']:.1f} us")
    if "t3" in t and "t3_mca" in t and t["t3_mca"] > t["t3"] * (1 + tol):
        bad.append(f"t3_mca {t['t3_mca']:.1f} us is slower than t3 {t['t3']:.1f} us by more than {tol:.0%}")
    for s in ("t3", "t3_mca"):
        if s in t and "ideal_rs_nmc" in t and t[s] < t["ideal_rs_nmc"] * (1 - tol):
            bad.append(f"{s} {t[s]:.1f} us beats ideal_rs_nmc {t['ideal_rs_nmc']:.1f} us by more than {tol:.0%}")
    return bad
