"""Split-K GEMM kernels (t3sim.compute.splitk) and the kernel's MMA rate fraction.

Unit: the slices' k-step ranges, the workspace requests (written once, read back once, exactly the partial tiles),
the final stores (what the output sink sees, once per tile, as without split-K), the L2 request difference to the
unsplit kernel, stages over the slice WGs, bad input. Component: on the H200 preset a 6-tile deep-K GEMM gets faster
split 4 ways (more SMs busy), a compute-bound GEMM at half the MMA rate takes twice the math; runs are deterministic.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from t3sim.compute.gemm_kernel import GemmKernel
from t3sim.compute.memhier import MemoryHierarchy
from t3sim.compute.occupancy import cu_flops_per_cycle, k_step_compute_cycles
from t3sim.compute.sinks import CachedLocalOutput
from t3sim.compute.splitk import (
    PARTIAL_ELEM_B, REDUCE_THREADS, partial_stride_B, slice_steps, split_of, workspace_size_B,
)
from t3sim.config import load_system
from t3sim.sim.clock import Clock, ns_to_ticks
from t3sim.sim.engine import Engine
from t3sim.system.kernels import gemm_kernel_record
from tests.conftest import LARGE, with_kernel
from t3sim.workload.wg_order import row_major

H200 = "configs/systems/h200-4gpu.yaml"
A, B, C, WS = 0, 1 << 30, 1 << 31, 3 << 30  # operand and workspace base addresses (bytes)


@pytest.fixture(scope="module")
def system():
    """The H200 preset with its one large cuBLAS kernel for every shape (128 x 256 tiles), split here by hand."""
    return with_kernel(load_system(H200), LARGE)


def record(system, M, N, K, split_k=1, mma_rate=1.0):
    return dataclasses.replace(gemm_kernel_record(system, M, N, K, "bf16"), split_k=split_k, mma_rate=mma_rate)


class RecordingSink(CachedLocalOutput):
    """The cached local output, recording what it is asked to store: (seq, tile, request addresses)."""

    def __init__(self, hier):
        super().__init__(hier)
        self.seen = []

    def store(self, seq, tile, reqs):
        self.seen.append((seq, tile, np.unique(reqs.addr)))
        return super().store(seq, tile, reqs)


def run(system, k, order=None, num_cus=None, on_stage_done=None, k_group=1, hier_factory=None, spans=False):
    """One GEMM kernel alone on an H200; returns (GemmRun, hierarchy, kernel, sink, {"read"/"write": [addrs]})."""
    eng = Engine(seed=0)
    hier = (hier_factory or (lambda env: MemoryHierarchy(env, system)))(eng.env)
    log = {"read": [], "write": []}
    # log every request batch the kernel and its reduction issue (a posted store's too)
    for kind, attr in (("read", "read"), ("write", "write"), ("write", "posted_write")):
        orig = getattr(hier, attr)

        def logged(addrs, *a, _orig=orig, _kind=kind, **kw):
            log[_kind].append(np.asarray(addrs, dtype=np.int64).copy())
            return _orig(addrs, *a, **kw)

        setattr(hier, attr, logged)
    sink = RecordingSink(hier) if hier_factory is None else _NoSink()
    gk = GemmKernel(eng, "gpu0.gemm", hier, system.gpu, k, order if order is not None else row_major(k.tiles_m, k.tiles_n),
                    A, B, C, sink, num_cus=num_cus, on_stage_done=on_stage_done, k_group=k_group,
                    workspace_B=WS if k.split_k > 1 else None)
    if spans:
        gk.wg_spans = []
    done = gk.start()
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    return done.value, hier, gk, sink, {kind: np.concatenate(v) if v else np.zeros(0, np.int64)
                                        for kind, v in log.items()}


class _NoSink:
    def store(self, seq, tile, reqs):
        return None


class FakeHier:
    """Reads complete ``latency`` ticks after they are issued (no L2, no DRAM)."""

    def __init__(self, env, latency=0):
        self.env, self.lat = env, latency

    def cu_port_done(self, cu, nbytes):
        return -1  # no CU port limit

    def read(self, addrs, category="gemm", at_least_tick=-1):
        return self.env.timeout(self.lat)

    def write(self, addrs, category="gemm"):
        return self.env.timeout(self.lat)

    def posted_write(self, addrs, category="gemm"):
        return self.env.timeout(self.lat), None  # no write queue to wait for


def _in(addrs, lo, hi):
    return np.sort(addrs[(addrs >= lo) & (addrs < hi)])


# ---------------------------------------------------------------- unit


@given(steps=st.integers(1, 400), data=st.data())
def test_slices_partition_the_k_steps(steps, data):
    s = data.draw(st.integers(1, steps))
    ranges = [slice_steps(steps, s, z) for z in range(s)]
    assert ranges[0][0] == 0 and ranges[-1][1] == steps
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))  # contiguous, in slice order
    sizes = [hi - lo for lo, hi in ranges]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
    assert ranges == [(z * steps // s, (z + 1) * steps // s) for z in range(s)]


@pytest.mark.parametrize("split,k_group", [(3, 1), (4, 2), (5, 3)])
def test_each_slice_wg_loads_exactly_its_k_steps(system, split, k_group, monkeypatch):
    """WG ``seq`` is slice ``seq // tiles`` of tile ``order[seq % tiles]`` and loads the k-steps
    ``[z*steps//s, (z+1)*steps//s)`` of that tile, in k-groups that never cross the slice's end."""
    k = record(system, 256, 512, 64 * 17, split)  # 2 x 2 tiles, 17 k-steps
    loads = {}
    orig = GemmKernel._loads

    def spy(self, seq, cu, tm, tn, s0, s1):
        loads.setdefault(seq, []).append((tm * k.tiles_n + tn, s0, s1))
        return orig(self, seq, cu, tm, tn, s0, s1)

    monkeypatch.setattr(GemmKernel, "_loads", spy)
    order = [3, 1, 0, 2]
    r, _, gk, _, _ = run(system, k, order=order, k_group=k_group, hier_factory=lambda env: FakeHier(env, 1000))
    assert r.wgs == 4 * split and sorted(loads) == list(range(4 * split))
    assert gk.order.tolist() == gk.tile_order.tolist() * split
    for seq, got in loads.items():
        lo, hi = (seq // 4) * 17 // split, (seq // 4 + 1) * 17 // split
        assert {t for t, _, _ in got} == {int(gk.tile_order[seq % 4])}
        assert [(s0, s1) for _, s0, s1 in got] == [(g, min(g + k_group, hi)) for g in range(lo, hi, k_group)]


@pytest.mark.parametrize("shape,split", [((64, 1536, 1024), 4), ((256, 512, 1024), 2)], ids=["6tiles", "cluster"])
def test_workspace_requests_are_the_partial_tiles_once_each_way(system, shape, split):
    """Every slice WG writes its fp32 partial tile to the workspace and the reduction reads each back once:
    ``tiles x s x tile_m x tile_n x 4`` bytes each way. A and B loads and the final C stores are the unsplit
    kernel's; the output sink sees each tile once, in the tile order, with the tile's own stores; at the L2 the two
    kernels differ by exactly the workspace requests, and DRAM reads are the same (the workspace stays in the L2)."""
    M, N, K = shape
    k1, ks = record(system, M, N, K), record(system, M, N, K, split)
    order = row_major(k1.tiles_m, k1.tiles_n)[::-1]
    r1, h1, g1, sink1, log1 = run(system, k1, order=order)
    rs, hs, gs, sinks, logs = run(system, ks, order=order)
    T = k1.num_wgs
    size = workspace_size_B(ks)
    assert size == T * split * k1.tile_m * k1.tile_n * PARTIAL_ELEM_B == rs.workspace_B
    assert (rs.split_k, rs.wgs, rs.reduce_wgs, r1.split_k, r1.workspace_B) == (split, T * split, T, 1, 0)
    every = WS + 64 * np.arange(size // 64, dtype=np.int64)
    assert np.array_equal(_in(logs["write"], WS, WS + size), every)  # each partial line written once
    assert np.array_equal(_in(logs["read"], WS, WS + size), every)  # ... and read back once
    assert len(_in(log1["write"], WS, 1 << 40)) == len(_in(log1["read"], WS, 1 << 40)) == 0
    assert np.array_equal(_in(logs["read"], 0, C), _in(log1["read"], 0, C))  # A and B: the same requests
    assert rs.load_requests == r1.load_requests
    assert np.array_equal(_in(logs["write"], C, WS), _in(log1["write"], C, WS))  # final stores: the same
    assert [(q, t) for q, t, _ in sinks.seen] == [(q, t) for q, t, _ in sink1.seen]
    assert [q for q, _, _ in sinks.seen] == list(range(T))
    assert all(np.array_equal(a, b) for (_, _, a), (_, _, b) in zip(sinks.seen, sink1.seen))
    st1, sts = h1.stats(), hs.stats()

    def l2(st, kind):
        return st.value(f"l2.{kind}_hits") + st.value(f"l2.{kind}_misses")

    assert l2(sts, "read") - l2(st1, "read") == size // 64
    assert l2(sts, "write") - l2(st1, "write") == size // 64
    assert sts.value("l2.evictions") == st1.value("l2.evictions") == 0
    assert sts.value("hbm.by_kind.read.bytes") == st1.value("hbm.by_kind.read.bytes")


def test_stages_are_over_the_slice_wgs_and_the_reduction_uses_the_kernels_cus(system):
    k = record(system, 64, 1536, 1024, 4)  # 6 tiles x 4 slices = 24 WGs; 1 WG per CU
    stages = []
    r, _, gk, _, _ = run(system, k, num_cus=10, on_stage_done=stages.append, spans=True)
    assert gk.slots == 10 and r.stages == 3 and stages == [0, 1, 2]
    assert r.stage_end_ticks == sorted(r.stage_end_ticks) and r.stage_end_ticks[-1] <= r.reduce_start_tick
    assert len(gk.wg_spans) == 24 and max(cu for cu, *_ in gk.wg_spans) < 10
    red = gk.reduce
    assert red.num_wgs == 6 and red.footprint.threads == REDUCE_THREADS and red.footprint.lds_B == 0
    assert max(cu for cu, *_ in red.wg_spans) < 10
    launch = ns_to_ticks(system.gpu.dependent_launch_gap)  # the preset's dependent gap (800 ns, measured)
    assert launch < ns_to_ticks(system.gpu.kernel_launch_overhead_ns)
    assert min(t0 for *_, t0, _ in red.wg_spans) == r.reduce_start_tick + launch
    assert r.end_tick >= max(t1 for *_, t1 in red.wg_spans)


@pytest.mark.parametrize("gap_ns", [None, 0.0, 700.0])
def test_the_reduction_starts_its_dependent_launch_gap_after_the_split_kernel(system, gap_ns):
    """cuBLAS launches splitKreduce_kernel as a programmatic dependent of its split kernel: its first WG dispatches
    ``gpu.dependent_launch_gap_ns`` after the split kernel's end, not ``kernel_launch_overhead_ns`` (the preset's);
    unset, the reduction launches as any kernel."""
    gpu = system.gpu.model_copy(update={"dependent_launch_gap_ns": gap_ns})
    r, _, gk, _, _ = run(system.model_copy(update={"gpu": gpu}), record(system, 64, 1536, 1024, 4), spans=True)
    launch = ns_to_ticks(system.gpu.kernel_launch_overhead_ns)
    gap = launch if gap_ns is None else ns_to_ticks(gap_ns)
    assert min(t0 for *_, t0, _ in gk.reduce.wg_spans) == r.reduce_start_tick + gap
    assert gk.wg_spans and min(t0 for *_, t0, _ in gk.wg_spans) == r.start_tick + launch


def test_bad_split_and_missing_workspace_are_rejected(system):
    eng = Engine(seed=0)
    hier = MemoryHierarchy(eng.env, system)
    k = record(system, 64, 1536, 64 * 4, 5)  # 4 k-steps, 5 slices
    with pytest.raises(ValueError, match="exceeds the 4 k-steps"):
        GemmKernel(eng, "g", hier, system.gpu, k, range(k.num_wgs), A, B, C, CachedLocalOutput(hier), workspace_B=WS)
    k = record(system, 64, 1536, 64 * 4, 2)
    with pytest.raises(ValueError, match="needs a workspace"):
        GemmKernel(eng, "g", hier, system.gpu, k, range(k.num_wgs), A, B, C, CachedLocalOutput(hier))
    for bad in (0, -1, 2.0):
        with pytest.raises(ValueError, match="split_k"):
            split_of(dataclasses.replace(k, split_k=bad))
    with pytest.raises(ValueError, match="mma_rate"):
        GemmKernel(eng, "g", hier, system.gpu, record(system, 64, 1536, 256, mma_rate=1.5), range(6), A, B, C,
                   CachedLocalOutput(hier))
    assert workspace_size_B(record(system, 64, 1536, 256)) == 0
    assert partial_stride_B(k) == k.tile_m * k.tile_n * PARTIAL_ELEM_B


# ---------------------------------------------------------------- component


@pytest.fixture(scope="module")
def deep_k(system):
    """M = 64, N = 1536, K = 8192 on the H200 preset (6 tiles of 128 x 256 on 132 SMs): unsplit, split 4 ways, and
    unsplit at half the MMA rate."""
    return {name: run(system, record(system, 64, 1536, 8192, s, rate))
            for name, s, rate in (("s1", 1, 1.0), ("s4", 4, 1.0), ("half", 1, 0.5))}


def test_split_k_speeds_up_a_few_tile_deep_k_gemm(deep_k):
    """6 tiles leave 126 of 132 SMs idle; 4 slices keep 24 busy, and the reduction (a launch and a few us of
    L2-resident reads) costs far less than the 3/4 of the K loop each SM no longer runs."""
    r1, rs = deep_k["s1"][0], deep_k["s4"][0]
    assert rs.duration_ticks < 0.5 * r1.duration_ticks
    assert rs.end_tick - rs.reduce_start_tick < 0.2 * rs.duration_ticks


def test_half_mma_rate_doubles_the_math_of_a_compute_bound_gemm(system, deep_k):
    """On the real hierarchy the compute-bound 6-tile GEMM takes ~2x (memory and launch are the rest); with
    loads that cost nothing it takes exactly twice the cycles."""
    ratio = deep_k["half"][0].duration_ticks / deep_k["s1"][0].duration_ticks
    assert 1.9 < ratio <= 2.0
    clock = Clock.from_GHz(system.gpu.clock_GHz, "cu")
    f = cu_flops_per_cycle(system.gpu, "bf16")
    gpu = system.gpu.model_copy(update={"kernel_launch_overhead_ns": 0.0})
    sys0 = system.model_copy(update={"gpu": gpu})
    cycles = sum(k_step_compute_cycles(128, 256, 64, 640, s, f, 1) for s in range(10))
    for rate, want in ((1.0, cycles), (0.5, 2 * cycles)):
        r, *_ = run(sys0, record(system, 128, 256, 640, mma_rate=rate), hier_factory=lambda env: FakeHier(env, 0))
        assert r.duration_ticks == clock.cycle_to_tick(want)


def test_split_k_runs_are_deterministic(system, deep_k):
    again = run(system, record(system, 64, 1536, 8192, 4))
    first = deep_k["s4"]
    assert dataclasses.asdict(again[0]) == dataclasses.asdict(first[0])
    assert again[1].stats().to_dict() == first[1].stats().to_dict()
