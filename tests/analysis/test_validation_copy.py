"""GEMM / copy contention CSVs (t3sim/analysis/validation_copy.py): reading and metrics."""

from __future__ import annotations

import pytest

from t3sim.analysis.validation import CONTENTION_COLUMNS, detect_kind, read_measured
from t3sim.analysis.validation_copy import ContentionComparison, plot_contention
from t3sim.errors import InputError

HEADER = ",".join(CONTENTION_COLUMNS) + "\n"
ROW8 = "mega-gpt-2,OP,8,16384,3072,384,80,160,320,80,1.5,1.3,1.02\n"
ROW16 = "mega-gpt-2,OP,16,16384,3072,192,50,150,,50,1.3,,1.0\n"


def _write(tmp_path, text, name="c.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _sim(alone, d1, d2, pc, c1, c2, cp):
    return {"gemm_alone_us": alone, "gemm_with_d2d1_us": d1, "gemm_with_d2d2_us": d2, "gemm_with_pcie_us": pc,
            "copy_slowdown_d2d1": c1, "copy_slowdown_d2d2": c2, "copy_slowdown_pcie": cp}


def test_detected_and_parsed_with_empty_cells(tmp_path, repo):
    assert detect_kind(CONTENTION_COLUMNS, "f:1") == "copy_contention"
    kind, rows = read_measured(_write(tmp_path, HEADER + ROW8 + ROW16))
    assert kind == "copy_contention" and len(rows) == 2
    assert rows[0].measured_us == 80 and rows[0].fields["copy_slowdown_pcie"] == 1.02
    assert rows[1].fields["gemm_with_d2d2_us"] is None and rows[1].fields["dtype"] == "bf16"
    kind, rows = read_measured(repo / "experiments/validation/gemm_copy_contention.csv")
    assert kind == "copy_contention" and len(rows) == 8


@pytest.mark.parametrize("row, what", [("mega-gpt-2,OP,8,16384,3072,384,,160,320,80,1.5,1.3,1.02\n", "gemm_alone_us=''"),
                                       ("mega-gpt-2,OP,8,16384,3072,384,80,-1,320,80,1.5,1.3,1.02\n", "gemm_with_d2d1_us='-1'")])
def test_bad_cells_named(tmp_path, row, what):
    with pytest.raises(InputError) as ei:
        read_measured(_write(tmp_path, HEADER + row))
    assert ":2:" in ei.value.one_line() and what in ei.value.one_line()


def test_metrics_fit_and_check_sets(tmp_path):
    _, rows = read_measured(_write(tmp_path, HEADER + ROW8 + ROW16))
    # row 0 (TP=8): GEMM slowdowns d2d1 2.0 (meas 2.0), d2d2 4.4 (meas 4.0: +10 %), pcie 1.0; copies +10 %
    # row 1 (TP=16): d2d1 3.3 (meas 3.0: +10 %), d2d2 not measured
    sim = [_sim(80, 160, 352, 80, 1.65, 1.43, 1.02), _sim(50, 165, 999, 50, 1.43, 9.0, 1.0)]
    cmp = ContentionComparison("sys", rows, sim, [1.0, 2.0])
    assert cmp.measured(1, "gemm_slowdown_d2d2") is None
    assert cmp.simulated(0, "gemm_slowdown_d2d2") == pytest.approx(4.4)
    assert cmp.metric("gemm_slowdown", ["d2d2"]) == pytest.approx(0.10)  # row 1 skipped (not measured)
    assert cmp.metric("gemm_slowdown", subset="fit") == pytest.approx(1e-4)  # row 0, d2d1: exact (floored)
    assert cmp.metric("copy_slowdown", ["d2d1"]) == pytest.approx(0.10)
    assert cmp.is_fit(0, "d2d1") and not cmp.is_fit(1, "d2d1") and not cmp.is_fit(0, "d2d2")
    s = cmp.summary()
    assert s["kind"] == "copy_contention" and s["gemm_slowdown_geomean_error_d2d2"] == pytest.approx(0.1)
    text = cmp.table()
    assert "d2d1 (fit)" in text and "n/a" in text and "GEMM slowdown geomean error" in text
    md = cmp.markdown("c.csv")
    assert "from `c.csv`" in md and "| d2d2 | 320.0 / 352.0 (+10.0%) | 4.00 / 4.40 (+10.0%) |" in md
    assert "| OP | 8 | 384 | 80.0 / 80.0 | d2d1 (fit) |" in md and "| d2d2 | n/a / 999.0 | n/a / 19.98 | n/a / 9.000 |" in md
    assert "| copy slowdown geomean error | 0.6% | 10.0% | 10.0% | 0.3% |" in md
    out = cmp.write_csv(tmp_path / "o/c.csv").read_text().splitlines()
    assert out[0].startswith("model,sublayer,tp,M,N,K,gemm_alone_meas_us,gemm_alone_sim_us") and len(out) == 3
    png = plot_contention(cmp, tmp_path / "o/c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
