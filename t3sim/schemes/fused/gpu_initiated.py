"""GPU-initiated communication inside a kernel, as the fused kernels use it (fused-collective paper Secs. II-B, III,
III-C). Pieces shared by the fused schemes (``fused_gemv_ar``, ``fused_emb_a2a``, ``fused_gemm_a2a``):

* :class:`LibraryCosts` -- what the paper says GPU-initiated networking costs a kernel (Sec. III-C): the *extra
  registers* of the library's device code (``scheme.fused_library_registers_per_thread``), which lower the
  kernel's occupancy (:func:`occupancies`, compared with the paper's 12.5 %); the *API latency* of each library
  call (``scheme.fused_put_api_latency_ns``: a flag put, a fence); the *bookkeeping* after every logical WG
  (``scheme.fused_bookkeeping_ns``: setting its ``WG_Done`` bit and testing whether it was the slice's last).
* :func:`gemm_occupancies` -- the same for a GEMM kernel record (``fused_gemm_a2a``).
* :func:`check_rotation` -- homogeneous mode needs the communication-aware order (its rotation symmetry).
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
* :func:`signalling` -- a fused kernel's stores fabric with its completion, flags and fences;
  :func:`launch_persistent` -- the persistent kernel on every simulated GPU.
* :func:`library_waits` -- the statistics of the simulated GPUs' fences and flag polls.
* :class:`Countdown` -- the event of the simulated GPUs' last logical WG computed (a fused kernel's compute part).
* :class:`ArrivalLog` (the base of the schemes' end-of-run checks), :func:`check_once`, :func:`check_polls` --
  invariants every fused scheme checks: each payload arrived exactly once, each incoming flag was seen by a
  polling WG after it landed, and (functional data) the values the receivers hold.

Times are integer ticks (1 tick = 1 ps).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Callable, Dict, Hashable, Iterable, List, Mapping, Optional, Tuple

import numpy as np
import simpy

from t3sim.compute.gemm_kernel import gemm_occupancy
from t3sim.compute.memhier import REQ_B
from t3sim.compute.wg_program import ProgramKernel, program_occupancy
from t3sim.dma.engine import Completion, Fabric, Payload
from t3sim.errors import InputError
from t3sim.memory.request import Stream
from t3sim.results.stats import Stats
from t3sim.schemes.runtime.program import Kernel, Program, boundary, run_program
from t3sim.sim.clock import TICKS_PER_NS, ns_to_ticks


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


def check_rotation(homogeneous: bool, comm_aware: bool) -> None:
    """Homogeneous mode simulates GPU 0 and mirrors the others by rotation, which the communication-oblivious WG
    order (``scheme.fused_comm_aware=false``) breaks: InputError for that pair."""
    if homogeneous and not comm_aware:
        raise InputError("simulation.mode", "homogeneous with scheme.fused_comm_aware=false (the GPUs' orders then "
                         "have no rotation symmetry)", "explicit, or fused_comm_aware true")


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


def signalling(model, costs: LibraryCosts, keys: List[Hashable]) -> Tuple[Completion, Fabric, Flags, Fences, int]:
    """A fused kernel's GPU-initiated communication on ``model``: the completion of its stores, the fabric they go
    over (network port ``fused.stores``), the ready flags ``keys`` (their array allocated now, one 64 B request
    each), the fences, and the payload bytes of one SM store (``interconnect.sm_store_payload_B``)."""
    m = model
    completion = Completion(m.env)
    fabric = Fabric(m.engine, m.network, m.hiers, completion, port=m.network.new_port("fused.stores"),
                    name="fused.fabric")
    flags = Flags(m.env, fabric, m.hiers, costs, m.alloc(len(keys) * REQ_B), keys)
    return completion, fabric, flags, Fences(m.env, m.network, costs), int(m.system.interconnect.sm_store_payload_B)


def launch_persistent(model, name: str, program: Callable[[int], Callable], *, threads_per_wg: int,
                      registers_per_thread: int, lds_per_wg_B: int, num_wgs: int) -> Dict[int, ProgramKernel]:
    """The persistent kernel ``gpu<g>.<name>`` of ``num_wgs`` WGs running ``program(g)`` on every simulated GPU
    (registers per thread: the library's included), on the GPU's dispatcher, counting progress per logical WG
    (the program's ``progressed`` calls); added to the model's GEMM kernels. Not started."""
    m, kernels = model, {}
    for g in m.sim_gpus:
        k = ProgramKernel(m.engine, f"gpu{g}.{name}", m.hiers[g], m.system.gpu, threads_per_wg=threads_per_wg,
                          registers_per_thread=registers_per_thread, lds_per_wg_B=lds_per_wg_B, num_wgs=num_wgs,
                          program=program(g), dispatcher=m.dispatchers[g], progress_per_wg=False)
        k.wg_spans = [] if m.trace else None
        kernels[g] = k
        m.gemm_kernels.append(k)
    return kernels


class Countdown:
    """:attr:`done` succeeds at the ``count``-th :meth:`tick` (``count`` > 0): e.g. when the simulated GPUs have
    computed their last logical WG."""

    def __init__(self, env: simpy.Environment, count: int):
        self.left = count
        self.done = env.event()

    def tick(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.done.succeed()


class ArrivalLog:
    """The log a fused scheme's end-of-run checks work on: how often each payload (by key) was sent and the ticks
    it arrived (counted at every destination: written at a simulated GPU, delivered at a shadow). A scheme's checks
    subclass it with ``verify`` (ending in :meth:`verified_values`) and ``_values``, the values check of one
    simulated GPU."""

    #: the scheme's check counts (attributes) and what each counted, in the order :meth:`stats` lists them
    COUNTS: Tuple[Tuple[str, str], ...] = ()

    def __init__(self, ctx):
        self.ctx = ctx
        #: payload key -> arrival ticks
        self.arrivals: Dict[Tuple, List[int]] = defaultdict(list)
        self.sends: Dict[Tuple, int] = defaultdict(int)
        self.words_checked = 0
        self.verified = False

    def sent(self, *key) -> None:
        self.sends[key] += 1

    def arrived(self, *key) -> None:
        self.arrivals[key].append(self.ctx.env.now)

    def verified_values(self) -> None:
        """The last check: with functional data, the values every simulated GPU holds (:meth:`_values`); then the
        run counts as verified."""
        if self.ctx.functional:
            m = self.ctx.model
            self.words_checked = sum(self._values(d, m.hiers[d].mem.functional) for d in m.sim_gpus)
        self.verified = True

    def _values(self, d: int, fs) -> int:
        """Check what simulated GPU ``d`` holds in its functional memory ``fs``; returns the 4 B words checked."""
        raise NotImplementedError

    def stats(self) -> Stats:
        """``verified``, then each of :attr:`COUNTS`."""
        s = Stats()
        s.add("verified", self.verified, "bool", "the end-of-run invariants were checked and held")
        for name, desc in self.COUNTS:
            s.add(name, getattr(self, name), "count", desc)
        return s


def library_waits(s: Stats, fences: Fences, flags: Flags) -> None:
    """Add the fences the simulated GPUs' WGs executed and their time in fences and flag polls (summed over WGs)
    to ``s`` under ``fused.``."""
    s.add("fused.fences", fences.fences, "count", "fences the simulated GPUs' WGs executed")
    s.add("fused.fence_wait_ns", fences.wait_ticks / TICKS_PER_NS, "ns",
          "time the simulated GPUs' WGs spent in fences, summed over WGs")
    s.add("fused.flag_wait_ns", flags.wait_ticks / TICKS_PER_NS, "ns",
          "time the simulated GPUs' WGs spent polling flags, summed over WGs")


def check_once(scheme: str, what: str, arrivals: Mapping[Hashable, List[int]], want: set) -> int:
    """End-of-run check: every key of ``want`` arrived exactly once (``arrivals``: key -> arrival ticks) and nothing
    else arrived; returns how many were checked. ``AssertionError`` (naming ``scheme`` and ``what``) otherwise."""
    got = set(arrivals)
    assert got == want, (f"{scheme}: {what} that arrived but should not: {sorted(got - want)[:4]}; that should have "
                         f"arrived but did not: {sorted(want - got)[:4]}")
    twice = [k for k, v in arrivals.items() if len(v) != 1]
    assert not twice, f"{scheme}: {what} that arrived more than once: {twice[:4]}"
    return len(want)


def check_polls(scheme: str, flags: Flags, seen: Mapping[Tuple[int, Hashable], int], incoming: Mapping[int, List],
                end_tick: Optional[Mapping[int, int]] = None) -> int:
    """End-of-run check: every flag GPU ``g`` waits for (``incoming[g]``, for each simulated GPU ``g``) was seen by a
    polling WG (``seen[(g, key)]``: tick) at or after it landed, and, with ``end_tick``, no later than GPU ``g``'s
    kernel ended; returns how many were checked. ``AssertionError`` (naming ``scheme``) otherwise."""
    n = 0
    for g, keys in incoming.items():
        for key in keys:
            tick = seen.get((g, key))
            assert tick is not None, f"{scheme}: GPU {g} never polled the flag of slice {key}"
            land = flags.land_tick[(g, key)]
            end = end_tick[g] if end_tick is not None else tick
            assert land <= tick <= end, (f"{scheme}: GPU {g} slice {key}: flag landed {land} ps, seen {tick} ps"
                                         + (f", kernel end {end} ps" if end_tick is not None else ""))
            n += 1
    return n


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
