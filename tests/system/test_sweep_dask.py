"""Sweeps on a Dask distributed cluster: a LocalCluster on loopback gives the local pool's results."""

from __future__ import annotations

import pytest

from t3sim.config.sweep import expand
from t3sim.exec.runner import run_points
from tests.system.test_sweep_exec import N_POINTS, fail_some, stats_bytes, tiny_experiment

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    """One worker process with two threads on 127.0.0.1 (results really cross a process boundary)."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1",
                                  dashboard_address=None, worker_dashboard_address=None) as c:
        yield c


def test_dask_matches_local_pool(tmp_path, cluster):
    path = tiny_experiment(tmp_path)
    points = expand(path)
    local = run_points(points, out=tmp_path / "local", jobs=2)
    remote = run_points(points, out=tmp_path / "dask", executor="dask", scheduler=cluster.scheduler_address)
    assert [o.status for o in remote] == ["simulated"] * N_POINTS
    assert [o.point.label for o in remote] == [o.point.label for o in local]
    a, b = stats_bytes(tmp_path / "local"), stats_bytes(tmp_path / "dask")
    assert len(a) == N_POINTS and a == b  # byte-identical statistics
    again = run_points(points, out=tmp_path / "dask", executor="dask", scheduler=cluster.scheduler_address)
    assert [o.status for o in again] == ["reused"] * N_POINTS


def test_dask_cli_and_per_point_failures(tmp_path, cluster, run_cli):
    path = tiny_experiment(tmp_path)
    outcomes = run_points(expand(path), out=tmp_path / "f", executor="dask", scheduler=cluster.scheduler_address,
                          simulate_fn=fail_some)
    assert [o.status for o in outcomes] == ["simulated", "simulated", "failed", "failed"]
    assert [o.error.kind for o in outcomes[2:]] == ["input", "simulation"]
    rc, out, err = run_cli("run", str(path), "--out", str(tmp_path / "cli"), "--executor", "dask",
                           "--scheduler", cluster.scheduler_address)
    assert rc == 0, err
    assert f"4 to simulate on Dask scheduler {cluster.scheduler_address}" in err
    cli, partial = stats_bytes(tmp_path / "cli"), stats_bytes(tmp_path / "f")
    assert len(cli) == N_POINTS and len(partial) == 2 and all(cli[h] == b for h, b in partial.items())


def test_unreachable_scheduler_is_a_one_line_error(tmp_path, run_cli, monkeypatch):
    from t3sim.exec import executors
    from tests.conftest import assert_one_line_error

    monkeypatch.setattr(executors, "DASK_CONNECT_TIMEOUT_S", 1)
    path = tiny_experiment(tmp_path)
    rc, _, err = run_cli("run", str(path), "--out", str(tmp_path), "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9")
    assert_one_line_error(rc, err, "--scheduler tcp://127.0.0.1:9", "no Dask scheduler reachable")
