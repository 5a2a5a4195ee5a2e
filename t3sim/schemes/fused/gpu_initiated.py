"""GPU-initiated communication inside a kernel, as the fused kernels use it (fused-collective paper Secs. II-B, III,
III-C). Pieces shared by the fused schemes (``fused_gemv_ar``, ``fused_emb_a2a``, ``fused_gemm_a2a``):

* :class:`LibraryCosts` -- what the paper says GPU-initiated networking costs a kernel (Sec. III-C): the *extra
  registers* of the library's device code (``scheme.fused_library_registers_per_thread``), which lower the
  kernel's occupancy (:func:`occupancies`, compared with the paper's 12.5 %); the *API latency* of each library
  call (``scheme.fused_put_api_latency_ns``: a flag put, a fence); the *bookkeeping* after every logical WG
  (``scheme.fused_bookkeeping_ns``: setting its ``WG_Done`` bit and testing whether it was the slice's last).
* :func:`gemm_occupancies` -- the same for a GEMM kernel record (``fused_gemm_a2a``).
* :func:`persistent_grid` -- the persistent kernel's grid: at most the maximum occupancy ("a fixed,
  input-independent grid size (less than or equal to maximum occupancy as determined from the HIP occupancy
  API)", Sec. III-A), the largest divisor of the logical WG count not above it, so that every persistent WG loops
  over the same number of logical WGs.
* :class:`SliceTracker` -- per-slice completion tracking: each slice is a set of logical WGs; the one that
  completes a slice last is told so (it issues the slice's put, fence and ready flag).
* :class:`Flags` -- ready flags in symmetric memory: a flag put is a library call (API latency) that stores one
  64 B request over the links into the peer's flag array (``fabric``, uncached, category ``other``); a WG waiting
  on a flag polls it: it proceeds once the flag has landed and one uncached read of the flag's line (the poll that
  sees it) has returned. Polls before the flag lands are not simulated (a few 64 B reads; they cost the spinning
  WG nothing it would otherwise use). Every landing is logged (tick) for the ordering invariants.
* :class:`Fences` -- a fence (``roc_shmem_fence``) after a WG's stores to one peer: the WG waits until every
  payload it sent that peer has been written at the peer, plus the acknowledgement's way back (one path latency),
  plus the API latency.

Times are integer ticks (1 tick = 1 ps).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Callable, Dict, Hashable, Iterable, List, Tuple

import numpy as np
import simpy

from t3sim.compute.gemm_kernel import gemm_occupancy
from t3sim.compute.memhier import REQ_B
from t3sim.compute.wg_program import program_occupancy
from t3sim.dma.engine import Fabric, Payload
from t3sim.memory.request import Stream
from t3sim.schemes.runtime.program import Kernel, Program, boundary, run_program
from t3sim.sim.clock import ns_to_ticks


@dataclass(frozen=True)
class LibraryCosts:
    """The GPU-initiated library's costs (module doc), in registers per thread and ticks."""

    extra_registers_per_thread: int
    api_ticks: int
    bookkeeping_ticks: int

    @classmethod
    def of(cls, scheme_cfg) -> "LibraryCosts":
        return cls(int(scheme_cfg.fused_library_registers_per_thread), ns_to_ticks(scheme_cfg.fused_put_api_latency_ns),
                   ns_to_ticks(scheme_cfg.fused_bookkeeping_ns))


@dataclass(frozen=True)
class Occupancies:
    """Occupancy of the original kernel and of the fused one (whose threads carry the library's registers)."""

    base_wgs_per_cu: int
    fused_wgs_per_cu: int
    waves_per_wg: int
    fused_limiter: str

    @property
    def reduction(self) -> float:
        """``1 - fused waves / original waves`` per CU (the paper's "12.5 % lower occupancy" is 0.125)."""
        return 1.0 - self.fused_wgs_per_cu / self.base_wgs_per_cu


def occupancies(gpu, threads_per_wg: int, registers_per_thread: int, lds_per_wg_B: int,
                extra_registers_per_thread: int) -> Occupancies:
    """WGs per CU of a kernel with ``registers_per_thread`` registers, and with the library's extra ones as well."""
    base = program_occupancy(gpu, threads_per_wg, registers_per_thread, lds_per_wg_B)
    fused = program_occupancy(gpu, threads_per_wg, registers_per_thread + extra_registers_per_thread, lds_per_wg_B)
    return Occupancies(base.wgs_per_cu, fused.wgs_per_cu, -(-threads_per_wg // gpu.threads_per_wf), fused.limiter)


def gemm_occupancies(gpu, kernel, extra_registers_per_thread: int) -> Occupancies:
    """:func:`occupancies` of a GEMM kernel record (the GEMM kernel's own occupancy rule,
    :func:`~t3sim.compute.gemm_kernel.gemm_occupancy`), without and with the library's extra registers."""

    base = gemm_occupancy(gpu, kernel)
    fused = gemm_occupancy(gpu, replace(kernel, registers_per_thread=kernel.registers_per_thread
                                        + extra_registers_per_thread))
    return Occupancies(base.wgs_per_cu, fused.wgs_per_cu, kernel.wfs_per_wg, fused.limiter)


def persistent_grid(logical_wgs: int, max_wgs: int) -> int:
    """The largest divisor of ``logical_wgs`` that is at most ``max_wgs`` (module doc)."""
    if logical_wgs < 1 or max_wgs < 1:
        raise ValueError(f"need logical_wgs >= 1 and max_wgs >= 1, got {logical_wgs}, {max_wgs}")
    return max(d for d in range(1, min(logical_wgs, max_wgs) + 1) if logical_wgs % d == 0)


class SliceTracker:
    """Per-slice completion tracking (module doc): ``slices`` maps a slice id to its logical WGs."""

    def __init__(self, slices: Dict[Hashable, Iterable[Hashable]]):
        self.members = {s: set(m) for s, m in slices.items()}
        self.left = {s: len(m) for s, m in self.members.items()}
        self.slices_of: Dict[Hashable, List[Hashable]] = defaultdict(list)
        for s, m in self.members.items():
            for lwg in m:
                self.slices_of[lwg].append(s)
        self.done: set = set()

    def complete(self, lwg: Hashable) -> List[Hashable]:
        """Logical WG ``lwg`` finished (its WG_Done bit is set); returns the slices it was the last of."""
        if lwg in self.done:
            raise ValueError(f"logical WG {lwg!r} completed twice")
        self.done.add(lwg)
        out = []
        for s in self.slices_of.get(lwg, ()):
            self.left[s] -= 1
            if self.left[s] == 0:
                out.append(s)
        return out


class Flags:
    """Ready flags on one fabric (module doc). A flag is keyed ``(dst, key)``; ``addr(dst, key)`` is its byte address
    at ``dst``."""

    def __init__(self, env: simpy.Environment, fabric: Fabric, hiers, costs: LibraryCosts, base_B: int,
                 keys: Iterable[Hashable]):
        self.env, self.fabric, self.hiers, self.costs = env, fabric, hiers, costs
        self.slot = {k: i for i, k in enumerate(keys)}
        self.base_B = base_B
        self.landed: Dict[Tuple[int, Hashable], simpy.Event] = {}
        #: (dst, key) -> tick the flag landed at dst
        self.land_tick: Dict[Tuple[int, Hashable], int] = {}
        #: (dst, key) -> tick a waiting WG saw it (its poll returned)
        self.seen_tick: Dict[Tuple[int, Hashable], int] = {}
        self.puts = 0
        self.wait_ticks = 0

    def addr(self, key: Hashable) -> int:
        return self.base_B + REQ_B * self.slot[key]

    @property
    def size_B(self) -> int:
        return REQ_B * len(self.slot)

    def _event(self, dst: int, key: Hashable) -> simpy.Event:
        ev = self.landed.get((dst, key))
        if ev is None:
            ev = self.landed[(dst, key)] = self.env.event()
        return ev

    def send(self, src: int, dst: int, key: Hashable, payload_B: int) -> None:
        """Store flag ``key`` into ``dst``'s flag array now (the put's API latency is the caller's)."""
        self.puts += 1

        def landed(_pl, dst=dst, key=key):
            if (dst, key) in self.land_tick:
                raise AssertionError(f"flag {key!r} landed twice at GPU {dst}")
            self.land_tick[(dst, key)] = self.env.now
            self._event(dst, key).succeed()

        data = np.ones((1, REQ_B // 4), dtype=np.float32) if self.fabric_functional(dst) else None
        self.fabric.send(src, dst, Payload(np.array([self.addr(key)], dtype=np.int64), None, None, "store", data,
                                           category="other", then=landed), payload_B)

    def fabric_functional(self, dst: int) -> bool:
        h = self.hiers.get(dst)
        return h is not None and h.mem.functional is not None

    def wait(self, dst: int, key: Hashable):
        """A WG on ``dst`` spins on flag ``key`` (a generator): returns once it has seen it (module doc)."""
        t0 = self.env.now
        ev = self._event(dst, key)
        if not ev.processed:
            yield ev
        yield self.hiers[dst].read(np.array([self.addr(key)], dtype=np.int64), "other", Stream.COMM, uncached=True)
        self.seen_tick[(dst, key)] = self.env.now
        self.wait_ticks += self.env.now - t0


class Fences:
    """Outstanding stores per ``(src, wg, dst)`` and fences on them (module doc)."""

    def __init__(self, env: simpy.Environment, network, costs: LibraryCosts):
        self.env, self.network, self.costs = env, network, costs
        self.out: Dict[Tuple, int] = defaultdict(int)
        self.waiters: Dict[Tuple, simpy.Event] = {}
        self.wait_ticks = 0
        self.fences = 0

    def sent(self, key: Tuple) -> None:
        """One more payload of ``key = (src, wg, dst)`` is on its way."""
        self.out[key] += 1

    def landed(self, key: Tuple) -> None:
        """A payload of ``key`` was written at its destination."""
        self.out[key] -= 1
        if self.out[key] == 0:
            ev = self.waiters.pop(key, None)
            if ev is not None:
                ev.succeed()

    def fence(self, key: Tuple):
        """The WG's fence on its stores to ``key``'s destination (a generator; module doc)."""
        t0 = self.env.now
        self.fences += 1
        if self.out[key] > 0:
            ev = self.waiters.get(key)
            if ev is None:
                ev = self.waiters[key] = self.env.event()
            yield ev
        src, _wg, dst = key
        yield self.env.timeout(self.network.path_latency_ticks(dst, src) + self.costs.api_ticks)
        self.wait_ticks += self.env.now - t0


def run_fused_kernel(model, ctx, main: str, comm: str, verify: Callable[[], None]):
    """Run a fused scheme's kernel ``main`` (``ctx.launch``) with its companion communication record ``comm``
    (starts with it, ends at ``ctx.end``); when it ends, the kernel boundary, then ``verify`` (the scheme's
    end-of-run checks). Returns the :class:`~t3sim.schemes.runtime.program.ProgramRun`."""
    def finished():
        boundary(model)()
        verify()

    p = Program()
    p.add("main", Kernel(main, "fused", "gemm", ctx.launch))
    p.add("comm", Kernel(comm, "fused", "rs", ctx.end, comm=True, start_with=main, on_end=finished))
    return run_program(model, p)
