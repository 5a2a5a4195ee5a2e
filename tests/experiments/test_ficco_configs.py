"""The FiCCO experiment configs are what experiments/ficco/make_configs.py writes: every scale comes
from t3sim.schemes.ficco.heuristic.scale_for, none is chosen by hand."""

from __future__ import annotations

import runpy

import pytest

from t3sim.schemes.ficco.heuristic import scale_for

from tests.conftest import REPO


def _gen():
    return runpy.run_path(str(REPO / "experiments/ficco/make_configs.py"))


def test_shipped_configs_are_generated():
    g = _gen()
    for name, text in g["configs"]().items():
        path = REPO / "configs/experiments" / name
        if path.exists():
            assert path.read_text() == text, f"{name} is stale: run python experiments/ficco/make_configs.py"


def test_every_study_is_shipped_and_differs_only_in_its_budget():
    """The study and its half-size repeat (make_configs.SIZES) are both shipped; the half study's files are the
    study's but for the scaled shapes (scale_M, scale_K), the names and the budget in the header."""
    import re

    g = _gen()
    files = g["configs"]()
    assert set(g["SIZES"]) == {"", "-half"} and g["SIZES"]["-half"] == g["BUDGET_FLOP"] / 2
    for e in ("ficco-sp", "ficco-ep", "ficco-synthetic", "ficco-char"):
        assert (REPO / "configs/experiments" / f"{e}-half.yaml").is_file(), e

        def norm(text):
            text = re.sub(r"scale_M: \d+, scale_K: \d+", "S", text)
            return re.sub(r"at most \d+ GFLOP", "B", text.replace(f"{e}-half", e))

        a, b = files[f"{e}.yaml"], files[f"{e}-half.yaml"]
        if e == "ficco-char":  # the rule's 64-way K points depend on the scaled C (MAX_C_64K_MiB): compare the rest
            a, b = (t[:t.index("scheme.chunks: 64, scheme.chunk_axis: K}")] for t in (a, b))
            a, b = a[:a.rindex("\n")], b[:b.rindex("\n")]
        assert norm(a) == norm(b), e
        assert a != b, e  # the shapes do differ
    assert "ficco-scale-half.yaml" not in files


@pytest.mark.parametrize("suffix", ["", "-half"])
def test_scaled_shapes_keep_what_the_rule_promises(suffix):
    g = _gen()
    budget = g["SIZES"][suffix]
    for name, par, _model, (M, N, K) in g["TABLE_I"]:
        d = "a2a_gemm" if par == "EP" else "ag_gemm"
        sm, sk = scale_for(M, N, K, tp=g["TP"], direction=d, flop_budget=budget)
        m, k = M // sm, K // sk
        assert M % sm == 0 and K % sk == 0
        # within the budget, or over it where the next whole-piece divisor of M would undershoot half of it (g13)
        assert 2 * m * N * k / g["TP"] <= budget * (1.01 if name != "g13" else 2.5), name
        assert (m > k) == (M > K), name                                 # 1D vs 2D relation kept
        assert m % (g["TP"] ** (3 if d == "a2a_gemm" else 2)) == 0, name  # whole FiCCO pieces


def test_sensitivity_configs_use_the_study_shapes():
    """The hand-written FiCCO sensitivities (experiments/ficco/*.yaml: sm-copy-inflight, copy-engines) run the
    study's scaled shapes: every Table I or synthetic GEMM they name has the scale the rule gives it."""
    import re

    g = _gen()
    shapes = {n: (shape, "a2a_gemm" if par == "EP" else "ag_gemm") for n, par, _m, shape in g["TABLE_I"]}
    shapes.update({n: (shape, "ag_gemm") for n, shape in g["SYNTHETIC"]})
    pat = re.compile(r"\{name: (\w+), M: (\d+), N: (\d+), K: (\d+), scale_M: (\d+), scale_K: (\d+)")
    seen = 0
    for y in sorted((REPO / "experiments/ficco").glob("*.yaml")):
        for name, *vals in pat.findall(y.read_text()):
            M, N, K, sm, sk = map(int, vals)
            (M0, N0, K0), d = shapes[name]
            assert (M, N, K) == (M0, N0, K0), (y.name, name)
            assert (sm, sk) == scale_for(M, N, K, tp=g["TP"], direction=d, flop_budget=g["BUDGET_FLOP"]), (y.name, name)
            seen += 1
    assert seen >= 10
