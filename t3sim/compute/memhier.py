"""One GPU's memory hierarchy as the CUs, collectives and DMA engines see it: L2 -> memory controller -> HBM.

``read``/``write`` take a batch of 64 B requests (byte addresses) at the
current simulated time and return a simpy event that fires when the batch is
done (reads: every byte is back at the requester; writes: accepted by the L2,
or, for uncached writes and near-memory updates, written in DRAM).

Paths (paper Sec. 4.3 and Table 1):

* cached read: L2 hit -> data after the L2 hit latency; miss -> a 64 B DRAM
  read (compute or communication stream), data after the DRAM completion
  plus the L2 latency back to the requester. Hits on a line whose fill is
  still in flight wait for that fill (:class:`FillTable`, the MSHR merge).
* cached write: write-back L2; evictions of dirty lines become DRAM writes
  attributed to the line's owner.
* uncached write / update (T3's output allocation and DMA updates): straight
  to the memory controller as WRITE or UPDATE (op-and-store), carrying
  ``wg_id``/``wf_id`` for the tracker; the L2 slice is passed through for
  coherence (resident dirty lines are flushed first).

DRAM traffic is counted per *category* (``gemm``, ``rs``, ``ag``, ``dma``...,
the paper's Fig. 18 split) and kind (read / write / update), in bytes.
Invariant: the category counters add up to the bytes the memory system
served.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Sequence

import numba
import numpy as np
import simpy

from t3sim.cache import l2_kernel as L2K
from t3sim.cache.common import HIT, WriteBacks
from t3sim.cache.l2 import L2Cache
from t3sim.memory.port import MemoryPort
from t3sim.memory.request import Kind, Source, Stream
from t3sim.memory.system import MemorySystem
from t3sim.results.stats import Stats
from t3sim.sim.clock import Clock
from t3sim.sim.engine import succeed_later

REQ_B = 64  # bytes per request everywhere between CU, L2 and DRAM (hbm.access_size_B)

#: Fig. 18 categories and the memory-controller source each maps to.
CATEGORY_SOURCE = {"gemm": Source.GEMM, "rs": Source.COLLECTIVE, "ag": Source.COLLECTIVE, "dma": Source.DMA,
                   "other": Source.OTHER}


@numba.njit(cache=True, inline="always")
def _fill_slot(line, mask):  # pragma: no cover - compiled
    """:class:`FillTable` slot of a 128 B line address (direct-mapped, XOR-folded)."""
    return (line ^ (line >> 20)) & mask


@numba.njit(cache=True)
def _read_plan(addrs, outcome, ready_tick, fill_mask, fl_line, fl_tag, mask, any_fills):  # pragma: no cover - compiled
    """One cached/uncached read batch after its L2 access (its L2Result's arrays).

    Returns ``(ready, tags, req)``: the latest hit's ready tick (-1: no hit); the sorted
    distinct fill-table tags of in-flight fills that hit lines cover (only if ``any_fills``);
    the sorted distinct 64 B DRAM requests of the misses.
    """
    n = addrs.shape[0]
    ready = -1
    tags = np.empty(n, dtype=np.int64)
    nt = 0
    req = np.empty(n, dtype=np.int64)
    nr = 0
    for i in range(n):
        if outcome[i] == HIT:
            if ready_tick[i] > ready:
                ready = ready_tick[i]
            if any_fills:
                ln = addrs[i] & ~np.int64(127)
                s = _fill_slot(ln, mask)
                if fl_line[s] == ln:
                    tags[nt] = fl_tag[s]
                    nt += 1
        if fill_mask[i] != 0:
            req[nr] = addrs[i] & ~np.int64(REQ_B - 1)
            nr += 1
    return ready, _sorted_unique(tags[:nt]), _sorted_unique(req[:nr])


@numba.njit(cache=True)
def _l2_read(addrs, unc, sc, now, S, G, V, occ, counts, fl_line, fl_tag, mask, any_fills):  # pragma: no cover - compiled
    """A 64 B read batch through the fast L2 (:func:`~t3sim.cache.l2_kernel.access_uniform`) and its
    :func:`_read_plan`, in one call: ``(ready, tags, req, E)``, ``E`` the write-back rows."""
    R, E, _cyc = L2K.access_uniform(addrs, False, unc, sc, REQ_B, now, S, G, V, occ, counts)
    ready, tags, req = _read_plan(addrs, R[L2K.R_OUT], R[L2K.R_READY_TICK], R[L2K.R_FILL], fl_line, fl_tag, mask,
                                  any_fills)
    return ready, tags, req, E


@numba.njit(cache=True)
def _sorted_unique(x):  # pragma: no cover - compiled
    if x.shape[0] == 0:
        return x
    y = np.sort(x)
    k = 1
    for i in range(1, y.shape[0]):
        if y[i] != y[k - 1]:
            y[k] = y[i]
            k += 1
    return y[:k]


@numba.njit(cache=True)
def _record_fills(req, fl_line, fl_tag, mask, tag):  # pragma: no cover - compiled
    """Point the fill-table slots of the 128 B lines of sorted requests ``req`` at ``tag``."""
    for i in range(req.shape[0]):
        ln = req[i] & ~np.int64(127)
        s = _fill_slot(ln, mask)
        fl_line[s] = ln
        fl_tag[s] = tag


class FillTable:
    """Fills in flight, for merging later hits with an outstanding miss (MSHR behaviour).

    A direct-mapped table of ``2**bits`` slots keyed by 128 B L2 line address: a
    miss records ``(line, fill event)``; a later access that hits that line in
    the L2 while the event is pending waits for it. A slot collision forgets
    the older fill (its later hitters then see an ordinary hit): rare with the
    default 2**20 slots, and only ever optimistic by one L2-to-DRAM latency.
    """

    def __init__(self, bits: int = 20):
        self.mask = (1 << bits) - 1
        self.line = np.full(1 << bits, -1, dtype=np.int64)
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
        """Record ``ev`` as the fill of the 128 B lines of sorted 64 B requests ``req``."""
        _record_fills(req, self.line, self.tag, self.mask, self._new(ev))


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
        self.traffic: Dict[str, Dict[str, int]] = defaultdict(lambda: {"read": 0, "write": 0, "update": 0})
        self.outstanding_writes = 0
        self._drained: Optional[simpy.Event] = None

    # ------------------------------------------------------------------ helpers
    def _cat(self, category: str) -> int:
        try:
            return self._cat_index[category]
        except KeyError:
            raise ValueError(f"unknown traffic category {category!r}; known: {self.categories}") from None

    def _dram(self, addrs: np.ndarray, kind: Kind, stream: Stream, category: str, wg_id=None, wf_id=None,
              data=None) -> simpy.Event:
        self.traffic[category][kind.name.lower()] += REQ_B * len(addrs)
        return self.port.access(addrs, kind, stream, CATEGORY_SOURCE.get(category, Source.OTHER),
                                wg_id=wg_id, wf_id=wf_id, data=data)

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

    def _writebacks(self, wb) -> None:
        if len(wb.line_addr):
            # a dirty line (128 B) goes back as the 64 B requests its dirty sectors touch
            lines = wb.line_addr
            for src in np.unique(wb.src):
                sel = wb.src == src
                addrs = np.concatenate([lines[sel & ((wb.sector_mask & 0b0011) != 0)],
                                        lines[sel & ((wb.sector_mask & 0b1100) != 0)] + REQ_B])
                if len(addrs):
                    self._track_write(self._dram(np.sort(addrs), Kind.WRITE, Stream.COMPUTE, self.categories[int(src)]))

    def _track_write(self, ev: simpy.Event) -> simpy.Event:
        self.outstanding_writes += 1

        def done(_e):
            self.outstanding_writes -= 1
            if self.outstanding_writes == 0 and self._drained is not None:
                d, self._drained = self._drained, None
                d.succeed()

        ev.callbacks.append(done)
        return ev

    # ------------------------------------------------------------------ API
    def read(self, addrs, category: str = "gemm", stream: Stream = Stream.COMPUTE, uncached: bool = False,
             with_data: bool = False) -> simpy.Event:
        """Read 64 B requests at ``addrs`` (bytes); event fires when all data has returned.

        ``with_data`` (functional mode, uncached reads only: an uncached read always reaches DRAM, whose
        values the functional store keeps; the L2 keeps none): the event's value is the data read,
        ``(len(addrs), elems)`` in the order of ``addrs``.
        """
        addrs = np.asarray(addrs, dtype=np.int64)
        if with_data:
            return self._read_data(addrs, category, stream)
        if not len(addrs):
            return self._join([], self.env.now, 0)
        return self._read(addrs, category, stream, uncached)[0]

    def _read(self, addrs: np.ndarray, category: str, stream: Stream, uncached: bool):
        """:meth:`read` of a non-empty batch: ``(done event, its DRAM batch's event or None, DRAM requests)``."""
        env = self.env
        fills = self.fills
        l2 = self.l2
        now = l2.clock.next_cycle_at_or_after(env.now)
        # one compiled call: the L2 accesses and the read plan
        ready, tags, req, E = _l2_read(addrs, bool(uncached), self._cat(category), now, *l2.kernel_state, fills.line,
                                       fills.tag, fills.mask, bool(fills.events))
        if E.shape[1]:
            self._writebacks(WriteBacks(E[L2K.E_LINE], E[L2K.E_MASK], E[L2K.E_SRC], E[L2K.E_ACC], E[L2K.E_FLUSH]))
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
        return self._join(waits, ready if ready >= 0 else env.now, self.l2_latency), dram, req

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
        # an uncached read is one DRAM batch over its sorted distinct requests (no L2 hit, no fill merge)
        idx = np.searchsorted(req, addrs)
        done.callbacks.append(lambda _e: out.succeed(dram.value.data[idx]))
        return out

    def write(self, addrs, category: str = "gemm", stream: Stream = Stream.COMPUTE, uncached: bool = False,
              update: bool = False, wg_id=None, wf_id=None, data=None) -> simpy.Event:
        """Write (or, with ``update``, op-and-store) 64 B requests; event fires when accepted/written.

        ``update`` implies ``uncached`` (near-memory updates happen in DRAM, paper Sec. 4.3).
        """
        addrs = np.asarray(addrs, dtype=np.int64)
        if not len(addrs):
            return self._join([], self.env.now, 0)
        uncached = uncached or update
        r = self.l2.access(self.env.now, addrs, True, self._cat(category), uncached=uncached)
        self._writebacks(r.writebacks)
        waits: List[simpy.Event] = []
        direct = r.dram_write_mask != 0
        if direct.any():
            sel = np.flatnonzero(direct)
            kind = Kind.UPDATE if update else Kind.WRITE
            pick = (lambda x: x if x is None or np.isscalar(x) else np.asarray(x)[sel])
            ev = self._dram(addrs[sel], kind, stream, category, wg_id=pick(wg_id), wf_id=pick(wf_id),
                            data=None if data is None else np.asarray(data)[sel])
            waits.append(self._track_write(ev))
        return self._join(waits, int(r.done_tick.max()), 0)

    def drained(self) -> simpy.Event:
        """Event that fires once every DRAM write issued so far has completed."""
        if self.outstanding_writes == 0:
            ev = self.env.event()
            ev.succeed()
            return ev
        if self._drained is None:
            self._drained = self.env.event()
        return self._drained

    # ------------------------------------------------------------------ stats
    def stats(self) -> Stats:
        s = Stats()
        for cat in self.categories:
            t = self.traffic.get(cat, {"read": 0, "write": 0, "update": 0})
            for kind in ("read", "write", "update"):
                s.add(f"dram_traffic.{cat}.{kind}_bytes", t[kind], "B",
                      f"DRAM {kind} bytes issued by {cat} (paper Fig. 18 category)")
        s.merge("l2", self.l2.stats())
        # the controllers' statistics cover the cycles up to now, not up to the last pump step
        # (whose time depends on the pump cadence): queue occupancy and utilisation count idle cycles
        self.mem.advance(self.env.now)
        s.merge("hbm", self.mem.stats())
        return s
