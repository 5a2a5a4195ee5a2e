"""Docs that quote numbers quote the committed results they come from. Nothing here is timed:
the README's wall times must be what ``docs/performance.md``'s bench table records, and the
validation pages must be what ``t3sim validate`` generates from the committed result CSVs."""

from __future__ import annotations

import re

import pytest

from t3sim.analysis.validation import read_comparison
from tests.conftest import REPO


def latest_bench_table():
    """The ``t3sim bench`` table of docs/performance.md (the case table with wall times; the last, should there be
    several): case name -> {column: cell}."""
    text = (REPO / "docs/performance.md").read_text()
    tables = re.findall(r"(\| case \| wall s \|[^\n]*\n\|[-:| ]+\|\n(?:\|[^\n]*\n)+)", text)
    assert tables, "no case table in docs/performance.md"
    lines = tables[-1].strip().splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].split()[0]] = dict(zip(head, cells))
    return rows


def test_readme_wall_times_are_the_latest_bench_results():
    readme = (REPO / "README.md").read_text()
    rows = latest_bench_table()
    quoted = re.findall(r"(\d+(?:\.\d+)?) s\b[^`]*?bench case `([\w.-]+)`", readme.replace("\n", " "))
    assert {case for _, case in quoted} >= {"fc2-tp8-sequential", "fc2-tp8-1k"}, quoted
    for value, case in quoted:
        assert case in rows, f"README quotes bench case {case!r}, which the bench table of docs/performance.md lacks"
        assert float(value) == pytest.approx(float(rows[case]["wall s"]), abs=0.05), (case, value, rows[case]["wall s"])
    sim = re.search(r"simulation of (\d+(?:\.\d+)?) us of three kernels", readme.replace("\n", " "))
    assert sim and sim.group(1) == rows["fc2-tp8-sequential"]["simulated us"]


def test_readme_full_size_range_is_the_bench_range():
    readme = (REPO / "README.md").read_text().replace("\n", " ")
    lo, hi = map(int, re.search(r"full-size sub-layer cases take (\d+)-(\d+) s", readme).groups())
    walls = [float(r["wall s"]) for r in latest_bench_table().values() if "full size" in r["case"]]
    assert len(walls) == 5  # one per scheme
    assert (lo, hi) == (int(min(walls)), round(max(walls)))


@pytest.mark.parametrize("stem", ["reduce_scatter_4gpu", "gemm_calibration", "overlap_4gpu"])
def test_validation_pages_are_generated_from_the_committed_csv(stem):
    """``t3sim validate`` writes ``<stem>.md`` from the ``<stem>.csv`` it just wrote; the committed pair agrees."""
    d = REPO / "experiments/validation/results"
    page = read_comparison(d / f"{stem}.csv", "h200-4gpu").markdown(f"{stem}.csv")
    assert (d / f"{stem}.md").read_text() == page


def test_validation_readme_quotes_the_generated_geomeans():
    readme = (REPO / "experiments/validation/README.md").read_text()
    d = REPO / "experiments/validation/results"
    for stem in ("reduce_scatter_4gpu", "gemm_calibration"):
        cmp = read_comparison(d / f"{stem}.csv", "h200-4gpu")
        assert f"results/{stem}.md" in readme
        assert f"geomean error {cmp.summary()['geomean_error']:.1%}" in readme, stem


def test_readme_command_table_lists_every_command():
    """Every ``t3sim`` command (the CLI's subcommands) has a row in the README's command table."""
    from t3sim.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    rows = [ln for ln in (REPO / "README.md").read_text().splitlines() if ln.startswith("| `t3sim ")]
    for name in sub.choices:
        assert any(ln.startswith(f"| `t3sim {name} ") or ln.startswith(f"| `t3sim {name}`") for ln in rows), name
