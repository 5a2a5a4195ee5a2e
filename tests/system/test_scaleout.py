"""The scale-out DLRM iteration model: the fused kernels' overlap event model and its bounds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from t3sim.interconnect.torus import Torus2D
from t3sim.reproduction.fused.scaleout import DlrmScaleOut, KernelTimes, fused_backward_ns, fused_forward_ns, iteration

times = st.floats(1.0, 1e7)


@settings(max_examples=60, deadline=None)
@given(kernel=times, a2a=times, lat=st.floats(0.0, 1e4), slices=st.integers(1, 500), frac=st.floats(0.1, 1.0))
def test_overlap_never_beats_either_part_nor_loses_to_serial(kernel, a2a, lat, slices, frac):
    lat = min(lat, a2a)
    for f in (fused_forward_ns, fused_backward_ns):
        t = f(kernel, slices, frac, a2a, lat)
        assert t >= kernel * (1 - 1e-9)
        assert t >= a2a - lat - 1e-6  # the network needs its bandwidth time whatever overlaps
        assert t <= kernel + a2a + 2 * lat + 1e-6 * (kernel + a2a)  # never worse than kernel, then all-to-all


def test_overlap_limits():
    # a fast network hides under a long kernel but its last slice's network time; a slow one leaves the network
    # time plus one slice's kernel work
    assert fused_forward_ns(1000.0, 100, 1.0, 10.0, 0.0) == pytest.approx(1000.0 + 10.0 / 100)
    assert fused_forward_ns(10.0, 100, 1.0, 1000.0, 0.0) == pytest.approx(1000.0 + 10.0 / 100, rel=1e-6)
    assert fused_backward_ns(10.0, 100, 1.0, 1000.0, 0.0) == pytest.approx(1000.0 + 10.0 / 100, rel=1e-6)
    assert fused_forward_ns(500.0, 0, 1.0, 1000.0, 0.0) == 500.0


def test_iteration_parts_add_up():
    net = Torus2D.square_ish(16, 25.0, 700.0)
    d = DlrmScaleOut(16, 8, 4096, 92, 4, 43, 682, 32)
    k = KernelTimes(2e6, 2.1e6, 5e4)
    r = iteration(d, k, net)
    assert r["baseline_ns"] == pytest.approx(r["base_fwd_ns"] + r["base_bwd_ns"] + r["mlp_fwd_ns"] + r["mlp_bwd_ns"]
                                             + r["allreduce_exposed_ns"])
    assert r["base_fwd_ns"] == pytest.approx(2e6 + r["a2a_ns"]) and r["mlp_bwd_ns"] == 2 * 43 * 5e4
    assert d.bytes_per_pair == 8 * 256 * 92 * 4 and d.remote_slices == 15 * 8 * 8
    assert 0 < r["reduction"] < 1
    with pytest.raises(ValueError):
        iteration(DlrmScaleOut(8, 8, 4096, 92, 4, 43, 682, 32), k, net)
