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
while its set's ways are all in use *stalls*: its increment waits in the
set's FIFO until a way frees (the DRAM access itself is not delayed: the
tracker is off the critical path). Statistics: stalled accesses and the
total ticks they waited.

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

The paper states 256 entries, the 3-bit wf_id, and the 19 KB total but not
the address, counter and WG-id widths; the widths above (config defaults,
sources in docs/parameters.md) are the ones that make its fields add to its
total.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Callable, Deque, Dict, Optional, Tuple

import numpy as np

from t3sim.memory.request import Kind

Region = Tuple[int, int]

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
        self._threshold: Dict[Region, int] = {}
        self._addr: Dict[Region, int] = {}
        self._cb: Dict[Region, Callable[[Region, int], None]] = {}
        self._count: Dict[Region, int] = {}
        self._fired: Dict[Region, int] = {}
        self._set_use = np.zeros(self.sets, dtype=np.int64)
        self._stalled: Dict[int, Deque[Tuple[Region, int]]] = defaultdict(deque)
        self.stalled_accesses = 0
        self.stall_ticks = 0
        self.untracked = 0
        self.counted = 0
        self.max_set_use = 0

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
        per_way = msb + wf + 1 + c.address_bits + c.counter_bits
        return {"wg_lsb": lsb, "wg_msb": msb, "wf_id": wf, "valid": 1, "address": c.address_bits,
                "counter": c.counter_bits, "per_way": per_way, "total": per_way * self.ways * self.sets}

    def storage_bytes(self) -> int:
        return self.storage_bits()["total"] // 8

    # ---------------------------------------------------------------- programming
    def program(self, region: Region, threshold: int, callback: Callable[[Region, int], None], start_addr: int = 0) -> None:
        """Pre-program ``region`` to fire ``callback(region, tick)`` after ``threshold`` accesses."""
        if threshold < 1:
            raise ValueError(f"{self.name}: region {region} threshold {threshold} < 1")
        if region in self._threshold:
            raise ValueError(f"{self.name}: region {region} programmed twice")
        self._threshold[region] = int(threshold)
        self._cb[region] = callback
        self._addr[region] = int(start_addr)

    @property
    def programmed(self) -> int:
        return len(self._threshold)

    # ---------------------------------------------------------------- observing
    def on_enqueue(self, info) -> None:
        """Enqueue hook: ``info`` is a :class:`~t3sim.memory.system.EnqueueInfo`."""
        sel = _COUNTED_KIND[info.kind] & (info.wg_id >= 0)
        if not np.count_nonzero(sel):
            return
        self.observe(info.tick[sel], info.wg_id[sel], info.wf_id[sel])

    def observe(self, ticks, wg_ids, wf_ids) -> None:
        """Count accesses (arrays, in admission order).

        Equivalent to ``_access(region(wg, wf), tick, 1)`` per programmed access, in order; the
        common case (the region holds an entry and stays below its threshold) is counted inline.
        """
        k0, k1 = self.regions(wg_ids, wf_ids)
        r0, r1 = k0.tolist(), k1.tolist()
        thresholds, count = self._threshold, self._count
        untracked = counted = 0
        for t, r in zip(np.asarray(ticks).tolist(), zip(r0, r1)):
            c = count.get(r)
            if c is not None and c + 1 < thresholds[r]:
                count[r] = c + 1
                counted += 1
            elif r in thresholds:  # allocation, firing or stall: the general path, counters flushed first
                self.counted += counted
                self.untracked += untracked
                counted = untracked = 0
                self._access(r, int(t), 1)
            else:
                untracked += 1
        self.counted += counted
        self.untracked += untracked

    def _access(self, r: Region, tick: int, n: int) -> None:
        if r in self._count:
            self._bump(r, tick, n)
            return
        s = self.set_of(r)
        if self._set_use[s] >= self.ways:
            self._stalled[s].append((r, tick))
            self.stalled_accesses += n
            return
        self._allocate(r, s)
        self._bump(r, tick, n)

    def _allocate(self, r: Region, s: int) -> None:
        self._set_use[s] += 1
        self.max_set_use = max(self.max_set_use, int(self._set_use[s]))
        self._count[r] = 0

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
        self._set_use[s] -= 1
        self._cb[r](r, tick)
        if retry:
            self._unstall(s, tick)

    def _unstall(self, s: int, tick: int) -> None:
        """A way of set ``s`` freed at ``tick``: retry its stalled accesses in arrival order.

        An access proceeds if its region has an entry (allocated meanwhile) or a way is free; the
        others keep waiting. Accesses of allocated regions never wait, so a full set always drains
        once the accesses of its resident regions arrive (no deadlock).
        """
        q = self._stalled.get(s)
        if not q:
            return
        keep: Deque[Tuple[Region, int]] = deque()
        fired_any = False
        while q:
            r, t0 = q.popleft()
            if r not in self._count:
                if self._set_use[s] >= self.ways:
                    keep.append((r, t0))
                    continue
                self._allocate(r, s)
            self.stall_ticks += max(0, tick - t0)
            before = len(self._fired)
            self._bump(r, tick, 1, retry=False)
            fired_any |= len(self._fired) > before
        self._stalled[s] = keep
        if fired_any and keep:
            self._unstall(s, tick)

    # ---------------------------------------------------------------- checks & stats
    def fired(self, region: Region) -> Optional[int]:
        return self._fired.get(region)

    def waiting(self) -> Tuple[int, int, int]:
        """``(regions below threshold, accesses stalled now, sets with stalled accesses)``, for reports."""
        stalled = [len(q) for q in self._stalled.values() if q]
        return self.programmed - len(self._fired), sum(stalled), len(stalled)

    def check_done(self) -> None:
        """Every programmed region fired exactly once and nothing is left waiting."""
        missing = [r for r in self._threshold if r not in self._fired]
        assert not missing, f"{self.name}: {len(missing)} regions never reached their threshold, e.g. {missing[:3]}"
        assert not any(self._stalled.values()), f"{self.name}: stalled accesses left"

    def stats(self):
        from t3sim.results.stats import Stats

        s = Stats()
        s.add("programmed_regions", self.programmed, "count", "tracker regions pre-programmed (Sec. 4.2.1)")
        s.add("fired", len(self._fired), "count", "regions whose counter reached the threshold (DMA triggers)")
        s.add("counted_accesses", self.counted, "count", "writes/updates counted into tracker entries")
        s.add("untracked_accesses", self.untracked, "count", "writes/updates to regions not programmed")
        s.add("stalled_accesses", self.stalled_accesses, "count", "accesses that found their set full and waited")
        s.add("stall_ticks", self.stall_ticks, "ticks", "total time stalled accesses waited for a free way")
        s.add("max_set_occupancy", self.max_set_use, "count", "most ways of one set in use at once")
        s.add("storage_bytes", self.storage_bytes(), "B", "tracker storage (Sec. 4.2.1: 19 KB)")
        return s
