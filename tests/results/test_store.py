"""The results layout: round trip, hashing, atomic writes, re-run detection."""

from __future__ import annotations

import json
import os

import pytest

from t3sim.errors import InputError
from t3sim.results import ResultStore, RunResult, Stats, config_hash, load_run, read_csv


def _result(cfg=None):
    s = Stats()
    s.add("gpu0.hbm.bytes_read", 4096, "B", "bytes read from DRAM")
    s.add("gpu0.time", 1234, "ps", "simulated time")
    s.add("gpu0.hist", [1, 2, 3], "count", "a histogram")
    return RunResult("exp", cfg or {"a": 1, "b": {"c": [1, 2]}}, s, {"total_time_us": 1.5, "scheme": "t3"}, seed=7,
                     meta={"wall_s": 0.1})


def test_round_trip(tmp_path):
    store = ResultStore(tmp_path)
    r = _result()
    d = store.write(r)
    assert d.name == config_hash(r.config) and len(d.name) == 12
    back = load_run(d)
    assert back.config == r.config and back.seed == 7 and back.experiment == "exp"
    assert back.stats.to_dict() == r.stats.to_dict()
    assert back.summary == {"total_time_us": "1.5", "scheme": "t3"}
    meta = json.loads((d / "meta.json").read_text())
    assert meta["seed"] == 7 and meta["config_hash"] == d.name and "t3sim_version" in meta


def test_hash_is_canonical():
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})


def test_find_existing(tmp_path):
    store = ResultStore(tmp_path)
    r = _result()
    assert store.find("exp", r.config) is None
    d = store.write(r)
    assert store.find("exp", r.config) == d
    assert list(store.iter_runs("exp")) == [d]


def test_stats_deterministic_bytes(tmp_path):
    a = ResultStore(tmp_path / "a").write(_result())
    b = ResultStore(tmp_path / "b").write(_result())
    assert (a / "stats.json").read_bytes() == (b / "stats.json").read_bytes()
    assert (a / "summary.csv").read_bytes() == (b / "summary.csv").read_bytes()


def test_interrupted_write_is_not_trusted(tmp_path, monkeypatch):
    store = ResultStore(tmp_path)
    r = _result()
    import t3sim.results.store as st

    calls = {"n": 0}
    real = st._write

    def failing(p, text):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        real(p, text)

    monkeypatch.setattr(st, "_write", failing)
    with pytest.raises(KeyboardInterrupt):
        store.write(r)
    assert store.find("exp", r.config) is None
    assert list(store.iter_runs("exp")) == []
    assert store.clean_partial("exp") == 1
    monkeypatch.setattr(st, "_write", real)
    assert store.write(r).is_dir()


def test_incomplete_dir_rejected(tmp_path):
    d = tmp_path / "exp" / "abc"
    d.mkdir(parents=True)
    (d / "stats.json").write_text("{}")
    with pytest.raises(InputError, match="incomplete"):
        load_run(d)


def test_stats_contract():
    s = Stats()
    with pytest.raises(ValueError):
        s.add("x", 1, "", "no unit")
    s.add("a.b", 1, "B", "d")
    with pytest.raises(ValueError):
        s.add("a.b", 2, "B", "d")
    with pytest.raises(ValueError):
        s.add("a", 2, "B", "group clash")


def test_read_csv_errors(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("collective,gpus,size_mb\nreduce_scatter,4\n")
    with pytest.raises(InputError) as e:
        read_csv(p)
    assert "m.csv:2" in str(e.value) and "2 fields" in str(e.value)
    with pytest.raises(InputError, match="median_us"):
        read_csv(p, required=["collective", "median_us"])
    with pytest.raises(InputError, match="no such file"):
        read_csv(tmp_path / "none.csv")


def test_clean_partial_spares_live_writers(tmp_path):
    """Leftovers of dead writers (and of this process) go; a sweep writing meanwhile keeps its temp dir."""
    import subprocess
    import sys

    store = ResultStore(tmp_path)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        for name in (f".tmp-aaa-{live.pid}", f".tmp-bbb-{dead.pid}", f".tmp-ccc-{os.getpid()}", ".tmp-odd"):
            (tmp_path / "exp" / name).mkdir(parents=True)
        assert store.clean_partial("exp") == 3
        assert [p.name for p in (tmp_path / "exp").iterdir()] == [f".tmp-aaa-{live.pid}"]
    finally:
        live.kill()
        live.wait()
    assert store.clean_partial("exp") == 1


def test_replace_swaps_in_a_new_result(tmp_path):
    """``replace`` (--force) swaps a newer result in; without it the first complete result is kept."""
    store = ResultStore(tmp_path)
    d = store.write(_result())
    first = (d / "meta.json").read_text()
    r = _result()
    r.meta = {"wall_s": 9.9}
    assert store.write(r) == d and (d / "meta.json").read_text() == first
    assert store.write(r, replace=True) == d
    assert json.loads((d / "meta.json").read_text())["wall_s"] == 9.9
    assert [p.name for p in (tmp_path / "exp").iterdir()] == [d.name]  # no leftovers


def test_source_revision_outside_git_hashes_the_sources(tmp_path):
    """A copied tree without git metadata still names its code (a tree copied to another host may have none)."""
    from t3sim.results.store import source_revision

    pkg = tmp_path / "t3sim" / "sub"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (tmp_path / "t3sim" / "b.py").write_text("y = 2\n")
    first = source_revision(tmp_path)
    assert first.startswith("src-") and len(first) == 4 + 12
    assert source_revision(tmp_path) == first  # deterministic
    (pkg / "a.py").write_text("x = 3\n")
    assert source_revision(tmp_path) != first  # any source change is a new revision
    assert source_revision(tmp_path / "empty") == ""


def test_config_yaml_is_the_safe_dumpers_text():
    """config.yaml goes through LibYAML's emitter where PyYAML has it; its text is the pure-Python SafeDumper's
    (on a full resolved config: nested sections, None, floats, lists, long strings)."""
    import yaml

    from t3sim.config import load_experiment
    from t3sim.results.store import config_yaml

    cfg = load_experiment("configs/experiments/default.yaml").model_dump(mode="json")
    cfg["description"] = "a long description " * 12 + "with: colons, 'quotes' and # hashes"
    assert config_yaml(cfg) == yaml.safe_dump(cfg, sort_keys=False)
    assert yaml.safe_load(config_yaml(cfg)) == cfg
