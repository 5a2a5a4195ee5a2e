"""Pure validation analysis: error metrics, measured-CSV parsing (file:line errors), the Fig. 14 plot."""

from __future__ import annotations

import math

import pytest

from t3sim.analysis.validation import (Comparison, detect_kind, geomean_bias, geomean_error, linear_fit,
                                       log_ratio_error, plot_comparison, read_measured, row_error)
from t3sim.errors import InputError

RS_HEADER = "collective,gpus,size_mb,dtype,median_us\n"
GEMM_HEADER = "model,sublayer,tp,M,N,K,dtype,median_us\n"


def test_row_error_signed():
    assert row_error(110.0, 100.0) == pytest.approx(0.10)
    assert row_error(90.0, 100.0) == pytest.approx(-0.10)


def test_geomean_error_is_geometric_mean_of_abs_errors():
    # |errors| 0.02 and 0.08 (opposite signs must not cancel): geomean sqrt(0.02 * 0.08) = 0.04
    assert geomean_error([102.0, 92.0], [100.0, 100.0]) == pytest.approx(0.04)
    assert geomean_error([105.0], [100.0]) == pytest.approx(0.05)
    # an exact row is floored at 0.01 %, not 0
    assert geomean_error([100.0, 110.0], [100.0, 100.0]) == pytest.approx(math.sqrt(1e-4 * 0.1))


def test_log_ratio_error_symmetric_and_bias_cancels():
    assert log_ratio_error([200.0], [100.0]) == pytest.approx(1.0)
    assert log_ratio_error([50.0], [100.0]) == pytest.approx(1.0)  # 2x too fast counts like 2x too slow
    assert log_ratio_error([200.0, 50.0], [100.0, 100.0]) == pytest.approx(1.0)
    assert geomean_bias([200.0, 50.0], [100.0, 100.0]) == pytest.approx(0.0, abs=1e-12)
    assert geomean_bias([110.0, 110.0], [100.0, 100.0]) == pytest.approx(0.10)


def test_metrics_reject_bad_input():
    with pytest.raises(ValueError):
        geomean_error([], [])
    with pytest.raises(ValueError):
        geomean_error([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        log_ratio_error([0.0], [1.0])


def test_linear_fit_recovers_line():
    x = [6, 12, 24, 48]
    slope, icpt = linear_fit(x, [2.5 * v + 33.0 for v in x])
    assert slope == pytest.approx(2.5) and icpt == pytest.approx(33.0)
    with pytest.raises(ValueError):
        linear_fit([1, 1], [2, 3])


def _write(tmp_path, text, name="m.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_read_collective_and_gemm(tmp_path):
    kind, rows = read_measured(_write(tmp_path, RS_HEADER + "reduce_scatter,4,6,bf16,50.6\n\nall_gather,8,1.5,fp16,9\n"))
    assert kind == "collective" and len(rows) == 2
    assert rows[0].fields == {"collective": "reduce_scatter", "gpus": 4, "size_mb": 6.0, "dtype": "bf16"}
    assert rows[0].measured_us == 50.6 and rows[1].where.endswith("m.csv:4")  # blank line 3 skipped, lines counted
    kind, rows = read_measured(_write(tmp_path, GEMM_HEADER + "mega-gpt-2,OP,8,16384,3072,384,bf16,74.8\n", "g.csv"))
    assert kind == "gemm" and rows[0].fields["K"] == 384 and rows[0].label().startswith("mega-gpt-2 OP TP8")


def test_repo_reference_csvs_parse(repo):
    kind, rows = read_measured(repo / "experiments/validation/reduce_scatter_4gpu.csv")
    assert kind == "collective" and [r.fields["size_mb"] for r in rows] == [6, 12, 24, 48, 96, 192]
    kind, rows = read_measured(repo / "experiments/validation/gemm_calibration.csv")
    assert kind == "gemm" and len(rows) == 4


@pytest.mark.parametrize("body, where, what", [
    ("reduce_scatter,4,six,bf16,50.6\n", ":2", "size_mb='six'"),
    ("reduce_scatter,4.5,6,bf16,50.6\n", ":2", "gpus='4.5'"),
    ("reduce_scatter,1,6,bf16,50.6\n", ":2", "gpus='1'"),
    ("reduce_scatter,4,6,bf16,50.6\nbroadcast,4,6,bf16,1\n", ":3", "collective='broadcast'"),
    ("reduce_scatter,4,6,int3,50.6\n", ":2", "dtype='int3'"),
    ("reduce_scatter,4,6,bf16,-1\n", ":2", "median_us='-1'"),
    ("reduce_scatter,4,6,bf16\n", ":2", "4 fields"),
])
def test_bad_rows_name_file_line(tmp_path, body, where, what):
    p = _write(tmp_path, RS_HEADER + body)
    with pytest.raises(InputError) as ei:
        read_measured(p)
    msg = ei.value.one_line()
    assert f"{p}{where}:" in msg and what in msg and "\n" not in msg


def test_missing_column_and_empty(tmp_path):
    with pytest.raises(InputError, match=r"m\.csv:1: .*missing dtype"):
        read_measured(_write(tmp_path, "collective,gpus,size_mb,median_us\nreduce_scatter,4,6,50\n"))
    with pytest.raises(InputError, match="empty file"):
        read_measured(_write(tmp_path, "", "e.csv"))
    with pytest.raises(InputError, match="no data rows"):
        read_measured(_write(tmp_path, RS_HEADER, "h.csv"))
    with pytest.raises(InputError, match="missing model, sublayer, tp, M, N, K"):
        read_measured(_write(tmp_path, RS_HEADER + "reduce_scatter,4,6,bf16,50\n", "x.csv"), kind="gemm")
    assert detect_kind(GEMM_HEADER.strip().split(","), "f:1") == "gemm"


def test_comparison_table_csv_and_plot(tmp_path):
    _, rows = read_measured(_write(tmp_path, RS_HEADER + "reduce_scatter,4,6,bf16,50\nreduce_scatter,4,12,bf16,100\n"))
    cmp = Comparison("collective", "sys", rows, [55.0, 90.0], [1.0, 2.0])
    assert cmp.errors == pytest.approx([0.10, -0.10])
    assert cmp.geomean_error == pytest.approx(0.10)
    assert "+10.0%" in cmp.table() and "geomean error 10.0%" in cmp.table()
    text = cmp.write_csv(tmp_path / "out/cmp.csv").read_text().splitlines()
    assert text[0] == "collective,gpus,size_mb,dtype,measured_us,simulated_us,error,wall_s" and len(text) == 3
    png = plot_comparison(cmp, tmp_path / "out/cmp.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
