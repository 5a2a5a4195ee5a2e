"""``t3sim reproduce [--quick] [--out DIR] [-j N]``: run (or reuse) every experiment of the T3 paper, FLUX's
operation-level ones, FiCCO's and the fused GPU-initiated kernels', draw every figure and write
``<out>/REPRODUCTION.md`` (paper value, t3sim value, difference, cause).

Full mode runs the experiments under ``experiments/`` at the paper's sizes into ``results/`` (finished
points are reused by config hash, so a re-run only draws and writes). ``--quick`` runs a reduced set
(128 tokens, one GEMM tile row; T-NLG TP=8 only for the sixteen-case sweep, GPT-3 OP/FC-2 only at TP=32;
one validation row; FLUX on the A100 NVLink node only, at m = 64 of a 2048-wide model) into
``results/quick/`` in a few minutes: it checks the pipeline end to end, its
numbers are not the paper's sizes.

Each difference over 5 points carries a cause only while the cause's claim holds against the results
(:mod:`t3sim.analysis.claims`). ``--from-snapshot DIR`` re-makes a committed snapshot's report from its own
``reproduction.csv`` and ``figures/*.csv`` (:mod:`t3sim.analysis.snapshot`): no runs, every cause re-checked.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from t3sim.commands import cli_argv
from t3sim.errors import InputError, check_writable_dir

REPO = Path(__file__).resolve().parents[2]
TNLG8 = {"workload.tp": 8, "system.interconnect.num_gpus": 8}


def _set(key: str, value) -> str:
    return f"{key}={json.dumps(value)}"  # JSON is YAML: lists and mappings pass through --set


@dataclass(frozen=True)
class Spec:
    """One experiment file to run: its results name, what it answers, and its --quick overrides (None: not run
    by --quick)."""

    folder: str
    results: str
    answers: str
    quick: Optional[Sequence[str]] = field(default_factory=tuple)
    #: the experiment file, repo-relative (default: ``experiments/<folder>/experiment.yaml``)
    config: str = ""

    @property
    def path(self) -> Path:
        return REPO / (self.config or f"experiments/{self.folder}/experiment.yaml")


SPECS = (
    Spec("fig16", "t3-sublayers", "Figs. 4, 15, 16, 18, 19 (16 sub-layers x 5 schemes; Secs. 2.4, 6.1-6.3)",
         ("workload.tokens=128", _set("sweep.cases", [TNLG8]))),
    Spec("fig06", "fig06", "Fig. 6 (CU sharing; Sec. 3.2.1)",
         ("workload.tokens=128", _set("sweep.grid", {"workload.model": [
             {"name": "t-nlg", "hidden_size": 4256, "layers": 78, "seq_len": 1024, "batch": 8, "tp_degrees": [8, 16],
              "attention_heads": 28}], "workload.sublayer": ["OP", "FC-2"]}))),
    Spec("fig17", "fig17", "Fig. 17 (DRAM bandwidth over time; Sec. 6.1.2)", ("workload.tokens=128",)),
    Spec("fig19", "fig19", "Figs. 4, 19 (GPT-3, PALM, MT-NLG at TP=32; Secs. 2.4, 6.4)",
         ("workload.tokens=128", _set("sweep.cases", [{"workload.model.name": "gpt-3"}]),
          _set("sweep.grid", {"workload.sublayer": ["OP", "FC-2"], "scheme.kind": ["sequential", "t3_mca"]}))),
    Spec("fig20", "fig20", "Fig. 20 (2x CUs; Sec. 7.5)",
         ("workload.tokens=128", _set("sweep.cases", [TNLG8]),
          _set("sweep.grid", {"workload.sublayer": ["OP", "FC-2"], "scheme.kind": ["sequential", "t3_mca"]}))),
    Spec("sweep-tracker", "sweep-tracker", "tracker entries / ways / granularity",
         ("workload.tokens=128", _set("sweep.cases", [{"scheme.kind": "sequential"}, {}, {"system.tracker.entries": 16},
                                                      {"system.tracker.granularity": "wg"}]),
          _set("sweep.grid", {"workload.sublayer": ["FC-2"]}))),
    Spec("sweep-tracker", "sweep-tracker", "tracker size at TP=32 (Sec. 6.4; deadlock-free admission)",
         ("workload.tokens=128", _set("sweep.cases", [{"scheme.kind": "sequential"}, {}]),
          _set("sweep.grid", {"workload.sublayer": ["FC-1"]})), "experiments/sweep-tracker/tp32.yaml"),
    Spec("sweep-mca", "sweep-mca", "MCA thresholds and starvation limit",
         ("workload.tokens=128", _set("sweep.cases", [
             {"scheme.kind": "sequential"}, {"scheme.kind": "t3"}, {},
             {"system.memory_controller.arbitration.threshold_mode": "static",
              "system.memory_controller.arbitration.occupancy_threshold": 5}]),
          _set("sweep.grid", {"workload.sublayer": ["FC-2"]}))),
    Spec("sweep-mca", "sweep-mca", "MCA starvation limit at TP=32 (Sec. 6.4)",
         ("workload.tokens=128", _set("sweep.cases", [
             {"scheme.kind": "sequential"}, {}, {"system.memory_controller.arbitration.starvation_limit_cycles": 1000}]),
          _set("sweep.grid", {"workload.sublayer": ["FC-2"]})), "experiments/sweep-mca/tp32.yaml"),
)
#: FLUX's operation-level experiments, one per node; --quick: the A100 NVLink node only, at m = 64 with a
#: 2048-wide model and the non-overlapped, Transformer Engine (DMA) and FLUX schemes of each direction
_FLUX_QUICK = ("workload.model.hidden_size=2048", _set("sweep.grid", {"workload.tokens": [64]}), _set("sweep.cases", [
    {"workload.collective": "reduce_scatter", "scheme.kind": "sequential"},
    {"workload.collective": "reduce_scatter", "scheme.kind": "chunked_dma", "scheme.chunks": 8},
    {"workload.collective": "reduce_scatter", "scheme.kind": "flux_rs", "scheme.flux_reduce": "a2a_local"},
    {"workload.direction": "ag_gemm", "workload.sublayer": "FC-1", "scheme.kind": "sequential"},
    {"workload.direction": "ag_gemm", "workload.sublayer": "FC-1", "scheme.kind": "flux_ag"}]))
SPECS += (
    Spec("flux-op", "flux-op-a100-nvlink", "FLUX Figs. 12, 14 (A100 NVLink; FLUX Sec. 5.1)", _FLUX_QUICK),
    Spec("flux-op-a100-pcie", "flux-op-a100-pcie", "FLUX Figs. 11, 14 (A100 PCIe; FLUX Sec. 5.1)", None,
         "experiments/flux-op/a100-pcie.yaml"),
    Spec("flux-op-h800", "flux-op-h800", "FLUX Figs. 13, 14 (H800 NVLink; FLUX Sec. 5.1)", None,
         "experiments/flux-op/h800.yaml"),
)
#: FiCCO's experiments; --quick: Table I g2 at a tiny scale (128 x 2048 x 512 per GPU), the baseline and
#: the four DMA schedules, and four characterization points
_FICCO_TINY = {"name": "g2", "M": 131072, "N": 16384, "K": 16384, "scale_M": 1024, "scale_K": 32}
_FICCO_QUICK = (_set("sweep.grid", {"workload.gemm": [_FICCO_TINY]}),
                _set("sweep.cases", [{"scheme.kind": "sequential"}] + [
                    {"scheme.kind": "ficco", "scheme.ficco_schedule": s} for s in
                    ("uniform_fused_1d", "hetero_fused_1d", "hetero_unfused_1d", "uniform_fused_2d")]))
SPECS += (
    Spec("ficco", "ficco-sp", "FiCCO Figs. 12(b), 13, 14 (Table I SP+TP, 8x MI300X; scaled shapes)", _FICCO_QUICK),
    Spec("ficco-ep", "ficco-ep", "FiCCO Table I EP (all-to-all + expert GEMM)", None, "experiments/ficco/ep.yaml"),
    Spec("ficco-synthetic", "ficco-synthetic", "FiCCO Sec. VI-D heuristic on 16 synthetic scenarios", None,
         "experiments/ficco/synthetic.yaml"),
    Spec("ficco-char", "ficco-char", "FiCCO Figs. 7-9 (DIL, CIL; Secs. IV-C, IV-D)", (_set("sweep.cases", [
        {"workload.gemm": _FICCO_TINY, **c} for c in (
            {"scheme.char_part": "gemm", "scheme.chunks": 1},
            {"scheme.char_part": "gemm", "scheme.chunks": 8, "scheme.chunk_axis": "M"},
            {"scheme.char_part": "comm", "scheme.char_comm_steps": 1},
            {"scheme.char_part": "comm", "scheme.char_comm_steps": 8})]),)),
    Spec("ficco-scale", "ficco-scale", "FiCCO scale check (g2 at 1x and 4x the scaled FLOPs)", None,
         "experiments/ficco/scale.yaml"),
)

#: the fused GPU-initiated kernels' experiments; --quick: one tiny point per operator (a 1k x 1k
#: GEMV, global batch 128 at 2 tables, a 2048 x 256 x 256 MoE GEMM: its smallest M, one 128-row tile per GPU and
#: destination), the skew and occupancy points at that batch
_EMB_TINY = ("workload.embedding_bag.tables_per_gpu=2", "workload.embedding_bag.global_batch=128")
_EMB_QUICK = _EMB_TINY + (_set("sweep.grid", {"scheme.kind": ["emb_a2a", "fused_emb_a2a"]}),)
_SKEW_QUICK = _EMB_TINY + (_set("sweep.grid", {"scheme.fused_comm_aware": [True, False]}),)
SPECS += (
    Spec("fused-gemv", "fused-gemv", "Fused computation-collective Fig. 9 (GEMV + AllReduce, 4 MI210; Sec. IV-B)",
         (_set("sweep.cases", [{"workload.gemv.name": "quick.1k", "workload.gemv.model": "quick", "workload.gemv.M": 1024,
                                "workload.gemv.K": 1024}]),)),
    Spec("fused-emb-a2a", "fused-a2a", "Fused computation-collective Fig. 8 (embedding + All-to-All, 4 MI210; Sec. IV-B; 256 tables per "
         "GPU, the baseline sampled by tables)", _EMB_QUICK),
    Spec("fused-gemm-a2a", "fused-gemm-a2a", "Fused computation-collective Fig. 10 (MoE GEMM + All-to-All, 4 MI210; Sec. IV-B)",
         (_set("sweep.cases", [{"workload.gemm.name": "quick", "workload.gemm.M": 2048, "workload.gemm.N": 256,
                                "workload.gemm.K": 256}]),)),
    Spec("fused-emb-a2a-2node", "fused-a2a-2node", "Fused computation-collective Fig. 12 (embedding + All-to-All, 2 nodes; Sec. IV-C; "
         "256 tables per GPU, the baseline sampled by tables)", _EMB_QUICK),
    Spec("fused-skew", "fused-skew", "Fused computation-collective Fig. 14 (skew, communication-aware order; Sec. IV-C)", _SKEW_QUICK),
    Spec("fused-occupancy", "fused-occupancy", "Fused computation-collective Fig. 13 (fused kernel time vs occupancy; Sec. IV-C)",
         _EMB_TINY + (_set("sweep.grid", {"scheme.fused_library_registers_per_thread": [16, 33, 41, 137]}),)),
)


def _validation_inputs() -> Dict[str, str]:
    """``experiments/fig14/validate.yaml``: the system and measured CSV of ``t3sim validate`` (repo-relative)."""
    import yaml

    return yaml.safe_load((REPO / "experiments" / "fig14" / "validate.yaml").read_text())


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reproduce", help="run every paper experiment, draw every figure, write REPRODUCTION.md")
    p.add_argument("--quick", action="store_true",
                   help="reduced sizes and cases (78 points, about 30 s at -j 2 on 2 cores; not the paper's sizes)")
    p.add_argument("--out", default=None, help="results root (default: results/, or results/quick/ with --quick)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="parallel points per experiment (0 = one per CPU)")
    p.add_argument("--formats", default="png", help="figure formats, comma-separated: png, pdf, svg")
    p.add_argument("--only", action="append", default=[], metavar="FOLDER",
                   help="run only these experiment folders (repeatable; others are still read if present; "
                        "fig04, fig15 and fig18 are drawn from fig16's and fig19's runs)")
    p.add_argument("--no-run", action="store_true", help="do not simulate: draw and report from the results present")
    p.add_argument("--from-snapshot", default=None, metavar="DIR",
                   help="re-make a committed snapshot's report (DIR/REPRODUCTION.md, reproduction.csv) from its own "
                        "reproduction.csv and figures/*.csv, re-checking every explanation; no runs are read "
                        "(written to --out if given, else into DIR)")
    p.set_defaults(func=_run)


def _run_specs(specs: Sequence[Spec], out: Path, quick: bool, jobs: int, log) -> List[Dict[str, object]]:
    """Run every point of ``specs`` as one sweep (one worker pool, so no experiment file waits on another's
    last point and workers start once); one info dict per spec, in order."""
    from t3sim.config.sweep import expand
    from t3sim.exec.progress import Progress
    from t3sim.exec.runner import run_points

    expanded = [expand(spec.path, list(spec.quick) if quick else []) for spec in specs]
    for spec, pts in zip(specs, expanded):
        log.write(f"== {spec.folder} ({spec.path.relative_to(REPO)}): {len(pts)} points\n")
    outcomes = run_points([p for pts in expanded for p in pts], out=out, jobs=jobs, progress=Progress(log))
    infos, k = [], 0
    for spec, pts in zip(specs, expanded):
        mine, k = outcomes[k:k + len(pts)], k + len(pts)
        ok = [o for o in mine if o.ok]
        tokens = sorted({o.point.config.workload.num_tokens for o in mine})
        infos.append({"name": spec.folder, "results_name": spec.results, "answers": spec.answers, "points": len(mine),
                      "new": sum(1 for o in ok if not o.reused), "failed": len(mine) - len(ok),
                      "errors": [f"{o.point.label}: {o.error}" for o in mine if not o.ok],
                      "tokens": ", ".join(map(str, tokens)), "results": str(out / spec.results),
                      "hashes": [o.path.name for o in ok]})
    return infos


class _Validation:
    """``t3sim validate`` into ``<out>/validation/<system>/`` unless its CSV already covers the measured rows,
    run as a separate process beside the sweep (:meth:`start`), so its serial simulation does not wait for the
    sweep's last point; :meth:`finish` waits for it, copies its output to the log and returns the info dict."""

    def __init__(self, out: Path, quick: bool, jobs: int, log) -> None:
        self.out, self.quick, self.jobs, self.log = out, quick, jobs, log
        self.proc = None
        self.output = None  # the process's stdout and stderr (a temporary file)
        self.info: Dict[str, object] = {}

    def start(self) -> "_Validation":
        import subprocess
        import tempfile

        from t3sim.analysis.catalog import VALIDATION_STEM, VALIDATION_SYSTEM, validation_csv
        from t3sim.analysis.comparison import write_csv_atomic

        out, quick = self.out, self.quick
        vin = _validation_inputs()
        measured = REPO / vin["measured"]
        with measured.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        if quick:
            rows = rows[:1]
        target = validation_csv(out)
        self.info = {"name": "fig14", "results_name": "validation",
                     "answers": "Fig. 14 (RS validation, H200 4-GPU; Sec. 5.1.1)", "points": len(rows), "new": 0,
                     "failed": 0, "errors": [], "tokens": "-", "results": str(target.parent)}
        if target.is_file():
            with target.open(newline="") as fh:
                done = {float(r["size_mb"]) for r in csv.DictReader(fh) if r.get("size_mb")}
            if {float(r["size_mb"]) for r in rows} <= done:  # "6" measured, "6.0" written
                self.log.write(f"validation: reusing {target}\n")
                return self
        src = measured
        if quick:
            src = out / "validation" / "quick-input" / f"{VALIDATION_STEM}.csv"
            buf = io.StringIO()
            w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
            src.parent.mkdir(parents=True, exist_ok=True)
            write_csv_atomic(src, buf.getvalue())  # an interrupt leaves no half-written input
        args = ["validate", "--system", str(REPO / vin["system"]), "--measured", str(src),
                "--out", str(out / "validation" / VALIDATION_SYSTEM), "--jobs", str(max(self.jobs, 1))]
        self.info["new"] = len(rows)
        # its output goes to a file, not a pipe: nothing reads it until the sweep ends, and a full pipe would stall it
        self.output = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(cli_argv(*args), stdout=self.output, stderr=subprocess.STDOUT, text=True)
        return self

    def finish(self) -> Dict[str, object]:
        if self.proc is not None:
            self.proc.wait()
            self.output.seek(0)
            self.log.write(self.output.read())
            self.output.close()
            if self.proc.returncode:
                self.info["failed"] = self.info["new"]
                self.info["errors"] = [f"t3sim validate exited {self.proc.returncode}"]
            self.proc = None
        return self.info

    def stop(self) -> None:
        """Interrupted: end the process (its output is written atomically, so nothing is left half-written)."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()
            self.proc = None
            self.output.close()


def reproduce(out: Path, quick: bool = False, jobs: int = 1, formats: Sequence[str] = ("png",),
              only: Sequence[str] = (), run: bool = True, log=sys.stderr, failures: Optional[list] = None) -> Path:
    """Run (or reuse) the experiments, draw the figures, write ``<out>/REPRODUCTION.md``; returns its path.
    Points that failed are listed in the report's notes and appended to ``failures`` if given."""
    from t3sim.analysis import catalog
    from t3sim.analysis.comparison import write_csv_atomic
    from t3sim.exec import executors
    from t3sim.analysis import ficco_numbers, flux_numbers, fused, fused_numbers
    from t3sim.analysis.report import all_rows, metrics, render, section_facts
    from t3sim.analysis.plotting import rows_csv

    out = Path(out)
    known = {spec.folder for spec in SPECS} | {"fig14"}
    unknown = [x for x in only if x not in known]
    if unknown:
        raise InputError("--only", repr(unknown[0]), ", ".join(sorted(known)))
    if run and jobs != 1:
        executors.prestart()
    infos: List[Dict[str, object]] = []
    hashes: Dict[str, List[str]] = {}
    specs = [spec for spec in SPECS if not ((only and spec.folder not in only) or (quick and spec.quick is None))]
    validation = _Validation(out, quick, jobs, log).start() if run and (not only or "fig14" in only) else None
    try:
        if run and specs:
            for info in _run_specs(specs, out, quick, jobs, log):
                hashes.setdefault(info["results_name"], []).extend(info.pop("hashes"))  # several files may feed one folder
                infos.append(info)
        if validation is not None:
            infos.append(validation.finish())
    finally:
        if validation is not None:
            validation.stop()
    inp = catalog.load_inputs(out, hashes)
    figs = catalog.draw_all(inp, out / "figures", formats, jobs=executors.default_jobs() if jobs == 0 else jobs)
    values = metrics(inp)
    flux_values = flux_numbers.metrics(catalog.flux_runs(inp))
    ficco_values = ficco_numbers.metrics(catalog.ficco_runs(inp))
    fused_values = fused_numbers.metrics(catalog.fused_runs(inp), fused.read_scale_csv(inp.fused_scale_csv))
    facts = section_facts(catalog.tables(inp), values)
    notes = [f"{i['name']}: {e}" for i in infos for e in i.get("errors", [])]
    if failures is not None:
        failures.extend(notes)
    missing = [f for f, p in figs.items() if not p]
    if missing:
        notes.append(f"figures without results (not drawn): {', '.join(missing)}")
    if quick:
        notes.append("quick mode: fewer cases (T-NLG TP=8 sub-layers; GPT-3 OP and FC-2 at TP=32, so no TP=32 training "
                     "point), 128 tokens, one validation row.")
    md = render(values, quick=quick, experiments=infos,
                figures=[str(p) for ps in figs.values() for p in ps if p.suffix != ".csv"], notes=notes,
                flux_values=flux_values, ficco_values=ficco_values, facts=facts, fused_values=fused_values)
    path = write_csv_atomic(out / "REPRODUCTION.md", md)
    write_csv_atomic(out / "reproduction.csv", rows_csv(all_rows(values, flux_values, ficco_values, facts,
                                                                 fused_values)))
    return path


def from_snapshot(folder: Path, out: Optional[Path] = None) -> Path:
    """Re-make a committed snapshot's ``REPRODUCTION.md`` and ``reproduction.csv`` from its own files
    (:mod:`t3sim.analysis.snapshot`): the same values, every explanation re-checked against the snapshot's figure
    CSVs. Written into ``out`` (default: ``folder``); returns the report's path."""
    from t3sim.analysis import snapshot
    from t3sim.analysis.comparison import write_csv_atomic
    from t3sim.analysis.plotting import rows_csv
    from t3sim.analysis.report import all_rows, render, section_facts

    snap = snapshot.load(folder)
    out = Path(out or folder)
    v = snap.values
    values = {k: x for sec in v.values() for k, x in sec.items()}
    facts = section_facts(snap.tables, values)
    fused_values = v["fused"] or None
    md = render(v["t3"], quick=False, figures=snap.figures, notes=snap.notes, flux_values=v["flux"] or None,
                ficco_values=v["ficco"] or None, facts=facts, header=snap.header, fused_values=fused_values)
    path = write_csv_atomic(out / "REPRODUCTION.md", md)
    write_csv_atomic(out / "reproduction.csv", rows_csv(all_rows(v["t3"], v["flux"], v["ficco"], facts, fused_values)))
    return path


def _run(args: argparse.Namespace) -> int:
    if args.from_snapshot:
        snap_out = Path(args.out) if args.out else Path(args.from_snapshot)
        check_writable_dir(snap_out, "--out")
        sys.stdout.write(f"report: {from_snapshot(Path(args.from_snapshot), snap_out)}\n")
        return 0
    out = Path(args.out) if args.out else Path("results") / ("quick" if args.quick else "")
    check_writable_dir(out, "--out")
    formats = [x.strip() for x in args.formats.split(",") if x.strip()]
    failures: list = []
    path = reproduce(out, quick=args.quick, jobs=args.jobs, formats=formats, only=args.only, run=not args.no_run,
                     failures=failures)
    sys.stdout.write(f"report: {path}\nfigures: {out / 'figures'}\n")
    if failures:
        sys.stderr.write(f"t3sim reproduce: {len(failures)} point(s) failed (listed in the report's notes); "
                         "re-run to retry them\n")
        return 3
    return 0
