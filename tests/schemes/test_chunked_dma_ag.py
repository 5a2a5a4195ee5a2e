"""``chunked_dma`` in the ``ag_gemm`` direction (FLUX's Transformer Engine-style baseline, FiCCO's
shard-based overlap): bytes moved, stream waits, step order, bounds, modes, rejections."""

from __future__ import annotations

import pytest

from t3sim.errors import InputError
from t3sim.schemes.runtime import scheme_for
from t3sim.schemes.common.ag_push import ChunkAgContext
from t3sim.schemes.decomposed.chunked_dma_ag import shard_chunks
from t3sim.schemes.runtime.program import Kernel, Program, run_program
from t3sim.system.model import SystemModel
from tests.system.helpers import exp

# FC-1's consumer GEMM of a 512-wide model at TP=4, 1024 tokens: A is 1024 x 512 (shards of 256 rows = two
# 128-row tile rows), C is 1024 x 512; 8 CUs. The copies hide behind the steps here; SLOW_CE makes them
# slower than a step, so the steps wait.
SMALL = ("workload.sublayer=FC-1", "workload.tokens=1024", "workload.model.hidden_size=512", "system.gpu.num_cus=8",
         "workload.direction=ag_gemm", "workload.tp=4", "system.interconnect.num_gpus=4", "scheme.kind=chunked_dma",
         "scheme.chunks=4")
SLOW_CE = "system.copy_engine.engine_bandwidth_GBps=10"


def _run(*extra):
    m = SystemModel(exp(*SMALL, *extra))
    run = scheme_for("chunked_dma").simulate(m)
    m.network.check_conserved()
    return m, run


@pytest.fixture(scope="module")
def runs():
    return {(mode, slow): _run(f"simulation.mode={mode}", *((SLOW_CE,) if slow else ()))
            for mode in ("homogeneous", "explicit") for slow in (False, True)}


@pytest.mark.parametrize("mode", ["homogeneous", "explicit"])
def test_each_gpu_receives_the_missing_shards(runs, mode):
    """Every simulated GPU receives exactly (N-1)/N of A; every GPU (shadows too) injects (N-1)/N of A."""
    m, _ = runs[mode, False]
    ctx: ChunkAgContext = m.context
    n, a_B = m.n, m.kernel.M * m.kernel.K * m.elem_B
    for g in m.sim_gpus:
        assert ctx.received_B[g] == (n - 1) * a_B // n
        assert ctx.engines[g].peer_B == ctx.engines[g].read_B == (n - 1) * a_B // n
        assert m.hiers[g].traffic["ag"]["write"] == (n - 1) * a_B // n  # the peers' pushes, nothing else
    assert set(m.network.bytes_injected.values()) == {(n - 1) * a_B // n}
    assert ctx.fabric.sent_B == ctx.fabric.landed_B == n * (n - 1) * a_B // n
    assert ctx.shadow_B == ((n - 1) ** 2 * a_B // n if mode == "homogeneous" else 0)


@pytest.mark.parametrize("slow", [False, True])
@pytest.mark.parametrize("mode", ["homogeneous", "explicit"])
def test_steps_run_in_arrival_order_after_their_flags(runs, mode, slow):
    """Step 0 (own shard) starts at once; step s computes shard g - s and starts no earlier than its flag, which
    is set one path latency after the push carrying it landed; each GPU computes every shard once."""
    m, run = runs[mode, slow]
    ctx = m.context
    rec = {r.name: r for r in run.records}
    n = m.n
    for g in m.sim_gpus:
        assert rec[f"gpu{g}.gemm_s0"].start == run.start
        assert [p for _n, p, *_ in ctx.steps[g]] == [(g - s) % n for s in range(n)]
        for s in range(n):
            p = (g - s) % n
            flag = ctx.flag_tick[g][p, 0]
            assert rec[f"gpu{g}.gemm_s{s}"].start >= flag
            if s:
                d = s  # GPU p's copy to g = p + s is its push number s
                push = rec[f"gpu{p}.push_d{d}"] if p in ctx.engines else rec[f"gpu0.push_d{d}"]  # mirrored
                landed = ctx.landed_tick[g][p, 0]
                assert flag == landed + m.network.path_latency_ticks(p, g)
                if mode == "explicit":  # the copy ends when its last line has landed at g
                    assert landed == push.end
                else:  # GPU 0's own copy (to a shadow) and its mirror image landing in GPU 0's memory
                    assert landed >= push.end
                if s > 1:  # the pushes run one after another in ring order
                    prev = rec[f"gpu{p}.push_d{d - 1}"] if p in ctx.engines else rec[f"gpu0.push_d{d - 1}"]
                    assert push.start == prev.end
    waits = [b - a for g in m.sim_gpus for _n, _p, _j, a, b, _e in ctx.steps[g]]
    assert (max(waits) > 0) == slow  # fast copies hide behind the steps; slow ones make the steps wait
    if slow:
        assert run.exposed_comm() > 0


@pytest.mark.parametrize("slow", [False, True])
def test_homogeneous_matches_explicit_gpu0(runs, slow):
    """By rotation symmetry GPU 0's time is the same in both modes, within 1 %."""
    h, e = runs["homogeneous", slow][1], runs["explicit", slow][1]
    assert h.phases().total == pytest.approx(e.phases().total, rel=0.01)
    ends = {m: max(r.end for r in runs[m, slow][1].records if r.name.startswith("gpu0.gemm")) for m in
            ("homogeneous", "explicit")}
    assert ends["homogeneous"] == pytest.approx(ends["explicit"], rel=0.01)


@pytest.mark.parametrize("slow", [False, True])
def test_never_faster_than_the_steps_back_to_back(runs, slow):
    """The operation takes at least its chunk GEMMs run back to back without communication; the phases report
    it all as gemm (the last step waits for the last shard, so no AG is left after it)."""
    m, run = runs["homogeneous", slow]
    alone = SystemModel(exp(*SMALL, "simulation.mode=homogeneous"))
    parts = shard_chunks(alone)
    p = Program()
    for s in range(alone.n):
        c = parts[(0 - s) % alone.n][0]
        p.add("s", Kernel(f"g{s}", "gemm", "gemm", lambda c=c, s=s: alone.gemm(f"g{s}", chunk=c)))
    r = run_program(alone, p)
    ph = run.phases()
    assert ph.total == ph.gemm == run.end - run.start >= r.end - r.start > 0
    assert ph.ag == ph.rs == 0
    if not slow:  # the copies hide: within 1 % of the GEMMs alone (they still contend for memory)
        assert ph.total <= 1.01 * (r.end - r.start)


def test_shards_cut_further():
    """chunks = 2N: each shard in two sub-chunks (two copies per peer, two steps per shard), the same bytes."""
    m, run = _run("simulation.mode=homogeneous", "scheme.chunks=8")
    ctx = m.context
    assert ctx.c == 2 and ctx.copies == 2 * (m.n - 1)
    assert [(p, j) for _n, p, j, *_ in ctx.steps[0]] == [((0 - s) % 4, j) for s in range(4) for j in range(2)]
    assert ctx.received_B[0] == 3 * m.kernel.M * m.kernel.K * m.elem_B // 4
    assert sum(c.kernel.M for cs in ctx.parts for c in cs) == m.kernel.M


def test_runs_on_a_switch():
    """Every peer one hop on a switch; the bytes as on the ring."""
    m, run = _run("simulation.mode=homogeneous", "system.interconnect.kind=switch")
    assert m.context.received_B[0] == 3 * m.kernel.M * m.kernel.K * m.elem_B // 4
    assert run.phases().total > 0


@pytest.mark.parametrize("extra,field", [
    (("scheme.chunks=6",), "scheme.chunks"),              # not a multiple of N
    (("scheme.chunks=2",), "scheme.chunks"),              # fewer than N
    (("scheme.chunk_axis=N",), "scheme.chunk_axis"),
    (("workload.tokens=1022",), "workload.tokens"),       # rows do not shard
    (("simulation.functional_data=true",), "simulation.functional_data"),
    (("workload.sublayer=OP",), "workload.sublayer"),     # A column-major: rows not contiguous
])
def test_bad_values_rejected(extra, field):
    with pytest.raises(InputError) as e:
        _run(*extra)
    assert e.value.where == field


def test_direction_registered():
    from t3sim.exec.checks import check_experiment

    assert scheme_for("chunked_dma").directions == ("gemm_rs", "ag_gemm")
    check_experiment(exp(*SMALL))


def test_timeline_and_determinism():
    """The timeline shows each GPU's compute and dma streams; the same config gives byte-identical statistics."""
    from t3sim.system.core import simulate
    from t3sim.system.timeline import validate

    cfg = exp(*SMALL, "simulation.mode=homogeneous")
    r = simulate(cfg, timeline=True)
    assert validate(r.timeline) == []
    ev = r.timeline["traceEvents"]
    tids = {e["args"]["name"]: e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    on_dma = sorted(e["name"] for e in ev if e.get("tid") == tids["stream gpu0.dma"] and e["ph"] == "X")
    assert on_dma == ["gpu0.push_d1", "gpu0.push_d2", "gpu0.push_d3"]
    assert "stream gpu0.compute" in tids
    assert simulate(cfg).stats.to_dict() == simulate(cfg).stats.to_dict()


def test_compute_streams_overlap_steps_whose_shards_are_there():
    """scheme.compute_streams = 3: steps go round robin over gpu<g>.compute0..2; steps whose shards are there run
    concurrently (the first three launch together when the copies are fast) and every step still starts after
    its flag; not slower than one stream."""
    _m1, one = _run("simulation.mode=homogeneous")
    m, three = _run("simulation.mode=homogeneous", "scheme.compute_streams=3")
    rec = {r.name: r for r in three.records}
    steps = sorted((r for r in three.records if ".gemm_" in r.name), key=lambda r: r.start)
    assert {r.stream for r in steps} == {"gpu0.compute0", "gpu0.compute1", "gpu0.compute2"}
    assert steps[1].start < steps[0].end  # concurrent steps
    for r in m.context.steps[0]:
        assert rec[f"gpu0.gemm_{r[0].split('_')[0]}"].start >= r[4] >= 0
    assert three.phases().total <= one.phases().total
