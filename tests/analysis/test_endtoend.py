"""The Sec. 5.1.2 end-to-end model (t3sim/analysis/endtoend.py)."""

from __future__ import annotations

import pytest

from t3sim.analysis import endtoend as e2e

SHAPE = e2e.LayerShape(hidden=4256, heads=28, seq_len=1024, tokens=8192, tp=8, hbm_GBps=1024.0)


def _sub(scale=1.0):
    out = {}
    for s in ("OP", "FC-2", "FC-1", "IP"):
        g = SHAPE.sliced_flops(s) / 40e6
        seq = {"gemm_us": g, "rs_us": 300.0, "ag_us": 280.0, "total_us": g + 580.0}
        fast = dict(seq, total_us=seq["total_us"] * scale)
        out[s] = {"sequential": seq, "t3": fast}
    return out


def test_breakdown_parts_sum_and_phases():
    sub = _sub()
    tr = e2e.breakdown("t-nlg", 8, sub, SHAPE, "training")
    pr = e2e.breakdown("t-nlg", 8, sub, SHAPE, "prompt")
    assert tr.total == pytest.approx(tr.sliced_gemm + tr.rs + tr.ag + tr.other_gemm + tr.attention + tr.other)
    assert tr.rs == pytest.approx(4 * 300) and pr.rs == pytest.approx(2 * 300)
    assert 0 < pr.comm_frac < 1 and 0 < tr.comm_frac < 1
    assert tr.comm_frac_gemm_scaled(0.5) > tr.comm_frac  # faster GEMMs expose communication


def test_other_gemms_run_at_the_sliced_rate():
    # forward other GEMMs: 14 T H^2 / t FLOPs at 40 TFLOP/s (the rate of the fake sliced GEMMs)
    a = e2e.analytic_us(SHAPE, 40e6, 40e6)
    assert a["fwd_other_gemm"] == pytest.approx(14 * 8192 * 4256 ** 2 / 8 / 40e6)


def test_speedup_identity_and_scaling():
    bd = e2e.breakdown("t-nlg", 8, _sub(), SHAPE, "training")
    assert e2e.end_to_end_speedup(bd, _sub(), "sequential") == pytest.approx(1.0)
    s = e2e.end_to_end_speedup(bd, _sub(0.5), "t3")
    assert 1.0 < s < 2.0
    assert e2e.complete(_sub(), "training", ("sequential", "t3"))
    assert not e2e.complete({"OP": _sub()["OP"]}, "prompt")
