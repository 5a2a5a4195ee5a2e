"""The loaded-latency experiment as t3sim runs it (t3sim.validation.loaded_latency): a dependent-load chase through
L2, memory controller and HBM, alone and beside a streaming kernel."""

import pytest

from t3sim.config import load_system
from t3sim.sim.clock import Clock
from t3sim.validation.loaded_latency import simulate_chase
from tests.conftest import REPO

SYSTEM = load_system(REPO / "configs" / "systems" / "h800-8gpu.yaml")


def _ns(cycles: float, GHz: float) -> float:
    return cycles / GHz


def test_the_idle_chase_costs_the_l2_the_frontend_and_one_dram_access_per_hop():
    """Every hop of a 4 GiB chase misses the L2: L2 latency + frontend + a DRAM read (tRCD + tCL + tBL with the bank
    closed; + tRP when another row is open), each no more than a cycle of rounding apart."""
    s = SYSTEM
    t = s.hbm.timing
    base = (_ns(s.l2.hit_latency_cycles, s.l2.clock_GHz) + _ns(s.memory_controller.frontend_latency_gpu_cycles,
            s.gpu.clock_GHz))
    burst = s.hbm.burst_length / s.hbm.transfers_per_clock
    closed = base + _ns(t.tRCD_nCK + t.tCL_nCK + burst, s.hbm.clock_GHz)
    conflict = closed + _ns(t.tRP_nCK, s.hbm.clock_GHz)
    r = simulate_chase(s, hops=200)
    slack = 3 * (1 / s.l2.clock_GHz + 1 / s.gpu.clock_GHz + 1 / s.hbm.clock_GHz)
    assert closed - slack <= r.ns_per_hop <= conflict + slack
    assert r.stream_GBps == 0.0


def test_the_cycle_chase_hits_a_warm_l2_inside_it_and_misses_beyond_it():
    """``cycle``: the measurement's random cycle after an untimed pass over it. A footprint well inside the L2 then
    costs the L2 hit latency per hop (the cold uniform chase over it misses); one several times the L2 misses."""
    s = SYSTEM
    hit = _ns(s.l2.hit_latency_cycles, s.l2.clock_GHz)
    slack = 3 * (1 / s.l2.clock_GHz + 1 / s.gpu.clock_GHz)
    warm = simulate_chase(s, hops=300, footprint_B=1 << 20, cycle=True)
    assert hit - slack <= warm.ns_per_hop <= hit + slack
    cold = simulate_chase(s, hops=300, footprint_B=1 << 20)
    assert cold.ns_per_hop > 2 * hit
    big = simulate_chase(s, hops=300, footprint_B=int(s.l2.size_MiB * 4 / 3) << 20, cycle=True)
    assert big.ns_per_hop > 2 * hit  # a cycle longer than an LRU cache evicts each line before its reuse


def test_latency_and_bandwidth_rise_with_the_streaming_sms_and_stay_under_the_peak():
    inflight = 46080
    rows = [simulate_chase(SYSTEM, k, inflight, hops=100, warm_ns=3000.0) for k in (0, 2, 12)]
    lat = [r.ns_per_hop for r in rows]
    gbps = [r.stream_GBps for r in rows]
    assert lat[0] < lat[2] and lat[1] <= lat[2]
    assert 0 == gbps[0] < gbps[1] < gbps[2] < SYSTEM.hbm.peak_bandwidth_GBps
    # Little's law on the lightly loaded row: bytes in flight over the round trip (the stream's own reads see about
    # the chase's latency, never less than an idle hop)
    assert gbps[1] <= 2 * inflight / lat[0] * 1.02
    assert gbps[1] == pytest.approx(2 * inflight / lat[1], rel=0.35)


@pytest.mark.parametrize("kw", [dict(hops=0), dict(stream_cus=-1), dict(stream_cus=10_000),
                                dict(stream_cus=2, inflight_per_cu_B=64),
                                dict(cycle=True, stream_cus=2, inflight_per_cu_B=4096, footprint_B=1 << 20),
                                dict(cycle=True, footprint_B=1 << 30)])
def test_bad_arguments_are_refused(kw):
    with pytest.raises(ValueError):
        simulate_chase(SYSTEM, **kw)
