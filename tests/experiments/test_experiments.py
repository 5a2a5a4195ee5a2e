"""Experiment files resolve, share points where intended, and a tiny real run feeds the Fig. 17 plot."""

from __future__ import annotations

import csv
import json

import pytest

from t3sim.config.sweep import expand
from t3sim.reproduction import catalog
from t3sim.reproduction.catalog import SPECS
from t3sim.results.store import config_hash
from tests.conftest import REPO


def _hashes(path, overrides=()):
    return {config_hash(p.config.model_dump(mode="json")) for p in expand(path, overrides)}


def test_every_experiment_yaml_expands():
    sizes = {}
    for y in sorted((REPO / "experiments").glob("*/*.yaml")):
        if y.name == "validate.yaml":
            continue
        sizes[str(y.relative_to(REPO))] = len(expand(y))
    assert sizes["experiments/fig16/experiment.yaml"] == 80
    assert sizes["experiments/fig19/experiment.yaml"] == 36
    assert sizes["experiments/fig06/experiment.yaml"] == 12


def test_figure_subsets_share_the_sublayer_points():
    full = _hashes(REPO / "configs/experiments/t3-sublayers.yaml")
    assert _hashes(REPO / "experiments/fig16/experiment.yaml") == full
    for sub, n in (("fig15", 16), ("fig18", 32), ("fig04", 16)):
        h = _hashes(REPO / f"experiments/{sub}/experiment.yaml")
        assert len(h) == n and h <= full
    assert _hashes(REPO / "experiments/fig04/large-models.yaml") <= _hashes(REPO / "experiments/fig19/experiment.yaml")


def test_quick_overrides_are_small():
    for spec in SPECS:
        if spec.quick is None:  # not run by --quick
            continue
        pts = expand(spec.path, list(spec.quick))
        assert pts and len(pts) <= 20, spec.folder
        # tokens of a model sub-layer or a global batch; a MoE GEMM given by shape may go to its smallest valid M
        # (fused_gemm_a2a: one 128-row tile per GPU and destination, 4 x 4 x 128 = 2048 rows)
        assert all(p.config.workload.num_tokens <= (2048 if p.config.workload.kind == "gemm" else 128)
                   for p in pts), spec.folder


def test_fig06_splits_and_fig20_system():
    pts = expand(REPO / "experiments/fig06/experiment.yaml")
    assert {(p.config.system.gpu.num_cus, p.config.system.collective.cus) for p in pts} == {(80, None), (72, 8), (64, 16)}
    pts = expand(REPO / "experiments/fig20/experiment.yaml")
    assert {p.config.system.gpu.num_cus for p in pts} == {160}
    assert {p.config.workload.num_tokens for p in expand(REPO / "experiments/fig17/experiment.yaml")} == {4096}


def test_tiny_real_run_feeds_fig17(tmp_path):
    from t3sim.exec.runner import run_experiment

    grid = json.dumps({"scheme.kind": ["t3"]})  # the real stats.json keys, smallest T3 point
    outs = run_experiment(REPO / "experiments/fig17/experiment.yaml",
                          ["workload.tokens=128", "workload.sublayer=OP", f"sweep.grid={grid}"], out=tmp_path)
    assert len(outs) == 1
    paths = catalog.draw("fig17", catalog.load_inputs(tmp_path), tmp_path / "figs")
    assert sorted(p.suffix for p in paths) == [".csv", ".png"]
    rows = list(csv.DictReader((tmp_path / "figs" / "fig17.csv").open()))
    t3 = [r for r in rows if r["scheme"] == "t3"]
    assert t3 and any(float(r["GEMM_reads_GBps"]) > 0 for r in t3)
    assert any(float(r["RS_updates_GBps"]) > 0 for r in t3)  # near-memory updates of the fused RS
    assert any(float(r["RS_AG_reads_GBps"]) > 0 for r in t3)  # its DMA reads and the all-gather's
    # the plotted bandwidths against the run's own byte counters (gpu0.dram_traffic, counted per source, not
    # binned): bandwidth x bin width summed over the plotted window (first arrival to the RS's end) is the bytes
    # the GEMM and the RS moved; and no bin moves more than the HBM's peak
    run = catalog.load_inputs(tmp_path).runs["fig17"][0]
    bin_ns = run.stat("gpu0.hbm.bandwidth_over_time.bin_ns")
    start_ns = run.stat("gpu0.hbm.bandwidth_over_time.start_ns")
    times = [float(r["time_us"]) * 1e3 for r in t3]
    assert times == pytest.approx([start_ns + (i + 0.5) * bin_ns for i in range(len(t3))])  # one row per bin
    end_ns = 1e3 * (run.summary["gemm_us"] + run.summary["rs_us"])
    assert times[-1] - bin_ns / 2 <= end_ns < times[-1] + bin_ns / 2  # the window ends in the last row's bin

    def plotted_B(col):
        return sum(float(r[col]) for r in t3) * bin_ns  # GB/s x ns = B

    def moved_B(cat, kind):
        return run.stat(f"gpu0.dram_traffic.{cat}.{kind}_bytes", 0)

    assert moved_B("gemm", "read") > 0 and moved_B("rs", "update") > 0
    assert plotted_B("GEMM_reads_GBps") == pytest.approx(moved_B("gemm", "read"), rel=1e-3)
    assert plotted_B("GEMM_writes_GBps") == pytest.approx(moved_B("gemm", "write"), rel=1e-3)
    assert plotted_B("GEMM_updates_GBps") == pytest.approx(moved_B("gemm", "update"), rel=1e-3)
    assert plotted_B("RS_updates_GBps") == pytest.approx(moved_B("rs", "update"), rel=1e-3)
    # RS/AG reads: the RS's DMA reads, and at most the all-gather's that share the last bin
    rs_reads = plotted_B("RS_AG_reads_GBps")
    assert moved_B("rs", "read") * (1 - 1e-3) <= rs_reads <= (moved_B("rs", "read") + moved_B("ag", "read")) * (1 + 1e-3)
    peak = run.stat("gpu0.hbm.peak_bandwidth_GBps")
    assert all(sum(float(v) for k, v in r.items() if k.endswith("_GBps")) <= peak * (1 + 1e-6) for r in t3)


@pytest.mark.slow
def test_reproduce_quick_end_to_end(tmp_path, run_cli):
    rc, out, err = run_cli("reproduce", "--quick", "--out", str(tmp_path), "-j", "2")
    assert rc == 0, err
    text = (tmp_path / "REPRODUCTION.md").read_text()
    from t3sim.reproduction.t3.numbers import NUMBERS

    assert all(n.quote.replace("|", "\\|") in text for n in NUMBERS)
    for fig in catalog.FIGURES:
        assert (tmp_path / "figures" / f"{fig}.png").is_file(), fig
    # a second run reuses every point
    rc, out, err = run_cli("reproduce", "--quick", "--out", str(tmp_path))
    assert rc == 0
    text2 = (tmp_path / "REPRODUCTION.md").read_text()
    table = text2.split("## Experiments", 1)[1].split("\n\n", 2)[1].splitlines()
    head = [c.strip() for c in table[0].strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table[2:] if line.startswith("|")]
    assert len(rows) >= 17 and "fig14" in {r[0] for r in rows}  # every quick experiment file and the validation
    assert all(r[head.index("new")] == "0" for r in rows), rows  # nothing simulated anew


def test_reproduce_only_typo_is_a_one_line_error(tmp_path, run_cli):
    """A misspelt --only used to run nothing and exit 0; now exit 2 naming the allowed folders."""
    rc, out, err = run_cli("reproduce", "--no-run", "--only", "fig16x", "--out", str(tmp_path))
    assert rc == 2
    assert err.count("\n") == 1 and "'fig16x'" in err and "fig16" in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # nothing written
