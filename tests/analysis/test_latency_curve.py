"""Loaded-latency curves (t3sim.analysis.latency_curve): interpolation, its span, and the compared numbers."""

import pytest
from hypothesis import given, strategies as st

from t3sim.analysis.latency_curve import compare, latency_at, monotone

CURVE = [(100.0, 350.0), (1000.0, 400.0), (3000.0, 600.0)]


def test_interpolates_between_the_points_around_a_bandwidth():
    assert latency_at(CURVE, 100.0) == 350.0
    assert latency_at(CURVE, 550.0) == pytest.approx(375.0)
    assert latency_at(CURVE, 2000.0) == pytest.approx(500.0)
    assert latency_at(CURVE, 3000.0) == 600.0


def test_does_not_extrapolate_outside_the_measured_span():
    assert latency_at(CURVE, 50.0) is None
    assert latency_at(CURVE, 3001.0) is None
    assert latency_at([], 1.0) is None


def test_a_point_that_gains_no_bandwidth_is_skipped():
    # 2800 GB/s after 3000: more SMs that moved less (an unreliable row) do not fold the curve back
    assert monotone(CURVE + [(2800.0, 900.0)]) == CURVE


@given(st.lists(st.tuples(st.floats(1, 5000), st.floats(100, 5000)), min_size=2, max_size=12), st.floats(0, 1))
def test_an_interpolated_latency_lies_between_its_neighbours(points, frac):
    pts = monotone(sorted(points))
    if len(pts) < 2:
        return
    lo, hi = pts[0][0], pts[-1][0]
    g = lo + frac * (hi - lo)
    ns = latency_at(pts, g)
    assert ns is not None
    left = max(p for p in pts if p[0] <= g)
    right = min(p for p in pts if p[0] >= g)
    assert min(left[1], right[1]) - 1e-6 <= ns <= max(left[1], right[1]) + 1e-6


def test_compare_reads_both_curves_at_fractions_of_the_measured_peak():
    sim = [(g, ns * 1.1) for g, ns in CURVE]
    c = compare(350.0, 245.0, CURVE, sim)
    assert c["peak_GBps"] == 3000.0
    assert c["idle_error"] == pytest.approx(-0.3)
    assert c["at50_GBps"] == 1500.0
    assert c["at50_meas_ns"] == pytest.approx(450.0)
    assert c["at50_error"] == pytest.approx(0.1)
    assert c["at90_error"] == pytest.approx(0.1)
    # a simulated curve that does not reach 90 % of the measured peak has no number there
    assert compare(350.0, 350.0, CURVE, [(100.0, 350.0), (2000.0, 700.0)])["at90_error"] is None


def test_a_given_peak_beyond_the_measured_curve_leaves_the_fraction_it_misses_unmeasured():
    """The H200's chase rows end at 69 % of its measured peak (the rows beyond report more than its HBM can move):
    with that peak given, 50 % is read off both curves and 90 % has no measured latency."""
    c = compare(350.0, 350.0, CURVE, CURVE, peak_GBps=4000.0)
    assert c["peak_GBps"] == 4000.0 and c["at50_GBps"] == 2000.0
    assert c["at50_error"] == pytest.approx(0.0)
    assert c["at90_meas_ns"] is None and c["at90_error"] is None
