"""experiments/ficco/sizes.py: the half-size study read with the study's readings, and the
per-scenario comparison, on the real ficco-synthetic(-half) points with made-up times (nothing simulated)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from t3sim.analysis.runs import Run
from t3sim.config.sweep import expand
from t3sim.reproduction.ficco import numbers as ficco_numbers
from t3sim.reproduction.ficco import speedups as ficco

from tests.conftest import REPO, load_script


def _runs(experiment, fast):
    """Runs of every point of ``experiment``'s config: the baseline 300 us, each dma schedule 280 us, but
    ``fast`` (that schedule 250 us)."""
    out = []
    for p in expand(REPO / f"configs/experiments/{experiment}.yaml"):
        cfg = p.config.model_dump(mode="json")
        kind = cfg["scheme"]["kind"]
        t = 300.0 if kind == "sequential" else (250.0 if cfg["scheme"]["ficco_schedule"] == fast else 280.0)
        summ = {"gemm_us": 200.0 if kind == "sequential" else t, "ag_us": 100.0 if kind == "sequential" else 0.0,
                "rs_us": 0.0, "total_us": t}
        out.append(Run(Path(f"/x/{experiment}/{p.label}"), experiment, cfg, {"scheme": kind, **summ}))
    return out


def _half(runs):
    return {"ficco-sp-half": [], "ficco-ep-half": [], "ficco-synthetic-half": runs, "ficco-char-half": []}


def test_half_rows_take_the_study_names_and_readings():
    sizes = load_script("experiments/ficco/sizes.py")
    tabs = sizes.half_tables(_half(_runs("ficco-synthetic-half", "uniform_fused_1d")))
    assert tabs["ficco"] and {r["experiment"] for r in tabs["ficco"]} == {"ficco-synthetic"}
    assert tabs["ficco-char"] == []
    # the heuristic read from the half study's rows as from the same times under the study's name
    same = ficco.ficco_rows(_runs("ficco-synthetic", "uniform_fused_1d"))
    h = ficco_numbers.metrics_from_tables(tabs)["heuristic_synthetic"]
    assert h == ficco_numbers.metrics_from_tables({"ficco": same})["heuristic_synthetic"]
    # the half study's own shapes: its scenarios' simulated M x K are at most the study's
    sim = {(r["scenario"], r["sim_M"] * r["sim_K"]) for r in tabs["ficco"]}
    big = {(r["scenario"], r["sim_M"] * r["sim_K"]) for r in same}
    assert {s for s, _ in sim} == {s for s, _ in big}
    assert all(mk <= dict(big)[s] for s, mk in sim) and sim != big


def test_scenario_rows_pair_the_two_sizes():
    sizes = load_script("experiments/ficco/sizes.py")
    study = ficco.ficco_rows(_runs("ficco-synthetic", "hetero_fused_1d"))
    half = sizes.half_tables(_half(_runs("ficco-synthetic-half", "uniform_fused_1d")))["ficco"]
    rows = sizes.scenario_rows(study, half)
    by = {(r["scenario"], r["method"], r["variant"]): r for r in rows}
    s1 = by[("s1", "ficco-dma", "hetero_fused_1d")]
    assert s1["study"] == pytest.approx(300 / 250, abs=1e-4) and s1["half"] == pytest.approx(300 / 280, abs=1e-4)
    u = by[("s1", "ficco-dma", "uniform_fused_1d")]
    assert u["study"] == pytest.approx(300 / 280, abs=1e-4) and u["half"] == pytest.approx(300 / 250, abs=1e-4)
    assert by[("s1", "ideal", "")]["study"] == pytest.approx(1.5)  # (100 + 200) / 200
    assert ("s1", "shard", "") not in by  # not run at either size
    assert ("s1", "ficco-rccl", "uniform_fused_1d") not in by
    # a scenario the half study lacks reads NaN there
    rows = sizes.scenario_rows(study, [r for r in half if r["scenario"] != "s2"])
    assert all(math.isnan(r["half"]) for r in rows if r["scenario"] == "s2")


@pytest.mark.parametrize("args,what", [
    ([], "--results: no ficco-*-half results"),
    (["--study", "nowhere"], "--study: nowhere has no REPRODUCTION.md"),
    (["--formats", "png,gif"], "--formats: 'png,gif'; allowed"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, args, what):
    sizes = load_script("experiments/ficco/sizes.py")
    with pytest.raises(SystemExit) as e:
        sizes.main(["--results", str(tmp_path), "--out", str(tmp_path / "out")] + args)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(f"sizes: {what}") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_committed_half_report_is_what_the_committed_tables_make(tmp_path):
    """experiments/ficco/REPRODUCTION-ficco-half.md is the report's FiCCO section re-made from the committed half
    tables (every cause re-checked against them), and its values are sizes.csv's half column."""
    import csv

    sizes = load_script("experiments/ficco/sizes.py")
    tabs = sizes.committed_half_tables()
    path = sizes.half_report(REPO / "experiments/reproduction", tabs, tmp_path)
    assert path.read_text() == (REPO / "experiments/ficco/REPRODUCTION-ficco-half.md").read_text()
    text = path.read_text()
    assert text.startswith("> GENERATED") and "## FiCCO: " in text and "## Fused" not in text
    assert "at most 128 GFLOP per GPU (the half study)" in text and "256 GFLOP" not in text
    half = ficco_numbers.metrics_from_tables(tabs)
    with (REPO / "experiments/ficco/sizes.csv").open() as fh:
        stated = {r["method"]: float(r["half"]) for r in csv.DictReader(fh) if not r["scenario"]}
    assert stated.keys() == half.keys()
    assert all(stated[k] == pytest.approx(half[k], rel=1e-4, abs=1e-4) for k in stated)  # CSV rounding
    assert f"| {half['ficco_1d_max']:.2f}x |" in text  # the half study's value is the one in the table
