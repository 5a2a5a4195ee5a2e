"""Timelines of one run in the Chrome trace-event format (opens in Perfetto, ui.perfetto.dev).

``t3sim run EXPERIMENT --timeline`` simulates one point with tracing on
(:func:`t3sim.system.core.simulate` with ``timeline=True``) and writes ``timeline.json`` beside its results. Per simulated GPU (one
trace *process* each; homogeneous runs simulate GPU 0 only, the shadows mirror it):

* thread "phases": the sub-layer's GEMM / RS / AG phases (the scheme's phase marks);
* threads "stream <name>": every kernel of the scheme's program on its stream, launch to end;
* thread "GEMM stages": each stage of WGs, from the previous stage's end to the last of its WGs;
* threads "CU n.l": every WG (``seq``, tile), on lane ``l`` of its CU (a CU runs up to
  ``wgs_per_cu`` WGs at once, so WGs of one CU are spread over lanes that never overlap);
* tracks a scheme adds (``SystemModel.add_timeline``), e.g. T3's async track "DMA": every DMA
  command, from its trigger (tracker threshold reached) to its last batch read back and sent;
* counters: DRAM bandwidth per stream and kind (GB/s, the ``bandwidth_over_time`` statistics),
  requests waiting in the memory controllers (sampled every ``bin_ns``; as of the controllers'
  last update, which lags simulated time by at most one memory-pump step), and the GB/s leaving
  on each of the GPU's links.

Times inside the simulator are integer ticks (ps); the trace's ``ts``/``dur`` are microseconds,
as the format requires, converted only here. :func:`validate` checks a trace against the
trace-event format (the subset used here); the tests run it on real traces.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from t3sim.sim.clock import TICKS_PER_US, ns_to_ticks

#: width of one sampled-counter bin (memory queue occupancy), ns
SAMPLE_NS = 1000


def _us(ticks: int) -> float:
    return ticks / TICKS_PER_US


def start_sampler(model, bin_ns: int = SAMPLE_NS) -> Dict[int, List[Tuple[int, int]]]:
    """Sample every simulated GPU's memory-controller backlog each ``bin_ns``; returns the live lists.

    Only reads state (no advance), so traced and untraced runs give identical statistics, except
    ``sim.events``, which counts the sampler's own timeouts (tested).
    """
    env = model.env
    out: Dict[int, List[Tuple[int, int]]] = {g: [] for g in model.hiers}
    step = ns_to_ticks(bin_ns)

    def sample():
        while True:
            for g, h in model.hiers.items():
                out[g].append((env.now, int(h.mem.outstanding)))
            yield env.timeout(step)

    env.process(sample())
    return out


def _lanes(spans) -> List[Tuple[int, int, int, int, int]]:
    """Assign each ``(cu, seq, t0, t1)`` a lane of its CU so lanes never overlap: ``(cu, lane, seq, t0, t1)``."""
    free: Dict[int, List[int]] = {}  # cu -> end tick of each lane
    out = []
    for cu, seq, t0, t1 in sorted(spans, key=lambda s: (s[2], s[1])):
        ends = free.setdefault(cu, [])
        lane = next((i for i, e in enumerate(ends) if e <= t0), len(ends))
        if lane == len(ends):
            ends.append(t1)
        else:
            ends[lane] = t1
        out.append((cu, lane, seq, t0, t1))
    return out


def build(model, stats, samples: Dict[int, List[Tuple[int, int]]]) -> Dict[str, Any]:
    """The trace of a finished traced run of ``model`` (module doc); ``stats`` is its :class:`Stats`."""
    ev: List[Dict[str, Any]] = []
    marks = dict(model.marks)
    for g in model.hiers:
        pid = g + 1
        ev.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"GPU {g}"}})
        names = {1: "phases", 2: "GEMM stages"}
        t = marks.get("start", 0)
        for ph in ("gemm", "rs", "ag"):
            if ph in marks:
                ev.append({"ph": "X", "name": ph.upper(), "cat": "phase", "pid": pid, "tid": 1, "ts": _us(t),
                           "dur": _us(marks[ph] - t)})
                t = marks[ph]
        for gk in model.gemm_kernels:
            if gk.hier is not model.hiers[g] or gk.run is None:
                continue
            prev = gk.run.start_tick
            for s, end in enumerate(gk.run.stage_end_ticks):
                if end >= 0:
                    ev.append({"ph": "X", "name": f"stage {s}", "cat": "gemm", "pid": pid, "tid": 2, "ts": _us(prev),
                               "dur": _us(end - prev), "args": {"wgs": gk.slots, "kernel": gk.kernel.kernel or "workload",
                                                                "tile": f"{gk.kernel.tile_m}x{gk.kernel.tile_n}"}})
                    prev = end
            for cu, lane, seq, t0, t1 in _lanes(gk.wg_spans or []):
                tid = 1000 + 16 * cu + lane
                names[tid] = f"CU {cu}.{lane}"
                ev.append({"ph": "X", "name": f"WG {seq}", "cat": "wg", "pid": pid, "tid": tid, "ts": _us(t0),
                           "dur": _us(t1 - t0), "args": {"seq": seq, "tile": int(gk.order[seq])}})
            red = getattr(gk, "reduce", None)  # a split-K GEMM's reduction kernel: after every slice WG, same CUs
            for cu, lane, seq, t0, t1 in _lanes((red.wg_spans or []) if red is not None else []):
                tid = 1000 + 16 * cu + lane
                names[tid] = f"CU {cu}.{lane}"
                ev.append({"ph": "X", "name": f"reduce {seq}", "cat": "wg.reduce", "pid": pid, "tid": tid,
                           "ts": _us(t0), "dur": _us(t1 - t0), "args": {"seq": seq}})
        streams = sorted({r.stream for r in model.kernel_records})
        for r in model.kernel_records:  # every kernel of the scheme's program, one thread per stream
            if r.end >= r.start >= 0:
                tid = 500 + streams.index(r.stream)
                names[tid] = f"stream {r.stream}"
                ev.append({"ph": "X", "name": r.name, "cat": f"kernel.{r.kind}", "pid": pid, "tid": tid,
                           "ts": _us(r.start), "dur": _us(r.end - r.start),
                           "args": {"phase": r.phase, "comm": r.comm}})
        for source in model.timeline_sources:  # scheme-provided tracks (e.g. T3's DMA commands)
            ev += source(g, pid)
        for tid, name in sorted(names.items()):
            ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        ev += _dram_counters(stats, g, pid) + _link_counters(stats, g, pid)
        for tick, n in samples.get(g, []):
            ev.append({"ph": "C", "name": "memory-controller backlog (requests)", "pid": pid, "tid": 0,
                       "ts": _us(tick), "args": {"requests": n}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"generator": "t3sim", "experiment": model.exp.name, "scheme": model.exp.scheme.kind}}


def _series(stats, prefix: str) -> Dict[str, Any]:
    return {n[len(prefix):]: stats.value(n) for n in stats.names() if n.startswith(prefix)}


def _dram_counters(stats, g: int, pid: int) -> List[Dict[str, Any]]:
    s = _series(stats, f"gpu{g}.hbm.bandwidth_over_time.")
    if "bin_ns" not in s:
        return []
    bin_ns, start_ns = float(s.pop("bin_ns")), float(s.pop("start_ns", 0.0))
    keys = sorted(k for k, v in s.items() if hasattr(v, "__len__") and not isinstance(v, str))
    n = max((len(s[k]) for k in keys), default=0)
    out = []
    for i in range(n):
        args = {k.removesuffix("_GBps"): float(s[k][i]) if i < len(s[k]) else 0.0 for k in keys}
        out.append({"ph": "C", "name": "DRAM bandwidth (GB/s)", "pid": pid, "tid": 0,
                    "ts": (start_ns + i * bin_ns) / 1000.0, "args": args})
    return out


def _link_counters(stats, g: int, pid: int) -> List[Dict[str, Any]]:
    out = []
    for name in stats.names():
        pre = f"network.link.gpu{g}_to_"
        if not (name.startswith(pre) and name.endswith(".bytes_over_time")):
            continue
        link = name[len("network.link."):-len(".bytes_over_time")]
        bin_ns = float(stats.value(f"network.link.{link}.bin_ns"))
        for i, b in enumerate(stats.value(name)):
            out.append({"ph": "C", "name": f"link {link.replace('_to_', ' -> ')} (GB/s)", "pid": pid, "tid": 0,
                        "ts": i * bin_ns / 1000.0, "args": {"GBps": float(b) / bin_ns}})
    return out


# ---------------------------------------------------------------------- format check
_PHASES = {"X", "B", "E", "b", "e", "n", "C", "M", "i", "I"}


def validate(trace: Dict[str, Any]) -> List[str]:
    """Problems of ``trace`` against the trace-event format (JSON object form); empty when valid.

    Checks: a ``traceEvents`` list of objects with a known ``ph``, string ``name``, integer
    ``pid``/``tid``; numeric non-negative ``ts`` (all but metadata); ``dur >= 0`` for complete
    events; numeric ``args`` for counters; metadata naming processes/threads; every async begin
    closed by an end with the same ``cat``/``id`` no earlier; ``displayTimeUnit`` ``ms`` or ``ns``.
    """
    bad: List[str] = []
    evs = trace.get("traceEvents")
    if not isinstance(evs, list):
        return ["traceEvents is not a list"]
    if trace.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        bad.append("displayTimeUnit must be 'ms' or 'ns'")
    open_async: Dict[Tuple[str, str, int], float] = {}
    for i, e in enumerate(evs):
        where = f"event {i}"
        if not isinstance(e, dict):
            bad.append(f"{where}: not an object")
            continue
        ph = e.get("ph")
        if ph not in _PHASES:
            bad.append(f"{where}: ph {ph!r} unknown")
            continue
        if not isinstance(e.get("name"), str):
            bad.append(f"{where}: name missing")
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid", 0), int):
            bad.append(f"{where}: pid/tid must be integers")
        if ph == "M":
            if e.get("name") not in ("process_name", "thread_name", "process_sort_index", "thread_sort_index") \
                    or not isinstance(e.get("args", {}).get("name", e.get("args", {}).get("sort_index")), (str, int)):
                bad.append(f"{where}: bad metadata event")
            continue
        ts = e.get("ts")
        if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts < 0:
            bad.append(f"{where}: ts must be a number >= 0")
            continue
        if ph == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
            bad.append(f"{where}: complete event needs dur >= 0")
        if ph == "C" and not (isinstance(e.get("args"), dict) and e["args"]
                              and all(isinstance(v, (int, float)) for v in e["args"].values())):
            bad.append(f"{where}: counter args must be numbers")
        if ph in ("b", "e"):
            key = (str(e.get("cat")), str(e.get("id")), e.get("pid"))
            if "id" not in e or "cat" not in e:
                bad.append(f"{where}: async event needs cat and id")
            elif ph == "b":
                open_async[key] = ts
            elif key not in open_async or open_async.pop(key) > ts:
                bad.append(f"{where}: async end without an earlier begin")
    bad += [f"async {k[1]} never ends" for k in open_async]
    return bad
