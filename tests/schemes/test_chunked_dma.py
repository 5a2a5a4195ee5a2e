"""``chunked_dma``: copy-engine scatters, a local reduction, exactness,
conservation, bounds, determinism, option checks and the timeline's dma stream."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from t3sim.config import load_experiment
from t3sim.errors import InputError
from t3sim.schemes.common.chunking import chunk_parts
from t3sim.schemes.decomposed.chunked_dma import chunked_dma_program
from t3sim.schemes.decomposed.chunked_dma import DmaScatter, check_reduced
from t3sim.schemes.runtime.program import Kernel, Program, run_program
from t3sim.system.model import SystemModel
from t3sim.system.core import simulate
from t3sim.system.timeline import validate
from tests.conftest import REPO
from tests.system.helpers import exp

# an OP of T-NLG's shape narrowed to H=1024 at TP=4 on 4 CUs, 256 tokens (2 x 8 tiles), 2 chunks along M: about a
# second a run
SMALL = ("workload.sublayer=OP", "workload.tokens=256", "workload.model.hidden_size=1024", "workload.tp=4", "system.interconnect.num_gpus=4",
         "system.gpu.num_cus=4", "scheme.kind=chunked", "scheme.chunks=2")
DMA = "scheme.kind=chunked_dma"

# the measured machine's preset (4 H200s on NVSwitch), the same small GEMM shape
_H200 = """\
name: chunk-dma-h200
system:
  base: systems/h200-4gpu.yaml
  gpu: {num_cus: 8}
  collective: {cus: 8}
workload:
  model: {base: models/mega-gpt-2.yaml, hidden_size: 1024}
  sublayer: OP
  tp: 4
  tokens: 256
  dtype: bf16
scheme: {kind: chunked_dma, chunks: 2}
"""


def _model(*extra, e=None):
    return SystemModel(e if e is not None else exp(*SMALL, *extra))


def _run(m, with_ag=False):
    run = run_program(m, chunked_dma_program(m, with_ag=with_ag))
    m.network.check_conserved()
    return run


def _h200(tmp_path, *overrides):
    f = tmp_path / "h200.yaml"
    f.write_text(_H200)
    return load_experiment(f, list(overrides))


@pytest.mark.parametrize("mode", ["homogeneous", "explicit"])
def test_bytes_conserved(mode):
    """Each GPU sends (N-1)/N of C over the links (nothing else: no AG here); the copy engines read exactly that;
    each GPU's memory takes (N-1) received shards and its reduction reads N shards and writes one."""
    m = _model(DMA, f"simulation.mode={mode}")
    _run(m)
    n, C = m.n, m.c_elems * m.elem_B
    ctx: DmaScatter = m.context
    assert set(m.network.bytes_injected.values()) == {(n - 1) * C // n}  # shadows too (homogeneous: mirrored)
    assert ctx.fabric.sent_B == ctx.fabric.landed_B == n * (n - 1) * C // n
    shard = sum(ctx.shard(i, 0)[1] for i in range(len(ctx.parts)))
    assert shard == C // n
    for g in m.sim_gpus:
        ce, red, t = ctx.engines[g], ctx.reducers[g], m.hiers[g].traffic["rs"]
        assert ce.read_B == ce.peer_B == (n - 1) * C // n and ce.written_B == 0
        assert (red.read_B, red.written_B) == (n * shard, shard)
        assert t["read"] == ce.read_B + red.read_B
        assert t["write"] == (n - 1) * shard + shard  # received shards (peers' copy engines), the reduced shard
    if mode == "homogeneous":
        assert ctx.shadow_B == (n - 1) * (n - 1) * C // n


@pytest.mark.parametrize("mode", ["homogeneous", "explicit"])
def test_every_element_reduced_exactly(mode):
    """Functional data: every GPU's shard of every chunk holds exactly the sum of all GPUs' partials."""
    m = _model(DMA, f"simulation.mode={mode}", "simulation.functional_data=true")
    run = _run(m, with_ag=True)
    words = m.context.words_checked
    assert words == len(m.sim_gpus) * m.c_elems * m.elem_B // m.n // 4 > 0  # the whole shard, every word
    assert check_reduced(m, m.context) == words
    assert {r.name for r in run.records} >= {"scatter_c0", "scatter_c1", "reduce"}


def test_a_missing_contribution_is_caught():
    """The check can fail: drop one received shard's writes and the reduced values are wrong."""
    m = _model(DMA, "simulation.functional_data=true")
    p = chunked_dma_program(m, with_ag=False)
    ctx = m.context
    send = ctx.fabric.send

    def lossy(src, dst, pl):  # a payload from GPU 1 to GPU 0 arrives zeroed
        if src == 1 and dst == 0 and pl.data is not None:
            pl.data = pl.data * 0
        return send(src, dst, pl)

    ctx.fabric.send = lossy
    run_program(m, p)
    with pytest.raises(AssertionError, match="words differ"):
        check_reduced(m, ctx)


def _alone(kind):
    """The chunk GEMMs back to back alone, or the scatters and the reduction alone (no GEMM beside them)."""
    m = _model(DMA)
    parts = chunk_parts(m)
    p = Program()
    if kind == "gemm":
        for c in parts:
            p.add("compute", Kernel(f"gemm_c{c.index}", "gemm", "gemm", lambda c=c: m.gemm(f"g{c.index}", chunk=c)))
    else:
        ctx = DmaScatter(m, parts)
        for c in parts:
            p.add("dma", Kernel(f"scatter_c{c.index}", "dma", "rs", lambda c=c: ctx.scatter(c.index), comm=True))
        p.add("dma", Kernel("reduce", "copy", "rs", ctx.reduce, comm=True))
    run = run_program(m, p)
    return run.end - run.start


def test_never_faster_than_gemm_or_comm_alone():
    gemm, comm = _alone("gemm"), _alone("comm")
    whole = _model()
    run = run_program(whole, Program({"s": [Kernel("gemm", "gemm", "gemm", whole.gemm)]}))
    m = _model(DMA)
    span = _run(m).end - m.marks["start"]
    assert span >= max(gemm, comm, run.end - run.start) * 0.999
    recs = {r.name: r for r in m.kernel_records}
    assert recs["scatter_c0"].start == recs["gemm_c0"].end and recs["scatter_c0"].end > recs["gemm_c1"].start
    assert recs["reduce"].start == max(recs["scatter_c1"].end, recs["gemm_c1"].end)


def test_deterministic():
    a, b = (simulate(exp(*SMALL, DMA)) for _ in range(2))
    assert json.dumps(a.stats.to_dict()) == json.dumps(b.stats.to_dict())
    assert a.stats.value("gpu0.chunk_scatter.copies_done") == 2 * 3  # 2 chunks x 3 peers


def test_timeline_has_the_dma_stream():
    r = simulate(exp(*SMALL, DMA), timeline=True)
    assert validate(r.timeline) == []
    ev = r.timeline["traceEvents"]
    tids = {e["args"]["name"]: e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "stream dma" in tids and "stream compute" in tids
    on_dma = [e["name"] for e in ev if e.get("tid") == tids["stream dma"] and e["ph"] == "X"]
    assert sorted(on_dma) == ["scatter_c0", "scatter_c1"]


def test_options_it_does_not_use_are_rejected():
    with pytest.raises(InputError, match="scheme.comm_cus"):
        simulate(exp(*SMALL, DMA, "scheme.comm_cus=1"))
    cmd = [sys.executable, "-m", "t3sim.cli", "run", str(REPO / "configs/experiments/default.yaml"),
           "--set", DMA, "--set", "scheme.launch_first=comm", "--out", "/nonexistent-never-written"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "scheme.launch_first" in p.stderr and "Traceback" not in p.stderr
    assert "concurrent" in p.stderr  # says which schemes take it


@pytest.mark.parametrize("mode", ["homogeneous", "explicit"])
def test_h200_switch(tmp_path, mode):
    """The measured machine's preset (NVSwitch, 3 copy engines, bf16): exact and conserving."""
    m = _model(e=_h200(tmp_path, f"simulation.mode={mode}", "simulation.functional_data=true"))
    _run(m, with_ag=True)
    assert m.context.words_checked == len(m.sim_gpus) * m.c_elems * m.elem_B // 4 // 4
    assert set(m.network.bytes_injected.values()) == {3 * m.c_elems * m.elem_B // 4}


@pytest.mark.parametrize("mode", ["homogeneous", "explicit"])
def test_table1_ring(mode):
    """The paper's Table 1 system (8 GPUs on a bidirectional ring: shards cross several links), a small OP."""
    m = _model(e=exp("workload.sublayer=OP", "workload.tokens=128", "workload.model.hidden_size=1024",
                     "system.gpu.num_cus=4", "scheme.kind=chunked", "scheme.chunks=2", "scheme.chunk_axis=N", DMA,
                     f"simulation.mode={mode}", "simulation.functional_data=true"))
    assert m.n == 8 and m.system.interconnect.kind == "ring"
    _run(m, with_ag=True)
    C = m.c_elems * m.elem_B
    assert m.context.words_checked == len(m.sim_gpus) * C // 8 // 4
    assert set(m.network.bytes_injected.values()) == {7 * C // 8}
    # every GPU's shards travel 1..4 hops each way round the ring: the links carried more than was injected
    assert sum(link.bytes_sent for link in m.network.links.values()) > sum(m.network.bytes_injected.values())
