"""The T3 section's values: t3sim's value of every number the T3 paper states, from the experiments' runs and the
validation CSV (pure; reads results files only).

:func:`metrics` returns ``{key: t3sim value}`` for the keys of :data:`t3sim.reproduction.t3.numbers.NUMBERS`
(NaN, or absent, where an experiment has no results): Secs. 6.1-6.2 from the sixteen sub-layer cases
(:mod:`t3sim.reproduction.t3.comparison`), Secs. 2.4 and 6.3-6.4 from the end-to-end model, Sec. 3.2.1 from the
CU-sharing runs, Sec. 5.1.1 from the validation CSV and Sec. 7.5 from the 2x-CU runs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from t3sim.analysis.comparison import geomean_speedup_pct
from t3sim.analysis.runs import Run, f
from t3sim.analysis.tables import fin, geomean, mean_by
from t3sim.reproduction.inputs import Inputs
from t3sim.reproduction.t3.comparison import PAPER, PAPER_CASE_KEYS, compare
from t3sim.reproduction.t3.figs_study import fig04_rows, fig06_rows, fig14_geomean_error_pct, fig14_rows, fig19_rows
from t3sim.reproduction.t3.figs_sublayer import fig20_rows
from t3sim.reproduction.t3.numbers import LARGE, SMALL


def _max(vals) -> float:
    v = [x for x in vals if fin(x)]
    return max(v) if v else math.nan


def metrics(inp: Inputs) -> Dict[str, object]:
    """``{T3 numbers key: t3sim value}`` (NaN where the experiment has no results)."""
    out: Dict[str, object] = {}
    # Sec. 6.1-6.2 from the sixteen cases
    sub = inp.get("t3-sublayers")
    if sub:
        c = compare([r.summary for r in sub])
        for row, pf in zip(c.summary, PAPER):
            out[pf.key] = row["t3sim"]
        for ck, key in PAPER_CASE_KEYS.items():
            m = c.cases.get(ck[:3], {})
            out[key] = m.get(ck[3], {}).get("speedup_pct", math.nan)
        out["s613_gap_to_ideal"] = (out.get("s611_ideal_geo", math.nan) - out.get("s613_mca_geo", math.nan))
    # Sec. 2.4 and 6.3-6.4 (end to end)
    both = sub + inp.get("fig19")
    if both:
        rows = fig04_rows(both)
        out["s24_comm_mega_max"] = _max(r["comm_pct"] for r in rows if r["model"] == "mega-gpt-2")
        out["s24_comm_tnlg_max"] = _max(r["comm_pct"] for r in rows if r["model"] == "t-nlg")
        out["s24_comm_large_max"] = _max(r["comm_pct"] for r in rows if r["model"] in LARGE)
        out["s24_comm_gemm2x"] = _max(r["comm_pct_gemm_2x_faster"] for r in rows)
        att = [r["attention_pct"] for r in rows if r["model"] in SMALL and r["phase"] == "training"]
        out["s63_attention_share"] = sum(att) / len(att) if att else math.nan
        e = fig19_rows(both)
        for phase, tag in (("training", "train"), ("prompt", "prompt")):
            for s, st in (("t3", "t3"), ("t3_mca", "mca")):
                v = [r["end_to_end_speedup_pct"] for r in e if r["phase"] == phase and r["scheme"] == s and r["model"] in SMALL]
                out[f"s63_{tag}_{st}_max"] = _max(v)
                out[f"s63_{tag}_{st}_geo"] = geomean_speedup_pct(v)
            v = [r["end_to_end_speedup_pct"] for r in e if r["phase"] == phase and r["scheme"] == "t3_mca" and r["model"] in LARGE]
            out[f"s64_{tag}_max"] = _max(v)
        layer = _layer_speedups(inp.get("fig19"), "t3_mca")
        out["s64_layer_max"] = _max(layer)
        out["s64_layer_geo"] = geomean_speedup_pct(layer)
    # Sec. 3.2.1
    rows = fig06_rows(inp.get("fig06"))
    if rows:
        def sel(split, key):
            return [r[key] for r in rows if r["split"] == split]
        splits = {r["split"] for r in rows} - {"Ideal"}
        s8 = next((s for s in splits if s.endswith("-8")), None)
        s16 = next((s for s in splits if s.endswith("-16")), None)
        out["s321_ideal_pos"] = geomean(sel("Ideal", "potential_overlap_speedup"))
        if s8:
            out["s321_ar_slow_8"] = 100 * (geomean(sel(s8, "ar_norm")) - 1)
            out["s321_pos_72_8"] = geomean(sel(s8, "potential_overlap_speedup"))
        if s16:
            out["s321_ar_slow_16"] = 100 * (geomean(sel(s16, "ar_norm")) - 1)
            out["s321_gemm_slow_64"] = 100 * (geomean(sel(s16, "gemm_norm")) - 1)
            out["s321_pos_64_16"] = geomean(sel(s16, "potential_overlap_speedup"))
    # Sec. 5.1.1
    if inp.validation_csv is not None and Path(inp.validation_csv).is_file():
        out["s511_rs_error"] = fig14_geomean_error_pct(fig14_rows(inp.validation_csv))
    # Sec. 7.5
    r20 = fig20_rows(inp.get("fig20"), sub)
    if r20:
        for key, s in (("s75_fc2_benefit", "FC-2"), ("s75_op_benefit", "OP")):
            d = mean_by(r20, "t3_mca_speedup_pct_2x", {"sublayer": s}) - mean_by(r20, "t3_mca_speedup_pct_1x", {"sublayer": s})
            out[key] = d
        out["s75_ratio"] = (sum(r["gemm_rs_ratio_2x"] for r in r20) / len(r20)
                            - sum(r["gemm_rs_ratio_1x"] for r in r20) / len(r20))
    return out


def _layer_speedups(runs: Sequence[Run], scheme: str) -> List[float]:
    by: Dict[Tuple[str, str, int], Dict[str, Run]] = {}
    for r in runs:
        by.setdefault((r.model, r.sublayer, r.tp), {})[r.scheme] = r
    return [100 * (f(v["sequential"].summary, "total_us") / f(v[scheme].summary, "total_us") - 1)
            for v in by.values() if "sequential" in v and scheme in v]
