"""Each CU's port from the L2 (``gpu.l2_to_cu_B_per_cycle``; MemoryHierarchy's module doc).

Unit: a reservation of ``n`` bytes takes ``ceil(n / P)`` CU cycles from the CU cycle at or after the later of now and
the port's free tick; CUs have ports of their own; 0 means no port. A read with ``at_least_tick`` is back no sooner.
Component: a GEMM whose operands sit in the L2 runs at its CUs' port rate once the port binds (its time follows the
bytes each CU receives); a cluster's sharers each pass the whole shared slice.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.compute.gemm_kernel import GemmKernel
from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.compute.sinks import CachedLocalOutput
from t3sim.config import load_system
from t3sim.sim.clock import Clock
from t3sim.sim.engine import Engine
from t3sim.system.kernels import gemm_kernel_record
from t3sim.workload.wg_order import row_major
from tests.conftest import LARGE, REPO, with_kernel

H200 = REPO / "configs/systems/h200-4gpu.yaml"


def _system(port: int, **kernel):
    s = load_system(H200)
    s = s.model_copy(update={"gpu": s.gpu.model_copy(update={"l2_to_cu_B_per_cycle": port})})
    return with_kernel(s, LARGE, **kernel) if kernel else s


def test_no_port_means_no_bound():
    eng = Engine(seed=0)
    h = MemoryHierarchy(eng.env, _system(0))
    assert h.cu_port_done(3, 1 << 20) == -1 and not h.cu_port_free.any()


@settings(max_examples=30, deadline=None)
@given(port=st.integers(1, 256), sizes=st.lists(st.integers(1, 1 << 16), min_size=1, max_size=6),
       gap_ps=st.integers(0, 5000))
def test_reservations_queue_on_their_cu(port, sizes, gap_ps):
    eng = Engine(seed=0)
    h = MemoryHierarchy(eng.env, _system(port))
    clock = h.cu_clock
    env = eng.env
    got = []

    def proc():
        free = 0
        for n in sizes:
            done = h.cu_port_done(5, n)
            c0 = clock.next_cycle_at_or_after(max(env.now, free))
            assert done == clock.cycle_to_tick(c0 + -(-n // port))
            free = done
            got.append(done)
            yield env.timeout(gap_ps)

    env.process(proc())
    env.run()
    assert got == sorted(got) and h.cu_port_free[5] == got[-1]
    assert h.cu_port_free[[c for c in range(len(h.cu_port_free)) if c != 5]].sum() == 0  # other CUs untouched


def test_a_read_is_back_no_sooner_than_its_bound():
    eng = Engine(seed=0)
    h = MemoryHierarchy(eng.env, _system(0))
    env = eng.env
    addrs = np.arange(0, 64 * REQ_B, REQ_B, dtype=np.int64)
    ends = []

    def proc():
        ev = h.read(addrs)  # cold: from DRAM
        yield ev
        t0 = env.now
        yield h.read(addrs)  # now L2 hits
        ends.append(env.now - t0)
        t1 = env.now
        yield h.read(addrs, at_least_tick=t1 + 10 * ends[0])
        ends.append(env.now - t1)

    env.process(proc())
    env.run()
    assert ends[1] == 10 * ends[0]


def _gemm(system, M, N, K, order=None):
    eng = Engine(seed=0)
    h = MemoryHierarchy(eng.env, system)
    k = gemm_kernel_record(system, M, N, K, "bf16")
    gk = GemmKernel(eng, "gpu0.gemm", h, system.gpu, k, order if order is not None else row_major(k.tiles_m, k.tiles_n),
                    0, 1 << 30, 1 << 31, CachedLocalOutput(h))
    done = gk.start()
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    return done.value, gk, h


def test_a_binding_port_sets_the_pace_of_an_l2_bound_gemm():
    """One 128 x 256 tile per CU, K = 4096 (64 k-steps of 48 KiB each per WG): at 4 B per cycle a WG's loads need
    12288 cycles a k-step, far more than its math or memory, so the kernel takes about 64 x 12288 cycles; halving
    the port doubles it; a fast port leaves the kernel as without one."""
    free = _gemm(_system(0, cluster_m=1, cluster_n=1), 128, 256 * 8, 4096)[0].duration_ticks
    runs = {p: _gemm(_system(p, cluster_m=1, cluster_n=1), 128, 256 * 8, 4096)[0].duration_ticks for p in (2, 4, 4096)}
    clock = Clock.from_GHz(load_system(H200).gpu.clock_GHz, "cu")
    per_wg = 64 * (128 + 256) * 64 * 2  # bytes each WG receives
    assert runs[4] == pytest.approx(clock.cycle_to_tick(per_wg // 4), rel=0.05)
    assert runs[2] == pytest.approx(2 * runs[4], rel=0.05)
    assert runs[4096] == free


def test_each_sharer_of_a_cluster_passes_the_whole_slice(monkeypatch):
    """With a 1 x 2 cluster (two tile columns share A's slice), each WG issues half of A's requests but receives
    the whole of A and B: the bytes its CU's port reserves are the full slices."""
    s = _system(64, cluster_m=1, cluster_n=2)
    seen = []
    orig = MemoryHierarchy.cu_port_done

    def spy(self, cu, nbytes):
        seen.append(nbytes)
        return orig(self, cu, nbytes)

    monkeypatch.setattr(MemoryHierarchy, "cu_port_done", spy)
    run, gk, _ = _gemm(s, 128, 256 * 4, 512)
    k = gk.kernel
    assert gk.cluster == (1, 2)
    assert set(seen) == {(k.tile_m + k.tile_n) * k.tile_k * 2}  # every k-step: A and B slices, bf16
    assert len(seen) == run.wgs * (512 // k.tile_k)
    assert run.load_requests * REQ_B < sum(seen)  # sharers issued less than they received
