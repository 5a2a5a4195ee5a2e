"""The FiCCO experiment configs are what experiments/ficco/make_configs.py writes (issue 14): every scale comes
from t3sim.config.ficco.scale_for, none is chosen by hand."""

from __future__ import annotations

import runpy

from t3sim.config.ficco import scale_for

from tests.conftest import REPO


def _gen():
    return runpy.run_path(str(REPO / "experiments/ficco/make_configs.py"))


def test_shipped_configs_are_generated():
    g = _gen()
    for name, text in g["configs"]().items():
        path = REPO / "configs/experiments" / name
        if path.exists():
            assert path.read_text() == text, f"{name} is stale: run python experiments/ficco/make_configs.py"


def test_scaled_shapes_keep_what_the_rule_promises():
    g = _gen()
    for name, par, _model, (M, N, K) in g["TABLE_I"]:
        d = "a2a_gemm" if par == "EP" else "ag_gemm"
        sm, sk = scale_for(M, N, K, tp=g["TP"], direction=d, flop_budget=g["BUDGET_FLOP"])
        m, k = M // sm, K // sk
        assert M % sm == 0 and K % sk == 0
        # within the budget, or over it where the next whole-piece divisor of M would undershoot half of it (g13)
        assert 2 * m * N * k / g["TP"] <= g["BUDGET_FLOP"] * (1.01 if name != "g13" else 2.5), name
        assert (m > k) == (M > K), name                                 # 1D vs 2D relation kept
        assert m % (g["TP"] ** (3 if d == "a2a_gemm" else 2)) == 0, name  # whole FiCCO pieces
