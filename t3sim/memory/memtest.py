"""Synthetic memory tests: drive a MemorySystem with a pattern and measure it.

Every pattern submits all requests at tick 0 (an unbounded backlog, so the
result is the memory's sustained throughput), compute stream, source GEMM.

* ``stream-read`` / ``stream-write`` / ``nmc-update``: consecutive DRAM accesses
  (``hbm.access_size_B`` apart: 32 B on Table 1);
* ``random-read``: uniformly random lines over the device capacity (seeded);
* ``mixed``: a read stream and a write stream (disjoint regions) interleaved
  in chunks of ``MIXED_CHUNK`` requests: ``R`` read chunks then ``W`` write
  chunks, repeated, for a read:write mix ``R:W`` (default 1:1; 2:1 is the
  usual comparison point, ``t3sim memtest --pattern mixed --mix 2:1``).
"""

from __future__ import annotations

import time
from typing import Dict, List, Tuple

import numpy as np

from t3sim.memory.checker import check
from t3sim.memory.request import Kind
from t3sim.memory.stats import summary
from t3sim.memory.system import MemorySystem

PATTERNS = ("stream-read", "stream-write", "random-read", "mixed", "nmc-update")
MIXED_CHUNK = 256
#: the ``mixed`` pattern's default read:write ratio (in chunks)
DEFAULT_MIX = (1, 1)


def parse_mix(text: str) -> Tuple[int, int]:
    """``"R:W"`` -> ``(R, W)``: non-negative integers, not both zero; ValueError otherwise."""
    parts = text.split(":")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"{text!r} is not R:W with whole numbers")
    r, w = int(parts[0]), int(parts[1])
    if r + w == 0:
        raise ValueError(f"{text!r} has no reads and no writes")
    return r, w


def make_pattern(name: str, n: int, capacity_B: int, line_B: int, rng: np.random.Generator,
                 mix: Tuple[int, int] = DEFAULT_MIX) -> List[Tuple[np.ndarray, Kind]]:
    """Batches ``(addrs, kind)`` of pattern ``name`` with ``n`` requests in total (``mix``: ``mixed``'s R:W)."""
    seq = np.arange(n, dtype=np.int64) * line_B
    if name == "stream-read":
        return [(seq, Kind.READ)]
    if name == "stream-write":
        return [(seq, Kind.WRITE)]
    if name == "nmc-update":
        return [(seq, Kind.UPDATE)]
    if name == "random-read":
        return [(rng.integers(0, capacity_B // line_B, n, dtype=np.int64) * line_B, Kind.READ)]
    if name == "mixed":
        half = capacity_B // 2
        reads, writes = mix
        out = []
        for i, s in enumerate(range(0, n, MIXED_CHUNK)):
            e = min(n, s + MIXED_CHUNK)
            k = Kind.READ if i % (reads + writes) < reads else Kind.WRITE
            out.append((seq[s:e] + (0 if k == Kind.READ else half), k))
        return out
    raise ValueError(f"unknown pattern {name!r}")


def simulate(system, pattern: str, n: int, mode: str = "fast", seed: int = 0, record: bool = False,
             mix: Tuple[int, int] = DEFAULT_MIX) -> Tuple[MemorySystem, float]:
    """Run one pattern; return the memory system and the wall-clock seconds of submit + simulation."""
    ms = MemorySystem(system, mode=mode, record_commands=record)
    batches = make_pattern(pattern, n, ms.amap.capacity_B, ms.access_B, np.random.default_rng(seed), mix)
    t0 = time.perf_counter()
    for addrs, kind in batches:
        ms.submit(0, addrs, kind, "compute", "gemm")
    ms.run_until_idle()
    return ms, time.perf_counter() - t0


def warm_up(system) -> None:
    """Compile (or load from cache) the numba kernels outside any timing."""
    simulate(system, "mixed", 600, record=True)
    simulate(system, "mixed", 600)  # without the command log: the path the timed runs take (issue records)
    check(np.zeros((0, 5), dtype=np.int64), system.hbm)


def run_memtest(system, pattern: str, n: int, mode: str = "fast", seed: int = 0, do_check: bool = True,
                compare_requests: int = 4000, mix: Tuple[int, int] = DEFAULT_MIX) -> Dict[str, object]:
    """The memtest command's measurement, as a dict of plain values."""
    if mode == "fast":
        warm_up(system)
    # timed run without the command log (its cost is the checker's, not the simulator's)
    ms, wall = simulate(system, pattern, n, mode, seed, record=False, mix=mix)
    out: Dict[str, object] = {"pattern": pattern, "mode": mode, **summary(ms)}
    if pattern == "mixed":
        out["mix"] = f"{mix[0]}:{mix[1]}"
    out["wall_s"] = wall
    out["requests_per_s"] = n / wall if wall > 0 else float("inf")
    if do_check:
        logged, _ = simulate(system, pattern, n, mode, seed, record=True, mix=mix)
        if not np.array_equal(logged.r_done[: logged.n], ms.r_done[: ms.n]):
            raise RuntimeError("recording the command log changed the simulation")
        rep = check(logged.command_log(), system.hbm)
        out["commands_checked"] = rep.commands
        out["timing_violations"] = rep.violations
        out["violations_by_constraint"] = rep.by_constraint
    if compare_requests > 0:
        m = min(n, compare_requests)
        fast, _ = simulate(system, pattern, m, "fast", seed, mix=mix)
        ref, _ = simulate(system, pattern, m, "reference", seed, mix=mix)
        sf, sr = summary(fast), summary(ref)
        out["compare_requests"] = m
        out["fast_vs_reference_completion_diff"] = sf["span_ns"] / sr["span_ns"] - 1
        out["fast_vs_reference_bandwidth_diff"] = sf["achieved_GBps"] / sr["achieved_GBps"] - 1
        out["fast_vs_reference_identical"] = bool(np.array_equal(fast.r_done[: fast.n], ref.r_done[: ref.n]))
    return out
