"""Writing the reproduction report: ``<out>/REPRODUCTION.md`` and ``reproduction.csv``, from a results root's runs
(:func:`from_results`, after ``t3sim reproduce`` ran or reused them; it also writes ``model_version.json``, the model
version each section's runs were simulated with) or from a committed snapshot's own files (:func:`from_snapshot`,
which states the versions its ``model_version.json`` records). Each file is written atomically; nothing here
simulates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, Mapping, Optional, Sequence

from t3sim.analysis.plotting import rows_csv
from t3sim.analysis.tables import write_csv_atomic
from t3sim.reproduction import catalog, freshness, snapshot
from t3sim.reproduction.ficco import numbers as ficco_numbers
from t3sim.reproduction.flux import numbers as flux_numbers
from t3sim.reproduction.fused import numbers as fused_numbers
from t3sim.reproduction.fused.tables import read_scale_csv
from t3sim.reproduction.report import all_rows, render, section_facts
from t3sim.reproduction.t3.metrics import metrics


def from_results(out: Path, hashes: Optional[Mapping[str, Iterable[str]]] = None,
                 experiments: Sequence[Dict[str, object]] = (), quick: bool = False,
                 formats: Sequence[str] = ("png",), jobs: int = 1, notes: Sequence[str] = ()) -> Path:
    """Draw every figure from the runs under ``out`` (exactly ``hashes[name]`` where given) into
    ``out/figures``, then write the report beside them; returns its path. ``experiments``: one info dict per
    experiment run (the report's experiments table); ``notes``: lines for its notes, before the figures
    without results."""
    inp = catalog.load_inputs(out, hashes)
    figs = catalog.draw_all(inp, out / "figures", formats, jobs=jobs)
    values = metrics(inp)
    flux_values = flux_numbers.metrics(catalog.flux_runs(inp))
    ficco_values = ficco_numbers.metrics(catalog.ficco_runs(inp))
    fused_values = fused_numbers.metrics(catalog.fused_runs(inp), read_scale_csv(inp.fused_scale_csv))
    facts = section_facts(catalog.tables(inp), values)
    model = freshness.from_runs(inp.runs, inp.validation_csv)
    kept = freshness.read(out).experiments if (out / freshness.MANIFEST).is_file() else {}
    notes = list(notes)
    missing = [f for f, p in figs.items() if not p]
    if missing:
        notes.append(f"figures without results (not drawn): {', '.join(missing)}")
    if quick:
        notes.append("quick mode: fewer cases (T-NLG TP=8 sub-layers; GPT-3 OP and FC-2 at TP=32, so no TP=32 training "
                     "point), 128 tokens, one validation row.")
    md = render(values, quick=quick, experiments=experiments,
                figures=[str(p) for ps in figs.values() for p in ps if p.suffix != ".csv"], notes=notes,
                flux_values=flux_values, ficco_values=ficco_values, facts=facts, fused_values=fused_values, model=model)
    path = write_csv_atomic(out / "REPRODUCTION.md", md)
    write_csv_atomic(out / "reproduction.csv", rows_csv(all_rows(values, flux_values, ficco_values, facts,
                                                                 fused_values)))
    write_csv_atomic(out / freshness.MANIFEST, freshness.manifest_json(freshness.Manifest(model, kept)))
    return path


def from_snapshot(folder: Path, out: Optional[Path] = None) -> Path:
    """Re-make a committed snapshot's ``REPRODUCTION.md`` and ``reproduction.csv`` from its own files
    (:mod:`t3sim.reproduction.snapshot`): the same values, every explanation re-checked against the snapshot's
    figure CSVs, the model versions its ``model_version.json`` records stated under the title. Written into ``out``
    (default: ``folder``); returns the report's path."""
    snap = snapshot.load(folder)
    out = Path(out or folder)
    v = snap.values
    values = {k: x for sec in v.values() for k, x in sec.items()}
    facts = section_facts(snap.tables, values)
    fused_values = v["fused"] or None
    md = render(v["t3"], quick=False, figures=snap.figures, notes=snap.notes, flux_values=v["flux"] or None,
                ficco_values=v["ficco"] or None, facts=facts, header=snap.header, fused_values=fused_values,
                model=snap.manifest.report)
    path = write_csv_atomic(out / "REPRODUCTION.md", md)
    write_csv_atomic(out / "reproduction.csv", rows_csv(all_rows(v["t3"], v["flux"], v["ficco"], facts, fused_values)))
    return path
