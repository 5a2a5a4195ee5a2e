"""The fused GEMV+AllReduce study's table (t3sim.reproduction.fused.gemv_table): on made-up results whose numbers
are worked out by hand, and on two tiny real runs."""

from __future__ import annotations

import csv

import pytest

from t3sim.config.sweep import expand
from t3sim.reproduction.fused.gemv_table import STATED, markdown, rows, summary, write_csv
from t3sim.results.stats import Stats
from t3sim.results.store import ResultStore, RunResult
from tests.conftest import REPO

EXPERIMENT = REPO / "configs/experiments/fused-gemv.yaml"

#: gemv -> (baseline GEMV, baseline all-reduce, fused GEMV part, fused all-reduce tail), us
TIMES = {"msweep.4k": (60.0, 40.0, 70.0, 10.0), "msweep.8k": (150.0, 50.0, 170.0, 10.0),
         "mega-gpt-2.OP": (30.0, 20.0, 40.0, 4.0)}


def _write_made_up(root):
    cases = ("[{workload.gemv.name: msweep.4k, workload.gemv.model: sensitivity, workload.gemv.M: 4096, "
             "workload.gemv.K: 4096}, {workload.gemv.name: msweep.8k, workload.gemv.model: sensitivity, "
             "workload.gemv.M: 8192, workload.gemv.K: 4096}, {workload.gemv.name: mega-gpt-2.OP, "
             "workload.gemv.model: mega-gpt-2, workload.gemv.M: 3072, workload.gemv.K: 3072}]")
    store = ResultStore(root)
    for p in expand(EXPERIMENT, [f"sweep.cases={cases}"]):
        c = p.config
        g, a, fg, fa = TIMES[c.workload.gemv.name]
        fused = c.scheme.kind == "fused_gemv_ar"
        gemm, rs = (fg, fa) if fused else (g, a)
        st = Stats()
        st.add("fused.grid_wgs", 12 if fused else 0, "count", "made up")
        st.add("fused.occupancy_reduction", 0.25 if fused else 0.0, "ratio", "made up")
        store.write(RunResult(c.name, c.model_dump(mode="json"), st,
                              {"scheme": c.scheme.kind, "gemm_us": gemm, "rs_us": rs, "ag_us": 0.0,
                               "total_us": gemm + rs}, 0, {"wall_s": 0.0}))


def test_rows_pair_the_schemes_and_compute_the_reduction(tmp_path):
    """Totals 100 -> 80, 200 -> 180 and 50 -> 44 us: reductions 20 %, 10 % and 12 %; msweep mean 15 %."""
    _write_made_up(tmp_path)
    rs = rows(tmp_path)
    assert [(r["gemv"], r["group"], r["M"], r["K"]) for r in rs] == [
        ("mega-gpt-2.OP", "model", 3072, 3072), ("msweep.4k", "msweep", 4096, 4096), ("msweep.8k", "msweep", 8192, 4096)]
    assert [(r["base_gemv_us"], r["base_allreduce_us"], r["base_total_us"], r["fused_gemv_us"],
             r["fused_allreduce_tail_us"], r["fused_total_us"]) for r in rs] == [
        (30.0, 20.0, 50.0, 40.0, 4.0, 44.0), (60.0, 40.0, 100.0, 70.0, 10.0, 80.0), (150.0, 50.0, 200.0, 170.0, 10.0, 180.0)]
    assert [r["reduction"] for r in rs] == [0.12, 0.2, 0.1]
    assert all((r["fused_grid_wgs"], r["fused_occupancy_reduction"]) == (12, 0.25) for r in rs)  # the fused run's
    s = summary(rs)
    assert s["msweep"] == {"mean": pytest.approx(0.15), "max": 0.2, "min": 0.1, "n": 2}
    assert s["model"] == {"mean": pytest.approx(0.12), "max": 0.12, "min": 0.12, "n": 1}
    assert "| msweep.4k | 4096 | 4096 (1024) | homogeneous | 60.0 | 40.0 | 100.0 | 70.0 | 10.0 | 80.0 | 20.0 % |" \
        in markdown(rs).splitlines()
    with write_csv(rs, tmp_path / "t.csv").open(newline="") as fh:
        back = list(csv.DictReader(fh))
    assert [(b["gemv"], float(b["reduction"])) for b in back] == [("mega-gpt-2.OP", 0.12), ("msweep.4k", 0.2),
                                                                    ("msweep.8k", 0.1)]


def test_rows_of_a_real_run_are_its_runs_times(tmp_path, run_cli):
    """A tiny real sweep: the row takes the baseline's times from the gemv_ar run and the fused ones from the
    fused_gemv_ar run (their summary.csv files, read here)."""
    rc, _out, err = run_cli("run", str(EXPERIMENT), "--out", str(tmp_path / "r"),
                            "--set", "sweep.cases=[{workload.gemv.name: msweep.4k, workload.gemv.M: 4096}]",
                            "--set", "workload.gemv.K=1024")
    assert rc == 0, err
    rs = rows(tmp_path / "r")
    assert len(rs) == 1 and rs[0]["group"] == "msweep" and rs[0]["M"] == 4096
    r = rs[0]
    by_scheme = {}
    for f in (tmp_path / "r" / "fused-gemv").glob("*/summary.csv"):
        with f.open(newline="") as fh:
            row = next(csv.DictReader(fh))
        by_scheme[row["scheme"]] = {k: float(row[k]) for k in ("gemm_us", "rs_us", "total_us")}
    base, fused = by_scheme["gemv_ar"], by_scheme["fused_gemv_ar"]
    assert fused["total_us"] < base["total_us"]  # the fused kernel hides part of the all-reduce
    assert (r["base_gemv_us"], r["base_allreduce_us"], r["base_total_us"]) == (base["gemm_us"], base["rs_us"], base["total_us"])
    assert (r["fused_gemv_us"], r["fused_allreduce_tail_us"], r["fused_total_us"]) == (
        fused["gemm_us"], fused["rs_us"], fused["total_us"])
    assert r["reduction"] == pytest.approx((base["total_us"] - fused["total_us"]) / base["total_us"], abs=1e-6)
    assert r["fused_grid_wgs"] == 16 and r["fused_occupancy_reduction"] == 0
    assert summary(rs)["msweep"]["n"] == 1 and "msweep.4k" in markdown(rs)
    assert write_csv(rs, tmp_path / "t.csv").read_text().count("\n") == 2
    assert STATED["mean_reduction"][0] == 0.13 and STATED["max_reduction"][0] == 0.22
