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
``reproduction.csv`` and ``figures/*.csv`` (:mod:`t3sim.reproduction.snapshot`): no runs, every cause re-checked.
``--status`` lists the committed results that another model version simulated (:mod:`t3sim.model_version`,
:mod:`t3sim.reproduction.freshness`: the snapshot's ``model_version.json``; with ``--out``, also that results root's
runs), with their points and measured re-run cost; ``--status --write`` regenerates every experiment README's status
paragraph from it. A stored run or validation output of another model version is simulated again, not reused.
The experiments each paper runs, its figures and its report section live in :mod:`t3sim.reproduction`; this
command runs the points and the validation, then writes the report (:mod:`t3sim.reproduction.build`).
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from t3sim.analysis.tables import write_csv_atomic
from t3sim.commands import cli_argv
from t3sim import model_version
from t3sim.errors import InputError, check_writable_dir
from t3sim.reproduction import freshness
from t3sim.reproduction.spec import REPO, Spec
from t3sim.reproduction.t3.experiments import VALIDATION_STEM, VALIDATION_SYSTEM, validation_csv, validation_inputs


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
    p.add_argument("--status", action="store_true",
                   help="list the committed results (the snapshot's model_version.json; --from-snapshot DIR names "
                        "another) that another model version simulated, with their points and re-run cost, and with "
                        "--out the runs of that results root; exit 0")
    p.add_argument("--write", action="store_true",
                   help="with --status: regenerate the status paragraphs of every experiments/*/README.md")
    p.set_defaults(func=_run)


def _run_specs(specs: Sequence[Spec], out: Path, quick: bool, jobs: int, log) -> List[Dict[str, object]]:
    """Run every point of ``specs`` as one sweep (one worker pool, so no experiment file waits on another's
    last point and workers start once); one info dict per spec, in order."""
    from t3sim.config.sweep import expand  # lazy: the runner's modules load only when the command runs points
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
        out, quick = self.out, self.quick
        vin = validation_inputs()
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
            version = freshness.validation_version(target.parent)
            if version != model_version.MODEL_VERSION:  # another model simulated it: simulated again, as runs are
                self.log.write(f"validation: {target} was simulated with model {model_version.describe(version)}; "
                               f"simulating it again (now version {model_version.MODEL_VERSION})\n")
            elif {float(r["size_mb"]) for r in rows} <= done:  # "6" measured, "6.0" written
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
            else:
                freshness.write_validation_version(validation_csv(self.out).parent)
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
    from t3sim.exec import executors  # lazy: the runner and every paper's report modules load only when it runs
    from t3sim.reproduction import build
    from t3sim.reproduction.catalog import SPECS

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
    notes = [f"{i['name']}: {e}" for i in infos for e in i.get("errors", [])]
    if failures is not None:
        failures.extend(notes)
    return build.from_results(out, hashes, infos, quick=quick, formats=formats,
                              jobs=executors.default_jobs() if jobs == 0 else jobs, notes=notes)


def status(snapshot: Path = freshness.SNAPSHOT, results: Optional[Path] = None, write: bool = False,
           out=None) -> int:
    """``t3sim reproduce --status``: one line per committed result set (and, with ``results``, per results
    experiment) that another model version simulated, then a total; "all current" when none. ``write``: regenerate
    the experiment READMEs' status paragraphs. Returns 0."""
    out = out or sys.stdout
    m = freshness.read(snapshot)
    lines = freshness.status_lines(m, results=results)
    out.write("".join(f"{ln}\n" for ln in lines))
    if write:
        for p in freshness.write_readmes(m):
            out.write(f"wrote {p.relative_to(REPO)}\n")
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.write and not args.status:
        raise InputError("--write", "without --status", "--status --write")
    if args.status:
        snap = Path(args.from_snapshot) if args.from_snapshot else freshness.SNAPSHOT
        if not snap.is_dir():
            raise InputError("--from-snapshot", f"{snap}: no such folder", "a snapshot folder")
        return status(snap, Path(args.out) if args.out else None, args.write)
    if args.from_snapshot:
        snap_out = Path(args.out) if args.out else Path(args.from_snapshot)
        check_writable_dir(snap_out, "--out")
        from t3sim.reproduction.build import from_snapshot  # lazy: every paper's report modules load only here

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
