"""Analytic collective estimates: closed forms and the plan lower bound agree."""

from __future__ import annotations

import pytest

from t3sim.collectives import build_plan
from t3sim.collectives.analytic import direct_time, plan_lower_bound, ring_time
from t3sim.config import InterconnectConfig
from t3sim.interconnect.topology import build_topology


def test_ring_closed_form_terms():
    e = ring_time("reduce_scatter", 8_000_000, 8, 100.0, 500.0, directions=1, launch_overhead_ns=5000.0)
    assert e.steps == 7
    assert e.bandwidth_ns == pytest.approx(7 / 8 * 8_000_000 / 100)  # 70 us
    assert e.latency_ns == 3500.0 and e.total_ns == pytest.approx(70_000 + 3500 + 5000)
    ar = ring_time("all_reduce", 8_000_000, 8, 100.0, 500.0)
    assert ar.steps == 14 and ar.bandwidth_ns == pytest.approx(2 * e.bandwidth_ns)
    assert ring_time("all_gather", 1000, 8, 100.0, 0.0, 2).bandwidth_ns == pytest.approx(7 / 8 * 1000 / 200)
    # two GPUs: both ring directions are the same link
    assert ring_time("reduce_scatter", 1000, 2, 100.0, 0.0, 2).bandwidth_ns == pytest.approx(5.0)
    with pytest.raises(ValueError):
        ring_time("all_to_all", 1, 4, 1.0, 0.0)
    with pytest.raises(ValueError):
        ring_time("reduce_scatter", 1, 4, 1.0, 0.0, directions=3)


def test_direct_closed_forms():
    d = direct_time("reduce_scatter", 8000, 8, 100.0, 500.0)
    assert (d.bandwidth_ns, d.latency_ns) == (pytest.approx(10.0), 500.0)
    s = direct_time("reduce_scatter", 8000, 8, 100.0, 500.0, switch=True, packet_size_B=4096)
    assert s.bandwidth_ns == pytest.approx(70.0) and s.latency_ns == pytest.approx(1000 + 10.0)
    assert direct_time("all_reduce", 8000, 8, 100.0, 500.0).steps == 2


@pytest.mark.parametrize("n", [3, 4, 8, 16])
@pytest.mark.parametrize("bidir", [False, True])
@pytest.mark.parametrize("coll", ["reduce_scatter", "all_gather", "all_reduce"])
def test_plan_bound_equals_ring_closed_form(n, bidir, coll):
    num = 2 * n * 1000
    p = build_plan(coll, "ring", n, num, elem_bytes=2, bidirectional=bidir)
    g = build_topology(InterconnectConfig(kind="ring", num_gpus=n, bidirectional=True))
    assert plan_lower_bound(p, g).total_ns == pytest.approx(
        ring_time(coll, p.size_B, n, 75.0, 500.0, 2 if bidir else 1).total_ns)


def test_plan_bound_sees_multi_hop_contention():
    """A ring plan needing the reverse direction on a unidirectional ring pays N-1 hops."""
    n = 4
    p = build_plan("reduce_scatter", "ring", n, 4000, bidirectional=True)
    uni = build_topology(InterconnectConfig(kind="ring", num_gpus=n, bidirectional=False))
    b = plan_lower_bound(p, uni)
    assert b.latency_ns == pytest.approx((n - 1) * (n - 1) * 500.0)
