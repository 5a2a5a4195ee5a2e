"""FiCCO's facts for the explanations' claims (pure; reads figure tables only).

Same contract as :mod:`t3sim.reproduction.t3.facts`: from the ``ficco`` / ``ficco-char`` tables
(:func:`t3sim.reproduction.ficco.speedups.ficco_rows`, :func:`t3sim.reproduction.ficco.char.char_rows`). The
stated numbers' own values and differences are facts too (:func:`t3sim.reproduction.report.number_facts`).
"""

from __future__ import annotations

from typing import Dict, List, Sequence

from t3sim.analysis.tables import NAN, Rows, fin, geomean, lo_hi
from t3sim.schemes.ficco.heuristic import SCHEDULES
from t3sim.reproduction.ficco.numbers import NUMBERS as FICCO_NUMBERS

#: FiCCO's communication DIL (Sec. IV-C2, percent): the fixed part per collective it implies (comm_need_fixed_*)
_COMM_DIL_PAPER_PCT = float(next(n.value for n in FICCO_NUMBERS if n.key == "comm_dil_geomean"))
#: the experiments of FiCCO's Table I scenarios
TABLE_I = ("ficco-sp", "ficco-ep")


def _scored(rows: Rows, experiments: Sequence[str]) -> List[Dict[str, object]]:
    """Per scenario with all four dma schedules (as :func:`t3sim.reproduction.ficco.speedups.heuristic_accuracy`
    scores): its shape, the heuristic's pick and t3sim's fastest schedule."""
    out = []
    for e in experiments:
        for sc in dict.fromkeys(r["scenario"] for r in rows if r["experiment"] == e):
            rs = [r for r in rows if r["experiment"] == e and r["scenario"] == sc and r["method"] == "ficco-dma"]
            if {r["variant"] for r in rs} != set(SCHEDULES):
                continue
            best = max(rs, key=lambda r: r["speedup"])
            picked = next((r["speedup"] for r in rs if r["variant"] == rs[0]["heuristic_pick"]), NAN)
            out.append({"experiment": e, "scenario": sc, "M": rs[0]["M"], "K": rs[0]["K"], "best": best["variant"],
                        "pick": rs[0]["heuristic_pick"], "pick_over_best": picked / best["speedup"]})
    return out


def ficco_facts(rows: Rows, char: Rows) -> Dict[str, object]:
    """FiCCO's facts from the ``ficco`` rows (every run) and the ``ficco-char`` rows (per scenario)."""
    out: Dict[str, object] = {}
    tab = [r for r in rows if r["experiment"] in TABLE_I]
    base = [r for r in tab if r["method"] == "baseline"]
    if base:
        b = max(base, key=lambda r: r["ideal_speedup"] if fin(r["ideal_speedup"]) else -1)
        g, c = float(b["gemm_us"]), float(b["comm_us"])
        out.update({"ideal_max_scenario": b["scenario"], "ideal_max_gemm_us": g, "ideal_max_comm_us": c,
                    "ideal_max_balance": min(g, c) / max(g, c) if max(g, c) > 0 else NAN})
        k512 = [r for r in base if r["sim_K"] == 512 and r["K"] > 512]
        out["tab_n"], out["tab_k512_n"] = len(base), len(k512)
        best1d = [max((r["speedup"] for r in tab if r["scenario"] == k["scenario"] and r["experiment"] == k["experiment"]
                       and r["method"] == "ficco-dma" and str(r["variant"]).endswith("_1d")), default=NAN) for k in k512]
        out["k512_best1d_max"] = lo_hi(best1d)[1]
        mk = [r for r in base if r["M"] < r["K"]]
        out["mk_n"], out["mk_scaled_m_n"] = len(mk), sum(1 for r in mk if r["sim_M"] < r["M"])
    for meth in ("ficco-dma", "ficco-rccl"):
        v = [r["speedup"] for r in tab if r["method"] == meth and r["variant"] == "uniform_fused_2d"]
        out[f"{meth.split('-')[1]}_2d_max"] = lo_hi(v)[1]
    if char:
        def col(c):
            return [r[c] for r in char if fin(r.get(c))]
        out["comm_dil_rccl_pct"] = 100 * (geomean(col("dil_comm_rccl")) - 1) if col("dil_comm_rccl") else NAN
        # communication DIL (8 x the 1/8-size collective over the whole): the fixed part of one collective's time,
        # and the fixed part the paper's geomean would need at these whole times (8 t1 / T - 1 = 7 a / T)
        out["comm_fixed_dma_lo"], out["comm_fixed_dma_hi"] = lo_hi(col("comm_fixed_us_dma"))
        need = [_COMM_DIL_PAPER_PCT / 100 * T / 7 for T in col("comm_whole_us_dma")]
        out["comm_need_fixed_lo"], out["comm_need_fixed_hi"] = lo_hi(need)
        out["comm_steps_dma_lo"], out["comm_steps_dma_hi"] = lo_hi(col("steps_comm_dma"))
        over = [r["comm_whole_us_dma"] / r["comm_bound_us_dma"] for r in char
                if fin(r.get("comm_whole_us_dma")) and fin(r.get("comm_bound_us_dma")) and r["comm_bound_us_dma"] > 0]
        out["comm_over_bound_lo"], out["comm_over_bound_hi"] = lo_hi(over)
        mk = [r["dil_gemm_8M"] for r in char if r["M"] < r["K"] and fin(r["dil_gemm_8M"])]
        other = [r["dil_gemm_8M"] for r in char if r["M"] >= r["K"] and fin(r["dil_gemm_8M"])]
        out["mk_dil_lo"], out["mk_dil_hi"] = lo_hi(mk)
        out["other_dil_lo"], out["other_dil_hi"] = lo_hi(other)
        out["cil_gemm_dma_geo"] = geomean(col("cil_gemm_dma")) if col("cil_gemm_dma") else NAN
        quiet = col("cil_gemm_dma") + col("cil_gemm_p2p") + col("cil_comm_dma") + col("cil_comm_p2p")
        out["cil_quiet_max_pct"] = 100 * (max(quiet) - 1) if quiet else NAN
        out["cil_comm_rccl_max"] = max(col("cil_comm_rccl"), default=NAN)
        out["cil_gemm_rccl_max"] = max(col("cil_gemm_rccl"), default=NAN)
    sc = _scored(rows, TABLE_I)
    if sc:
        wrong = [s for s in sc if s["pick"] != s["best"]]
        sp_mgtk = [s for s in sc if s["experiment"] == "ficco-sp" and s["M"] > s["K"]]
        out.update({"heur_n": len(sc), "heur_wrong_n": len(wrong),
                    "heur_wrong": ", ".join(str(s["scenario"]) for s in wrong) or "none",
                    "heur_wrong_mk_le_n": sum(1 for s in wrong if s["M"] <= s["K"]),
                    "heur_wrong_not_hetero_n": sum(1 for s in wrong if s["best"] != "hetero_fused_1d"),
                    "heur_wrong_picks": ", ".join(sorted({str(s["pick"]) for s in wrong})) or "none",
                    "heur_sp_mgtk_n": len(sp_mgtk),
                    "heur_sp_mgtk_hetero_n": sum(1 for s in sp_mgtk if s["best"] == "hetero_fused_1d")})
    syn = _scored(rows, ("ficco-synthetic",))
    wrong = [s for s in syn if s["pick"] != s["best"]]
    out["synth_n"], out["synth_wrong_n"] = len(syn), len(wrong)
    out["synth_wrong_mk_le_n"] = sum(1 for s in wrong if s["M"] <= s["K"])
    out["synth_wrong_picks"] = ", ".join(sorted({str(s["pick"]) for s in wrong})) or "none"
    out["synth_wrong_best"] = ", ".join(sorted({str(s["best"]) for s in wrong})) or "none"
    out["synth_wrong_ratio_min"] = min((s["pick_over_best"] for s in wrong), default=NAN)
    return out
