"""Pure-Python reference L2: the same semantics as :class:`t3sim.cache.fast.l2.L2Cache`
(see that module's docstring), written for clarity, not speed: each set is an
``OrderedDict`` (least-recently used first) of ``line -> [valid, dirty, owner]``.
Tests require the fast model to produce identical results and state.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Dict, List, Sequence

import numpy as np

from t3sim.cache.common import (
    BYPASS, C_BYP_R, C_BYP_W, C_EVICT, C_FILL_SECT, C_READ_HIT, C_READ_MISS, C_READ_SMISS, C_WAIT, C_WB, C_WB_SECT,
    C_WRITE_HIT, C_WRITE_MISS, COUNTERS, HIT, MISS, SECTOR_MISS, L2Base, L2Result, WriteBacks,
    cycles_to_ticks, sector_masks,
)
from t3sim.config.gpu import L2Config


def _popc(x: int) -> int:
    return bin(x).count("1")


class ReferenceL2(L2Base):
    """Reference L2 (same constructor and methods as :class:`~t3sim.cache.fast.l2.L2Cache`)."""

    def __init__(self, cfg: L2Config, sources: Sequence[str] = ("default",)) -> None:
        super().__init__(cfg, sources)
        self._sets: Dict[int, "OrderedDict[int, List[int]]"] = {}
        self._bank_free = [0] * self.geo.banks
        self.counts = np.zeros((len(self.sources), len(COUNTERS)), dtype=np.int64)

    def access(self, tick: int, addr, is_write, src=0, *, size_B=64, uncached=False) -> L2Result:
        """See :meth:`t3sim.cache.fast.l2.L2Cache.access`."""
        g = self.geo
        addr = np.atleast_1d(np.asarray(addr, dtype=np.int64))
        n = len(addr)
        is_write = np.broadcast_to(np.asarray(is_write, dtype=bool), (n,))
        uncached = np.broadcast_to(np.asarray(uncached, dtype=bool), (n,))
        src = np.broadcast_to(np.asarray(src, dtype=np.int64), (n,))
        if n and (src.min() < 0 or src.max() >= len(self.sources)):
            raise ValueError(f"source ids must be in 0..{len(self.sources) - 1}")
        masks = sector_masks(g, addr, np.broadcast_to(np.asarray(size_B, dtype=np.int64), (n,)))
        now = self.clock.next_cycle_at_or_after(int(tick))
        occ = g.occupancy_table()
        out, fill, dw, bank, done = ([0] * n for _ in range(5))
        wbs: List[tuple] = []
        c = self.counts

        def writeback(line: int, entry: List[int], i: int, flush: bool) -> None:
            if entry[1]:
                wbs.append((line << g.line_shift, entry[1], entry[2], i, flush))
                c[entry[2], C_WB] += 1
                c[entry[2], C_WB_SECT] += _popc(entry[1])

        for i in range(n):
            a, m, s, wr = int(addr[i]), int(masks[i]), int(src[i]), bool(is_write[i])
            line = a >> g.line_shift
            b, set_idx = g.bank_and_set(line)
            start = max(now, self._bank_free[b])
            c[s, C_WAIT] += start - now
            self._bank_free[b] = start + int(occ[_popc(m)])
            bank[i], done[i] = b, self._bank_free[b]
            lines = self._sets.setdefault(set_idx, OrderedDict())
            entry = lines.get(line)
            if uncached[i]:
                out[i] = BYPASS
                if entry is not None:
                    writeback(line, entry, i, True)
                    entry[1] = 0
                    if wr:
                        entry[0] &= ~m
                        if entry[0] == 0:
                            del lines[line]
                if wr:
                    dw[i] = m
                    c[s, C_BYP_W] += 1
                else:
                    fill[i] = m
                    c[s, C_BYP_R] += 1
                continue
            if entry is not None:
                lines.move_to_end(line)
                if wr:
                    out[i] = HIT
                    entry[0] |= m
                    entry[1] |= m
                    entry[2] = s
                    c[s, C_WRITE_HIT] += 1
                elif m & ~entry[0] == 0:
                    out[i] = HIT
                    c[s, C_READ_HIT] += 1
                else:
                    out[i] = SECTOR_MISS
                    fill[i] = m & ~entry[0]
                    entry[0] |= m
                    c[s, C_READ_SMISS] += 1
                    c[s, C_FILL_SECT] += _popc(fill[i])
                continue
            out[i] = MISS
            if wr:
                c[s, C_WRITE_MISS] += 1
                if not g.write_allocate:
                    dw[i] = m
                    continue
            else:
                c[s, C_READ_MISS] += 1
                c[s, C_FILL_SECT] += _popc(m)
                fill[i] = m
            if len(lines) == g.assoc:
                victim, ventry = lines.popitem(last=False)
                c[ventry[2], C_EVICT] += 1
                writeback(victim, ventry, i, False)
            lines[line] = [m, m if wr else 0, s]

        done_a = np.asarray(done, dtype=np.int64)
        wb = WriteBacks(np.array([w[0] for w in wbs], np.int64), np.array([w[1] for w in wbs], np.uint8),
                        np.array([w[2] for w in wbs], np.int32), np.array([w[3] for w in wbs], np.int64),
                        np.array([w[4] for w in wbs], np.bool_))
        return L2Result(np.asarray(out, np.int8), np.asarray(fill, np.uint8), np.asarray(dw, np.uint8),
                        np.asarray(bank, np.int32), done_a, cycles_to_ticks(self.clock, done_a),
                        cycles_to_ticks(self.clock, done_a + g.hit_latency_cycles),
                        int(done_a.max() - now) if n else 0, wb)

    def flush(self) -> WriteBacks:
        """Write back every dirty line (lines stay valid, become clean), sorted by (set, line address).

        The fast model orders by (set, way); compare the two as sets."""
        rows = []
        for set_idx in sorted(self._sets):
            for line, e in sorted(self._sets[set_idx].items()):
                if e[1]:
                    rows.append((line << self.geo.line_shift, e[1], e[2]))
                    self.counts[e[2], C_WB] += 1
                    self.counts[e[2], C_WB_SECT] += _popc(e[1])
                    e[1] = 0
        return WriteBacks(np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.uint8),
                          np.array([r[2] for r in rows], np.int32), np.full(len(rows), -1, np.int64),
                          np.ones(len(rows), np.bool_))

    def snapshot(self) -> list:
        """Resident lines as sorted ``(line_addr, valid_mask, dirty_mask, owner)`` tuples."""
        return sorted((line << self.geo.line_shift, e[0], e[1], e[2])
                      for lines in self._sets.values() for line, e in lines.items())

    def lru_order(self, set_index: int) -> list:
        """Line addresses in global set ``set_index``, least- to most-recently used."""
        return [line << self.geo.line_shift for line in self._sets.get(set_index, {})]
