"""Sampled simulation of an embedding-bag layer by tables (t3sim/sampling/tables.py): the
criterion, the configuration, and sampled vs whole runs of a small layer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.config import load_experiment
from t3sim.errors import InputError
from t3sim.sampling import tables as T
from t3sim.sampling.plan import additive
from tests.conftest import REPO, assert_one_line_error

FUSED_A2A = str(REPO / "configs/experiments/fused-a2a.yaml")
# 32 small tables per GPU, a global batch of 128 over 4 MI210s of 3 CUs
EMB = ("workload.embedding_bag={name: e, global_batch: 128, tables_per_gpu: 32, embedding_dim: 64, rows_per_table: 1000}",
       "system.gpu.num_cus=3", "sweep.cases=[]", "sweep.grid={}")
TABLES = ("simulation.sampling.mode=tables", "simulation.sampling.detail_tables=4")


def exp(*extra):
    """The small layer under the baseline (per-table kernels, then one all-to-all), unless ``extra`` sets a scheme."""
    return load_experiment(FUSED_A2A, list(EMB + ("scheme.kind=emb_a2a",) + extra))


# ---------------------------------------------------------------- unit

def test_ladder_is_a_quarter_a_half_and_all_of_detail_tables():
    assert T.ladder(16) == [4, 8, 16]
    assert T.ladder(6) == [1, 3, 6]


@given(a=st.integers(1, 10**7), rates=st.lists(st.integers(0, 10**5), min_size=4, max_size=4),
       t0=st.integers(1, 50), full=st.integers(200, 2000))
@settings(max_examples=100, deadline=None)
def test_criterion_is_zero_on_any_affine_layer(a, rates, t0, full):
    tables = [t0, 2 * t0, 4 * t0]
    phases = [[a + r * t for r in rates[:3]] + [3 * a + sum(rates[:3]) * t] for t in tables]
    assert T.criterion(phases, tables, full) == 0.0


def test_criterion_measures_a_changing_rate_against_the_total():
    # total 10/table from 4 to 8 tables, 12/table from 8 to 16: at 64 tables 80 + 10 * 56 = 640 vs 176 + 12 * 48 = 752
    phases = [(40, 0, 0, 40), (80, 0, 0, 80), (176, 0, 0, 176)]
    assert T.criterion(phases, [4, 8, 16], 64) == pytest.approx(100 * 112 / 752)


def test_with_tables_cuts_the_layer_and_turns_sampling_off():
    e = T.with_tables(exp(*TABLES), 3)
    assert e.workload.embedding_bag.tables_per_gpu == 3 and e.simulation.sampling.mode == "off"
    assert e.workload.embedding_bag.global_batch == 128


def test_detailed_configs_name_the_largest_runs_the_doubling_may_reach():
    sizes = lambda e: [c.workload.embedding_bag.tables_per_gpu for c in T.detailed_configs(e)]  # noqa: E731
    assert sizes(exp(*TABLES)) == [16, 32]  # 1, 2, 4, 8, 16 (31 tables in all), then 32 is the layer: whole
    assert sizes(exp(*TABLES, "simulation.sampling.max_detail_tables=4")) == [4]
    assert sizes(exp(*TABLES, "simulation.sampling.max_detail_tables=8")) == [8]
    assert sizes(exp("simulation.sampling.mode=tables")) == [16, 32]  # 4, 8, 16, then the layer
    assert sizes(exp("simulation.sampling.mode=tables", "workload.embedding_bag.tables_per_gpu=16")) == [16]


def test_bad_table_sampling_settings_are_one_line_errors(run_cli, tmp_path):
    with pytest.raises(InputError, match="simulation.sampling.mode"):
        T.tables_of(load_experiment(str(REPO / "configs/experiments/default.yaml"), ["simulation.sampling.mode=tables"]))
    with pytest.raises(InputError, match="timeline"):
        T.simulate_tables([exp(*TABLES)], timeline=True)
    for bad, frag in (("simulation.sampling.detail_tables=8", "mode=tables"),
                      ("simulation.sampling={mode: waves, detail_tables: 8}", "mode=tables"),
                      ("simulation.sampling={mode: tables, detail_waves: 16}", "mode=waves"),
                      ("simulation.sampling={mode: tables, detail_tables: 2}", "detail_tables"),
                      ("simulation.sampling={mode: tables, detail_tables: 32, max_detail_tables: 16}",
                       "max_detail_tables")):
        rc, _out, err = run_cli("config", "show", FUSED_A2A, "--set", bad)
        assert_one_line_error(rc, err, frag)
    rc, _out, err = run_cli("run", str(REPO / "configs/experiments/default.yaml"), "--set",
                            "simulation.sampling.mode=tables", "--out", str(tmp_path))
    assert_one_line_error(rc, err, "simulation.sampling.mode", "model workload, which has no tables")
    assert not any(tmp_path.rglob("stats.json"))


# ---------------------------------------------------------------- integration

@pytest.mark.parametrize("library_kernels", ["per_table", "one"])
def test_sampled_layer_matches_the_whole_layer(library_kernels):
    """32 tables extrapolated from runs of 2 and 4 (1, 2, 4 checked): total within 2 % of the whole run's, DRAM
    bytes within 2 %; every statistic keeps its unit and says it was sampled; the all-to-all starts where the
    extrapolated pooling ends."""
    from t3sim.exec.dispatch import simulate

    lk = f"workload.embedding_bag.library_kernels={library_kernels}"
    full = simulate(exp(lk))
    smp = simulate(exp(lk, *TABLES, "simulation.sampling.tolerance_pct=100"))
    st = smp.stats
    assert st.value("sampling.sampled") is True and st.value("sampling.criterion_met") is True
    assert (st.value("sampling.tables"), st.value("sampling.tables_detailed")) == (32, 4)
    assert st.value("sampling.tables_extrapolated") == 28 and st.value("sampling.detailed.run2.tables") == 4
    tot = full.summary["total_us"]
    assert abs(smp.summary["total_us"] - tot) <= 0.02 * tot
    assert smp.summary["total_us"] == pytest.approx(st.value("time.total_us"), abs=1e-6)
    fb = full.stats.value("gpu0.hbm.bytes")
    assert abs(st.value("gpu0.hbm.bytes") - fb) <= 0.02 * fb and isinstance(st.value("gpu0.hbm.bytes"), int)
    # a statistic recorded only once some traffic appears (a comm-stream read latency) may be missing from the
    # largest detailed run; it is never one that adds up over tables
    for name in set(full.stats.names()) - set(st.names()):
        assert not additive(name, full.stats[name].unit, full.stats.value(name)), name
    for name in set(full.stats.names()) & set(st.names()):
        assert st[name].unit == full.stats[name].unit and "[sampled:" in st[name].description
    assert st.value("kernels.alltoall.start_us") == pytest.approx(st.value("time.gemm_us"), rel=1e-6)
    assert st.value("sampling.rate.total_us_per_table") > 0
    assert "in tables" in st["time.total_us"].description


def test_fused_kernel_is_simulated_whole_and_says_why():
    """Its link backlog grows with the layer (module doc): sampling declined, the result is the whole layer's."""
    from t3sim.exec.dispatch import simulate

    fused = ("scheme.kind=fused_emb_a2a", "workload.embedding_bag.tables_per_gpu=8")
    full = simulate(exp(*fused))
    r = simulate(exp(*fused, *TABLES))
    assert r.stats.value("sampling.sampled") is False and "not steady" in r.stats.value("sampling.note")
    assert "sampling.detailed.run0.tables" not in r.stats
    assert r.summary["total_us"] == full.summary["total_us"]
    assert [c.workload.embedding_bag.tables_per_gpu for c in T.detailed_configs(exp(*fused, *TABLES))] == [8]


def test_small_layer_is_simulated_whole_and_says_so():
    from t3sim.exec.dispatch import simulate

    full = simulate(exp("workload.embedding_bag.tables_per_gpu=4"))
    r = simulate(exp("workload.embedding_bag.tables_per_gpu=4", *TABLES))
    assert r.stats.value("sampling.sampled") is False and "not more than" in r.stats.value("sampling.note")
    assert r.summary["total_us"] == full.summary["total_us"]
    assert r.stats.value("gpu0.hbm.bytes") == full.stats.value("gpu0.hbm.bytes")


def test_failed_criterion_doubles_then_simulates_whole_or_stops_at_the_cap():
    from t3sim.exec.dispatch import simulate

    # 1, 2, 4, then 8 and 16 (31 tables), then the layer's 32: simulated whole
    st = simulate(exp(*TABLES, "simulation.sampling.tolerance_pct=0.001")).stats
    assert st.value("sampling.sampled") is False and "did not agree" in st.value("sampling.note")
    assert st.value("sampling.detailed.run4.tables") == 16 and "sampling.detailed.run5.tables" not in st
    capped = simulate(exp(*TABLES, "simulation.sampling.tolerance_pct=0.001",
                          "simulation.sampling.max_detail_tables=4")).stats
    assert capped.value("sampling.sampled") is True and capped.value("sampling.criterion_met") is False
    assert "criterion failed" in capped.value("sampling.note")
