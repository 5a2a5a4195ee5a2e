"""The fused GEMV+AllReduce study's table (t3sim.reproduction.fused.gemv_table) on two tiny real runs."""

from __future__ import annotations

from t3sim.reproduction.fused.gemv_table import STATED, markdown, rows, summary, write_csv
from tests.conftest import REPO


def test_rows_pair_the_schemes_and_compute_the_reduction(tmp_path, run_cli):
    rc, _out, err = run_cli("run", str(REPO / "configs/experiments/fused-gemv.yaml"), "--out", str(tmp_path / "r"),
                            "--set", "sweep.cases=[{workload.gemv.name: msweep.4k, workload.gemv.M: 4096}]",
                            "--set", "workload.gemv.K=1024")
    assert rc == 0, err
    rs = rows(tmp_path / "r")
    assert len(rs) == 1 and rs[0]["group"] == "msweep" and rs[0]["M"] == 4096
    r = rs[0]
    assert r["reduction"] == round(1 - r["fused_total_us"] / r["base_total_us"], 6)
    assert r["base_total_us"] == r["base_gemv_us"] + r["base_allreduce_us"] or abs(
        r["base_total_us"] - r["base_gemv_us"] - r["base_allreduce_us"]) < 1e-3
    assert r["fused_grid_wgs"] == 16 and r["fused_occupancy_reduction"] == 0
    assert summary(rs)["msweep"]["n"] == 1 and "msweep.4k" in markdown(rs)
    assert write_csv(rs, tmp_path / "t.csv").read_text().count("\n") == 2
    assert STATED["mean_reduction"][0] == 0.13 and STATED["max_reduction"][0] == 0.22
