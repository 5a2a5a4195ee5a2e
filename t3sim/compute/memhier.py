"""One GPU's memory hierarchy as the CUs, collectives and DMA engines see it: L2 -> memory controller -> HBM.

``read``/``write`` take a batch of 64 B requests (byte addresses) at the
current simulated time and return a simpy event that fires when the batch is
done (reads: every byte is back at the requester; writes: accepted by the L2,
or, for uncached writes and near-memory updates, written in DRAM).

Requests and DRAM accesses. Between CUs, L2 and DMA engines a request is
:data:`REQ_B` = 64 B (two 32 B L2 sectors); the DRAM moves ``hbm.access_size_B``
per column command (32 B on Table 1: BL2 on a 16 B channel), a divisor of it.
Every path below issues whole accesses: the L2 asks DRAM for the accesses that
cover the *sectors* it misses (a sector miss of one 32 B sector is one 32 B
access), writes back the accesses covering a line's dirty sectors, and an
uncached write or update of a request becomes ``REQ_B / access_size_B``
accesses (:func:`~t3sim.compute.fast.memhier_kernel.write_plan`, in
:func:`~t3sim.memory.port.split_requests`'s layout), each carrying the request's
``wg_id``/``wf_id`` and its share of the data (:func:`~t3sim.memory.port.access_fields`).

Paths (paper Sec. 4.3 and Table 1):

* cached read: L2 hit -> data after the L2 hit latency; miss -> DRAM reads of
  the missing sectors (compute or communication stream), data after the DRAM
  completion plus the L2 latency back to the requester. Hits on a line whose
  fill is still in flight wait for that fill (:class:`FillTable`, the MSHR merge).
* cached write: write-back L2; evictions of dirty lines become DRAM writes
  of their dirty sectors, attributed to the line's owner.
* write queue bound (``l2.write_queue_accesses`` = B > 0): the L2's compute-stream DRAM writes outstanding
  (submitted, not yet written: write-backs of dirty lines, and the uncached writes and updates of compute-stream
  requesters) are counted; an access (read or write) that adds some while more than B are outstanding completes only
  once they have drained to B, in the order such accesses came (its event, and a posted store's
  :meth:`MemoryHierarchy.posted_write` room event, wait for it). Its own writes are submitted at once, so the count
  exceeds B by at most the writes of the accesses waiting; their requesters wait, so no one adds more. The
  communication stream's writes (a DMA engine's, a link's landed packets) reach the controllers by their own path and
  are neither counted nor held. B = 0: unbounded, nothing waits (writes no one awaits are posted).
* CU port (``gpu.l2_to_cu_B_per_cycle`` = P > 0): a GEMM WG's load batch of ``n`` bytes reserves its CU's port from
  the L2 for ``ceil(n / P)`` CU cycles, after the batches reserved before it (:meth:`MemoryHierarchy.cu_port_done`);
  its data is back no sooner than that (``read``'s ``at_least_tick``). With a thread-block cluster's multicast
  every sharer's port passes the whole shared slice. Other requesters (collective CUs, copy kernels) keep their own
  limits and do not reserve the port.
* uncached write / update (T3's output allocation and DMA updates): straight
  to the memory controller as WRITE or UPDATE (op-and-store), carrying
  ``wg_id``/``wf_id`` for the tracker; the L2 slice is passed through for
  coherence (resident dirty lines are flushed first).

DRAM traffic is counted per *category* (``gemm``, ``rs``, ``ag``, ``dma``...,
the paper's Fig. 18 split) and kind (read / write / update), in bytes.
Invariant: the category counters add up to the bytes the memory system
served (accesses x ``access_size_B``).
"""

from __future__ import annotations

from collections import defaultdict, deque
from functools import partial
from typing import Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np
import simpy

from t3sim.cache.fast import L2Cache
from t3sim.compute.fast import REQ_B, l2_read, l2_write, record_fills, writeback_groups
from t3sim.memory.port import MemoryPort, access_fields
from t3sim.memory.request import Kind, Source, Stream
from t3sim.memory.system import MemorySystem
from t3sim.results.stats import Stats
from t3sim.sim.clock import Clock
from t3sim.sim.engine import succeed_later

# REQ_B, the bytes per request between CUs, L2 and DMA engines (module doc; the DRAM moves it in hbm.access_size_B
# accesses), comes from memhier_kernel: other modules import it from here

#: Fig. 18 categories and the memory-controller source each maps to.
CATEGORY_SOURCE = {"gemm": Source.GEMM, "rs": Source.COLLECTIVE, "ag": Source.COLLECTIVE, "dma": Source.DMA,
                   "other": Source.OTHER}


class FillTable:
    """Fills in flight, for merging later hits with an outstanding miss (MSHR behaviour).

    A direct-mapped table of ``2**bits`` slots keyed by 128 B L2 line address: a
    miss records ``(line | 1, fill event)``; a later access that hits that line in
    the L2 while the event is pending waits for it. 0 marks an empty slot, so the
    table starts as lazily zeroed memory (16 MB per GPU, touched only where fills
    are recorded). A slot collision forgets
    the older fill (its later hitters then see an ordinary hit): rare with the
    default 2**20 slots, and only ever optimistic by one L2-to-DRAM latency.
    """

    def __init__(self, bits: int = 20):
        self.mask = (1 << bits) - 1
        self.line = np.zeros(1 << bits, dtype=np.int64)
        self.tag = np.zeros(1 << bits, dtype=np.int64)
        self.events: Dict[int, simpy.Event] = {}
        self._next = 0

    def _new(self, ev: simpy.Event) -> int:
        tag = self._next
        self._next += 1
        self.events[tag] = ev
        ev.callbacks.append(lambda _e, tag=tag: self.events.pop(tag, None))
        return tag

    def record_requests(self, req: np.ndarray, ev: simpy.Event) -> None:
        """Record ``ev`` as the fill of the 128 B lines of sorted DRAM accesses ``req``."""
        record_fills(req, self.line, self.tag, self.mask, self._new(ev))


class MemoryHierarchy:
    """L2 + memory controllers + HBM of one GPU, driven from simpy processes.

    Args:
        env: the simpy environment (time in ticks).
        system: the :class:`~t3sim.config.system.SystemConfig`.
        mode: memory model, ``"fast"`` or ``"reference"``.
        functional: keep real data in DRAM (op-and-store really adds).
        categories: DRAM-traffic categories (first one is the default).
    """

    def __init__(self, env: simpy.Environment, system, mode: str = "fast", functional: bool = False,
                 categories: Sequence[str] = ("gemm", "rs", "ag", "dma", "other")):
        self.env = env
        self.mem = MemorySystem(system, mode=mode, functional=functional)
        self.port = MemoryPort(env, self.mem)
        self.categories = tuple(categories)
        self.l2 = L2Cache(system.l2, sources=self.categories)  # the fast model (reads fuse with its kernel)
        self._cat_index = {c: i for i, c in enumerate(self.categories)}
        self.l2_latency = Clock.from_GHz(system.l2.clock_GHz).cycle_to_tick(system.l2.hit_latency_cycles)
        self.fills = FillTable()
        #: DRAM bytes per column command (hbm.access_size_B) and the L2 geometry the accesses are cut from
        self.access_B = self.mem.access_B
        self._geo = (self.l2.geo.line_B, self.l2.geo.sector_B, self.access_B)
        self.traffic: Dict[str, Dict[str, int]] = defaultdict(lambda: {"read": 0, "write": 0, "update": 0})
        self.outstanding_writes = 0
        self._drained: Optional[simpy.Event] = None
        #: write queue bound (module doc): the bound in accesses (0: unbounded), the compute-stream DRAM write accesses
        #: outstanding, and the accesses' room events waiting for them to drain, oldest first
        self.wq_limit = int(system.l2.write_queue_accesses)
        self.wq_out = 0
        self._rooms: Deque[simpy.Event] = deque()
        self.wq_stalls = 0  # accesses that waited for room
        self.wq_peak = 0  # the most counted write accesses outstanding after an access's submission
        #: each CU's port from the L2 (gpu.l2_to_cu_B_per_cycle, module doc): its rate in bytes per CU cycle (0: no
        #: limit), the CU clock, and the tick each CU's port has passed every byte reserved on it so far
        self.cu_port_B = int(system.gpu.l2_to_cu_B_per_cycle)
        self.cu_clock = Clock.from_GHz(system.gpu.clock_GHz, "cu")
        self.cu_port_free = np.zeros(system.gpu.num_cus, dtype=np.int64)
        #: the windowed GEMM (t3sim.window.gemm_window) that drives this hierarchy now, or None
        self.window = None

    # ------------------------------------------------------------------ helpers
    def _cat(self, category: str) -> int:
        try:
            return self._cat_index[category]
        except KeyError:
            raise ValueError(f"unknown traffic category {category!r}; known: {self.categories}") from None

    def _dram(self, addrs: np.ndarray, kind: Kind, stream: Stream, category: str, wg_id=None, wf_id=None,
              data=None, awaited: bool = True) -> simpy.Event:
        """DRAM accesses at ``addrs`` (one ``access_size_B`` access each: MemoryPort.access), counted as
        ``category``."""
        self.traffic[category][kind.name.lower()] += self.access_B * len(addrs)
        return self.port.access(addrs, kind, stream, CATEGORY_SOURCE.get(category, Source.OTHER),
                                wg_id=wg_id, wf_id=wf_id, data=data, awaited=awaited)

    def direct_read(self, addrs, category: str, stream: Stream, source: Source) -> simpy.Event:
        """Read 64 B requests straight from DRAM, bypassing the L2 (a DMA engine's or a pull kernel's
        uncached reads): ``REQ_B / access_size_B`` accesses each, counted as ``category`` reads; the
        event's value is the :class:`~t3sim.memory.port.BatchResult` (functional data: a row per request)."""
        if self.window is not None:
            self.port.window_conflict()
        addrs = np.asarray(addrs, dtype=np.int64)
        self.traffic[category]["read"] += REQ_B * len(addrs)
        return self.port.access(addrs, Kind.READ, stream, source, request_B=REQ_B)

    def _join(self, events: List[simpy.Event], at_least_tick: int, extra_after_events: int) -> simpy.Event:
        """Event at ``max(at_least_tick, last(events) + extra_after_events)`` (callbacks, no process)."""
        env = self.env
        out = env.event()
        if len(events) == 1:  # the common case (one DRAM batch), without the shared state
            def last(_e):
                t = max(at_least_tick, env.now + extra_after_events)
                succeed_later(env, out, t, t - env.now)

            ev = events[0]
            if ev.processed:
                last(ev)
            else:
                ev.callbacks.append(last)
            return out
        state = {"n": len(events), "t": at_least_tick}

        def fire():
            succeed_later(env, out, max(state["t"], env.now), state["t"] - env.now)

        def one(_e):
            state["n"] -= 1
            state["t"] = max(state["t"], env.now + extra_after_events)
            if state["n"] == 0:
                fire()

        if not events:
            fire()
        for ev in events:
            if ev.processed:
                one(ev)
            else:
                ev.callbacks.append(one)
        return out

    def _writebacks(self, E: np.ndarray) -> int:
        """Issue the DRAM writes of the L2's write-back rows ``E``
        (:func:`~t3sim.compute.fast.memhier_kernel.writeback_groups`): a dirty line goes back as the accesses its dirty
        sectors touch, one batch per owner. Returns the accesses counted against the write queue bound (module doc;
        0 without one)."""
        if not E.shape[1]:
            return 0
        line_B, sector_B, access_B = self._geo
        srcs, off, acc = writeback_groups(E, sector_B, line_B // sector_B, access_B)
        n = 0
        for g, src in enumerate(srcs.tolist()):
            k = int(off[g + 1] - off[g])
            if k:
                # no requester waits for a write-back (a run may end with it in flight): unawaited, which the
                # memory's lookahead does not run past now (MemorySystem.advance)
                ev = self.track_write(self._dram(acc[off[g]:off[g + 1]], Kind.WRITE, Stream.COMPUTE,
                                                 self.categories[src], awaited=False))
                if self.wq_limit:
                    self.count_write(ev, k)
                    n += k
        return n

    def _room(self, added: int) -> Optional[simpy.Event]:
        """The room event an access that added ``added`` counted writes must wait for (the write queue bound, module
        doc), or None."""
        if added and self.wq_out > self.wq_peak:
            self.wq_peak = self.wq_out
        if added and self.wq_out > self.wq_limit:
            self.wq_stalls += 1
            room = self.env.event()
            self._rooms.append(room)
            return room
        return None

    def count_write(self, ev: simpy.Event, accesses: int) -> None:
        """Count DRAM write batch ``ev`` of ``accesses`` against the write queue bound until it fires (module doc)."""
        self.wq_out += accesses
        ev.callbacks.append(partial(self._write_done, accesses))

    def _write_done(self, accesses: int, _ev) -> None:
        self.wq_out -= accesses
        rooms = self._rooms
        while rooms and self.wq_out <= self.wq_limit:
            rooms.popleft().succeed()

    def track_write(self, ev: simpy.Event) -> simpy.Event:
        """Count DRAM write batch ``ev`` (a store's or a write-back's) as outstanding until it fires
        (:meth:`drained` waits for none to be left); returns ``ev``."""
        self.outstanding_writes += 1

        def done(_e):
            self.outstanding_writes -= 1
            if self.outstanding_writes == 0 and self._drained is not None:
                d, self._drained = self._drained, None
                d.succeed()

        ev.callbacks.append(done)
        return ev

    def cu_port_done(self, cu: int, nbytes: int) -> int:
        """Reserve CU ``cu``'s port from the L2 for ``nbytes`` of read data issued now: the tick it has passed them,
        after the bytes reserved before (from the CU cycle at or after ``max(now, the port's free tick)``, ``nbytes /
        gpu.l2_to_cu_B_per_cycle`` cycles rounded up); -1 where the port has no limit."""
        if not self.cu_port_B:
            return -1
        clock = self.cu_clock
        c0 = clock.next_cycle_at_or_after(max(self.env.now, int(self.cu_port_free[cu])))
        done = clock.cycle_to_tick(c0 + -(-int(nbytes) // self.cu_port_B))
        self.cu_port_free[cu] = done
        return done

    # ------------------------------------------------------------------ API
    def read(self, addrs, category: str = "gemm", stream: Stream = Stream.COMPUTE, uncached: bool = False,
             with_data: bool = False, at_least_tick: int = -1) -> simpy.Event:
        """Read 64 B requests at ``addrs`` (bytes); event fires when all data has returned, and not before
        ``at_least_tick`` (a CU port's :meth:`cu_port_done`; -1: no such bound).

        ``with_data`` (functional mode, uncached reads only: an uncached read always reaches DRAM, whose
        values the functional store keeps; the L2 keeps none): the event's value is the data read,
        ``(len(addrs), elems)`` in the order of ``addrs``.
        """
        if self.window is not None:
            self.port.window_conflict()
        addrs = np.asarray(addrs, dtype=np.int64)
        if with_data:
            return self._read_data(addrs, category, stream)
        if not len(addrs):
            return self._join([], max(self.env.now, at_least_tick), 0)
        return self._read(addrs, category, stream, uncached, at_least_tick)[0]

    def _read(self, addrs: np.ndarray, category: str, stream: Stream, uncached: bool, at_least_tick: int = -1):
        """:meth:`read` of a non-empty batch: ``(done event, its DRAM batch's event or None, DRAM requests)``."""
        env = self.env
        fills = self.fills
        l2 = self.l2
        now = l2.clock.next_cycle_at_or_after(env.now)
        # one compiled call: the L2 accesses and the read plan
        ready, tags, req, E = l2_read(addrs, bool(uncached), self._cat(category), now, *l2.kernel_state, fills.line,
                                       fills.tag, fills.mask, bool(fills.events), *self._geo)
        room = self._room(self._writebacks(E))
        waits: List[simpy.Event] = []
        if len(tags):
            ev_of = fills.events
            waits += [ev for t in tags.tolist() if (ev := ev_of.get(t)) is not None]
        dram = None
        if len(req):
            dram = ev = self._dram(req, Kind.READ, stream, category)
            if not uncached:
                fills.record_requests(req, ev)
            waits.append(ev)
        if room is not None:
            waits.append(room)
        return self._join(waits, max(ready if ready >= 0 else env.now, at_least_tick), self.l2_latency), dram, req

    def _read_data(self, addrs: np.ndarray, category: str, stream: Stream) -> simpy.Event:
        """:meth:`read` ``with_data``: an uncached read whose event carries the values it read."""
        fs = self.mem.functional
        if fs is None:
            raise ValueError("read with_data needs functional data (simulation.functional_data)")
        out = self.env.event()
        if not len(addrs):
            out.succeed(np.zeros((0, fs.elems), dtype=fs.dtype))
            return out
        done, dram, req = self._read(addrs, category, stream, True)
        # an uncached read is one DRAM batch over its sorted distinct accesses (no L2 hit, no fill merge);
        # a request's values are those of the accesses it spans, in address order
        k = REQ_B // self.access_B
        acc = (addrs - addrs % REQ_B)[:, None] + self.access_B * np.arange(k, dtype=np.int64)[None, :]
        idx = np.searchsorted(req, acc.reshape(-1))
        done.callbacks.append(lambda _e: out.succeed(dram.value.data[idx].reshape(len(addrs), fs.elems)))
        return out

    def write(self, addrs, category: str = "gemm", stream: Stream = Stream.COMPUTE, uncached: bool = False,
              update: bool = False, wg_id=None, wf_id=None, data=None) -> simpy.Event:
        """Write (or, with ``update``, op-and-store) 64 B requests; event fires when accepted/written (and, where
        its writes met a full write queue, once it has drained to the bound: module doc).

        ``update`` implies ``uncached`` (near-memory updates happen in DRAM, paper Sec. 4.3).
        """
        return self._write(addrs, category, stream, uncached, update, wg_id, wf_id, data)[0]

    def posted_write(self, addrs, category: str = "gemm", stream: Stream = Stream.COMPUTE, uncached: bool = False,
                     update: bool = False, wg_id=None, wf_id=None, data=None) -> Tuple[simpy.Event, Optional[simpy.Event]]:
        """A posted store's :meth:`write` (the storing WG does not wait for it to be accepted): ``(written, room)``,
        the write's event and the event the WG must wait for before it goes on, which is None unless the write's
        DRAM writes met a full write queue (module doc)."""
        return self._write(addrs, category, stream, uncached, update, wg_id, wf_id, data)

    def _write(self, addrs, category: str, stream: Stream, uncached: bool, update: bool, wg_id, wf_id, data):
        if self.window is not None:
            self.port.window_conflict()
        addrs = np.asarray(addrs, dtype=np.int64)
        if not len(addrs):
            return self._join([], self.env.now, 0), None
        uncached = uncached or update
        l2 = self.l2
        # one compiled call: the L2 accesses, and the DRAM accesses of the requests that go on to DRAM (REQ_B / access
        # size each: a divisor, SystemConfig checks it)
        t, sel, acc, E = l2_write(addrs, bool(uncached), self._cat(category),
                                   l2.clock.next_cycle_at_or_after(self.env.now), *l2.kernel_state, self.access_B)
        added = self._writebacks(E)
        waits = []
        if len(sel):
            pick = (lambda x: x if x is None or np.isscalar(x) else np.asarray(x)[sel])
            wg, wf, d = access_fields(pick(wg_id), pick(wf_id), pick(data), len(sel), REQ_B // self.access_B)
            ev = self._dram(acc, Kind.UPDATE if update else Kind.WRITE, stream, category, wg_id=wg, wf_id=wf, data=d)
            waits.append(self.track_write(ev))
            if self.wq_limit and stream == Stream.COMPUTE:
                self.count_write(ev, len(acc))
                added += len(acc)
        room = self._room(added)
        if room is not None:
            waits.append(room)
        return self._join(waits, int(t), 0), room

    def drained(self) -> simpy.Event:
        """Event that fires once every DRAM write issued so far has completed."""
        if self.window is not None:
            self.port.window_conflict()
        if self.outstanding_writes == 0:
            ev = self.env.event()
            ev.succeed()
            return ev
        if self._drained is None:
            self._drained = self.env.event()
        return self._drained

    # ------------------------------------------------------------------ stats
    def stats(self) -> Stats:
        if self.window is not None:
            self.port.window_conflict()
        s = Stats()
        for cat in self.categories:
            t = self.traffic.get(cat, {"read": 0, "write": 0, "update": 0})
            for kind in ("read", "write", "update"):
                s.add(f"dram_traffic.{cat}.{kind}_bytes", t[kind], "B",
                      f"DRAM {kind} bytes issued by {cat} (paper Fig. 18 category)")
        s.merge("l2", self.l2.stats())
        if self.wq_limit:  # the write queue bound's (module doc): only where it is set
            s.add("l2.write_queue.stalled_accesses", self.wq_stalls, "count",
                  "L2 accesses (loads, stores, write-backs' evictors) that waited for the write queue to drain to "
                  "l2.write_queue_accesses")
            s.add("l2.write_queue.peak_outstanding_accesses", self.wq_peak, "count",
                  "the most compute-stream DRAM write accesses outstanding after an access's submission")
        # the controllers' statistics cover the cycles up to now, not up to the last pump step
        # (whose time depends on the pump cadence): queue occupancy and utilisation count idle cycles
        s.merge("hbm", self.mem.stats(at_tick=self.env.now))
        return s
