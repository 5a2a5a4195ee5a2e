"""``t3sim advise``'s ranking and binding resources (t3sim.analysis.advise) on synthetic statistics."""

from __future__ import annotations

import math

import pytest

from t3sim.analysis import advise as A

PEAK_TFLOPS = 100.0  # 1e14 FLOP/s
FLOPS = 5e9  # 50 us at peak


def stats(hbm_B=0.0, hbm_peak_GBps=1000.0, occ=0.0, queue=64, links=(0.0,)):
    """A run's flat statistics: GPU 0's HBM (bytes, achieved bandwidth and efficiency against ``hbm_peak_GBps``),
    its queue occupancy out of ``queue`` entries, and each link's busy time (ns)."""
    s = {"gpu0.hbm.bytes": hbm_B, "gpu0.hbm.achieved_bandwidth_GBps": hbm_peak_GBps / 2, "gpu0.hbm.efficiency": 0.5,
         "gpu0.hbm.queue.occupancy_mean": occ, "gpu0.hbm.queue.occupancy_histogram": [0] * (queue + 1)}
    for i, busy in enumerate(links):
        s[f"network.link.gpu0_to_gpu{i + 1}.busy_ns"] = busy
    return s


def cand(scheme, total_us, variant="", gemm_us=None, bound=False, st=None, **kw):
    return {"scheme": scheme, "variant": variant, "label": scheme + (f" ({variant})" if variant else ""),
            "status": "ok", "bound": bound, "total_us": total_us, "stats": st or stats(),
            "summary": {"gemm_us": gemm_us if gemm_us is not None else total_us}, **kw}


def test_utilisations_are_shares_of_each_peak_over_the_runs_time():
    # 100 us run: FLOPs worth 50 us at peak; 40 MB of HBM at 1000 GB/s = 40 us; links busy 20 and 70 us
    u = A.utilisation(stats(hbm_B=40e6, occ=16, queue=64, links=(20e3, 70e3)), 100.0, FLOPS, PEAK_TFLOPS)
    assert u["cu_utilisation_frac"] == pytest.approx(0.5)
    assert u["hbm_bandwidth_utilisation_frac"] == pytest.approx(0.4)
    assert u["hbm_queue_occupancy_frac"] == pytest.approx(0.25)
    assert u["link_utilisation_frac"] == pytest.approx(0.7)  # the busiest link
    assert A.binding_resource(u) == "links"


def test_missing_statistics_give_none_not_zero():
    u = A.utilisation({}, 100.0, FLOPS, PEAK_TFLOPS)
    assert u["hbm_bandwidth_utilisation_frac"] is None and u["link_utilisation_frac"] is None
    assert u["hbm_queue_occupancy_frac"] is None
    assert A.binding_resource(u) == "CUs"  # the only one known, at 50 %
    assert A.binding_resource({}) == ""


@pytest.mark.parametrize("cu, hbm, link, binding", [
    (0.9, 0.3, 0.2, "CUs"), (0.2, 0.8, 0.6, "HBM"), (0.3, 0.3, 0.95, "links"),
    (0.6, 0.6, 0.6, "CUs"),  # a tie goes to the first of RESOURCES
    (0.3, 0.2, 0.49, "none"),  # nothing busy half the time
])
def test_binding_resource_is_the_busiest_one_above_half(cu, hbm, link, binding):
    u = {"cu_utilisation_frac": cu, "hbm_bandwidth_utilisation_frac": hbm, "link_utilisation_frac": link}
    assert A.binding_resource(u) == binding


def test_rank_orders_by_time_and_measures_against_sequential():
    rows = A.rank([cand("sequential", 300.0, gemm_us=200.0), cand("chunked", 320.0), cand("concurrent", 240.0,
                                                                                             "launch_first=comm"),
                   cand("concurrent", 300.0, "launch_first=gemm")], FLOPS, PEAK_TFLOPS)
    assert [(r["rank"], r["scheme"], r["variant"]) for r in rows] == [
        (1, "concurrent", "launch_first=comm"), (2, "concurrent", "launch_first=gemm"), (3, "sequential", ""),
        (4, "chunked", "")]  # a tie (300 us) goes by scheme name
    best = rows[0]
    assert best["gemm_alone_us"] == 200.0
    assert best["exposed_comm_us"] == pytest.approx(40.0)  # ECT = T - GEMM alone
    assert best["overlap_efficiency"] == pytest.approx(1 - 40.0 / 100.0)  # E = 1 - ECT / ECT_sequential
    assert best["speedup_x"] == pytest.approx(300.0 / 240.0)
    seq = rows[2]
    assert seq["overlap_efficiency"] == pytest.approx(0.0) and seq["speedup_x"] == pytest.approx(1.0)
    assert rows[3]["overlap_efficiency"] == pytest.approx(-0.2)  # worse than Sequential: negative
    assert set(rows[0]) == set(A.ROW_KEYS)


def test_bounds_are_reported_not_ranked_and_schemes_that_did_not_run_keep_their_reason():
    na = {"scheme": "flux_ag", "variant": "", "label": "FLUX AG", "status": "not_applicable",
          "reason": "workload.direction: found gemm_rs"}
    failed = {"scheme": "t3", "variant": "", "label": "T3", "status": "failed", "reason": "deadlock"}
    rows = A.rank([na, cand("ideal_gemm_rs_overlap", 200.0, bound=True), cand("sequential", 300.0, gemm_us=200.0),
                   failed], FLOPS, PEAK_TFLOPS)
    assert [r["scheme"] for r in rows] == ["sequential", "ideal_gemm_rs_overlap", "flux_ag", "t3"]
    ideal = rows[1]
    assert ideal["rank"] is None and ideal["bound"] and ideal["overlap_efficiency"] == pytest.approx(1.0)
    assert ideal["cu_utilisation_frac"] is None and ideal["binding_resource"] == ""  # composed: no run of its own
    assert rows[2]["status"] == A.NOT_APPLICABLE and rows[2]["reason"].startswith("workload.direction")
    assert rows[2]["total_us"] is None and rows[3]["status"] == A.FAILED
    text = A.format_table(rows)
    assert "not run:" in text and "FLUX AG: not applicable: workload.direction" in text and "T3: failed: deadlock" in text
    assert "bound" in text.splitlines()[3]


def test_without_sequential_nothing_is_measured_against_it():
    rows = A.rank([cand("t3", 100.0)], FLOPS, PEAK_TFLOPS)
    assert rows[0]["rank"] == 1 and rows[0]["speedup_x"] is None and rows[0]["overlap_efficiency"] is None
    assert rows[0]["cu_utilisation_frac"] == pytest.approx(0.5)


def test_nothing_to_hide_gives_no_efficiency():
    rows = A.rank([cand("sequential", 200.0, gemm_us=200.0), cand("t3", 210.0)], FLOPS, PEAK_TFLOPS)
    assert [r["overlap_efficiency"] for r in rows] == [None, None]  # ECT_sequential = 0: E undefined
    assert rows[1]["exposed_comm_us"] == pytest.approx(10.0)


def test_the_heuristics_ficco_schedule_is_marked():
    rows = A.rank([cand("ficco", 90.0, "ficco_schedule=a", options={"ficco_schedule": "a"}),
                   cand("ficco", 80.0, "ficco_schedule=b", options={"ficco_schedule": "b"})], FLOPS, PEAK_TFLOPS,
                  {"ficco": {"ficco_schedule": "a"}})
    assert [(r["variant"], r["heuristic_pick"]) for r in rows] == [("ficco_schedule=b", False),
                                                                  ("ficco_schedule=a", True)]
    assert "ficco (ficco_schedule=a) *" in A.format_table(rows)


def test_scheme_order_takes_each_schemes_best_variant():
    rows = A.rank([cand("sequential", 300.0), cand("concurrent", 310.0, "launch_first=gemm"),
                   cand("concurrent", 250.0, "launch_first=comm"), cand("chunked", 290.0),
                   cand("t3", 100.0)], FLOPS, PEAK_TFLOPS)
    assert A.scheme_order(rows, ("sequential", "concurrent", "chunked")) == ["concurrent", "chunked", "sequential"]
    assert A.measured_order({"sequential": 394.8, "concurrent": 304.7, "chunked": 418.5}) == [
        "concurrent", "sequential", "chunked"]


def test_peak_rate_of_a_system_config():
    gpu = {"num_cus": 132, "fp16_flops_per_cycle": 4096, "fp32_flops_per_cycle": 256, "clock_GHz": 1.58}
    assert A.peak_TFLOPS({"gpu": gpu}, "bf16") == pytest.approx(132 * 4096 * 1.58 / 1e3)
    assert A.peak_TFLOPS({"gpu": gpu}, "fp32") == pytest.approx(132 * 256 * 1.58 / 1e3)
    assert math.isfinite(A.peak_TFLOPS({"gpu": gpu}, "fp8"))
