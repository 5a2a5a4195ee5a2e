"""Compute/communication arbitration (paper Sec. 4.5, 6.1.3)."""

import numpy as np
import pytest
from pydantic import ValidationError

from t3sim import registry
from t3sim.memory import MemorySystem
from t3sim.memory.policies.base import build

from .helpers import system


def _scenario(policy: str, comm: bool = True, threshold=10, ch: int = 4):
    """Compute: 16 x 64 B reads per channel every 100 ns for 20 us. Communication: every 5 us a burst of
    256 KiB of reads (RS reads) and 256 KiB of op-and-store updates (RS updates), as in paper Fig. 17(b).
    In DRAM accesses of ``A`` bytes (32 B on Table 1: two per 64 B).
    (The starvation limit is fixed at 1000 cycles: the link-rate default of 4 channels on Table 1's
    300 GB/s of links would be 1 cycle, i.e. communication first.)"""
    cfg = system(ch, memory_controller={"arbitration": {"kind": policy, "threshold_mode": "static",
                                                        "occupancy_threshold": threshold,
                                                        "starvation_limit_cycles": 1000}})
    ms = MemorySystem(cfg)
    A = ms.access_B
    k64 = 64 // A  # accesses per 64 B
    cap = ms.amap.capacity_B // A
    line = 0
    for k in range(200):
        t = k * 100_000
        if comm and k % 50 == 0:
            base = cap // 2 + k * 8192 * k64
            ms.submit(t, (base + np.arange(4096 * k64)) * A, "read", "comm", "collective")
            ms.submit(t, (base + 4096 * k64 + np.arange(4096 * k64)) * A, "update", "comm", "dma")
        ms.submit(t, (line + np.arange(16 * ch * k64)) * A, "read", "compute", "gemm")
        line += 16 * ch * k64
    ms.run_until_idle()
    comp = ms.r_stream[: ms.n] == 0
    lat = (ms.r_done[: ms.n] - ms.r_arrive[: ms.n])[comp]
    return float(lat.mean()), ms


def test_t3_mca_keeps_compute_reads_near_isolated_latency():
    iso, _ = _scenario("round_robin", comm=False)
    rr, _ = _scenario("round_robin")
    cf, _ = _scenario("compute_first")
    mca, ms = _scenario("t3_mca")
    # measured (32 B accesses): isolated 71 cycles, t3_mca 73, compute_first 1125, round_robin 3867
    assert mca <= 1.5 * iso
    assert rr >= 10 * iso
    assert cf >= 5 * iso  # prioritising compute alone is not enough: comm already fills the queues
    # and the communication still completes
    assert np.all(ms.r_done[: ms.n] >= 0)


def test_policies_registered_and_config_validates_kind():
    assert {"round_robin", "compute_first", "t3_mca"} <= set(registry.names("arbitration"))
    with pytest.raises(ValidationError, match="arbitration kind"):
        system(1, memory_controller={"arbitration": {"kind": "nope"}})
    with pytest.raises(ValidationError, match="address_map kind"):
        system(1, address_map={"kind": "nope"})


def _decide(policy, **kw):
    """``policy.choose`` on a default view with ``kw`` changed (the arguments by name)."""
    v = dict(c=100, e0=True, e1=True, a0=95, a1=90, occ=3, last_stream=-1, last_comm=-1, drain=0, threshold=5)
    v.update(kw)
    return policy.choose(*v.values(), np.asarray(policy.params(), dtype=np.int64))


def test_policy_decisions():
    arb = system(1, memory_controller={"arbitration": {"kind": "t3_mca", "starvation_limit_cycles": 50}}).memory_controller.arbitration
    mca = build(arb)
    assert _decide(mca) == 0  # compute first
    assert _decide(mca, e0=False) == 1  # occupancy 3 < 5
    assert _decide(mca, e0=False, occ=5) == -1  # at the threshold
    assert _decide(mca, c=140, a1=90) == 1  # starved for 50 cycles
    assert _decide(mca, c=140, a1=90, last_comm=100) == 0  # ... counted from the last comm admission
    assert _decide(mca, drain=1) == 1  # producer-end drain
    assert mca.wake(100, -1, 90, 3, -1, 100, 0, 5, np.array(mca.params())) == 150
    rr = build(arb.model_copy(update={"kind": "round_robin"}))
    assert [_decide(rr, last_stream=s) for s in (-1, 0, 1)] == [0, 1, 0]
    assert _decide(rr, e0=False, last_stream=1) == 1


def test_dynamic_threshold_from_isolated_stage():
    arb = system(1, memory_controller={"arbitration": {"kind": "t3_mca", "threshold_mode": "dynamic"}}).memory_controller.arbitration
    mca = build(arb)
    # levels 32, 8, 1 entries -> thresholds 5, 10, 30; below 1 -> unlimited
    assert mca.thresholds_from_observation([40.0, 10.0, 2.0, 0.5]).tolist() == [5, 10, 30, -1]
    cfg = system(2, memory_controller={"arbitration": {"kind": "t3_mca", "threshold_mode": "dynamic"}})
    ms = MemorySystem(cfg)
    assert ms.arb[:, 3].tolist() == [-1, -1]
    ms.submit(0, np.arange(20_000) * 64, "read", "compute", "gemm")  # memory-intensive isolated stage
    ms.advance(5_000_000)
    ms.end_isolated_stage()
    assert ms.arb[:, 3].tolist() == [5, 5]


def test_kernel_boundary_drains_communication():
    """With the threshold reached, communication waits; at the kernel boundary it is admitted at once."""
    cfg = system(1, memory_controller={"arbitration": {"kind": "t3_mca", "threshold_mode": "static", "occupancy_threshold": 1,
                                                       "starvation_limit_cycles": 100_000}})
    done = {}
    for boundary in (False, True):
        ms = MemorySystem(cfg)
        ms.submit(0, np.arange(3000) * 64, "read", "compute", "gemm")
        c = ms.submit(0, (1 << 24) + np.arange(64) * 64, "read", "comm", "dma")
        ms.advance(50_000)
        if boundary:
            ms.kernel_boundary()
        ms.run_until_idle()
        done[boundary] = ms.batch_done_tick(c)
    assert done[True] < done[False]


def test_threshold_lifted_after_kernel_boundary_until_next_producer():
    """Communication that arrives after the producer kernel ended is not held to the occupancy
    threshold (nothing to keep queue room for); the next producer kernel restores it."""
    cfg = system(1, memory_controller={"arbitration": {"kind": "t3_mca", "threshold_mode": "static", "occupancy_threshold": 1,
                                                       "starvation_limit_cycles": 100_000}})
    ms = MemorySystem(cfg)
    ms.kernel_boundary()
    assert ms.arb[:, 3].tolist() == [-1]
    t = 10_000_000
    c = ms.submit(t, (1 << 24) + np.arange(512) * 64, "read", "comm", "dma")
    ms.run_until_idle()
    lifted = ms.batch_done_tick(c) - t
    ms.begin_isolated_stage()
    assert ms.arb[:, 3].tolist() == [1]
    t2 = 40_000_000
    c2 = ms.submit(t2, (1 << 25) + np.arange(512) * 64, "read", "comm", "dma")
    ms.run_until_idle()
    assert ms.batch_done_tick(c2) - t2 > 1.1 * lifted  # one queue entry at a time is slower (measured 1.19x)


def test_link_rate_starvation_limit():
    """Default limit: the longest that serves one request per channel as fast as the GPU's links move data in
    and out (t3sim/memory/policies/t3_mca.py): Table 1, 32 channels x 32 B x 1 GHz / (2 x 2 x 75 GB/s) -> 3."""
    from t3sim.config.system import SystemConfig
    from t3sim.memory.policies.base import NEVER
    from t3sim.memory.policies.t3_mca import link_rate_limit

    def sc(**ic):
        return SystemConfig.model_validate({"interconnect": ic})

    assert link_rate_limit() == link_rate_limit(sc(num_gpus=32)) == 3  # 32 channels x 32 B x 1 GHz / 300 GB/s
    assert link_rate_limit(sc(num_gpus=2)) == 6  # one link: 1024 / 150
    assert link_rate_limit(sc(num_gpus=8, bidirectional=False)) == 6
    assert link_rate_limit(sc(num_gpus=8, kind="direct")) == 1  # 7 links x 75 x 2 = 1050 GB/s > 1 TB/s of HBM
    assert link_rate_limit(sc(num_gpus=1)) == NEVER
    arb = system(1, memory_controller={"arbitration": {"kind": "t3_mca"}}).memory_controller.arbitration
    assert arb.starvation_limit_cycles is None
    assert build(arb, sc(num_gpus=16)).params() == (3,)
    assert build(arb.model_copy(update={"starvation_limit_cycles": 1000}), sc()).params() == (1000,)


@pytest.mark.parametrize("limit", [None, 1000])
def test_communication_served_at_the_link_rate_when_compute_is_always_queued(limit):
    """Compute reads always waiting (a memory-bound GEMM, TP=32): with strict compute priority communication
    enters only through the starvation limit. The link-rate default serves it at least at the GPU's link
    rate (300 GB/s on Table 1); the earlier 1000 cycles at 32 x 64 B / 1000 cycles = 2 GB/s."""
    cfg = system(32, memory_controller={"arbitration": {"kind": "t3_mca", "threshold_mode": "static",
                                                        "occupancy_threshold": 5, "starvation_limit_cycles": limit}})
    ms = MemorySystem(cfg)
    n_comm = 32 * 2000  # more than 8 us of the links
    ms.submit(0, np.arange(32 * 8000) * 64, "read", "compute", "gemm")  # ~16 us of reads at 1 TB/s
    c = ms.submit(0, (1 << 26) + np.arange(n_comm) * 64, "read", "comm", "dma")
    ms.advance(8_000_000)  # 8 us: compute still queued on every channel
    served = int(np.count_nonzero(ms.r_done[: ms.n][ms.r_stream[: ms.n] == 1] >= 0))
    gbps = served * 64 / 8e-6 / 1e9
    if limit is None:
        assert gbps >= 300 * 0.95
    else:
        assert gbps <= 3.0
    ms.run_until_idle()
    assert ms.batch_done_tick(c) > 0
