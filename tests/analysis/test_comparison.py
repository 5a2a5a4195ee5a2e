"""Comparison layer: per-case metrics, aggregates beside the paper, ordering check, CSV."""

from __future__ import annotations

import csv
import io
import math

import pytest

from t3sim.analysis.comparison import aggregate, case_metrics, group_cases, ordering_violations
from t3sim.analysis.tables import write_csv_atomic
from t3sim.reproduction.stated import FLAG_PTS
from t3sim.reproduction.t3.comparison import compare, format_tables, to_csv


def _row(scheme, total, model="t-nlg", sub="FC-2", tp=8, rs_us=100.0, **mb):
    r = {"scheme": scheme, "model": model, "sublayer": sub, "tp": tp, "total_us": total, "rs_us": rs_us}
    for c in ("gemm", "rs", "ag"):
        for k in ("read", "write", "update"):
            r[f"{c}_{k}_MB"] = mb.get(f"{c}_{k}", 0.0)
    return r


SEQ = dict(gemm_read=100, gemm_write=50, rs_read=120, rs_write=50, ag_read=40, ag_write=40)
T3 = dict(gemm_read=80, gemm_update=45, rs_read=50, rs_update=45, ag_read=40, ag_write=40)


def test_case_metrics_definitions():
    m = case_metrics({"sequential": _row("sequential", 200, **SEQ), "t3": _row("t3", 160, **T3)})
    t = m["t3"]
    assert t["speedup_pct"] == pytest.approx(25.0)  # 200 / 160 - 1
    assert t["dram_red_pct"] == pytest.approx(100 * (1 - 300 / 400))
    assert t["rs_read_x"] == pytest.approx(2.4)
    assert t["gemm_read_x"] == pytest.approx(1.25)
    assert t["wr_red_pct"] == pytest.approx(10.0)  # (50+50) -> (45+45): updates count as writes
    assert m["sequential"]["speedup_pct"] == 0.0
    assert case_metrics({"t3": _row("t3", 1)}) == {}  # no baseline, no metrics


def test_aggregate_geomean_of_ratios_and_max():
    assert aggregate([50.0, 0.0], "speedup_pct", "geomean") == pytest.approx(100 * (math.sqrt(1.5) - 1))
    assert aggregate([50.0, 0.0], "speedup_pct", "max") == 50.0
    assert aggregate([2.0, 8.0], "rs_read_x", "geomean") == pytest.approx(4.0)
    assert aggregate([], "speedup_pct", "geomean") != aggregate([], "speedup_pct", "geomean")  # NaN


def test_compare_groups_cases_and_flags_differences():
    rows = [_row("sequential", 200, **SEQ), _row("t3", 160, **T3),
            _row("sequential", 100, tp=16, **SEQ), _row("t3", 100, tp=16, **T3)]
    assert set(group_cases(rows)) == {("t-nlg", "FC-2", 8), ("t-nlg", "FC-2", 16)}
    c = compare(rows)
    geo = next(r for r in c.summary if r["scheme"] == "t3" and r["agg"] == "geomean")
    assert geo["t3sim"] == pytest.approx(100 * (math.sqrt(1.25) - 1))
    assert geo["diff_pts"] == pytest.approx(geo["t3sim"] - 20)
    assert geo in c.flagged and abs(geo["diff_pts"]) > FLAG_PTS
    rs = next(r for r in c.summary if r["metric"] == "rs_read_x" and r["figure"] == "RS reads reduction")
    assert rs["cases"] == 0  # no t3_mca points: nothing to compare
    text = format_tables(c)
    assert "T3 speedup (6.1.2)" in text and "FC-2" in text
    got = list(csv.DictReader(io.StringIO(to_csv(c))))
    assert {r["table"] for r in got} == {"case", "paper"}


def test_ordering_violations():
    def m(**t):
        return {k: {"total_us": v} for k, v in t.items()}

    assert ordering_violations(m(sequential=100, t3=80, t3_mca=79, ideal_rs_nmc=70), 0.02) == []
    assert ordering_violations(m(sequential=100, t3=80, t3_mca=81, ideal_rs_nmc=70), 0.02) == []  # within tol
    assert len(ordering_violations(m(sequential=100, t3=101), 0.02)) == 1
    assert len(ordering_violations(m(sequential=100, t3=80, t3_mca=90), 0.02)) == 1
    assert len(ordering_violations(m(sequential=100, t3=60, t3_mca=60, ideal_rs_nmc=70), 0.02)) == 2


def test_write_csv_atomic(tmp_path):
    p = write_csv_atomic(tmp_path / "x" / "comparison.csv", "a,b\n1,2\n")
    assert p.read_text() == "a,b\n1,2\n"
    assert [f.name for f in p.parent.iterdir()] == ["comparison.csv"]  # no temporary left behind
