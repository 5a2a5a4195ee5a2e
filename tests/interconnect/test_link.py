"""Link: integer serialisation, FIFO queueing, latency, statistics and byte conservation."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings, strategies as st

from t3sim.interconnect.link import Link, bandwidth_to_Bps, serialisation_ticks
from t3sim.sim.engine import Engine


@dataclass
class P:
    nbytes: int
    id: int = 0


def _link(bw=75.0, lat=500.0, **kw):
    eng = Engine()
    got = []
    link = Link(eng, "l", 0, 1, bw, lat, out=lambda p: got.append((eng.env.now, p)), **kw)
    return eng, link, got


def test_serialisation_is_exact_integer_ceil():
    assert bandwidth_to_Bps(75.0) == 75 * 10**9
    # 4096 B at 75 GB/s = 54613.33 ps -> 54614 ticks
    assert serialisation_ticks(4096, 75 * 10**9) == 54614
    # exact division does not round up
    assert serialisation_ticks(75, 75 * 10**9) == 1000
    assert serialisation_ticks(1, 10**12) == 1
    with pytest.raises(ValueError):
        bandwidth_to_Bps(0)


def test_single_packet_latency_plus_serialisation():
    eng, link, got = _link()
    assert link.put(P(4096)) == 54614 + 500_000
    eng.env.run()
    assert got[0][0] == 554_614
    assert link.bytes_received == link.bytes_sent == 4096


def test_packets_queue_fifo_behind_each_other():
    eng, link, got = _link(bw=100.0, lat=10.0)  # 100 GB/s: 1000 B = 10 ns
    for i in range(5):
        link.put(P(1000, i))
    eng.env.run()
    times = [t for t, _ in got]
    assert [p.id for _, p in got] == list(range(5))
    assert times == [10_000 * (i + 1) + 10_000 for i in range(5)]
    assert link.max_queue_depth == 5
    # mean queueing delay: 0, 10, 20, 30, 40 ns
    assert link.stats().value("mean_queue_delay_ns") == pytest.approx(20.0)


def test_idle_gap_resets_start_time():
    eng, link, got = _link(bw=100.0, lat=0.0)
    link.put(P(1000))

    def later():
        yield eng.env.timeout(1_000_000)
        link.put(P(1000))

    eng.env.process(later())
    eng.env.run()
    assert [t for t, _ in got] == [10_000, 1_010_000]
    assert link.busy_ticks == 20_000
    assert link.utilisation(1_010_000) == pytest.approx(20_000 / 1_010_000)


def test_utilisation_over_time_bins():
    eng, link, got = _link(bw=100.0, lat=0.0, bin_ticks=15_000)
    for _ in range(3):  # busy 0..30 ns
        link.put(P(1000))
    eng.env.run()
    assert link.bin_busy == [15_000, 15_000]
    assert link.bin_bytes == [1000, 2000]  # packets finish at 10, 20, 30 ns
    assert link.utilisation_over_time() == [1.0, 1.0]
    s = link.stats(elapsed_ticks=30_000)
    assert s["bytes_over_time"].unit == "B" and s.value("utilisation") == pytest.approx(1.0)


def test_in_flight_reported_as_pending():
    eng, link, _ = _link()
    link.put(P(10))
    assert "1 packets in flight" in link.pending()
    with pytest.raises(AssertionError):
        link.check_conserved()
    eng.env.run()
    assert link.pending() == ""
    link.check_conserved()


def test_bad_packets_and_params():
    eng, link, _ = _link()
    with pytest.raises(ValueError):
        link.put(P(0))
    with pytest.raises(ValueError):
        Link(eng, "x", 0, 1, 75.0, -1.0)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 20_000), min_size=1, max_size=40),
       gaps=st.lists(st.integers(0, 200_000), min_size=1, max_size=40),
       bw=st.sampled_from([12.5, 75.0, 150.0, 900.0]), lat=st.sampled_from([0.0, 1.0, 500.0]))
def test_fifo_timing_and_conservation_random(sizes, gaps, bw, lat):
    """Reference model: start_k = max(put_k, end_{k-1}); deliver = end + latency."""
    eng, link, got = _link(bw=bw, lat=lat, bin_ticks=7_777)
    puts = []

    def src():
        for i, n in enumerate(sizes):
            yield eng.env.timeout(gaps[i % len(gaps)])
            puts.append(eng.env.now)
            link.put(P(n, i))

    eng.env.process(src())
    eng.env.run()
    bps = bandwidth_to_Bps(bw)
    end, expect = 0, []
    for t, n in zip(puts, sizes):
        end = max(t, end) + serialisation_ticks(n, bps)
        expect.append(end + link.latency_ticks)
    assert [t for t, _ in got] == expect
    link.check_conserved()
    assert link.bytes_sent == sum(sizes) and sum(link.bin_bytes) == sum(sizes)
    assert sum(link.bin_busy) == link.busy_ticks
    assert all(b <= link.bin_ticks for b in link.bin_busy)
