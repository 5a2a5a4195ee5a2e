"""Integer clock domains: exact, monotone, drift-free conversions."""

from __future__ import annotations

from hypothesis import given, strategies as st

from t3sim.sim.clock import Clock, ns_to_ticks


def test_known_edges():
    c = Clock.from_GHz(1.4)
    assert [c.cycle_to_tick(k) for k in range(4)] == [0, 715, 1429, 2143]
    assert c.cycle_to_tick(1_400_000_000) == 10**12  # exactly one second, no drift
    assert Clock.from_GHz(1.0).cycle_to_tick(14) == ns_to_ticks(14)


@given(st.floats(0.1, 5.0), st.integers(0, 10**12))
def test_round_trip(ghz, cycle):
    c = Clock.from_GHz(ghz)
    t = c.cycle_to_tick(cycle)
    assert c.tick_to_cycle(t) == cycle
    assert c.cycle_to_tick(cycle + 1) > t
    assert c.next_cycle_at_or_after(t) == cycle
    assert c.next_cycle_at_or_after(t + 1) == cycle + 1


@given(st.floats(0.1, 5.0), st.floats(0, 1e6))
def test_cycles_for_ns_covers(ghz, ns):
    c = Clock.from_GHz(ghz)
    n = c.cycles_for_ns(ns)
    assert c.cycle_to_tick(n) >= ns_to_ticks(ns) - 1
