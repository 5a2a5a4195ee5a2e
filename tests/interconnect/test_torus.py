"""The analytical 2D torus: routes, link loads of an all-to-all, its time's bounds, all-reduce."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from t3sim.interconnect.torus import Torus2D


def test_square_ish_128_is_8_by_16():
    t = Torus2D.square_ish(128, 25.0, 700.0)
    assert (t.kx, t.ky, t.nodes, t.max_hops()) == (8, 16, 128, 12)


def test_routes_are_minimal_dimension_order_and_split_at_half():
    t = Torus2D(4, 4, 25.0, 700.0)
    (w, hops), = t.routes(t.node(0, 0), t.node(1, 3))
    assert w == 1.0 and hops == [(0, 1), (1, t.node(1, 3))]  # X first (+1), then Y the short way (-1)
    split = t.routes(t.node(0, 0), t.node(2, 0))
    assert sorted(w for w, _ in split) == [0.5, 0.5] and all(len(h) == 2 for _, h in split)


def test_ring_all_to_all_load_by_hand():
    # a ring of 4: per source, forward hop-units 1 (distance 1) + 0.5 x 2 (distance 2, split) = 2 on 4 links
    t = Torus2D(1, 4, 10.0, 100.0)
    loads = t.all_to_all_loads(1.0)
    assert max(loads.values()) == min(loads.values()) == 2.0
    assert t.all_to_all_ns(1000.0) == pytest.approx(2000.0 / 10.0 + 2 * 100.0)


@settings(max_examples=30, deadline=None)
@given(kx=st.integers(1, 6), ky=st.integers(2, 8), bw=st.floats(1.0, 100.0), hop=st.floats(0.0, 1000.0),
       m=st.floats(1.0, 1e7))
def test_all_to_all_bounds_and_conservation(kx, ky, bw, hop, m):
    t = Torus2D(kx, ky, bw, hop)
    loads = t.all_to_all_loads(m)
    hop_units = sum(w * len(h) for s in range(t.nodes) for d in range(t.nodes) if s != d for w, h in t.routes(s, d))
    assert sum(loads.values()) == pytest.approx(hop_units * m)
    ns = t.all_to_all_ns(m)
    links_out = len({l for l in loads if l[0] == 0})  # a node's outgoing links (2 to 4)
    assert ns >= (t.nodes - 1) * m / (links_out * bw) * (1 - 1e-9)  # injection bound
    assert ns >= t.max_hops() * hop
    assert t.all_to_all_ns(2 * m) >= ns
    assert t.all_to_all_rate_GBps() <= links_out * bw * (1 + 1e-9)


def test_all_reduce_is_hierarchical_rings():
    ring = Torus2D(1, 8, 25.0, 700.0)
    D = 8e6
    assert ring.all_reduce_ns(D) == pytest.approx(2 * (7 / 8 * D / 50.0 + 7 * 700.0))
    t = Torus2D(8, 16, 25.0, 700.0)
    x = 7 / 8 * D / 50.0 + 7 * 700.0
    y = 15 / 16 * (D / 8) / 50.0 + 15 * 700.0
    assert t.all_reduce_ns(D) == pytest.approx(2 * (x + y))
    assert Torus2D(1, 1, 25.0, 700.0).all_reduce_ns(D) == 0.0
    with pytest.raises(ValueError):
        Torus2D(0, 4, 25.0, 700.0)
