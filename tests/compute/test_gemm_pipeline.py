"""GEMM main loop: lds_stages - 1 k-groups of loads in flight, and cluster multicast of the shared slice.

A fake memory hierarchy (fixed read latency, reads logged) isolates the kernel's pipelining from the L2/DRAM
model; the multicast check also runs on the real hierarchy (DRAM bytes unchanged)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from t3sim.compute.gemm_kernel import GemmKernel, cluster_order
from t3sim.compute.memhier import MemoryHierarchy
from t3sim.compute.occupancy import cu_flops_per_cycle, k_step_compute_cycles
from t3sim.config import load_system
from t3sim.sim.clock import Clock, ns_to_ticks
from t3sim.sim.engine import Engine
from tests.conftest import LARGE, with_kernel
from t3sim.system.kernels import gemm_kernel_record
from t3sim.workload.wg_order import row_major

H200 = "configs/systems/h200-4gpu.yaml"


class FakeHier:
    """Reads complete ``latency_ticks`` after they are issued; logs (tick, requests) and outstanding reads."""

    def __init__(self, env, latency_ticks: int, first_latencies=()):
        self.env, self.lat, self.first = env, latency_ticks, list(first_latencies)
        self.log = []
        self.outstanding = 0
        self.max_outstanding = 0

    def cu_port_done(self, cu, nbytes):
        return -1  # no CU port limit

    def read(self, addrs, category="gemm", at_least_tick=-1):
        self.log.append((self.env.now, np.asarray(addrs).copy()))
        self.outstanding += 1
        self.max_outstanding = max(self.max_outstanding, self.outstanding)
        i = len(self.log) - 1
        ev = self.env.timeout(self.first[i] if i < len(self.first) else self.lat)

        def done(_e):
            self.outstanding -= 1

        ev.callbacks.append(done)
        return ev


class NoSink:
    def store(self, seq, tile, reqs):
        return None


@pytest.fixture(scope="module")
def system():
    return load_system(H200)


def kernel(system, M, N, K, stages, cluster=(1, 1)):
    s = with_kernel(system, LARGE, lds_stages=stages, cluster_m=cluster[0], cluster_n=cluster[1])
    return gemm_kernel_record(s, M, N, K, "bf16")


def run(system, k, hier_factory, num_cus=None):
    eng = Engine(seed=0)
    hier = hier_factory(eng.env)
    gpu = system.gpu.model_copy(update={"kernel_launch_overhead_ns": 0.0})
    g = GemmKernel(eng, "g", hier, gpu, k, row_major(k.tiles_m, k.tiles_n), 0, 1 << 30, 1 << 31, NoSink(),
                   num_cus=num_cus)
    done = g.start()
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    return done.value, hier, g


def cycle_ticks(system):
    """Ticks of one CU cycle (a math step starts on the first clock edge after its loads arrived)."""
    return -(-Clock.from_GHz(system.gpu.clock_GHz, "cu").cycle_to_tick(1000) // 1000)


def step_ticks(system, k):
    clock = Clock.from_GHz(system.gpu.clock_GHz, "cu")
    c = k_step_compute_cycles(k.tile_m, k.tile_n, k.tile_k, k.K, 0, cu_flops_per_cycle(system.gpu, k.dtype), 1)
    return clock.cycle_to_tick(c), c


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_in_flight_never_exceeds_stages_minus_one(system, stages):
    k = kernel(system, 128, 256, 64 * 12, stages)  # one WG, 12 k-steps
    lat = ns_to_ticks(50_000)  # loads far slower than math: every group waits
    _, hier, g = run(system, k, lambda env: FakeHier(env, lat))
    assert g.in_flight == stages - 1
    assert hier.max_outstanding == stages - 1
    assert len(hier.log) == 12


@pytest.mark.parametrize("stages", [2, 4])
def test_infinite_memory_speed_is_compute_bound(system, stages):
    k = kernel(system, 128, 256, 64 * 10, stages)
    r, _, g = run(system, k, lambda env: FakeHier(env, 0))
    clock = Clock.from_GHz(system.gpu.clock_GHz, "cu")
    cycles = sum(k_step_compute_cycles(k.tile_m, k.tile_n, k.tile_k, k.K, s, cu_flops_per_cycle(system.gpu, k.dtype), 1)
                 for s in range(10))
    assert r.duration_ticks == clock.cycle_to_tick(cycles)


@pytest.mark.parametrize("lat_ns", [100, 400, 1500])
def test_double_buffering_timing(system, lat_ns):
    """lds_stages = 2: first load, then every step max(math, load) (load of step s+1 issued when step s's math
    starts), then the last step's math: today's double-buffered loop."""
    k = kernel(system, 128, 256, 64 * 8, 2)
    lat = ns_to_ticks(lat_ns)
    r, _, _ = run(system, k, lambda env: FakeHier(env, lat))
    c, _ = step_ticks(system, k)
    assert abs(r.duration_ticks - (lat + 7 * max(c, lat) + c)) <= 9 * cycle_ticks(system)  # clock edges


def test_multistage_hides_latency_up_to_stages_minus_one_steps(system):
    k = kernel(system, 128, 256, 64 * 8, 4)
    c, _ = step_ticks(system, k)
    lat = 2 * c  # < 3 steps of math: fully hidden after the first load
    r, _, _ = run(system, k, lambda env: FakeHier(env, lat))
    assert abs(r.duration_ticks - (lat + 8 * c)) <= 9 * cycle_ticks(system)  # clock edges


def _requests(hier):
    return np.concatenate([a for _, a in hier.log])


def test_multicast_pair_requests_shared_slice_once(system):
    """A 1x2... here 2x1 cluster (two tile rows share the B slice): per k-step the pair requests A twice (one
    slice per tile row) and B once; without the cluster B twice. Same lines either way."""
    k1 = kernel(system, 256, 256, 64 * 4, 4)
    k2 = kernel(system, 256, 256, 64 * 4, 4, cluster=(2, 1))
    _, h1, _ = run(system, k1, lambda env: FakeHier(env, 1000))
    _, h2, g2 = run(system, k2, lambda env: FakeHier(env, 1000))
    assert g2.cluster == (2, 1)
    r1, r2 = _requests(h1), _requests(h2)
    a_per_step = 128 * 64 * 2 // 64  # A slice 128 x 64 bf16 in 64 B requests
    b_per_step = 64 * 256 * 2 // 64
    assert len(r1) == 4 * (2 * a_per_step + 2 * b_per_step)
    assert len(r2) == 4 * (2 * a_per_step + b_per_step)
    assert np.array_equal(np.unique(r1), np.unique(r2))
    assert len(np.unique(r2)) == len(r2)  # nothing requested twice


def test_multicast_waits_for_every_part(system):
    """A sharer's k-step waits for its partner's part of the shared slice: when the partner's first read is
    slow, both WGs of the pair wait for it; without the cluster only the partner does."""
    slow = ns_to_ticks(100_000)
    ends = {}
    for cl in ((1, 1), (2, 1)):
        k = kernel(system, 256, 256, 64 * 4, 2, cluster=cl)
        eng = Engine(seed=0)
        hier = FakeHier(eng.env, 1000, first_latencies=(1000, slow))  # WG 0's first read fast, WG 1's slow
        gpu = system.gpu.model_copy(update={"kernel_launch_overhead_ns": 0.0})
        g = GemmKernel(eng, "g", hier, gpu, k, row_major(k.tiles_m, k.tiles_n), 0, 1 << 30, 1 << 31, NoSink())
        g.wg_spans = []
        done = g.start()
        done.callbacks.append(lambda _e: eng.finish())
        eng.run()
        ends[cl] = sorted(end for _, _, _, end in g.wg_spans)
    assert ends[(1, 1)][0] < slow < ends[(1, 1)][1]
    assert ends[(2, 1)][0] > slow


def test_multicast_dram_bytes_unchanged(system):
    k1 = kernel(system, 512, 512, 64 * 4, 4)
    k2 = kernel(system, 512, 512, 64 * 4, 4, cluster=(2, 1))
    out = []
    for k in (k1, k2):
        r, hier, g = run(system, k, lambda env: MemoryHierarchy(env, system))
        st = hier.stats()
        out.append((st.value("hbm.by_kind.read.bytes"), r.load_requests))
    assert out[0][0] == out[1][0] == (512 * 256 + 256 * 512) * 2  # compulsory: A and B once
    assert out[1][1] < out[0][1]


def test_cluster_order_groups_cluster_tiles():
    order = np.array(row_major(4, 3))
    got = cluster_order(order, 3, 2, 1).tolist()
    # clusters (rows 0-1) x column 0, 1, 2, then rows 2-3
    assert got == [0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11]
    assert sorted(got) == list(range(12))
    assert cluster_order(order, 3, 1, 1).tolist() == order.tolist()


def test_no_cluster_with_too_few_slots(system):
    k = kernel(system, 256, 256, 64 * 2, 4, cluster=(2, 1))
    r, _, g = run(system, k, lambda env: FakeHier(env, 100), num_cus=1)
    assert g.cluster == (1, 1) and r.end_tick > 0
