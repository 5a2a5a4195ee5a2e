"""FLUX's and FiCCO's facts for the explanations' claims (pure; reads figure tables only).

Same contract as :mod:`t3sim.analysis.facts`: from the ``flux-op`` table (the rows of
:func:`t3sim.analysis.flux_op.flux_rows`) and the ``ficco`` / ``ficco-char`` tables
(:func:`t3sim.analysis.ficco.ficco_rows`, :func:`t3sim.analysis.ficco_char.char_rows`). The stated numbers'
own values and differences are facts too (:func:`t3sim.analysis.report.number_facts`).
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence

from t3sim.analysis.facts import NAN, Rows, fin, lo_hi
from t3sim.analysis.figs_study import geomean
from t3sim.analysis.ficco_numbers import NUMBERS as FICCO_NUMBERS
from t3sim.analysis.flux_op import LARGE_M, SMALL_M, best_rows

#: FiCCO's communication DIL (Sec. IV-C2, percent): the fixed part per collective it implies (comm_need_fixed_*)
_COMM_DIL_PAPER_PCT = float(next(n.value for n in FICCO_NUMBERS if n.key == "comm_dil_geomean"))
PCIE, NVL, H800 = "a100-pcie-8gpu", "a100-sxm4-8gpu", "h800-8gpu"
NODES = {"pcie": PCIE, "nvlink": NVL, "h800": H800}
MS = {"large": LARGE_M, "small": SMALL_M}


def _best(rows: Rows, system: str, direction: str, m: int, method: str) -> Optional[Mapping]:
    return next((r for r in rows if (r["system"], r["direction"], r["m"], r["method"]) == (system, direction, m, method)),
                None)


def _seq_ect(br: Rows, system: str, direction: str, m: int) -> float:
    r = _best(br, system, direction, m, "non-overlap")
    return float(r["ect_us"]) if r else NAN


def _pcie(br: Rows, pre: str, ms: Sequence[int], directions: Sequence[str]) -> Dict[str, object]:
    """A100 PCIe at ``ms`` x ``directions`` (facts ``<pre>_*``): how many points are not communication-bound (the
    collective alone no longer than the GEMM alone) and at how many Transformer Engine's fastest configuration is
    not copy-engine chunks (NaN where a point is missing), E's cap at the bound ones (GEMM / communication), TE's
    mean distance to it, TE's E and FLUX's speed-up over TE."""
    caps, gaps, es, xs, bound_n, dma_n, n = [], [], [], [], 0, 0, 0
    for d in directions:
        for m in ms:
            seq, te, fl = (_best(br, PCIE, d, m, k) for k in ("non-overlap", "TE", "FLUX"))
            if seq is None or te is None:
                continue
            n += 1
            dma_n += str(te["variant"]).startswith("chunked_dma")
            es.append(100 * te["overlap_efficiency"])
            if fl is not None and fl["total_us"] > 0:
                xs.append(te["total_us"] / fl["total_us"])
            if seq["ect_us"] > seq["gemm_alone_us"]:
                bound_n += 1
                cap = 100 * seq["gemm_alone_us"] / seq["ect_us"]
                caps.append(cap)
                gaps.append(cap - 100 * te["overlap_efficiency"])
    every = n == len(ms) * len(directions)
    out: Dict[str, object] = {f"{pre}_points_n": n, f"{pre}_not_comm_bound_n": n - bound_n if every else NAN,
                              f"{pre}_te_not_dma_n": n - dma_n if every else NAN}
    out[f"{pre}_cap_lo"], out[f"{pre}_cap_hi"] = lo_hi(caps)
    out[f"{pre}_te_gap_mean"] = sum(gaps) / len(gaps) if gaps else NAN
    out[f"{pre}_te_e_lo"], out[f"{pre}_te_e_hi"] = lo_hi(es)
    out[f"{pre}_flux_over_te_lo"], out[f"{pre}_flux_over_te_hi"] = lo_hi(xs)
    return out


def _chunked_gemm(br: Rows, direction: str, m: int, systems: Sequence[str]) -> Dict[str, float]:
    """Transformer Engine's operation time over the whole GEMM alone, per node."""
    out = {}
    for s in systems:
        te, seq = _best(br, s, direction, m, "TE"), _best(br, s, direction, m, "non-overlap")
        if te is not None and seq is not None and seq["gemm_alone_us"] > 0:
            out[s] = te["total_us"] / seq["gemm_alone_us"]
    return out


def _lowest_flux(br: Rows, system: str, tag: str) -> Dict[str, object]:
    fl = [r for r in br if r["system"] == system and r["method"] == "FLUX" and r["m"] in MS[tag]
          and fin(r["overlap_efficiency"])]
    if not fl:
        return {}
    r = min(fl, key=lambda r: r["overlap_efficiency"])
    node = next(k for k, v in NODES.items() if v == system)
    return {f"flux_lo_e_{node}_{tag}": 100 * r["overlap_efficiency"], f"flux_lo_m_{node}_{tag}": r["m"],
            f"flux_lo_is_ag_{node}_{tag}": float(r["direction"] == "ag_gemm")}


def _h800_ag_streams(rows: Rows, br: Rows) -> Dict[str, object]:
    """H800 AllGather+GEMM at m = 1024-8192: Transformer Engine's best E with its steps on one compute stream and on
    up to three, and at how many points three streams are not better."""
    one, three, worse = [], [], 0
    for m in LARGE_M:
        seq = _best(br, H800, "ag_gemm", m, "non-overlap")
        te = [r for r in rows if (r["system"], r["direction"], r["m"], r["method"]) == (H800, "ag_gemm", m, "TE")
              and fin(r["overlap_efficiency"])]
        s1 = [100 * r["overlap_efficiency"] for r in te if not str(r["variant"]).endswith(" s3")]
        s3 = [100 * r["overlap_efficiency"] for r in te if str(r["variant"]).endswith(" s3")]
        if seq is None or not s1 or not s3:
            return {}
        one.append(max(s1))
        three.append(max(s3))
        worse += max(s3) <= max(s1)
    out: Dict[str, object] = {"h8_te_ag_s3_not_better_n": worse}
    out["h8_te_ag_s1_e_lo"], out["h8_te_ag_s1_e_hi"] = lo_hi(one)
    out["h8_te_ag_s3_e_lo"], out["h8_te_ag_s3_e_hi"] = lo_hi(three)
    return out


def flux_facts(rows: Rows) -> Dict[str, object]:
    """FLUX's facts from the ``flux-op`` rows (every variant; each method's best per point is marked)."""
    br = best_rows(rows)
    out: Dict[str, object] = {}
    if not br:
        return out
    out.update(_pcie(br, "pcie_large", LARGE_M, ("gemm_rs", "ag_gemm")))  # every point at m = 1024-8192
    out.update(_pcie(br, "pcie_rs_mid", (512, 1024), ("gemm_rs",)))  # the GEMM+RS at m = 512-1024
    seq = _best(br, PCIE, "gemm_rs", 1024, "non-overlap")
    if seq is not None:
        out["pcie_rs1024_gemm_us"], out["pcie_rs1024_rs_us"] = seq["gemm_alone_us"], seq["ect_us"]
        out["pcie_rs1024_cap_pct"] = 100 * seq["gemm_alone_us"] / seq["ect_us"] if seq["ect_us"] > 0 else NAN
    # m = 64 AllGather+GEMM: Transformer Engine's chunk GEMMs each re-read B
    x = _chunked_gemm(br, "ag_gemm", 64, list(NODES.values()))
    out["te_ag64_over_gemm_lo"], out["te_ag64_over_gemm_hi"] = lo_hi(x.values())
    te64 = [r["total_us"] for r in br if r["direction"] == "ag_gemm" and r["m"] == 64 and r["method"] == "TE"]
    out["te_ag64_us_lo"], out["te_ag64_us_hi"] = lo_hi(te64)
    s = _best(br, NVL, "ag_gemm", 64, "non-overlap")
    out["nv_ag64_gemm_us"] = s["gemm_alone_us"] if s else NAN
    # H800 small-m GEMM+RS: FLUX's fused GEMM against the GEMM alone
    fx = [r["gemm_us"] / r["gemm_alone_us"] for r in br if r["system"] == H800 and r["direction"] == "gemm_rs"
          and r["m"] in SMALL_M and r["method"] == "FLUX" and r["gemm_alone_us"] > 0]
    out["h800_flux_rs_small_gemm_x"] = max(fx) if fx else NAN
    out["h800_flux_rs_small_gemm_pct"] = 100 * (max(fx) - 1) if fx else NAN
    # A100 NVLink AllGather+GEMM at m = 4096-8192: communication against the GEMM, and E
    big = [m for m in LARGE_M if m >= 4096]
    out["nv_ag_big_comm_lo"], out["nv_ag_big_comm_hi"] = lo_hi(_seq_ect(br, NVL, "ag_gemm", m) for m in big)
    out["nv_ag_big_gemm_lo"], out["nv_ag_big_gemm_hi"] = lo_hi(
        r["gemm_alone_us"] for r in br if r["system"] == NVL and r["direction"] == "ag_gemm" and r["m"] in big
        and r["method"] == "non-overlap")
    out["nv_ag_big_e_min"] = lo_hi(100 * r["overlap_efficiency"] for r in br if r["system"] == NVL and r["m"] in big
                                   and r["direction"] == "ag_gemm" and r["method"] in ("TE", "FLUX"))[0]
    # m = 64 GEMM+RS: the non-overlapped RS and its size-independent part (line through m = 64 and m = 512)
    shares = []
    for node, sysname in (("nv", NVL), ("h8", H800)):
        t64, t512 = _seq_ect(br, sysname, "gemm_rs", 64), _seq_ect(br, sysname, "gemm_rs", 512)
        fixed = (8 * t64 - t512) / 7 if fin(t64) and fin(t512) else NAN
        out[f"{node}_rs64_us"], out[f"{node}_rs_fixed_us"] = t64, fixed
        shares.append(fixed / t64 if fin(fixed) and t64 > 0 else NAN)
    out["rs64_fixed_share_min"] = min(shares) if all(fin(x) for x in shares) else NAN
    te = [_best(br, s, "gemm_rs", 64, "TE") for s in (NVL, H800)]
    out["te_rs64_e_lo"], out["te_rs64_e_hi"] = lo_hi(100 * r["overlap_efficiency"] for r in te if r)
    out["te_rs64_not_dma_n"] = sum(1 for r in te if r and not str(r["variant"]).startswith("chunked_dma")) if all(te) else NAN
    # Transformer Engine's AllGather steps at m = 1024
    for node, sysname in (("nv", NVL), ("h8", H800)):
        t, q = _best(br, sysname, "ag_gemm", 1024, "TE"), _best(br, sysname, "ag_gemm", 1024, "non-overlap")
        out[f"{node}_te_ag1024_us"] = t["total_us"] if t else NAN
        out[f"{node}_te_ag1024_e"] = 100 * t["overlap_efficiency"] if t else NAN
        out[f"{node}_ag1024_gemm_us"] = q["gemm_alone_us"] if q else NAN
    # Transformer Engine's GEMM+RS restricted to SM-driven chunks, against its best (copy engines included)
    gaps = []
    for node, sysname in (("nvlink", NVL), ("h800", H800)):
        sm, best = [], []
        for m in LARGE_M:
            v = [100 * r["overlap_efficiency"] for r in rows if (r["system"], r["direction"], r["m"], r["method"]) ==
                 (sysname, "gemm_rs", m, "TE") and str(r["variant"]).startswith("chunked x") and fin(r["overlap_efficiency"])]
            b = _best(br, sysname, "gemm_rs", m, "TE")
            if v and b is not None:
                sm.append(max(v))
                best.append(100 * b["overlap_efficiency"])
        out[f"te_sm_rs_e_lo_{node}"], out[f"te_sm_rs_e_hi_{node}"] = lo_hi(sm)
        out[f"te_rs_e_lo_{node}"], out[f"te_rs_e_hi_{node}"] = lo_hi(best)
        gaps.append(sum(best) / len(best) - sum(sm) / len(sm) if sm else NAN)
    out["te_sm_rs_gap_min"] = min(gaps) if all(fin(g) for g in gaps) else NAN
    out["te_ag2048_e_lo"], out["te_ag2048_e_hi"] = lo_hi(100 * r["overlap_efficiency"] for r in br if r["method"] == "TE"
                                                         and r["system"] in (NVL, H800) and r["direction"] == "ag_gemm"
                                                         and r["m"] >= 2048 and r["m"] in LARGE_M)
    for sysname in (PCIE, NVL, H800):
        for tag in MS:
            out.update(_lowest_flux(br, sysname, tag))
    out.update(_h800_ag_streams(rows, br))
    # H800 AllGather+GEMM at m = 4096-8192: FLUX over Transformer Engine
    r = []
    for m in big:
        t, f_ = _best(br, H800, "ag_gemm", m, "TE"), _best(br, H800, "ag_gemm", m, "FLUX")
        if t and f_ and f_["total_us"] > 0:
            r.append(t["total_us"] / f_["total_us"])
    out["h8_ag_big_flux_over_te_lo"], out["h8_ag_big_flux_over_te_hi"] = lo_hi(r)
    return out


# ---------------------------------------------------------------- FiCCO

TABLE_I = ("ficco-sp", "ficco-ep")


def _scored(rows: Rows, experiments: Sequence[str]) -> List[Dict[str, object]]:
    """Per scenario with all four dma schedules (as :func:`t3sim.analysis.ficco.heuristic_accuracy` scores):
    its shape, the heuristic's pick and t3sim's fastest schedule."""
    from t3sim.schemes.ficco.heuristic import SCHEDULES

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
