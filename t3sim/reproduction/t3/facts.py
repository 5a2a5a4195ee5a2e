"""The T3 section's measured quantities that the explanations' claims quote and check (pure; reads figure tables
only).

Facts come from *tables*: the rows each figure plots and writes as ``<stem>.csv`` (``fig04`` ... ``fig20``,
``sweep-mca``). ``t3sim reproduce`` computes them from the runs (:func:`t3sim.reproduction.catalog.tables`); a
committed snapshot gives them back from its figure CSVs (:func:`t3sim.analysis.tables.read_tables`), so the same
facts are checked either way. Each paper keeps its own facts beside its claims: ``t3sim.reproduction.<paper>.facts``.

Every fact is a number (NaN where the tables lack it) or a short label (a case name); names are distinct from
the stated numbers' keys, which are facts too (t3sim's values), beside ``P_<key>`` (the paper's).
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Sequence

from t3sim.analysis.runs import case_label, model_name
from t3sim.analysis.tables import NAN, Rows, Tables, fin, geomean, lo_hi
from t3sim.reproduction.t3.numbers import LARGE, SMALL

#: sub-layers per model in the sweeps (a model with fewer results lacks some)
SUBLAYERS = 4


def _case(r: Mapping) -> str:
    return case_label(str(r["model"]), str(r["sublayer"]), int(r["tp"]))


# ---------------------------------------------------------------- per figure

def _sweep_mca(rows: Rows) -> Dict[str, object]:
    """T3's GEMM time against Sequential's, per sub-layer of the MCA sweep at TP=8 (T-NLG; the TP=32 points of
    ``experiments/sweep-mca/tp32.yaml`` share the results folder and are left out): its largest slowdown and its
    largest speed-up. Rows pair by (model, sub-layer, TP)."""
    rows = [r for r in rows if int(r["tp"]) == 8]
    seq = {_case(r): r for r in rows if r.get("scheme") == "sequential"}
    ch = []
    for r in rows:
        s = seq.get(_case(r))
        if r.get("scheme") == "t3" and s is not None and fin(r["gemm_us"]) and fin(s["gemm_us"]) and s["gemm_us"] > 0:
            ch.append((100 * (r["gemm_us"] / s["gemm_us"] - 1), _case(r), s["gemm_us"], r["gemm_us"]))
    if not ch:
        return {}
    hi, lo = max(ch), min(ch)
    return {"t3_gemm_slow_pct": hi[0], "t3_gemm_slow_case": hi[1], "t3_gemm_slow_seq_us": hi[2],
            "t3_gemm_slow_t3_us": hi[3], "t3_gemm_fast_pct": lo[0], "t3_gemm_fast_case": lo[1],
            "t3_gemm_fast_seq_us": lo[2], "t3_gemm_fast_t3_us": lo[3]}


def _fig16(rows: Rows) -> Dict[str, object]:
    """OP at TP=16: where T3-MCA trails T3 the most."""
    op = [(r["t3_mca_speedup_pct"] - r["t3_speedup_pct"], r) for r in rows if r["sublayer"] == "OP" and r["tp"] == 16
          and fin(r["t3_mca_speedup_pct"]) and fin(r["t3_speedup_pct"])]
    if not op:
        return {}
    d, r = min(op, key=lambda x: x[0])
    return {"op16_mca_minus_t3": d, "op16_case": _case(r), "op16_t3_pct": r["t3_speedup_pct"],
            "op16_mca_pct": r["t3_mca_speedup_pct"]}


def _fig18(rows: Rows) -> Dict[str, object]:
    """GEMM reads under Sequential against T3-MCA (TP=16: where they are the same), and the case of the largest
    DRAM-traffic reduction with its GEMM-read ratio."""
    by: Dict[tuple, Dict[str, Mapping]] = {}
    for r in rows:
        by.setdefault((r["model"], r["sublayer"], r["tp"]), {})[r["scheme"]] = r
    pairs = [(k, v["sequential"], v["t3_mca"]) for k, v in by.items() if "sequential" in v and "t3_mca" in v
             and fin(v["t3_mca"]["GEMM_reads_MB"]) and v["t3_mca"]["GEMM_reads_MB"] > 0]
    if not pairs:
        return {}
    out: Dict[str, object] = {}
    tp16 = [(s["GEMM_reads_MB"] / t["GEMM_reads_MB"], s) for k, s, t in pairs if k[2] == 16]
    same = [(x, s) for x, s in tp16 if x <= 1.05]
    out["gemm_rd16_n"], out["gemm_rd16_same_n"] = len(tp16), len(same)
    out["gemm_rd16_same_share"] = len(same) / len(tp16) if tp16 else NAN
    ex = max(same, key=lambda x: x[1]["GEMM_reads_MB"])[1] if same else None
    out["gemm_rd16_case"], out["gemm_rd16_MB"] = (_case(ex), ex["GEMM_reads_MB"]) if ex else ("none", NAN)
    k, s, t = min(pairs, key=lambda p: p[2]["normalized_to_sequential"])
    out["dram_max_case"] = case_label(*k)
    out["dram_max_gemm_rd_x"] = s["GEMM_reads_MB"] / t["GEMM_reads_MB"]
    return out


def _fig19(rows: Rows) -> Dict[str, object]:
    """TP=32: T3-MCA's sub-layer geomean against T3's per model, and the models lacking sub-layer results."""
    big = [r for r in rows if r["tp"] == 32]
    geo: Dict[str, Dict[str, float]] = {}
    n: Dict[str, Dict[str, int]] = {}
    for r in big:
        geo.setdefault(r["model"], {})[r["scheme"]] = r["sublayer_geomean_speedup_pct"]
        n.setdefault(r["model"], {})[r["scheme"]] = int(r["sublayers"])
    both = {m: g for m, g in geo.items() if fin(g.get("t3")) and fin(g.get("t3_mca"))}
    if not both:
        return {}
    out: Dict[str, object] = {"tp32_mca_minus_t3_max": max(g["t3_mca"] - g["t3"] for g in both.values())}
    out["tp32_t3_lo"], out["tp32_t3_hi"] = lo_hi(g["t3"] for g in both.values())
    out["tp32_mca_lo"], out["tp32_mca_hi"] = lo_hi(g["t3_mca"] for g in both.values())
    lacking = [f"{model_name(m)} (T3 {c.get('t3', 0)}, T3-MCA {c.get('t3_mca', 0)} of {SUBLAYERS})"
               for m, c in n.items() if min(c.get("t3", 0), c.get("t3_mca", 0)) < SUBLAYERS]
    out["tp32_incomplete_n"] = len(lacking)
    out["tp32_incomplete"] = "; ".join(lacking) or "none"
    mca = [r for r in big if r["scheme"] == "t3_mca" and r["phase"] == "training" and fin(r.get("ideal_sublayer_geomean_pct"))]
    if mca:  # per model: T3-MCA's sub-layer geomean against the ideal overlap of its Sequential phase times
        out["tp32_mca_minus_ideal_max"] = max(r["sublayer_geomean_speedup_pct"] - r["ideal_sublayer_geomean_pct"] for r in mca)
        out["tp32_ideal_lo"], out["tp32_ideal_hi"] = lo_hi(r["ideal_sublayer_geomean_pct"] for r in mca)
        out["tp32_slow_lo"] = min(float(r["gemm_slowdown_min_pct"]) for r in mca)
        out["tp32_slow_hi"] = max(float(r["gemm_slowdown_max_pct"]) for r in mca)
    return out


def _fig06(rows: Rows) -> Dict[str, object]:
    """The ideal split's GEMM:AR time ratios and balance, and the 8-CU AR's time over the 80-CU AR's."""
    ideal = [r for r in rows if r["split"] == "Ideal" and fin(r["ar_us"]) and r["ar_us"] > 0]
    out: Dict[str, object] = {}
    if ideal:
        by_sub: Dict[str, List[float]] = {}
        for r in ideal:
            by_sub.setdefault(str(r["sublayer"]), []).append(r["gemm_us"] / r["ar_us"])
        out["ideal_ratios"] = ", ".join(f"{' / '.join(f'{x:.2f}' for x in v)} ({s})" for s, v in by_sub.items())
        ratios = [r["gemm_us"] / r["ar_us"] for r in ideal]
        out["ideal_balance_geo"] = geomean([min(x, 1 / x) for x in ratios if x > 0])
        out["ideal_pos_lo"], out["ideal_pos_hi"] = lo_hi(r["potential_overlap_speedup"] for r in ideal)
    s8 = [r["ar_norm"] for r in rows if str(r["split"]).endswith("-8")]
    out["ar8_norm_lo"], out["ar8_norm_hi"] = lo_hi(s8)
    return out


def _fig15(rows: Rows, model: str = "t-nlg", sublayer: str = "FC-1", tp: int = 16) -> Dict[str, object]:
    """Sequential phase times of the case Sec. 6.1.1 names, and the ideal overlap's bound from them:
    (GEMM + RS + AG) / (max(GEMM, RS) + AG)."""
    r = next((r for r in rows if (r["model"], r["sublayer"], r["tp"]) == (model, sublayer, tp)), None)
    if r is None:
        return {}
    g, rs, ag = float(r["gemm_us"]), float(r["rs_us"]), float(r["ag_us"])
    seq, ideal = g + rs + ag, max(g, rs) + ag
    return {"fc1_16_gemm_us": g, "fc1_16_rs_us": rs, "fc1_16_ag_us": ag, "fc1_16_seq_us": seq,
            "fc1_16_ideal_us": ideal, "fc1_16_bound_x": seq / ideal, "fc1_16_bound_pct": 100 * (seq / ideal - 1),
            "fc1_16_gemm_over_rs": g / rs if rs > 0 else NAN}


def _rs_over_link(rows: Rows) -> Dict[str, object]:
    """Per TP: how far the Sequential RS runs above its link-bound time (%, fig15's ``rs_link_bound_us``):
    lowest, highest and geomean over the cases (the time a faster RS, e.g. NMC's, can remove without faster links)."""
    out: Dict[str, object] = {}
    for tp in (8, 16):
        over = [100 * (float(r["rs_us"]) / float(r["rs_link_bound_us"]) - 1) for r in rows
                if r["tp"] == tp and fin(r.get("rs_link_bound_us")) and float(r["rs_link_bound_us"]) > 0]
        out[f"rs_over_link_{tp}_lo"], out[f"rs_over_link_{tp}_hi"] = lo_hi(over)
        out[f"rs_over_link_{tp}_geo"] = 100 * (geomean([1 + x / 100 for x in over]) - 1) if over else NAN
    return out


PARTS = ("sliced_gemm_pct", "rs_pct", "ag_pct", "other_gemm_pct", "attention_pct", "other_pct")


def _fig04(rows: Rows, large: Sequence[str], small: Sequence[str] = SMALL) -> Dict[str, object]:
    """Communication against sliced-GEMM shares where T-NLG's and the large models' communication shares peak,
    the largest shares (before and after halving GEMM time), the largest communication share that halving only
    the GEMM parts (sliced and other GEMMs) of each row's breakdown gives, and the small models' training
    attention time over their sliced-GEMM time (largest)."""
    out: Dict[str, object] = {}
    full = [r for r in rows if all(fin(r.get(k)) for k in PARTS)]
    halved = [100 * (r["rs_pct"] + r["ag_pct"])
              / (sum(r[k] for k in PARTS) - (r["sliced_gemm_pct"] + r["other_gemm_pct"]) / 2) for r in full]
    out["gemm2x_gemms_only"] = max(halved, default=NAN)
    att = [r["attention_pct"] / r["sliced_gemm_pct"] for r in full
           if r["model"] in small and r["phase"] == "training" and r["sliced_gemm_pct"] > 0]
    out["attention_over_sliced_max"] = max(att, default=NAN)

    def peak(sel):
        rs = [r for r in rows if sel(r) and fin(r["comm_pct"])]
        return max(rs, key=lambda r: r["comm_pct"]) if rs else None

    t, g = peak(lambda r: r["model"] == "t-nlg"), peak(lambda r: r["model"] in large)
    if t is not None and g is not None and t["sliced_gemm_pct"] > 0 and g["sliced_gemm_pct"] > 0:
        rt, rg = t["comm_pct"] / t["sliced_gemm_pct"], g["comm_pct"] / g["sliced_gemm_pct"]
        out.update({"comm_tnlg_case": f"{model_name(t['model'])} TP={t['tp']} {t['phase']}",
                    "comm_large_case": f"{model_name(g['model'])} TP={g['tp']} {g['phase']}",
                    "comm_tnlg_gemm_ratio": rt, "comm_large_gemm_ratio": rg, "comm_gemm_change_x": rg / rt})
    c = max((r["comm_pct"] for r in rows if fin(r["comm_pct"])), default=NAN) / 100
    out["comm_share_max"] = 100 * c
    out["gemm2x_t3_bound"] = 100 * 2 * c / (1 + c)  # every non-communication part a GEMM, halved
    return out


def _fig20(rows: Rows) -> Dict[str, object]:
    """FC-2 with 2x CUs per TP: GEMM/RS ratios at 1x CUs and T3-MCA's speedup change (points)."""
    out: Dict[str, object] = {}
    for tp in (8, 16):
        rs = [r for r in rows if r["sublayer"] == "FC-2" and r["tp"] == tp]
        out[f"fc2_{tp}_ratio_lo"], out[f"fc2_{tp}_ratio_hi"] = lo_hi(r["gemm_rs_ratio_1x"] for r in rs)
        out[f"fc2_{tp}_delta_lo"], out[f"fc2_{tp}_delta_hi"] = lo_hi(
            r["t3_mca_speedup_pct_2x"] - r["t3_mca_speedup_pct_1x"] for r in rs)
    return out


def t3_facts(tables: Tables, values: Mapping[str, object], numbers: Sequence = ()) -> Dict[str, object]:
    """The T3 section's facts from the figure tables, and those derived from its values (t3sim's and the
    paper's: ``numbers``, the :class:`~t3sim.reproduction.stated.PaperNumber` s)."""
    out: Dict[str, object] = {}
    out.update(_sweep_mca(tables.get("sweep-mca", ())))
    out.update(_fig16(tables.get("fig16", ())))
    out.update(_fig18(tables.get("fig18", ())))
    out.update(_fig19(tables.get("fig19", ())))
    out.update(_fig06(tables.get("fig06", ())))
    out.update(_fig15(tables.get("fig15", ())))
    out.update(_rs_over_link(tables.get("fig15", ())))
    out.update(_fig04(tables.get("fig04", ()), LARGE))
    out.update(_fig20(tables.get("fig20", ())))
    paper = {n.key: float(n.value) for n in numbers if n.kind != "direction"}
    v = {k: float(x) for k, x in values.items() if fin(x)}
    for tp in (8, 16):  # where NMC's faster RS lands against the link bound
        over, k = out.get(f"rs_over_link_{tp}_geo", NAN), f"s611_nmc_rs_{tp}"
        if fin(over) and k in v:
            out[f"nmc_over_link_{tp}"] = 100 * ((1 + over / 100) / (1 + v[k] / 100) - 1)
    if "fc1_16_bound_pct" in out and "s611_tnlg_fc1_16" in v:
        out["fc1_16_bound_gap_abs"] = abs(out["fc1_16_bound_pct"] - v["s611_tnlg_fc1_16"])
    if "s24_comm_large_max" in v and "s24_comm_large_max" in paper:
        c, p = v["s24_comm_large_max"] / 100, paper["s24_comm_large_max"] / 100
        out["comm_needed_x"] = p * (1 - c) / (c * (1 - p)) if 0 < c < 1 and p < 1 else NAN
    if "s24_comm_gemm2x" in v and fin(out.get("gemm2x_gemms_only")):
        out["gemm2x_gemms_only_gap_abs"] = abs(v["s24_comm_gemm2x"] - out["gemm2x_gemms_only"])
    stated = [paper[k] for k in ("s24_comm_mega_max", "s24_comm_tnlg_max", "s24_comm_large_max",
                                 "s24_comm_future_max") if k in paper]
    if stated:
        c = max(stated) / 100
        out["gemm2x_paper_share"], out["gemm2x_paper_bound"] = 100 * c, 100 * 2 * c / (1 + c)
    if "s321_ideal_pos" in paper:
        out["paper_balance_needed"] = paper["s321_ideal_pos"] - 1  # max(a,b) + min(a,b) over max(a,b) = 1 + balance
    if "s321_ar_slow_8" in paper:
        out["paper_ar8_norm"] = 1 + paper["s321_ar_slow_8"] / 100
    for ideal, ks in (("s611_ideal_geo", ("s612_t3_geo", "s613_mca_geo")), ("s611_ideal_max", ("s612_t3_max", "s613_mca_max"))):
        for k in ks:
            if ideal in v and k in v:
                out[f"{k}_minus_ideal"] = v[k] - v[ideal]
    return out
