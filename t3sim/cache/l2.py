"""Shared, banked, sectored L2 cache: the fast model (numba-compiled per-access loop).

Semantics (identical in :mod:`t3sim.cache.l2_reference`, which tests hold this
model against on random traces):

* **Organisation**: ``banks x sets_per_bank`` sets of ``associativity`` ways,
  128 B lines of 32 B sectors (:class:`~t3sim.cache.common.L2Geometry`);
  per line a valid and a dirty sector mask and an *owner* source (the last
  source that wrote or allocated it, used to attribute evictions/write-backs).
* **Replacement**: true LRU. Every cached access that finds or allocates a
  line makes it most-recently used; the victim is an invalid way if any, else
  the least-recently used way. Uncached accesses do not touch LRU state.
* **Reads** (cached): line present with all requested sectors valid -> HIT;
  present with some missing -> SECTOR_MISS, the missing sectors are filled
  (``fill_mask``); absent -> MISS, a victim is evicted, the line allocated and
  only the requested sectors filled (sectored fill, as Accel-Sim's sector L2).
* **Writes** (cached, write-back): line present -> HIT, the written sectors
  become valid and dirty (a write is assumed to cover the sectors it touches:
  GEMM and collective stores are coalesced to whole 32 B sectors). Absent ->
  MISS: with ``write_allocate`` the line is allocated dirty without a fill
  (write-validate); without it the write goes to DRAM (``dram_write_mask``).
* **Uncached** accesses (T3's output allocation, paper Sec. 4.3) never
  allocate: reads go to DRAM (``fill_mask`` set, nothing cached), writes go to
  DRAM (``dram_write_mask``). For coherence, if the line is resident its dirty
  sectors are first written back (``is_flush``) and an uncached write
  invalidates the sectors it writes.
* **Fills in flight** are not modelled here: the line is valid as soon as the
  miss is reported; merging later accesses with an outstanding fill (MSHRs) is
  the caller's job (it sees the miss's ``fill_mask`` and ``done_tick``).
* **Banks and timing**: an access occupies its bank for
  ``max(1, ceil(sectors * sector_B / bank_bandwidth_B_per_cycle))`` L2 cycles
  (1 cycle for a 64 B request at 64 B/cycle); accesses of one bank are served
  in batch order, starting no earlier than the batch's arrival cycle and the
  bank's previous access. ``N`` accesses to one bank thus take ``N`` times
  the per-access cycles; spread over ``N`` banks they take one. Uncached
  accesses also pass through (occupy) their bank's slice.

Deterministic: results depend only on the access sequence.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numba
import numpy as np

from t3sim.cache.common import (
    BYPASS, C_BYP_R, C_BYP_W, C_EVICT, C_FILL_SECT, C_READ_HIT, C_READ_MISS, C_READ_SMISS, C_WAIT, C_WB, C_WB_SECT,
    C_WRITE_HIT, C_WRITE_MISS, COUNTERS, HIT, MISS, SECTOR_MISS, L2Geometry, L2Result, WriteBacks,
    counters_to_stats, cycles_to_ticks, sector_masks,
)
from t3sim.config.gpu import L2Config
from t3sim.results.stats import Stats
from t3sim.sim.clock import Clock

_NCOUNT = len(COUNTERS)


@numba.njit(cache=True, inline="always")
def _fold(x, bits, mask):
    h = 0
    if bits == 0:
        return 0
    while x:
        h ^= x & mask
        x >>= bits
    return h


@numba.njit(cache=True, inline="always")
def _popc(x):
    n = 0
    while x:
        n += x & 1
        x >>= 1
    return n


@numba.njit(cache=True)
def _evict(st, w, i, is_flush, tags, valid, dirty, owner, counts, ev_line, ev_mask, ev_src, ev_acc, ev_flush, nev, line_shift):
    """Record the write-back of (set st, way w)'s dirty sectors; returns the new eviction count."""
    d = dirty[st, w]
    o = owner[st, w]
    if d:
        ev_line[nev] = tags[st, w] << line_shift
        ev_mask[nev] = d
        ev_src[nev] = o
        ev_acc[nev] = i
        ev_flush[nev] = is_flush
        nev += 1
        counts[o, C_WB] += 1
        counts[o, C_WB_SECT] += _popc(d)
    return nev


@numba.njit(cache=True)
def _run(addr, smask, is_write, uncached, src, now,
         tags, valid, dirty, owner, stamp, bank_free, clk, occ,
         line_shift, bank_bits, nbanks, set_bits, spb, assoc, xor_hash, write_allocate,
         o_out, o_fill, o_dw, o_bank, o_done, ev_line, ev_mask, ev_src, ev_acc, ev_flush, counts):
    nev = 0
    bmask = nbanks - 1
    smask_b = spb - 1
    for i in range(addr.shape[0]):
        line = addr[i] >> line_shift
        if xor_hash:
            b = _fold(line, bank_bits, bmask)
            s = _fold(line >> bank_bits, set_bits, smask_b)
        else:
            b = line % nbanks
            s = (line // nbanks) % spb
        st = b * spb + s
        m = smask[i]
        sc = src[i]
        # bank timing
        start = bank_free[b]
        if start < now:
            start = now
        counts[sc, C_WAIT] += start - now
        done = start + occ[_popc(m)]
        bank_free[b] = done
        o_bank[i] = b
        o_done[i] = done
        # lookup
        w = -1
        for k in range(assoc):
            if tags[st, k] == line and valid[st, k] != 0:
                w = k
                break
        wr = is_write[i]
        if uncached[i]:
            o_out[i] = BYPASS
            if w >= 0:
                nev = _evict(st, w, i, True, tags, valid, dirty, owner, counts, ev_line, ev_mask, ev_src, ev_acc, ev_flush, nev, line_shift)
                dirty[st, w] = 0
                if wr:
                    valid[st, w] &= ~m
                    if valid[st, w] == 0:
                        tags[st, w] = -1
            if wr:
                o_dw[i] = m
                counts[sc, C_BYP_W] += 1
            else:
                o_fill[i] = m
                counts[sc, C_BYP_R] += 1
            continue
        if w >= 0:
            clk[0] += 1
            stamp[st, w] = clk[0]
            if wr:
                o_out[i] = HIT
                valid[st, w] |= m
                dirty[st, w] |= m
                owner[st, w] = sc
                counts[sc, C_WRITE_HIT] += 1
            else:
                miss = m & ~valid[st, w]
                if miss == 0:
                    o_out[i] = HIT
                    counts[sc, C_READ_HIT] += 1
                else:
                    o_out[i] = SECTOR_MISS
                    o_fill[i] = miss
                    valid[st, w] |= miss
                    counts[sc, C_READ_SMISS] += 1
                    counts[sc, C_FILL_SECT] += _popc(miss)
            continue
        o_out[i] = MISS
        if wr:
            counts[sc, C_WRITE_MISS] += 1
            if not write_allocate:
                o_dw[i] = m
                continue
        else:
            counts[sc, C_READ_MISS] += 1
            counts[sc, C_FILL_SECT] += _popc(m)
            o_fill[i] = m
        # allocate: invalid way first, else LRU
        v = -1
        for k in range(assoc):
            if valid[st, k] == 0:
                v = k
                break
        if v < 0:
            v = 0
            for k in range(1, assoc):
                if stamp[st, k] < stamp[st, v]:
                    v = k
            counts[owner[st, v], C_EVICT] += 1
            nev = _evict(st, v, i, False, tags, valid, dirty, owner, counts, ev_line, ev_mask, ev_src, ev_acc, ev_flush, nev, line_shift)
        tags[st, v] = line
        valid[st, v] = m
        dirty[st, v] = m if wr else 0
        owner[st, v] = sc
        clk[0] += 1
        stamp[st, v] = clk[0]
    return nev


class L2Cache:
    """The shared L2 of one GPU (fast model).

    Args:
        cfg: L2 configuration (Table 1 defaults).
        sources: names of the access sources (e.g. ``("gemm", "rs", "dma")``);
            the ``src`` ids passed to :meth:`access` index this list.
    """

    def __init__(self, cfg: L2Config, sources: Sequence[str] = ("default",)) -> None:
        if not sources or len(set(sources)) != len(sources):
            raise ValueError("sources must be a non-empty list of distinct names")
        self.cfg = cfg
        self.geo = L2Geometry.from_config(cfg)
        self.sources = tuple(sources)
        self.clock = Clock.from_GHz(cfg.clock_GHz, "l2")
        g = self.geo
        self._tags = np.full((g.num_sets, g.assoc), -1, dtype=np.int64)
        self._valid = np.zeros((g.num_sets, g.assoc), dtype=np.uint8)
        self._dirty = np.zeros((g.num_sets, g.assoc), dtype=np.uint8)
        self._owner = np.zeros((g.num_sets, g.assoc), dtype=np.int32)
        self._stamp = np.zeros((g.num_sets, g.assoc), dtype=np.int64)
        self._bank_free = np.zeros(g.banks, dtype=np.int64)
        self._clk = np.zeros(1, dtype=np.int64)
        self._occ = g.occupancy_table()
        self.counts = np.zeros((len(self.sources), len(COUNTERS)), dtype=np.int64)

    def _prepare(self, addr, is_write, src, size_B, uncached):
        addr = np.ascontiguousarray(np.atleast_1d(np.asarray(addr, dtype=np.int64)))
        n = len(addr)
        is_write = np.ascontiguousarray(np.broadcast_to(np.asarray(is_write, dtype=np.bool_), (n,)))
        uncached = np.ascontiguousarray(np.broadcast_to(np.asarray(uncached, dtype=np.bool_), (n,)))
        src = np.ascontiguousarray(np.broadcast_to(np.asarray(src, dtype=np.int32), (n,)))
        size = np.broadcast_to(np.asarray(size_B, dtype=np.int64), (n,))
        if n and (src.min() < 0 or src.max() >= len(self.sources)):
            raise ValueError(f"source ids must be in 0..{len(self.sources) - 1}")
        return addr, is_write, src, sector_masks(self.geo, addr, size), uncached

    def access(self, tick: int, addr, is_write, src=0, *, size_B=64, uncached=False) -> L2Result:
        """Process a batch of accesses arriving at ``tick`` (ps), in array order.

        Args:
            tick: arrival time, in ticks (ps); the batch starts at the first L2
                cycle at or after it.
            addr: byte addresses (int64 array or scalar); an access must not
                cross a line.
            is_write: bool per access (or scalar).
            src: source id per access (or scalar), index into ``sources``.
            size_B: bytes per access (array or scalar), default 64.
            uncached: bool per access (or scalar): bypass the cache.

        Returns:
            :class:`~t3sim.cache.common.L2Result`.
        """
        addr, is_write, src, smask, uncached = self._prepare(addr, is_write, src, size_B, uncached)
        n = len(addr)
        now = self.clock.next_cycle_at_or_after(int(tick))
        g = self.geo
        out = np.zeros(n, np.int8)
        fill = np.zeros(n, np.uint8)
        dw = np.zeros(n, np.uint8)
        bank = np.zeros(n, np.int32)
        done = np.zeros(n, np.int64)
        ev_line, ev_acc = np.zeros(n, np.int64), np.zeros(n, np.int64)
        ev_mask, ev_src, ev_flush = np.zeros(n, np.uint8), np.zeros(n, np.int32), np.zeros(n, np.bool_)
        nev = _run(addr, smask, is_write, uncached, src, now,
                   self._tags, self._valid, self._dirty, self._owner, self._stamp, self._bank_free, self._clk, self._occ,
                   g.line_shift, (g.banks - 1).bit_length() if g.xor_hash else 0, g.banks,
                   (g.sets_per_bank - 1).bit_length() if g.xor_hash else 0, g.sets_per_bank, g.assoc,
                   g.xor_hash, g.write_allocate,
                   out, fill, dw, bank, done, ev_line, ev_mask, ev_src, ev_acc, ev_flush, self.counts)
        wb = WriteBacks(ev_line[:nev], ev_mask[:nev], ev_src[:nev], ev_acc[:nev], ev_flush[:nev])
        return L2Result(out, fill, dw, bank, done, cycles_to_ticks(self.clock, done),
                        cycles_to_ticks(self.clock, done + g.hit_latency_cycles),
                        int(done.max() - now) if n else 0, wb)

    def flush(self) -> WriteBacks:
        """Write back every dirty line (lines stay valid and become clean), in set/way order."""
        d = self._valid.astype(bool) & (self._dirty != 0)
        st, w = np.nonzero(d)
        o = self._owner[st, w]
        wb = WriteBacks(self._tags[st, w] << self.geo.line_shift, self._dirty[st, w].copy(), o,
                        np.full(len(st), -1, np.int64), np.ones(len(st), np.bool_))
        pc = np.array([bin(x).count("1") for x in range(256)], dtype=np.int64)
        np.add.at(self.counts[:, C_WB], o, 1)
        np.add.at(self.counts[:, C_WB_SECT], o, pc[wb.sector_mask])
        self._dirty[d] = 0
        return wb

    def snapshot(self) -> list:
        """Resident lines as sorted ``(line_addr, valid_mask, dirty_mask, owner)`` tuples (for tests/debugging)."""
        st, w = np.nonzero(self._valid)
        return sorted(zip((self._tags[st, w] << self.geo.line_shift).tolist(), self._valid[st, w].tolist(),
                          self._dirty[st, w].tolist(), self._owner[st, w].tolist()))

    def lru_order(self, set_index: int) -> list:
        """Line addresses resident in global set ``set_index``, least- to most-recently used."""
        ways = [k for k in range(self.geo.assoc) if self._valid[set_index, k]]
        ways.sort(key=lambda k: self._stamp[set_index, k])
        return [int(self._tags[set_index, k]) << self.geo.line_shift for k in ways]

    def stats(self) -> Stats:
        """Counters (totals and ``by_source.<name>``) with units and descriptions."""
        return counters_to_stats(self.counts, self.sources, self.geo)


def make_l2(cfg: Optional[L2Config] = None, sources: Sequence[str] = ("default",), reference: bool = False):
    """An L2 model: the fast one, or the pure-Python reference (``reference=True``)."""
    cfg = cfg or L2Config()
    if reference:
        from t3sim.cache.l2_reference import ReferenceL2

        return ReferenceL2(cfg, sources)
    return L2Cache(cfg, sources)
