"""A committed reproduction snapshot read back: the report re-made from the snapshot's own files (pure; no runs).

A snapshot folder (``experiments/reproduction/``) holds ``REPRODUCTION.md``, ``reproduction.csv`` (every stated
number's t3sim value and difference), ``figures/<stem>.csv`` (the rows each figure plots) and ``model_version.json``
(the model version each section was simulated with, :mod:`t3sim.reproduction.freshness`). Its runs are not
committed, so :func:`load` takes t3sim's values back from ``reproduction.csv`` (:func:`value_of` inverts the
difference the report computed, exact to the CSV's six significant digits) and the explanations' facts from the
figure CSVs (:func:`t3sim.analysis.tables.read_tables`): re-checking every explanation against the snapshot's
results without simulating. A section whose values are a function of its figure tables alone (:data:`FROM_TABLES`)
takes them from the figure CSVs instead, so that a study re-run and re-plotted into ``figures/`` updates its numbers.
The hand-written header (the leading ``>`` lines), the figure list and the notes of
the old ``REPRODUCTION.md`` are kept.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence

from t3sim.analysis.tables import read_tables
from t3sim.errors import InputError
from t3sim.reproduction.ficco import numbers as ficco_numbers
from t3sim.reproduction.flux import numbers as flux_numbers
from t3sim.reproduction.freshness import Manifest, read as read_manifest
from t3sim.reproduction.fused import numbers as fused_numbers
from t3sim.reproduction.report import compare_number
from t3sim.reproduction.stated import PaperNumber, metric_points
from t3sim.reproduction.t3.numbers import NUMBERS

SETS = {"t3": NUMBERS, "flux": flux_numbers.NUMBERS, "ficco": ficco_numbers.NUMBERS, "fused": fused_numbers.NUMBERS}
#: sections whose t3sim values are a function of their figure tables alone: re-computed from ``figures/*.csv``
#: (the same function ``t3sim reproduce`` uses), so a study re-run and re-plotted into ``figures/`` updates its
#: values, and a stated number added since the snapshot was made gets one
FROM_TABLES = {"flux": flux_numbers.metrics_from_tables, "ficco": ficco_numbers.metrics_from_tables,
               "fused": fused_numbers.metrics_from_tables}


def _invert(n: PaperNumber, t3sim: str, d: float) -> float:
    p = float(n.value)
    if n.kind == "pct":
        return p + d
    if n.kind == "speedup_x":
        return p + d / 100
    if n.kind == "reduction_x":
        return 100 / (100 - (d + metric_points("_x", p)))
    if n.kind == "range_pct":
        if d == 0:  # inside the range: only the text has it
            return float(t3sim.split()[0])
        return p + d if d < 0 else float(n.hi) + d
    raise ValueError(f"unknown kind {n.kind!r}")


def _edges(text: str) -> tuple:
    """The two numbers at which the first number printed in ``text`` would print otherwise."""
    m = re.match(r"\s*([-+]?\d+(?:\.(\d+))?)", text)
    if not m:
        return ()
    x, h = float(m.group(1)), 0.5 * 10 ** -len(m.group(2) or "")
    return (x - h, x + h)


def value_of(n: PaperNumber, t3sim: str, diff_pts: str, diff: str | None = None) -> float:
    """t3sim's value of ``n`` from its report cells (the ``t3sim`` text, ``diff_pts`` and, to settle a value that the
    six significant digits of ``diff_pts`` leave on a rounding edge, the ``diff`` text); NaN where it has none."""
    t3sim = t3sim.strip()
    if t3sim in ("not run", "n/a", ""):
        return math.nan
    if n.kind == "direction":  # "higher (+0.00)": the sign is the word's, the size the number's
        m = re.search(r"\(([-+]?[\d.]+(?:e[-+]?\d+)?)\)", t3sim)
        x = float(m.group(1)) if m else math.nan
        if t3sim.startswith("higher") and not x > 0:
            return 1e-9
        if t3sim.startswith("lower") and x > 0:
            return 0.0
        return x
    d = float(diff_pts)
    v = _invert(n, t3sim, d)
    if diff is None or compare_number(n, v)[:2] == (t3sim, diff) or d == 0:
        return v
    ulp = 10 ** (math.floor(math.log10(abs(d))) - 5)  # diff_pts is written with six significant digits
    cands = [_invert(n, t3sim, d + f * ulp) for f in (0.1, -0.1, 0.25, -0.25, 0.45, -0.45)]
    # both cells on a rounding edge: try the edges themselves, float step by float step
    cands += [v, *_edges(t3sim), *(_invert(n, t3sim, e) for e in _edges(diff))]
    for c in cands:
        for k in range(9):
            for w in (c + k * math.ulp(c), c - k * math.ulp(c)):
                if compare_number(n, w)[:2] == (t3sim, diff):
                    return w
    return v


@dataclass
class Snapshot:
    values: Dict[str, Dict[str, float]]  # per section (t3, flux, ficco, fused): key -> t3sim value
    tables: Dict[str, List[Dict[str, object]]]
    header: List[str] = field(default_factory=list)
    figures: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    #: its ``model_version.json`` (every section at version 0 where the folder has none)
    manifest: Manifest = field(default_factory=lambda: Manifest({}, {}))


def _section(lines: Sequence[str], title: str) -> List[str]:
    """The ``- item`` lines under ``## title`` (up to the next heading)."""
    out, inside = [], False
    for ln in lines:
        if ln.startswith("## "):
            inside = ln[3:].strip() == title
            continue
        if inside and ln.startswith("- "):
            out.append(ln[2:])
    return out


def load(folder: str | Path) -> Snapshot:
    """Read a snapshot folder (module doc); :class:`~t3sim.errors.InputError` if its files are missing or unknown."""
    folder = Path(folder)
    csv_path, md_path = folder / "reproduction.csv", folder / "REPRODUCTION.md"
    for p in (csv_path, md_path, folder / "figures"):
        if not p.exists():
            raise InputError("--from-snapshot", f"{folder} without {p.name}",
                             "a snapshot folder with REPRODUCTION.md, reproduction.csv and figures/")
    by_key = {n.key: (sec, n) for sec, ns in SETS.items() for n in ns}
    values: Dict[str, Dict[str, float]] = {sec: {} for sec in SETS}
    with csv_path.open(newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh), start=2):
            if row.get("key") not in by_key:
                raise InputError(f"{csv_path}:{i}: key", repr(row.get("key")), "a stated number's key "
                                 "(t3sim/reproduction/<paper>/numbers.py)")
            sec, n = by_key[row["key"]]
            try:
                values[sec][n.key] = value_of(n, row.get("t3sim", ""), row.get("diff_pts", ""), row.get("diff"))
            except ValueError:
                raise InputError(f"{csv_path}:{i}: diff_pts", repr(row.get("diff_pts")), "a number") from None
    lines = md_path.read_text().splitlines()
    header = []
    for ln in lines:
        if not (ln.startswith(">") or (header and not ln.strip())):
            break
        header.append(ln)
    figures = [f.strip("`") for f in _section(lines, "Figures")]
    tables = read_tables(folder / "figures")
    for sec, from_tables in FROM_TABLES.items():
        values[sec] = from_tables(tables)
    return Snapshot(values, tables, header, figures, _section(lines, "Notes"), read_manifest(folder))
