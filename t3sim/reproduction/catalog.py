"""Which results feed which figure, and drawing every figure from a results folder (pure; reads files only).

Results experiments (``results/<name>/``) and the figures drawn from them:

=================  ==========================================================================
t3-sublayers       Figs. 4, 15, 16, 18, 19 (Mega-GPT-2 / T-NLG), 20 (1x-CU reference)
fig06              Fig. 6
fig17              Fig. 17
fig19              Figs. 4 and 19 (GPT-3, PALM, MT-NLG at TP=32)
fig20              Fig. 20
sweep-tracker      tracker sweep
sweep-mca          MCA sweep
validation/<sys>   Fig. 14 (``t3sim validate`` output CSV)
flux-op-*          FLUX Figs. 11-14 (``flux-op``: ECT and E_overlap per node; every token count kept)
ficco-*            FiCCO Figs. 12(b)-14 (``ficco``: speedups per scenario) and 7-9 (``ficco-char``: DIL, CIL)
fused-*            fused computation-collective paper Figs. 8-10, 12 (one figure per fused operator: ``fused-gemv``, ``fused-emb-a2a``,
                   ``fused-emb-a2a-2node``, ``fused-gemm-a2a``) and the tables ``fused-skew`` (Fig. 14),
                   ``fused-occupancy`` (Fig. 13), ``fused-scale`` (Fig. 15: ``fused-scale/results.csv``, or
                   experiments/fused-scale's committed one)
=================  ==========================================================================
"""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from t3sim.analysis.plotting import plot_args, pyplot
from t3sim.analysis.runs import load_runs
from t3sim.reproduction.ficco import char as ficco_char
from t3sim.reproduction.ficco import experiments as ficco_experiments
from t3sim.reproduction.ficco import speedups as ficco
from t3sim.reproduction.flux import experiments as flux_experiments
from t3sim.reproduction.flux import op as flux_op
from t3sim.reproduction.fused import experiments as fused_experiments
from t3sim.reproduction.fused import figures as fused_figures
from t3sim.reproduction.fused import tables as fused
from t3sim.reproduction.inputs import Inputs
from t3sim.reproduction.spec import REPO, Spec
from t3sim.reproduction.t3 import experiments as t3_experiments
from t3sim.reproduction.t3 import figs_study as S
from t3sim.reproduction.t3 import figs_sublayer as L
from t3sim.reproduction.t3.experiments import VALIDATION_SYSTEM, validation_csv

#: every experiment file ``t3sim reproduce`` runs, paper by paper
SPECS: Tuple[Spec, ...] = (t3_experiments.SPECS + flux_experiments.SPECS + ficco_experiments.SPECS
                           + fused_experiments.SPECS)
#: FLUX's operation-level experiments, one per node
FLUX_EXPERIMENTS = flux_experiments.EXPERIMENTS
#: FiCCO's experiments
FICCO_EXPERIMENTS = ficco_experiments.EXPERIMENTS
#: the fused GPU-initiated kernels' experiments
FUSED_EXPERIMENTS = fused.EXPERIMENTS
RESULT_EXPERIMENTS = t3_experiments.EXPERIMENTS + FLUX_EXPERIMENTS + FICCO_EXPERIMENTS + FUSED_EXPERIMENTS
#: the fused studies' figures that are not one operator's
FUSED_TABLES = ("fused-skew", "fused-occupancy", "fused-scale")
FIGURES = ("fig04", "fig06", "fig14", "fig15", "fig16", "fig17", "fig18", "fig19", "fig20", "sweep-tracker", "sweep-mca",
           "flux-op", "ficco", "ficco-char") + tuple(fused.OPERATORS) + FUSED_TABLES
#: the 128-node study's committed rows (experiments/fused-scale/study.py), used when the results root has none
FUSED_SCALE_CSV = REPO / "experiments" / "fused-scale" / "results.csv"


def load_inputs(root: str | Path, hashes: Optional[Mapping[str, Iterable[str]]] = None,
                names: Sequence[str] = RESULT_EXPERIMENTS) -> Inputs:
    """Runs of every results experiment under ``root`` (exactly ``hashes[name]`` where given)."""
    runs = {n: load_runs(root, n, (hashes or {}).get(n), every_size=n in FLUX_EXPERIMENTS + FUSED_EXPERIMENTS)
            for n in names}
    v = validation_csv(root)
    scale = Path(root) / "fused-scale" / "results.csv"
    return Inputs(runs, v if v.is_file() else None, scale if scale.is_file() else FUSED_SCALE_CSV)


def draw(fig: str, inp: Inputs, out: str | Path, formats: Sequence[str] = ("png",)) -> List[Path]:
    """Draw one figure from loaded inputs; [] when its results are missing."""
    sub = inp.get("t3-sublayers")
    if fig == "fig04":
        runs = sub + inp.get("fig19")
        return S.fig04(runs, out, formats) if S.fig04_rows(runs) else []
    if fig == "fig06":
        return S.fig06(inp.get("fig06"), out, formats) if S.fig06_rows(inp.get("fig06")) else []
    if fig == "fig14":
        return S.fig14(inp.validation_csv, out, formats, VALIDATION_SYSTEM) if inp.validation_csv else []
    if fig in ("fig15", "fig16", "fig18"):
        rows = {"fig15": L.fig15_rows, "fig16": L.fig16_rows, "fig18": L.fig18_rows}[fig](sub)
        return getattr(L, fig)(sub, out, formats) if rows else []
    if fig == "fig17":
        return L.fig17(inp.get("fig17"), out, formats) if L.fig17_rows(inp.get("fig17")) else []
    if fig == "fig19":
        runs = sub + inp.get("fig19")
        return S.fig19(runs, out, formats) if S.fig19_rows(runs) else []
    if fig == "fig20":
        return L.fig20(inp.get("fig20"), sub, out, formats) if L.fig20_rows(inp.get("fig20"), sub) else []
    if fig == "flux-op":
        runs = flux_runs(inp)
        return flux_op.figure(runs, out, formats) if flux_op.flux_rows(runs) else []
    if fig == "ficco":
        runs = ficco_runs(inp)
        return ficco.figure(runs, out, formats) if ficco.ficco_rows(runs) else []
    if fig == "ficco-char":
        runs = inp.get("ficco-char")
        return ficco_char.figure(runs, out, formats) if ficco_char.char_rows(runs) else []
    if fig in fused.OPERATORS:
        rows = fused.op_rows(fused_runs(inp), fig)
        return fused_figures.figure(rows, fig, out, formats) if rows else []
    if fig in FUSED_TABLES:
        rows = fused_tables(inp)[fig]
        return fused_figures.table_figure(rows, fig, out, formats) if rows else []
    if fig in ("sweep-tracker", "sweep-mca"):
        runs = inp.get(fig)
        return S.sweep(runs, fig.split("-")[1], out, formats) if runs else []
    raise ValueError(f"unknown figure {fig!r}; known: {', '.join(FIGURES)}")


def flux_runs(inp: Inputs) -> List:
    """Every FLUX operation-level run loaded (all nodes)."""
    return [r for n in FLUX_EXPERIMENTS for r in inp.get(n)]


def ficco_runs(inp: Inputs) -> List:
    """Every FiCCO run loaded (all its experiments)."""
    return [r for n in FICCO_EXPERIMENTS for r in inp.get(n)]


def fused_runs(inp: Inputs) -> List:
    """Every run of the fused GPU-initiated kernels' experiments loaded."""
    return [r for n in FUSED_EXPERIMENTS for r in inp.get(n)]


def fused_tables(inp: Inputs) -> Dict[str, List[Dict]]:
    """The fused studies' tables by stem (:func:`t3sim.reproduction.fused.tables.tables`), the 128-node study's rows
    included."""
    return fused.tables(fused_runs(inp), fused.read_scale_csv(inp.fused_scale_csv))


def tables(inp: Inputs) -> Dict[str, List[Dict]]:
    """The rows each figure plots (and writes as ``<stem>.csv``), by figure stem, without drawing: what the
    explanations' facts read (``t3sim.reproduction.<paper>.facts``)."""
    sub = inp.get("t3-sublayers")
    both = sub + inp.get("fig19")
    return {"fig04": S.fig04_rows(both), "fig06": S.fig06_rows(inp.get("fig06")), "fig15": L.fig15_rows(sub),
            "fig16": L.fig16_rows(sub), "fig18": L.fig18_rows(sub), "fig19": S.fig19_rows(both),
            "fig20": L.fig20_rows(inp.get("fig20"), sub), "sweep-mca": S.sweep_rows(inp.get("sweep-mca"), "mca"),
            "flux-op": flux_op.flux_rows(flux_runs(inp)), "ficco": ficco.ficco_rows(ficco_runs(inp)),
            "ficco-char": ficco_char.char_rows(inp.get("ficco-char")), **fused_tables(inp)}


def draw_all(inp: Inputs, out: str | Path, formats: Sequence[str] = ("png",),
             figures: Sequence[str] = FIGURES, jobs: int = 1) -> Dict[str, List[Path]]:
    """Draw ``figures`` (:func:`draw`); their files by figure, in ``figures``' order.

    ``jobs > 1``: on that many processes forked from this one (they inherit ``inp``; each figure is drawn by
    one process and writes only its own files, so the files are the same as drawn here), where the platform
    forks and this process runs no other thread (forking a threaded process is unsafe); else here, in order.
    """
    if jobs > 1 and len(figures) > 1 and "fork" in multiprocessing.get_all_start_methods() \
            and threading.active_count() == 1:
        global _FORKED
        pyplot()  # matplotlib imported (Agg) before the fork: the workers inherit it
        _FORKED = (inp, out, tuple(formats))
        try:
            with multiprocessing.get_context("fork").Pool(min(jobs, len(figures))) as pool:
                done = dict(pool.imap_unordered(_draw_forked, figures))
        finally:
            _FORKED = None
        return {fig: done[fig] for fig in figures}
    return {fig: draw(fig, inp, out, formats) for fig in figures}


#: what :func:`draw_all`'s forked workers draw from: (inputs, output folder, formats), set while they run
_FORKED: Optional[tuple] = None


def _draw_forked(fig: str):
    inp, out, formats = _FORKED
    return fig, draw(fig, inp, out, formats)


def plot_main(fig: str, description: str) -> None:
    """Entry point of ``experiments/<fig>/plot.py``: read results, draw ``fig``, print the files written."""
    a = plot_args(description, "results/figures")
    paths = draw(fig, load_inputs(a.results), a.out, a.formats)
    if not paths:
        raise SystemExit(f"{fig}: no results under {a.results}/ (run its experiment first; see its README)")
    for p in paths:
        print(p)
