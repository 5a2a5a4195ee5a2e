"""Figures and the reproduction report from a synthetic results set (no simulation)."""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys

import pytest

from t3sim.reproduction import catalog
from t3sim.reproduction.report import compare_number, table_rows
from t3sim.reproduction.t3.metrics import metrics
from t3sim.reproduction.t3.numbers import NUMBERS
from tests.analysis.fakes import assert_same_metrics, fake_inputs, write_fake_results
from tests.conftest import REPO


@pytest.fixture(scope="module")
def fake_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    real = os.fsync
    os.fsync = lambda fd: None  # synthetic data: durability is not under test here
    try:
        write_fake_results(root, quick=True)
    finally:
        os.fsync = real
    return root


def _ink(png):
    """Fraction of non-white pixels and the number of distinct colours of a PNG (decoded, not its file size)."""
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(png)
    assert img.ndim == 3 and img.shape[2] in (3, 4), png
    rgb = (img[:, :, :3] * 255).round().astype(int)
    ink = float((rgb < 250).any(axis=2).mean())
    q = rgb // 16  # 16 levels per channel: antialiasing aside
    colours = int(np.count_nonzero(np.bincount((q[:, :, 0] * 256 + q[:, :, 1] * 16 + q[:, :, 2]).ravel(), minlength=4096)))
    return ink, colours


def test_every_figure_writes_csv_and_png(fake_root, tmp_path):
    inp = catalog.load_inputs(fake_root)
    drawn = catalog.draw_all(inp, tmp_path)
    for fig in catalog.FIGURES:
        suffixes = sorted(p.suffix for p in drawn[fig])
        assert suffixes == [".csv", ".png"], (fig, drawn[fig])
        rows = list(csv.DictReader((tmp_path / f"{fig}.csv").open()))
        assert rows, fig
        # a drawn chart: axes, text and coloured data on a white page (neither blank nor a solid block)
        ink, colours = _ink(tmp_path / f"{fig}.png")
        assert 0.02 < ink < 0.6 and colours >= 4, (fig, ink, colours)


def test_figures_drawn_on_two_processes_are_the_same_files(fake_root, tmp_path):
    """``t3sim reproduce -j 2`` draws on two forked processes: the same files, byte for byte, as drawn here."""
    inp = catalog.load_inputs(fake_root)
    here = catalog.draw_all(inp, tmp_path / "one")
    forked = catalog.draw_all(inp, tmp_path / "two", jobs=2)
    assert list(forked) == list(here) == list(catalog.FIGURES)
    for fig in catalog.FIGURES:
        assert [p.name for p in forked[fig]] == [p.name for p in here[fig]]
        for a, b in zip(here[fig], forked[fig]):
            assert a.read_bytes() == b.read_bytes(), (fig, a.name)


def test_fig16_and_fig14_values_are_the_inputs(fake_root, tmp_path):
    """The figure CSVs hold the speedups and errors computed independently here from the synthetic inputs."""
    from t3sim.reproduction.catalog import SPECS
    from t3sim.config.sweep import expand
    from tests.analysis.fakes import fake_summary

    spec = next(s for s in SPECS if s.results == "t3-sublayers")
    totals = {}
    for p in expand(spec.path, list(spec.quick)):
        w = p.config.workload
        totals[(w.model.name, w.sublayer, str(w.tp), p.config.scheme.kind)] = fake_summary(p.config)["total_us"]
    catalog.draw("fig16", catalog.load_inputs(fake_root), tmp_path)
    rows = list(csv.DictReader((tmp_path / "fig16.csv").open()))
    cases = {k[:3] for k in totals}
    assert sorted((r["model"], r["sublayer"], r["tp"]) for r in rows) == sorted(cases)
    for r in rows:
        key = (r["model"], r["sublayer"], r["tp"])
        seq = totals[key + ("sequential",)]
        assert float(r["sequential_us"]) == pytest.approx(seq, abs=5.1e-5)  # the CSV keeps 4 decimals
        for scheme in ("t3", "t3_mca", "ideal_gemm_rs_overlap", "ideal_rs_nmc"):
            want = 100 * (seq / totals[key + (scheme,)] - 1)
            assert float(r[f"{scheme}_speedup_pct"]) == pytest.approx(want, abs=5.1e-5), scheme
    catalog.draw("fig14", catalog.load_inputs(fake_root), tmp_path)
    rows = list(csv.DictReader((tmp_path / "fig14.csv").open()))
    expected = [(6, 50.6, 52.9), (12, 60.1, 65.6), (24, 93.4, 91.2)]  # fakes.write_fake_results
    assert [(float(r["size_mb"]), float(r["measured_us"]), float(r["simulated_us"])) for r in rows] == expected
    for r, (_, meas, sim) in zip(rows, expected):
        assert float(r["error_pct"]) == pytest.approx(100 * (sim / meas - 1), abs=5.1e-5)


def test_fig17_bandwidths_are_bytes_over_time(tmp_path):
    """Fig. 17's CSV from made-up DRAM accesses: each row's bandwidth is the bytes whose access completed in the
    row's time span over the span's length, computed here from the access times (not from the binned series the
    simulator stores); the rows tile the plotted window, first arrival to the GEMM's end (Sequential) or the fused
    GEMM-RS's end (T3), and ``t_norm`` is time over the isolated GEMM's time."""
    import numpy as np

    from t3sim.analysis.runs import Run
    from t3sim.reproduction.inputs import Inputs
    from t3sim.results.stats import Stats

    access_B, bin_ns, start_ns, last_ns = 64, 100, 250, 140_000
    columns = {"GEMM_reads_GBps": "compute_read", "GEMM_writes_GBps": "compute_write",
               "GEMM_updates_GBps": "compute_update", "RS_AG_reads_GBps": "comm_read",
               "RS_AG_writes_GBps": "comm_write", "RS_updates_GBps": "comm_update"}
    # (scheme, gemm_us, rs_us): windows of 898, 1148 and 1018 bins, more than fig17_rows' 400 plotted bins
    cases = (("sequential", 90.0, 30.0), ("t3", 95.0, 20.0), ("t3_mca", 92.0, 10.0))
    rng = np.random.default_rng(7)
    runs, done = [], {}
    for scheme, gemm_us, rs_us in cases:
        st = Stats()
        st.add("gpu0.hbm.bandwidth_over_time.bin_ns", float(bin_ns), "ns", "bin")
        st.add("gpu0.hbm.bandwidth_over_time.start_ns", float(start_ns), "ns", "start")
        for key in columns.values():  # completion times (ns) of each stream and kind's accesses
            t = rng.integers(start_ns, last_ns, size=int(rng.integers(2_000, 20_000)))
            done[scheme, key] = t
            counts = np.bincount((t - start_ns) // bin_ns)
            st.add(f"gpu0.hbm.bandwidth_over_time.{key}_GBps", (counts * access_B / bin_ns).tolist(), "GB/s", "x")
        summary = {"scheme": scheme, "gemm_us": gemm_us, "rs_us": rs_us, "ag_us": 5.0,
                   "total_us": gemm_us + rs_us + 5.0}
        runs.append(Run(tmp_path / scheme, "fig17", {}, summary, st.to_dict()))
    catalog.draw("fig17", Inputs({"fig17": runs}), tmp_path)
    rows = list(csv.DictReader((tmp_path / "fig17.csv").open()))
    for scheme, gemm_us, rs_us in cases:
        sel = [r for r in rows if r["scheme"] == scheme]
        end_ns = 1e3 * (gemm_us + (0.0 if scheme == "sequential" else rs_us))
        window_end = start_ns + math.ceil((end_ns - start_ns) / bin_ns) * bin_ns  # the bins that start before it
        width = round(float(sel[1]["time_us"]) * 1e3 - float(sel[0]["time_us"]) * 1e3)
        assert width % bin_ns == 0 and width > bin_ns  # whole bins, several per row (averaged)
        assert len(sel) == math.ceil((window_end - start_ns) / width)
        for i, r in enumerate(sel):
            lo = start_ns + i * width
            hi = min(lo + width, window_end)
            assert float(r["time_us"]) == pytest.approx((lo + hi) / 2e3, abs=1e-3)
            assert float(r["t_norm"]) == pytest.approx((lo + hi) / 2e3 / cases[0][1], abs=1e-4)
            for col, key in columns.items():
                t = done[scheme, key]
                want = np.count_nonzero((t >= lo) & (t < hi)) * access_B / (hi - lo)  # B/ns = GB/s
                assert float(r[col]) == pytest.approx(want, rel=1e-4, abs=1e-3), (scheme, i, col)


def test_pdf_and_svg_on_request(fake_root, tmp_path):
    paths = catalog.draw("fig16", catalog.load_inputs(fake_root), tmp_path, ("png", "pdf", "svg"))
    assert sorted(p.suffix for p in paths) == [".csv", ".pdf", ".png", ".svg"]


def test_plot_script_reads_results_only(fake_root, tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "experiments/fig15/plot.py"), "--results", str(fake_root),
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "fig15.png").is_file() and (tmp_path / "fig15.csv").is_file()
    r = subprocess.run([sys.executable, str(REPO / "experiments/fig15/plot.py"), "--results", str(tmp_path / "none")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "no results" in r.stderr


def test_every_experiment_folder_is_complete():
    for fig in catalog.FIGURES:
        d = REPO / "experiments" / fig
        assert (d / "README.md").is_file() and (d / "plot.py").is_file(), fig
        assert list(d.glob("*.yaml")) or (d / "study.py").is_file(), fig  # fused-scale: a study script's rows


def test_report_lists_every_stated_number(fake_root):
    from t3sim.commands.reproduce_cmd import reproduce

    path = reproduce(fake_root, quick=True, run=False)
    text = path.read_text()
    t3_text, flux_text = text.split("\n## FLUX (Chang et al. 2024)")
    from t3sim.reproduction.flux import numbers as flux_numbers
    from t3sim.reproduction.t3.explanations import NOT_REPRODUCIBLE

    with (fake_root / "reproduction.csv").open(newline="") as fh:
        checked = {r["key"]: r for r in csv.DictReader(fh)}
    for part, numbers in ((t3_text, NUMBERS), (flux_text, flux_numbers.NUMBERS)):
        table = [ln for ln in part.splitlines() if ln.startswith("| ") and
                 (ln.split("|")[1].strip()[:1].isdigit() or ln.split("|")[1].strip() == "abstract")]
        assert len(table) == len(numbers)
        for n, row in zip(numbers, table):  # the table lists the numbers in order
            cells = [c.strip() for c in row.split("|")]
            assert cells[3] == '"' + n.quote.replace("|", "\\|") + '"', row
            c = checked[n.key]
            if "(!)" in cells[6] or n.key in NOT_REPRODUCIBLE:  # flagged: its checked cause, or "not yet explained"
                assert cells[7] == c["explanation"].replace("|", "\\|").replace("\n", " "), row
                assert (c["explained"] == "True") != cells[7].startswith("not yet explained"), row
                assert "{" not in cells[7] and "}" not in cells[7], row  # every quoted number was filled in
            else:
                assert cells[7] == "" and c["explained"] == "", row
    assert (fake_root / "figures" / "fig16.png").is_file()
    assert "Quick mode" in text


def test_analysis_never_imports_simulation_code():
    """Of t3sim.schemes, only its pure config modules (the package faces, each family's options, FiCCO's
    heuristic) may load."""
    code = ("import sys, t3sim.reproduction.build, t3sim.analysis.overlap, t3sim.analysis.validation_copy, "
            "t3sim.analysis.advise, t3sim.analysis.decision_map, t3sim.analysis.decision_map_plot; "
            "pure = lambda m: m.count('.') <= 2 or m.endswith(('.options', '.ficco.heuristic')); "
            "bad = [m for m in sys.modules if m.split('.')[:2] in (['t3sim', s] for s in "
            "('sim', 'system', 'memory', 'compute', 'cache', 'dma', 'schemes', 'collectives', 'interconnect'))"
            " and not (m.startswith('t3sim.schemes') and pure(m))]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_full_fake_set_gives_every_reproducible_number():
    inp = fake_inputs(quick=False)  # every full-size point, synthetic numbers, in memory
    inp.validation_csv = None
    values = metrics(inp)
    rows = {r["key"]: r for r in table_rows(values)}
    missing = [k for k, r in rows.items() if r["t3sim"] == "not run" and k != "s511_rs_error"]
    assert missing == []
    assert rows["s24_comm_future_max"]["t3sim"] == "n/a"
    from t3sim.reproduction import catalog
    from t3sim.reproduction.flux import numbers as flux_numbers

    fv = flux_numbers.metrics(catalog.flux_runs(inp))  # every FLUX number has a value from the full point set
    assert [n.key for n in flux_numbers.NUMBERS if not math.isfinite(fv[n.key])] == []


def test_flux_metrics_follow_the_runs():
    """FLUX's E and its speedup over TE are computed from the runs (FLUX Eqs. 1-2): on the synthetic set FLUX
    hides 85 % of the RS (its rs is 0.15 of the non-overlapped one) at 1.03x the GEMM."""
    from t3sim.reproduction import catalog
    from t3sim.reproduction.flux import op as flux_op

    inp = fake_inputs(quick=False)
    rows = flux_op.flux_rows(catalog.flux_runs(inp))
    for r in rows:
        assert r["ect_us"] == pytest.approx(r["total_us"] - r["gemm_alone_us"])
        if r["method"] == "non-overlap":
            assert r["overlap_efficiency"] == 0.0
    flux = [r for r in flux_op.best_rows(rows) if r["method"] == "FLUX" and r["direction"] == "gemm_rs"]
    assert flux and all(r["variant"].startswith("flux_rs") for r in flux)
    one = flux[0]
    seq = next(r for r in rows if r["method"] == "non-overlap" and
               (r["system"], r["direction"], r["m"]) == (one["system"], one["direction"], one["m"]))
    assert one["overlap_efficiency"] == pytest.approx(1 - (one["total_us"] - seq["gemm_us"]) / (seq["total_us"] - seq["gemm_us"]))


def test_flux_metrics_from_the_figure_table_equal_those_from_the_runs(tmp_path):
    """``flux-op.csv`` read back (what a snapshot's ``figures/`` holds) gives the runs' values, so a FLUX re-run
    re-plotted into the snapshot updates its section (snapshot.FROM_TABLES); on the committed snapshot the values
    from its table are those its report printed."""
    from t3sim.analysis.tables import read_table, read_tables
    from t3sim.reproduction import catalog, snapshot
    from t3sim.reproduction.flux import numbers as flux_numbers
    from t3sim.reproduction.flux import op as flux_op

    inp = fake_inputs(quick=False)
    runs = catalog.flux_runs(inp)
    csv_path = next(p for p in flux_op.figure(runs, tmp_path) if p.suffix == ".csv")
    got = flux_numbers.metrics_from_tables({"flux-op": read_table(csv_path)})
    want = flux_numbers.metrics(runs)
    assert_same_metrics(got, want)
    assert snapshot.FROM_TABLES["flux"] is flux_numbers.metrics_from_tables
    snap = REPO / "experiments" / "reproduction"
    printed = {}
    with (snap / "reproduction.csv").open(newline="") as fh:
        for row in csv.DictReader(fh):
            printed[row["key"]] = row
    tab = flux_numbers.metrics_from_tables(read_tables(snap / "figures"))
    by_key = {n.key: n for n in flux_numbers.NUMBERS}
    for k, v in tab.items():
        assert snapshot.value_of(by_key[k], printed[k]["t3sim"], printed[k]["diff_pts"], printed[k].get("diff")) \
            == pytest.approx(v, rel=1e-4, abs=1e-6), k


@pytest.mark.parametrize("kind,paper,value,diff", [
    ("pct", 20, 27.0, 7.0), ("speedup_x", 1.67, 1.60, -7.0), ("reduction_x", 2.0, 4.0, 25.0),
    ("range_pct", 40, 47.0, 2.0), ("range_pct", 40, 42.0, 0.0), ("range_pct", 40, 30.0, -10.0)])
def test_compare_number_differences(kind, paper, value, diff):
    from t3sim.reproduction.stated import PaperNumber

    n = PaperNumber("x", "6.1", "q", paper, kind, "fig16", hi=45 if kind == "range_pct" else None)
    _, _, d, flagged = compare_number(n, value)
    assert d == pytest.approx(diff)
    assert flagged == (abs(diff) > 5)


def test_compare_direction_and_missing():
    from t3sim.reproduction.stated import PaperNumber

    n = PaperNumber("x", "7.5", "q", "higher", "direction", "fig20")
    assert compare_number(n, 3.0)[1] == "agrees" and not compare_number(n, 3.0)[3]
    assert compare_number(n, -1.0)[1] == "disagrees" and compare_number(n, -1.0)[3]
    assert compare_number(n, math.nan)[0] == "not run"


def test_paper_numbers_table_is_well_formed():
    keys = [n.key for n in NUMBERS]
    assert len(keys) == len(set(keys))
    assert {n.kind for n in NUMBERS} <= {"pct", "speedup_x", "reduction_x", "range_pct", "direction"}
    assert {n.section for n in NUMBERS} >= {"2.4", "3.2.1", "6.1.1", "6.1.2", "6.1.3", "6.2", "6.3", "6.4", "7.5"}
