#!/usr/bin/env python
"""The FiCCO study at two sizes side by side (the half size fits a ~4 CPU-hour budget): every number the paper states, and every
scenario's speedups, from the study (``ficco-*``, at most 256 GFLOP per GPU: the report's) and from the same study
at half the FLOP budget (``ficco-*-half``; experiments/ficco/make_configs.py ``SIZES``).

Reads only tables and results (no simulation). The study's values come from its report (``--study``: a folder with
REPRODUCTION.md, reproduction.csv and figures/ with ``ficco.csv`` and ``ficco-char.csv``, default the committed
experiments/reproduction/); the half study's from the results (``--results``) of
``t3sim run configs/experiments/ficco-{sp,ep,synthetic,char}-half.yaml``.
Writes, under ``--out``, the half study's figures and their tables (``ficco-half.{csv,png}``,
``ficco-char-half.{csv,png}``: the study's ``ficco`` and ``ficco-char`` figures) and ``sizes.csv``, the comparison
(columns scenario, method, variant, kind, study, half): first the stated numbers (scenario empty, method the
number's key, kind its unit or trend as in t3sim/reproduction/ficco/numbers.py), then every scenario's speedups (kind
speedup_x), and ``REPRODUCTION-ficco-half.md``, the report's FiCCO section made from the half study
(:func:`half_report`). Prints the stated numbers at both sizes.
Usage: python experiments/ficco/sizes.py [--results DIR] [--study DIR] [--out DIR] [--formats png,pdf]
"""

from __future__ import annotations

import argparse
import math
import runpy
import sys
from pathlib import Path
from typing import Dict, List, Sequence

from t3sim.analysis.plotting import FORMATS, rows_csv
from t3sim.analysis.runs import load_runs
from t3sim.analysis.tables import read_table, write_csv_atomic
from t3sim.schemes.ficco.heuristic import SCHEDULES
from t3sim.reproduction.build import from_snapshot
from t3sim.reproduction.ficco import char as ficco_char
from t3sim.reproduction.ficco import speedups as ficco
from t3sim.reproduction.ficco.numbers import NUMBERS, metrics_from_tables

#: the half study's experiments, each with the study's experiment it repeats at half the FLOP budget
HALF = {f"{e}-half": e for e in ("ficco-sp", "ficco-ep", "ficco-synthetic", "ficco-char")}
REPO = Path(__file__).resolve().parents[2]
#: the two studies' scale budgets, GFLOP per GPU (experiments/ficco/make_configs.py SIZES)
_SIZES = runpy.run_path(str(REPO / "experiments/ficco/make_configs.py"))["SIZES"]
STUDY_GFLOP, HALF_GFLOP = _SIZES[""] / 1e9, _SIZES["-half"] / 1e9


def half_runs(results: str | Path) -> Dict[str, List]:
    """The half study's runs by experiment (``ficco-sp-half``...)."""
    return {h: load_runs(results, h) for h in HALF}


def half_tables(runs: Dict[str, List]) -> Dict[str, List[Dict]]:
    """The half study's figure tables, ``{"ficco": rows, "ficco-char": rows}``, its rows named by the study's
    experiments (``ficco-sp``, not ``ficco-sp-half``) so that the study's readings apply unchanged."""
    return {"ficco": _as_study(ficco.ficco_rows(_schedule_runs(runs))),
            "ficco-char": ficco_char.char_rows(runs["ficco-char-half"])}


def committed_half_tables(folder: str | Path = REPO / "experiments/ficco") -> Dict[str, List[Dict]]:
    """:func:`half_tables` as read back from the CSVs this script wrote into ``folder`` (``ficco-half.csv``,
    ``ficco-char-half.csv``)."""
    return {"ficco": _as_study(read_table(Path(folder) / "ficco-half.csv")),
            "ficco-char": read_table(Path(folder) / "ficco-char-half.csv")}


def _as_study(rows: List[Dict]) -> List[Dict]:
    """``rows`` (of ``ficco.csv``'s layout) with each half experiment's name replaced by the study's."""
    for r in rows:
        r["experiment"] = HALF[r["experiment"]]
    return rows


def _schedule_runs(runs: Dict[str, List]) -> List:
    return [r for h in ("ficco-sp-half", "ficco-ep-half", "ficco-synthetic-half") for r in runs[h]]


def scenario_rows(study: Sequence[Dict], half: Sequence[Dict]) -> List[Dict]:
    """Per scenario and method: its speedup over the baseline (``kind`` speedup_x) in the study and at half size (NaN
    where not run)."""
    out = []
    methods = [("ideal", None), ("shard", None)] + [(m, v) for m in ("ficco-dma", "ficco-rccl") for v in SCHEDULES]
    for sc in ficco.scenarios(study):
        for m, v in methods:
            def of(rows):
                if m == "ideal":
                    return next((float(r["ideal_speedup"]) for r in rows if r["scenario"] == sc), math.nan)
                return ficco.speedup(rows, sc, m, v)
            a, b = of(study), of(half)
            if not (math.isnan(a) and math.isnan(b)):
                out.append({"scenario": sc, "method": m, "variant": v or "", "kind": "speedup_x",
                            "study": round(a, 4), "half": round(b, 4)})
    return out


#: the FiCCO section's heading in REPRODUCTION.md (t3sim.reproduction.report)
FICCO_SECTION = "## FiCCO: "


def half_report(snapshot: str | Path, tabs: Dict[str, List[Dict]], out: Path) -> Path:
    """``out/REPRODUCTION-ficco-half.md``: REPRODUCTION.md's FiCCO section made from the half study's tables
    ``tabs`` (:func:`half_tables`) as ``t3sim reproduce --from-snapshot`` makes it from the study's: the stated numbers
    beside the half study's values, each difference's cause checked against these tables. ``snapshot`` is the
    committed report's folder; a copy of it, with its FiCCO tables replaced, is re-made in a temporary folder."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "snapshot"
        shutil.copytree(snapshot, snap, ignore=shutil.ignore_patterns("*.png", "*.pdf", "*.svg"))
        (snap / "figures" / "ficco.csv").write_text(rows_csv(tabs["ficco"], ficco.COLUMNS))
        (snap / "figures" / "ficco-char.csv").write_text(rows_csv(tabs["ficco-char"], ficco_char.COLUMNS))
        md = from_snapshot(snap).read_text()
    lines = md.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(FICCO_SECTION))
    j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
    head = ("> GENERATED by experiments/ficco/sizes.py: REPRODUCTION.md's FiCCO section made from the half-size study "
            f"(`configs/experiments/ficco-*-half.yaml`, at most {HALF_GFLOP:g} GFLOP per GPU) instead of the "
            "study. The report itself stays on the study (experiments/ficco/README.md, \"The two sizes\").")
    body = "\n".join(lines[i:j])
    # the readings state the study's budget (t3sim.reproduction.ficco.numbers.READINGS): here it is the half study's
    study_budget = f"at most {STUDY_GFLOP:g} GFLOP per GPU"
    if study_budget not in body:
        raise RuntimeError(f"sizes: the FiCCO section no longer says {study_budget!r}; update half_report")
    body = body.replace(study_budget, f"at most {HALF_GFLOP:g} GFLOP per GPU (the half study)")
    return write_csv_atomic(out / "REPRODUCTION-ficco-half.md", f"{head}\n\n{body.rstrip()}\n")


def _fail(message: str) -> None:
    """Bad input: one line on stderr, exit status 2, nothing written."""
    sys.stderr.write(f"sizes: {message}\n")
    raise SystemExit(2)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="results", help="results root with the ficco-*-half experiments")
    ap.add_argument("--study", default=str(REPO / "experiments/reproduction"),
                    help="the study's report folder (REPRODUCTION.md, reproduction.csv, figures/ with ficco.csv and "
                         "ficco-char.csv)")
    ap.add_argument("--out", default="results/figures", help="where the CSVs and figures go")
    ap.add_argument("--formats", default="png", help="figure formats, comma-separated (png, pdf, svg)")
    a = ap.parse_args(argv)
    formats = [x.strip() for x in a.formats.split(",") if x.strip()]
    if not formats or any(f not in FORMATS for f in formats):
        _fail(f"--formats: {a.formats!r}; allowed: a comma-separated list of {', '.join(FORMATS)}")
    need = [Path(a.study) / n for n in ("REPRODUCTION.md", "reproduction.csv", "figures/ficco.csv",
                                        "figures/ficco-char.csv")]
    if any(not p.is_file() for p in need):
        _fail(f"--study: {a.study} has no {next(p for p in need if not p.is_file()).relative_to(a.study)}; allowed: "
              "a report folder such as experiments/reproduction")
    study = {t: read_table(Path(a.study) / "figures" / f"{t}.csv") for t in ("ficco", "ficco-char")}
    runs = half_runs(a.results)
    half = half_tables(runs)
    if not half["ficco"]:
        _fail(f"--results: no ficco-*-half results under {a.results}/; run configs/experiments/"
              "ficco-{sp,ep,synthetic,char}-half.yaml first")
    out = Path(a.out)
    paths = ficco.figure(_schedule_runs(runs), out, formats, stem="ficco-half")
    if half["ficco-char"]:
        paths += ficco_char.figure(runs["ficco-char-half"], out, formats, stem="ficco-char-half")
    s, h = metrics_from_tables(study), metrics_from_tables(half)
    # the stated numbers first (scenario empty, method the number's key, kind its paper_numbers kind), then scenarios
    rows = [{"scenario": "", "method": n.key, "variant": "", "kind": n.kind, "study": round(s[n.key], 4),
             "half": round(h[n.key], 4)} for n in NUMBERS]
    write_csv_atomic(out / "sizes.csv", rows_csv(rows + scenario_rows(study["ficco"], half["ficco"])))
    print(f"{'stated number':24s} {'paper':>8s} {'study':>9s} {'half':>9s}")
    for n in NUMBERS:
        print(f"{n.key:24s} {str(n.value):>8s} {s[n.key]:9.3f} {h[n.key]:9.3f}")
    paths += [out / "sizes.csv", half_report(a.study, half, out)]
    for p in paths:
        print(p)


if __name__ == "__main__":
    main()
