"""Sampled simulation (t3sim/sampling/): the steady-state detector, the extrapolation
arithmetic, the plan that cuts the workload, and sampled vs full runs of small sub-layers."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.config import load_experiment
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.sampling import waves as R
from t3sim.sampling import plan as S
from tests.conftest import REPO, assert_one_line_error

DEFAULT = str(REPO / "configs/experiments/default.yaml")
# a 512-wide T-NLG OP sub-layer on 2 GPUs of 4 CUs: 8 WG slots, 4 tiles per row, so 1024 tokens = 4 waves
SMALL = ("workload.sublayer=OP", "workload.model.hidden_size=512", "workload.tp=2",
         "system.interconnect.num_gpus=2", "system.gpu.num_cus=4")
SAMPLED = ("simulation.sampling.mode=waves", "simulation.sampling.detail_waves=4",
           "simulation.sampling.window_waves=1")


def exp(*extra):
    return load_experiment(DEFAULT, list(SMALL + extra))


# ---------------------------------------------------------------- unit: the steady-state detector

def test_wave_times_cut_at_every_stage_wgs_th_retirement():
    assert S.wave_times([5, 3, 9, 12, 20, 21, 30], 1, 2) == [4, 7, 9]  # sorted: 3 5 | 9 12 | 20 21 | 30
    assert S.wave_times([], 0, 4) == []


def test_steady_state_compares_the_last_two_windows_and_skips_the_first_wave():
    waves = [140, 100, 104, 96, 100, 101, 99, 98, 102]  # windows (100 104 96 100) and (101 99 98 102)
    s = S.steady_state(waves, 4, 1.0)
    assert s.met and s.window == tuple(waves[1:]) and s.mean_ticks == 100 and s.spread_pct == 0.0
    # a period-2 wave pattern is steady by window means, though single waves differ by 8 %
    assert S.steady_state([140] + [96, 104] * 4, 2, 0.5).met
    slow = S.steady_state([140, 100, 100, 110, 110], 2, 2.0)  # 100 -> 110: 9.1 % of 110
    assert not slow.met and slow.spread_pct == pytest.approx(100 * 10 / 110)
    short = S.steady_state([140, 100, 100, 100], 2, 50.0)  # the first wave never counts: 3 waves, 4 needed
    assert not short.met and short.spread_pct == float("inf")


def test_rates_agree_compares_the_extrapolations_of_both_pairs_of_runs():
    # gemm grows 10/round (rounds = rows / 10), rs 2/row, ag 1/row on both intervals: exactly linear
    rows = (100, 200, 400)
    xs = [(r // 10, r, r) for r in rows]
    xf = (100, 1000, 1000)
    lin = [(10 * (r // 10), 2 * r + 50, r) for r in rows]
    assert S.rates_agree(lin, xs, xf, 0.1) == (True, 0.0)
    # the rs rate is 3/row on the first interval, 2/row on the second: extrapolated to 1000 rows the first
    # pair gives rs = 550 + 3 * 800 = 2950, the second 950 + 2 * 600 = 2150: 800 of the second pair's total 4150
    bent = [lin[0], (200, 2 * 200 + 50 + 100, 200), (400, 2 * 400 + 50 + 100, 400)]
    ok, worst = S.rates_agree(bent, xs, xf, 5.0)
    assert not ok and worst == pytest.approx(100 * 800 / 4150)


def test_wave_rates_agree_compares_the_steady_wave_times_of_two_runs():
    assert S.window_mean([150, 100, 102, 98], 2) == 100 and S.window_mean([150, 100], 2) is None
    assert S.wave_rates_agree([150, 100, 100], [150, 101, 99, 100, 100], 2, 0.5) == (True, 0.0)
    ok, diff = S.wave_rates_agree([150, 107, 107], [150, 106, 105, 100, 100], 2, 2.0)  # T3: rate shifts with size
    assert not ok and diff == pytest.approx(7.0)
    assert S.wave_rates_agree([150], [150, 100, 100], 2, 50.0) == (False, float("inf"))


def test_chunked_gemm_needs_chunks_of_several_waves():
    p = S.plan(exp("workload.tokens=8192", "scheme.kind=t3"))  # 2 GPUs: 2 chunks; 32 waves
    assert not R.chunks_steady(p, p.rows_for(8), 3) and R.chunks_steady(p, p.rows_for(14), 3)
    assert R.chunks_steady(S.plan(exp("workload.tokens=8192")), 512, 3)  # no chunks: always


def test_extrapolate_gemm_adds_the_missing_cu_rounds_at_the_steady_wave_time():
    # 2 WGs per CU per wave: a wave is 2 rounds; 11 rounds missing at 98 ticks per wave = 539
    assert S.extrapolate_gemm(837, 17, 28, Fraction(98), Fraction(2)) == 837 + 539
    assert S.extrapolate_gemm(100, 5, 5, Fraction(40), Fraction(2)) == 100


# ---------------------------------------------------------------- unit: the extrapolation arithmetic

def test_extrapolate_is_the_line_through_the_two_runs():
    assert S.extrapolate(100, 200, 10, 20, 50) == 500
    assert isinstance(S.extrapolate(100, 200, 10, 20, 50), int)
    assert S.extrapolate(1.5, 2.5, 1, 2, 4) == pytest.approx(4.5)
    assert S.extrapolate(10, 10, 1, 2, 1000) == 10  # constants stay constant
    assert S.extrapolate(7, 8, 2, 4, 5) == 9  # 8.5 rounds half away from zero
    assert S.extrapolate(100, 50, 1, 2, 10) == 0  # never negative
    with pytest.raises(ValueError):
        S.extrapolate(1, 2, 5, 5, 10)


@given(a=st.integers(0, 10**9), b=st.integers(0, 10**6), r1=st.integers(1, 10**4), dr=st.integers(1, 10**4),
       k=st.integers(0, 10**5))
@settings(max_examples=200, deadline=None)
def test_extrapolate_recovers_any_linear_count_exactly(a, b, r1, dr, k):
    r2, r = r1 + dr, r1 + dr + k
    assert S.extrapolate(a + b * r1, a + b * r2, r1, r2, r) == a + b * r


def test_additive_statistics():
    assert S.additive("gpu0.hbm.bytes", "B", 10)
    assert S.additive("time.gemm_us", "us", 1.5)
    assert S.additive("gpu0.l2.read_hits", "count", 3)
    for name, unit, v in (("gpu0.hbm.read_latency.p99_ns", "ns", 3.0), ("gpu0.hbm.read_latency.mean_ns", "ns", 1.0),
                          ("network.link.x.max_queue_depth", "count", 4), ("gpu0.tracker.peak_occupied_ways", "count", 2),
                          ("gpu0.l2.capacity_B", "B", 16), ("gpu0.hbm.efficiency", "ratio", 0.5),
                          ("x.flag", "count", True), ("x.hist", "count", [1, 2]), ("x.bw_GBps", "GBps", 1.0)):
        assert not S.additive(name, unit, v), name


def test_extrapolate_stats_keeps_units_and_labels_every_statistic():
    small, large = Stats(), Stats()
    for s, scale in ((small, 1), (large, 2)):
        s.add("a.bytes", 100 * scale, "B", "bytes")
        s.add("a.mean_ns", 5.0 * scale, "ns", "a mean")
        s.add("a.path", "x -> y", "text", "text")
    out = S.extrapolate_stats(small, large, 10, 20, 100, "LABEL")
    assert out.value("a.bytes") == 1000 and out.value("a.mean_ns") == 10.0 and out.value("a.path") == "x -> y"
    assert [out[n].unit for n in out.names()] == ["B", "ns", "text"]
    assert "extrapolated" in out["a.bytes"].description and "not extrapolated" in out["a.mean_ns"].description
    assert all("LABEL" in out[n].description for n in out.names())


# ---------------------------------------------------------------- component: cutting the workload

def test_plan_and_ladder_cut_whole_tile_rows_ending_like_the_full_workload():
    e = exp("workload.tokens=8192")
    p = S.plan(e)
    assert (p.rows, p.unit, p.tiles_n, p.stage_wgs, p.chunks) == (8192, 128, 4, 8, 1)
    assert p.waves(8192) == 32
    rows = S.ladder(p, 8)
    assert rows == sorted(set(rows)) and all(r % p.unit == 0 for r in rows)
    assert [p.waves(r) for r in rows] == [2, 4, 8]
    assert S.plan(exp("workload.tokens=8192", "scheme.kind=t3")).chunks == 2  # one chunk per GPU
    cut = S.with_rows(e, 1024)
    assert cut.workload.tokens == 1024 and cut.simulation.sampling.mode == "off"


def test_plan_on_a_gemm_shape_cuts_its_simulated_rows():
    e = load_experiment(DEFAULT, ["workload={gemm: {name: g, M: 8192, N: 1024, K: 512, scale_M: 2}, direction: ag_gemm, "
                                  "tp: 2}", "system.interconnect.num_gpus=2", "system.gpu.num_cus=4"])
    p = S.plan(e)
    assert p.rows == 4096
    cut = S.with_rows(e, p.rows_for(2))
    assert cut.workload.gemm.sim_M == p.rows_for(2) and cut.workload.gemm.scale_M == 2


def test_unsampleable_workloads_and_settings_are_one_line_errors(run_cli):
    gemv = load_experiment(str(REPO / "configs/experiments/fused-gemv.yaml"),
                           ["workload.gemv={name: v, M: 4096, K: 4096}", "sweep.cases=[]", "sweep.grid={}",
                            "simulation.sampling.mode=waves"])
    with pytest.raises(InputError, match="simulation.sampling.mode"):
        S.plan(gemv)
    with pytest.raises(InputError, match="timeline"):
        R.simulate_sampled([exp("workload.tokens=4096", *SAMPLED)], timeline=True)
    for bad, frag in (("simulation.sampling.detail_waves=3", "mode=off"),
                      ("simulation.sampling.mode=sometimes", "simulation.sampling.mode"),
                      ("simulation.sampling={mode: waves, detail_waves: 4, max_detail_waves: 2}", "max_detail_waves"),
                      ("simulation.sampling={mode: waves, window_waves: 4}", "window_waves"),
                      ("simulation.sampling={mode: waves, tolerance_pct: 0}", "tolerance_pct")):
        rc, _out, err = run_cli("config", "show", DEFAULT, "--set", bad)
        assert_one_line_error(rc, err, frag)


# ---------------------------------------------------------------- integration

def _stats_json(e) -> str:
    from t3sim.exec.dispatch import simulate

    return json.dumps(simulate(e).stats.to_dict(), sort_keys=True)


def test_sampling_off_is_byte_identical_to_no_sampling_section():
    plain = _stats_json(exp("workload.tokens=512"))
    off = _stats_json(exp("workload.tokens=512", "simulation.sampling={mode: off}"))
    assert plain == off and '"sampling"' not in plain


def test_small_workload_is_simulated_whole_and_says_so():
    from t3sim.exec.dispatch import simulate

    full = simulate(exp("workload.tokens=512"))
    r = simulate(exp("workload.tokens=512", *SAMPLED))  # 2 waves: not more than detail_waves
    assert r.stats.value("sampling.sampled") is False and "too few" in r.stats.value("sampling.note")
    assert r.summary["total_us"] == full.summary["total_us"]
    assert r.stats.value("gpu0.hbm.bytes") == full.stats.value("gpu0.hbm.bytes")


@pytest.mark.parametrize("scheme", ["sequential", "t3_mca"])
def test_sampled_matches_full_simulation(scheme):
    """16 waves, extrapolated from detailed runs of 2 and 4 waves (T3-MCA: 4 and 8): phases within 2 % of the full
    run's total,
    DRAM bytes within 2 %; every statistic keeps a unit and the sampled ones say so."""
    from t3sim.exec.dispatch import simulate

    full = simulate(exp("workload.tokens=4096", f"scheme.kind={scheme}"))
    smp = simulate(exp("workload.tokens=4096", f"scheme.kind={scheme}", *SAMPLED,
                       "simulation.sampling.tolerance_pct=100"))
    st = smp.stats
    assert st.value("sampling.sampled") is True and st.value("sampling.criterion_met") is True
    # T3's chunks (one per GPU) of a 4-wave run hold 2 waves, fewer than the 3 the criterion needs: it doubles
    detailed = 4 if scheme == "sequential" else 8
    assert st.value("sampling.waves") == 16 and st.value("sampling.waves_detailed") == detailed
    assert st.value("sampling.waves_extrapolated") == 16 - detailed
    tot = full.summary["total_us"]
    for ph in ("gemm", "rs", "ag", "total"):
        assert abs(smp.summary[f"{ph}_us"] - full.summary[f"{ph}_us"]) <= 0.02 * tot, ph
    fb = full.stats.value("gpu0.hbm.bytes")
    assert abs(st.value("gpu0.hbm.bytes") - fb) <= 0.02 * fb
    assert set(full.stats.names()) <= set(st.names())
    for name in full.stats.names():
        assert st[name].unit == full.stats[name].unit and "[sampled:" in st[name].description
    assert st.value("sampling.rate.gemm_us_per_wave") > 0 and st.value("sampling.rate.dram_B_per_wave") > 0


@pytest.mark.slow
def test_failed_criterion_doubles_the_detailed_runs_then_simulates_whole():
    from t3sim.exec.dispatch import simulate

    r = simulate(exp("workload.tokens=4096", *SAMPLED, "simulation.sampling.tolerance_pct=0.001"))
    st = r.stats
    assert st.value("sampling.sampled") is False and "steady state not reached" in st.value("sampling.note")
    assert st.value("sampling.detailed.run3.waves") == 8  # 1, 2, 4, then 8 waves; 16 would be the whole
    assert "sampling.detailed.run4.rows" not in st
    capped = simulate(exp("workload.tokens=4096", *SAMPLED, "simulation.sampling.tolerance_pct=0.001",
                          "simulation.sampling.max_detail_waves=4"))
    assert capped.stats.value("sampling.sampled") is True and capped.stats.value("sampling.criterion_met") is False
    assert Fraction(capped.stats.value("sampling.waves_detailed")) == 4


def test_kernel_times_on_phase_boundaries_move_with_the_extrapolated_phases():
    small, large, out = Stats(), Stats(), Stats()
    # run B: gemm ends at 10 us, rs at 14; run C: 20 and 26; the kernels' records sit on those boundaries
    for s, (g, r) in ((small, (10.0, 14.0)), (large, (20.0, 26.0)), (out, (99.0, 99.0))):
        s.add("kernels.gemm.end_us", g, "us", "d")
        s.add("kernels.rs.end_us", r, "us", "d")
        s.add("kernels.x.end_us", g + 1, "us", "d")  # not on a boundary: left as extrapolated
    marks = lambda g, r: {"gemm": g * 10**6, "rs": r * 10**6, "ag": r * 10**6}  # noqa: E731
    full = R.phase_marks({"gemm": 50 * 10**6, "rs": 9 * 10**6, "ag": 0}, ["gemm", "rs", "ag"])
    assert full == {"gemm": 50 * 10**6, "rs": 59 * 10**6, "ag": 59 * 10**6}
    res = R.move_with_marks(small, large, out, marks(10, 14), marks(20, 26), full)
    assert res.value("kernels.gemm.end_us") == 50.0 and res.value("kernels.rs.end_us") == 59.0
    assert res.value("kernels.x.end_us") == 100.0


def test_cli_rejects_sampling_with_a_timeline_and_an_unsampleable_workload(run_cli, tmp_path):
    rc, _out, err = run_cli("run", DEFAULT, "--set", "simulation.sampling.mode=waves", "--timeline", "--out",
                            str(tmp_path))
    assert_one_line_error(rc, err, "simulation.sampling.mode", "timeline")
    rc, _out, err = run_cli("run", str(REPO / "configs/experiments/fused-gemv.yaml"), "--set",
                            "simulation.sampling.mode=waves", "--out", str(tmp_path))
    assert_one_line_error(rc, err, "simulation.sampling.mode", "gemv workload")


def test_ladder_runs_end_like_the_full_workload_when_the_tile_grid_allows():
    g12 = load_experiment(DEFAULT, ["workload={gemm: {name: g12, M: 1048576, N: 57344, K: 8192}, direction: ag_gemm, "
                                    "tp: 8}", "simulation.sampling.mode=waves"])
    p = S.plan(g12)  # 56 tile columns, 160 WG slots: the last wave's WG count repeats every 7 waves
    assert p.period_waves() == 7
    rows = S.ladder(p, 8)
    assert [p.waves(r) for r in rows] == [Fraction(21, 5), Fraction(56, 5), Fraction(91, 5)]  # 4.2, 11.2, 18.2
    assert all((p.wgs(p.rows) - p.wgs(r)) % p.stage_wgs == 0 for r in rows)  # whole waves to the full workload
    tnlg = S.plan(load_experiment(DEFAULT, ["simulation.sampling.mode=waves"]))  # 34 columns: every 17 waves
    assert tnlg.period_waves() == 17
    rows = S.ladder(tnlg, 8)
    assert [float(tnlg.waves(r)) for r in rows] == [2.55, 4.675, 8.5]  # nearest to the full 13.6's last wave
