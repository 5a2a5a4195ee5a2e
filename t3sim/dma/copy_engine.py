"""GPU copy engines: cudaMemcpyAsync-style copies through one GPU's memory hierarchy.

:class:`CopyEngines` (one per GPU) runs copies on ``copy_engine.engines`` engines. A copy
(:meth:`CopyEngines.copy`) waits in one FIFO until an engine is free (copies on different streams
run on different engines, as CUDA's asynchronous engines do; more copies than engines queue). The
engine starts ``launch_latency_ns`` after it takes the copy and streams it in requests of
``request_B`` (a batch of 64 B memory requests):

* **d2d** (device to device): read the source requests from local memory, then write them to the
  destination; ``nbytes`` are read and ``nbytes`` written;
* **h2d** (host to device): the data crosses the host link (PCIe, host -> device direction), then
  is written to local memory; only writes reach local memory;
* **d2h** (device to host): read from local memory, then cross the host link (device -> host);
  only reads reach local memory;
* **d2p** (device to peer): read from local memory, then hand the data to ``peer_send`` --
  ``peer_send(gpu, copy, off_B, dst_addrs, data) -> event``: write the request's 64 B lines at
  ``dst_addrs`` in the peer's memory (e.g. :meth:`~t3sim.dma.engine.Fabric.send` of a plain-store
  :class:`~t3sim.dma.engine.Payload` over the :class:`~t3sim.interconnect.network.Network`, which
  writes the arriving packets into the destination's memory); done when it reports them landed.
* **p2d** (peer to device, a pull): hand the request's source lines to ``peer_read`` --
  ``peer_read(gpu, copy, off_B, src_addrs) -> event`` (value: the data, functional mode): read them
  from the peer's memory and bring them over the links -- then write them to local memory; only
  writes reach local memory.

A copy may have several sources (:attr:`Copy.srcs`: a *reduction*, d2d only; the SM copy kernel's
:meth:`~t3sim.dma.copy_kernel.SMCopyKernel.reduce`): each request reads its 64 B lines from every
source, then writes their sum once. It holds a credit per line read (``k`` sources: ``k`` per output
line), and requests shrink so that one fits the credits.

Functional data (``simulation.functional_data``): reads return the values in DRAM (uncached reads
only: the L2 keeps no values, so copy traffic must bypass it, ``l2_allocate`` false), writes and peer
writes carry them (a reduction: their sum); host memory is not simulated, so h2d writes zeros.

Flow control. Each engine holds ``max_outstanding_requests`` credits of 64 B: a request takes its
credits when it issues and returns them when its last step is done (d2d/h2d: the destination
write accepted by the L2 or, with ``l2_allocate`` false, written in DRAM; d2h: the data landed in
host memory; d2p: delivered). An engine also issues at most ``engine_bandwidth_GBps`` of requests.
So one engine's copy rate is ``min(engine_bandwidth, credits x 64 B / request round trip, the memory's share)``
(Little's law): when the memory is loaded its round trip grows and the engine slows.

Memory. Local accesses go through :class:`~t3sim.compute.memhier.MemoryHierarchy` (category
``category``, stream ``mc_stream``): NVIDIA's L2 is memory-side, so every DRAM access, a copy
engine's too, passes the L2 slice of its address; with ``l2_allocate`` false they pass it without
allocating (reads bypass, writes go to DRAM and invalidate any cached copy). The host link is one
FIFO server per direction at ``host_link_effective_GBps`` plus ``host_link_latency_ns`` per request.

Invariants (tests): bytes read from local memory == bytes written to it == ``nbytes`` for d2d;
h2d only writes, d2h and d2p only read; an engine never has more than its credits in flight; a
copy's event fires once, after all of its bytes are done.

Units: addresses and sizes in bytes, time in ticks (1 ps); statistics carry their units.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Deque, List, Optional, Sequence, Tuple

import numpy as np
import simpy

from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.memory.request import Stream
from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_NS, ns_to_ticks
from t3sim.sim.engine import Component, Engine

DIRECTIONS = ("d2d", "h2d", "d2h", "d2p", "p2d")
_STREAM = {"compute": Stream.COMPUTE, "comm": Stream.COMM}


@dataclass(eq=False)
class Copy:
    """One copy: ``nbytes`` from ``src_B`` to ``dst_B`` (bytes) in ``direction``; times in ticks."""

    src_B: int
    dst_B: int
    nbytes: int
    direction: str
    peer: Optional[int]
    done: simpy.Event
    issue_tick: int
    #: further sources of a reduction (d2d): each request reads ``src_B`` and these, writes their sum
    srcs: Tuple[int, ...] = ()
    #: free label of the caller's (e.g. which chunk and shard a d2p copy carries)
    tag: object = None
    engine: int = -1
    start_tick: int = -1
    end_tick: int = -1
    left: int = 0  # 64 B requests not yet finished
    read_B: int = 0
    written_B: int = 0

    @property
    def duration_ticks(self) -> int:
        """Issue to completion (as a CUDA event pair around the copy measures it)."""
        return self.end_tick - self.issue_tick


@dataclass
class _EngineState:
    credits: int
    capacity: int = 0  # credits when idle (0: the initial credits)
    in_flight: int = 0
    max_in_flight: int = 0
    next_issue: int = 0
    busy_ticks: int = 0
    waiters: Optional[List[simpy.Event]] = None  # issuers waiting for credits (an SM copy kernel's CTAs share a CU's)
    copies: int = 0

    def __post_init__(self) -> None:
        if not self.capacity:
            self.capacity = self.credits


class HostLink:
    """One direction of the host link: a FIFO server at ``rate_GBps`` (payload) plus a fixed latency."""

    def __init__(self, env: simpy.Environment, rate_GBps: float, latency_ns: float):
        self.env = env
        self.ps_per_B = 1000.0 / rate_GBps  # ticks (ps) per byte
        self.latency = ns_to_ticks(latency_ns)
        self.free_at = 0
        self.bytes = 0

    def transfer(self, nbytes: int) -> simpy.Event:
        """Event when ``nbytes`` sent now have crossed (serialised behind earlier transfers) and landed."""
        env = self.env
        start = max(env.now, self.free_at)
        self.free_at = start + int(round(nbytes * self.ps_per_B))
        self.bytes += nbytes
        return env.timeout(self.free_at + self.latency - env.now)


class CopyPath(Component):
    """The request mechanics every copier shares: one request = read, then write or link (module doc).

    Subclasses (:class:`CopyEngines`; :class:`~t3sim.dma.copy_kernel.SMCopyKernel`) decide who issues
    which part of a copy; :meth:`_stream` issues one contiguous part under one :class:`_EngineState`'s
    credits and rate cap. ``cfg`` is a :class:`~t3sim.config.system.CopyEngineConfig`.
    """

    def __init__(self, engine: Engine, name: str, gpu: int, hier: MemoryHierarchy, cfg, category: str,
                 peer_send: Optional[Callable[..., simpy.Event]], request_B: int, uncached: bool):
        super().__init__(engine, name)
        if request_B % REQ_B:
            raise ValueError(f"{name}: request size {request_B} B is not a multiple of {REQ_B} B")
        hier._cat(category)  # raises on an unknown category
        self.gpu, self.hier, self.cfg, self.category = gpu, hier, cfg, category
        self.peer_send = peer_send
        #: ``(gpu, copy, off_B, src_addrs) -> event``: a p2d request's read at the peer (module doc; None: no p2d)
        self.peer_read: Optional[Callable[..., simpy.Event]] = None
        self.pulled_B = 0  # bytes of p2d copies (not in stats(): their user reports them)
        self.stream = _STREAM[cfg.mc_stream]
        self.uncached = uncached
        self.functional = hier.mem.functional is not None
        self.req_n = request_B // REQ_B  # 64 B requests per copier request
        eff = cfg.host_link_effective_GBps
        self.h2d_link = HostLink(self.env, eff, cfg.host_link_latency_ns)
        self.d2h_link = HostLink(self.env, eff, cfg.host_link_latency_ns)
        self.read_B = 0
        self.written_B = 0
        self.host_B = {"h2d": 0, "d2h": 0}
        self.peer_B = 0
        self.copies_done = 0
        self.in_progress = 0
        self.finished: List[Copy] = []
        #: optional ``(tick, bytes)`` callback when a request's bytes are done (rate measurements)
        self.on_bytes_done: Optional[Callable[[int, int], None]] = None
        self.ps_per_B = 0.0  # issue-rate cap in ps per byte (0: none); subclasses set it
        self._ramp = np.arange(self.req_n, dtype=np.int64) * REQ_B  # 64 B offsets of a request's lines (_addrs)

    def _new_copy(self, src_B: int, dst_B: int, nbytes: int, direction: str, peer: Optional[int],
                  srcs: Sequence[int] = (), tag=None) -> Copy:
        if direction not in DIRECTIONS:
            raise ValueError(f"copy direction {direction!r}; allowed: {', '.join(DIRECTIONS)}")
        if nbytes <= 0 or nbytes % REQ_B:
            raise ValueError(f"copy of {nbytes} B: must be a positive multiple of {REQ_B} B")
        if any(a % REQ_B for a in (src_B, dst_B, *srcs)):
            raise ValueError(f"copy addresses {src_B}, {dst_B}, {tuple(srcs)} must be {REQ_B} B aligned")
        if direction == "d2p" and (self.peer_send is None or peer is None):
            raise ValueError("a d2p copy needs a peer and peer_send")
        if direction == "p2d" and (self.peer_read is None or peer is None):
            raise ValueError("a p2d copy needs a peer and peer_read")
        if srcs and direction != "d2d":
            raise ValueError(f"a reduction (several sources) is device to device, not {direction!r}")
        if self.functional and not self.uncached and direction != "h2d":
            raise ValueError(f"{self.name}: functional data needs uncached copy traffic (copy_engine.l2_allocate false)")
        self.in_progress += 1
        return Copy(int(src_B), int(dst_B), int(nbytes), direction, peer, self.env.event(), self.env.now,
                    tuple(int(a) for a in srcs), tag)

    def _stream(self, st: _EngineState, c: Copy, j0: int, j1: int):
        """Send 64 B requests ``[j0, j1)`` of copy ``c`` as copier requests, under ``st``'s credits and rate."""
        env = self.env
        k = 1 + len(c.srcs)  # lines read per line written
        step = max(1, min(self.req_n, st.capacity // k))
        ps = self.ps_per_B
        for a in range(j0, j1, step):
            n = min(step, j1 - a)
            while st.credits < n * k:
                w = env.event()
                if st.waiters is None:
                    st.waiters = []
                st.waiters.append(w)
                yield w
            if st.next_issue > env.now:
                yield env.timeout(st.next_issue - env.now)
            st.credits -= n * k
            st.in_flight += n * k
            if st.in_flight > st.max_in_flight:
                st.max_in_flight = st.in_flight
            st.next_issue = max(st.next_issue, env.now) + int(round(n * REQ_B * ps))
            self._issue(st, c, a * REQ_B, n)

    def _addrs(self, base: int, off: int, n: int) -> np.ndarray:
        """The byte addresses of ``n`` 64 B requests from ``base + off`` (a new array)."""
        if n > self._ramp.size:
            self._ramp = np.arange(n, dtype=np.int64) * REQ_B
        return (base + off) + self._ramp[:n]

    def _issue(self, st: _EngineState, c: Copy, off: int, n: int) -> None:
        """Issue one copier request of ``n`` 64 B requests at byte offset ``off`` of copy ``c``."""
        nbytes = n * REQ_B
        d = c.direction
        if d == "h2d":
            self.host_B["h2d"] += nbytes
            ev = self.h2d_link.transfer(nbytes)
            ev.callbacks.append(lambda _e: self._write(st, c, off, n, self._zeros(n) if self.functional else None))
            return
        fn = self.functional
        if d == "p2d":
            self.pulled_B += nbytes
            self.peer_read(self.gpu, c, off, self._addrs(c.src_B, off, n)).callbacks.append(
                lambda e: self._write(st, c, off, n, e.value if fn else None))
            return
        evs = [self.hier.read(self._addrs(src, off, n), self.category, self.stream, uncached=self.uncached,
                              with_data=fn) for src in (c.src_B, *c.srcs)]
        self.read_B += nbytes * len(evs)
        c.read_B += nbytes * len(evs)
        if d == "d2d":
            if len(evs) == 1:
                evs[0].callbacks.append(lambda e: self._write(st, c, off, n, e.value if fn else None))
            else:  # a reduction: write the sum once every source's lines are back
                self.env.all_of(evs).callbacks.append(
                    lambda _e: self._write(st, c, off, n, sum(e.value for e in evs) if fn else None))
        elif d == "d2h":
            self.host_B["d2h"] += nbytes
            evs[0].callbacks.append(lambda _e: self.d2h_link.transfer(nbytes).callbacks.append(
                lambda _e2: self._finish(st, c, n)))
        else:  # d2p
            self.peer_B += nbytes
            evs[0].callbacks.append(lambda e: self.peer_send(self.gpu, c, off, self._addrs(c.dst_B, off, n),
                                                             e.value if fn else None).callbacks.append(
                lambda _e2: self._finish(st, c, n)))

    def _zeros(self, n: int) -> np.ndarray:
        fs = self.hier.mem.functional
        return np.zeros((n, fs.elems), dtype=fs.dtype)

    def _write(self, st: _EngineState, c: Copy, off: int, n: int, data=None) -> None:
        ev = self.hier.write(self._addrs(c.dst_B, off, n), self.category, self.stream, uncached=self.uncached,
                             data=data)
        self.written_B += n * REQ_B
        c.written_B += n * REQ_B
        ev.callbacks.append(lambda _e: self._finish(st, c, n, len(c.srcs) + 1))

    def _finish(self, st: _EngineState, c: Copy, n: int, k: int = 1) -> None:
        st.credits += n * k
        st.in_flight -= n * k
        if st.waiters:
            ws, st.waiters = st.waiters, None
            for w in ws:
                w.succeed()
        if self.on_bytes_done is not None:
            self.on_bytes_done(self.env.now, n * REQ_B)
        self.progressed()  # per request: a long host copy must not look like a stall to the watchdog
        c.left -= n
        if c.left == 0:
            c.end_tick = self.env.now
            self.finished.append(c)
            self.copies_done += 1
            self.in_progress -= 1
            c.done.succeed(c)

    # ------------------------------------------------------------------ reporting
    def pending(self) -> str:
        return f"{self.in_progress} copies not done" if self.in_progress else ""

    def history(self) -> List[Copy]:
        """Every finished copy, in completion order."""
        return list(self.finished)

    def max_in_flight(self) -> int:  # pragma: no cover - overridden
        return 0

    def stats(self) -> Stats:
        s = Stats()
        s.add("copies_done", self.copies_done, "count", "copies completed")
        s.add("local_read_bytes", self.read_B, "B", "bytes read from local memory")
        s.add("local_written_bytes", self.written_B, "B", "bytes written to local memory")
        s.add("h2d_bytes", self.host_B["h2d"], "B", "bytes moved host -> device over the host link")
        s.add("d2h_bytes", self.host_B["d2h"], "B", "bytes moved device -> host over the host link")
        s.add("d2p_bytes", self.peer_B, "B", "bytes handed to the peer link (device -> peer)")
        s.add("max_in_flight_requests", self.max_in_flight(), "count",
              "most 64 B requests one engine (or CTA) had in flight (never above its credits)")
        if self.finished:
            us = [c.duration_ticks / TICKS_PER_NS / 1e3 for c in self.finished]
            s.add("copy_time_mean_us", float(np.mean(us)), "us", "mean copy time, issue to last byte done")
        return s


class CopyEngines(CopyPath):
    """A GPU's copy engines (module doc). ``cfg`` is a :class:`~t3sim.config.system.CopyEngineConfig`.

    Args:
        engine: the simulation engine.
        gpu: this GPU's index (names and ``peer_send``).
        hier: this GPU's memory hierarchy.
        cfg: the copy-engine config.
        category: DRAM-traffic category of the copies (an entry of ``hier.categories``).
        peer_send: ``(gpu, copy, off_B, dst_addrs, data) -> event`` writing a d2p request's lines in the
            peer's memory (module doc; None: d2p unsupported).
    """

    def __init__(self, engine: Engine, gpu: int, hier: MemoryHierarchy, cfg, category: str = "dma",
                 peer_send: Optional[Callable[..., simpy.Event]] = None):
        super().__init__(engine, f"gpu{gpu}.copy_engines", gpu, hier, cfg, category, peer_send, cfg.request_B,
                         not cfg.l2_allocate)
        if cfg.max_outstanding_requests * REQ_B < cfg.request_B:
            raise ValueError(f"copy_engine.max_outstanding_requests={cfg.max_outstanding_requests} x {REQ_B} B "
                             f"is less than one request of request_B={cfg.request_B}")
        self.latency = ns_to_ticks(cfg.launch_latency_ns)
        self.ps_per_B = 1000.0 / cfg.engine_bandwidth_GBps
        self.engines = [_EngineState(cfg.max_outstanding_requests) for _ in range(cfg.engines)]
        self.queue: Deque[Copy] = deque()
        self._idle: List[int] = list(range(cfg.engines))

    def copy(self, src_B: int, dst_B: int, nbytes: int, direction: str = "d2d", peer: Optional[int] = None,
             tag=None) -> simpy.Event:
        """Queue a copy now; the event fires with its :class:`Copy` when every byte is done.

        ``src_B``/``dst_B``: byte addresses (device addresses for the local side; the host or peer
        side's address is not simulated). ``nbytes`` > 0, a multiple of 64 B.
        """
        c = self._new_copy(src_B, dst_B, nbytes, direction, peer, tag=tag)
        self.queue.append(c)
        self._dispatch()
        return c.done

    def _dispatch(self) -> None:
        while self.queue and self._idle:
            i = self._idle.pop(0)
            c = self.queue.popleft()
            c.engine = i
            self.env.process(self._run(i, c))

    def _run(self, i: int, c: Copy):
        env = self.env
        st = self.engines[i]
        st.copies += 1
        if self.latency:
            yield env.timeout(self.latency)
        c.start_tick = env.now
        c.left = c.nbytes // REQ_B
        yield from self._stream(st, c, 0, c.nbytes // REQ_B)
        # the engine takes its next copy once this one's last request is issued (pipelined)
        st.busy_ticks += env.now - c.start_tick
        self._idle.append(i)
        self._idle.sort()
        self._dispatch()

    def max_in_flight(self) -> int:
        return max((e.max_in_flight for e in self.engines), default=0)

    def pending(self) -> str:
        if not self.in_progress:
            return ""
        return f"{self.in_progress} copies not done ({len(self.queue)} queued)"
