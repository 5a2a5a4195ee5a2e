"""T3's Tracker at the memory controller (paper Sec. 4.2.1, Fig. 9).

Organisation. ``entries`` sets indexed by the low bits of the (region's) WG
id, ``wg_lsb`` = log2(entries) bits; each set holds ``ways`` entries tagged
by ``(wg_msb, wf_id)``; an entry holds the region's starting virtual address
and an access counter. One logical tracker per GPU observes the requests of
all its memory controllers as they are *enqueued* (admitted into a
controller queue, :meth:`MemorySystem.set_enqueue_hook`), so it is off the
critical path: the DRAM access never waits for it.

Regions. A tracked region is a WF's output tile (``granularity="wf"``), a WG's
(``"wg"``), or ``granularity_multiple`` consecutive ones: WF ``f`` of WG ``w``
belongs to region ``(w, f // m)`` (wf) or ``(w // m, 0)`` (wg). Regions are
*programmed* before the kernel (:meth:`program`) with a threshold: the number
of accesses that complete them. The paper states the threshold in elements,
``wf_tile_size x updates_per_element``; the controller sees 64 B requests
and counts one per request, so here the threshold is ``requests in the
region x updates_per_element`` (identical when every request carries the
same number of the region's elements, i.e. tile edges 64 B-aligned).

Counting. Every WRITE or UPDATE admitted with a ``wg_id >= 0`` (local GEMM
stores, remote stores and DMA updates arriving from peers) increments its
region's entry, allocating it on first touch. Accesses to regions that were
not programmed are ignored (counted in ``untracked``). When a counter reaches
its threshold the entry fires its callback once (which marks the DMA entry
ready, Sec. 4.2.2) and frees its way.

Full sets (``full_policy: stall``). An access whose region has no entry
and may not take a way *stalls*: its increment waits in the set's FIFO until
it may (the DRAM access itself is not delayed: the tracker is off the
critical path). Who may take a free way is the admission policy
(``admission``, :mod:`t3sim.dma.tracker_policy`): ``first_come`` (any access
while a way is free; can deadlock round the ring at TP=32) or
``reserve_ready`` (default; the last free way of a set only for an access
that leaves a *ready* region in the set, one whose every access is sure to
arrive; deadlock-free, the argument is in that module). A region is ready
once an access from a peer (communication stream) was counted into it, or
from allocation when it expects none (``program(..., peer_input=False)``).

Statistics (:meth:`stats`): stalled accesses, the ticks they waited, the
most waiting at once and the most regions they belonged to at once (a stall
buffer holding one pending count per region needs that many entries; the
buffer is modelled as unbounded, outside the 19 KB); the last-way refusals of the policy; per-set occupancy
(most ways of one set, time-weighted mean occupied ways per set, most ways
of all sets at once), sets that were ever full and set-time spent full.

Invariants (checked, raise AssertionError): a counter never exceeds its
threshold; every programmed region fires exactly once (:meth:`check_done`).

Storage (:meth:`storage_bits`, paper: "256 entries ... making the Tracker
size 19KB"). Per way: tag ``wg_msb + wf_id`` bits, a valid bit, the starting
virtual address and the counter. With the paper's 256 sets (``wg_lsb`` = 8
bits), 8 ways (``wf_id`` = 3 bits, "a maximum of eight WFs per WG"), 48-bit
virtual addresses, a 16-bit counter and a 16-bit WG id (``wg_msb`` =
16 - 8 = 8 bits)::

    bits per way = 8 (wg_msb) + 3 (wf_id) + 1 (valid) + 48 (address) + 16 (counter) = 76
    total        = 256 sets x 8 ways x 76 bits = 155,648 bits = 19,456 B = 19.0 KiB

``reserve_ready`` adds a ready bit per way: 77 bits, 157,696 bits = 19,712 B =
19.25 KiB (+1.3 %).

The paper states 256 entries, the 3-bit wf_id, and the 19 KB total but not
the address, counter and WG-id widths; the widths above (config defaults,
sources in docs/parameters.md) are the ones that make its fields add to its
total.
"""

from __future__ import annotations

from collections import defaultdict, deque
from itertools import repeat
from typing import Callable, Deque, Dict, List, Optional, Set, Tuple

import numpy as np

from t3sim.dma.tracker_policy import build as build_admission
from t3sim.memory.request import Kind, Stream

Region = Tuple[int, int]
#: consecutive stalled accesses of one region: [region, whether they came from a peer, their arrival ticks]
#: (a set's FIFO holds runs, so re-scanning it costs a step per run, not per access; processing a run
#: is processing its accesses one after another, as nothing else happens between them)
Waiting = List

#: ``_COUNTED_KIND[kind]``: whether a request of that :class:`Kind` value is counted (WRITE, UPDATE).
_COUNTED_KIND = np.zeros(max(Kind) + 1, dtype=bool)
_COUNTED_KIND[[Kind.WRITE, Kind.UPDATE]] = True


def _log2(x: int) -> int:
    return max(0, int(x - 1).bit_length())


class Tracker:
    """One GPU's tracker (module doc). ``cfg`` is a :class:`~t3sim.config.system.TrackerConfig`."""

    def __init__(self, cfg, name: str = "tracker"):
        self.cfg, self.name = cfg, name
        self.sets, self.ways = int(cfg.entries), int(cfg.ways)
        self.m = int(cfg.granularity_multiple)
        self.wg_gran = cfg.granularity == "wg"
        self.policy = build_admission(cfg.admission)
        #: whether the policy reads readiness (first_come does not: nothing about readiness is kept)
        self.uses_ready = self.policy.ready_bits > 0
        self._threshold: Dict[Region, int] = {}
        self._addr: Dict[Region, int] = {}
        self._cb: Dict[Region, Callable[[Region, int], None]] = {}
        self._count: Dict[Region, int] = {}
        self._fired: Dict[Region, int] = {}
        self._no_peer: Set[Region] = set()  # programmed regions that expect no access from a peer
        self._ready: Set[Region] = set()  # regions holding a way that are ready (module doc)
        self._set_use = np.zeros(self.sets, dtype=np.int64)
        self._ready_in_set = np.zeros(self.sets, dtype=np.int64)
        self._stalled: Dict[int, Deque[Waiting]] = defaultdict(deque)
        self.stalled_accesses = 0
        self.stall_ticks = 0
        self.untracked = 0
        self.counted = 0
        self.max_set_use = 0
        self.refusals = 0  # accesses the policy kept from a free way
        self.stalled_now = self.peak_stalled = 0
        self._pending: Dict[Region, int] = {}  # stalled accesses per region (a coalescing stall buffer's entries)
        self.peak_pending_regions = 0
        # occupancy over time: ways in use (all sets), full sets, their integrals since the first access
        self._use_total = self.peak_use = self._full_sets = 0
        self._use_area = self._full_area = 0
        self._t_first: Optional[int] = None
        self._t_last = 0
        self._set_max = np.zeros(self.sets, dtype=np.int64)

    # ---------------------------------------------------------------- geometry
    def region(self, wg_id: int, wf_id: int) -> Region:
        """The region WF ``wf_id`` of WG ``wg_id`` belongs to."""
        if self.wg_gran:
            return (int(wg_id) // self.m, 0)
        return (int(wg_id), int(wf_id) // self.m)

    def regions(self, wg_ids, wf_ids) -> Tuple[np.ndarray, np.ndarray]:
        """:meth:`region` of many accesses at once: the two key columns as int64 arrays."""
        wg = np.asarray(wg_ids).astype(np.int64, copy=False)
        if self.wg_gran:
            return wg // self.m, np.zeros(len(wg), dtype=np.int64)
        return wg, np.asarray(wf_ids).astype(np.int64, copy=False) // self.m

    def set_of(self, region: Region) -> int:
        return region[0] % self.sets

    def storage_bits(self, wg_id_bits: Optional[int] = None) -> Dict[str, int]:
        """Storage breakdown in bits (module doc). ``wg_id_bits`` defaults to the config's."""
        c = self.cfg
        wg_id_bits = c.wg_id_bits if wg_id_bits is None else wg_id_bits
        lsb = _log2(self.sets)
        msb = max(0, wg_id_bits - lsb)
        wf = _log2(self.ways) if not self.wg_gran else 0
        ready = self.policy.ready_bits
        per_way = msb + wf + 1 + c.address_bits + c.counter_bits + ready
        return {"wg_lsb": lsb, "wg_msb": msb, "wf_id": wf, "valid": 1, "address": c.address_bits,
                "counter": c.counter_bits, "ready": ready, "per_way": per_way, "total": per_way * self.ways * self.sets}

    def storage_bytes(self) -> int:
        return self.storage_bits()["total"] // 8

    # ---------------------------------------------------------------- programming
    def program(self, region: Region, threshold: int, callback: Callable[[Region, int], None], start_addr: int = 0,
                peer_input: bool = True) -> None:
        """Pre-program ``region`` to fire ``callback(region, tick)`` after ``threshold`` accesses.

        ``peer_input``: some of those accesses come from a peer (remote stores, DMA updates); a region
        without is ready from allocation (module doc).
        """
        if threshold < 1:
            raise ValueError(f"{self.name}: region {region} threshold {threshold} < 1")
        if region in self._threshold:
            raise ValueError(f"{self.name}: region {region} programmed twice")
        self._threshold[region] = int(threshold)
        self._cb[region] = callback
        self._addr[region] = int(start_addr)
        if not peer_input:
            self._no_peer.add(region)

    @property
    def programmed(self) -> int:
        return len(self._threshold)

    # ---------------------------------------------------------------- observing
    def on_enqueue(self, info) -> None:
        """Enqueue hook: ``info`` is a :class:`~t3sim.memory.system.EnqueueInfo`."""
        sel = _COUNTED_KIND[info.kind] & (info.wg_id >= 0)
        if not np.count_nonzero(sel):
            return
        comm = (info.stream[sel] == Stream.COMM) if self.uses_ready else None
        self.observe(info.tick[sel], info.wg_id[sel], info.wf_id[sel], comm)

    def observe(self, ticks, wg_ids, wf_ids, comm=None) -> None:
        """Count accesses (arrays, in admission order); ``comm``: per access, whether it came from a
        peer (communication stream), None = none did.

        Equivalent to ``_access(region(wg, wf), tick, comm)`` per programmed access, in order; the
        common case (the region holds an entry, stays below its threshold and its readiness does not
        change) is counted inline.
        """
        k0, k1 = self.regions(wg_ids, wf_ids)
        r0, r1 = k0.tolist(), k1.tolist()
        tl = np.asarray(ticks).tolist()
        if self._t_first is None and tl:
            self._t_first = self._t_last = int(tl[0])
        thresholds, count, ready = self._threshold, self._count, self._ready
        cl = repeat(False) if comm is None else np.asarray(comm, dtype=bool).tolist()
        untracked = counted = 0
        for t, r, cm in zip(tl, zip(r0, r1), cl):
            c = count.get(r)
            if c is not None and c + 1 < thresholds[r] and (not cm or r in ready):
                count[r] = c + 1
                counted += 1
            elif r in thresholds:  # allocation, firing, readiness or stall: the general path, counters flushed first
                self.counted += counted
                self.untracked += untracked
                counted = untracked = 0
                self._access(r, int(t), bool(cm))
            else:
                untracked += 1
        self.counted += counted
        self.untracked += untracked

    def _access(self, r: Region, tick: int, comm: bool = False) -> None:
        if r in self._count:
            self._bump(r, tick, 1)
            if comm and self.uses_ready and r in self._count and r not in self._ready:
                self._make_ready(r)
                self._unstall(self.set_of(r), tick)
            return
        s = self.set_of(r)
        if not self._admit(r, s, comm, count=True):
            q = self._stalled[s]
            if q and q[-1][0] == r and q[-1][1] == comm:
                q[-1][2].append(tick)
            else:
                q.append([r, comm, [tick]])
            self.stalled_accesses += 1
            self.stalled_now += 1
            self.peak_stalled = max(self.peak_stalled, self.stalled_now)
            k = self._pending.get(r, 0)
            self._pending[r] = k + 1
            if not k:
                self.peak_pending_regions = max(self.peak_pending_regions, len(self._pending))
            return
        self._allocate(r, s, tick, comm)
        self._bump(r, tick, 1)
        if self.uses_ready and self._stalled.get(s):
            self._unstall(s, tick)  # accesses of r that waited, or that a new ready region now admits

    def _admit(self, r: Region, s: int, comm: bool, count: bool = False) -> bool:
        used = int(self._set_use[s])
        ok = self.policy.admit(used, self.ways, comm, r in self._no_peer, int(self._ready_in_set[s]))
        if count and not ok and used < self.ways:
            self.refusals += 1
        return ok

    def _make_ready(self, r: Region) -> None:
        self._ready.add(r)
        self._ready_in_set[self.set_of(r)] += 1

    def _occupancy(self, s: int, tick: int, delta: int) -> None:
        """Set ``s`` gains (+1) or loses (-1) a way at ``tick``; keeps the occupancy integrals."""
        t = max(int(tick), self._t_last)
        dt = t - self._t_last
        self._use_area += self._use_total * dt
        self._full_area += self._full_sets * dt
        self._t_last = t
        was_full = self._set_use[s] >= self.ways
        self._set_use[s] += delta
        self._use_total += delta
        full = self._set_use[s] >= self.ways
        self._full_sets += int(full) - int(was_full)
        if delta > 0:
            self.peak_use = max(self.peak_use, self._use_total)
            u = int(self._set_use[s])
            self.max_set_use = max(self.max_set_use, u)
            if u > self._set_max[s]:
                self._set_max[s] = u

    def _allocate(self, r: Region, s: int, tick: int = 0, comm: bool = False) -> None:
        self._occupancy(s, tick, +1)
        self._count[r] = 0
        if self.uses_ready and (comm or r in self._no_peer):
            self._make_ready(r)

    def _bump(self, r: Region, tick: int, n: int, retry: bool = True) -> None:
        """Count ``n`` accesses to region ``r``; at its threshold fire it and free its way.

        ``retry=False`` skips re-running the set's stall queue (the caller is already doing so).
        """
        c = self._count[r] + n
        thr = self._threshold[r]
        assert c <= thr, f"{self.name}: region {r} counted {c} accesses, threshold {thr}"
        self.counted += n
        if c < thr:
            self._count[r] = c
            return
        del self._count[r]
        assert r not in self._fired, f"{self.name}: region {r} fired twice"
        self._fired[r] = tick
        s = self.set_of(r)
        if r in self._ready:
            self._ready.discard(r)
            self._ready_in_set[s] -= 1
        self._occupancy(s, tick, -1)
        self._cb[r](r, tick)
        if retry:
            self._unstall(s, tick)

    def _unstall(self, s: int, tick: int) -> None:
        """Set ``s`` changed at ``tick`` (a way freed, or a ready region arrived): retry its stalled
        accesses in arrival order.

        An access proceeds if its region holds a way (taken meanwhile) or the policy admits it; the
        others keep waiting. Passes repeat while one frees a way or makes a region ready, so no
        access of a region holding a way is left waiting (the deadlock argument relies on it).
        """
        while True:
            q = self._stalled.get(s)
            if not q:
                return
            keep: Deque[Waiting] = deque()
            again = False
            while q:
                run = q.popleft()
                r, cm, t0s = run
                if r not in self._count:
                    if not self._admit(r, s, cm):
                        keep.append(run)
                        continue
                    self._allocate(r, s, tick, cm)
                    again |= r in self._ready
                n = len(t0s)
                self.stall_ticks += sum(max(0, tick - t0) for t0 in t0s)
                self.stalled_now -= n
                left = self._pending[r] - n
                if left:
                    self._pending[r] = left
                else:
                    del self._pending[r]
                before = len(self._fired)
                self._bump(r, tick, n, retry=False)
                if len(self._fired) > before:
                    again = True
                elif cm and self.uses_ready and r not in self._ready:
                    self._make_ready(r)
                    again = True
            self._stalled[s] = keep
            if not (again and keep):
                return

    # ---------------------------------------------------------------- checks & stats
    def fired(self, region: Region) -> Optional[int]:
        return self._fired.get(region)

    def waiting(self) -> Tuple[int, int, int]:
        """``(regions below threshold, accesses stalled now, sets with stalled accesses)``, for reports."""
        stalled = [sum(len(run[2]) for run in q) for q in self._stalled.values() if q]
        return self.programmed - len(self._fired), sum(stalled), len(stalled)

    def check_invariant(self) -> None:
        """``reserve_ready``'s invariant (I): every full set holds a ready region (module doc of
        :mod:`t3sim.dma.tracker_policy`); for tests."""
        if not self.uses_ready:
            return
        full = np.flatnonzero(self._set_use >= self.ways)
        bad = full[self._ready_in_set[full] == 0]
        assert not len(bad), f"{self.name}: full sets without a ready region: {bad[:5].tolist()}"

    def check_done(self) -> None:
        """Every programmed region fired exactly once and nothing is left waiting."""
        missing = [r for r in self._threshold if r not in self._fired]
        assert not missing, f"{self.name}: {len(missing)} regions never reached their threshold, e.g. {missing[:3]}"
        assert not any(self._stalled.values()), f"{self.name}: stalled accesses left"
        assert not self._pending and self.stalled_now == 0, f"{self.name}: stall bookkeeping left {self.stalled_now}"

    def stats(self):
        from t3sim.results.stats import Stats

        span = self._t_last - (self._t_first or 0)
        mean_occ = self._use_area / (self.sets * span) if span > 0 else 0.0
        hist = np.bincount(self._set_max, minlength=self.ways + 1)
        s = Stats()
        s.add("programmed_regions", self.programmed, "count", "tracker regions pre-programmed (Sec. 4.2.1)")
        s.add("fired", len(self._fired), "count", "regions whose counter reached the threshold (DMA triggers)")
        s.add("counted_accesses", self.counted, "count", "writes/updates counted into tracker entries")
        s.add("untracked_accesses", self.untracked, "count", "writes/updates to regions not programmed")
        s.add("stalled_accesses", self.stalled_accesses, "count",
              "accesses whose region held no way and that could not take one (set full, or the last way refused by the admission policy); they waited")
        s.add("stall_ticks", self.stall_ticks, "ticks", "total time stalled accesses waited for a way")
        s.add("peak_stalled_accesses", self.peak_stalled, "count",
              "most accesses waiting for a way at once (the stall buffer the hardware would need; modelled as unbounded)")
        s.add("peak_stalled_regions", self.peak_pending_regions, "count",
              "most regions with waiting accesses at once (entries of a stall buffer that keeps one pending count per region)")
        s.add("last_way_refusals", self.refusals, "count",
              "accesses the admission policy kept from a set's last free way (reserve_ready; 0 under first_come)")
        s.add("max_set_occupancy", self.max_set_use, "count", "most ways of one set in use at once")
        s.add("mean_set_occupancy", mean_occ, "ways",
              "time-weighted mean of the ways in use per set, from the first counted access to the last way freed")
        s.add("peak_occupied_ways", self.peak_use, "count", "most ways in use at once over all sets (of entries x ways)")
        s.add("sets_by_max_occupancy", hist.tolist(), "count",
              "histogram: element k = sets whose occupancy peaked at k ways (k = 0 .. ways)")
        s.add("sets_ever_full", int(np.count_nonzero(self._set_max >= self.ways)), "count", "sets that had all their ways in use at some time")
        s.add("full_set_ticks", self._full_area, "ticks", "time sets spent with every way in use, summed over sets")
        s.add("storage_bytes", self.storage_bytes(), "B",
              "tracker storage (Sec. 4.2.1: 19 KB; reserve_ready adds a ready bit per way)")
        return s
