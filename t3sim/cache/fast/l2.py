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

from typing import Sequence

import numpy as np

from t3sim.cache.fast import l2_kernel as K
from t3sim.cache.common import (COUNTERS, C_WB, C_WB_SECT, L2Base, L2Result, WriteBacks,
                                sector_masks)
from t3sim.config.gpu import L2Config


_SCALARS = frozenset((bool, int, np.bool_, np.int64, np.int32, np.int8, np.uint8))


class L2Cache(L2Base):
    """The shared L2 of one GPU (fast model).

    Args:
        cfg: L2 configuration (Table 1 defaults).
        sources: names of the access sources (e.g. ``("gemm", "rs", "dma")``);
            the ``src`` ids passed to :meth:`access` index this list.
    """

    def __init__(self, cfg: L2Config, sources: Sequence[str] = ("default",)) -> None:
        super().__init__(cfg, sources)
        g = self.geo
        S = np.zeros((g.num_sets, 5, g.assoc), dtype=np.int64)
        S[:, K.S_TAG] = -1
        self._S = S
        self._tags, self._stamp, self._valid, self._dirty, self._owner = (S[:, K.S_TAG], S[:, K.S_STAMP], S[:, K.S_VALID],
                                                                           S[:, K.S_DIRTY], S[:, K.S_OWNER])
        self._V = np.zeros(1 + g.banks, dtype=np.int64)  # LRU clock, then per-bank free cycle
        self._bank_free = self._V[1:]
        self._occ = g.occupancy_table()
        self.counts = np.zeros((len(self.sources), len(COUNTERS)), dtype=np.int64)
        G = np.zeros(K.NG, dtype=np.int64)
        G[K.G_LINE_SHIFT], G[K.G_NBANKS], G[K.G_SPB], G[K.G_ASSOC] = g.line_shift, g.banks, g.sets_per_bank, g.assoc
        G[K.G_BANK_BITS], G[K.G_SET_BITS] = g.bank_bits, g.set_bits
        G[K.G_HASH], G[K.G_WALLOC], G[K.G_HIT_LAT] = g.hash_mode, int(g.write_allocate), g.hit_latency_cycles
        G[K.G_FREQ_KHZ], G[K.G_LINE_B], G[K.G_SECTOR_SHIFT] = self.clock.freq_kHz, g.line_B, g.sector_shift
        self._G = G
        self._nsrc = len(self.sources)
        #: the compiled kernel's state, in its argument order after ``now``: callers that fuse an access
        #: batch with their own compiled work (``compute.memhier``) pass ``*kernel_state`` to
        #: :func:`~t3sim.cache.fast.l2_kernel.access_uniform`
        self.kernel_state = (self._S, self._G, self._V, self._occ, self.counts)

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
            :class:`~t3sim.cache.common.L2Result` (every array int64; ``is_flush`` 0/1).
        """
        if type(addr) is not np.ndarray or addr.dtype != np.int64 or addr.ndim != 1:
            addr = np.ascontiguousarray(np.atleast_1d(np.asarray(addr, dtype=np.int64)))
        now = self.clock.next_cycle_at_or_after(int(tick))
        if type(is_write) in _SCALARS and type(src) in _SCALARS and type(size_B) in _SCALARS and type(uncached) in _SCALARS:
            sc = int(src)
            if not 0 <= sc < self._nsrc:
                raise ValueError(f"source ids must be in 0..{self._nsrc - 1}")
            R, E, cyc = K.access_uniform(addr, bool(is_write), bool(uncached), sc, int(size_B), now, self._S, self._G,
                                    self._V, self._occ, self.counts)
        else:
            n = len(addr)
            is_write = np.ascontiguousarray(np.broadcast_to(np.asarray(is_write, dtype=np.bool_), (n,)))
            uncached = np.ascontiguousarray(np.broadcast_to(np.asarray(uncached, dtype=np.bool_), (n,)))
            src = np.ascontiguousarray(np.broadcast_to(np.asarray(src, dtype=np.int64), (n,)))
            size = np.broadcast_to(np.asarray(size_B, dtype=np.int64), (n,))
            if n and (src.min() < 0 or src.max() >= self._nsrc):
                raise ValueError(f"source ids must be in 0..{self._nsrc - 1}")
            smask = sector_masks(self.geo, addr, size).astype(np.int64)
            R, E, cyc = K.access_arrays(addr, smask, is_write, uncached, src, now, self._S, self._G, self._V, self._occ,
                                   self.counts)
        wb = WriteBacks(E[K.E_LINE], E[K.E_MASK], E[K.E_SRC], E[K.E_ACC], E[K.E_FLUSH])
        return L2Result(R[K.R_OUT], R[K.R_FILL], R[K.R_DW], R[K.R_BANK], R[K.R_DONE], R[K.R_DONE_TICK],
                        R[K.R_READY_TICK], cyc, wb)

    def flush(self) -> WriteBacks:
        """Write back every dirty line (lines stay valid and become clean), in set/way order."""
        d = self._valid.astype(bool) & (self._dirty != 0)
        st, w = np.nonzero(d)
        o = self._owner[st, w]
        wb = WriteBacks(self._tags[st, w] << self.geo.line_shift, self._dirty[st, w].astype(np.uint8), o,
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
