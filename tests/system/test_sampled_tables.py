"""Sampled simulation of an embedding-bag layer by tables (t3sim/system/sampled_tables.py; issues 15, 17): the
criterion, the configuration, and sampled vs whole runs of a small layer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.config import load_experiment
from t3sim.errors import InputError
from t3sim.system import sampled_tables as T
from t3sim.system.sampling import additive
from tests.conftest import REPO, assert_one_line_error

FUSED_A2A = str(REPO / "configs/experiments/fused-a2a.yaml")
# 32 small tables per GPU, a global batch of 128 over 4 MI210s of 3 CUs (the fused kernel's grid: 24 WGs, so its
# rounds repeat every 3 tables)
EMB = ("workload.embedding_bag={name: e, global_batch: 128, tables_per_gpu: 32, embedding_dim: 64, rows_per_table: 1000}",
       "system.gpu.num_cus=3", "sweep.cases=[]", "sweep.grid={}")
TABLES = ("simulation.sampling.mode=tables", "simulation.sampling.detail_tables=4")


def exp(*extra):
    return load_experiment(FUSED_A2A, list(EMB + extra))


# ---------------------------------------------------------------- unit

def test_ladder_is_a_quarter_a_half_and_all_of_detail_tables_ending_like_the_layer():
    assert T.ladder(T.TablePlan(256, 1, 1), 16) == [4, 8, 16]
    assert T.ladder(T.TablePlan(256, 1, 1), 6) == [1, 3, 6]
    # the fused-a2a node at batch 256: grid 832, so rounds repeat every 13 tables; 256 = 9 (mod 13)
    assert T.ladder(T.TablePlan(256, 13, 4), 16) == [9, 22, 35]


@given(full=st.integers(1, 500), period=st.integers(1, 40), minimum=st.integers(1, 20), at_least=st.integers(0, 300),
       above=st.integers(0, 300))
@settings(max_examples=200, deadline=None)
def test_tables_for_is_the_fewest_that_end_like_the_layer(full, period, minimum, at_least, above):
    t = T.TablePlan(full, period, minimum).tables_for(at_least, above)
    assert (full - t) % period == 0 and t >= max(at_least, minimum) and t > above
    assert t - period < max(at_least, minimum, above + 1)  # one period fewer would break a bound


def test_plan_reads_the_persistent_grid_from_the_scheme():
    fused = load_experiment(FUSED_A2A, ["sweep.grid={}", "workload.embedding_bag.global_batch=256"])
    assert T.plan(fused) == T.TablePlan(256, 13, 4)  # 104 CUs x 8 WGs = 832 = 13 x 64; 832 / 256 -> 4 tables
    assert T.plan(exp("scheme.kind=fused_emb_a2a")) == T.TablePlan(32, 3, 1)
    assert T.plan(exp("scheme.kind=emb_a2a")) == T.TablePlan(32, 1, 1)  # per-table kernels: every table alike


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
    assert sizes(exp(*TABLES, "scheme.kind=fused_emb_a2a")) == [8, 32]  # 2, 5, 8; 17 would make 32 tables: whole
    base = exp(*TABLES, "scheme.kind=emb_a2a")  # per-table kernels: period 1
    assert sizes(base) == [16, 32]  # 1, 2, 4, 8, 16 (31 tables in all), then 32 is the layer: whole
    per_table = ("scheme.kind=emb_a2a",)
    assert sizes(exp(*TABLES, *per_table, "simulation.sampling.max_detail_tables=4")) == [4]
    assert sizes(exp(*TABLES, *per_table, "simulation.sampling.max_detail_tables=8")) == [8]
    assert sizes(exp("simulation.sampling.mode=tables", *per_table)) == [16, 32]  # 4, 8, 16, then the layer
    assert sizes(exp("simulation.sampling.mode=tables", *per_table, "workload.embedding_bag.tables_per_gpu=16")) == [16]


def test_bad_table_sampling_settings_are_one_line_errors(run_cli):
    with pytest.raises(InputError, match="simulation.sampling.mode"):
        T.tables_of(load_experiment(str(REPO / "configs/experiments/default.yaml"), ["simulation.sampling.mode=tables"]))
    with pytest.raises(InputError, match="timeline"):
        T.simulate_tables([exp(*TABLES)], timeline=True)
    with pytest.raises(InputError, match="simulation.sampling.mode"):
        T.plan(load_experiment(str(REPO / "configs/experiments/default.yaml"), ["simulation.sampling.mode=tables"]))
    for bad, frag in (("simulation.sampling.detail_tables=8", "mode=tables"),
                      ("simulation.sampling={mode: waves, detail_tables: 8}", "mode=tables"),
                      ("simulation.sampling={mode: tables, detail_waves: 16}", "mode=waves"),
                      ("simulation.sampling={mode: tables, detail_tables: 2}", "detail_tables"),
                      ("simulation.sampling={mode: tables, detail_tables: 32, max_detail_tables: 16}",
                       "max_detail_tables")):
        rc, _out, err = run_cli("config", "show", FUSED_A2A, "--set", bad)
        assert_one_line_error(rc, err, frag)
    rc, _out, err = run_cli("config", "check", str(REPO / "configs/experiments/default.yaml"), "--set",
                            "simulation.sampling.mode=tables")
    assert rc == 2 and "simulation.sampling.mode" in err and "Traceback" not in err


# ---------------------------------------------------------------- integration

@pytest.mark.parametrize("scheme", ["emb_a2a", "fused_emb_a2a"])
def test_sampled_layer_matches_the_whole_layer(scheme):
    """32 tables extrapolated from runs of 2 and 4 (1, 2, 4 checked; the fused kernel: 5 and 8, from 2, 5, 8, which
    end their last round like 32 tables): total within 2 % of the whole run's, DRAM bytes within 2 %; every
    statistic keeps its unit and says it was sampled; a kernel that starts after the pooling starts where the
    extrapolated pooling ends."""
    from t3sim.system.run import simulate

    full = simulate(exp(f"scheme.kind={scheme}"))
    smp = simulate(exp(f"scheme.kind={scheme}", *TABLES, "simulation.sampling.tolerance_pct=100"))
    st = smp.stats
    assert st.value("sampling.sampled") is True and st.value("sampling.criterion_met") is True
    last = 4 if scheme == "emb_a2a" else 8
    assert (st.value("sampling.tables"), st.value("sampling.tables_detailed")) == (32, last)
    assert st.value("sampling.tables_extrapolated") == 32 - last and st.value("sampling.detailed.run2.tables") == last
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
    if scheme == "emb_a2a":
        assert st.value("kernels.alltoall.start_us") == pytest.approx(st.value("time.gemm_us"), rel=1e-6)
    assert st.value("sampling.rate.total_us_per_table") > 0


def test_small_layer_is_simulated_whole_and_says_so():
    from t3sim.system.run import simulate

    full = simulate(exp("workload.embedding_bag.tables_per_gpu=4"))
    r = simulate(exp("workload.embedding_bag.tables_per_gpu=4", *TABLES))
    assert r.stats.value("sampling.sampled") is False and "not more than" in r.stats.value("sampling.note")
    assert r.summary["total_us"] == full.summary["total_us"]
    assert r.stats.value("gpu0.hbm.bytes") == full.stats.value("gpu0.hbm.bytes")


def test_failed_criterion_doubles_then_simulates_whole_or_stops_at_the_cap():
    from t3sim.system.run import simulate

    # the fused kernel: 2, 5, 8 tables; the next (17) would make 32 detailed tables, the layer's: simulated whole
    st = simulate(exp(*TABLES, "simulation.sampling.tolerance_pct=0.001")).stats
    assert st.value("sampling.sampled") is False and "did not agree" in st.value("sampling.note")
    assert st.value("sampling.detailed.run2.tables") == 8 and "sampling.detailed.run3.tables" not in st
    capped = simulate(exp(*TABLES, "simulation.sampling.tolerance_pct=0.001",
                          "simulation.sampling.max_detail_tables=8")).stats
    assert capped.value("sampling.sampled") is True and capped.value("sampling.criterion_met") is False
    assert "criterion failed" in capped.value("sampling.note")
    # per-table kernels: 1, 2, 4, then 8 and 16 (31 tables), then whole
    st = simulate(exp(*TABLES, "scheme.kind=emb_a2a", "simulation.sampling.tolerance_pct=0.001")).stats
    assert st.value("sampling.sampled") is False
    assert st.value("sampling.detailed.run4.tables") == 16 and "sampling.detailed.run5.tables" not in st
