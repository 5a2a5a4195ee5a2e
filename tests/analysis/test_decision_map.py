"""The decision map's sweep (operations, shapes, skipped combinations, the budget) and the reading of ranked rows
into winner, runner-up and margin, on synthetic rows (t3sim.analysis.decision_map)."""

from __future__ import annotations

import math

import pytest

from t3sim.analysis import advise as A
from t3sim.analysis import decision_map as D
from t3sim.analysis import decision_map_plot as P
from tests.conftest import REPO


def test_shapes_are_the_tensor_parallel_layers_gemms():
    by = {(s.model, s.projection): s for s in D.shapes()}
    # GPT-3 175B: d_model 12288, 96 heads of 128, d_ff 4 d_model, no gating
    assert (by["gpt-3", "QKV"].N, by["gpt-3", "QKV"].K) == (3 * 12288, 12288)
    assert (by["gpt-3", "attention-out"].N, by["gpt-3", "attention-out"].K) == (12288, 12288)
    assert (by["gpt-3", "FFN up"].N, by["gpt-3", "FFN down"].K) == (49152, 49152)
    # Llama 3: grouped-query attention (8 KV heads) and SwiGLU's fused gate+up
    assert (by["llama-3-70b", "QKV"].N, by["llama-3-70b", "QKV"].K) == (10240, 8192)
    assert (by["llama-3-70b", "FFN up"].N, by["llama-3-70b", "FFN down"].K) == (57344, 28672)
    assert (by["llama-3-405b", "QKV"].N, by["llama-3-405b", "FFN up"].N) == (18432, 106496)  # FiCCO Table I g9, g10
    assert (by["llama-3-405b", "FFN down"].N, by["llama-3-405b", "FFN down"].K) == (16384, 53248)
    # a mixture of experts contributes its expert FFN only
    assert {p for m, p in by if m == "mixtral-8x7b"} == {"FFN up", "FFN down"}
    assert (by["mixtral-8x7b", "FFN up"].N, by["mixtral-8x7b", "FFN down"].K) == (28672, 14336)
    # column-parallel GEMMs take an all-gathered input, row-parallel ones reduce-scatter their output
    for (m, p), s in by.items():
        assert s.direction == (D.AG_GEMM if p in ("QKV", "FFN up") else D.GEMM_RS), (m, p)
    assert len(D.shapes()) == 14


def test_operations_and_the_skipped_combinations_with_reasons():
    ops, skipped = D.operations()
    assert [(m.preset, tp) for m, tp, _ in skipped] == [("h200-4gpu", 8)]
    assert "h200-4gpu has 4 GPUs" in skipped[0][2] and "TP=8" in skipped[0][2]
    pairs = {(o.machine, o.tp) for o in ops}
    assert len(pairs) == 14 and ("h200-4gpu", 8) not in pairs
    assert {o.machine for o in ops} == {m.preset for m in D.MACHINES}
    assert {o.M for o in ops} == set(D.M_FULL) and D.M_FULL[0] == 64 and D.M_FULL[-1] == 65536
    assert all(b / a == 4 for a, b in zip(D.M_FULL, D.M_FULL[1:]))  # log-spaced
    assert len(ops) == 14 * 14 * len(D.M_FULL) == len({o.key for o in ops})  # no duplicates
    assert all(o.sampled == (o.M >= D.SAMPLE_FROM_M) for o in ops)
    quick, none = D.operations(quick=True)
    assert none == [] and 1 <= len(quick) <= 8 and set(quick) <= set(ops)  # the quick map's points are the map's


def test_machines_match_their_presets():
    from t3sim.config import load_system

    for m in D.MACHINES:
        assert load_system(REPO / "configs/systems" / f"{m.preset}.yaml").interconnect.num_gpus == m.gpus, m.preset
        assert m.grounding in ("validated against measurements", "from sources", "assumed")
        header = (REPO / "configs/systems" / f"{m.preset}.yaml").read_text().split("\nname:")[0].lower()
        if m.grounding == "validated against measurements":
            assert "measurements" in header
    assert D.machine("h200-4gpu").grounding == "validated against measurements"


def test_workload_bytes_and_the_budget():
    inputs, outputs, loads = D.workload_GB(D.GEMM_RS, 1024, 8192, 8192, 4)
    # per GPU 1024 x 8192 x 2048 in bf16: A and B once; C once and 3 of its 4 shards sent; 64 x 4 tiles of 256 x 128
    assert inputs == pytest.approx((1024 * 2048 + 2048 * 8192) * 2 / 1e9)
    assert outputs == pytest.approx((1024 * 8192 + 3 * 1024 * 8192 // 4) * 2 / 1e9)
    assert loads == pytest.approx((64 * 1024 * 2048 + 4 * 2048 * 8192) * 2 / 1e9)
    assert D.workload_GB(D.AG_GEMM, 1024, 8192, 8192, 4)[1] == pytest.approx((1024 * 2048 + 3 * 1024 * 2048) * 2 / 1e9)
    assert D.run_cost_s(D.GEMM_RS, 1024, 8192, 8192, 4, "t3") == pytest.approx(
        D.SCHEME_COST["t3"] * D.run_cost_s(D.GEMM_RS, 1024, 8192, 8192, 4))
    assert D.run_cost_s(D.AG_GEMM, 65536, 8192, 8192, 8, detailed_rows=4096) == \
        D.run_cost_s(D.AG_GEMM, 4096, 8192, 8192, 8)
    assert D.over_budget([5.0, 1.0, 3.0, 1.0], 4.0) == [0, 2]  # cheapest first: 1 + 1 fit, then 3 does not
    assert D.over_budget([5.0, 1.0, 3.0, 1.0], 5.0) == [0]
    assert D.over_budget([5.0, 1.0, 3.0, 1.0], 10.0) == []
    assert D.over_budget([], 1.0) == []
    # the spine's operations go first, however costly
    assert D.over_budget([5.0, 1.0, 3.0, 1.0], 6.0, [False, False, True, False]) == [0]
    # one that does not fit is passed over, and cheaper ones after it still fit
    assert D.over_budget([5.0, 1.0, 3.0, 1.0], 4.0, [True, False, False, False]) == [0, 2]
    assert D.over_budget([5.0, 1.0, 3.0, 1.0], 4.5, [True, False, False, False]) == [0, 2]


def _row(scheme, total, rank, variant="", binding="HBM", status="ok"):
    return {"scheme": scheme, "variant": variant, "label": scheme + (f" ({variant})" if variant else ""),
            "rank": rank, "status": status, "total_us": total, "binding_resource": binding, "reason": ""}


def test_decide_picks_the_winner_and_the_best_other_scheme():
    rows = [_row("flux_rs", 100.0, 1, "flux_reduce=atomic", "links"), _row("flux_rs", 101.0, 2, "flux_reduce=pull"),
            _row("t3", 110.0, 3, binding="CUs"), _row("sequential", 150.0, 4),
            {"scheme": "ficco", "variant": "", "label": "FiCCO", "rank": None, "status": "not_applicable",
             "total_us": None, "reason": "workload.direction: found gemm_rs"},
            {"scheme": "chunked", "variant": "", "label": "Chunked", "rank": None, "status": "failed",
             "total_us": None, "reason": "deadlock"},
            {"scheme": "flux_rs", "variant": "flux_reduce=a2a_local", "label": "FLUX", "rank": None,
             "status": "not_applicable", "total_us": None, "reason": "scheme.flux_reduce: found a2a_local"}]
    d = D.decide(rows, {"flux_rs": "#123456"}, sampled=[("t3", ""), ("flux_rs", "flux_reduce=atomic")])
    assert d["status"] == "ok" and d["winner"] == "flux_rs" and d["winner_variant"] == "flux_reduce=atomic"
    assert d["winner_us"] == 100.0 and d["winner_color"] == "#123456" and d["binding_resource"] == "links"
    # the runner-up is T3, not FLUX's own pull variant
    assert d["runner_up"] == "t3" and d["runner_up_us"] == 110.0 and d["margin_pct"] == pytest.approx(10.0)
    assert d["sequential_us"] == 150.0 and d["winner_speedup_x"] == pytest.approx(1.5)
    assert d["schemes_ranked"] == 4 and d["sampled_runs"] == 2
    # what did not run, but for the schemes of the other direction
    assert d["not_run"] == "chunked:failed;flux_rs(flux_reduce=a2a_local):not_applicable"
    assert set(d) | {"machine", "grounding", "tp", "direction", "model", "projection", "M", "N", "K", "gemm_M",
                     "gemm_N", "gemm_K", "est_cpu_s"} == set(D.COLUMNS)


def test_decide_on_advise_ranked_rows_and_edge_cases():
    cands = [{"scheme": "sequential", "variant": "", "label": "Sequential", "status": "ok", "total_us": 300.0,
              "summary": {"gemm_us": 200.0}, "stats": {}},
             {"scheme": "concurrent", "variant": "launch_first=comm", "label": "Concurrent", "status": "ok",
              "total_us": 240.0, "summary": {"gemm_us": 200.0}, "stats": {}}]
    d = D.decide(A.rank(cands, 1e9, 100.0))
    assert (d["winner"], d["runner_up"], d["margin_pct"]) == ("concurrent", "sequential", pytest.approx(25.0))
    alone = D.decide([_row("sequential", 80.0, 1)])
    assert alone["winner"] == "sequential" and alone["runner_up"] == "" and alone["margin_pct"] is None
    none = D.decide([{"scheme": "t3", "variant": "", "label": "T3", "rank": None, "status": "failed", "total_us": None,
                      "reason": "deadlock"}])
    assert none["status"] == "no_result" and none["winner"] is None and none["reason"] == "deadlock"


def test_cells_show_margin_sampling_and_budget():
    assert P.cell_text({"status": "ok", "margin_pct": 12.4, "sampled_runs": 0}) == "12%"
    assert P.cell_text({"status": "ok", "margin_pct": 3.0, "sampled_runs": 2, "winner_variant": "flux_reduce=pull"}) \
        == "3% s\npull"
    assert P.cell_text({"status": "ok", "margin_pct": None, "sampled_runs": 0}) == "-"
    assert P.cell_text({"status": "over_budget", "est_cpu_s": 600.0}) == "10 min"
    assert P.cell_text({"status": "no_result"}) == ""
    assert P.alpha(0.0) == pytest.approx(P.ALPHA_MIN) and P.alpha(100.0) == 1.0 and P.alpha(None) == 1.0
    assert P.alpha(P.OPAQUE_MARGIN_PCT / 2) == pytest.approx((1 + P.ALPHA_MIN) / 2)
    assert math.isclose(P.alpha(float("nan")), 1.0)
    assert P.scheme_label({"winner_label": "FLUX (flux_reduce=atomic)"}) == "FLUX"


def test_figure_from_synthetic_rows(tmp_path):
    rows = []
    for i, (d, model, proj, N, K) in enumerate([(D.GEMM_RS, "llama-3-70b", "attention-out", 8192, 8192),
                                                (D.AG_GEMM, "llama-3-70b", "QKV", 10240, 8192)]):
        for j, M in enumerate((64, 1024)):
            r = {"machine": "t3-table1", "tp": 8, "direction": d, "model": model, "projection": proj, "N": N, "K": K,
                 "M": M, "status": "ok", "winner": ["t3", "flux_ag"][i], "winner_label": ["T3", "FLUX AG (pull)"][i],
                 "winner_color": "", "margin_pct": 5.0 * j, "sampled_runs": 0, "est_cpu_s": 10.0}
            rows.append(r)
    rows[-1].update(status="over_budget", winner=None)
    paths = P.draw(rows, tmp_path, quick=True)
    assert [p.name for p in paths] == ["decision-map-quick-t3-table1.png"] and paths[0].stat().st_size > 10_000
