"""Simulation side of the loaded-latency measurement (``experiments/validation/loaded_latency/``).

The measurement: one thread chases a random single cycle of lines (``p = next[p]``: each load's address is the value
the last one returned, so exactly one load is outstanding) over a footprint, alone or beside a streaming-read kernel
on ``k`` SMs; each row pairs the chase's nanoseconds per hop with the HBM bandwidth the streaming kernel achieved.
:func:`simulate_chase` runs the same experiment on one GPU's :class:`~t3sim.compute.memhier.MemoryHierarchy`:

* **the chase**: one 64 B read at a time (a 4 B load fetches its L2 sector; t3sim's requests are 64 B) at lines drawn
  uniformly from the footprint with a seeded generator (a random cycle visits each line once: with a footprint far
  above the L2 both miss the L2 on nearly every hop), cached in L2 as ``ld.global.cg`` is; it starts once the stream
  has run ``warm_ns``, and its ns per hop is its span over its hops. With ``cycle`` (footprints up to
  :data:`CYCLE_MAX_B`) it is the measurement's own chase instead: a seeded random single cycle over the footprint's
  128 B lines, after one pass over the whole cycle that the timing leaves out (reads in cycle order,
  :data:`WARM_BATCH` at a time), so
  the L2 holds what a previous run of the chase left there, as the measured runs, each going on from where the last
  one ended, find it; the timed hops go on along the cycle;
* **the streaming kernel**: on each of ``k`` CUs, ``inflight_per_cu_B`` bytes of reads outstanding, in lanes of
  :data:`LANE_B`, over a separate buffer in the measured kernel's grid-stride order: one load instruction of the
  CTA covers a :data:`BLOCK_B` block, CU ``c`` reads blocks ``c, c + k, c + 2k, ...``, and a lane whose read returns
  takes the CU's next lane in that order (a window of outstanding loads in program order); its bandwidth is the bytes
  that returned while the chase ran, over the chase's span.

A streaming SM's outstanding bytes are not set by the kernel alone (the measured kernel would keep 128 KiB of loads
in flight) but by the SM's bound on misses in flight; the caller passes it (``inflight_per_cu_B``), e.g. from the
measured one-SM row by Little's law (bandwidth x latency).

Units: bytes, nanoseconds (results), ticks (1 ps) inside; bandwidth in GB/s (1e9 B/s).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.sim.clock import TICKS_PER_NS, ns_to_ticks
from t3sim.sim.engine import Engine

GiB = 1 << 30
#: bytes one streaming lane keeps outstanding (16 requests of 64 B: two warps' 16 B loads of one instruction)
LANE_B = 1024
#: bytes one load instruction of the measured CTA covers (1024 threads x 16 B): the grid-stride sweep's unit
BLOCK_B = 16384
#: where the streaming buffer and the chase's footprint live (disjoint)
STREAM_BASE_B, STREAM_SPAN_B = 0, 2 * GiB
CHASE_BASE_B = 4 * GiB
#: the chase's line (``measure.py``'s ``LINE_B``: the L2's 128 B line) and the largest footprint ``cycle`` takes
CHASE_LINE_B = 128
CYCLE_MAX_B = 256 << 20
#: reads per batch of the untimed pass over the cycle (issued in cycle order, one batch after another)
WARM_BATCH = 4096


@dataclass(frozen=True)
class ChaseOutcome:
    """One simulated row: the chase's ns per hop, the stream's GB/s beside it, wall-clock seconds."""

    ns_per_hop: float
    stream_GBps: float
    hops: int
    wall_s: float


def simulate_chase(system, stream_cus: int = 0, inflight_per_cu_B: int = 0, hops: int = 300,
                   footprint_B: int = 4 * GiB, warm_ns: float = 10_000.0, seed: int = 1,
                   cycle: bool = False) -> ChaseOutcome:
    """The chase over ``footprint_B`` beside a streaming kernel on ``stream_cus`` CUs with ``inflight_per_cu_B``
    bytes of reads outstanding each (module doc). ``stream_cus = 0``: the idle latency; ``cycle`` (idle only): a
    random cycle over the footprint's lines after a pass over it that the timing leaves out (the warm L2 of the
    measured idle rows)."""
    if hops < 1 or footprint_B < REQ_B:
        raise ValueError(f"hops must be >= 1 and footprint_B >= {REQ_B} (got {hops}, {footprint_B})")
    if cycle and (stream_cus or not CHASE_LINE_B <= footprint_B <= CYCLE_MAX_B):
        raise ValueError(f"cycle is the idle chase (stream_cus 0) over {CHASE_LINE_B} B to {CYCLE_MAX_B >> 20} MiB, "
                         f"got stream_cus {stream_cus}, footprint_B {footprint_B}")
    if stream_cus < 0 or stream_cus > system.gpu.num_cus:
        raise ValueError(f"stream_cus must be 0..{system.gpu.num_cus}, got {stream_cus}")
    if stream_cus and inflight_per_cu_B < LANE_B:
        raise ValueError(f"inflight_per_cu_B must be at least {LANE_B} B with a stream, got {inflight_per_cu_B}")
    t_wall = time.perf_counter()
    eng = Engine(seed=0)
    env = eng.env
    hier = MemoryHierarchy(env, system)
    rng = np.random.default_rng(seed)
    if cycle:  # the measured chase: a random single cycle, walked once (not timed), then timed from its start
        order = rng.permutation(footprint_B // CHASE_LINE_B).astype(np.int64) * CHASE_LINE_B + CHASE_BASE_B
        lines = np.resize(order, hops)
    else:
        order = None
        lines = rng.integers(0, footprint_B // REQ_B, hops, dtype=np.int64) * REQ_B + CHASE_BASE_B
    warm = ns_to_ticks(warm_ns) if stream_cus else 0
    span = {}
    moved = [0]
    lanes = max(1, inflight_per_cu_B // LANE_B)
    per_lane = LANE_B // REQ_B
    ramp = np.arange(per_lane, dtype=np.int64) * REQ_B
    blocks = STREAM_SPAN_B // BLOCK_B

    def chase():
        if order is not None:
            for i in range(0, len(order), WARM_BATCH):
                yield hier.read(order[i:i + WARM_BATCH])
        if warm:
            yield env.timeout(warm)
        t0 = env.now
        for a in lines:
            yield hier.read(np.array([a], dtype=np.int64))
        span["t"] = (t0, env.now)
        eng.finish()

    nxt = [0] * stream_cus  # each CU's next lane, in its program order

    def lane(cu: int):
        while "t" not in span:
            i = nxt[cu]
            nxt[cu] = i + 1
            q, r = divmod(i, BLOCK_B // LANE_B)  # the CU's q-th block of the grid-stride sweep, its r-th lane
            block = (q * stream_cus + cu) % blocks
            yield hier.read(STREAM_BASE_B + block * BLOCK_B + r * LANE_B + ramp)
            if env.now >= warm:
                moved[0] += LANE_B

    for cu in range(stream_cus):
        for _ in range(lanes):
            env.process(lane(cu))
    env.process(chase())
    eng.run()
    t0, t1 = span["t"]
    ns = (t1 - t0) / TICKS_PER_NS
    return ChaseOutcome(ns / hops, moved[0] / ns if stream_cus else 0.0, hops, time.perf_counter() - t_wall)
