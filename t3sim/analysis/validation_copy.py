"""GEMM / copy contention CSVs: reading, comparing simulated with measured, plotting (pure).

Nothing here simulates (that is :mod:`t3sim.validation.contention`). CSV kind ``copy_contention``
(columns ``CONTENTION_COLUMNS`` of :mod:`t3sim.analysis.validation`, detected from the header by
:func:`t3sim.analysis.validation.detect_kind`): one GEMM (``M x K`` by ``K x N``, bf16) timed alone
(``gemm_alone_us``) and while background copies run (``gemm_with_<bg>_us``), and the copies' slowdown
(``copy_slowdown_<bg>``: copy time beside the GEMMs over copy time alone), for each background
``bg`` of :data:`BACKGROUNDS` (H200 measurements, experiments/validation/README.md: gemm_copy_contention).

Derived quantities (all dimensionless): GEMM slowdown ``gemm_with / gemm_alone``; per-value error
``sim / meas - 1``; geomean error as in :mod:`t3sim.analysis.validation` (geometric mean of
``max(|error|, 1e-4)``). Rows are split into the *fit* set (the rows any fitted parameter was set
from: ``fit_tp`` with background ``fit_background``) and the *check* set (everything else).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from t3sim.analysis.validation import CONTENTION_BACKGROUNDS as BACKGROUNDS
from t3sim.analysis.validation import (MeasuredRow, geomean_error, log_log_axes,
                                      save_figure, write_records_csv)
from t3sim.analysis.validation_settings import NotSimulated, not_simulated_markdown, not_simulated_text


@dataclass
class ContentionComparison:
    """Simulated beside measured GEMM / copy contention.

    ``sim[i]`` holds row ``i``'s simulated ``gemm_alone_us``, ``gemm_with_<bg>_us`` and
    ``copy_slowdown_<bg>`` (the same keys as the CSV's columns); ``wall_s[i]`` the simulations' wall time.
    """

    system: str
    rows: List[MeasuredRow]
    sim: List[Dict[str, float]]
    wall_s: List[float] = field(default_factory=list)
    backgrounds: Sequence[str] = BACKGROUNDS
    fit_tp: Optional[int] = 8
    fit_background: str = "d2d1"
    notes: Dict[str, float] = field(default_factory=dict)
    #: measured (row, background) values the simulation has no background for, each with its reason
    not_simulated: List[NotSimulated] = field(default_factory=list)

    kind = "copy_contention"

    # ------------------------------------------------------------------ values
    def measured(self, i: int, key: str) -> Optional[float]:
        """A measured value (None: the CSV cell is empty, not measured)."""
        f = self.rows[i].fields
        if key.startswith("gemm_slowdown_"):
            b = key[len("gemm_slowdown_"):]
            w = f[f"gemm_with_{b}_us"]
            return None if w is None else float(w) / float(f["gemm_alone_us"])
        v = f[key]
        return None if v is None else float(v)

    def simulated(self, i: int, key: str) -> float:
        s = self.sim[i]
        if key.startswith("gemm_slowdown_"):
            b = key[len("gemm_slowdown_"):]
            return s[f"gemm_with_{b}_us"] / s["gemm_alone_us"]
        return float(s[key])

    def is_fit(self, i: int, bg: str) -> bool:
        return bg == self.fit_background and self.fit_tp is not None and int(self.rows[i].fields["tp"]) == self.fit_tp

    def metric(self, what: str, bgs: Optional[Sequence[str]] = None, subset: str = "all") -> Optional[float]:
        """Geomean error of ``what`` (``gemm_slowdown``, ``copy_slowdown``, ``gemm_with``) over rows and ``bgs``.

        ``subset``: ``all``, ``fit`` or ``check`` (module doc); None when nothing is selected.
        """
        sims, meas = [], []
        for b in bgs or self.backgrounds:
            key = f"gemm_with_{b}_us" if what == "gemm_with" else f"{what}_{b}"
            for i in range(len(self.rows)):
                fit = self.is_fit(i, b)
                if subset == "fit" and not fit or subset == "check" and fit:
                    continue
                m = self.measured(i, key)
                if m is None:
                    continue
                sims.append(self.simulated(i, key))
                meas.append(m)
        return geomean_error(sims, meas) if sims else None

    # ------------------------------------------------------------------ output
    def records(self) -> List[Dict[str, object]]:
        out = []
        for i, r in enumerate(self.rows):
            f = r.fields
            rec: Dict[str, object] = {k: f[k] for k in ("model", "sublayer", "tp", "M", "N", "K")}
            rec["gemm_alone_meas_us"] = f["gemm_alone_us"]
            rec["gemm_alone_sim_us"] = round(self.sim[i]["gemm_alone_us"], 2)
            for b in self.backgrounds:
                for key, name in ((f"gemm_with_{b}_us", f"gemm_{b}"), (f"gemm_slowdown_{b}", f"gemm_slowdown_{b}"),
                                  (f"copy_slowdown_{b}", f"copy_slowdown_{b}")):
                    m, s = self.measured(i, key), self.simulated(i, key)
                    rec[f"{name}_meas"] = None if m is None else round(m, 4)
                    rec[f"{name}_sim"] = round(s, 4)
                    rec[f"{name}_err"] = None if m is None else round(s / m - 1, 4)
            if self.wall_s:
                rec["wall_s"] = round(self.wall_s[i], 1)
            out.append(rec)
        return out

    def summary(self) -> Dict[str, object]:
        d2d = [b for b in self.backgrounds if b.startswith("d2d")]
        s: Dict[str, object] = {"kind": self.kind, "system": self.system, "rows": len(self.rows)}
        for what in ("gemm_slowdown", "copy_slowdown", "gemm_with"):
            s[f"{what}_geomean_error"] = _r(self.metric(what))
            s[f"{what}_geomean_error_d2d"] = _r(self.metric(what, d2d))
            for b in self.backgrounds:
                s[f"{what}_geomean_error_{b}"] = _r(self.metric(what, [b]))
            s[f"{what}_geomean_error_fit"] = _r(self.metric(what, subset="fit"))
            s[f"{what}_geomean_error_check"] = _r(self.metric(what, subset="check"))
        s.update({k: _r(v) for k, v in self.notes.items()})
        return s

    def table(self) -> str:
        """Plain text: per row and background the GEMM times, GEMM slowdowns and copy slowdowns."""
        head = ["row", "bg", "GEMM meas", "GEMM sim", "slowdown meas", "sim", "err", "copy sd meas", "sim", "err"]
        cells = []
        for i, r in enumerate(self.rows):
            f = r.fields
            cells.append([f"{f['sublayer']} TP{f['tp']} K={f['K']}", "alone", f"{f['gemm_alone_us']:.1f}",
                          f"{self.sim[i]['gemm_alone_us']:.1f}", "", "", "", "", "", ""])
            for b in self.backgrounds:
                gm, gs = self.measured(i, f"gemm_with_{b}_us"), self.simulated(i, f"gemm_with_{b}_us")
                sm, ss = self.measured(i, f"gemm_slowdown_{b}"), self.simulated(i, f"gemm_slowdown_{b}")
                cm, cs = self.measured(i, f"copy_slowdown_{b}"), self.simulated(i, f"copy_slowdown_{b}")
                tag = b + (" (fit)" if self.is_fit(i, b) else "")
                na = "n/a"
                cells.append(["", tag, na if gm is None else f"{gm:.1f}", f"{gs:.1f}", na if sm is None else f"{sm:.2f}",
                              f"{ss:.2f}", na if sm is None else f"{ss / sm - 1:+.1%}", na if cm is None else f"{cm:.3f}",
                              f"{cs:.3f}", na if cm is None else f"{cs / cm - 1:+.1%}"])
        w = [max(len(c[j]) for c in [head, *cells]) for j in range(len(head))]
        line = lambda c: "  ".join(x.ljust(w[j]) if j < 2 else x.rjust(w[j]) for j, x in enumerate(c))  # noqa: E731
        s = self.summary()
        pct = lambda v: "n/a" if v is None else f"{v:.1%}"  # noqa: E731
        foot = [f"GEMM slowdown geomean error {pct(s['gemm_slowdown_geomean_error'])} over all "
                f"(d2d {pct(s['gemm_slowdown_geomean_error_d2d'])}; fit rows {pct(s['gemm_slowdown_geomean_error_fit'])}, "
                f"check rows {pct(s['gemm_slowdown_geomean_error_check'])})",
                f"copy slowdown geomean error {pct(s['copy_slowdown_geomean_error'])} over all "
                f"(d2d {pct(s['copy_slowdown_geomean_error_d2d'])}; fit rows {pct(s['copy_slowdown_geomean_error_fit'])}, "
                f"check rows {pct(s['copy_slowdown_geomean_error_check'])})",
                f"GEMM time (with copies) geomean error {pct(s['gemm_with_geomean_error'])}; on {self.system}"]
        return ("\n".join([line(head), "  ".join("-" * x for x in w), *map(line, cells), *foot]) + "\n"
                + not_simulated_text(self.not_simulated))

    def markdown(self, source: str = "") -> str:
        """The comparison as a Markdown page: per row and background the GEMM time, GEMM slowdown and copy
        slowdown, measured / simulated (error), then the geomean errors; deterministic (no wall times)."""
        pair = lambda m, s, fmt: (f"n/a / {s:{fmt}}" if m is None  # noqa: E731
                                  else f"{m:{fmt}} / {s:{fmt}} ({s / m - 1:+.1%})")
        lines = [f"# GEMM beside background copies: simulated vs measured on {self.system}", "",
                 f"Generated by `t3sim validate`{f' from `{source}`' if source else ''}; do not edit "
                 "(re-run the command to update). Times in us; measured / simulated (error).", "",
                 "| sub-layer | TP | K | alone | bg | GEMM with | GEMM slowdown | copy slowdown |",
                 "|---|---|---|---|---|---|---|---|"]
        for i, r in enumerate(self.rows):
            f = r.fields
            for j, b in enumerate(self.backgrounds):
                head = (f"| {f['sublayer']} | {f['tp']} | {f['K']} | {f['gemm_alone_us']:.1f} / "
                        f"{self.sim[i]['gemm_alone_us']:.1f}" if j == 0 else "|  |  |  |  ")
                cells = [pair(self.measured(i, f"gemm_with_{b}_us"), self.simulated(i, f"gemm_with_{b}_us"), ".1f"),
                         pair(self.measured(i, f"gemm_slowdown_{b}"), self.simulated(i, f"gemm_slowdown_{b}"), ".2f"),
                         pair(self.measured(i, f"copy_slowdown_{b}"), self.simulated(i, f"copy_slowdown_{b}"), ".3f")]
                lines.append(f"{head} | {b}{' (fit)' if self.is_fit(i, b) else ''} | " + " | ".join(cells) + " |")
        s = self.summary()
        pct = lambda v: "n/a" if v is None else f"{v:.1%}"  # noqa: E731
        lines += ["", "| metric | all | D2D | fit rows | check rows |", "|---|---|---|---|---|"]
        for what, name in (("gemm_slowdown", "GEMM slowdown"), ("copy_slowdown", "copy slowdown"),
                           ("gemm_with", "GEMM time beside copies")):
            lines.append(f"| {name} geomean error | {pct(s[f'{what}_geomean_error'])} | "
                         f"{pct(s[f'{what}_geomean_error_d2d'])} | {pct(s[f'{what}_geomean_error_fit'])} | "
                         f"{pct(s[f'{what}_geomean_error_check'])} |")
        lines += ["", *not_simulated_markdown(self.not_simulated)] if self.not_simulated else []
        return "\n".join(lines) + "\n"

    def write_csv(self, path) -> Path:
        return write_records_csv(self.records(), path)


def _r(v: Optional[float]) -> Optional[float]:
    return None if v is None else round(v, 5)


def plot_contention(cmp: ContentionComparison, path, title: Optional[str] = None) -> Path:
    """Simulated vs measured GEMM slowdown and copy slowdown (two panels, log-log, y = x dotted)."""
    import matplotlib  # lazy: matplotlib is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"d2d1": "tab:blue", "d2d2": "tab:red", "pcie": "tab:green"}
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 4.2))
    for ax, what, label in ((axes[0], "gemm_slowdown", "GEMM slowdown"), (axes[1], "copy_slowdown", "copy slowdown")):
        xs, ys = [], []
        for b in cmp.backgrounds:
            pairs = [(cmp.measured(i, f"{what}_{b}"), cmp.simulated(i, f"{what}_{b}")) for i in range(len(cmp.rows))]
            m = [a for a, _ in pairs if a is not None]
            s = [b_ for a, b_ in pairs if a is not None]
            ax.scatter(m, s, s=24, color=colors.get(b, "k"), label=b, zorder=3)
            xs += m
            ys += s
        lo, hi = min(xs + ys) / 1.15, max(xs + ys) * 1.15
        ax.plot([lo, hi], [lo, hi], ":", color="k", lw=1.2)
        log_log_axes(ax, lo, hi, (1.0, 1.5, 2.0, 3.0, 5.0, 7.0))
        err = cmp.metric(what)
        ax.set_title(f"{label}: geomean error {err:.1%}", fontsize=9)
        ax.set_xlabel(f"measured {label}")
        ax.set_ylabel(f"simulated {label}")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7)
    fig.suptitle(title or f"GEMM / copy contention on {cmp.system}", fontsize=10)
    return save_figure(fig, path)
