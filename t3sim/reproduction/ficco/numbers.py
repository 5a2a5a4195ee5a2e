"""Every number the FiCCO paper states in its text (pure data), and how t3sim's values are read.

The figures survive only as captions, so only these stated numbers can be compared. t3sim's values come
from :func:`metrics` over the ``ficco-*`` experiments; :data:`READINGS` says how the
text is read where it is not explicit.
"""

from __future__ import annotations

import math
from typing import Dict, List, Mapping, Sequence

from t3sim.analysis.runs import Run
from t3sim.schemes.ficco.heuristic import SCHEDULES
from t3sim.reproduction.ficco import char, speedups
from t3sim.reproduction.stated import PaperNumber, lo_hi

P = PaperNumber

#: how the stated numbers are read (shown with the table in REPRODUCTION.md)
READINGS = (
    "Every scenario is simulated at a SCALED shape (workload.gemm.scale_M/scale_K, rule t3sim.schemes.ficco.heuristic.scale_for: "
    "N kept, K halved first down to 512, then M; at most 256 GFLOP per GPU): the communication-to-GEMM ratio stays, "
    "but the decomposed GEMMs have fewer tiles and the 1D schedules' gathers and scatters weigh more than at full size "
    "(experiments/ficco/README.md), so these are not full-size values.",
    "Speedups are over the baseline (`sequential`: the all-gather or all-to-all as a CU-driven collective kernel, "
    "then one GEMM), per scenario; \"up to\" = the largest over Table I's 16 scenarios.",
    "Ideal speedup (Sec. VI-B: \"operator decomposition scales linearly with no slowdowns from decomposition or "
    "contention\") = (t_comm + t_GEMM) / max(t_comm, t_GEMM) from the baseline's two isolated phases.",
    "\"FiCCO up to 1.6x with 1D schedules\" = the best 1D schedule (dma) per scenario, its largest speedup; \"1.7x with "
    "emulated 2D\" = uniform_fused_2d (dma, its 2D blocks moved as equal-sized 1D copies, as the paper).",
    "Shard overlap = chunked_dma with 8 chunks (one shard per step, peer to peer: PyTorch AsyncTP's decomposition); "
    "\"up to 3.9x slower\" = the largest baseline/shard time ratio inverted; \"7x communication slowdown\" = the "
    "shard schedule's time to move A over the baseline collective's time (the largest over scenarios).",
    "DIL and CIL geomeans are over the scenarios the characterization runs (ficco-char experiment); GEMM CIL = time "
    "of the 8-way M-sharded GEMM beside one step's all-gather / alone; communication CIL = the all-gather's time "
    "beside the GEMM / alone; communication DIL = 8 all-gathers of 1/8 the size / one whole (Sec. IV-C2).",
    "Heuristic accuracy = the share of scenarios where t3sim.schemes.ficco.heuristic.pick (applied to the simulated, scaled "
    "shape) names the fastest simulated FiCCO schedule; its loss = 1 - (picked speedup / best speedup), mean over the "
    "mispredicted scenarios.",
    "Trends stated in words are given as signs: a Spearman rank correlation (positive = \"higher\"), or the "
    "difference of two geomeans.",
)

NUMBERS: List[PaperNumber] = [
    P("ideal_max", "VI-B", "exposed communication provides up to 1.7x speedup opportunity", 1.7, "speedup_x", "fig13"),
    P("ficco_1d_max", "VI-C", "attaining speedups of up to 1.6x with 1D schedules", 1.6, "speedup_x", "fig12b"),
    P("ficco_2d_max", "VI-C", "and 1.7x with emulated 2D schedules", 1.7, "speedup_x", "fig12b"),
    P("shard_slowdown_max", "III-C", "peer-to-peer communication can leave network links unused causing performance "
      "degradation - up to 3.9x slowdown compared to serial execution", 3.9, "reduction_x", "fig13"),
    P("shard_comm_slowdown", "VI-B", "shard-based overlap, with peer-to-peer communication, under-utilizes the "
      "available network links in AMD Instinct MI300X (we observe 7x communication slowdown)", 7.0, "reduction_x",
      "fig13"),
    P("shard_best_speedup", "VI-B", "Regardless, shard-overlap does not attain speedups", "lower", "direction",
      "fig13"),
    P("comm_dil_geomean", "IV-C2", "communication DIL for FiCCO has a geomean of about 10%", 10, "pct", "fig08"),
    P("comm_dil_vs_size", "IV-C2", "as size increases, there is increased resiliency to DIL as communication gets "
      "increasingly bandwidth-bound", "lower", "direction", "fig08"),
    P("gemm_dil_64_vs_8", "IV-C1", "64-way sharding leads to higher DIL (slowdown) as compared to 8-way sharding for "
      "both row and column sharding", "higher", "direction", "fig07"),
    P("gemm_dil_row_vs_col_mk", "IV-C1", "row-sharding incurs higher overhead when M < K, and column-sharding when "
      "M > K", "higher", "direction", "fig07"),
    P("gemm_dil_vs_otb", "IV-C1", "DIL generally increases as static op-to-byte (OTB) for GEMM ... decreases",
      "lower", "direction", "fig07"),
    P("gemm_cil_ficco", "IV-D1", "geomean CIL of 1.07 slowdown as opposed to geomean CIL of 1.11 with FiCCO", 1.11,
      "speedup_x", "fig09"),
    P("gemm_cil_shard", "IV-D1", "we ... observe a geomean CIL of 1.07 slowdown (shard-based overlap)", 1.07,
      "speedup_x", "fig09"),
    P("comm_cil_ficco", "IV-D2", "we observe a geomean CIL of 1.12 slowdown", 1.12, "speedup_x", "fig09"),
    P("comm_cil_shard", "IV-D2", "shard-based overlap experiences geomean CIL of 1.03 slowdown", 1.03, "speedup_x",
      "fig09"),
    P("gemm_cil_dma_vs_rccl", "IV-D1", "DMA-based communication causes far lower CIL than traditional GPU core-driven "
      "communication (RCCL) in all cases", "lower", "direction", "fig09"),
    P("gemm_cil_vs_mt", "IV-D1", "CIL generally increases as static memory traffic (MT) for GEMM increases",
      "higher", "direction", "fig09"),
    P("heuristic_table_i", "VI-D", "Our proposed heuristic in Figure 12(a) predicts the right schedule for all "
      "scenarios we study in this work", 100, "pct", "fig12b"),
    P("heuristic_synthetic", "VI-D", "Across these scenarios, our proposed heuristic predicts the right schedule for "
      "81% of scenarios", 81, "pct", "fig12b"),
    P("heuristic_loss", "VI-D", "For the scenarios where we mispredict, the schedule proposed by our heuristic loses "
      "approximately 14% of the optimal speedup", 14, "pct", "fig12b"),
]
if len({n.key for n in NUMBERS}) != len(NUMBERS):
    raise RuntimeError("duplicate FiCCO paper-number key")


def metrics(runs: Sequence[Run]) -> Dict[str, float]:
    """``{key: t3sim value}`` from the FiCCO experiments' runs (NaN where they have no results): their figure tables'
    rows (:func:`t3sim.reproduction.ficco.speedups.ficco_rows`, :func:`t3sim.reproduction.ficco.char.char_rows`)
    through :func:`metrics_from_tables`."""
    return metrics_from_tables({"ficco": speedups.ficco_rows(runs), "ficco-char": char.char_rows(runs)})


def metrics_from_tables(tabs: Mapping[str, Sequence[Mapping]]) -> Dict[str, float]:
    """``{key: t3sim value}`` from the tables ``ficco`` (``ficco.csv``: one row per run) and ``ficco-char``
    (``ficco-char.csv``: one row per scenario), as ``t3sim reproduce`` writes them into ``figures/`` (NaN where
    a table is missing); the characterization's numbers (DIL, CIL) come from
    :func:`t3sim.reproduction.ficco.char.metrics_from_rows`."""
    every = list(tabs.get("ficco", []))
    rows = [r for r in every if r["experiment"] in ("ficco-sp", "ficco-ep")]
    scs = speedups.scenarios(rows)
    out: Dict[str, float] = {}
    out["ideal_max"] = lo_hi([r["ideal_speedup"] for r in rows])[1]
    best_1d = [lo_hi([speedups.speedup(rows, s, "ficco-dma", v) for v in SCHEDULES if v.endswith("_1d")])[1]
               for s in scs]
    out["ficco_1d_max"] = lo_hi(best_1d)[1]
    out["ficco_2d_max"] = lo_hi([speedups.speedup(rows, s, "ficco-dma", "uniform_fused_2d") for s in scs])[1]
    lo, hi = lo_hi([speedups.speedup(rows, s, "shard") for s in scs])
    out["shard_slowdown_max"], out["shard_best_speedup"] = 1 / lo, hi - 1
    for key, exp in (("heuristic_table_i", None), ("heuristic_synthetic", "ficco-synthetic")):
        accs = [speedups.heuristic_accuracy(every, e) for e in ((exp,) if exp else ("ficco-sp", "ficco-ep"))]
        n = sum(a[2] for a in accs)
        out[key] = 100 * sum(a[0] * a[2] for a in accs if a[2]) / n if n else math.nan
        if exp:
            out["heuristic_loss"] = 100 * accs[0][1] if accs[0][2] else math.nan
    keys = [n.key for n in NUMBERS]
    out.update({k: v for k, v in char.metrics_from_rows(tabs.get("ficco-char", [])).items() if k in keys})
    return {k: out.get(k, math.nan) for k in keys}
