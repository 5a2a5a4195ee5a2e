"""The invariants of ``fused_emb_a2a``, checked at the end of every run (:mod:`t3sim.schemes.fused.fused_emb_a2a`).

:class:`EmbChecks` logs every pooled vector's store and its arrival (tick; at every destination: written at a
simulated GPU, delivered at a shadow), and every flag a receiver's WG saw. :meth:`EmbChecks.verify` raises
``AssertionError`` unless

* **exactly once**: every GPU's pooled vector of every (table, sample) arrived once at the sample's GPU (a local
  one: at a simulated GPU), and nothing else arrived;
* **flags after data**: every sliceRdy flag landed after every pooled vector of its slice;
* **no read before its ready flag**: every remote slice a simulated GPU receives had its flag seen by a polling WG
  (after it landed) before that GPU's kernel ended -- the point from which the next kernel reads the output;
* **values** (functional data): every simulated GPU's output ``{local batch, N T D}`` holds, word by word, the
  pooled vectors of every GPU's tables for its samples (:meth:`~t3sim.compute.embedding_kernel.EmbeddingGeometry.pooled`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Tuple

import numpy as np

from t3sim.results.stats import Stats


class EmbChecks:
    """Logs and end-of-run checks of one fused embedding+All-to-All (module doc)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.arrivals: Dict[Tuple[int, int, int, int], List[int]] = defaultdict(list)
        self.sends: Dict[Tuple[int, int, int, int], int] = defaultdict(int)
        #: (gpu, flag key) -> tick a polling WG saw it
        self.seen: Dict[Tuple, int] = {}
        self.vectors_once = self.flags_checked = self.polls_checked = self.words_checked = 0
        self.verified = False

    def sent(self, dst: int, src: int, t: int, b: int) -> None:
        self.sends[(dst, src, t, b)] += 1

    def arrived(self, dst: int, src: int, t: int, b: int) -> None:
        self.arrivals[(dst, src, t, b)].append(self.ctx.env.now)

    def polled(self, g: int, key) -> None:
        self.seen[(g, key)] = self.ctx.env.now

    def expected(self) -> set:
        c, geom = self.ctx, self.ctx.geom
        sim = set(c.model.sim_gpus)
        return {(geom.dest(b), s, t, b) for s in range(c.N) for t in range(geom.T) for b in range(geom.B)
                if geom.dest(b) != s or s in sim}

    def verify(self) -> None:
        c = self.ctx
        want, got = self.expected(), set(self.arrivals)
        assert got == want, (f"fused_emb_a2a: vectors that arrived but should not: {sorted(got - want)[:4]}; that "
                             f"should have arrived but did not: {sorted(want - got)[:4]}")
        twice = [k for k, v in self.arrivals.items() if len(v) != 1]
        assert not twice, f"fused_emb_a2a: vectors that arrived more than once: {twice[:4]}"
        self.vectors_once = len(want)
        for (dst, (src, t, ch)), tick in c.flags.land_tick.items():
            for b in range(ch * c.S, ch * c.S + c.S):
                at = self.arrivals[(dst, src, t, b)][0]
                assert at <= tick, (f"fused_emb_a2a: flag of GPU {src} slice ({t}, {ch}) landed at GPU {dst} at {tick} "
                                    f"ps, before its vector of sample {b} ({at} ps)")
            self.flags_checked += 1
        for g in c.model.sim_gpus:
            end = c.kernels[g].run.end_tick
            for key in c.incoming(g):
                seen = self.seen.get((g, key))
                assert seen is not None, f"fused_emb_a2a: GPU {g} never polled the flag of slice {key}"
                land = c.flags.land_tick[(g, key)]
                assert land <= seen <= end, (f"fused_emb_a2a: GPU {g} slice {key}: flag landed {land} ps, seen "
                                             f"{seen} ps, kernel end {end} ps")
                self.polls_checked += 1
        if c.functional:
            self.words_checked = self._values()
        self.verified = True

    def _values(self) -> int:
        c, geom = self.ctx, self.ctx.geom
        n = 0
        for d in c.model.sim_gpus:
            fs = c.model.hiers[d].mem.functional
            for s in range(c.N):
                for t in range(geom.T):
                    for b in range(d * c.lb, (d + 1) * c.lb):
                        got = np.stack([fs.read_addr(int(a)) for a in c.recv_requests(s, t, b)])
                        want = geom.pooled(s, t, b)
                        assert np.array_equal(got, want), (f"fused_emb_a2a: GPU {d} holds a wrong pooled vector of GPU "
                                                           f"{s} table {t} sample {b}: {got.ravel()[:4]} vs "
                                                           f"{want.ravel()[:4]}")
                        n += want.size
        return n

    def stats(self) -> Stats:
        s = Stats()
        s.add("verified", self.verified, "bool", "the end-of-run invariants were checked and held")
        s.add("vectors_once", self.vectors_once, "count", "pooled-vector arrivals checked to happen exactly once")
        s.add("flags_checked", self.flags_checked, "count", "sliceRdy flags checked to land after their slice's data")
        s.add("polls_checked", self.polls_checked, "count", "incoming slices checked to be seen ready before the "
              "receiver's kernel ended")
        s.add("words_checked", self.words_checked, "count", "4 B words of the receivers' outputs checked against the "
              "pooled values (functional data)")
        return s
