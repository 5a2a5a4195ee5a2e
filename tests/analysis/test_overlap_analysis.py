"""analysis.overlap: one series per scheme variant, one case per sub-layer at its largest size."""

from __future__ import annotations

from pathlib import Path

from t3sim.analysis.overlap import overlap_rows, scheme_styles, series_keys
from t3sim.analysis.runs import Run, remember_scheme
from t3sim.schemes.runtime import scheme_for


def _run(kind, tokens, total, gemm=100.0, reduce=None, h=0):
    cfg = {"system": {"name": "sys"}, "workload": {"tokens": tokens}, "scheme": {"kind": kind}}
    if reduce:
        cfg["scheme"]["flux_reduce"] = reduce
    reg = scheme_for(kind)  # the registered label and colour, as every summary.csv carries them
    summ = {"scheme": kind, "scheme_label": reg.label, "scheme_color": reg.color, "model": "m", "sublayer": "OP",
            "tp": 4, "total_us": total, "gemm_us": gemm, "rs_us": 0.0, "ag_us": 0.0}
    remember_scheme(summ)  # as read_run does
    return Run(Path(f"/x/{kind}{reduce}{tokens}{h}"), "e", cfg, summ)


def test_variants_are_separate_series_with_their_own_labels():
    runs = [_run("sequential", 256, 200.0), _run("flux_rs", 256, 150.0, reduce="atomic"),
            _run("flux_rs", 256, 160.0, reduce="pull")]
    assert series_keys(runs) == ["sequential", "flux_rs:atomic", "flux_rs:pull"]
    rows = {r["scheme"]: r for r in overlap_rows(runs)}
    assert rows["flux_rs:atomic"]["overlap_efficiency"] == 1 - (150 - 100) / (200 - 100)
    assert rows["flux_rs:pull"]["speedup_pct"] == 100 * (200 / 160 - 1)
    styles = scheme_styles(runs)
    label = scheme_for("flux_rs").label
    assert styles["flux_rs:atomic"][0] == f"{label} (atomic)" and styles["flux_rs:pull"][0] == f"{label} (pull)"
    assert styles["flux_rs:atomic"][1] != styles["flux_rs:pull"][1]  # lighter shade for the second variant


def test_a_case_is_read_at_its_largest_token_count():
    """A smaller (e.g. --quick) run of the same case never mixes into the full-size case."""
    runs = [_run("sequential", 128, 50.0, gemm=20.0), _run("flux_rs", 128, 30.0, reduce="atomic"),
            _run("sequential", 256, 200.0), _run("flux_rs", 256, 150.0, reduce="atomic")]
    rows = overlap_rows(runs)
    assert {r["total_us"] for r in rows} == {200.0, 150.0}
