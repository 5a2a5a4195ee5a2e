"""GEMM trace files: data model, reader, writer and validator (``traces/FORMAT.md``).

A trace is a JSON Lines file (UTF-8, ``\\n`` line ends, one JSON object per
line): line 1 is the header ``{"format": "t3sim-gemm-trace", "version": 1,
"kernels": N, ...}``; lines 2..N+1 are one kernel record each. Field names
carry units where physical (``lds_per_wg_B``); matrix sizes and tile shapes
are in elements. :data:`KERNEL_FIELDS` is the authoritative field list, in
the order the writer emits them, so output is deterministic byte for byte.

Validation is complete and strict: unknown or missing fields, wrong JSON
types (``true`` is not an integer, ``8.0`` is not an integer), out-of-range
values, a truncated/invalid line, a wrong header or version, a record count
that disagrees with the header, and records whose derived fields disagree
(``tiles_m != ceil(M / tile_m)``, ``num_wgs != tiles_m * tiles_n``, WF grid
not matching ``wfs_per_wg`` ...) all raise :class:`~t3sim.errors.InputError`
naming ``FILE:LINE``, the field, what was found and what is allowed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from t3sim.config.workload import DTYPE_BYTES, SUBLAYER_PASS
from t3sim.errors import InputError
from t3sim.workload.record import KernelRecord, ceil_div, json_key, trace_fields
from t3sim.workload.wg_order import NAMED_ORDERS, ORDER_KINDS

FORMAT_NAME = "t3sim-gemm-trace"
FORMAT_VERSION = 1
#: Most threads one WG may have (CUDA limit for compute capability 7.0).
MAX_THREADS_PER_WG = 1024
#: Most registers one thread may use (CUDA limit for compute capability 7.0).
MAX_REGISTERS_PER_THREAD = 255
#: Most WGs one kernel may have: the simulator keeps per-WG state and spends ~20-40 ms of wall time per WG
#: of a full-size run (docs/performance.md), so 2**20 WGs (340x the largest Table 2 kernel, 3072 WGs) is
#: already ~10 hours. Assumption: a bound on what one machine simulates, not a property of GPUs.
MAX_WGS = 2**20
#: Most WG main-loop steps (``num_wgs * ceil(K / tile_k)``) one kernel may have: 2**28 is ~1300x the largest
#: Table 2 kernel (MT-NLG FC-1/FC-2 at TP=32: 204800); the same wall-time bound as :data:`MAX_WGS`.
MAX_WG_STEPS = 2**28
ROLES = ("producer", "none")
COLLECTIVES = ("all-reduce", "reduce-scatter", "all-to-all")
PASSES = ("fwd", "bwd")
C_LAYOUTS = ("col_major", "row_major")


@dataclass(frozen=True)
class Trace:
    """A trace file's content: its kernels (in file order) and description."""

    kernels: Tuple[KernelRecord, ...]
    description: str = ""
    path: Optional[str] = field(default=None, compare=False)

    def __iter__(self) -> Iterator[KernelRecord]:
        return iter(self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)

    def kernel(self, sublayer: str) -> KernelRecord:
        """The (first) kernel of ``sublayer``; ``KeyError`` if none."""
        for k in self.kernels:
            if k.sublayer == sublayer:
                return k
        raise KeyError(sublayer)


def _attr(key: str) -> str:
    return "pass_" if key == "pass" else key


# --------------------------------------------------------------- field checks
# Each check returns None when the value is fine, else the "allowed" text.
Check = Callable[[Any], Optional[str]]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(lo: int, hi: Optional[int] = None) -> Check:
    allowed = f"integer >= {lo}" if hi is None else f"integer in {lo}..{hi}"
    if hi is None and lo == 1:
        allowed = "integer > 0"

    def check(v: Any) -> Optional[str]:
        ok = _is_int(v) and v >= lo and (hi is None or v <= hi)
        return None if ok else allowed

    return check


def _str() -> Check:
    return lambda v: None if isinstance(v, str) and v.strip() else "non-empty string"


def _enum(values: Tuple[Any, ...]) -> Check:
    text = " or ".join(json.dumps(x) for x in values)
    return lambda v: None if (v in values and type(v) in {type(x) for x in values}) else text


def _bool() -> Check:
    return lambda v: None if isinstance(v, bool) else "true or false"


def _wf_grid(v: Any) -> Optional[str]:
    ok = isinstance(v, list) and len(v) == 2 and all(_is_int(x) and x >= 1 for x in v)
    return None if ok else "[wf_m, wf_n], two integers > 0"


def _wg_order(v: Any) -> Optional[str]:
    allowed = ('{"kind": K} with K one of ' + ", ".join(NAMED_ORDERS)
               + ', or {"kind": "explicit", "tiles": [tile, ...]}')
    if not isinstance(v, dict) or v.get("kind") not in ORDER_KINDS:
        return allowed
    keys = {"kind", "tiles"} if v["kind"] == "explicit" else {"kind"}
    if set(v) != keys:
        return allowed
    if v["kind"] == "explicit" and not (isinstance(v["tiles"], list) and all(_is_int(t) for t in v["tiles"])):
        return allowed
    return None


KERNEL_FIELDS: Dict[str, Check] = {
    "name": _str(),
    "model": _str(),
    "sublayer": _str(),
    "pass": _enum(PASSES),
    "tp": _int(1),
    "M": _int(1),
    "N": _int(1),
    "K": _int(1),
    "dtype": _enum(tuple(DTYPE_BYTES)),
    "trans_a": _bool(),
    "trans_b": _bool(),
    "c_layout": _enum(C_LAYOUTS),
    "tile_m": _int(1),
    "tile_n": _int(1),
    "tile_k": _int(1),
    "tiles_m": _int(1),
    "tiles_n": _int(1),
    "num_wgs": _int(1),
    "wfs_per_wg": _int(1),
    "wf_grid": _wf_grid,
    "threads_per_wf": _int(1),
    "registers_per_thread": _int(1, MAX_REGISTERS_PER_THREAD),
    "lds_per_wg_B": _int(0),
    "wg_order": _wg_order,
    "role": _enum(ROLES),
    "collective": _enum(COLLECTIVES + (None,)),
}
assert list(KERNEL_FIELDS) == [json_key(f.name) for f in trace_fields()]

HEADER_FIELDS: Dict[str, Check] = {
    "format": _enum((FORMAT_NAME,)),
    "version": _enum((FORMAT_VERSION,)),
    "kernels": _int(1),
    "description": lambda v: None if isinstance(v, str) else "string",
}
HEADER_REQUIRED = ("format", "version", "kernels")


def _show(v: Any) -> str:
    """A found value for an error message (JSON, shortened)."""
    text = json.dumps(v) if not isinstance(v, _Missing) else "nothing (field missing)"
    if len(text) > 60:
        text = text[:57] + "..."
    if isinstance(v, bool) or isinstance(v, float) or (isinstance(v, str) and not isinstance(v, _Missing)):
        text += f" ({type(v).__name__})"
    return text


class _Missing(str):
    pass


def _check_fields(obj: Dict[str, Any], spec: Mapping[str, Check], required: Tuple[str, ...], where: str) -> None:
    for key in obj:
        if key not in spec:
            raise InputError(f"{where}: field {key!r}", "an unknown field", ", ".join(spec))
    for key in required:
        if key not in obj:
            allowed = spec[key](_Missing()) or "a value"
            raise InputError(f"{where}: field {key!r}", "nothing (required field missing)", allowed)
    for key, value in obj.items():
        allowed = spec[key](value)
        if allowed is not None:
            raise InputError(f"{where}: field {key!r}", _show(value), allowed)


def _consistency(d: Dict[str, Any], where: str) -> None:
    """Cross-field checks of one (field-valid) kernel record."""

    def bad(key: str, allowed: str) -> InputError:
        return InputError(f"{where}: field {key!r}", _show(d[key]), allowed)

    tm, tn = ceil_div(d["M"], d["tile_m"]), ceil_div(d["N"], d["tile_n"])
    if d["tiles_m"] != tm:
        raise bad("tiles_m", f"ceil(M / tile_m) = ceil({d['M']} / {d['tile_m']}) = {tm}")
    if d["tiles_n"] != tn:
        raise bad("tiles_n", f"ceil(N / tile_n) = ceil({d['N']} / {d['tile_n']}) = {tn}")
    if d["num_wgs"] != tm * tn:
        raise bad("num_wgs", f"tiles_m * tiles_n = {tm * tn} (one WG per output tile)")
    check_size(d["num_wgs"], d["K"], d["tile_k"], where)
    wf_m, wf_n = d["wf_grid"]
    if wf_m * wf_n != d["wfs_per_wg"]:
        raise bad("wf_grid", f"a grid of wfs_per_wg = {d['wfs_per_wg']} WFs")
    if d["tile_m"] % wf_m or d["tile_n"] % wf_n:
        raise bad("wf_grid", f"[wf_m, wf_n] dividing the tile {d['tile_m']}x{d['tile_n']}")
    if d["wfs_per_wg"] * d["threads_per_wf"] > MAX_THREADS_PER_WG:
        raise bad("wfs_per_wg", f"wfs_per_wg * threads_per_wf <= {MAX_THREADS_PER_WG} threads per WG")
    if (d["role"] == "producer") != (d["collective"] is not None):
        raise bad("collective", 'a collective name when role is "producer", null when role is "none"')
    expected = SUBLAYER_PASS.get(d["sublayer"])
    if expected is not None and d["pass"] != expected:
        raise bad("pass", f"{json.dumps(expected)} for sub-layer {d['sublayer']} (paper Sec. 6.1)")
    order = d["wg_order"]
    if order["kind"] == "explicit" and sorted(order["tiles"]) != list(range(d["num_wgs"])):
        raise InputError(f"{where}: field 'wg_order'", f"an explicit list of {len(order['tiles'])} tiles that is not a permutation",
                         f"a permutation of 0..{d['num_wgs'] - 1} (each output tile exactly once)")


def check_size(num_wgs: int, K: int, tile_k: int, where: str) -> None:
    """Raise :class:`InputError` for a kernel too large for the simulator to run (:data:`MAX_WGS`,
    :data:`MAX_WG_STEPS`); ``where`` names the trace record or config field."""
    if num_wgs > MAX_WGS:
        raise InputError(where, f"a GEMM of {num_wgs:,} WGs, too many to simulate",
                         f"at most {MAX_WGS:,} WGs per kernel (the largest paper kernel has 3,072)")
    steps = num_wgs * ceil_div(K, tile_k)
    if steps > MAX_WG_STEPS:
        raise InputError(where, f"a GEMM of {num_wgs:,} WGs x {ceil_div(K, tile_k):,} K steps = {steps:,} WG steps, "
                                "too many to simulate",
                         f"at most {MAX_WG_STEPS:,} WG steps (num_wgs x ceil(K / tile_k)) per kernel")


def kernel_from_json(obj: Dict[str, Any], where: str) -> KernelRecord:
    """Validate one decoded record and build its :class:`KernelRecord`."""
    _check_fields(obj, KERNEL_FIELDS, tuple(KERNEL_FIELDS), where)
    _consistency(obj, where)
    kw = {_attr(k): v for k, v in obj.items()}
    kw["wf_grid"] = tuple(obj["wf_grid"])
    kw["wg_order"] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in obj["wg_order"].items()}
    return KernelRecord(**kw)


# --------------------------------------------------------------------- reading


def _no_dup_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


class _DuplicateKey(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def _decode_line(line: str, where: str) -> Dict[str, Any]:
    try:
        obj = json.loads(line, object_pairs_hook=_no_dup_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(where, f"truncated or invalid JSON ({exc.msg} at column {exc.colno})",
                         "one complete JSON object per line") from None
    except _DuplicateKey as exc:
        raise InputError(f"{where}: field {exc.args[0]!r}", "a duplicate field", "each field once per record") from None
    except ValueError as exc:
        raise InputError(where, str(exc), "finite JSON numbers") from None
    if not isinstance(obj, dict):
        raise InputError(where, f"a JSON {type(obj).__name__}", "a JSON object")
    return obj


def parse_trace(text: str, name: str) -> Trace:
    """Parse and validate trace text; ``name`` is used in error messages."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise InputError(name, "an empty file", f'a header line {{"format": "{FORMAT_NAME}", "version": {FORMAT_VERSION}, ...}}')
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise InputError(f"{name}:{n}", "a blank line", "one JSON object per line")
    header = _decode_line(lines[0], f"{name}:1")
    if header.get("format") != FORMAT_NAME:
        raise InputError(f"{name}:1: field 'format'", _show(header.get("format", _Missing())), f'"{FORMAT_NAME}" (header line)')
    if header.get("version") != FORMAT_VERSION or isinstance(header.get("version"), bool):
        raise InputError(f"{name}:1: field 'version'", _show(header.get("version", _Missing())),
                         f"{FORMAT_VERSION} (the trace format version this t3sim reads)")
    _check_fields(header, HEADER_FIELDS, HEADER_REQUIRED, f"{name}:1")
    kernels: List[KernelRecord] = []
    seen: Dict[str, int] = {}
    for n, line in enumerate(lines[1:], 2):
        where = f"{name}:{n}"
        rec = kernel_from_json(_decode_line(line, where), where)
        if rec.name in seen:
            raise InputError(f"{where}: field 'name'", _show(rec.name), f"a name not used before (line {seen[rec.name]} has it)")
        seen[rec.name] = n
        kernels.append(rec)
    if len(kernels) != header["kernels"]:
        raise InputError(f"{name}:{len(lines)}", f"{len(kernels)} kernel record(s) (file truncated?)",
                         f"{header['kernels']} records as the header's 'kernels' declares")
    return Trace(tuple(kernels), header.get("description", ""), name)


def load_trace(path: str | Path) -> Trace:
    """Read and validate a trace file; raise :class:`InputError` on any problem."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(str(p), "no such file", "an existing GEMM trace file (see traces/FORMAT.md)") from None
    except IsADirectoryError:
        raise InputError(str(p), "a directory", "a GEMM trace file (.jsonl)") from None
    except OSError as exc:
        raise InputError(str(p), f"unreadable file ({exc.strerror})", "a readable GEMM trace file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{p}:{line}", f"bytes that are not UTF-8 (offset {exc.start})", "UTF-8 text") from None
    return parse_trace(text, str(p))


# --------------------------------------------------------------------- writing


def dumps_trace(trace: Trace) -> str:
    """Serialise a trace: header then one record per line, fixed key order, ``\\n`` ends."""
    header: Dict[str, Any] = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "kernels": len(trace.kernels)}
    if trace.description:
        header["description"] = trace.description
    out = [json.dumps(header, ensure_ascii=True)]
    out += [json.dumps(k.to_json(), ensure_ascii=True) for k in trace.kernels]
    return "\n".join(out) + "\n"


def write_trace(path: str | Path, trace: Trace) -> Path:
    """Validate ``trace`` (by parsing what would be written) and write it; return the path.

    Parent directories are created. Raises :class:`InputError` if the trace is
    not valid, naming ``path`` and the record line.
    """
    p = Path(path)
    text = dumps_trace(trace)
    parse_trace(text, str(p))
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8", newline="\n")
    return p
