"""Shared figure output: every figure writes its data as CSV and its plot as PNG (PDF/SVG on request)."""

from __future__ import annotations

import argparse
import csv
import io
import math
from pathlib import Path
from typing import Dict, List, Mapping, Sequence

from t3sim.analysis.runs import SCHEME_STYLES, scheme_color
from t3sim.analysis.tables import write_csv_atomic

FORMATS = ("png", "pdf", "svg")
class _SchemeColors(Mapping):
    """One colour per scheme, kept across figures: each scheme's registered colour as its results recorded
    it (:data:`t3sim.analysis.runs.SCHEME_STYLES`); grey for a kind no result named."""

    def __getitem__(self, kind: str) -> str:
        return scheme_color(kind)

    def __iter__(self):
        return iter(SCHEME_STYLES)

    def __len__(self) -> int:
        return len(SCHEME_STYLES)

    def get(self, kind, default=None):
        return scheme_color(kind)


SCHEME_COLORS = _SchemeColors()
PART_COLORS = {"GEMM": "#1f77b4", "RS": "#d62728", "AG": "#ff7f0e", "Other": "#bdbdbd"}


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (unless a notebook already chose one)."""
    import matplotlib  # lazy: matplotlib is slow to import

    if "inline" not in str(matplotlib.get_backend()).lower():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def rows_csv(rows: Sequence[Mapping], columns: Sequence[str] | None = None) -> str:
    cols = list(columns or (rows[0].keys() if rows else []))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    return buf.getvalue()


def save_figure(fig, out_dir: str | Path, stem: str, formats: Sequence[str] = ("png",)) -> List[Path]:
    """Write ``<stem>.<fmt>`` under ``out_dir`` for each format (150 dpi, tight); close ``fig``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        if fmt not in FORMATS:
            raise ValueError(f"unknown figure format {fmt!r}; allowed: {', '.join(FORMATS)}")
        p = out / f"{stem}.{fmt}"
        fig.savefig(p, dpi=150, bbox_inches="tight")
        paths.append(p)
    pyplot().close(fig)
    return paths


def save(fig, rows: Sequence[Mapping], out_dir: str | Path, stem: str,
         formats: Sequence[str] = ("png",), columns: Sequence[str] | None = None) -> List[Path]:
    """Write ``<stem>.csv`` (the plotted numbers) and ``<stem>.<fmt>`` for each format; close ``fig``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_csv_atomic(out / f"{stem}.csv", rows_csv(rows, columns))]
    if fig is not None:
        paths += save_figure(fig, out, stem, formats)
    return paths


def plot_args(description: str, default_out: str) -> argparse.Namespace:
    """Command-line arguments shared by the experiments' plot scripts."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--results", default="results", help="results root (default: results/)")
    p.add_argument("--out", default=default_out, help=f"output folder (default: {default_out})")
    p.add_argument("--formats", default="png", help="comma-separated figure formats: png, pdf, svg (default: png)")
    a = p.parse_args()
    a.formats = [x.strip() for x in a.formats.split(",") if x.strip()]
    return a


def report(paths: Sequence[Path]) -> None:
    for p in paths:
        print(p)


def grouped_bars(ax, groups: Sequence[str], series: Dict[str, Sequence[float]], colors: Mapping[str, str],
                 labels: Mapping[str, str] | None = None, width: float = 0.8) -> None:
    """Side-by-side bars: one group per x tick, one bar per series (NaN bars skipped)."""
    n = max(len(series), 1)
    w = width / n
    for i, (name, vals) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * w for g in range(len(groups))]
        keep = [(x, v) for x, v in zip(xs, vals) if v is not None and math.isfinite(v)]
        if keep:
            ax.bar([x for x, _ in keep], [v for _, v in keep], w, color=colors.get(name),
                   label=(labels or {}).get(name, name))
    ax.set_xticks(range(len(groups)))
    crowded = len(groups) > 8  # many cases: slant the labels so neighbours do not run into each other
    ax.set_xticklabels(groups, fontsize=7, rotation=35 if crowded else 0, ha="right" if crowded else "center",
                       rotation_mode="anchor")
