"""FiCCO's metrics and schedule heuristic (FiCCO Secs. IV-C1, IV-D1, V-C; t3sim.schemes.ficco.heuristic)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from t3sim.schemes.ficco.heuristic import SCHEDULES, mt_B, otb, pick

dims = st.integers(1, 1 << 21)


def test_metrics_of_table_i_g2():
    M, N, K = 131072, 16384, 16384  # FiCCO Table I g2
    assert mt_B(M, N, K) == 2 * (M * K + N * K + M * N)
    assert otb(M, N, K) == pytest.approx(2 * M * N * K / mt_B(M, N, K))
    assert 7700 < otb(M, N, K) < 7720


@given(M=dims, N=dims, K=dims)
def test_m_not_above_k_picks_2d(M, N, K):
    p = pick(M, N, K, gpus=8, peak_TFLOPS=1307.4)
    assert p.schedule in SCHEDULES
    assert (p.schedule == "uniform_fused_2d") == (M <= K)


@given(M=dims, N=dims, K=dims, tau=st.floats(0.01, 100))
def test_1d_classes_follow_the_metric(M, N, K, tau):
    p = pick(M, N, K, gpus=8, peak_TFLOPS=1307.4, tau_ms=tau)
    assert p.metric_ms == pytest.approx(2 * M * N * K / 8 / 1307.4e12 * 1e3)  # OTB x MT = FLOPs (reading)
    if M > K:
        want = ("uniform_fused_1d" if p.metric_ms < tau else "hetero_unfused_1d" if p.metric_ms > 5 * tau
                else "hetero_fused_1d")
        assert p.schedule == want


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        pick(0, 1, 1, gpus=8, peak_TFLOPS=1.0)


def test_config_names_the_same_schedules():
    from typing import get_args

    from t3sim.schemes.ficco.options import FiccoOptions
    assert get_args(FiccoOptions.model_fields["ficco_schedule"].annotation) == SCHEDULES
