"""Run a sweep's points: reuse finished ones, simulate the rest on an executor, save each as it lands.

``run_points(points, ...)`` is the engine under ``t3sim run`` and
:func:`run_experiment` (an experiment file's points):

1. leftovers of interrupted writes are removed (``ResultStore.clean_partial``);
2. every point is resolved once into what it runs and checked
   (:func:`t3sim.exec.checks.check_experiment`), and every point whose result
   is already complete in the store is reused (unless ``force``) -- if the
   model that simulated it is the current one: a stored result whose
   ``meta.json`` records another ``model_version`` (or none: version 0) is
   simulated again and replaced (:mod:`t3sim.model_version`; the config hash
   stays the same, so it lands in the same directory);
3. the rest are grouped by the simulation they need
   (:func:`t3sim.system.core.shared_groups`: points whose schemes share a
   simulation key and whose configs differ only in ``scheme.kind``, e.g.
   Sequential and Ideal-GEMM-RS-Overlap of one sub-layer, or one point that
   two experiment files both contain), and each group runs as one task -- one
   simulation, of the mode :mod:`t3sim.exec.dispatch` picks -- on the chosen
   executor: in this process (``jobs=1``), on
   ``jobs`` local worker processes (the largest simulations first, by the
   bytes their workloads move, so that no long one starts last), or on a
   Dask cluster; this process writes each result atomically the moment it
   arrives, so an interruption (Ctrl-C, SIGTERM, a killed process) loses only
   the points still running and a re-run resumes from there;
4. outcomes come back in point order, whatever order points finished in.

Results do not depend on the executor or ``jobs``, nor on sharing: each
simulation is run from its resolved config and seed, and the statistics
(``stats.json``) are byte-identical to a standalone
:func:`~t3sim.exec.dispatch.simulate` of each point.

Failures: a point whose simulation raises :class:`~t3sim.errors.InputError`
(kind ``input``) or :class:`~t3sim.errors.SimulationError` (kind
``simulation``) or anything else (kind ``internal``, a bug; its traceback is
kept) becomes a failed :class:`PointOutcome` carrying a :class:`PointError`,
reported with the point's label; a failed shared simulation fails every point
of its group with the same error. The sweep goes on with the other points
unless ``fail_fast``, which stops at the first failure (points not started are
marked ``skipped``). Executor failures (a worker process died, the cluster was
lost) stop the sweep with :class:`~t3sim.exec.executors.ExecutorError`;
finished points are saved either way.
"""

from __future__ import annotations

import signal
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Union

from t3sim.config.sweep import Point, expand
from t3sim.errors import InputError, SimulationError, check_writable_dir
from t3sim.exec import dispatch, executors
from t3sim.exec.checks import check_experiment
from t3sim.exec.progress import Progress, Silent
from t3sim import model_version
from t3sim.results.store import ResultStore, RunResult, code_revision, load_run, stored_model_version
from t3sim.system.core import Resolved, shared_groups, sharer_labels
from t3sim.system.workmeter import workload_bytes


@dataclass(frozen=True)
class PointError:
    """Why a point produced no result.

    Attributes:
        kind: ``input`` (bad input found while simulating), ``simulation``
            (deadlock, invariant violation), ``internal`` (an unexpected
            exception: a bug) or ``skipped`` (not run: ``fail_fast`` stopped
            the sweep).
        message: what went wrong (one line for ``input``).
        traceback: the worker's traceback, for ``internal`` only.
    """

    kind: str
    message: str
    traceback: str = ""


@dataclass
class PointOutcome:
    """What happened to one point: a result (reused or freshly simulated) or an error."""

    point: Point
    result: Optional[RunResult]
    reused: bool
    path: Optional[Path]
    error: Optional[PointError] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def status(self) -> str:
        """``reused``, ``simulated`` or ``failed``."""
        return "failed" if self.error else ("reused" if self.reused else "simulated")


@dataclass(frozen=True)
class Job(Point):
    """A sweep point with what it runs, resolved once where the sweep is planned (and checked there) and handed
    to the process that simulates it."""

    resolved: Optional[Resolved] = None


def _run(points: Sequence[Point]) -> List[RunResult]:
    """The points' results (:func:`t3sim.exec.dispatch.run`), each resolved unless it comes resolved (a :class:`Job`)."""
    return dispatch.run([p.resolved if isinstance(p, Job) and p.resolved is not None else dispatch.resolve(p.config)
                         for p in points])


def simulate_point(point: Point) -> Union[RunResult, PointError]:
    """Simulate one point; errors come back as a :class:`PointError` value (picklable, no traceback to unpickle)."""
    value = guarded(_run, [point])
    return value if isinstance(value, PointError) else value[0]


def simulate_group(points: Sequence[Point]) -> Union[RunResult, List[RunResult], PointError]:
    """Simulate points that share one simulation (a group of :func:`t3sim.system.core.shared_groups`) once.

    A group of one is :func:`simulate_point`; a larger group returns one result per point, in order, or
    one :class:`PointError` for the whole group.
    """
    if len(points) == 1:
        return simulate_point(points[0])
    return guarded(_run, points)


def guarded(fn: Callable, *args):
    """``fn(*args)``, with exceptions (not Ctrl-C) turned into a :class:`PointError` value."""
    try:
        return fn(*args)
    except InputError as exc:
        return PointError("input", exc.one_line())
    except SimulationError as exc:
        return PointError("simulation", str(exc))
    except Exception as exc:  # a bug: keep going with the other points, keep the traceback
        return PointError("internal", f"{type(exc).__name__}: {exc}", traceback.format_exc())


def describe_executor(executor: str, jobs: int, scheduler: Optional[str]) -> str:
    if executor == "dask":
        return f"Dask scheduler {scheduler}"
    return "this process" if jobs <= 1 else f"{jobs} local worker processes"


def _note_stale(outcomes, progress) -> None:
    """Say when reused results were simulated by other code than this (config hashes ignore code)."""
    now = code_revision()
    old = sorted({o.result.meta.get("code_revision", "") for o in outcomes if o is not None and o.result is not None}
                 - {now, ""})
    if now and old:
        n = sum(1 for o in outcomes if o is not None and o.result is not None
                and o.result.meta.get("code_revision", "") in old)
        progress.note(f"note: {n} reused point{'s were' if n != 1 else ' was'} simulated by code revision "
                      f"{', '.join(old)} (now {now}); --force recomputes")


def _note_other_model(other: Dict[int, int], progress) -> None:
    """Say how many stored points are simulated again because another model version simulated them."""
    if other:
        n = sum(other.values())
        was = ", ".join(f"{model_version.describe(v)}: {k}" for v, k in sorted(other.items()))
        progress.note(f"note: {n} stored point{'s were' if n != 1 else ' was'} simulated by another model ({was}; "
                      f"now version {model_version.MODEL_VERSION}): simulating {'them' if n != 1 else 'it'} again")


def run_points(points: Sequence[Point], *, out: Union[str, Path] = "results", store: Optional[ResultStore] = None,
               executor: str = "local", jobs: int = 1, scheduler: Optional[str] = None, force: bool = False,
               fail_fast: bool = False, progress: Optional[Progress] = None,
               simulate_fn: Optional[Callable[[Point], Union[RunResult, PointError]]] = None) -> List[PointOutcome]:
    """Run ``points`` (from :func:`t3sim.config.sweep.expand`); return their outcomes in point order.

    Args:
        points: the sweep's points.
        out: results root (ignored if ``store`` is given).
        store: the result store to reuse from and write to.
        executor: ``local`` (``jobs`` processes; 1 = this process) or ``dask``.
        jobs: local worker processes; 0 = one per usable CPU. Ignored by ``dask``.
            Workers are fresh interpreters (forkserver/spawn), so a script
            that asks for ``jobs > 1`` needs the usual
            ``if __name__ == "__main__":`` guard.
        scheduler: the Dask scheduler address (``tcp://host:8786``), for ``dask``.
        force: recompute points that already have results (and replace them). Without it, a stored result
            of another model version (:mod:`t3sim.model_version`) is recomputed and replaced all the same.
        fail_fast: stop at the first failed point instead of running the rest.
        progress: where to report progress (default: nowhere).
        simulate_fn: a per-point function (module-level, picklable), for tests
            and fault injection: every point is then one task, ``simulate_fn(point)``.
            By default points that share a simulation are grouped and each
            group is one task (:func:`simulate_group`): the Fig. 16 sweep's
            Sequential and Ideal-GEMM-RS-Overlap points of a sub-layer are
            simulated once. A group runs only for its members not reused from
            the store; progress is reported per point (``done in 12.3 s
            (shared with sequential)``: the shared run's time), and a failed
            group fails each of its members with the group's error.
    """
    if executor not in executors.EXECUTORS:
        raise InputError("--executor", repr(executor), " or ".join(executors.EXECUTORS))
    if executor == "dask":
        if not scheduler:
            raise InputError("--executor dask", "no --scheduler", "--scheduler ADDRESS of a running Dask scheduler")
        executors.import_distributed()  # fail before doing anything else
    elif jobs < 0:
        raise InputError("-j/--jobs", str(jobs), "a number of processes >= 1, or 0 for one per CPU")
    jobs = executors.default_jobs() if jobs == 0 else jobs
    progress = progress or Silent()
    store = store or ResultStore(out)
    check_writable_dir(store.root, "--out")  # before simulating anything whose result could not be saved

    resolved: List[Optional[Resolved]] = [None] * len(points)
    if simulate_fn is None:  # points we simulate ourselves: resolved once; absurd ones are bad input before anything runs
        for i, p in enumerate(points):
            where = [p.source] if p.source else []
            resolved[i] = check_experiment(p.config, ": ".join(where + ([f"point {p.label}"] if len(points) > 1 else [])))
    for name in sorted({p.config.name for p in points}):
        store.clean_partial(name)
    outcomes: List[Optional[PointOutcome]] = [None] * len(points)
    todo: List[int] = []
    other: Dict[int, int] = {}  # model version of stored points another model simulated -> how many
    replace = set()  # those points: simulated again, their stored directories replaced
    for i, p in enumerate(points):
        found = None if force else store.find(p.config.name, p.config.model_dump(mode="json"))
        if found is not None and (v := stored_model_version(found)) != model_version.MODEL_VERSION:
            other[v] = other.get(v, 0) + 1
            replace.add(i)
            found = None
        if found is not None:
            outcomes[i] = PointOutcome(p, load_cached(found), True, found)
        else:
            todo.append(i)

    _note_stale(outcomes, progress)
    _note_other_model(other, progress)
    if simulate_fn is None:  # one task per shared simulation
        tasks = [[todo[k] for k in g] for g in shared_groups([points[i].config for i in todo])]
        fn: Callable = simulate_group
        items: list = [[Job(points[i].label, points[i].config, points[i].source, resolved[i]) for i in t]
                       for t in tasks]
    else:  # one task per point
        tasks = [[i] for i in todo]
        fn = simulate_fn
        items = [points[i] for i in todo]
    # each point's weight: the bytes its workload moves; points sharing a simulation share its weight
    weights = [1.0] * len(points)
    if simulate_fn is None:
        weights = [workload_bytes(p.config, r.kernel) for p, r in zip(points, resolved)]
        for t in tasks:
            for i in t:
                weights[i] /= len(t)
    task_weight = [sum(weights[i] for i in t) for t in tasks]
    task_label = [",".join(points[i].label for i in t) if len(t) < 3 else f"{points[t[0]].label} (+{len(t) - 1})"
                  for t in tasks]

    def on_progress(j: int, status) -> None:
        progress.update(j, status, task_weight[j], task_label[j] if len(points) > 1 else "")

    workers = min(jobs, len(tasks))
    client = executors.dask_client(scheduler) if executor == "dask" and tasks else None
    if client is not None:
        backend = executors.dask(fn, items, client)
    elif workers > 1:  # the largest simulations first, so that none starts last and runs alone (LPT order)
        largest_first = sorted(range(len(tasks)), key=lambda j: -task_weight[j])
        backend = executors.local_pool(fn, items, workers, on_progress=on_progress, order=largest_first)
    else:
        backend = executors.serial(fn, items, on_progress=on_progress)
    names = list(dict.fromkeys(p.config.name for p in points))  # experiments in point order
    exp_name = (names[0] if len(names) == 1 else f"{len(names)} experiments ({', '.join(names)})") if names \
        else "(no points)"
    progress.begin(exp_name, len(points), len(points) - len(todo), describe_executor(executor, workers, scheduler),
                   weights=weights, reused_weight=sum(w for i, w in enumerate(weights) if outcomes[i] is not None))
    if len(tasks) < len(todo):
        progress.note(f"{len(todo)} points to simulate in {len(tasks)} simulations "
                      "(points whose schemes share a simulation are simulated once)")

    how = "stopped"
    try:
        with _sigterm_raises_interrupt():
            for j, value in backend:
                members = tasks[j]
                values = value if isinstance(value, list) else [value] * len(members)
                failed = False
                for i, v in zip(members, values):
                    p = points[i]
                    if isinstance(v, PointError):
                        outcomes[i] = PointOutcome(p, None, False, None, v)
                        progress.point_done(p.label, f"FAILED ({v.kind}): {_first_line(v.message)}", failed=True,
                                            weight=weights[i], task=j)
                        failed = True
                        continue
                    d = store.write(v, replace=force or i in replace)
                    outcomes[i] = PointOutcome(p, v, False, d)
                    labels = sharer_labels([points[k].config for k in members])
                    others = [lab for k, lab in zip(members, labels) if k != i]
                    shared = f" (shared with {', '.join(others)})" if others else ""
                    if "memory_lookahead" in v.meta:  # simulated twice: say so, the cost doubled
                        shared += " (run twice: the second without the memory lookahead; meta.json says why)"
                    progress.point_done(p.label, f"done in {v.meta.get('wall_s', 0):.1f} s{shared} -> {d}",
                                        weight=weights[i], task=j)
                if failed and fail_fast:
                    break
        how = "done"
    except KeyboardInterrupt:
        how = "interrupted"
        raise
    finally:
        backend.close()  # stops workers still running (no-op once exhausted)
        if client is not None:
            client.close()
        progress.end(how)
    skipped = PointError("skipped", "not run: the sweep stopped at the first failure (fail_fast)")
    return [o if o is not None else PointOutcome(points[i], None, False, None, skipped) for i, o in enumerate(outcomes)]


def load_cached(d: Path) -> RunResult:
    """A stored result to reuse; a corrupt one is bad input whose message says how to recompute it."""
    try:
        return load_run(d)
    except InputError as exc:
        raise InputError(exc.where, f"a corrupt cached result: {exc.found}" + (f" (expected {exc.allowed})" if exc.allowed else ""),
                         "--force to recompute this point and replace it (or delete the directory)") from None


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] + (" ..." if len(lines) > 1 else "") if lines else ""


@contextmanager
def _sigterm_raises_interrupt() -> Iterator[None]:
    """Treat SIGTERM (``kill``) like Ctrl-C while the sweep runs, so workers are stopped and the run says where it got to."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(_sig, _frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_experiment(path: Union[str, Path], overrides: Iterable[str] = (), out: Union[str, Path] = "results",
                   force: bool = False, log=None, *, jobs: int = 1, executor: str = "local",
                   scheduler: Optional[str] = None, fail_fast: bool = False,
                   progress: Optional[Progress] = None) -> List[PointOutcome]:
    """Run every point of an experiment file; outcomes in point order (see :func:`run_points`).

    Finished points are reused unless ``force``; the rest run in this process
    (``jobs=1``), on ``jobs`` local processes (0 = one per CPU) or, with
    ``executor="dask"``, on the Dask cluster at ``scheduler``; each result is
    written as soon as it lands. Progress goes to ``progress``, or to the
    stream ``log`` if given, else nowhere. A point that fails comes back as an
    outcome with ``error`` set; the others still run unless ``fail_fast``.
    """
    points = expand(path, overrides)
    if progress is None and log is not None:
        progress = Progress(log)
    return run_points(points, out=out, force=force, jobs=jobs, executor=executor, scheduler=scheduler,
                      fail_fast=fail_fast, progress=progress)
