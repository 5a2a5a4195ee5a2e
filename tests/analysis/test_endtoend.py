"""The Sec. 5.1.2 end-to-end model (t3sim/reproduction/t3/endtoend.py)."""

from __future__ import annotations

import pytest

from t3sim.reproduction.t3 import endtoend as e2e

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
    T, H, t = SHAPE.tokens, SHAPE.hidden, SHAPE.tp
    sliced = {s: SHAPE.sliced_flops(s) / 40e6 for s in ("OP", "FC-2", "FC-1", "IP")}
    assert tr.sliced_gemm == pytest.approx(sum(sliced.values()))
    assert pr.sliced_gemm == pytest.approx(sliced["OP"] + sliced["FC-2"])  # the forward sub-layers only
    # the fake GEMMs run at 40 TFLOP/s, so the other GEMMs do too: 14 T H^2 / t forward, 34 backward
    assert tr.other_gemm == pytest.approx((14 + 34) * T * H * H / t / 40e6)
    assert pr.other_gemm == pytest.approx(14 * T * H * H / t / 40e6)
    # communication: 300 us RS + 280 us AG per sliced sub-layer (4 in training, 2 in the prompt phase)
    assert tr.comm_frac == pytest.approx(4 * 580 / tr.total) and pr.comm_frac == pytest.approx(2 * 580 / pr.total)
    # GEMMs 2x faster: the sliced and other GEMM time halves, communication stays
    gemm = sum(sliced.values()) + tr.other_gemm
    assert tr.comm_frac_gemm_scaled(0.5) == pytest.approx(4 * 580 / (tr.total - 0.5 * gemm))


def test_other_gemms_run_at_the_sliced_rate():
    # forward other GEMMs: 14 T H^2 / t FLOPs at 40 TFLOP/s (the rate of the fake sliced GEMMs)
    a = e2e.analytic_us(SHAPE, 40e6, 40e6)
    assert a["fwd_other_gemm"] == pytest.approx(14 * 8192 * 4256 ** 2 / 8 / 40e6)


def test_speedup_identity_and_scaling():
    bd = e2e.breakdown("t-nlg", 8, _sub(), SHAPE, "training")
    assert e2e.end_to_end_speedup(bd, _sub(), "sequential") == pytest.approx(1.0)
    s = e2e.end_to_end_speedup(bd, _sub(0.5), "t3")
    # the 4 sliced sub-layers (training) take half their Sequential time; everything else is unchanged
    sliced_total = sum(v["sequential"]["total_us"] for v in _sub().values())
    assert s == pytest.approx(bd.total / (bd.total - 0.5 * sliced_total))
    assert e2e.complete(_sub(), "training", ("sequential", "t3"))
    assert not e2e.complete({"OP": _sub()["OP"]}, "prompt")
