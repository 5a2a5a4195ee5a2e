"""Progress with percent and ETA: the workload meter, the run reporter, the sweep display, and what
``t3sim run`` / ``t3sim validate`` print on a terminal and into a log."""

from __future__ import annotations

import io
import re
import time

import pytest

from t3sim.config.sweep import expand
from t3sim.exec import executors
from t3sim.exec.progress import Progress
from t3sim.schemes.runtime import scheme_for
from t3sim.sim import report
from t3sim.sim.report import RunStatus, StreamReporter
from t3sim.system.model import SystemModel
from t3sim.system.workmeter import workload_bytes
from tests.system.helpers import tiny_sweep


class Tty(io.StringIO):
    def isatty(self):
        return True


def _tiny(tmp_path, schemes=("sequential",)):
    p = tmp_path / "tiny.yaml"
    p.write_text(tiny_sweep("tiny-progress", list(schemes)))
    return p


# ------------------------------------------------------------------------------ the workload meter


@pytest.mark.parametrize("scheme", ["sequential", "t3", "copy"])
def test_meter_rises_to_exactly_one(tmp_path, monkeypatch, scheme):
    """Reports every 1024 events: fractions never fall, start below 1, and the meter reads exactly 1 once the
    GEMM's WGs retired and every collective's slices arrived."""
    monkeypatch.setattr(report, "POLL_S", 0.0)
    cfg = expand(_tiny(tmp_path, [scheme]))[1].config  # 256 tokens
    model = SystemModel(cfg)
    seen = []
    with report.reporting(seen.append):
        scheme_for(cfg.scheme.kind).run(model)
    fractions = [s.fraction for s in seen]
    assert fractions and fractions == sorted(fractions) and 0 <= fractions[0] < 1
    assert all("GEMM" in s.text and "simulated" in s.text for s in seen)
    done, text = model.engine.work()
    k = model.kernel
    assert done == pytest.approx(1.0) and f"GEMM {k.num_wgs}/{k.num_wgs} WGs" in text
    assert text.endswith({"t3": "collectives 1.00/1", "sequential": "collectives 2.00/2"}.get(scheme, " WGs"))


def test_workload_bytes_is_the_meters_total(tmp_path):
    """A sweep weighs points by the same bytes the meter counts (no model built)."""
    for p in expand(_tiny(tmp_path, ["sequential", "t3", "copy"])):
        m = SystemModel(p.config)
        assert workload_bytes(p.config) == pytest.approx(m.engine.work.total_B)  # a fused RS is still an RS
        k = m.kernel
        colls = 0 if p.config.scheme.kind == "copy" else 2 * (2 - 1) * k.M * k.N * 2  # copy runs no collectives
        assert workload_bytes(p.config) == pytest.approx(
            2 * (k.tiles_n * k.M * k.K + k.tiles_m * k.K * k.N + k.M * k.N) + colls)


# ------------------------------------------------------------------------------- reporters


def test_stream_reporter_without_a_terminal_writes_at_most_one_line_per_10_s():
    now = [0.0]
    out = io.StringIO()
    r = StreamReporter(out, tty=False, clock=lambda: now[0])
    for i in range(121):  # 60 s of reports every 0.5 s
        now[0] = i * 0.5
        r(RunStatus(0, i / 120, f"step {i}", wall_s=now[0]))
    lines = out.getvalue().splitlines()
    assert len(lines) == 6  # at 10, 20, ..., 60 s
    assert [re.match(r"([\d.]+)%", ln).group(1) for ln in lines] == ["16.7", "33.3", "50.0", "66.7", "83.3", "100.0"]
    assert "step 20 | elapsed 0:10 | ETA 0:50" in lines[0]
    assert "\r" not in out.getvalue()


def test_stream_reporter_on_a_terminal_redraws_one_line():
    now = [0.0]
    out = Tty()
    r = StreamReporter(out, clock=lambda: now[0])
    for i in range(5):
        now[0] = float(i)
        r(RunStatus(0, None, f"simulated {i} us", wall_s=now[0]))
    r.close()
    text = out.getvalue()
    assert text.count("\r\033[K") == 5 and text.count("\n") == 1 and text.endswith("simulated 4 us | elapsed 0:04\n")
    assert "%" not in text and "ETA" not in text  # no meter: no percent, no made-up ETA


def test_sweep_percent_weighs_points_and_running_fractions():
    p = Progress(io.StringIO(), tty=False)
    p.begin("x", 3, 1, "this process", weights=[2.0, 1.0, 1.0], reused_weight=2.0)
    assert p.percent() == pytest.approx(50.0) and p.eta() is None  # reused work is free: no rate yet
    p.update(0, RunStatus(0, 0.5, "half", wall_s=1.0), weight=1.0)
    assert p.percent() == pytest.approx(62.5)
    p.point_done("a", "done", weight=1.0, task=0)
    assert p.percent() == pytest.approx(75.0)
    eta = p.eta()
    assert eta == pytest.approx(p.elapsed(), rel=0.05)  # one point's weight retired, one left
    p.end()


def test_workload_bytes_uses_the_systems_tile():
    """A sweep's weight is the meter's total also where the system names its own GEMM tile (the H200 presets: 96
    WGs for FC-1 at 1024 tokens where the default tile gives 192)."""
    from t3sim.commands.bench_cmd import CASES

    c = CASES["concurrent-op-h200-2k"]
    cfg = expand(c["config"], c["overrides"])[0].config
    assert workload_bytes(cfg) == pytest.approx(SystemModel(cfg).engine.work.total_B)


def test_a_finished_points_percent_never_dips():
    """The finished task's partial progress is dropped in the step that counts its point (``point_done(task=)``):
    with a separate ``task_done`` step first, a status line between the two would show the percent falling (38.5 ->
    30.2 % in a -j 2 sweep)."""
    p = Progress(io.StringIO(), tty=False)
    p.begin("x", 2, 0, "2 workers", weights=[1.0, 1.0])
    p.update(0, RunStatus(0, 0.9, "nearly", wall_s=1.0), weight=1.0)
    before = p.percent()
    p.point_done("a", "done", weight=1.0, task=0)
    assert before == pytest.approx(45.0) and p.percent() == pytest.approx(50.0) and 0 not in p.running
    p.end()


def test_sweep_log_lines_at_most_every_interval():
    out = io.StringIO()
    p = Progress(out, tty=False, interval=0.01, log_every_s=0.15)
    p.begin("x", 1, 0, "this process")
    import time

    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.5:
        p.update(0, RunStatus(0, (time.monotonic() - t0) / 0.5, "running", wall_s=time.monotonic() - t0))
        time.sleep(0.01)
    p.end()
    status = [ln for ln in out.getvalue().splitlines() if "| running" in ln]
    assert 2 <= len(status) <= 4, status
    assert all(re.match(r"[\d.]+% \| running \| elapsed \d+:\d\d \| ETA \d+:\d\d$", ln) for ln in status), status


def _report_twice(item):
    """A task in a worker process: two progress reports through whatever reporter the worker has."""
    rep = report.current()
    rep(RunStatus(1, 0.25, f"item {item}", 1.0))
    rep(RunStatus(2, 0.75, f"item {item}", 2.0))
    return item * 10


def test_worker_processes_send_their_progress_back():
    got = []
    results = dict(executors.local_pool(_report_twice, [1, 2], 2, on_progress=lambda j, s: got.append((j, s))))
    assert results == {0: 10, 1: 20}
    assert sorted((j, s.fraction, s.text) for j, s in got) == [(0, 0.25, "item 1"), (0, 0.75, "item 1"),
                                                              (1, 0.25, "item 2"), (1, 0.75, "item 2")]


def _pid_of(item):
    import os
    import time

    time.sleep(0.05)
    return item, os.getpid()


def test_local_pool_hands_out_items_in_the_given_order():
    """``order`` (run_points: the largest simulations first) decides which items start first; each result still
    comes back under its item's index."""
    items = list(range(6))
    results = dict(executors.local_pool(_pid_of, items, 1, order=[5, 4, 3, 2, 1, 0]))
    assert {j: v[0] for j, v in results.items()} == {j: j for j in items}
    started = list(executors.local_pool(_pid_of, items, 1, order=[5, 4, 3, 2, 1, 0]))
    assert [j for j, _ in started] == [5, 4, 3, 2, 1, 0]  # one worker: they end in the order they were handed out


def test_prestarted_fork_server_serves_the_pools():
    """``prestart`` (reproduce: the fork server imports the simulator while the configs load) is idempotent, and
    pools made after it fork their workers from that server."""
    import multiprocessing

    executors.prestart()
    executors.prestart()
    if "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        assert forkserver._forkserver._forkserver_pid is not None  # running
    results = dict(executors.local_pool(_pid_of, [0, 1, 2], 2))
    assert {j: v[0] for j, v in results.items()} == {0: 0, 1: 1, 2: 2}
    assert all(v[1] != __import__("os").getpid() for v in results.values())


# ------------------------------------------------------------------------------- the CLI


def test_single_run_log_shows_percent_and_eta(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(report, "POLL_S", 0.0)
    monkeypatch.setattr(report, "LOG_EVERY_S", 0.0)
    end = Progress.end

    def slow_end(self, *a, **k):  # a loaded machine: the ticker runs between the last point's line and the summary
        time.sleep(10 * self.interval)
        end(self, *a, **k)

    monkeypatch.setattr(Progress, "end", slow_end)
    cfg = _tiny(tmp_path)
    rc, out, err = run_cli("run", str(cfg), "--out", str(tmp_path / "r"), "--set", "sweep.grid={}", "--set",
                           "workload.tokens=256")
    assert rc == 0, err
    lines = err.splitlines()
    assert lines[0] == "tiny-progress: 1 point, 1 to simulate on this process"
    status = lines[1:-2]  # before the first report from the simulation: "0.0% | 0/1 points | ... | ETA ?"
    assert all(re.match(r"[\d.]+% \| .* \| elapsed \d+:\d\d \| ETA (\d+:\d\d|\?)$", ln) for ln in status), status
    running = [ln for ln in status if "simulated" in ln]
    # "ETA ?" until the meter has something retired (a first report can come before that on a loaded machine)
    assert running and all(re.match(r"[\d.]+% \| \[tiny-progress\] simulated [\d.,]+ us; GEMM \d+/8 WGs, "
                                     r"collectives [\d.]+/2 \| elapsed \d+:\d\d \| ETA (\d+:\d\d|\?)$", ln)
                           for ln in running), running
    assert re.match(r"\[1/1\] base: done in .* \(100\.0% done, elapsed \d+:\d\d, ETA 0:00\)$", lines[-2])


def test_timeline_on_a_cached_point_keeps_its_results(tmp_path, run_cli):
    cfg = _tiny(tmp_path)
    sets = ["--set", "sweep.grid={}", "--set", "workload.tokens=256"]
    rc, _, err = run_cli("run", str(cfg), "--out", str(tmp_path / "r"), *sets)
    assert rc == 0, err
    (d,) = list((tmp_path / "r" / "tiny-progress").iterdir())
    before = {f.name: f.read_bytes() for f in d.iterdir()}
    rc, out, err = run_cli("run", str(cfg), "--out", str(tmp_path / "r"), "--timeline", *sets)
    assert rc == 0, err
    assert f"{d} already has this point's results; re-simulating it to record the timeline" in err
    assert {f.name: f.read_bytes() for f in d.iterdir() if f.name != "timeline.json"} == before
    assert (d / "timeline.json").stat().st_size > 0 and f"timeline: {d / 'timeline.json'}" in out
    assert "differ" not in err  # the same code re-simulated the same statistics


def test_meter_gives_no_fraction_where_the_collective_feeds_the_gemm(monkeypatch):
    """Where the collective comes first (ag_gemm: FiCCO, FLUX AllGather, DMA all-gathers) its copies are not counted
    by the meter, which read 0.04-0.17 at half the wall time: no percent and no ETA there, rather than a
    wrong one; the simulated time and the GEMM's WGs are still reported."""
    from t3sim.commands.bench_cmd import CASES

    monkeypatch.setattr(report, "POLL_S", 0.0)
    c = CASES["ficco-char-ag-fc1-h200-1k"]
    cfg = expand(c["config"], c["overrides"])[0].config
    assert cfg.workload.direction == "ag_gemm"
    model = SystemModel(cfg)
    seen = []
    with report.reporting(seen.append):
        scheme_for(cfg.scheme.kind).run(model)
    assert seen and all(s.fraction is None and s.eta_s() is None for s in seen)
    assert all("GEMM" in s.text and "simulated" in s.text for s in seen)
