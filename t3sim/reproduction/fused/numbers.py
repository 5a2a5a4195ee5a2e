"""Every number the fused computation-collective paper (Punniyamurthy et al.) states in its text for its results (pure
data), and how t3sim's values are read.

The figures (8-15) survive only as captions, so only these stated numbers can be compared. t3sim's values come from
:func:`metrics` over the fused experiments' tables (:func:`t3sim.reproduction.fused.tables.tables`); :data:`READINGS` says how
the text is read where it is not explicit. Nothing here is fitted: a number without the runs it needs is NaN.
"""

from __future__ import annotations

import math
from typing import Dict, List, Mapping, Sequence

from t3sim.analysis.runs import Run
from t3sim.reproduction.fused.tables import MAIN_GROUP, tables
from t3sim.reproduction.stated import PaperNumber, lo_hi

P = PaperNumber
NAN = math.nan

#: how the stated numbers are read (shown with the table in REPRODUCTION.md)
READINGS = (
    "Reduction = 1 - fused time / baseline time (the paper's \"lower execution time\"), per point; \"on average\" = the "
    "plain mean over the points of the operator's study, \"up to\" = the largest. The paper's point sets (Figs. 8-10, "
    "12) survive only as captions, so t3sim's sets are chosen from its cited sources (experiments/fused-gemv, "
    "fused-a2a and fused-scale READMEs).",
    "GEMV + AllReduce: the decode GEMVs of the T3 paper's Table 2 models (OP and FC-2 at TP = 4) and M = 64k "
    "(group `model`); the M sweep at K = 4096 (group `msweep`) is shown in the figure but not averaged.",
    "Embedding + All-to-All (intra- and inter-node): dim 256, pooling 10, global batch 256-2048 at the paper's 256 "
    "tables per GPU, baseline with one pooling kernel per table as the DLRM code (`library_kernels: per_table`), "
    "sampled by tables (`simulation.sampling.mode: tables`: detailed runs of 4, 8 and 16 tables, the rest at the "
    "measured per-table rates; error against whole runs in experiments/fused-a2a/README.md); the fused kernel "
    "simulated whole.",
    "GEMM + All-to-All: the MoE combine at Tutel's helloworld sizes (batch 2-16, N = K = 2048, top-2, fp16).",
    "Occupancy: `fused.occupancy_reduction` of the fused embedding kernel (1 - its WGs per CU / the pooling kernel's), "
    "from the registers stated in the config (assumptions). The Fig. 13 sweep (25 %, 75 %, 87.5 % occupancy) runs the "
    "fused kernel with more library registers per thread to lower its occupancy (`fused-occupancy` experiment); NaN "
    "where it was not run.",
    "Skew (Sec. IV-C, Fig. 14): the fused kernel's time on node 0 against node 1 (`fused.kernel_skew` = slowest / "
    "fastest - 1) on the 2-node preset in explicit mode, with and without `scheme.fused_comm_aware`, mean over the "
    "`fused-skew` points; NaN where it was not run.",
    "DLRM at 128 nodes (Sec. IV-D): the mean reduction of one training iteration over experiments/fused-scale's grid "
    "(per-kernel times from t3sim, an analytical 8 x 16 torus; its README states the method).",
    "Numbers the paper cites from other work (Sec. II-A: Neo [47], T3 [50], Tutel [39]) are compared with the share "
    "of the communication in t3sim's baselines of the same operator: the all-to-all of the 2-node embedding baselines "
    "(Neo's is distributed DLRM training; its \">35%\" is a lower bound, so t3sim's smallest share), the all-reduce "
    "of the GEMV + AllReduce baselines (inference decode, group `model`; largest share) and the all-to-all of the MoE "
    "combine baselines (largest share).",
    "Trends stated in words are given as signs of a difference in percentage points: the reduction at the largest "
    "size minus at the smallest (batch trends), the mean at M = 64k minus the mean of the other GEMVs, the reduction "
    "minus the perfect-overlap bound min(compute, collective) / baseline, the baseline GEMM's share minus 50 %.",
)

_GEMV = "Our approach achieves on average 13% (and up to 22%) lower execution time"
_GEMM = "Our approach lowers execution time by 12% on average and up to 20%"
_EMB = "Overall, our approach achieves on average 20% (and up to 32%) lower execution time"
_NIC = "achieving 31% average reduction in execution time (up to 58%)"
_SKEW = ("In baseline scheduling, node 0 and 1 have an average execution time skew of ~7% while using "
         "communication-aware scheduling exhibits only a ~1% average execution time skew")
_OCC = ("as the occupancy is increased from 25% to 75%, the parallelism increases and consequently the execution time "
        "reduces by 46%. However, increasing the occupancy further from 75% to 87.5% results in the execution time "
        "increasing by 25%")

NUMBERS: List[PaperNumber] = [
    P("cited_a2a_exposed", "II-A", "Prior research has shown that All-to-All latency is significantly exposed (>35%) "
      "and has direct impact on overall latency in state-of-the-art systems [47]", 35, "pct", "fig12"),
    P("cited_allreduce_share", "II-A", "This AllReduce operation contributes significantly (up to 46% [50]) towards "
      "the inference latency", 46, "pct", "fig09"),
    P("cited_moe_a2a_share", "II-A", "These All-to-All collectives are in the critical path and adds significant "
      "overhead (up to 43% [39]) to the MoE execution time", 43, "pct", "fig10"),
    P("gemv_ar_mean", "IV-B", _GEMV, 13, "pct", "fig09"),
    P("gemv_ar_max", "IV-B", _GEMV, 22, "pct", "fig09"),
    P("gemv_ar_64k", "IV-B", "The latency reduction is lower for the larger inputs (M = 64k) because as the output "
      "vector size grows, the contention for the Infinity Fabric links increases", "lower", "direction", "fig09"),
    P("gemm_a2a_mean", "IV-B", _GEMM, 12, "pct", "fig10"),
    P("gemm_a2a_max", "IV-B", _GEMM, 20, "pct", "fig10"),
    P("gemm_a2a_gemm_dominates", "IV-B", "Since we are using a generic GEMM implementation provided with Triton, the "
      "GEMM dominates the overall execution time and limits the benefits of our approach", "higher", "direction",
      "fig10"),
    P("emb_a2a_intra_mean", "IV-B", _EMB, 20, "pct", "fig08"),
    P("emb_a2a_intra_max", "IV-B", _EMB, 32, "pct", "fig08"),
    P("emb_a2a_intra_batch", "IV-B", "The benefits achieved are lower for smaller batch sizes (e.g., 512) due to the "
      "small All-to-All latency", "higher", "direction", "fig08"),
    P("emb_a2a_intra_beyond_overlap", "IV-B", "While for larger batches, we observe higher benefits than what could be "
      "achieved by fully overlapping All-to-All due to the zero-copy optimizations", "higher", "direction", "fig08"),
    P("emb_a2a_inter_mean", "IV-C", _NIC, 31, "pct", "fig12"),
    P("emb_a2a_inter_max", "IV-C", _NIC, 58, "pct", "fig12"),
    P("emb_a2a_inter_beyond_overlap", "IV-C", "For smaller global batch sizes (e.g., 256), we note that the "
      "performance benefit is more than what could be achieved by fully overlapping communication", "higher",
      "direction", "fig12"),
    P("occupancy_reduction", "III-C", "Our fused embedding + All-to-All kernel achieves 12.5% lower occupancy compared "
      "to the original embedding pooling kernel", 12.5, "pct", "fig13"),
    P("occupancy_25_to_75", "IV-C", _OCC, 46, "pct", "fig13"),
    P("occupancy_75_to_875", "IV-C", _OCC, 25, "pct", "fig13"),
    P("skew_oblivious", "IV-C", _SKEW, 7, "pct", "fig14"),
    P("skew_comm_aware", "IV-C", _SKEW, 1, "pct", "fig14"),
    P("skew_lower", "VI", "it achieves 6% lower execution skew than communication-oblivious scheduling", 6, "pct",
      "fig14"),
    P("dlrm_128_nodes", "IV-D", "our approach is able to hide most of embedding operations, achieving on average a "
      "~21% reduction in the overall execution time", 21, "pct", "fig15"),
]
if len({n.key for n in NUMBERS}) != len(NUMBERS):
    raise RuntimeError("duplicate fused-collective paper-number key")
BY_KEY = {n.key: n for n in NUMBERS}
#: per operator table: the keys of its stated mean and maximum
OPERATOR_KEYS = {"fused-gemv": ("gemv_ar_mean", "gemv_ar_max"), "fused-gemm-a2a": ("gemm_a2a_mean", "gemm_a2a_max"),
                 "fused-emb-a2a": ("emb_a2a_intra_mean", "emb_a2a_intra_max"),
                 "fused-emb-a2a-2node": ("emb_a2a_inter_mean", "emb_a2a_inter_max")}


def _fin(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _mean(vals) -> float:
    v = [float(x) for x in vals if _fin(x)]
    return sum(v) / len(v) if v else NAN


def main_rows(tabs: Mapping[str, Sequence[Mapping]], key: str) -> List[Mapping]:
    """The rows of operator ``key`` that its stated averages are taken over (:data:`t3sim.reproduction.fused.tables.MAIN_GROUP`)."""
    return [r for r in tabs.get(key, []) if r.get("group") == MAIN_GROUP[key]]


def _ends(rows: Sequence[Mapping], col: str) -> float:
    """``col`` at the largest size minus at the smallest (rows of one table count; NaN under two sizes)."""
    sizes = sorted({r["size"] for r in rows})
    if len(sizes) < 2:
        return NAN
    at = {s: _mean(r[col] for r in rows if r["size"] == s) for s in (sizes[0], sizes[-1])}
    return at[sizes[-1]] - at[sizes[0]]


def _at(rows: Sequence[Mapping], which: str, col: str) -> float:
    """``col`` (mean) at the smallest or largest size of ``rows``."""
    sizes = sorted({r["size"] for r in rows})
    if not sizes:
        return NAN
    s = sizes[0] if which == "smallest" else sizes[-1]
    return _mean(r[col] for r in rows if r["size"] == s)


def _occupancy(rows: Sequence[Mapping]) -> Dict[str, float]:
    """Fig. 13's two changes, at the rows' occupancies of 25, 75 and 87.5 % (one batch and table count: the first)."""
    if not rows:
        return {}
    first = (rows[0]["size"], rows[0]["tables"])
    t = {round(float(r["occupancy_pct"]), 1): float(r["total_us"]) for r in rows if (r["size"], r["tables"]) == first}
    out = {}
    if 25.0 in t and 75.0 in t:
        out["occupancy_25_to_75"] = 100 * (1 - t[75.0] / t[25.0])
    if 75.0 in t and 87.5 in t:
        out["occupancy_75_to_875"] = 100 * (t[87.5] / t[75.0] - 1)
    return out


def metrics_from_tables(tabs: Mapping[str, Sequence[Mapping]]) -> Dict[str, float]:
    """``{key: t3sim value}`` from the fused tables (NaN where a table is empty)."""
    out: Dict[str, float] = {}
    for key, (kmean, kmax) in OPERATOR_KEYS.items():
        red = [r["reduction_pct"] for r in main_rows(tabs, key)]
        out[kmean], out[kmax] = _mean(red), lo_hi([float(x) for x in red if _fin(x)])[1]
    gemv = main_rows(tabs, "fused-gemv")
    big = [r["reduction_pct"] for r in gemv if r["size"] >= 65536]
    rest = [r["reduction_pct"] for r in gemv if r["size"] < 65536]
    out["gemv_ar_64k"] = _mean(big) - _mean(rest) if big and rest else NAN
    gemm = main_rows(tabs, "fused-gemm-a2a")
    inter_share = [float(r["base_comm_share_pct"]) for r in main_rows(tabs, "fused-emb-a2a-2node")
                   if _fin(r["base_comm_share_pct"])]
    out["cited_a2a_exposed"] = lo_hi(inter_share)[0]
    out["cited_allreduce_share"] = lo_hi([float(r["base_comm_share_pct"]) for r in gemv
                                          if _fin(r["base_comm_share_pct"])])[1]
    out["cited_moe_a2a_share"] = lo_hi([float(r["base_comm_share_pct"]) for r in gemm
                                        if _fin(r["base_comm_share_pct"])])[1]
    out["gemm_a2a_gemm_dominates"] = _mean(100 - r["base_comm_share_pct"] for r in gemm) - 50 if gemm else NAN
    intra, inter = main_rows(tabs, "fused-emb-a2a"), main_rows(tabs, "fused-emb-a2a-2node")
    out["emb_a2a_intra_batch"] = _ends(intra, "reduction_pct")
    out["emb_a2a_intra_beyond_overlap"] = _at(intra, "largest", "reduction_pct") - _at(intra, "largest",
                                                                                       "overlap_bound_pct")
    out["emb_a2a_inter_beyond_overlap"] = _at(inter, "smallest", "reduction_pct") - _at(inter, "smallest",
                                                                                        "overlap_bound_pct")
    occ = [r["occupancy_reduction"] for r in intra + inter]
    out["occupancy_reduction"] = 100 * max(float(x) for x in occ if _fin(x)) if any(_fin(x) for x in occ) else NAN
    out.update(_occupancy(tabs.get("fused-occupancy", [])))
    skew = tabs.get("fused-skew", [])
    out["skew_oblivious"] = _mean(r["skew_pct"] for r in skew if not r["comm_aware"])
    out["skew_comm_aware"] = _mean(r["skew_pct"] for r in skew if r["comm_aware"])
    out["skew_lower"] = out["skew_oblivious"] - out["skew_comm_aware"]
    out["dlrm_128_nodes"] = _mean(100 * float(r["reduction"]) for r in tabs.get("fused-scale", []) if _fin(r.get("reduction")))
    return {n.key: out.get(n.key, NAN) for n in NUMBERS}


def metrics(runs: Sequence[Run], scale: Sequence[Mapping[str, object]] = ()) -> Dict[str, float]:
    """``{key: t3sim value}`` from the fused experiments' runs and the 128-node study's rows (module doc)."""
    return metrics_from_tables(tables(runs, scale))
