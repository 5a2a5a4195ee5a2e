"""What a measured row ran that the simulator may not represent, and the rows ``t3sim validate`` does not
simulate, each with its reason (pure: nothing here simulates).

Optional columns of the measured CSVs (:mod:`t3sim.analysis.validation` reads them into a row's fields):

* collective rows: ``nccl_algo`` / ``nccl_proto`` -- the ``NCCL_ALGO`` / ``NCCL_PROTO`` the row was measured
  with (``default``: not set) -- and ``nccl_choice`` -- what NCCL's TUNING log says it ran (``Algo/Proto``,
  several joined by ``+``; empty when not logged). The system's collective model is NCCL's **Ring/Simple**
  kernel (``collective.protocol: nccl_simple``; the step model of other presets is a ring too), so a row is
  simulated when what ran was Ring/Simple: the logged choice when there is one, else the pinned setting,
  else (the default, not logged) Ring/Simple as NCCL's tuning picks it on the validated sizes
  (experiments/validation/README.md), which the row's label says;
* overlap rows: ``op`` -- ``gemm_rs`` (the GEMM, then a reduce-scatter of its M x N output) or ``ag_gemm``
  (an all-gather of the M x K input, then the GEMM) -- and ``scheme`` -- ``sequential`` (the pair back to back
  with NCCL; the reference columns) or ``asynctp`` (PyTorch's symmetric-memory fused op, whose time is the
  row's ``pair_us``); ``ag_us``: the all-gather alone. Simulated: the GEMM alone, the RS and AG alone and
  gemm_rs's sequential, concurrent and chunked columns (t3sim.validation.overlap's programs). Not
  simulated: ``asynctp`` (no validation program runs AsyncTP's decomposition: its chunks are *pulled* from
  the peers' symmetric buffers by ``copy_`` on two streams; the nearest scheme, ``chunked_dma``, pushes with
  copy engines) and ag_gemm's sequential pair (the overlap programs run GEMM then reduce-scatter);
* GEMM-beside-copies rows: ``gemm_with_<bg>_us`` / ``copy_slowdown_<bg>`` for any background ``bg``; those
  outside :data:`t3sim.analysis.validation.CONTENTION_BACKGROUNDS` (the peer copies ``p2p_out``, ``p2p_in``,
  ``p2p_both``: copy engines moving data between two GPUs' HBM over NVLink) are not simulated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from t3sim.errors import InputError

NCCL_ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
NCCL_PROTOS = ("LL", "LL128", "Simple")
DEFAULT = "default"
#: what the collective model simulates: NCCL's ring with the Simple protocol
SIMULATED_NCCL = ("Ring", "Simple")
OPS = ("gemm_rs", "ag_gemm")
SCHEMES = ("sequential", "asynctp")
#: optional setting columns, in the order labels name them
SETTING_COLUMNS = ("nccl_algo", "nccl_proto", "nccl_choice", "op", "scheme")
#: overlap columns besides the reference's five: the all-gather alone (``what = ag``) and the time of the pair
#: as the row's scheme ran it (``what`` = the scheme; for ``sequential`` rows it repeats ``sequential_us``)
OVERLAP_EXTRA = {"ag": "ag_us"}
PAIR_COLUMN = "pair_us"
CONTENTION_BASE = ("model", "sublayer", "tp", "M", "N", "K", "gemm_alone_us")


@dataclass(frozen=True)
class NotSimulated:
    """A measured value ``t3sim validate`` does not simulate: where, what (label), the measured values, why."""

    where: str
    label: str
    measured: Dict[str, Optional[float]]
    reason: str

    def record(self) -> Dict[str, object]:
        return {"where": self.where, "row": self.label, **self.measured, "reason": self.reason}


# ---------------------------------------------------------------------------------------------- parsing
def _name(text: str, names: Sequence[str], col: str, where: str) -> str:
    for n in names:
        if n.lower() == text.lower():
            return n
    raise InputError(where, f"{col}={text!r}", ", ".join(names))


def setting_fields(r: Dict[str, str], where: str) -> Dict[str, object]:
    """The typed setting columns present in row ``r`` (header name -> cell); InputError names a bad cell."""
    f: Dict[str, object] = {}
    for col, names in (("nccl_algo", NCCL_ALGOS), ("nccl_proto", NCCL_PROTOS)):
        if col in r:
            text = (r[col] or "").strip()
            f[col] = DEFAULT if text in ("", DEFAULT) else _name(text, names, col, where)
    if "nccl_choice" in r:
        text = (r["nccl_choice"] or "").strip()
        parts = []
        for part in [p for p in text.split("+") if p]:
            a, _, p = part.partition("/")
            if not p:
                raise InputError(where, f"nccl_choice={text!r}", "Algo/Proto (e.g. Ring/Simple), '+'-joined, or empty")
            parts.append(f"{_name(a, NCCL_ALGOS, 'nccl_choice', where)}/{_name(p, NCCL_PROTOS, 'nccl_choice', where)}")
        f["nccl_choice"] = "+".join(parts)
    for col, names in (("op", OPS), ("scheme", SCHEMES)):
        if col in r:
            f[col] = _name((r[col] or "").strip(), names, col, where)
    return f


def is_contention_header(cols: Sequence[str]) -> bool:
    """A GEMM-beside-copies header: the shape, ``gemm_alone_us`` and at least one ``gemm_with_<bg>_us``."""
    return all(c in cols for c in CONTENTION_BASE) and bool(contention_backgrounds(cols))


def contention_backgrounds(cols: Iterable[str]) -> List[str]:
    """The backgrounds ``bg`` of the ``gemm_with_<bg>_us`` columns, in header order."""
    return [c[len("gemm_with_"):-len("_us")] for c in cols if c.startswith("gemm_with_") and c.endswith("_us")]


def is_extended_overlap(cols: Sequence[str]) -> bool:
    """An overlap header with the optional columns (then an empty measured cell means "not measured")."""
    return any(c in cols for c in ("op", "scheme", PAIR_COLUMN, *OVERLAP_EXTRA.values()))


# ------------------------------------------------------------------------------------ labels and groups
def nccl_ran(f: Dict[str, object]) -> Tuple[str, str, str]:
    """``(algo, proto, how)`` of a collective row: what ran and how it is known (``logged``, ``pinned``,
    ``assumed``: the NCCL default without a logged choice)."""
    choice = str(f.get("nccl_choice") or "")
    if choice and "+" not in choice:
        a, p = choice.split("/")
        return a, p, "logged"
    a, p = str(f.get("nccl_algo", DEFAULT)), str(f.get("nccl_proto", DEFAULT))
    if a != DEFAULT and p != DEFAULT:
        return a, p, "pinned"
    return (SIMULATED_NCCL[0] if a == DEFAULT else a), (SIMULATED_NCCL[1] if p == DEFAULT else p), "assumed"


def setting_label(f: Dict[str, object]) -> str:
    """The row's setting for its label (``""`` when the row has no setting columns)."""
    if "nccl_algo" in f or "nccl_proto" in f or "nccl_choice" in f:
        pin = group_key(f)
        choice = str(f.get("nccl_choice") or "")
        if choice:
            return f"{pin}: ran {choice}"
        a, p, how = nccl_ran(f)
        return f"{pin}: {a}/{p} {how}" if how == "assumed" else pin
    return " ".join(str(f[c]) for c in ("op", "scheme") if c in f)


def group_key(f: Dict[str, object]) -> Optional[str]:
    """The group a row's errors are summarised in (:meth:`t3sim.analysis.validation.Comparison.summary_by`):
    an overlap row's measured column (prefixed by its ``op`` when there is one), a collective row's pinned
    setting (``NCCL_ALGO=Ring NCCL_PROTO=Simple``, ``NCCL default``); None for rows without either."""
    if "what" in f:
        return f"{f['op']} {f['what']}" if "op" in f else str(f["what"])
    if "nccl_algo" in f or "nccl_proto" in f:
        pins = [f"NCCL_{k.upper()}={f[f'nccl_{k}']}" for k in ("algo", "proto") if f.get(f"nccl_{k}", DEFAULT) != DEFAULT]
        return " ".join(pins) or "NCCL default"
    return None


# ------------------------------------------------------------------------------------------- decisions
def not_simulated_reason(kind: str, f: Dict[str, object]) -> Optional[str]:
    """Why ``t3sim validate`` does not simulate a measured row of ``kind`` (None: it does; module doc)."""
    if kind == "collective":
        choice = str(f.get("nccl_choice") or "")
        if "+" in choice:
            return (f"NCCL ran several algorithms/protocols for this row ({choice}, TUNING log); the model "
                    f"simulates {'/'.join(SIMULATED_NCCL)} only")
        a, p, how = nccl_ran(f)
        if (a, p) != SIMULATED_NCCL:
            src = {"logged": "TUNING log", "pinned": "NCCL_ALGO/NCCL_PROTO", "assumed": "pinned"}[how]
            return (f"NCCL ran {a}/{p} ({src}); the collective model simulates NCCL's "
                    f"{'/'.join(SIMULATED_NCCL)} kernel only")
        return None
    if kind == "overlap":
        what = str(f.get("what"))
        if what == "asynctp":
            return ("PyTorch AsyncTP's fused op: no validation program simulates it (its chunks are pulled from "
                    "the peers' symmetric buffers by copy_ on two streams; the nearest scheme, chunked_dma, "
                    "pushes with copy engines)")
        if f.get("op") == "ag_gemm" and what in ("sequential", "concurrent", "chunked"):
            return ("all-gather then GEMM: the overlap validation programs run a GEMM then a reduce-scatter "
                    "(op gemm_rs) only")
    return None


def contention_reason(bg: str, simulated: Sequence[str]) -> Optional[str]:
    """Why background ``bg`` of a GEMM-beside-copies CSV is not simulated (None: it is one of ``simulated``)."""
    if bg in simulated:
        return None
    if bg.startswith("p2p"):
        return (f"peer copies over NVLink ({bg}): the copy-contention simulation runs one GPU with the "
                f"backgrounds {', '.join(simulated)} only")
    return f"background {bg!r}: the copy-contention simulation has {', '.join(simulated)} only"


def split_rows(kind: str, rows: Sequence) -> Tuple[List, List[NotSimulated]]:
    """``rows`` (MeasuredRow) into those to simulate and the :class:`NotSimulated` others, in order."""
    keep, skip = [], []
    for r in rows:
        why = not_simulated_reason(kind, r.fields)
        if why is None:
            keep.append(r)
        else:
            skip.append(NotSimulated(r.where, r.label(), {"measured_us": r.measured_us}, why))
    return keep, skip


def contention_not_simulated(rows: Sequence, simulated: Sequence[str]) -> List[NotSimulated]:
    """The (row, background) pairs of a GEMM-beside-copies CSV outside ``simulated`` that hold a measurement."""
    out = []
    for r in rows:
        f = r.fields
        for bg in f.get("backgrounds", ()):
            why = contention_reason(bg, simulated)
            vals = {k: f.get(k) for k in (f"gemm_with_{bg}_us", f"copy_slowdown_{bg}")}
            if why and any(v is not None for v in vals.values()):
                out.append(NotSimulated(r.where, f"{f['model']} {f['sublayer']} TP{f['tp']} {f['M']}x{f['N']}x{f['K']} "
                                                 f"{bg}", {"gemm_alone_us": f["gemm_alone_us"], **vals}, why))
    return out


# -------------------------------------------------------------------------------------------- reporting
def _cell(v: object) -> str:
    return "n/a" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)


def not_simulated_text(items: Sequence[NotSimulated]) -> str:
    """Plain-text lines for the table output ("" when there are none)."""
    if not items:
        return ""
    lines = [f"not simulated ({len(items)}):"]
    lines += [f"  {n.label}: measured {', '.join(f'{k} {_cell(v)}' for k, v in n.measured.items())} -- {n.reason}"
              for n in items]
    return "\n".join(lines) + "\n"


def not_simulated_markdown(items: Sequence[NotSimulated]) -> List[str]:
    """A Markdown section listing the rows not simulated and why (empty list when there are none)."""
    if not items:
        return []
    out = ["## Not simulated", "", "| row | measured | reason |", "|---|---|---|"]
    out += [f"| {n.label} | {', '.join(f'{k} {_cell(v)}' for k, v in n.measured.items())} | {n.reason} |"
            for n in items]
    return out + [""]
