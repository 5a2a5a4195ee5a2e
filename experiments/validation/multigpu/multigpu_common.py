"""The torch-free half of the multi-GPU measurement scripts: environment, NCCL settings, shapes, NCCL TUNING
log parsing, the slowest-rank / median reduction and the CSV and sidecar writing.

Nothing here imports torch, so the drivers (which only launch ``torchrun``) and the test suite
(``tests/validation/test_multigpu_scripts.py``) run on a machine without it. Units: times in microseconds
(us), sizes in MiB (2^20 B) as in ``experiments/validation/README.md``, byte counts in bytes.

Conventions shared with ``t3sim validate`` (``t3sim/analysis/validation.py`` detects the CSV kind from the
header; the test checks each header written here is detected as the intended kind):

* collective CSV: ``collective,gpus,size_mb,dtype,median_us`` + ``nccl_algo,nccl_proto`` (the pinned
  ``NCCL_ALGO`` / ``NCCL_PROTO``, ``default`` when not set) + ``nccl_choice`` (what NCCL's TUNING log says
  it ran, ``Algo/Proto``; empty when the log has no line for the row) + informational columns;
* overlap CSV: the reference overlap columns + ``dtype,op,scheme,pair_us,ag_us`` (:data:`OVERLAP_COLUMNS`);
* GEMM-beside-copies CSV: ``model,sublayer,tp,M,N,K,gemm_alone_us`` + ``gemm_with_<bg>_us`` and
  ``copy_slowdown_<bg>`` per background (:data:`CONTENTION_BACKGROUNDS`).
"""

from __future__ import annotations

import csv
import ctypes
import json
import math
import os
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

MIB = 1 << 20

#: set in every process (drivers, torchrun and its workers, children started with their own environment):
#: no NVLink SHARP in NCCL, no multicast objects in PyTorch's symmetric memory or NVSHMEM
REQUIRED_ENV: Dict[str, str] = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                                "NVSHMEM_DISABLE_NVLS": "1"}


def apply_required_env(environ=None) -> Dict[str, str]:
    """Put :data:`REQUIRED_ENV` into ``environ`` (default ``os.environ``), overriding other values; returns it.

    Call before torch is imported (NCCL and symmetric memory read these at initialisation)."""
    env = os.environ if environ is None else environ
    env.update(REQUIRED_ENV)
    return env


def child_env(extra: Optional[Mapping[str, str]] = None, base: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The environment of a child process: ``base`` (default this process's) with ``extra`` and
    :data:`REQUIRED_ENV`; ``extra`` may not change a required variable (ValueError)."""
    extra = dict(extra or {})
    clash = {k: v for k, v in extra.items() if k in REQUIRED_ENV and v != REQUIRED_ENV[k]}
    if clash:
        raise ValueError(f"{clash} would override the required environment {REQUIRED_ENV}")
    env = dict(os.environ if base is None else base)
    env.update(extra)
    env.update(REQUIRED_ENV)
    return env


# ------------------------------------------------------------------------------------------- NCCL settings
#: NCCL's algorithm and protocol names (``ncclAlgoStr`` / ``ncclProtoStr`` of src/device/... in NCCL; also
#: the integer ids older NCCL versions print in their TUNING lines, in this order)
NCCL_ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
NCCL_PROTOS = ("LL", "LL128", "Simple")
#: NCCL's function names in its logs -> torch.distributed collective names
NCCL_FUNCS = {"ReduceScatter": "reduce_scatter", "AllGather": "all_gather", "AllReduce": "all_reduce"}
COLLECTIVES = ("reduce_scatter", "all_gather", "all_reduce")
#: algorithms that run each collective on one NVLink node with NVLS off (Tree: all-reduce only; PAT: one GPU
#: per node only; CollNet: a network plugin)
VALID_ALGOS = {"reduce_scatter": ("Ring",), "all_gather": ("Ring",), "all_reduce": ("Ring", "Tree")}
DEFAULT = "default"


def canonical_algo(name: str) -> str:
    """NCCL's spelling of an algorithm name or integer id (``ring``, ``RING``, ``1`` -> ``Ring``)."""
    return _canonical(name, NCCL_ALGOS, "algorithm")


def canonical_proto(name: str) -> str:
    """NCCL's spelling of a protocol name or integer id (``simple``, ``SIMPLE``, ``2`` -> ``Simple``)."""
    return _canonical(name, NCCL_PROTOS, "protocol")


def _canonical(name: str, names: Sequence[str], what: str) -> str:
    text = str(name).strip()
    if text.isdigit() and int(text) < len(names):
        return names[int(text)]
    for n in names:
        if n.lower() == text.lower():
            return n
    raise ValueError(f"unknown NCCL {what} {name!r} (one of {', '.join(names)})")


@dataclass(frozen=True)
class NcclSetting:
    """A pinned NCCL algorithm and protocol (None: NCCL's default choice); one process group each."""

    algo: Optional[str] = None
    proto: Optional[str] = None

    @property
    def label(self) -> str:
        """``default``, ``Ring-LL128``, ``Tree-Simple``, ``proto-LL``: file-name safe."""
        if self.algo is None and self.proto is None:
            return DEFAULT
        return f"{self.algo or 'algo'}-{self.proto or 'proto'}"

    def env(self) -> Dict[str, str]:
        """``NCCL_ALGO`` / ``NCCL_PROTO`` for this setting (nothing for a default)."""
        out = {}
        if self.algo:
            out["NCCL_ALGO"] = self.algo
        if self.proto:
            out["NCCL_PROTO"] = self.proto
        return out

    def valid_for(self, collective: str) -> bool:
        """Whether NCCL can run ``collective`` under this setting (:data:`VALID_ALGOS`)."""
        return self.algo is None or self.algo in VALID_ALGOS[collective]

    def columns(self) -> Dict[str, str]:
        return {"nccl_algo": self.algo or DEFAULT, "nccl_proto": self.proto or DEFAULT}


def parse_setting(label: str) -> NcclSetting:
    """The inverse of :attr:`NcclSetting.label` (``default``, ``Ring-LL``, ``algo-Simple``, ``Tree-proto``)."""
    if label == DEFAULT:
        return NcclSetting()
    try:
        a, p = label.split("-")
    except ValueError:
        raise ValueError(f"NCCL setting {label!r}: expected default or ALGO-PROTO (e.g. Ring-LL128)") from None
    return NcclSetting(None if a == "algo" else canonical_algo(a), None if p == "proto" else canonical_proto(p))


def settings_for(collectives: Iterable[str], dry_run: bool = False) -> List[NcclSetting]:
    """The default, then every valid (algorithm, protocol) pair for ``collectives`` (Ring x 3 protocols, and
    Tree x 3 when all-reduce is swept). ``dry_run``: the default, one pinned Ring protocol and (with
    all-reduce) one pinned Tree one: every code path, few process groups."""
    colls = list(collectives)
    algos = [a for a in ("Ring", "Tree") if any(a in VALID_ALGOS[c] for c in colls)]
    pinned = [NcclSetting(a, p) for a in algos for p in NCCL_PROTOS]
    if dry_run:
        pinned = [s for s in pinned if (s.algo, s.proto) in (("Ring", "LL128"), ("Tree", "Simple"))]
    return [NcclSetting(), *pinned]


def sweep_sizes(lo_mib: int = 4, hi_mib: int = 24, step_mib: int = 2) -> List[int]:
    """Collective sizes in MiB: ``lo..hi`` inclusive in ``step`` steps (4, 6, ..., 24)."""
    return list(range(lo_mib, hi_mib + 1, step_mib))


def expected_log_bytes(collective: str, size_mb: float, gpus: int) -> Tuple[int, ...]:
    """The byte counts NCCL's TUNING line may print for a collective of ``size_mb`` MiB (the whole array on
    each GPU: the RS input, the AG output, the AR tensor): recent NCCL prints ``count x type size`` with the
    per-rank count for RS and AG, older versions the whole array."""
    whole = int(round(size_mb * MIB))
    return (whole,) if collective == "all_reduce" else (whole // gpus, whole)


# ---------------------------------------------------------------------------------------- NCCL TUNING logs
#: a line the workers print (rank 0, flushed) before each measured case; NCCL lines up to the next marker
#: belong to that case
MARK = "T3SIM-MARK "

# NCCL >= 2.19 (src/enqueue.cc): "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}" (+ " comm %p" or
# " cgaClusterSize %d" in some versions); older: "%ld Bytes -> Algo %d proto %d time %f"
_NAMED = re.compile(r"NCCL INFO (\w+): (\d+) Bytes -> Algo (\w+) proto (\w+)"
                    r"(?: channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})?")
_NUMERIC = re.compile(r"NCCL INFO (\d+) Bytes -> Algo (\d+) proto (\d+)(?: time ([0-9.]+))?")


@dataclass(frozen=True)
class TuningLine:
    """One NCCL TUNING line: collective (None when the format does not name it), bytes, algorithm, protocol,
    channels used (None when not printed) and the marker of the case it was printed in (None before any)."""

    collective: Optional[str]
    nbytes: int
    algo: str
    proto: str
    channels: Optional[int]
    mark: Optional[Dict[str, object]]

    @property
    def choice(self) -> str:
        return f"{self.algo}/{self.proto}"


def parse_tuning_log(lines: Iterable[str]) -> List[TuningLine]:
    """Every NCCL TUNING line of a log, in order, each with the last :data:`MARK` line before it."""
    out: List[TuningLine] = []
    mark: Optional[Dict[str, object]] = None
    for line in lines:
        i = line.find(MARK)
        if i >= 0:
            mark = json.loads(line[i + len(MARK):])
            continue
        m = _NAMED.search(line)
        if m:
            pair = _known_pair(m.group(3), m.group(4))
            if pair:
                ch = int(m.group(6)) - int(m.group(5)) + 1 if m.group(5) is not None else None
                out.append(TuningLine(NCCL_FUNCS.get(m.group(1), m.group(1)), int(m.group(2)), *pair, ch, mark))
            continue
        m = _NUMERIC.search(line)
        pair = _known_pair(m.group(2), m.group(3)) if m else None
        if pair:
            out.append(TuningLine(None, int(m.group(1)), *pair, None, mark))
    return out


def _known_pair(algo: str, proto: str) -> Optional[Tuple[str, str]]:
    """A TUNING line's algorithm and protocol in canonical spelling, or None when either is not one NCCL has."""
    try:
        return canonical_algo(algo), canonical_proto(proto)
    except ValueError:
        return None


def choices_for(lines: Sequence[TuningLine], collective: str, size_mb: float, gpus: int,
                **mark: object) -> Tuple[str, Optional[int]]:
    """What NCCL ran for one measured case: ``(choice, channels)``.

    First the TUNING lines printed under the marker whose fields include ``collective``, ``size_mb`` and
    ``mark``, for that collective (or an unnamed line) of one of :func:`expected_log_bytes`. When no line
    lies under a marker (the log's order was lost), the named lines of that collective anywhere in the log
    with the per-rank byte count (RS, AG) or the whole array (AR): unique per size in one setting's log.
    ``choice`` is ``Algo/Proto``, several different ones joined with ``+``, ``""`` when no line matches;
    ``channels`` is the largest channel count printed."""
    want = expected_log_bytes(collective, size_mb, gpus)

    def under_mark(t: TuningLine) -> bool:
        m = t.mark or {}
        return (m.get("collective") == collective and float(m.get("size_mb", -1)) == float(size_mb)
                and all(m.get(k) == v for k, v in mark.items())
                and t.collective in (None, collective) and t.nbytes in want)

    hits = [t for t in lines if under_mark(t)]
    if not hits:
        hits = [t for t in lines if t.collective == collective and t.nbytes == want[0]]
    seen = dict.fromkeys(t.choice for t in hits)
    chans = [t.channels for t in hits if t.channels is not None]
    return "+".join(seen), (max(chans) if chans else None)


def line_buffer_c_stdout() -> bool:
    """Make the C library's ``stdout`` line-buffered (NCCL writes its log there without flushing; redirected
    to a file it would be block-buffered and its lines would no longer follow the markers Python prints).
    Call before anything writes through C's ``stdout``; False when the C library cannot be reached."""
    try:
        libc = ctypes.CDLL(None)
        stream = ctypes.c_void_p.in_dll(libc, "stdout")
        return libc.setvbuf(stream, None, 1, 0) == 0  # 1 = _IOLBF
    except (OSError, ValueError, AttributeError):
        return False


def mark_line(**fields: object) -> str:
    """The marker line (without newline) the workers print before a case."""
    return MARK + json.dumps(fields, sort_keys=True)


# --------------------------------------------------------------------------------------- timing reduction
def slowest_rank_per_run(times_by_rank: Sequence[Sequence[float]]) -> List[float]:
    """Per timed run, the slowest rank's time: ``max`` over ranks of run ``i`` (every rank ran the same runs;
    ValueError otherwise)."""
    if not times_by_rank or not times_by_rank[0]:
        raise ValueError("no timed runs")
    n = len(times_by_rank[0])
    if any(len(t) != n for t in times_by_rank):
        raise ValueError(f"ranks timed different numbers of runs: {[len(t) for t in times_by_rank]}")
    return [max(t[i] for t in times_by_rank) for i in range(n)]


def summarize(times_by_rank: Sequence[Sequence[float]]) -> Dict[str, float]:
    """The reported statistics of one case (us): ``median_us`` = median over runs of the slowest rank's time
    (the CSV's value), its ``min_us`` / ``max_us``, ``runs``, ``ranks``, and ``max_rank_median_us`` = the
    largest per-rank median (the other common reading of "slowest rank"; normally within a percent)."""
    slow = slowest_rank_per_run(times_by_rank)
    return {"median_us": statistics.median(slow), "min_us": min(slow), "max_us": max(slow), "runs": len(slow),
            "ranks": len(times_by_rank),
            "max_rank_median_us": max(statistics.median(t) for t in times_by_rank)}


def copy_window_stats(gemms: Sequence[Tuple[float, float]], copies: Sequence[Sequence[Tuple[float, float]]],
                      copy_alone_us: Sequence[float]) -> Dict[str, object]:
    """GEMM and copy times of one GEMM-beside-copies run (``copy_contention/measure_h200_rows.py``'s protocol).

    ``gemms``: (start, end) of each GEMM; ``copies``: per copy stream, (start, end) of each copy, all on one
    time base (us); ``copy_alone_us``: each stream's copy time alone. The background window is [the last
    stream's first copy start, the first stream's last copy end]; ``gemm_us`` is the median of the GEMMs lying
    entirely inside it; ``copy_slowdown`` the mean over streams of (median copy lying entirely inside those
    GEMMs' span) / (copy alone). Keys are absent when nothing lies inside."""
    out: Dict[str, object] = {}
    if not gemms or not copies or any(not c for c in copies):
        return {"gemms_inside": 0}
    w0, w1 = max(c[0][0] for c in copies), min(c[-1][1] for c in copies)
    inside = [(a, b) for a, b in gemms if a >= w0 and b <= w1]
    out["gemms_inside"] = len(inside)
    if not inside:
        return out
    out["gemm_us"] = statistics.median(b - a for a, b in inside)
    g0, g1 = inside[0][0], inside[-1][1]
    sd, counts = [], []
    for cs, alone in zip(copies, copy_alone_us):
        full = [y - x for x, y in cs if x >= g0 and y <= g1]
        counts.append(len(full))
        if full:
            sd.append(statistics.median(full) / alone)
    out["copies_inside"] = counts
    if sd:
        out["copy_slowdown"] = sum(sd) / len(sd)
    return out


# ------------------------------------------------------------------------------------------------- shapes
#: Sub-layer K factors (paper Sec. 6.1; t3sim/config/workload.py SUBLAYER_K_FACTOR, FC-1/FC-2 = the FFN's 4)
SUBLAYER_K_FACTOR = {"OP": 1, "FC-2": 4, "FC-1": 4, "IP": 3}
SUBLAYERS = ("OP", "FC-2", "FC-1", "IP")
#: the models of the overlap measurement: tokens T = seq_len x batch, hidden H (configs/models/*.yaml)
MODELS = {"mega-gpt-2": {"tokens": 1024 * 16, "hidden": 3072}, "t-nlg": {"tokens": 1024 * 8, "hidden": 4256}}


@dataclass(frozen=True)
class Shape:
    """One GEMM ``M x K`` by ``K x N`` of a sub-layer (``op`` gemm_rs: its output ``M x N`` is reduce-scattered;
    ag_gemm: its input ``M x K`` is all-gathered from ``M/tp``-row shards first)."""

    model: str
    sublayer: str
    tp: int
    M: int
    N: int
    K: int
    op: str = "gemm_rs"

    def row(self) -> Dict[str, object]:
        return {"model": self.model, "sublayer": self.sublayer, "tp": self.tp, "M": self.M, "N": self.N,
                "K": self.K}


def sublayer_shape(model: str, sublayer: str, tp: int, op: str = "gemm_rs") -> Shape:
    """The TP-sliced GEMM of a sub-layer (t3sim/workload/generate.py ``kernel_for``): gemm_rs ``M = T, N = H,
    K = H f / tp``; ag_gemm (the sub-layer's consumer GEMM, whose input is gathered) ``M = T, N = H f / tp,
    K = H``."""
    m = MODELS[model]
    T, H, f = m["tokens"], m["hidden"], SUBLAYER_K_FACTOR[sublayer]
    if (H * f) % tp or T % tp:
        raise ValueError(f"{model} {sublayer}: TP={tp} does not divide H*f={H * f} or T={T}")
    if op == "gemm_rs":
        return Shape(model, sublayer, tp, T, H, H * f // tp, op)
    if op == "ag_gemm":
        return Shape(model, sublayer, tp, T, H * f // tp, H, op)
    raise ValueError(f"op {op!r}: gemm_rs or ag_gemm")


def overlap_shapes(tp: int = 4, models: Sequence[str] = ("mega-gpt-2", "t-nlg"),
                   ops: Sequence[str] = ("gemm_rs", "ag_gemm")) -> List[Shape]:
    """Every model x op x sub-layer shape at ``tp`` (Mega-GPT-2 gemm_rs = the rows of overlap_4gpu.csv)."""
    return [sublayer_shape(m, s, tp, op) for m in models for op in ops for s in SUBLAYERS]


def read_shapes(path: Path) -> List[Shape]:
    """The ``model,sublayer,tp,M,N,K`` of each row of a reference CSV (gemm_copy_contention.csv)."""
    with open(path, newline="") as f:
        return [Shape(r["model"], r["sublayer"], int(r["tp"]), int(r["M"]), int(r["N"]), int(r["K"]))
                for r in csv.DictReader(f)]


# --------------------------------------------------------------------------------------------- CSV output
COLLECTIVE_COLUMNS = ("collective", "gpus", "size_mb", "dtype", "median_us", "nccl_algo", "nccl_proto",
                      "nccl_choice", "nccl_channels", "min_us", "max_us", "runs")
#: the reference overlap columns (gemm_us .. chunked_decomposition_us) plus which pair (``op``), how it ran
#: (``scheme``: sequential / asynctp), its time as that scheme runs it (``pair_us``) and the all-gather alone
OVERLAP_COLUMNS = ("model", "sublayer", "tp", "M", "N", "K", "dtype", "op", "scheme", "pair_us", "gemm_us",
                   "rs_us", "ag_us", "sequential_us", "concurrent_independent_us", "chunked_decomposition_us",
                   "runs")
#: background copies of the GEMM-beside-copies CSV: the reference's local ones and the peer (NVLink) ones
CONTENTION_BACKGROUNDS = ("d2d1", "d2d2", "pcie", "p2p_out", "p2p_in", "p2p_both")


def contention_columns(backgrounds: Sequence[str] = CONTENTION_BACKGROUNDS) -> Tuple[str, ...]:
    return ("model", "sublayer", "tp", "M", "N", "K", "gemm_alone_us",
            *(f"gemm_with_{b}_us" for b in backgrounds), *(f"copy_slowdown_{b}" for b in backgrounds))


def fmt(value: object, digits: int = 1) -> str:
    """A CSV cell: ``""`` for None / NaN, integers as such, floats rounded to ``digits``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        return f"{value:.{digits}f}"
    return str(value)


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[Mapping[str, object]],
              digits: Optional[Mapping[str, int]] = None) -> Path:
    """Write ``rows`` (mappings; missing keys are empty cells, unknown keys an error) under ``columns``,
    atomically (a temporary file renamed over ``path``); floats to 1 decimal unless ``digits`` says."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    digits = dict(digits or {})
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            extra = set(r) - set(columns)
            if extra:
                raise ValueError(f"row has columns not in the header: {sorted(extra)}")
            w.writerow([fmt(r.get(c), digits.get(c, 1)) for c in columns])
    os.replace(tmp, path)
    return path


# ------------------------------------------------------------------------------------- per-rank raw files
def rank_path(raw: Path, rank: int) -> Path:
    """Where rank ``rank`` of a worker writes its own results (the driver merges them into ``raw``): no
    collective is needed to gather them (an NCCL all-gather would fail under ``NCCL_ALGO=Tree``)."""
    raw = Path(raw)
    return raw.with_name(f"{raw.stem}.rank{rank}.json")


def clear_rank_files(raw: Path) -> Path:
    """Make ``raw``'s folder and remove ``raw`` and its rank files left by an earlier run; returns ``raw``."""
    raw = Path(raw)
    raw.parent.mkdir(parents=True, exist_ok=True)
    for old in [raw, *raw.parent.glob(f"{raw.stem}.rank*.json")]:
        old.unlink(missing_ok=True)
    return raw


def read_rank_files(raw: Path) -> List[Dict[str, object]]:
    """Every rank's file of ``raw`` in rank order; ValueError unless ranks 0..world-1 are all there."""
    raw = Path(raw)
    parts = sorted((json.loads(p.read_text()) for p in raw.parent.glob(f"{raw.stem}.rank*.json")),
                   key=lambda d: int(d["rank"]))
    if not parts:
        raise ValueError(f"no rank file of {raw}")
    world = int(parts[0]["world_size"])
    if [int(d["rank"]) for d in parts] != list(range(world)):
        raise ValueError(f"{raw}: rank files {[d['rank'] for d in parts]} of a world of {world}")
    return parts


def merge_ranks(parts: Sequence[Mapping[str, object]]) -> Dict[str, object]:
    """One raw result from the ranks' files: rank 0's fields, and per result (same order on every rank) each
    rank's ``times_us`` gathered into ``times_by_rank`` -- a list per rank, or, when ``times_us`` maps cases to
    lists, a mapping of the cases every rank timed (a rank whose AsyncTP failed drops it everywhere).
    ``errors`` and ``checks`` of all ranks are joined."""
    head = parts[0]
    merged: Dict[str, object] = {k: v for k, v in head.items() if k not in ("rank", "results", "error", "checks")}
    results = []
    for i, rec in enumerate(head["results"]):
        per_rank = [d["results"][i]["times_us"] for d in parts]
        keys = {k: v for k, v in rec.items() if k != "times_us"}
        if isinstance(rec["times_us"], dict):
            cases = [c for c in rec["times_us"] if all(c in t for t in per_rank)]
            results.append({**keys, "times_by_rank": {c: [t[c] for t in per_rank] for c in cases}})
        else:
            results.append({**keys, "times_by_rank": per_rank})
    merged["results"] = results
    merged["errors"] = sorted({str(d["error"]) for d in parts if d.get("error")})
    merged["checks"] = [c for d in parts for c in d.get("checks", [])]
    return merged


# ------------------------------------------------------------------------------------- raw JSON -> CSV rows
def collective_rows(raw: Mapping[str, object], log: Sequence[TuningLine]) -> List[Dict[str, object]]:
    """The collective CSV rows of one setting's raw results (``measure_collectives.py`` worker output:
    ``setting``, ``world_size``, ``dtype``, ``results`` = [{collective, size_mb, times_by_rank}]) with what NCCL
    chose for each (from that setting's log)."""
    setting = parse_setting(str(raw["setting"]))
    gpus = int(raw["world_size"])
    rows = []
    for r in raw["results"]:
        s = summarize(r["times_by_rank"])
        choice, channels = choices_for(log, r["collective"], r["size_mb"], gpus, setting=setting.label)
        size = r["size_mb"]
        rows.append({"collective": r["collective"], "gpus": gpus,
                     "size_mb": int(size) if float(size).is_integer() else float(size), "dtype": raw["dtype"],
                     "median_us": s["median_us"], **setting.columns(), "nccl_choice": choice,
                     "nccl_channels": channels, "min_us": s["min_us"], "max_us": s["max_us"], "runs": s["runs"]})
    return rows


#: overlap cases (raw keys) -> their CSV column; ``pair`` is the case of the row's scheme
OVERLAP_CASES = {"gemm": "gemm_us", "rs": "rs_us", "ag": "ag_us", "sequential": "sequential_us",
                 "concurrent": "concurrent_independent_us", "chunked": "chunked_decomposition_us"}


def overlap_rows(raw: Mapping[str, object]) -> List[Dict[str, object]]:
    """The overlap CSV rows of ``measure_asynctp.py``'s raw results: per shape a ``sequential`` row (every case
    measured beside it: GEMM alone, the collective alone, the sequential pair, and for gemm_rs the concurrent
    and chunked cases of the reference protocol; ``pair_us`` = ``sequential_us``) and, when AsyncTP ran, an
    ``asynctp`` row whose ``pair_us`` is the fused op (its other cells empty)."""
    rows = []
    for r in raw["results"]:
        shape = r["shape"]
        base = {k: shape[k] for k in ("model", "sublayer", "tp", "M", "N", "K")}
        base.update(dtype=raw["dtype"], op=shape["op"])
        stats = {case: summarize(t) for case, t in r["times_by_rank"].items()}
        seq = {"scheme": "sequential", "pair_us": stats["sequential"]["median_us"],
               "runs": stats["sequential"]["runs"]}
        for case, col in OVERLAP_CASES.items():
            if case in stats:
                seq[col] = stats[case]["median_us"]
        rows.append({**base, **seq})
        if "asynctp" in stats:
            rows.append({**base, "scheme": "asynctp", "pair_us": stats["asynctp"]["median_us"],
                         "runs": stats["asynctp"]["runs"]})
    return rows


def contention_rows(raw: Mapping[str, object]) -> List[Dict[str, object]]:
    """The GEMM-beside-copies CSV rows of ``measure_p2p_copy.py``'s raw results (``rows`` = [{shape,
    gemm_alone_us, with: {bg: copy_window_stats(...)}}])."""
    out = []
    for r in raw["rows"]:
        row: Dict[str, object] = {**{k: r["shape"][k] for k in ("model", "sublayer", "tp", "M", "N", "K")},
                                  "gemm_alone_us": r["gemm_alone_us"]}
        for bg, w in r["with"].items():
            row[f"gemm_with_{bg}_us"] = w.get("gemm_us")
            row[f"copy_slowdown_{bg}"] = w.get("copy_slowdown")
        out.append(row)
    return out


CONTENTION_DIGITS = {f"copy_slowdown_{b}": 3 for b in CONTENTION_BACKGROUNDS}
