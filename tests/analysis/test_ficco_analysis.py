"""reproduction.ficco (speedups, numbers): speedups, ideal, heuristic scoring and the figure, on the real
ficco-synthetic points with made-up times (nothing simulated)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from t3sim.analysis.runs import Run
from t3sim.config.sweep import expand
from t3sim.schemes.ficco.heuristic import SCHEDULES
from t3sim.reproduction.ficco import numbers as ficco_numbers
from t3sim.reproduction.ficco import speedups as ficco

from tests.analysis.fakes import assert_same_metrics
from tests.conftest import REPO

#: made-up times per method: the baseline's comm 100, GEMM 200; FiCCO schedules get per-scenario orders
BASE = {"gemm_us": 200.0, "ag_us": 100.0, "rs_us": 0.0, "total_us": 300.0}


def _runs(winner):
    """Runs of every ficco-synthetic point; ``winner(scenario)`` is the schedule made fastest there."""
    out = []
    for p in expand(REPO / "configs/experiments/ficco-synthetic.yaml"):
        cfg = p.config.model_dump(mode="json")
        kind = cfg["scheme"]["kind"]
        if kind == "sequential":
            summ = dict(BASE)
        else:
            s = cfg["scheme"]["ficco_schedule"]
            t = 250.0 if s == winner(cfg["workload"]["gemm"]["name"]) else 280.0 + SCHEDULES.index(s)
            summ = {"gemm_us": t, "ag_us": 0.0, "rs_us": 0.0, "total_us": t}
        out.append(Run(Path(f"/x/{p.label}"), "ficco-synthetic", cfg, {"scheme": kind, **summ}))
    return out


def test_rows_speedups_and_ideal():
    rows = ficco.ficco_rows(_runs(lambda n: "uniform_fused_1d"))
    assert len(ficco.scenarios(rows)) == 16
    base = [r for r in rows if r["method"] == "baseline"]
    assert all(r["speedup"] == 1.0 and r["ideal_speedup"] == pytest.approx(1.5) for r in base)  # (200+100)/200
    win = [r for r in rows if r["variant"] == "uniform_fused_1d"]
    assert all(r["speedup"] == pytest.approx(300 / 250) and r["best_ficco_dma"] == "uniform_fused_1d" for r in win)
    assert all(r["M"] % r["sim_M"] == 0 and r["sim_M"] * r["sim_K"] < r["M"] * r["K"] for r in rows)  # all scaled


def test_heuristic_scored_against_the_simulated_best():
    rows0 = ficco.ficco_rows(_runs(lambda n: "uniform_fused_1d"))
    picks = {r["scenario"]: r["heuristic_pick"] for r in rows0}
    right = ficco.ficco_rows(_runs(lambda n: picks[n]))  # the heuristic's pick made fastest everywhere
    acc, loss, n = ficco.heuristic_accuracy(right, "ficco-synthetic")
    assert (acc, loss, n) == (1.0, 0.0, 16)
    wrong = ficco.ficco_rows(_runs(lambda n: next(s for s in SCHEDULES if s != picks[n])))
    acc, loss, n = ficco.heuristic_accuracy(wrong, "ficco-synthetic")
    assert acc == 0.0 and n == 16
    picked_t = [280.0 + SCHEDULES.index(picks[s]) for s in ficco.scenarios(wrong)]
    assert loss == pytest.approx(sum(1 - (300 / t) / (300 / 250) for t in picked_t) / 16)


def test_metrics_and_figure(tmp_path):
    runs = _runs(lambda n: "hetero_fused_1d")
    v = ficco_numbers.metrics(runs)
    assert set(v) >= {n.key for n in ficco_numbers.NUMBERS}
    assert math.isnan(v["ficco_1d_max"])  # no ficco-sp/ep runs: not reported from the synthetic set
    assert 0 <= v["heuristic_synthetic"] <= 100
    paths = ficco.figure(runs, tmp_path)
    assert any(p.suffix == ".png" for p in paths) and any(p.suffix == ".csv" for p in paths)


def test_metrics_from_the_figure_table_equal_those_from_the_runs(tmp_path):
    """``ficco.csv`` read back (what a snapshot's ``figures/`` holds) gives the runs' values (snapshot.FROM_TABLES)."""
    from t3sim.analysis.tables import read_table
    from t3sim.reproduction.snapshot import FROM_TABLES

    runs = _runs(lambda n: "hetero_fused_1d" if n.endswith(("1", "3", "5")) else "uniform_fused_2d")
    csv_path = next(p for p in ficco.figure(runs, tmp_path) if p.suffix == ".csv")
    got = ficco_numbers.metrics_from_tables({"ficco": read_table(csv_path)})
    want = ficco_numbers.metrics(runs)
    assert_same_metrics(got, want)
    assert 0 < want["heuristic_synthetic"] < 100  # the runs' winners differ from the picks in some scenarios
    assert FROM_TABLES["ficco"] is ficco_numbers.metrics_from_tables


def test_a_snapshot_takes_the_ficco_values_from_its_figure_tables(tmp_path):
    """A FiCCO study re-run and re-plotted into a snapshot's figures/ updates its numbers; on the committed
    snapshot the table-derived values print as its report does."""
    import csv
    import shutil

    from t3sim.reproduction import snapshot
    from t3sim.reproduction.build import from_snapshot

    snap = tmp_path / "snap"
    shutil.copytree(REPO / "experiments" / "reproduction", snap)
    from_snapshot(snap, tmp_path / "same")
    assert (tmp_path / "same" / "REPRODUCTION.md").read_text() == (snap / "REPRODUCTION.md").read_text()
    f = snap / "figures" / "ficco.csv"
    rows = list(csv.DictReader(f.open()))
    for r in rows:
        if r["experiment"] == "ficco-sp":  # every row carries its scenario's ideal
            r["ideal_speedup"] = "1.65"
    with f.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    ideal_ep = max(float(r["ideal_speedup"]) for r in rows if r["experiment"] == "ficco-ep")
    assert snapshot.load(snap).values["ficco"]["ideal_max"] == pytest.approx(max(1.65, ideal_ep))
    from_snapshot(snap, tmp_path / "out")
    row = next(r for r in csv.DictReader((tmp_path / "out" / "reproduction.csv").open()) if r["key"] == "ideal_max")
    assert row["t3sim"] == f"{max(1.65, ideal_ep):.2f}x"


def _char_runs(comm_us, gemm_us=100.0):
    """Runs of every ficco-char point with made-up times: ``comm_us(key)`` per communication point."""
    from t3sim.reproduction.ficco.char import _key

    out = []
    for p in expand(REPO / "configs/experiments/ficco-char.yaml"):
        cfg = p.config.model_dump(mode="json")
        r = Run(Path(f"/x/{p.label}"), "ficco-char", cfg, {"scheme": "ficco_char"})
        k = _key(r)
        r._stats = {"ficco_char": {"comm_us": {"value": comm_us(k, cfg) if k[0] != "gemm" else float("nan")},
                                   "gemm_us": {"value": gemm_us}}}
        out.append(r)
    return out


def test_communication_dil_is_the_scaled_down_collective_eight_times():
    """Sec. IV-C2 ("we scale down collective size 8-way ... and study resultant slowdown"): DIL = 8 t(A/8) / t(A)
    from the one-step-alone point, not the 8 pipelined steps; the fixed part and the copy engines' link bound."""
    from t3sim.reproduction.ficco import char as ficco_char

    def comm(k, cfg):
        a_B = 2 * (cfg["workload"]["gemm"]["M"] // cfg["workload"]["gemm"].get("scale_M", 1)) * \
            (cfg["workload"]["gemm"]["K"] // cfg["workload"]["gemm"].get("scale_K", 1))
        whole = 3.0 + a_B / 1e6  # us: 3 us fixed, 1 us per MB
        part, how, steps, pieces = k
        if part != "comm":
            return 50.0
        if steps == 1:
            return whole
        return 3.0 + a_B / 8e6 if pieces == "first" else 0.7 * whole
    rows = ficco_char.char_rows(_char_runs(comm))
    assert len(rows) == 16
    for r in rows:
        whole = 3.0 + r["a_MB"]
        assert r["dil_comm_dma"] == pytest.approx(8 * (3.0 + r["a_MB"] / 8) / whole)
        assert r["comm_fixed_us_dma"] == pytest.approx(3.0)  # (8 t(A/8) - t(A)) / 7
        assert r["steps_comm_dma"] == pytest.approx(0.7)
        # 7 peers on the preset's 6 engines: two rounds of a shard (A/8) at 48 GB/s
        assert r["comm_bound_us_dma"] == pytest.approx(2 * r["a_MB"] * 1e6 / 8 / 48e3)
    v = ficco_char.metrics_from_rows(rows)
    assert v["comm_dil_geomean"] > 0 and v["comm_dil_vs_size"] < 0  # a fixed part weighs less on larger collectives
