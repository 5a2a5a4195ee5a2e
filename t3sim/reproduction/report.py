"""The reproduction report: t3sim's value beside every number each paper states (pure; writes no file).

One section per paper (T3, FLUX, FiCCO, the fused GPU-initiated kernels), each from its package
``t3sim.reproduction.<paper>``: its stated numbers (``numbers``), t3sim's values, its explanations' claims
(``explanations``) and the facts they are checked against (``facts``, :func:`section_facts`).
:func:`compare_number` puts t3sim's value beside the paper's; :func:`table_rows` gives a section's rows, each
flagged row with its checked cause; :func:`render` writes ``REPRODUCTION.md``'s text (with one generated line: the
model version its sections were simulated with and which are current, :mod:`t3sim.reproduction.freshness`) and
:func:`all_rows` ``reproduction.csv``'s rows.
"""

from __future__ import annotations

import math
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from t3sim import __version__
from t3sim.analysis.claims import Claim, check, row_facts
from t3sim.reproduction.ficco import numbers as ficco_numbers
from t3sim.reproduction.ficco.explanations import FICCO_EXPLANATIONS
from t3sim.reproduction.ficco.facts import ficco_facts
from t3sim.reproduction.flux import numbers as flux_numbers
from t3sim.reproduction.flux.explanations import FLUX_EXPLANATIONS
from t3sim.reproduction.flux.facts import flux_facts
from t3sim.reproduction.freshness import Entry, header_line
from t3sim.reproduction.fused import numbers as fused_numbers
from t3sim.reproduction.fused.explanations import FUSED_EXPLANATIONS
from t3sim.reproduction.fused.facts import fused_facts
from t3sim.reproduction.stated import FLAG_PTS, PaperNumber, metric_points
from t3sim.reproduction.t3 import endtoend as e2e
from t3sim.reproduction.t3.explanations import EXPLANATIONS, NOT_REPRODUCIBLE
from t3sim.reproduction.t3.facts import t3_facts
from t3sim.reproduction.t3.numbers import NUMBERS


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def compare_number(n: PaperNumber, v) -> Tuple[str, str, Optional[float], bool]:
    """(t3sim text, difference text, difference in points or None, flagged)."""
    if n.key in NOT_REPRODUCIBLE:
        return "n/a", "", None, False
    if n.kind == "direction":
        if not _finite(v):
            return "not run", "", None, False
        got = "higher" if v > 0 else "lower"
        agrees = got == n.value
        return f"{got} ({v:+.2f})", "agrees" if agrees else "disagrees", None, not agrees
    if not _finite(v):
        return "not run", "", None, False
    p = float(n.value)
    if n.kind == "pct":
        txt, d = f"{v:.1f} %", v - p
    elif n.kind == "speedup_x":
        txt, d = f"{v:.2f}x", 100 * (v - p)
    elif n.kind == "reduction_x":
        txt, d = f"{v:.2f}x", metric_points("_x", v) - metric_points("_x", p)
    elif n.kind == "range_pct":
        txt = f"{v:.1f} %"
        d = 0.0 if p <= v <= float(n.hi) else (v - p if v < p else v - float(n.hi))
    else:
        raise ValueError(f"unknown kind {n.kind!r}")
    return txt, f"{d:+.1f} pts", d, abs(d) > FLAG_PTS


def number_facts(numbers: Sequence[PaperNumber], values: Dict[str, object]) -> Dict[str, object]:
    """Facts of every stated number: t3sim's value (its key), the paper's (``P_<key>``), t3sim - paper in points
    (``D_<key>``) and its size (``A_<key>``); NaN where absent."""
    out: Dict[str, object] = {}
    for n in numbers:
        v = values.get(n.key, math.nan)
        out[n.key] = float(v) if _finite(v) else math.nan
        if n.kind != "direction":
            out[f"P_{n.key}"] = float(n.value)
        d = compare_number(n, v)[2] if n.key not in NOT_REPRODUCIBLE else None
        out[f"D_{n.key}"] = d if d is not None else math.nan
        out[f"A_{n.key}"] = abs(d) if d is not None else math.nan
    return out


def table_rows(values: Dict[str, object], numbers: Sequence[PaperNumber] = NUMBERS,
               explanations: Dict[str, Claim] = EXPLANATIONS,
               facts: Optional[Dict[str, object]] = None) -> List[Dict[str, object]]:
    """One row per stated number. A flagged row (or one t3sim cannot reproduce) gets its claim checked against
    ``facts`` (a section's: :func:`section_facts`) plus the numbers' own: the filled text if its conditions hold, else
    "not yet explained" with the condition that failed (``explained`` False, ``failed_condition`` set)."""
    known = {**number_facts(numbers, values), **(facts or {})}
    rows = []
    for n in numbers:
        v = values.get(n.key, math.nan)
        txt, dtxt, d, flagged = compare_number(n, v)
        note, explained, failed = "", "", ""
        if flagged or n.key in NOT_REPRODUCIBLE:
            verdict = check(explanations.get(n.key), {**known, **row_facts(n.kind, n.value, v, d)})
            note, explained, failed = verdict.text, verdict.explained, verdict.failed
        rows.append({"key": n.key, "section": n.section, "figure": n.figure, "quote": n.quote, "paper": n.paper_text(),
                     "t3sim": txt, "diff": dtxt, "diff_pts": d, "flagged": flagged, "explanation": note,
                     "explained": explained, "failed_condition": failed})
    return rows


def _md(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _summary_line(rows: Sequence[Dict[str, object]]) -> List[str]:
    ran = [r for r in rows if r["t3sim"] not in ("not run", "n/a")]
    flagged = [r for r in rows if r["flagged"]]
    unexplained = [r for r in flagged if r["explained"] is not True]
    stale = [r for r in unexplained if r["failed_condition"]]
    return [f"**{len(rows)} stated numbers**: {len(ran)} with a t3sim value, "
            f"{len(ran) - len(flagged)} within {FLAG_PTS:.0f} points (or agreeing in direction), "
            f"{len(flagged)} further apart ({len(flagged) - len(unexplained)} explained, {len(unexplained)} not yet "
            f"explained{f', {len(stale)} of them because a recorded cause no longer holds' if stale else ''}), "
            f"{len(rows) - len(ran)} without a value.", ""]


def _numbers_table(rows: Sequence[Dict[str, object]]) -> List[str]:
    out = ["| Sec. | figure | the paper says | paper | t3sim | diff | explanation |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        mark = " **(!)**" if r["flagged"] else ""
        out.append(f"| {r['section']} | {r['figure']} | \"{_md(r['quote'])}\" | {r['paper']} | {r['t3sim']} | "
                   f"{r['diff']}{mark} | {_md(r['explanation'])} |")
    return out


def _paper_section(head: Sequence[str], values: Dict[str, object], numbers, explanations,
                   facts: Optional[Dict[str, object]]) -> List[str]:
    """A paper's section: its heading lines, the summary line, the readings of ``numbers`` (the paper's numbers
    module: ``NUMBERS``, ``READINGS``) and the table of every stated number beside t3sim's (Markdown lines)."""
    rows = table_rows(values, numbers.NUMBERS, explanations, facts)
    return [*head, ""] + _summary_line(rows) + [f"- {x}" for x in numbers.READINGS] + [""] + _numbers_table(rows)


def flux_section(flux_values: Dict[str, object], facts: Optional[Dict[str, object]] = None) -> List[str]:
    """REPRODUCTION.md's FLUX section: every operation-level number FLUX states, beside t3sim's (Markdown lines)."""
    return _paper_section(
        ["## FLUX (Chang et al. 2024): operation level (Sec. 5.1, Figs. 11-14; Sec. 6)", "",
         "From the `flux-op-*` experiments (`experiments/flux-op/README.md`: what each method runs, and findings "
         "1-7 behind the explanations)."], flux_values, flux_numbers, FLUX_EXPLANATIONS, facts)


def ficco_section(ficco_values: Dict[str, object], facts: Optional[Dict[str, object]] = None) -> List[str]:
    """REPRODUCTION.md's FiCCO section: every number FiCCO states, beside t3sim's (Markdown lines)."""
    return _paper_section(
        ["## FiCCO: schedules, inefficiencies, heuristic (Secs. IV-VI, Figs. 7-14)", "",
         "From the `ficco-sp`, `ficco-ep`, `ficco-synthetic` and `ficco-char` experiments on the `mi300x-8gpu` preset "
         "(`experiments/ficco/README.md`: what runs, the scaled shapes, findings). Every point is a SCALED shape: "
         "these are not full-size values."], ficco_values, ficco_numbers, FICCO_EXPLANATIONS, facts)


def fused_section(fused_values: Dict[str, object], facts: Optional[Dict[str, object]] = None) -> List[str]:
    """REPRODUCTION.md's section of the fused GPU-initiated kernels (fused computation-collective paper): every number it states, beside
    t3sim's (Markdown lines)."""
    return _paper_section(
        ["## Fused GPU-initiated kernels: GEMV+AllReduce, GEMM+All-to-All, Embedding+All-to-All "
         "(Secs. III-C, IV-B-IV-D, VI; Figs. 8-15)", "",
         "From the `fused-gemv`, `fused-a2a`, `fused-gemm-a2a`, `fused-a2a-2node`, `fused-skew` and `fused-occupancy` "
         "experiments on the `mi210-4gpu-fc` and `mi210-2node` presets and the 128-node study "
         "(`experiments/fused-gemv`, `fused-a2a`, `fused-scale` READMEs: what runs, the chosen sizes, the mechanisms "
         "behind the explanations)."], fused_values, fused_numbers, FUSED_EXPLANATIONS, facts)


def render(values: Dict[str, object], *, quick: bool, experiments: Sequence[Dict[str, object]] = (),
           figures: Sequence[str] = (), notes: Sequence[str] = (),
           flux_values: Optional[Dict[str, object]] = None, ficco_values: Optional[Dict[str, object]] = None,
           facts: Optional[Dict[str, Dict[str, object]]] = None, header: Sequence[str] = (),
           fused_values: Optional[Dict[str, object]] = None, model: Optional[Mapping[str, Entry]] = None) -> str:
    """The report (Markdown). ``facts``: per section (``t3``, ``flux``, ``ficco``, ``fused``) the facts its explanations'
    claims are checked against (:func:`section_facts`); ``header``: lines put before the title; ``model``: per section
    the model version its results were simulated with (:func:`t3sim.reproduction.freshness.from_runs`, or a
    snapshot's ``model_version.json``), stated in the line under the title."""
    facts = facts or {}
    rows = table_rows(values, facts=facts.get("t3"))
    title = "T3 (Pati et al., ASPLOS'24)" + (", FLUX (Chang et al. 2024)" if flux_values is not None else "") + (
        " and FiCCO" if ficco_values is not None else "")
    if fused_values is not None:
        title = title.replace(" and FiCCO", ", FiCCO") + " and the fused GPU-initiated kernels"
    out = list(header) + [f"# Reproduction of {title} with t3sim", ""]
    if model is not None:
        out += [header_line(model), ""]
    out += [f"Generated by `t3sim reproduce{' --quick' if quick else ''}` (t3sim {__version__}). "
            "Every number the paper states in its text for its results (Secs. 2.4, 3.2.1, 5.1.1, 6.1-6.4, 7.5; "
            "`t3sim/reproduction/t3/numbers.py`) beside t3sim's. Differences are in percentage points "
            "(ratios compared as the percent they remove or add; `t3sim/reproduction/stated.py`). "
            f"Differences over {FLAG_PTS:.0f} points carry a one-line cause from `t3sim/reproduction/t3/explanations.py` "
            "(FLUX, FiCCO: `flux/explanations.py`, `ficco/explanations.py`). Each cause is a checked claim: it states the conditions it explains "
            "(the direction of the difference, a range for t3sim's value, or the mechanism's own measured quantity) and "
            "its numbers are filled from the results when this report is made (`t3sim/reproduction/t3/facts.py`, "
            "`flux/facts.py`, `ficco/facts.py`); where a condition fails the row reads \"not yet explained\" with the condition that "
            "failed, as does a difference with no recorded cause.", ""]
    if quick:
        out += ["**Quick mode:** reduced token counts and cases (see the experiments table). These values exercise the "
                "pipeline; they are *not* comparable with the paper's full-size numbers.", ""]
    out += _summary_line(rows)
    if experiments:
        out += ["## Experiments", "", "| experiment | answers | points | new | tokens | results |", "|---|---|---|---|---|---|"]
        for e in experiments:
            out.append(f"| {e['name']} | {_md(e.get('answers', ''))} | {e.get('points', '')} | {e.get('new', '')} | "
                       f"{e.get('tokens', '')} | `{e.get('results', '')}` |")
        out.append("")
    out += ["## Stated numbers", ""] + _numbers_table(rows)
    out += ["", "## End-to-end model (Figs. 4, 19; Sec. 5.1.2 method)", ""]
    out += [f"- {a}" for a in e2e.ASSUMPTIONS]
    if flux_values is not None:
        out += [""] + flux_section(flux_values, facts.get("flux"))
    if ficco_values is not None:
        out += [""] + ficco_section(ficco_values, facts.get("ficco"))
    if fused_values is not None:
        out += [""] + fused_section(fused_values, facts.get("fused"))
    if figures:
        out += ["", "## Figures", ""] + [f"- `{p}`" for p in figures]
    if notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def section_facts(tables: Dict[str, List[Dict[str, object]]], values: Dict[str, object]) -> Dict[str, Dict[str, object]]:
    """Per report section, the facts its claims are checked against, from the figure tables (rows by figure
    stem: :func:`t3sim.reproduction.catalog.tables`, or a snapshot's figure CSVs)."""
    return {"t3": t3_facts(tables, values, NUMBERS), "flux": flux_facts(tables.get("flux-op", [])),
            "ficco": ficco_facts(tables.get("ficco", []), tables.get("ficco-char", [])), "fused": fused_facts(tables)}


def all_rows(values: Dict[str, object], flux_values: Dict[str, object], ficco_values: Dict[str, object],
             facts: Optional[Dict[str, Dict[str, object]]] = None,
             fused_values: Optional[Dict[str, object]] = None) -> List[Dict[str, object]]:
    """Every section's table rows (``reproduction.csv``); the fused section's only where ``fused_values`` is given."""
    facts = facts or {}
    return (table_rows(values, facts=facts.get("t3"))
            + table_rows(flux_values, flux_numbers.NUMBERS, FLUX_EXPLANATIONS, facts.get("flux"))
            + table_rows(ficco_values, ficco_numbers.NUMBERS, FICCO_EXPLANATIONS, facts.get("ficco"))
            + (table_rows(fused_values, fused_numbers.NUMBERS, FUSED_EXPLANATIONS, facts.get("fused"))
               if fused_values is not None else []))
