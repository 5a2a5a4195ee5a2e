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
The FIFOs and their retries are :mod:`t3sim.dma.tracker_stall`'s.

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

from itertools import repeat
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from t3sim.dma.fast import tracker_kernel as TK
from t3sim.dma.tracker_stall import StallFIFOs
from t3sim.dma.tracker_policy import build as build_admission
from t3sim.memory.request import Kind, Stream
from t3sim.results.stats import Stats

Region = Tuple[int, int]

#: ``_COUNTED_KIND[kind]``: whether a request of that :class:`Kind` value is counted (WRITE, UPDATE).
_COUNTED_KIND = np.zeros(max(Kind) + 1, dtype=bool)
_COUNTED_KIND[[Kind.WRITE, Kind.UPDATE]] = True
assert (TK._WRITE, TK._UPDATE, TK._COMM) == (Kind.WRITE, Kind.UPDATE, Stream.COMM)
_COMM = int(Stream.COMM)


def _log2(x: int) -> int:
    return max(0, int(x - 1).bit_length())


class Tracker(StallFIFOs):
    """One GPU's tracker (module doc). ``cfg`` is a :class:`~t3sim.config.system.TrackerConfig`.

    State. Programmed regions get ids (``rid``) in programming order; thresholds, counters (-1: no way
    held), readiness and the key -> id table are dense arrays (:mod:`t3sim.dma.fast.tracker_kernel`).
    ``counting`` (class attribute) selects how the common increment is done: ``"compiled"`` (default,
    :func:`~t3sim.dma.fast.tracker_kernel.count_common`), ``"python"`` (the same function as Python) or
    ``"general"`` (every programmed access through the general path, :meth:`_access`: the definition
    the inline counting must equal); the tests hold the three equal. The stall FIFOs and their retries are
    :class:`~t3sim.dma.tracker_stall.StallFIFOs`'s (``unstall``, ``stall_buffer``).
    """

    counting = "compiled"

    def __init__(self, cfg, name: str = "tracker"):
        self.cfg, self.name = cfg, name
        self.sets, self.ways = int(cfg.entries), int(cfg.ways)
        self.m = int(cfg.granularity_multiple)
        self.wg_gran = cfg.granularity == "wg"
        self.policy = build_admission(cfg.admission)
        #: whether the policy reads readiness (first_come does not: nothing about readiness is kept)
        self.uses_ready = self.policy.ready_bits > 0
        self._rid: Dict[Region, int] = {}  # region -> id
        self._keys: List[Region] = []  # id -> region
        self._cb: List[Callable[[Region, int], None]] = []
        self._addr: List[int] = []
        self._st = np.zeros((3, 0), dtype=np.int64)  # rows: threshold, counter, ready (tracker_kernel)
        self._thr, self._cnt, self._rdy = self._st  # counter -1 while the region holds no way
        self._nopeer = np.zeros(0, dtype=bool)  # expects no access from a peer
        self._setof = np.zeros(0, dtype=np.int64)  # its set
        self._lut = np.full((0, 0), -1, dtype=np.int64)  # region key (k0, k1) -> id
        self._fired: Dict[Region, int] = {}
        self._set_use = np.zeros(self.sets, dtype=np.int64)
        self._ready_in_set = np.zeros(self.sets, dtype=np.int64)
        self._init_stalls()
        self.untracked = 0
        self.counted = 0
        self.max_set_use = 0
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
        without is ready from allocation (module doc). Region keys are pairs of non-negative ints.
        """
        self.program_many([region], [threshold], [callback], [start_addr], [peer_input])

    def program_many(self, regions: List[Region], thresholds, callbacks, start_addrs, peer_inputs) -> None:
        """:meth:`program` for many regions at once (lists of equal length), in order."""
        n = len(regions)
        k = np.asarray(regions, dtype=np.int64).reshape(n, 2)
        thr = np.asarray(thresholds, dtype=np.int64).reshape(n)
        for i in np.flatnonzero(thr < 1)[:1].tolist():
            raise ValueError(f"{self.name}: region {regions[i]} threshold {thresholds[i]} < 1")
        for i in np.flatnonzero((k < 0).any(axis=1))[:1].tolist():
            raise ValueError(f"{self.name}: region {regions[i]}: keys must be non-negative")
        keys = list(map(tuple, k.tolist()))
        r0 = len(self._keys)
        ids = dict(zip(keys, range(r0, r0 + n)))
        if len(ids) < n or not self._rid.keys().isdisjoint(ids):
            seen = set(self._rid)
            for key in keys:
                if key in seen:
                    raise ValueError(f"{self.name}: region {key} programmed twice")
                seen.add(key)
        r1 = r0 + n
        if r1 > self._st.shape[1]:
            cap = max(64, 2 * self._st.shape[1], r1)
            st = np.zeros((3, cap), dtype=np.int64)
            st[TK.CNT] = -1
            st[:, :r0] = self._st[:, :r0]
            self._st = st
            self._thr, self._cnt, self._rdy = st
            for name in ("_nopeer", "_setof"):
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[:r0] = old[:r0]
                setattr(self, name, new)
        if n:
            need = k.max(axis=0) + 1
            if need[0] > self._lut.shape[0] or need[1] > self._lut.shape[1]:
                lut = np.full((max(int(need[0]), 2 * self._lut.shape[0]), max(int(need[1]), self._lut.shape[1])), -1,
                              dtype=np.int64)
                lut[: self._lut.shape[0], : self._lut.shape[1]] = self._lut
                self._lut = lut
        self._lut[k[:, 0], k[:, 1]] = np.arange(r0, r1)
        self._rid.update(ids)
        self._keys.extend(keys)
        self._qruns.extend(repeat(0, n))
        self._cb.extend(callbacks)
        self._addr.extend(int(a) for a in start_addrs)
        self._thr[r0:r1] = thr
        self._nopeer[r0:r1] = ~np.asarray(peer_inputs, dtype=bool).reshape(n)
        self._setof[r0:r1] = k[:, 0] % self.sets

    @property
    def programmed(self) -> int:
        return len(self._keys)

    # ---------------------------------------------------------------- observing
    def on_enqueue(self, info) -> None:
        """Enqueue hook: ``info`` is a :class:`~t3sim.memory.interface.EnqueueInfo`."""
        self._count(info.tick, info.kind, info.wg_id, info.wf_id, info.stream)

    def observe(self, ticks, wg_ids, wf_ids, comm=None) -> None:
        """Count accesses (arrays, in admission order); ``comm``: per access, whether it came from a
        peer (communication stream), None = none did.

        Equivalent to ``_access(region(wg, wf), tick, comm)`` per programmed access, in order; the
        common case (the region holds an entry, stays below its threshold and its readiness does not
        change) is counted inline (``counting``).
        """
        wg = np.asarray(wg_ids, dtype=np.int64).reshape(-1)
        n = len(wg)
        stream = np.zeros(n, dtype=np.int64) if comm is None else np.asarray(comm, dtype=np.int64).reshape(-1)
        self._count(np.asarray(ticks, dtype=np.int64).reshape(-1), np.full(n, int(Kind.WRITE), dtype=np.int64), wg,
                    np.asarray(wf_ids, dtype=np.int64).reshape(-1), stream)

    def _count(self, ticks, kind, wg, wf, stream) -> None:
        """Count the accesses (per-access int64 arrays: tick, :class:`Kind`, WG, WF, :class:`Stream`) that
        are writes or updates with a WG id (module doc of :mod:`t3sim.dma.fast.tracker_kernel`)."""
        if self._t_first is None:
            i = TK.first_counted(kind, wg)
            if i < 0:
                return
            self._t_first = self._t_last = int(ticks[i])
        n = len(kind)
        mode = self.counting
        if mode == "general":
            sel = np.flatnonzero(_COUNTED_KIND[kind] & (wg >= 0))
            k0, k1 = self.regions(wg[sel], wf[sel])
            comm = (stream[sel] == Stream.COMM) & self.uses_ready
            for t, a, b, cm in zip(ticks[sel].tolist(), k0.tolist(), k1.tolist(), comm.tolist()):
                rid = self._rid.get((a, b))
                if rid is None:
                    self.untracked += 1
                else:
                    self._access(rid, t, cm)
            return
        fn = TK.count_common if mode == "compiled" else TK.count_common_py
        uses_ready, wg_gran, m = self.uses_ready, self.wg_gran, self.m
        sb = self._sbuf
        counted = untracked = 0
        start = 0
        while True:
            i, c, u, ns = fn(kind, wg, wf, stream, ticks, start, wg_gran, m, uses_ready, self._lut, self._st,
                             self._setof, self._closed, sb)
            counted += c
            untracked += u
            if ns:  # stalls in closed sets, in order: queue them before anything else happens
                setof, stall = self._setof, self._stall
                for r, cm, t in zip(*sb[:, :ns].tolist()):
                    stall(r, int(setof[r]), t, cm == 1)
            if i >= n:
                break
            if ns == sb.shape[1]:  # the buffer was full before access i
                start = i
                continue
            # allocation, firing, readiness or a stall in an open set: the general path (the region is programmed)
            w = int(wg[i])
            r = (w // m, 0) if wg_gran else (w, int(wf[i]) // m)
            self._access(self._rid[r], int(ticks[i]), uses_ready and int(stream[i]) == _COMM)
            start = i + 1
        self.counted += counted
        self.untracked += untracked

    def _access(self, r: int, tick: int, comm: bool = False) -> None:
        """The general path for one access to region id ``r``."""
        if self._cnt[r] >= 0:
            self._bump(r, tick, 1)
            if comm and self.uses_ready and self._cnt[r] >= 0 and not self._rdy[r]:
                self._make_ready(r)
                self._unstall(int(self._setof[r]), tick)
            return
        s = int(self._setof[r])
        if not self._admit(r, s, comm):
            self._stall(r, s, tick, comm)
            return
        self._allocate(r, s, tick, comm)
        self._bump(r, tick, 1)
        if self.uses_ready and self._stalled.get(s):
            self._unstall(s, tick)  # accesses of r that waited, or that a new ready region now admits

    def _admit(self, r: int, s: int, comm: bool) -> bool:
        return self.policy.admit(int(self._set_use[s]), self.ways, comm, bool(self._nopeer[r]), int(self._ready_in_set[s]))

    def _make_ready(self, r: int) -> None:
        self._rdy[r] = 1
        s = self._setof[r]
        self._ready_in_set[s] += 1
        self._reclose(s)

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
        self._reclose(s)
        if delta > 0:
            self.peak_use = max(self.peak_use, self._use_total)
            u = int(self._set_use[s])
            self.max_set_use = max(self.max_set_use, u)
            if u > self._set_max[s]:
                self._set_max[s] = u

    def _allocate(self, r: int, s: int, tick: int = 0, comm: bool = False) -> None:
        self._occupancy(s, tick, +1)
        self._cnt[r] = 0
        self._way_held(r, s, +1)
        if self.uses_ready and (comm or self._nopeer[r]):
            self._make_ready(r)

    def _bump(self, r: int, tick: int, n: int, retry: bool = True) -> None:
        """Count ``n`` accesses to region id ``r``; at its threshold fire it and free its way.

        ``retry=False`` skips re-running the set's stall queue (the caller is already doing so).
        """
        c = int(self._cnt[r]) + n
        thr = int(self._thr[r])
        region = self._keys[r]
        assert c <= thr, f"{self.name}: region {region} counted {c} accesses, threshold {thr}"
        self.counted += n
        if c < thr:
            self._cnt[r] = c
            return
        self._cnt[r] = -1
        assert region not in self._fired, f"{self.name}: region {region} fired twice"
        self._fired[region] = tick
        s = int(self._setof[r])
        self._way_held(r, s, -1)
        if self._rdy[r]:
            self._rdy[r] = 0
            self._ready_in_set[s] -= 1
        self._occupancy(s, tick, -1)
        self._cb[r](region, tick)
        if retry:
            self._unstall(s, tick)

    # ---------------------------------------------------------------- checks & stats
    def fired(self, region: Region) -> Optional[int]:
        return self._fired.get(region)

    def waiting(self) -> Tuple[int, int, int]:
        """``(regions below threshold, accesses stalled now, sets with stalled accesses)``, for reports."""
        stalled = [sum(len(run[2]) for run in q) for q in self._stalled.values() if q]
        return self.programmed - len(self._fired), sum(stalled), len(stalled)

    def check_invariant(self) -> None:
        """``reserve_ready``'s invariant (I): every full set holds a ready region (module doc of
        :mod:`t3sim.dma.tracker_policy`), and the stall FIFOs' run counts (``_qruns``, ``_live``) match the
        FIFOs; for tests."""
        self._check_stall_counts()
        if not self.uses_ready:
            return
        full = np.flatnonzero(self._set_use >= self.ways)
        bad = full[self._ready_in_set[full] == 0]
        assert not len(bad), f"{self.name}: full sets without a ready region: {bad[:5].tolist()}"

    def check_done(self) -> None:
        """Every programmed region fired exactly once and nothing is left waiting."""
        missing = [r for r in self._keys if r not in self._fired]
        assert not missing, f"{self.name}: {len(missing)} regions never reached their threshold, e.g. {missing[:3]}"
        assert not any(self._stalled.values()), f"{self.name}: stalled accesses left"
        assert not self._pending and self.stalled_now == 0, f"{self.name}: stall bookkeeping left {self.stalled_now}"

    def stats(self):
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
