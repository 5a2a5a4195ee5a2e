"""``t3sim trace import --chakra`` and ``t3sim trace export --chakra``: MLCommons Chakra execution traces in and out
(docs/usage.md, "Chakra traces"; ``pip install 't3sim[chakra]'``).

* ``import`` finds the tensor-parallel GEMM+collective pairs of per-rank traces
  (:mod:`t3sim.workload.chakra_pairs`), writes one experiment per distinct operation and scheme, and lists every
  node it could not map with the reason.
* ``export`` simulates each pair's operation under a scheme through the runner (results reused from ``--results``
  as ``t3sim run`` reuses them) and writes the traces back with the simulated times
  (:mod:`t3sim.workload.chakra_export`); ``--scheme advise`` gives each pair the scheme ``t3sim advise`` ranks
  first for its operation (:mod:`t3sim.commands.advise_chakra`).

Another caller picks the scheme per pair by passing its own ``choose`` to :func:`pair_times`;
:func:`experiment_points` and :func:`simulate_operations` are the steps under it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

import yaml

from t3sim.config.loader import config_roots
from t3sim.config.sweep import Point, expand
from t3sim.config.workload import DTYPE_BYTES
from t3sim.errors import InputError, SimulationError, check_writable_dir

DEFAULT_SYSTEM = "systems/t3-table1.yaml"
#: the scheme export and import apply by default: the traced program itself (the GEMM, then the library's
#: collective), which runs every pair's direction
DEFAULT_SCHEME = "sequential"
DEFAULT_OUT = "chakra-experiments"
#: export's ``--scheme`` that gives each pair the scheme ``t3sim advise`` ranks first (t3sim/commands/advise_chakra.py)
ADVISE = "advise"


def add_parser(sub: argparse._SubParsersAction) -> None:
    tsub = sub.choices["trace"].subcommands  # the `t3sim trace` group (t3sim/workload/cli.py)
    imp = tsub.add_parser("import", help="find GEMM+collective pairs in Chakra traces; write one experiment per operation")
    imp.add_argument("--chakra", nargs="+", required=True, metavar="FILE.et", help="per-rank Chakra traces (.et)")
    imp.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help="where the experiments go (default: %(default)s/)")
    _common(imp)
    imp.set_defaults(func=_import)
    exp = tsub.add_parser("export", help="write Chakra traces back with each pair's simulated times")
    exp.add_argument("--chakra", nargs="+", required=True, metavar="FILE.et", help="per-rank Chakra traces (.et)")
    exp.add_argument("--out", required=True, metavar="OUT",
                     help="the output trace (one input), or a directory for one output per input (several)")
    exp.add_argument("--results", default="results", metavar="DIR",
                     help="results root the simulations are reused from and saved to (default: %(default)s/)")
    exp.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="local processes (default 1; 0: one per CPU)")
    _common(exp)
    exp.set_defaults(func=_export)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tp", type=int, metavar="N", help="tensor-parallel degree of every collective (default: the size of "
                   "its process group among the given traces)")
    p.add_argument("--dtype", choices=tuple(DTYPE_BYTES), help="element type of GEMMs whose trace has no tensor types")
    p.add_argument("--system", default=DEFAULT_SYSTEM, metavar="YAML",
                   help="system config the operations run on (default: %(default)s), its GPU count set to tp")
    p.add_argument("--scheme", default=DEFAULT_SCHEME, metavar="KIND", help="scheme.kind for every pair (default: "
                   "%(default)s); export: 'advise' gives each pair the scheme t3sim advise ranks first")


def system_ref(ref: str) -> str:
    """The ``base:`` reference the experiments name ``--system`` by: a preset under a configs root as given, any
    other file by its absolute path (the experiments are read from elsewhere)."""
    from t3sim.config import load_config

    found = [root / ref for root in config_roots() if (root / ref).is_file()]
    if found:
        path, given = found[0], ref
    elif Path(ref).is_file():
        path = Path(ref).resolve()
        given = str(path)
    else:
        raise InputError("--system", repr(ref), "a system YAML file, or a preset under configs/ (e.g. systems/t3-table1.yaml)")
    kind, _ = load_config(path)
    if kind != "system":
        raise InputError(f"--system {ref}", f"a config of kind {kind}", "a system config (configs/systems/*.yaml)")
    return given


def _need_chakra() -> None:
    """Raise :class:`InputError` unless the ``mlc-chakra`` package (the ``chakra`` extra) is installed."""
    try:
        import chakra.schema.protobuf.et_def_pb2  # noqa: F401
    except ImportError as exc:
        raise InputError("--chakra", f"no Chakra reader ({exc})", "pip install 't3sim[chakra]' (package mlc-chakra)") from None


def _check_flags(args: argparse.Namespace) -> None:
    if args.tp is not None and args.tp < 2:
        raise InputError("--tp", str(args.tp), "a tensor-parallel degree >= 2 (a collective needs two GPUs)")


def _check_scheme(kind: str, pairs) -> None:
    from t3sim.schemes.runtime.base import SCHEMES, scheme_for

    try:
        s = scheme_for(kind)
        s.check_runnable()
    except InputError as exc:
        raise InputError("--scheme", exc.found, exc.allowed) from None
    for p in pairs:
        workload = "model" if p.op.direction == "gemm_rs" else "gemm"  # what Operation.experiment writes
        if workload not in s.workloads:
            raise InputError("--scheme", f"{kind}, which runs {', '.join(s.workloads)} workloads, for {p.text()}",
                             "a scheme that runs GEMMs (" + ", ".join(
                                 n for n, v in SCHEMES.items() if workload in v.workloads) + ")")
        if p.op.direction not in s.directions:
            raise InputError("--scheme", f"{kind}, which runs {', '.join(s.directions)}, for {p.text()} "
                             f"({p.op.direction})", "a scheme that runs it (" + ", ".join(
                                 n for n, v in SCHEMES.items() if p.op.direction in v.directions) + ")")


Job = Tuple[object, str]  # (operation, scheme kind)


def experiment_points(jobs: Sequence[Job], system: str, where: Path) -> Tuple[Dict[Job, Tuple[Path, str, Point]],
                                                                               Dict[Job, str]]:
    """For each (operation, scheme) of ``jobs``: its experiment file's text written under ``where`` and loaded
    (validated and checked as ``t3sim run`` checks a point). Returns ``({job: (path, text, point)}, {job: why})``:
    the jobs that load, and why each other one cannot run on ``system`` (e.g. a GEMM narrower than the system's
    tile, a footprint larger than its HBM)."""
    from t3sim.exec.checks import check_experiment

    loaded, refused = {}, {}
    for op, scheme in jobs:
        text = (f"# written by `t3sim trace import --chakra` (docs/usage.md, \"Chakra traces\"): the per-rank GEMM "
                f"{op.M} x {op.N} x {op.K} {op.dtype} and its {op.collective} over {op.tp} GPUs\n"
                + yaml.safe_dump(op.experiment(system, scheme), sort_keys=False))
        path = where / f"{op.name}-{scheme}.yaml"
        path.write_text(text)
        try:
            (point,) = expand(path)
            check_experiment(point.config, path.name)
        except InputError as exc:
            refused[(op, scheme)] = f"t3sim cannot run it under {scheme} on {system}: " + exc.one_line()
            continue
        loaded[(op, scheme)] = (path, text, point)
    return loaded, refused


def simulate_operations(jobs: Sequence[Job], system: str, results: str, n_jobs: int = 1,
                        progress=None) -> Tuple[Dict[Job, object], Dict[Job, str]]:
    """Simulate each (operation, scheme) of ``jobs`` on ``system`` through the runner (reusing stored results in
    ``results``). Returns ``({job: PairTime}, {job: why})``: the :class:`~t3sim.workload.chakra_export.PairTime` of
    each job that ran, and why each other one cannot run (:func:`experiment_points`). A failed simulation raises
    (:class:`InputError`: bad input; :class:`SimulationError`; RuntimeError: a bug, with its traceback)."""
    from t3sim.exec.runner import run_points
    from t3sim.workload.chakra_export import PairTime

    with tempfile.TemporaryDirectory(prefix="t3sim-chakra-") as tmp:
        loaded, refused = experiment_points(jobs, system, Path(tmp))
        outcomes = run_points([point for _, _, point in loaded.values()], out=results, jobs=n_jobs, fail_fast=True,
                              progress=progress) if loaded else []
    times = {}
    for (op, scheme), o in zip(loaded, outcomes):
        if o.error is not None and o.error.kind != "skipped":
            what = f"{op.name} under {scheme}"
            if o.error.kind == "input":
                raise InputError(what, o.error.message, None)
            if o.error.kind == "simulation":
                raise SimulationError(f"{what}: {o.error.message}")
            raise RuntimeError(f"{what}: {o.error.message}\n{o.error.traceback}")
        if o.error is None:
            times[(op, scheme)] = PairTime.from_summary(op, scheme, o.result.summary, str(o.path))
    return times, refused


def pair_times(pairs, choose: Callable[[object], str], system: str, results: str, n_jobs: int = 1,
               progress=None) -> Tuple[Dict[object, object], Dict[object, str]]:
    """Each pair's simulated times under the scheme ``choose(pair)`` picks (pairs of one operation and scheme
    share one simulation). Returns ``({pair: PairTime}, {pair: why})``: the
    :class:`~t3sim.workload.chakra_export.PairTime` of each pair, and why each pair whose operation cannot run
    under its scheme on ``system`` has none."""
    keyed = {p: (p.op, choose(p)) for p in pairs}
    times, refused = simulate_operations(list(dict.fromkeys(keyed.values())), system, results, n_jobs, progress)
    return ({p: times[k] for p, k in keyed.items() if k in times},
            {p: refused[k] for p, k in keyed.items() if k in refused})


def _refuse(pairs, unmapped, refused: Dict[object, str], traces) -> Tuple[list, list]:
    """``pairs`` less those ``refused`` names, and ``unmapped`` plus their two nodes each with the reason, in trace
    and node order."""
    from t3sim.workload.chakra_pairs import Unmapped

    extra = [Unmapped(p.trace, i, lbl, why) for p, why in refused.items()
             for i, lbl in ((p.gemm, p.gemm_label), (p.comm, p.comm_label))]
    order = {tr.path: (k, {n.id: j for j, n in enumerate(tr.nodes)}) for k, tr in enumerate(traces)}
    key = lambda u: (order[u.trace][0], order[u.trace][1][u.node])  # noqa: E731
    return [p for p in pairs if p not in refused], sorted(unmapped + extra, key=key)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]]) + "\n"


def _unmapped(unmapped) -> str:
    return f"unmapped nodes ({len(unmapped)}):\n" + "".join(f"  {u.text()}\n" for u in unmapped)


def _import(args: argparse.Namespace) -> int:
    _need_chakra()
    from t3sim.workload.chakra_pairs import find_pairs
    from t3sim.workload.chakra_trace import traces_in

    _check_flags(args)
    if args.scheme == ADVISE:
        raise InputError("--scheme", "advise with trace import, which simulates nothing",
                         "a scheme.kind; advise with trace export, or t3sim advise --chakra")
    traces = traces_in(args.chakra)
    pairs, unmapped = find_pairs(traces, args.tp, args.dtype)
    _check_scheme(args.scheme, pairs)
    system = system_ref(args.system)
    with tempfile.TemporaryDirectory(prefix="t3sim-chakra-") as tmp:  # every experiment checked before one is written
        loaded, refused = experiment_points(list(dict.fromkeys((p.op, args.scheme) for p in pairs)), system, Path(tmp))
    pairs, unmapped = _refuse(pairs, unmapped, {p: refused[(p.op, args.scheme)] for p in pairs
                                                if (p.op, args.scheme) in refused}, traces)
    check_writable_dir(args.out, "--out")
    files = {}
    for job, (tmp_path, text, _) in loaded.items():
        path = Path(args.out) / tmp_path.name
        tmp_file = path.with_name(f".{path.name}.tmp")
        tmp_file.write_text(text)
        os.replace(tmp_file, path)
        files[job] = path
    rows = [(Path(p.trace).name, p.gemm_label, p.comm_label, p.op.direction, p.op.M, p.op.N, p.op.K, p.op.dtype,
             p.op.tp, files[(p.op, args.scheme)].name) for p in pairs]
    sys.stdout.write(f"pairs ({len(pairs)}):\n" + _table(
        ("trace", "GEMM", "collective", "direction", "M", "N", "K", "dtype", "tp", "experiment"), rows))
    sys.stdout.write("".join(f"wrote {f}\n" for f in files.values()))
    sys.stdout.write(_unmapped(unmapped))
    return 0


def _outputs(traces, out: str) -> List[Path]:
    """Where each exported trace goes: ``out`` itself for one trace, ``out/<name>`` for several; checked writable."""
    if len(traces) == 1 and not Path(out).is_dir():
        paths = [Path(out)]
        check_writable_dir(paths[0].parent, "--out")
    else:
        check_writable_dir(out, "--out")
        paths = [Path(out) / tr.name for tr in traces]
        if len({p.name for p in paths}) != len(paths):
            raise InputError("--chakra", "two traces of one file name", "distinct file names (each is written to --out/NAME)")
    for tr, p in zip(traces, paths):
        if os.path.realpath(p) == os.path.realpath(tr.path):
            raise InputError(f"--out {out}", f"the input trace {tr.path} itself", "another file (the input is kept)")
    return paths


def _export(args: argparse.Namespace) -> int:
    _need_chakra()
    from t3sim.exec.progress import Progress
    from t3sim.workload.chakra_export import apply_times
    from t3sim.workload.chakra_pairs import find_pairs
    from t3sim.workload.chakra_trace import traces_in, write_trace

    _check_flags(args)
    traces = traces_in(args.chakra)
    if args.jobs < 0:
        raise InputError("-j/--jobs", str(args.jobs), "a number of processes >= 1, or 0 for one per CPU")
    pairs, unmapped = find_pairs(traces, args.tp, args.dtype)
    counts = {tr.name: sum(p.trace == tr.path for p in pairs) for tr in traces}
    if len(set(counts.values())) > 1:
        raise InputError("--chakra", "traces with different numbers of pairs (" + ", ".join(
            f"{k}: {v}" for k, v in counts.items()) + "), whose collectives would no longer match across ranks",
                         "the ranks of one program")
    if args.scheme != ADVISE:
        _check_scheme(args.scheme, pairs)
    system = system_ref(args.system)
    outs = _outputs(traces, args.out)
    if args.scheme == ADVISE:  # each operation's winner, its times read from its own run
        from t3sim.commands.advise_chakra import advise_pairs, runnable, winner_times

        path, pairs, unmapped = runnable(traces, pairs, unmapped, args.system)
        advice = advise_pairs(pairs, path, lambda: Progress(sys.stderr), out=args.results, jobs=args.jobs)
        times, refused = winner_times(pairs, advice)
    else:
        times, refused = pair_times(pairs, lambda p: args.scheme, system, args.results, args.jobs, Progress(sys.stderr))
    pairs, unmapped = _refuse(pairs, unmapped, refused, traces)
    note = f"durations of GEMM+collective pairs simulated by t3sim on {system} (node attributes t3sim_*)"
    rewritten = [apply_times(tr, pairs, times.__getitem__, note) for tr in traces]
    for tr, path in zip(rewritten, outs):
        write_trace(tr, path)
    rows = []
    for p in pairs:
        t = times[p]
        names = {p.gemm: p.gemm_label, p.comm: p.comm_label}
        rows.append((Path(p.trace).name, names[p.first], names[p.second], t.scheme, f"{t.first_us:.3f}",
                     f"{t.second_us:.3f}", f"{t.total_us:.3f}", p.op.name))
    sys.stdout.write(f"pairs ({len(pairs)}):\n" + _table(
        ("trace", "first node", "second node", "scheme", "first us", "second us", "total us", "operation"), rows))
    if args.scheme == ADVISE:
        sys.stdout.write("scheme: the one t3sim advise ranks first for the pair's operation (kind:option=value for a "
                         f"variant; the rankings: t3sim advise --chakra, runs in {Path(args.results) / 'advise'})\n")
    sys.stdout.write("first node: runs first (a GEMM before its reduce-scatter or all-reduce, an all-gather before its "
                     "GEMM) and gets the scheme's time to that phase's end; second node: the rest of the total\n")
    sys.stdout.write("".join(f"wrote {p}\n" for p in outs))
    sys.stdout.write(_unmapped(unmapped))
    return 0
