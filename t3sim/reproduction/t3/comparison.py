"""The T3 paper's Sec. 6 figures over the sixteen sliced sub-layers: t3sim's aggregates beside the paper's (pure).

Per-case metrics and their aggregates are :mod:`t3sim.analysis.comparison`'s; here each number the paper states
over the cases (:data:`PAPER`, keyed into :data:`t3sim.reproduction.t3.numbers.NUMBERS`) is aggregated from
them, and printed as ``t3sim run`` shows it after a sweep with several schemes per case. ``diff_pts`` = t3sim -
paper in percentage points; for ``x`` ratios both are first turned into a reduction ``100 * (1 - 1/x)`` so that
every difference is in points (:func:`t3sim.reproduction.stated.metric_points`).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from t3sim.analysis.comparison import CaseKey, aggregate, case_metrics, group_cases
from t3sim.reproduction.stated import FLAG_PTS, PaperNumber, metric_points
from t3sim.reproduction.t3.numbers import BY_KEY


@dataclass(frozen=True)
class PaperFigure:
    """One number stated in the paper's Sec. 6 text, computed over the sixteen cases.

    ``key`` names it in :data:`t3sim.reproduction.t3.numbers.NUMBERS`, which holds the paper's value,
    section and quote (one table of the paper's numbers, not two); ``agg`` is ``geomean`` or ``max``;
    ``tp`` restricts the cases (None: all).
    """

    label: str
    scheme: str
    metric: str
    agg: str
    key: str
    tp: Optional[int] = None

    @property
    def number(self) -> PaperNumber:
        return BY_KEY[self.key]

    @property
    def paper(self) -> float:
        return float(self.number.value)

    @property
    def unit(self) -> str:
        return "x" if self.number.kind.endswith("_x") else "%"

    @property
    def source(self) -> str:
        return self.number.section


F = PaperFigure
PAPER: Tuple[PaperFigure, ...] = (
    F("Ideal-GEMM-RS-Overlap speedup", "ideal_gemm_rs_overlap", "speedup_pct", "geomean", "s611_ideal_geo"),
    F("Ideal-GEMM-RS-Overlap speedup", "ideal_gemm_rs_overlap", "speedup_pct", "max", "s611_ideal_max"),
    F("Ideal-RS+NMC over Ideal-Overlap", "ideal_rs_nmc", "over_ideal_pct", "max", "s611_nmc_extra_max"),
    F("RS speedup from NMC, TP=8", "ideal_rs_nmc", "rs_nmc_pct", "geomean", "s611_nmc_rs_8", 8),
    F("RS speedup from NMC, TP=16", "ideal_rs_nmc", "rs_nmc_pct", "geomean", "s611_nmc_rs_16", 16),
    F("T3 speedup", "t3", "speedup_pct", "geomean", "s612_t3_geo"),
    F("T3 speedup", "t3", "speedup_pct", "max", "s612_t3_max"),
    F("T3-MCA speedup", "t3_mca", "speedup_pct", "geomean", "s613_mca_geo"),
    F("T3-MCA speedup", "t3_mca", "speedup_pct", "max", "s613_mca_max"),
    F("T3-MCA over T3", "t3_mca", "over_t3_pct", "geomean", "s613_mca_over_t3_geo"),
    F("T3-MCA over T3", "t3_mca", "over_t3_pct", "max", "s613_mca_over_t3_max"),
    F("DRAM traffic reduction", "t3_mca", "dram_red_pct", "geomean", "s62_dram_geo"),
    F("DRAM traffic reduction", "t3_mca", "dram_red_pct", "max", "s62_dram_max"),
    F("RS reads reduction", "t3_mca", "rs_read_x", "geomean", "s62_rs_rd"),
    F("RS reads reduction, TP=8", "t3_mca", "rs_read_x", "geomean", "s62_rs_rd_8", 8),
    F("RS reads reduction, TP=16", "t3_mca", "rs_read_x", "geomean", "s62_rs_rd_16", 16),
    F("GEMM+RS writes reduction", "t3_mca", "wr_red_pct", "geomean", "s62_wr"),
    F("GEMM+RS writes reduction, TP=8", "t3_mca", "wr_red_pct", "geomean", "s62_wr_8", 8),
    F("GEMM+RS writes reduction, TP=16", "t3_mca", "wr_red_pct", "geomean", "s62_wr_16", 16),
    F("GEMM reads reduction", "t3_mca", "gemm_read_x", "geomean", "s62_gemm_rd"),
    F("GEMM reads reduction, TP=8", "t3_mca", "gemm_read_x", "geomean", "s62_gemm_rd_8", 8),
    F("GEMM reads reduction, TP=16", "t3_mca", "gemm_read_x", "geomean", "s62_gemm_rd_16", 16),
)

#: per-case numbers the paper states in its text (Sec. 6.1.1): (model, sublayer, tp, scheme) -> paper_numbers key
PAPER_CASE_KEYS: Dict[Tuple[str, str, int, str], str] = {
    ("t-nlg", "FC-1", 16, "ideal_gemm_rs_overlap"): "s611_tnlg_fc1_16",
    ("mega-gpt-2", "OP", 16, "ideal_gemm_rs_overlap"): "s611_mega_op_16",
}
#: the same, with the paper's values (speedup %)
PAPER_CASES: Dict[Tuple[str, str, int, str], float] = {c: float(BY_KEY[k].value) for c, k in PAPER_CASE_KEYS.items()}


@dataclass
class Comparison:
    """Per-case metrics and the Sec. 6 aggregates of one sweep."""

    cases: Dict[CaseKey, Dict[str, Dict[str, float]]]
    summary: List[Dict[str, object]]

    @property
    def flagged(self) -> List[Dict[str, object]]:
        """Summary rows whose t3sim value differs from the paper's by more than :data:`FLAG_PTS` points."""
        return [r for r in self.summary if isinstance(r["diff_pts"], float) and abs(r["diff_pts"]) > FLAG_PTS]


def compare(summaries: Iterable[Mapping]) -> Comparison:
    """Group ``summaries`` by case and compute every per-case metric and paper aggregate."""
    cases = {k: case_metrics(v) for k, v in sorted(group_cases(summaries).items())}
    cases = {k: v for k, v in cases.items() if v}
    rows: List[Dict[str, object]] = []
    for pf in PAPER:
        vals = [m[pf.scheme][pf.metric] for (_, _, tp), m in cases.items()
                if pf.scheme in m and pf.metric in m[pf.scheme] and (pf.tp is None or tp == pf.tp)]
        v = aggregate(vals, pf.metric, pf.agg)
        diff = metric_points(pf.metric, v) - metric_points(pf.metric, pf.paper) if math.isfinite(v) else ""
        rows.append({"figure": pf.label, "scheme": pf.scheme, "metric": pf.metric, "agg": pf.agg, "unit": pf.unit,
                     "paper": pf.paper, "t3sim": v, "diff_pts": diff, "cases": len(vals), "source": pf.source})
    return Comparison(cases, rows)


# ---------------------------------------------------------------------- output
CASE_COLS = (("t3", "speedup_pct"), ("t3_mca", "speedup_pct"), ("ideal_gemm_rs_overlap", "speedup_pct"),
             ("ideal_rs_nmc", "speedup_pct"), ("t3_mca", "dram_red_pct"), ("t3_mca", "rs_read_x"),
             ("t3_mca", "wr_red_pct"), ("t3_mca", "gemm_read_x"))
CASE_HEAD = ("T3 %", "MCA %", "IdealOv %", "IdealNMC %", "DRAM-red %", "RSrd x", "GRSwr-red %", "GEMMrd x")


def _fmt(v, unit: str = "%") -> str:
    if v == "" or v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.2f}x" if unit == "x" else f"{v:+.1f}"


def _grid(cells: List[List[str]], left: int) -> str:
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]]) + "\n"


def format_tables(c: Comparison) -> str:
    """The per-case table and the paper-figure table as fixed-width text."""
    cells = [["model", "sublayer", "TP", "seq us", *CASE_HEAD, "paper (text)"]]
    for (model, sub, tp), m in c.cases.items():
        row = [model, sub, str(tp), f"{m['sequential']['total_us']:.1f}"]
        for s, k in CASE_COLS:
            row.append(_fmt(m.get(s, {}).get(k, ""), "x" if k.endswith("_x") else "%"))
        stated = [f"{s} {v:+.0f}" for (mm, ss, tt, s), v in PAPER_CASES.items() if (mm, ss, tt) == (model, sub, tp)]
        row.append(", ".join(stated) or "")
        cells.append(row)
    out = "Per case (speedups over sequential, %; DRAM reductions vs sequential for T3-MCA):\n" + _grid(cells, 3)
    cells = [["paper figure (Sec.)", "agg", "cases", "paper", "t3sim", "diff pts", ""]]
    for r in c.summary:
        u = str(r["unit"])
        cells.append([f"{r['figure']} ({r['source']})", str(r["agg"]), str(r["cases"]),
                      _fmt(float(r["paper"]), u) if u == "x" else f"{float(r['paper']):.0f}",
                      _fmt(r["t3sim"], u), _fmt(r["diff_pts"]),
                      "*" if r in c.flagged else ""])
    out += f"\nBeside the paper (diff in points; ratios compared as reductions; * = more than {FLAG_PTS:.0f} points):\n"
    return out + _grid(cells, 2)


def to_csv(c: Comparison) -> str:
    """Long-format CSV: one row per (case or aggregate, scheme, metric)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["table", "model", "sublayer", "tp", "scheme", "metric", "agg", "unit", "t3sim", "paper", "diff_pts"])
    for (model, sub, tp), m in c.cases.items():
        for s, vals in m.items():
            for k, v in vals.items():
                p = PAPER_CASES.get((model, sub, tp, s)) if k == "speedup_pct" else None
                w.writerow(["case", model, sub, tp, s, k, "", "x" if k.endswith("_x") else ("us" if k == "total_us"
                            else "%"), f"{v:.6g}", "" if p is None else p, "" if p is None else f"{v - p:.6g}"])
    for r in c.summary:
        d = r["diff_pts"]
        w.writerow(["paper", "", "", "" if "TP=" not in str(r["figure"]) else str(r["figure"]).split("TP=")[1],
                    r["scheme"], r["metric"], r["agg"], r["unit"], f"{r['t3sim']:.6g}", r["paper"],
                    f"{d:.6g}" if isinstance(d, float) else ""])
    return buf.getvalue()
