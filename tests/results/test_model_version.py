"""Results record the model version that simulated them, and a stored run of another version is simulated again.

No simulation: the runner's points are simulated by a stand-in (``simulate_fn``) that returns a made-up result, and
the model version is changed by patching ``t3sim.model_version.MODEL_VERSION``, never the real file."""

from __future__ import annotations

import io
import json
from pathlib import Path

from t3sim import model_version
from t3sim.config.sweep import expand
from t3sim.exec.progress import Progress
from t3sim.exec.runner import run_points
from t3sim.results.stats import Stats
from t3sim.results.store import ResultStore, RunResult, model_version_of, stored_model_version
from tests.system.helpers import tiny_sweep

CALLS: list = []


def made_up(point) -> RunResult:
    """A result without simulating (module level: the runner may pickle it)."""
    CALLS.append(point.label)
    return RunResult(point.config.name, point.config.model_dump(mode="json"), Stats(), {"total_time_us": 1.0}, 0,
                     {"wall_s": 0.5})


def _points(tmp_path: Path):
    path = tmp_path / "mv.yaml"
    path.write_text(tiny_sweep("mv", ["sequential"]))
    return expand(path)


def _meta(d: Path) -> dict:
    return json.loads((d / "meta.json").read_text())


def test_meta_json_records_the_model_version(tmp_path):
    CALLS.clear()
    out = run_points(_points(tmp_path), out=tmp_path / "r", simulate_fn=made_up)
    assert all(o.status == "simulated" for o in out) and len(CALLS) == len(out)
    for o in out:
        assert _meta(o.path)["model_version"] == model_version.MODEL_VERSION
        assert stored_model_version(o.path) == model_version.MODEL_VERSION


def test_a_stored_run_of_another_model_version_is_simulated_again(tmp_path, monkeypatch):
    points = _points(tmp_path)
    first = run_points(points, out=tmp_path / "r", simulate_fn=made_up)
    CALLS.clear()
    again = run_points(points, out=tmp_path / "r", simulate_fn=made_up)
    assert [o.status for o in again] == ["reused"] * len(points) and not CALLS

    # a run from before versioning: its meta.json has no model_version
    old = first[0].path
    meta = _meta(old)
    del meta["model_version"]
    (old / "meta.json").write_text(json.dumps(meta))
    assert stored_model_version(old) == 0
    log = io.StringIO()
    third = run_points(points, out=tmp_path / "r", simulate_fn=made_up, progress=Progress(log, tty=False))
    assert [o.status for o in third] == ["simulated"] + ["reused"] * (len(points) - 1)
    assert CALLS == [points[0].label] and third[0].path == old  # same config hash, same directory, replaced
    assert stored_model_version(old) == model_version.MODEL_VERSION
    assert "1 stored point was simulated by another model (version 0 (before versioning): 1" in log.getvalue()

    # the model moves on: every stored point is simulated again
    CALLS.clear()
    monkeypatch.setattr(model_version, "MODEL_VERSION", model_version.MODEL_VERSION + 1)
    fourth = run_points(points, out=tmp_path / "r", simulate_fn=made_up)
    assert [o.status for o in fourth] == ["simulated"] * len(points) and len(CALLS) == len(points)
    assert {stored_model_version(o.path) for o in fourth} == {model_version.MODEL_VERSION}
    assert len(list(ResultStore(tmp_path / "r").iter_runs("mv"))) == len(points)


def test_model_version_of_reads_integers_only():
    assert model_version_of({}) == 0
    assert model_version_of({"model_version": 3}) == 3
    assert model_version_of({"model_version": "3"}) == 0 and model_version_of({"model_version": True}) == 0
    assert stored_model_version(Path("/nonexistent")) == 0
