"""Copy engines (t3sim/dma/copy_engine.py): unit and component tests.

Unit: the issue-rate cap, the in-flight cap, bytes conserved per direction, queueing on busy
engines, the host link's rate, bad input. Component: a copy through the real memory hierarchy
(Table 1 system, 1 TB/s HBM) against its analytical bounds.
"""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.compute.memhier import MemoryHierarchy
from t3sim.config.system import SystemConfig
from t3sim.dma.copy_engine import CopyEngines
from t3sim.sim.clock import TICKS_PER_NS
from t3sim.sim.engine import Engine

MiB = 1 << 20


def _setup(**ce):
    system = SystemConfig.model_validate({"copy_engine": ce})
    eng = Engine(seed=0)
    hier = MemoryHierarchy(eng.env, system)
    return system, eng, hier, CopyEngines(eng, 0, hier, system.copy_engine)


def _run(eng, events):
    done = eng.env.all_of(events)
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    return [e.value for e in events]


def _us(ticks):
    return ticks / TICKS_PER_NS / 1e3


def test_rate_cap_sets_copy_time():
    """An engine capped at 20 GB/s with ample credits copies 1 MiB in 1 MiB / 20 GB/s (+ launch and drain)."""
    _, eng, _, ce = _setup(engine_bandwidth_GBps=20.0, max_outstanding_requests=65536, launch_latency_ns=0)
    (c,) = _run(eng, [ce.copy(0, 64 * MiB, 1 * MiB, "d2d")])
    ideal_us = MiB / 20e9 * 1e6
    assert ideal_us <= _us(c.duration_ticks) <= ideal_us * 1.05 + 2.0  # + one request's round trip


def test_outstanding_cap_holds_and_binds():
    """With 32 credits the engine never has more than 32 requests in flight, and it uses them all."""
    _, eng, _, ce = _setup(max_outstanding_requests=32, request_B=512, launch_latency_ns=0)
    _run(eng, [ce.copy(0, 64 * MiB, 256 * 1024, "d2d")])
    assert ce.max_in_flight() == 32
    assert ce.stats().value("max_in_flight_requests") == 32


def test_fewer_credits_slower():
    """Little's law: with the memory far from saturated, halving the credits slows the copy."""
    times = []
    for credits in (16, 64):
        _, eng, _, ce = _setup(max_outstanding_requests=credits, request_B=512, launch_latency_ns=0)
        (c,) = _run(eng, [ce.copy(0, 64 * MiB, 256 * 1024, "d2d")])
        times.append(c.duration_ticks)
    assert times[0] > 2.5 * times[1]


@settings(max_examples=8, deadline=None)
@given(direction=st.sampled_from(["d2d", "h2d", "d2h", "d2p"]), kib=st.integers(1, 96))
def test_bytes_conserved(direction, kib):
    """d2d reads and writes nbytes; h2d only writes; d2h and d2p only read; every byte is finished once."""
    system = SystemConfig()
    eng = Engine(seed=0)
    hier = MemoryHierarchy(eng.env, system)
    sent = []

    def peer_send(gpu, copy, off, dst_addrs, data):
        assert copy.peer == 1 and data is None
        assert (dst_addrs == copy.dst_B + off + 64 * np.arange(len(dst_addrs))).all()  # the peer's lines
        sent.append(64 * len(dst_addrs))
        return eng.env.timeout(1000)

    ce = CopyEngines(eng, 0, hier, system.copy_engine, peer_send=peer_send)
    done_B = []
    ce.on_bytes_done = lambda t, b: done_B.append(b)
    n = kib * 1024
    (c,) = _run(eng, [ce.copy(0, 64 * MiB, n, direction, peer=1)])
    reads = {"d2d": n, "h2d": 0, "d2h": n, "d2p": n}[direction]
    writes = {"d2d": n, "h2d": n, "d2h": 0, "d2p": 0}[direction]
    assert (ce.read_B, ce.written_B) == (reads, writes) == (c.read_B, c.written_B)
    assert sum(done_B) == n
    assert hier.traffic["dma"]["read"] == reads and hier.traffic["dma"]["write"] == writes
    assert sum(sent) == (n if direction == "d2p" else 0)
    assert ce.host_B == {"h2d": n if direction == "h2d" else 0, "d2h": n if direction == "d2h" else 0}


def test_copies_queue_for_engines():
    """Three copies on two engines: two start at once, the third waits for an engine (which takes it once
    its current copy's last request is issued: engines pipeline their copies)."""
    _, eng, _, ce = _setup(engines=2, launch_latency_ns=0, engine_bandwidth_GBps=100.0)
    cs = _run(eng, [ce.copy(i * 64 * MiB, (i * 64 + 32) * MiB, 1 * MiB, "d2d") for i in range(3)])
    assert sorted(c.start_tick for c in cs)[:2] == [0, 0]
    third = max(cs, key=lambda c: c.start_tick)
    first = next(c for c in cs if c.engine == third.engine and c is not third)
    # the engine issues at 100 GB/s: its first copy's last request issues after ~1 MiB / 100 GB/s
    assert third.start_tick >= 0.95 * MiB / 100e9 * 1e12
    assert third.start_tick < first.end_tick


def test_host_link_rate():
    """An h2d copy is host-link bound: nbytes / (raw rate x payload / (payload + overhead))."""
    system, eng, _, ce = _setup()
    cfg = system.copy_engine
    assert cfg.host_link_effective_GBps == pytest.approx(63.0 * 256 / 280)
    (c,) = _run(eng, [ce.copy(0, 64 * MiB, 4 * MiB, "h2d")])
    ideal_us = 4 * MiB / (cfg.host_link_effective_GBps * 1e3)
    assert ideal_us < _us(c.duration_ticks) < ideal_us + 6.0  # + launch, link latency, last write


@pytest.mark.parametrize("kw,msg", [(dict(direction="x2y"), "direction"), (dict(nbytes=100), "multiple of 64"),
                                    (dict(src=10), "aligned"), (dict(direction="d2p"), "peer")])
def test_bad_copies_rejected(kw, msg):
    _, eng, _, ce = _setup()
    with pytest.raises(ValueError, match=msg):
        ce.copy(kw.get("src", 0), 64 * MiB, kw.get("nbytes", 4096), kw.get("direction", "d2d"))


def test_bad_config_rejected():
    with pytest.raises(ValueError, match="multiple of 64"):
        _setup(request_B=100)
    with pytest.raises(ValueError, match="less than one request"):
        _setup(request_B=8192, max_outstanding_requests=64)


def test_component_copy_bandwidth_vs_bounds():
    """A d2d copy with ample credits: read + write bandwidth at most the HBM peak and at least 60 % of it
    (a copy mixes reads and writes, paying bus turnarounds); with 64 credits it obeys Little's law."""
    system, eng, hier, ce = _setup(max_outstanding_requests=16384, request_B=4096, launch_latency_ns=0)
    n = 8 * MiB
    (c,) = _run(eng, [ce.copy(0, 256 * MiB, n, "d2d")])
    bw = 2 * n / (c.duration_ticks / 1e3)  # B per ns = GB/s
    peak = system.hbm.peak_bandwidth_GBps
    assert 0.6 * peak <= bw <= peak
    # Little's law: rate <= credits x 64 B / (unloaded round trip), round trip >= one DRAM read + one write
    _, eng2, hier2, ce2 = _setup(max_outstanding_requests=64, request_B=512, launch_latency_ns=0)
    (c2,) = _run(eng2, [ce2.copy(0, 256 * MiB, 1 * MiB, "d2d")])
    rate = MiB / (c2.duration_ticks / 1e3)
    t = hier2.mem.timing.values
    clk_ns = 1 / system.hbm.clock_GHz
    min_rt_ns = (t["tCL"] + t["tWL"]) * clk_ns  # column-to-data of the read plus the write
    assert rate <= 64 * 64 / min_rt_ns
    assert rate < 0.5 * peak / 2  # far from the memory's limit: the credits bind


def test_event_fires_once_and_stats_have_units():
    _, eng, _, ce = _setup()
    ev = ce.copy(0, 64 * MiB, 64 * 1024, "d2d")
    assert isinstance(ev, simpy.Event)
    _run(eng, [ev])
    s = ce.stats()
    assert s.value("copies_done") == 1
    assert s["local_read_bytes"].unit == "B" and s["copy_time_mean_us"].unit == "us"
    assert not ce.pending()
