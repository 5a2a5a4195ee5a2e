"""CUDA timing shared by the one-GPU measurement scripts (``gemm_pipeline/``, ``gemm_kernels/``,
``loaded_latency/``).

- :func:`ev_times`: each call between two CUDA events, the host waiting for the call before the next; the time
  includes whatever the GPU waits for the host to enqueue (the method of the H200 reference CSVs and
  ``gemm_pipeline/``).
- :func:`gpu_times`: the same events, but the GPU is first held busy by a sleep kernel long enough for the host to
  enqueue the whole call, so the time is the GPU's alone: the call's kernels and the gaps between them.
- :func:`kernels_of`: the kernels one call launches, with their grid, block, registers and shared memory, from
  torch.profiler's trace.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from typing import Callable, List

import torch
from torch.profiler import ProfilerActivity, profile


def ev_times(fn: Callable[[], object], reps: int, warm: int = 5) -> List[float]:
    """Microseconds of ``reps`` calls of ``fn``, each between two CUDA events, after ``warm`` warm-up calls."""
    out = []
    for i in range(warm + reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        if i >= warm:
            out.append(e0.elapsed_time(e1) * 1e3)
    return out


def host_us(fn: Callable[[], object], reps: int = 5) -> float:
    """The longest host time (microseconds) of ``reps`` calls of ``fn``, each after the GPU has drained."""
    worst = 0.0
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        worst = max(worst, (time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return worst


def gpu_times(fn: Callable[[], object], reps: int, warm: int = 5) -> List[float]:
    """Microseconds of ``reps`` calls of ``fn`` on the GPU alone: before each call a sleep kernel of three times
    the call's longest host time (and at least 200 us) holds the GPU, so that the host has enqueued the first
    event, every kernel of the call and the second event before the GPU reaches them."""
    for _ in range(warm):
        fn()
    clock_hz = torch.cuda.clock_rate() * 1e6 if hasattr(torch.cuda, "clock_rate") else 1.98e9
    cycles = int(max(200.0, 3 * host_us(fn)) * 1e-6 * clock_hz)
    out = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(cycles)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        out.append(e0.elapsed_time(e1) * 1e3)
    return out


def kernels_of(fn, calls: int = 3) -> list[dict]:
    """The CUDA kernels one call of ``fn`` launches: name, grid, block, registers per thread, shared memory (B) and
    duration (us, the median over ``calls`` profiled calls), from the profiler's trace."""
    fn()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(calls):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        with tempfile.NamedTemporaryFile(suffix=".json") as t:
            prof.export_chrome_trace(t.name)
            trace = json.load(open(t.name))
        per_call.append([e for e in sorted(trace.get("traceEvents", []), key=lambda e: e.get("ts", 0))
                         if e.get("cat") == "kernel"])
    out = []
    for i, e in enumerate(per_call[0]):
        a = e.get("args", {})
        durs = [c[i].get("dur", 0.0) for c in per_call if len(c) > i]
        out.append({"name": e.get("name", ""), "dur_us": statistics.median(durs),
                    "grid": "x".join(str(v) for v in a.get("grid", [])),
                    "block": "x".join(str(v) for v in a.get("block", [])),
                    "regs": a.get("registers per thread", ""), "smem_B": a.get("shared memory", "")})
    return out
