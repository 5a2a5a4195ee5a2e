"""``t3sim decision-map``: the plan (operations, the budget, sampled and whole runs), bad input, and the quick map end
to end (its CSV, its figures, a second run that simulates nothing)."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from t3sim.analysis import decision_map as D
from t3sim.commands import decision_map_cmd as C
from tests.conftest import REPO, assert_one_line_error


def test_quick_plan_lists_every_operation(run_cli):
    rc, out, err = run_cli("decision-map", "--quick", "--list")
    assert rc == 0, err
    assert out.startswith("8 operations: 8 to run (68 simulations")  # GEMM+RS 9 scheme variants, AG+GEMM 8
    lines = [ln for ln in out.splitlines() if ln.startswith("  run ")]
    assert len(lines) == 8 and all("CPU-min" in ln for ln in lines)
    assert any("h200-4gpu tp4 GEMM+RS Llama 3 70B attention-out M=64" in ln for ln in lines)
    assert any("t3-table1 tp8 AG+GEMM Llama 3 70B QKV M=1024" in ln for ln in lines)


def test_a_small_budget_leaves_operations_out(run_cli):
    rc, out, err = run_cli("decision-map", "--quick", "--list", "--budget-cpu-h", "0.01")
    assert rc == 0, err
    over = [ln for ln in out.splitlines() if ln.startswith("  over ")]
    kept = [ln for ln in out.splitlines() if ln.startswith("  run ")]
    assert over and kept and len(over) + len(kept) == 8
    assert "over the budget" in out.splitlines()[0]


@pytest.mark.parametrize("flag, value", [("--budget-cpu-h", "0"), ("--budget-cpu-h", "-1")])
def test_bad_budget_is_one_line(run_cli, flag, value, tmp_path):
    rc, out, err = run_cli("decision-map", "--quick", flag, value, "--csv", str(tmp_path / "x.csv"))
    assert_one_line_error(rc, err, flag, value)
    assert not (tmp_path / "x.csv").exists()


def test_sampling_where_the_sampler_cuts_the_gemm_else_whole():
    shapes = {(s.model, s.projection): s for s in D.shapes()}
    attn = shapes["llama-3-70b", "attention-out"]
    # the T3 paper's system keeps its GEMM's tile at any M: every scheme asks for sampled simulation
    p = C.plan_op(D.Op("t3-table1", 8, attn, 65536))
    ran = [(c["scheme"], c["variant"] or "") for i, c in enumerate(p.planned.cands) if i in dict(p.planned.points)]
    assert p.sampled and set(p.sampled) == set(ran)
    assert all(pt.config.simulation.sampling.mode == "waves" for _, pt in p.planned.points)
    # the measured H200's cuBLAS library tiles the cut GEMM differently: refused, so every scheme runs whole
    q = C.plan_op(D.Op("h200-4gpu", 4, attn, 65536))
    assert q.sampled == [] and q.planned.points
    assert all(pt.config.simulation.sampling.mode == "off" for _, pt in q.planned.points)
    assert C.estimate(q) > C.estimate(p)  # whole costs more than sampled
    # below SAMPLE_FROM_M nothing is sampled
    assert not C.plan_op(D.Op("t3-table1", 8, attn, 1024)).sampled


@pytest.mark.slow
def test_quick_map_end_to_end(run_cli, tmp_path):
    out, table = tmp_path / "results", tmp_path / "map.csv"
    rc, text, err = run_cli("decision-map", "--quick", "--out", str(out), "--csv", str(table), "-j", "2")
    assert rc == 0, err
    assert "8 of 8 operations decided; their simulations cost" in text
    rows = list(csv.DictReader(table.open()))
    assert [tuple(rows[0])] == [D.COLUMNS] and len(rows) == 8
    for r in rows:
        assert r["status"] == "ok" and r["winner"] and float(r["winner_us"]) > 0
        assert r["runner_up"] != r["winner"] and float(r["runner_up_us"]) >= float(r["winner_us"])
        assert float(r["margin_pct"]) == pytest.approx(100 * (float(r["runner_up_us"]) / float(r["winner_us"]) - 1),
                                                       rel=1e-4)
        assert float(r["sequential_us"]) >= float(r["winner_us"]) and r["binding_resource"] in ("CUs", "HBM", "links",
                                                                                               "none")
        assert int(r["schemes_ranked"]) >= 6 and float(r["est_cpu_s"]) > 0
    assert {r["machine"] for r in rows} == {"h200-4gpu", "t3-table1"}
    assert {r["grounding"] for r in rows} == {"validated against measurements", "assumed"}
    # the figures, one per machine, from the CSV alone
    r = subprocess.run([sys.executable, str(REPO / "experiments/decision-map/plot.py"), "--quick", "--csv", str(table),
                        "--out", str(tmp_path / "fig")], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "fig").iterdir()) == ["decision-map-quick-h200-4gpu.png",
                                                                   "decision-map-quick-t3-table1.png"]
    # a second run simulates nothing and writes the same decisions
    rc, text, err = run_cli("decision-map", "--quick", "--out", str(out), "--csv", str(tmp_path / "again.csv"))
    assert rc == 0, err
    assert "0 simulated" in err
    again = list(csv.DictReader((tmp_path / "again.csv").open()))
    assert again == rows  # the same file
