"""Sweeps: any -j gives identical results, re-runs reuse, interrupted sweeps resume, failures per point."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from t3sim.config.sweep import expand
from t3sim.errors import InputError, SimulationError
from t3sim.exec.progress import Progress
from t3sim.exec.runner import PointError, run_points, simulate_point
from t3sim.exec.runner import guarded
from t3sim.results.store import ResultStore, is_complete
from tests.conftest import REPO, assert_one_line_error
from tests.system.helpers import tiny_sweep

N_POINTS = 4
FIRST_LABEL = "workload.tokens=128,scheme.kind=sequential"


def tiny_experiment(directory: Path, name: str = "tiny-sweep") -> Path:
    path = Path(directory) / f"{name}.yaml"
    path.write_text(tiny_sweep(name, ["sequential", "ideal_rs_nmc"]))
    return path


def stats_bytes(root: Path, name: str = "tiny-sweep") -> dict:
    """{config hash: stats.json bytes} of every complete run of the experiment."""
    return {p.name: (p / "stats.json").read_bytes() for p in ResultStore(root).iter_runs(name)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The tiny sweep's stats.json bytes from one uninterrupted in-process run."""
    d = tmp_path_factory.mktemp("reference")
    run_points(expand(tiny_experiment(d)), out=d / "results")
    ref = stats_bytes(d / "results")
    assert len(ref) == N_POINTS
    return ref


# -- module-level (picklable) point functions for fault injection -------------------------------------------

def stall_unless_first(point):
    """The first point simulates normally; every other one hangs (so a test can interrupt the sweep)."""
    if point.label != FIRST_LABEL:
        # short sleeps: a SIGINT that the OS delivers to another thread of the process does not
        # interrupt a long sleep of the main thread, so Python would run its handler only afterwards
        for _ in range(1200):
            time.sleep(0.1)
    return simulate_point(point)


def fail_some(point):
    """Bad input on tokens=256 sequential, a simulation failure on tokens=256 ideal_rs_nmc."""
    if point.label == "workload.tokens=256,scheme.kind=sequential":
        return _as_error(InputError("workload.tokens", "256", "a size this scheme accepts"))
    if point.label == "workload.tokens=256,scheme.kind=ideal_rs_nmc":
        return _as_error(SimulationError("deadlock at 1234 ps\nstuck: gpu0.mc0 (queue full)"))
    return simulate_point(point)


def _raise(exc):
    raise exc


def _as_error(exc):
    return guarded(_raise, exc)


# -- identical results, reuse ---------------------------------------------------------------------------------

def test_jobs_give_identical_results_and_reruns_reuse(tmp_path, reference):
    path = tiny_experiment(tmp_path)
    points = expand(path)
    assert [p.label for p in points][0] == FIRST_LABEL and len(points) == N_POINTS
    pooled = run_points(points, out=tmp_path / "j2", jobs=2)
    assert [o.status for o in pooled] == ["simulated"] * N_POINTS
    assert [o.point.label for o in pooled] == [p.label for p in points]  # point order, not completion order
    b = stats_bytes(tmp_path / "j2")
    assert b == reference  # byte-identical to the in-process (-j 1) run

    def must_not_run(point):
        raise AssertionError(f"re-run simulated {point.label}")

    again = run_points(points, out=tmp_path / "j2", jobs=2, simulate_fn=must_not_run)
    assert [o.status for o in again] == ["reused"] * N_POINTS
    assert [o.path for o in again] == [o.path for o in pooled]
    assert stats_bytes(tmp_path / "j2") == b


def test_force_recomputes_and_replaces(tmp_path):
    path = tiny_experiment(tmp_path)
    points = expand(path)[:1]
    first = run_points(points, out=tmp_path)[0]
    meta = json.loads((first.path / "meta.json").read_text())
    # Mark the old meta so a rewrite is visible even when the new wall_s happens to be equal.
    (first.path / "meta.json").write_text(json.dumps({**meta, "stale": True}))
    again = run_points(points, out=tmp_path, force=True)[0]
    assert again.status == "simulated" and again.path == first.path
    fresh = json.loads((again.path / "meta.json").read_text())
    assert "stale" not in fresh and fresh["config_hash"] == meta["config_hash"]  # rewritten, same point
    assert stats_bytes(tmp_path) == {first.path.name: (first.path / "stats.json").read_bytes()}


# -- interruption and resume ------------------------------------------------------------------------------

def test_interrupt_in_process_keeps_finished_points(tmp_path, reference):
    """Ctrl-C during the second point (in-process): the first is saved, nothing half-written, re-run resumes."""
    path = tiny_experiment(tmp_path)
    points = expand(path)
    calls = []

    def interrupted_on_second(point):
        calls.append(point.label)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return simulate_point(point)

    log = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        run_points(points, out=tmp_path / "r", progress=Progress(log, tty=False), simulate_fn=interrupted_on_second)
    assert "interrupted after" in log.getvalue() and "1 of 4 points have results" in log.getvalue()
    assert len(stats_bytes(tmp_path / "r")) == 1
    outcomes = run_points(points, out=tmp_path / "r")
    assert [o.status for o in outcomes] == ["reused"] + ["simulated"] * (N_POINTS - 1)
    assert stats_bytes(tmp_path / "r") == reference


SCRIPT = textwrap.dedent("""\
    import sys
    from t3sim.config.sweep import expand
    from t3sim.exec.progress import Progress
    from t3sim.exec.runner import run_points
    from tests.system.test_sweep_exec import stall_unless_first
    try:
        run_points(expand(sys.argv[1]), out=sys.argv[2], jobs=int(sys.argv[3]), progress=Progress(sys.stderr),
                   simulate_fn=stall_unless_first)
    except KeyboardInterrupt:
        sys.exit(130)
""")


@pytest.mark.parametrize("sig,jobs", [(signal.SIGINT, 1), (signal.SIGTERM, 2), (signal.SIGKILL, 1)],
                         ids=["ctrl-c", "kill-pool", "kill-9"])
def test_killed_sweep_resumes(tmp_path, sig, jobs, reference):
    """A sweep process killed after its first point lands loses nothing finished; a re-run does only the rest."""
    psutil = pytest.importorskip("psutil")
    path = tiny_experiment(tmp_path)
    out = tmp_path / "results"
    # as a user's foreground run: Ctrl-C not ignored (a shell script's background job, e.g. this suite started with
    # `(cmd &)`, passes SIGINT on ignored, and a Python started that way keeps ignoring it)
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(path), str(out), str(jobs)], cwd=REPO,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    children = []
    try:
        deadline = time.monotonic() + 120
        while not stats_bytes(out) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert len(stats_bytes(out)) == 1, proc.stderr.read() if proc.poll() is not None else "no point landed"
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= (jobs if jobs > 1 else 0)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:  # never leave the sweep or its workers behind
        for p in [proc, *children]:
            if p.poll() is None if p is proc else p.is_running():
                p.kill()
    if sig != signal.SIGKILL:
        assert proc.returncode == 130, err
        assert "interrupted after" in err and "run the same command again to resume" in err
        assert "Traceback" not in err
        gone, alive = psutil.wait_procs(children, timeout=15)
        assert not alive, f"processes left running: {alive}"  # the pool was stopped, not orphaned
    else:
        # a write cut short by kill -9 leaves only a hidden temp dir (never trusted, removed on resume)
        (out / "tiny-sweep" / f".tmp-{'0' * 12}-{proc.pid}").mkdir()
    assert len(stats_bytes(out)) == 1  # nothing half-written is visible
    outcomes = run_points(expand(path), out=out)
    assert [o.status for o in outcomes] == ["reused"] + ["simulated"] * (N_POINTS - 1)
    assert not list((out / "tiny-sweep").glob(".tmp-*"))
    assert stats_bytes(out) == reference


# -- failures, CLI ----------------------------------------------------------------------------------------

def test_failed_points_are_reported_per_point_and_the_rest_run(tmp_path):
    points = expand(tiny_experiment(tmp_path))
    outcomes = run_points(points, out=tmp_path, simulate_fn=fail_some)
    assert [o.status for o in outcomes] == ["simulated", "simulated", "failed", "failed"]
    assert outcomes[2].error.kind == "input" and "workload.tokens" in outcomes[2].error.message
    assert outcomes[3].error.kind == "simulation" and "stuck: gpu0.mc0" in outcomes[3].error.message
    assert all(is_complete(o.path) for o in outcomes[:2])
    # fail_fast: stop at the first failure; later points are skipped, not run
    ff = run_points(points, out=tmp_path / "ff", simulate_fn=fail_some, fail_fast=True)
    assert [o.status for o in ff] == ["simulated", "simulated", "failed", "failed"]
    assert ff[3].error.kind == "skipped"
    # an unexpected exception is kept with its traceback and does not stop the sweep
    err = guarded(_raise, ZeroDivisionError("a bug"))
    assert isinstance(err, PointError) and err.kind == "internal" and "Traceback" in err.traceback


def test_cli_reports_failures_with_labels(tmp_path, run_cli, monkeypatch):
    import t3sim.exec.runner as runner

    path = tiny_experiment(tmp_path)
    monkeypatch.setattr(runner, "simulate_point", fail_some)
    rc, out, err = run_cli("run", str(path), "--out", str(tmp_path / "r"))
    assert rc == 3, err  # a simulation failure outranks bad input
    assert "Traceback" not in err
    assert "t3sim: error: point workload.tokens=256,scheme.kind=sequential: workload.tokens: found 256" in err
    assert "t3sim: simulation failed: point workload.tokens=256,scheme.kind=ideal_rs_nmc: deadlock" in err
    assert "workload.tokens=128,scheme.kind=sequential" in out and "tokens=256" not in out  # the table: successes
    rc, out, err = run_cli("run", str(path), "--out", str(tmp_path / "r"), "--json")  # successes reused, failures retried
    rows = json.loads(out)
    assert rc == 3 and [r.get("reused") for r in rows] == [True, True, None, None]
    assert [r.get("error_kind") for r in rows[2:]] == ["input", "simulation"]


def test_cli_progress_and_rerun(tmp_path, run_cli):
    path = tiny_experiment(tmp_path)
    rc, out, err = run_cli("run", str(path), "--out", str(tmp_path / "r"), "-j", "2", "--json")
    assert rc == 0, err
    rows = json.loads(out)
    assert [r["label"] for r in rows] == [p.label for p in expand(path)] and not any(r["reused"] for r in rows)
    lines = err.splitlines()  # stderr is not a TTY here: plain lines, one per point, with percent, elapsed and ETA
    assert lines[0] == "tiny-sweep: 4 points, 4 to simulate on 2 local worker processes"
    points = [l for l in lines if l.startswith("[")]  # (a status line every 10 s may come between them)
    assert sorted(l.split("]")[0] for l in points) == ["[1/4", "[2/4", "[3/4", "[4/4"]
    assert all("done in" in l and "% done, elapsed " in l and "ETA " in l for l in points)
    assert "(100.0% done, " in points[-1]
    assert lines[-1].startswith("done in ") and "(0 reused, 4 simulated, 0 failed)" in lines[-1]
    rc, out, err = run_cli("run", str(path), "--out", str(tmp_path / "r"), "--json")
    assert rc == 0 and all(r["reused"] for r in json.loads(out))
    assert "4 already simulated (reused; --force recomputes)" in err


def test_tty_progress_bar():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    s = Tty()
    p = Progress(s, interval=0.01)
    p.begin("x", 4, 1, "this process")
    time.sleep(0.05)
    p.point_done("a=1", "done in 0.1 s -> r/x/abc")
    p.end()
    text = s.getvalue()
    assert "\r\033[K[" in text and "2/4 points | elapsed 0:00 | ETA 0:00" in text
    assert text.endswith("done in 0:00: 4 points (1 reused, 1 simulated, 0 failed)\n")


def test_bad_jobs_and_missing_dask_are_one_line_errors(tmp_path, run_cli, monkeypatch):
    path = tiny_experiment(tmp_path)
    rc, _, err = run_cli("run", str(path), "--out", str(tmp_path), "-j", "-3")
    assert_one_line_error(rc, err, "-j/--jobs", "-3")
    rc, _, err = run_cli("run", str(path), "--out", str(tmp_path), "--executor", "dask")
    assert_one_line_error(rc, err, "--scheduler")
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the dask extra were not installed
    rc, _, err = run_cli("run", str(path), "--out", str(tmp_path), "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1")
    assert_one_line_error(rc, err, "--executor dask", "pip install 't3sim[dask]'")
    assert not list(tmp_path.glob("tiny-sweep/*"))  # nothing ran


def test_reuse_from_other_code_revision_is_noted(tmp_path, monkeypatch):
    """Results are reused by config hash; a result simulated by another code revision is pointed out."""
    import t3sim.exec.runner as runner

    points = expand(tiny_experiment(tmp_path))[:1]
    monkeypatch.setattr(runner, "code_revision", lambda: "aaaa")
    import t3sim.results.store as store_mod
    monkeypatch.setattr(store_mod, "code_revision", lambda: "aaaa")
    run_points(points, out=tmp_path / "r")
    meta = json.loads(next((tmp_path / "r").glob("*/*/meta.json")).read_text())
    assert meta["code_revision"] == "aaaa"
    for now, expect in (("aaaa", False), ("bbbb", True)):
        monkeypatch.setattr(runner, "code_revision", lambda now=now: now)
        log = io.StringIO()
        again = run_points(points, out=tmp_path / "r", progress=Progress(log, tty=False))
        assert again[0].status == "reused"
        assert ("code revision aaaa (now bbbb)" in log.getvalue()) is expect
