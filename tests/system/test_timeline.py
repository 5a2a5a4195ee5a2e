"""Timelines: a traced run's Perfetto/Chrome trace is valid trace-event JSON, shows the
overlap (phases, GEMM stages, WGs, DMA commands, DRAM/link/queue counters) and changes no statistic."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from t3sim.system.core import simulate
from t3sim.system.timeline import validate
from tests.conftest import REPO
from tests.system.helpers import exp

SMALL = ("workload.sublayer=OP", "workload.tokens=128", "system.gpu.num_cus=4", "workload.tp=4",
         "system.interconnect.num_gpus=4")


@pytest.fixture(scope="module")
def t3_runs():
    e = exp(*SMALL, "scheme.kind=t3")
    return simulate(e, timeline=True), simulate(e)


def test_t3_timeline_is_valid_and_shows_the_overlap(t3_runs):
    traced, _ = t3_runs
    t = json.loads(json.dumps(traced.timeline))  # what lands on disk
    assert validate(t) == []
    ev = t["traceEvents"]
    names = {e["name"] for e in ev}
    assert {"GEMM", "RS", "AG", "stage 0", "DRAM bandwidth (GB/s)", "memory-controller backlog (requests)"} <= names
    assert any(n.startswith("link gpu0 -> ") for n in names)
    wgs = [e for e in ev if e.get("cat") == "wg"]
    assert len(wgs) == len({e["args"]["seq"] for e in wgs}) > 0  # every WG once
    dma_b = [e for e in ev if e["ph"] == "b"]
    assert len(dma_b) == traced.stats.value("gpu0.dma.blocks_done") > 0
    # the overlap is visible: some DMA command starts before the GEMM phase ends
    gemm = next(e for e in ev if e["name"] == "GEMM")
    assert min(e["ts"] for e in dma_b) < gemm["ts"] + gemm["dur"]
    # WGs of one CU lane never overlap
    lanes = {}
    for e in sorted(wgs, key=lambda e: e["ts"]):
        end = lanes.get((e["pid"], e["tid"]), -1.0)
        assert e["ts"] >= end - 1e-9
        lanes[(e["pid"], e["tid"])] = e["ts"] + e["dur"]


def test_tracing_changes_no_statistic(t3_runs):
    """Only the simpy event count differs (the queue sampler's own timeouts)."""
    traced, plain = t3_runs
    a, b = traced.stats.to_dict(), plain.stats.to_dict()
    assert a["sim"]["events"]["value"] > b["sim"]["events"]["value"]
    del a["sim"]["events"], b["sim"]["events"]
    assert json.dumps(a) == json.dumps(b)
    assert plain.timeline is None


def test_sequential_timeline_valid():
    r = simulate(exp(*SMALL, "scheme.kind=sequential"), timeline=True)
    assert validate(r.timeline) == []
    assert not any(e["ph"] == "b" for e in r.timeline["traceEvents"])  # no DMA in Sequential


@pytest.mark.parametrize("bad, why", [
    ({"traceEvents": [{"ph": "Q", "name": "x", "pid": 1, "tid": 1, "ts": 0}]}, "unknown"),
    ({"traceEvents": [{"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 0, "dur": -1}]}, "dur"),
    ({"traceEvents": [{"ph": "b", "name": "x", "cat": "d", "id": "1", "pid": 1, "tid": 1, "ts": 0}]}, "never ends"),
    ({"traceEvents": [{"ph": "C", "name": "x", "pid": 1, "tid": 1, "ts": 0, "args": {"v": "a"}}]}, "counter"),
    ({"traceEvents": [{"ph": "X", "name": "x", "pid": "p", "tid": 1, "ts": 0, "dur": 1}]}, "integers"),
    ({"traceEvents": {}}, "not a list"),
])
def test_validator_rejects_malformed_traces(bad, why):
    problems = validate(bad)
    assert problems and any(why in p for p in problems)


def test_cli_timeline(tmp_path):
    base = [sys.executable, "-m", "t3sim.cli", "run", str(REPO / "configs/experiments/default.yaml"), "--out", str(tmp_path)]
    sets = [a for s in SMALL + ("scheme.kind=t3",) for a in ("--set", s)]
    r = subprocess.run(base + sets + ["--timeline"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    files = list(tmp_path.glob("default/*/timeline.json"))
    assert len(files) == 1 and validate(json.loads(files[0].read_text())) == []
    many = subprocess.run(base + sets + ["--set", "sweep.grid={scheme.kind: [t3, sequential]}", "--timeline"],
                          capture_output=True, text=True, timeout=600)
    assert many.returncode == 2 and len(many.stderr.strip().splitlines()) == 1 and "--timeline" in many.stderr


def test_split_k_reduction_wgs_are_drawn(tmp_path):
    """On the H200 a 16-token FC-2 GEMM at TP = 4 (16 x 3072 x 3072) runs cuBLAS's split-K kernel: the timeline
    draws each slice WG and each reduction WG (one per output tile), the reductions after the slices."""
    from t3sim.config import load_experiment
    f = tmp_path / "e.yaml"
    f.write_text(f"""name: splitk
system: {{base: {REPO / 'configs/systems/h200-4gpu.yaml'}}}
workload: {{model: {{base: models/mega-gpt-2.yaml}}, sublayer: FC-2, tp: 4, tokens: 16, dtype: bf16}}
""")
    traced = simulate(load_experiment(f, []), timeline=True)
    ev = json.loads(json.dumps(traced.timeline))["traceEvents"]
    assert validate({"traceEvents": ev}) == []
    wgs = [x for x in ev if x.get("cat") == "wg"]
    red = [x for x in ev if x.get("cat") == "wg.reduce"]
    assert red and len(wgs) > len(red)
    assert len(wgs) % len(red) == 0  # tiles x split slice WGs, one reduction WG per tile
    assert min(x["ts"] for x in red) >= max(x["ts"] + x["dur"] for x in wgs) - 1e-6
