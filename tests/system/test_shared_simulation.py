"""Schemes that need the same simulation share one run: Sequential and Ideal-GEMM-RS-Overlap.

The results of a shared run are byte-identical to separate runs (only ``meta`` tells), and a sweep
simulates each shared simulation once, whatever ``-j``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import t3sim.system.core as run_mod
from t3sim.config import load_experiment
from t3sim.config.sweep import expand
from t3sim.errors import SimulationError
from t3sim.exec.progress import Progress
from t3sim.exec.runner import run_points
from t3sim.results.store import ResultStore
from t3sim.schemes.runtime import SCHEMES, scheme_for
from t3sim.system import simulate, simulate_shared
from t3sim.system.core import shared_groups, simulation_key
from tests.system.helpers import tiny_sweep

NAME = "shared-sweep"


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / f"{NAME}.yaml"
    path.write_text(tiny_sweep(NAME, ["sequential", "ideal_gemm_rs_overlap"]))
    return path


def point(tiny: Path, scheme: str, *extra: str):
    return load_experiment(tiny, ["sweep.grid={}", f"scheme.kind={scheme}", *extra])


def stats_text(result) -> str:
    """stats.json as the result store writes it."""
    return json.dumps(result.stats.to_dict(), indent=1) + "\n"


def stats_bytes(root: Path) -> dict:
    return {p.name: (p / "stats.json").read_bytes() for p in ResultStore(root).iter_runs(NAME)}


def test_schemes_name_their_simulation():
    expect = {"sequential": "sequential/baseline", "ideal_gemm_rs_overlap": "sequential/baseline",
              "ideal_rs_nmc": "sequential/nmc", "t3": "t3", "t3_mca": "t3_mca"}
    assert {n: SCHEMES[n].simulation for n in expect} == expect
    assert scheme_for("sequential").compose is scheme_for("t3").compose  # identity
    assert scheme_for("ideal_gemm_rs_overlap").compose is scheme_for("ideal_rs_nmc").compose


def test_grouping(tiny):
    schemes = ["sequential", "t3", "t3_mca", "ideal_gemm_rs_overlap", "ideal_rs_nmc"]
    exps = [point(tiny, s) for s in schemes]
    exps += [point(tiny, "sequential", "workload.tokens=256"), point(tiny, "ideal_gemm_rs_overlap", "workload.tokens=256")]
    exps.append(point(tiny, "ideal_gemm_rs_overlap", "simulation.seed=1"))  # a differing non-scheme field
    # sequential + ideal_gemm_rs_overlap share (per config); ideal_rs_nmc, t3, t3_mca do not
    assert shared_groups(exps) == [[0, 3], [1], [2], [4], [5, 6], [7]]
    assert simulation_key(exps[0]) == simulation_key(exps[3]) != simulation_key(exps[4])
    assert shared_groups([]) == []


def test_shared_run_equals_separate_runs(tiny):
    seq, ideal = point(tiny, "sequential"), point(tiny, "ideal_gemm_rs_overlap")
    shared = simulate_shared([seq, ideal])
    alone = [simulate(seq), simulate(ideal)]
    for s, a in zip(shared, alone):
        assert stats_text(s) == stats_text(a)  # byte-identical stats.json
        assert s.summary == a.summary and s.config == a.config and s.seed == a.seed
        assert s.meta["shared_simulation"] == ["sequential", "ideal_gemm_rs_overlap"]
        assert "shared_simulation" not in a.meta
        # the simulating process's peak resident memory so far (bench reads it for a sweep's pool workers)
        assert s.meta["peak_rss_MiB"] > 10 and a.meta["peak_rss_MiB"] >= s.meta["peak_rss_MiB"]
    st = shared[1].stats
    gemm, rs, ag = (st.value(f"time.{k}_us") for k in ("gemm", "rs", "ag"))
    assert st.value("time.total_us") == pytest.approx(max(gemm, rs) + ag)
    assert shared[0].stats.value("time.total_us") == pytest.approx(gemm + rs + ag)


def test_points_that_do_not_share_are_refused(tiny):
    seq = point(tiny, "sequential")
    with pytest.raises(ValueError, match="do not share one simulation"):
        simulate_shared([seq, point(tiny, "ideal_rs_nmc")])  # another simulation key
    with pytest.raises(ValueError, match="differ apart from scheme.kind"):
        simulate_shared([seq, point(tiny, "ideal_gemm_rs_overlap", "workload.tokens=256")])
    with pytest.raises(ValueError, match="do not share one simulation"):
        simulate_shared([point(tiny, "t3"), point(tiny, "t3_mca")])  # same code, different arbitration
    with pytest.raises(ValueError, match="one point"):
        simulate_shared([seq, point(tiny, "ideal_gemm_rs_overlap")], timeline=True)
    with pytest.raises(ValueError):
        simulate_shared([])


def test_sweep_simulates_each_shared_simulation_once(tiny, tmp_path, monkeypatch):
    points = expand(tiny)
    built = []
    real = run_mod.SystemModel

    def counting(exp, **kw):
        built.append(exp.scheme.kind)
        return real(exp, **kw)

    monkeypatch.setattr(run_mod, "SystemModel", counting)
    log = io.StringIO()
    outcomes = run_points(points, out=tmp_path / "j1", progress=Progress(log, tty=False))
    assert [o.status for o in outcomes] == ["simulated"] * 4
    assert [o.point.label for o in outcomes] == [p.label for p in points]
    assert built == ["sequential", "sequential"]  # two simulations for four points
    assert "(shared with ideal_gemm_rs_overlap) ->" in log.getvalue()
    assert "(shared with sequential) ->" in log.getvalue()
    assert "4 points to simulate in 2 simulations" in log.getvalue()
    for o in outcomes:
        meta = json.loads((o.path / "meta.json").read_text())
        assert meta["shared_simulation"] == ["sequential", "ideal_gemm_rs_overlap"]
    ref = stats_bytes(tmp_path / "j1")
    assert len(ref) == 4
    # byte-identical to standalone simulate() of each point
    alone = ResultStore(tmp_path / "alone")
    for p in points:
        alone.write(simulate(p.config))
    assert stats_bytes(tmp_path / "alone") == ref

    # a group whose other member is stored runs for the missing one only
    built.clear()
    gone = outcomes[3].path
    for f in gone.iterdir():
        f.unlink()
    gone.rmdir()
    again = run_points(points, out=tmp_path / "j1")
    assert [o.status for o in again] == ["reused", "reused", "reused", "simulated"]
    assert built == ["ideal_gemm_rs_overlap"]
    assert "shared_simulation" not in json.loads((again[3].path / "meta.json").read_text())
    assert stats_bytes(tmp_path / "j1") == ref

    # results do not depend on -j
    monkeypatch.setattr(run_mod, "SystemModel", real)
    pooled = run_points(points, out=tmp_path / "j2", jobs=2)
    assert [o.status for o in pooled] == ["simulated"] * 4
    assert stats_bytes(tmp_path / "j2") == ref


def test_failed_shared_simulation_fails_every_member(tiny, tmp_path, monkeypatch):
    points = expand(tiny)[:2]  # tokens=128: sequential, ideal_gemm_rs_overlap

    def deadlock(exp, **kw):
        raise SimulationError("deadlock at 1 ps")

    monkeypatch.setattr(run_mod, "SystemModel", deadlock)
    outcomes = run_points(points, out=tmp_path)
    assert [o.status for o in outcomes] == ["failed", "failed"]
    assert outcomes[0].error == outcomes[1].error and outcomes[0].error.kind == "simulation"
    assert not stats_bytes(tmp_path)


def test_points_of_two_experiment_files_share_a_simulation(tmp_path, monkeypatch):
    """``t3sim reproduce`` runs every experiment file as one sweep: a point that two files both contain (Fig. 19's
    Sequential and T3-MCA points are also ``sweep-mca``'s) differs only in ``name`` and ``description``, which
    decide nothing simulated, so it is simulated once and each file gets its own, byte-identical result."""
    a, b = tmp_path / "exp-a.yaml", tmp_path / "exp-b.yaml"
    a.write_text(tiny_sweep("exp-a", ["sequential", "t3"]))
    b.write_text(tiny_sweep("exp-b", ["t3"]).replace("name: exp-b\n", "name: exp-b\ndescription: another question\n"))
    pa, pb = expand(a), expand(b)
    assert pb[0].config.description == "another question" != pa[0].config.description
    built = []
    real = run_mod.SystemModel

    def counting(exp, **kw):
        built.append((exp.name, exp.scheme.kind))
        return real(exp, **kw)

    monkeypatch.setattr(run_mod, "SystemModel", counting)
    log = io.StringIO()
    points = pa + pb
    outcomes = run_points(points, out=tmp_path / "res", progress=Progress(log, tty=False))
    assert [o.status for o in outcomes] == ["simulated"] * len(points)
    # exp-a: sequential and t3 at 128 and 256 tokens; exp-b's two t3 points are exp-a's: 4 simulations for 6 points
    assert sorted(built) == [("exp-a", "sequential"), ("exp-a", "sequential"), ("exp-a", "t3"), ("exp-a", "t3")]
    assert "6 points to simulate in 4 simulations" in log.getvalue()
    assert "(shared with exp-a:t3) ->" in log.getvalue()
    store = ResultStore(tmp_path / "res")
    for o in outcomes:
        assert o.path.parent.name == o.point.config.name  # each file's result in its own directory
        assert json.loads((o.path / "meta.json").read_text()).get("shared_simulation", []) in (
            [], ["exp-a:t3", "exp-b:t3"])
    monkeypatch.setattr(run_mod, "SystemModel", real)
    for o in outcomes:
        alone = simulate(o.point.config)
        assert stats_text(alone) == (o.path / "stats.json").read_text()
        assert o.result.config == alone.config  # the point's own name and description
    assert len(list(store.iter_runs("exp-b"))) == 2
