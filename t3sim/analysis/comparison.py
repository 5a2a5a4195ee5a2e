"""Per-case comparison of the Sec. 5.3 schemes and the paper's Sec. 6 figures (pure).

Input: run summaries (the ``summary`` dict of a :class:`~t3sim.results.store.RunResult`, or a
``summary.csv`` row): ``scheme, model, sublayer, tp, gemm_us, rs_us, ag_us, total_us`` (times in
microseconds) and ``{gemm,rs,ag}_{read,write,update}_MB`` (GPU 0's DRAM traffic in decimal MB,
the paper's Fig. 18 categories; a near-memory update counts as a write). Nothing here simulates.

A *case* is ``(model, sublayer, tp)``. Per case and scheme (all relative to that case's
``sequential`` point):

* ``speedup_pct``  = ``100 * (T_seq / T_scheme - 1)`` (paper Fig. 16: "speedup of 30 %");
* ``dram_red_pct`` = ``100 * (1 - B_scheme / B_seq)``, ``B`` = all GEMM+RS+AG DRAM bytes;
* ``rs_read_x``    = RS reads, sequential / scheme (paper: "RS's reads reduce by 2.4x");
* ``wr_red_pct``   = ``100 * (1 - W_scheme / W_seq)``, ``W`` = GEMM+RS writes and updates;
* ``gemm_read_x``  = GEMM reads, sequential / scheme;
* ``rs_nmc_pct``   = ``100 * (RS_seq / RS_scheme - 1)``, the isolated RS speedup (ideal_rs_nmc).

Aggregates over cases: geometric mean of the ratios (reported back in the same unit, e.g.
``100 * (geomean(T_seq / T) - 1)``) and the maximum. ``diff_pts`` = t3sim - paper in
percentage points; for ``x`` ratios both are first turned into a reduction
``100 * (1 - 1/x)`` so that every difference is in points.
"""

from __future__ import annotations

import csv
import io
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from t3sim.analysis.paper_numbers import BY_KEY, PaperNumber
from t3sim.analysis.runs import f

SCHEMES = ("sequential", "t3", "t3_mca", "ideal_gemm_rs_overlap", "ideal_rs_nmc")
CaseKey = Tuple[str, str, int]
#: points above which a t3sim aggregate is flagged as differing from the paper
FLAG_PTS = 5.0


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


@dataclass(frozen=True)
class PaperFigure:
    """One number stated in the paper's Sec. 6 text, computed over the sixteen cases.

    ``key`` names it in :data:`t3sim.analysis.paper_numbers.NUMBERS`, which holds the paper's value,
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


def metric_points(metric: str, v: float) -> float:
    """A metric value in points (ratios -> reduction percent) for differences."""
    return 100.0 * (1.0 - 1.0 / v) if metric.endswith("_x") else v


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


def ordering_violations(metrics: Mapping[str, Mapping[str, float]], tol: float) -> List[str]:
    """The schemes' expected ordering on one case's :func:`case_metrics`: sequential slower than t3; t3_mca no
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


def write_csv_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temporary sibling and one ``os.replace`` (readers never see half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
