"""Validation against hardware: measured CSVs, error metrics and the Fig. 14-style plot (pure).

Nothing here simulates (that is :mod:`t3sim.validation`); this module
reads and checks measured data, compares simulated with measured times and
draws the comparison.

Measured CSV kinds (detected from the header):

* ``collective``: ``collective,gpus,size_mb,dtype,median_us`` -- one collective
  (``reduce_scatter``, ``all_reduce``, ``all_gather``) over ``gpus`` GPUs of an
  array of ``size_mb`` MiB (2^20 B) per GPU in ``dtype``; measured median
  time in microseconds.
* ``gemm``: ``model,sublayer,tp,M,N,K,dtype,median_us`` -- one ``M x K`` by
  ``K x N`` GEMM on one GPU; measured median time in microseconds.
* ``overlap``: ``model,sublayer,tp,M,N,K,gemm_us,rs_us,sequential_us,concurrent_independent_us,
  chunked_decomposition_us`` -- a GEMM and a ``tp``-GPU reduce-scatter of its output, alone, in sequence,
  concurrently and chunked (H200 measurements, experiments/validation/README.md; bf16, or a ``dtype`` column). Each measured
  column becomes one row (``what`` = gemm, rs, sequential, concurrent, chunked), so every column is compared
  and :meth:`Comparison.summary_by` gives the errors per column.
* ``copy_contention``: ``model,sublayer,tp,M,N,K,gemm_alone_us,gemm_with_<bg>_us...,copy_slowdown_<bg>...``
  for ``bg`` in d2d1, d2d2, pcie -- one bf16 GEMM alone and beside background copies
  (:mod:`t3sim.analysis.validation_copy`); ``measured_us`` is ``gemm_alone_us``; an empty cell
  (other than ``gemm_alone_us``) means not measured. Any ``gemm_with_<bg>_us`` column makes one (the
  shape and ``gemm_alone_us`` required); backgrounds other than these are reported, not simulated.

Optional setting columns (``nccl_algo``, ``nccl_proto``, ``nccl_choice`` of collective rows; ``op``,
``scheme``, ``pair_us``, ``ag_us`` of overlap rows) and which rows are therefore not simulated, with the
reason: :mod:`t3sim.analysis.validation_settings`.

Error definitions (all dimensionless; ``s`` simulated, ``m`` measured):

* per-row error ``e_i = s_i / m_i - 1`` (signed; +0.05 = simulation 5 % slow);
* **geomean error** ``exp(mean_i ln max(|e_i|, 1e-4))``: the geometric mean of
  the per-row absolute errors -- our reading of the T3 paper's "6 % geomean
  error versus the ideal dotted line" (Sec. 5.1.1, Fig. 14): each point's
  relative distance from the ideal line, geomean over sizes. Rows are floored
  at 0.01 % so that one exact row does not make the geomean 0;
* **log-ratio error** ``exp(mean_i |ln(s_i / m_i)|) - 1``: the geometric mean
  of each point's multiplicative distance from ``y = x`` (``max(s/m, m/s)``),
  minus one. Large misses dominate it and small ones cannot pull it toward 0;
  reported beside it;
* **geomean bias** ``exp(mean_i ln(s_i / m_i)) - 1``: the signed systematic
  offset (errors of opposite sign cancel).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from t3sim.analysis.validation_settings import (OVERLAP_EXTRA, PAIR_COLUMN, NotSimulated, contention_backgrounds,
                                               group_key, is_contention_header, is_extended_overlap,
                                               not_simulated_markdown, not_simulated_text, setting_fields,
                                               setting_label)
from t3sim.config.loader import read_text
from t3sim.config.workload import DTYPE_BYTES
from t3sim.errors import InputError
from t3sim.results.store import read_csv

COLLECTIVE_COLUMNS = ("collective", "gpus", "size_mb", "dtype", "median_us")
GEMM_COLUMNS = ("model", "sublayer", "tp", "M", "N", "K", "dtype", "median_us")
OVERLAP_COLUMNS = ("model", "sublayer", "tp", "M", "N", "K", "gemm_us", "rs_us", "sequential_us",
                   "concurrent_independent_us", "chunked_decomposition_us")
#: overlap row ``what`` -> its measured column (t3sim.validation.overlap simulates each)
OVERLAP_MEASURED = {"gemm": "gemm_us", "rs": "rs_us", "sequential": "sequential_us",
                    "concurrent": "concurrent_independent_us", "chunked": "chunked_decomposition_us"}
#: GEMM alone and beside background copies (t3sim.analysis.validation_copy); bf16
CONTENTION_BACKGROUNDS = ("d2d1", "d2d2", "pcie")
CONTENTION_COLUMNS = ("model", "sublayer", "tp", "M", "N", "K", "gemm_alone_us",
                      *(f"gemm_with_{b}_us" for b in CONTENTION_BACKGROUNDS),
                      *(f"copy_slowdown_{b}" for b in CONTENTION_BACKGROUNDS))
KINDS = {"collective": COLLECTIVE_COLUMNS, "gemm": GEMM_COLUMNS, "overlap": OVERLAP_COLUMNS,
         "copy_contention": CONTENTION_COLUMNS}
COLLECTIVES = ("reduce_scatter", "all_reduce", "all_gather")
#: each kind's heading in the generated Markdown page
TITLES = {"collective": "Collectives", "gemm": "GEMM", "overlap": "GEMM and reduce-scatter, alone and overlapped",
          "copy_contention": "GEMM beside background copies"}


@dataclass(frozen=True)
class MeasuredRow:
    """One measured row: ``where`` is ``file:line``; ``fields`` are typed (ints, floats, names)."""

    where: str
    fields: Dict[str, object]
    measured_us: float

    def label(self) -> str:
        f = self.fields
        setting = setting_label(f)
        tail = f" [{setting}]" if setting else ""
        if "what" in f:
            return f"{f['model']} {f['sublayer']} TP{f['tp']} {f['M']}x{f['N']}x{f['K']} {f['what']}{tail}"
        if "collective" in f:
            return f"{f['collective']} {f['gpus']}x {f['size_mb']:g} MiB {f['dtype']}{tail}"
        return f"{f['model']} {f['sublayer']} TP{f['tp']} {f['M']}x{f['N']}x{f['K']} {f['dtype']}"


def detect_kind(header: Sequence[str], where: str) -> str:
    """``collective`` or ``gemm`` from a CSV header; :class:`InputError` naming the missing columns."""
    cols = [c.strip() for c in header]
    for kind in ("overlap", "copy_contention", "collective", "gemm"):  # overlap first: its header also holds the GEMM's columns
        need = KINDS[kind]
        if all(c in cols for c in need) or kind == "copy_contention" and is_contention_header(cols):
            return kind
    best = min(KINDS.values(), key=lambda need: sum(c not in cols for c in need))
    missing = [c for c in best if c not in cols]
    raise InputError(where, f"header {cols} (missing {', '.join(missing)})",
                     " or ".join(f"columns {','.join(need)}" for need in KINDS.values()))


def _typed(value: str, kind: type, name: str, where: str, minimum: Optional[float] = None) -> object:
    text = value.strip()
    try:
        v = kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise InputError(where, f"{name}={text!r}", what) from None
    if kind is float and not math.isfinite(v):
        raise InputError(where, f"{name}={text!r}", "a finite number")
    if minimum is not None and v < minimum:
        raise InputError(where, f"{name}={text!r}", f"{'an integer' if kind is int else 'a number'} >= {minimum:g}")
    return v


def _positive(value: str, name: str, where: str) -> float:
    v = _typed(value, float, name, where)
    if v <= 0:
        raise InputError(where, f"{name}={value.strip()!r}", "a number > 0")
    return v


def _overlap_shape(r: Dict[str, str], where: str) -> Dict[str, object]:
    """The typed shape fields of an overlap row (model, sub-layer, TP, dtype, M, N, K)."""
    dtype = (r.get("dtype") or "bf16").strip()
    if dtype not in DTYPE_BYTES:
        raise InputError(where, f"dtype={dtype!r}", ", ".join(DTYPE_BYTES))
    f: Dict[str, object] = {"model": r["model"].strip(), "sublayer": r["sublayer"].strip(),
                            "tp": _typed(r["tp"], int, "tp", where, 2), "dtype": dtype}
    for dim in ("M", "N", "K"):
        f[dim] = _typed(r[dim], int, dim, where, 1)
    return f


def _parse_overlap(r: Dict[str, str], where: str) -> List[MeasuredRow]:
    """One overlap CSV row as one :class:`MeasuredRow` per measured column (module doc). With the optional
    columns (:mod:`t3sim.analysis.validation_settings`) an empty cell is "not measured", ``ag_us`` gives
    ``what = ag`` and a non-sequential scheme's ``pair_us`` gives ``what`` = the scheme."""
    f = _overlap_shape(r, where)
    if not is_extended_overlap(list(r)):
        return [MeasuredRow(where, {**f, "what": what}, _positive(r[col], col, where))
                for what, col in OVERLAP_MEASURED.items()]
    f.update(setting_fields(r, where))
    cols = {**OVERLAP_MEASURED, **OVERLAP_EXTRA}
    if f.get("scheme", "sequential") != "sequential":
        cols[str(f["scheme"])] = PAIR_COLUMN
    rows = [MeasuredRow(where, {**f, "what": what}, _positive(r[col], col, where))
            for what, col in cols.items() if (r.get(col) or "").strip()]
    if not rows:
        raise InputError(where, "no measured cell", f"a time in one of {', '.join(cols.values())}")
    return rows


def _parse_row(kind: str, r: Dict[str, str], where: str) -> MeasuredRow:
    if kind == "copy_contention":
        f: Dict[str, object] = {"model": r["model"].strip(), "sublayer": r["sublayer"].strip(),
                                "tp": _typed(r["tp"], int, "tp", where, 1), "dtype": "bf16"}
        for dim in ("M", "N", "K"):
            f[dim] = _typed(r[dim], int, dim, where, 1)
        bgs = contention_backgrounds(r)
        f["backgrounds"] = tuple(bgs)
        for col in ("gemm_alone_us", *(f"{k}_{b}{u}" for b in dict.fromkeys((*CONTENTION_BACKGROUNDS, *bgs))
                                       for k, u in (("gemm_with", "_us"), ("copy_slowdown", "")))):
            # an empty or absent cell is "not measured" (skipped by the metrics); gemm_alone_us is required
            text = (r.get(col) or "").strip()
            f[col] = None if (not text and col != "gemm_alone_us") else _positive(text, col, where)
        return MeasuredRow(where, f, float(f["gemm_alone_us"]))
    dtype = r["dtype"].strip()
    if dtype not in DTYPE_BYTES:
        raise InputError(where, f"dtype={dtype!r}", ", ".join(DTYPE_BYTES))
    if kind == "collective":
        coll = r["collective"].strip()
        if coll not in COLLECTIVES:
            raise InputError(where, f"collective={coll!r}", ", ".join(COLLECTIVES))
        f: Dict[str, object] = {"collective": coll, "gpus": _typed(r["gpus"], int, "gpus", where, 2),
                                "size_mb": _positive(r["size_mb"], "size_mb", where), "dtype": dtype,
                                **setting_fields(r, where)}
    else:
        f = {"model": r["model"].strip(), "sublayer": r["sublayer"].strip(),
             "tp": _typed(r["tp"], int, "tp", where, 1), "dtype": dtype}
        for dim in ("M", "N", "K"):
            f[dim] = _typed(r[dim], int, dim, where, 1)
    return MeasuredRow(where, f, _positive(r["median_us"], "median_us", where))


def read_measured(path: str | Path, kind: Optional[str] = None) -> Tuple[str, List[MeasuredRow]]:
    """Read a measured CSV; returns ``(kind, rows)``. Every problem is an :class:`InputError` at ``file:line``.

    ``kind`` (``collective`` / ``gemm`` / ``overlap`` / ``copy_contention``) forces the expected columns; default: detected from the
    header. An overlap CSV row gives one row per measured column.
    """
    path = Path(path)
    reader = csv.reader(io.StringIO(read_text(path, "CSV file")))
    try:
        return _read_rows(path, reader, kind)
    except csv.Error as exc:  # e.g. a NUL byte, an unterminated quote at the end
        raise InputError(f"{path}:{reader.line_num}", f"malformed CSV ({exc})", "comma-separated text") from None


def _read_rows(path: Path, reader, kind: Optional[str]) -> Tuple[str, List[MeasuredRow]]:
    try:
        header = [c.strip() for c in next(reader)]
    except StopIteration:
        raise InputError(f"{path}:1", "an empty file", "a CSV header row") from None
    if kind is None:
        kind = detect_kind(header, f"{path}:1")
    else:
        missing = [c for c in KINDS[kind] if c not in header]
        if missing:
            raise InputError(f"{path}:1", f"header {header} (missing {', '.join(missing)})",
                             f"columns {','.join(KINDS[kind])}")
    rows: List[MeasuredRow] = []
    for r in reader:
        where = f"{path}:{reader.line_num}"
        if not r or all(not c.strip() for c in r):
            continue
        if len(r) != len(header):
            raise InputError(where, f"{len(r)} fields", f"{len(header)} fields ({', '.join(header)})")
        if kind == "overlap":
            rows.extend(_parse_overlap(dict(zip(header, r)), where))
        else:
            rows.append(_parse_row(kind, dict(zip(header, r)), where))
    if not rows:
        raise InputError(str(path), "no data rows", "at least one measured row after the header")
    return kind, rows


# ---------------------------------------------------------------------------- metrics
def row_error(sim: float, meas: float) -> float:
    """Signed relative error ``sim / meas - 1`` (dimensionless)."""
    return sim / meas - 1.0


#: Per-row absolute errors below this are counted as this in :func:`geomean_error` (0.01 %).
ERROR_FLOOR = 1e-4


def geomean_error(sims: Sequence[float], meas: Sequence[float]) -> float:
    """Geometric mean of ``max(|sim/meas - 1|, ERROR_FLOOR)`` over rows (module doc)."""
    _check(sims, meas)
    return math.exp(sum(math.log(max(abs(s / m - 1.0), ERROR_FLOOR)) for s, m in zip(sims, meas)) / len(sims))


def log_ratio_error(sims: Sequence[float], meas: Sequence[float]) -> float:
    """``exp(mean |ln(sim/meas)|) - 1`` (module doc): geometric-mean distance from ``y = x``."""
    _check(sims, meas)
    return math.exp(sum(abs(math.log(s / m)) for s, m in zip(sims, meas)) / len(sims)) - 1.0


def geomean_bias(sims: Sequence[float], meas: Sequence[float]) -> float:
    """``exp(mean ln(sim/meas)) - 1``: the signed geometric-mean ratio minus one."""
    _check(sims, meas)
    return math.exp(sum(math.log(s / m) for s, m in zip(sims, meas)) / len(sims)) - 1.0


def _check(sims: Sequence[float], meas: Sequence[float]) -> None:
    if len(sims) != len(meas) or not sims:
        raise ValueError(f"need equally many (>0) simulated and measured values, got {len(sims)} and {len(meas)}")
    if any(not (x > 0) for x in (*sims, *meas)):
        raise ValueError("times must be > 0")


def linear_fit(x: Sequence[float], y: Sequence[float]) -> Tuple[float, float]:
    """Ordinary least-squares line ``y = slope * x + intercept``; returns ``(slope, intercept)``."""
    n = len(x)
    if n < 2 or len(y) != n:
        raise ValueError("linear_fit needs >= 2 equally long x and y")
    mx, my = sum(x) / n, sum(y) / n
    sxx = sum((a - mx) ** 2 for a in x)
    if sxx == 0:
        raise ValueError("linear_fit needs at least two distinct x")
    slope = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sxx
    return slope, my - slope * mx


@dataclass
class Comparison:
    """Simulated beside measured for every row (times in us, errors dimensionless)."""

    kind: str
    system: str
    rows: List[MeasuredRow]
    sim_us: List[float]
    wall_s: List[float] = field(default_factory=list)
    details: List[Dict[str, float]] = field(default_factory=list)
    #: measured rows of the same CSV that were not simulated, each with its reason
    not_simulated: List[NotSimulated] = field(default_factory=list)

    @property
    def errors(self) -> List[float]:
        return [row_error(s, r.measured_us) for s, r in zip(self.sim_us, self.rows)]

    @property
    def geomean_error(self) -> float:
        return geomean_error(self.sim_us, [r.measured_us for r in self.rows])

    @property
    def log_ratio_error(self) -> float:
        return log_ratio_error(self.sim_us, [r.measured_us for r in self.rows])

    @property
    def geomean_bias(self) -> float:
        return geomean_bias(self.sim_us, [r.measured_us for r in self.rows])

    def records(self) -> List[Dict[str, object]]:
        """One flat mapping per row: the measured fields, times (us), error, wall time (s)."""
        out = []
        for i, (r, s, e) in enumerate(zip(self.rows, self.sim_us, self.errors)):
            rec: Dict[str, object] = {**r.fields, "measured_us": r.measured_us, "simulated_us": round(s, 3),
                                      "error": round(e, 5)}
            if self.wall_s:
                rec["wall_s"] = round(self.wall_s[i], 2)
            out.append(rec)
        return out

    def summary(self) -> Dict[str, object]:
        return {"kind": self.kind, "system": self.system, "rows": len(self.rows),
                "geomean_error": round(self.geomean_error, 5),
                "log_ratio_error": round(self.log_ratio_error, 5), "geomean_bias": round(self.geomean_bias, 5),
                "max_abs_error": round(max(abs(e) for e in self.errors), 5)}

    def summary_by(self) -> Dict[str, Dict[str, object]]:
        """Errors per overlap column (``what``: gemm, rs, sequential, concurrent, chunked; prefixed by the ``op``
        when the CSV has one) or per pinned NCCL setting of collective rows
        (:func:`~t3sim.analysis.validation_settings.group_key`); empty for rows without either."""
        out: Dict[str, Dict[str, object]] = {}
        keys = [group_key(r.fields) for r in self.rows]
        for what in dict.fromkeys(k for k in keys if k is not None):
            idx = [i for i, k in enumerate(keys) if k == what]
            sims, meas = [self.sim_us[i] for i in idx], [self.rows[i].measured_us for i in idx]
            out[what] = {"rows": len(idx), "geomean_error": round(geomean_error(sims, meas), 5),
                         "max_abs_error": round(max(abs(s / m - 1) for s, m in zip(sims, meas)), 5),
                         "geomean_bias": round(geomean_bias(sims, meas), 5)}
        return out

    def table(self) -> str:
        """Plain-text table: one line per row, then the geomean error."""
        head = ["row", "measured us", "simulated us", "error"]
        cells = [[r.label(), f"{r.measured_us:.1f}", f"{s:.1f}", f"{e:+.1%}"]
                 for r, s, e in zip(self.rows, self.sim_us, self.errors)]
        w = [max(len(c[i]) for c in [head, *cells]) for i in range(4)]
        line = lambda c: "  ".join(x.ljust(w[0]) if i == 0 else x.rjust(w[i]) for i, x in enumerate(c))  # noqa: E731
        s = self.summary()
        text = "\n".join([line(head), "  ".join("-" * x for x in w), *map(line, cells),
                           f"geomean error {s['geomean_error']:.1%} (log-ratio {s['log_ratio_error']:.1%}, "
                           f"bias {s['geomean_bias']:+.1%}, max |error| {s['max_abs_error']:.1%}) over {s['rows']} rows on {self.system}",
                           *[f"  {w}: geomean error {v['geomean_error']:.1%}, max |error| {v['max_abs_error']:.1%}, "
                             f"bias {v['geomean_bias']:+.1%} over {v['rows']} rows" for w, v in self.summary_by().items()]])
        return text + "\n" + not_simulated_text(self.not_simulated)

    def markdown(self, source: str = "") -> str:
        """The comparison as a Markdown page (rows, then the error metrics); deterministic: no wall times.

        ``source`` names the measured CSV in the heading. ``t3sim validate`` writes it as ``<stem>.md`` beside
        ``<stem>.csv`` so that documentation quoting these numbers is generated by the run itself.
        """
        what = TITLES[self.kind]
        s = self.summary()
        lines = [f"# {what}: simulated vs measured on {self.system}", "",
                 f"Generated by `t3sim validate`{f' from `{source}`' if source else ''}; do not edit "
                 "(re-run the command to update).", "",
                 "| row | measured (us) | simulated (us) | error |", "|---|---|---|---|"]
        lines += [f"| {r.label()} | {r.measured_us:.1f} | {sim:.1f} | {e:+.1%} |"
                  for r, sim, e in zip(self.rows, self.sim_us, self.errors)]
        lines += ["", f"**geomean error {s['geomean_error']:.1%}** (log-ratio {s['log_ratio_error']:.1%}, "
                      f"bias {s['geomean_bias']:+.1%}, max |error| {s['max_abs_error']:.1%}) over {s['rows']} rows.", ""]
        by = self.summary_by()
        if by:
            lines += ["| measured column | rows | geomean error | max abs error | bias |", "|---|---|---|---|---|"]
            lines += [f"| {w} | {v['rows']} | {v['geomean_error']:.1%} | {v['max_abs_error']:.1%} | "
                      f"{v['geomean_bias']:+.1%} |" for w, v in by.items()]
            lines.append("")
        lines += not_simulated_markdown(self.not_simulated)
        return "\n".join(lines)

    def write_csv(self, path: str | Path) -> Path:
        return write_records_csv(self.records(), path)


def write_records_csv(recs: Sequence[Dict[str, object]], path: str | Path) -> Path:
    """Write flat records (one mapping per row, the first row's keys as the header) as a CSV at ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(recs[0]))
        w.writeheader()
        w.writerows(recs)
    return path


def read_comparison(path: str | Path, system: str) -> Comparison:
    """A :class:`Comparison` back from the CSV :meth:`Comparison.write_csv` wrote (measured and simulated times;
    wall times when present), e.g. to check documentation against committed results."""
    rows, sims, walls = [], [], []
    recs = read_csv(path, ["measured_us", "simulated_us"])
    kind = "collective" if recs and "collective" in recs[0] else "overlap" if recs and "what" in recs[0] else "gemm"
    for i, r in enumerate(recs, start=2):
        where = f"{path}:{i}"
        if kind == "overlap":  # one record per measured column: its row's shape, settings and ``what``
            what = r["what"].strip()
            if what not in {**OVERLAP_MEASURED, **OVERLAP_EXTRA}:
                raise InputError(where, f"what={what!r}", ", ".join({**OVERLAP_MEASURED, **OVERLAP_EXTRA}))
            typed = MeasuredRow(where, {**_overlap_shape(r, where), **setting_fields(r, where), "what": what},
                                _positive(r["measured_us"], "measured_us", where))
        else:
            fields = {k: r[k] for k in KINDS[kind] if k != "median_us"}
            fields.update({k: r[k] for k in ("nccl_algo", "nccl_proto", "nccl_choice") if k in r})
            typed = _parse_row(kind, {**fields, "median_us": r["measured_us"]}, where)
        rows.append(typed)
        sims.append(_positive(r["simulated_us"], "simulated_us", where))
        if r.get("wall_s"):
            walls.append(float(r["wall_s"]))
    return Comparison(kind, system, rows, sims, walls if len(walls) == len(rows) else [])


def plot_comparison(cmp: Comparison, path: str | Path, title: Optional[str] = None) -> Path:
    """Fig. 14-style plot: simulated vs measured time (us) on log-log axes with the ideal ``y = x`` dotted line."""
    import matplotlib  # lazy: matplotlib is slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meas = [r.measured_us for r in cmp.rows]
    lo, hi = min(meas + cmp.sim_us) / 1.5, max(meas + cmp.sim_us) * 1.5
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    ax.plot([lo, hi], [lo, hi], ":", color="k", lw=1.2, label="ideal (simulated = measured)")
    ax.scatter(meas, cmp.sim_us, s=30, color="tab:blue", zorder=3, label="simulated")
    for r, s in zip(cmp.rows, cmp.sim_us):
        tag = (f"{r.fields['size_mb']:g} MiB" if cmp.kind == "collective" else
               f"{r.fields['sublayer']} {r.fields['what']}" if cmp.kind == "overlap" else str(r.fields["sublayer"]))
        ax.annotate(tag, (r.measured_us, s), textcoords="offset points", xytext=(5, -10), fontsize=7)
    log_log_axes(ax, lo, hi, (1.0, 2.0, 5.0))
    ax.set_xlabel("measured time (us)")
    ax.set_ylabel("simulated time (us)")
    what = {"collective": "reduce-scatter", "overlap": "GEMM + RS overlap"}.get(cmp.kind, "GEMM")
    ax.set_title(title or f"{what} on {cmp.system}: geomean error {cmp.geomean_error:.1%}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, which="both", alpha=0.25)
    return save_figure(fig, path)


def log_log_axes(ax, lo: float, hi: float, subs) -> None:
    """Both axes of ``ax`` logarithmic over ``[lo, hi]``, labelled at ``subs`` x powers of ten, plain numbers."""
    from matplotlib.ticker import LogLocator, NullFormatter, StrMethodFormatter  # lazy: matplotlib

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=subs))
        axis.set_major_formatter(StrMethodFormatter("{x:g}"))
        axis.set_minor_formatter(NullFormatter())


def save_figure(fig, path: str | Path) -> Path:
    """Lay out ``fig``, write it to ``path`` (creating its folder) at 150 dpi and close it."""
    import matplotlib.pyplot as plt  # lazy: matplotlib is slow to import

    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path
