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

from typing import Dict, Tuple

import numpy as np

from t3sim.schemes.fused.gpu_initiated import ArrivalLog, check_once, check_polls


class EmbChecks(ArrivalLog):
    """Logs and end-of-run checks of one fused embedding+All-to-All (module doc); payload keys are
    ``(dst, src, table, sample)``."""

    COUNTS = (("vectors_once", "pooled-vector arrivals checked to happen exactly once"),
              ("flags_checked", "sliceRdy flags checked to land after their slice's data"),
              ("polls_checked", "incoming slices checked to be seen ready before the receiver's kernel ended"),
              ("words_checked", "4 B words of the receivers' outputs checked against the pooled values (functional "
                                "data)"))

    def __init__(self, ctx):
        super().__init__(ctx)
        #: (gpu, flag key) -> tick a polling WG saw it
        self.seen: Dict[Tuple, int] = {}
        self.vectors_once = self.flags_checked = self.polls_checked = 0

    def polled(self, g: int, key) -> None:
        self.seen[(g, key)] = self.ctx.env.now

    def expected(self) -> set:
        c, geom = self.ctx, self.ctx.geom
        sim = set(c.model.sim_gpus)
        return {(geom.dest(b), s, t, b) for s in range(c.N) for t in range(geom.T) for b in range(geom.B)
                if geom.dest(b) != s or s in sim}

    def verify(self) -> None:
        c = self.ctx
        self.vectors_once = check_once("fused_emb_a2a", "vectors", self.arrivals, self.expected())
        for (dst, (src, t, ch)), tick in c.flags.land_tick.items():
            for b in range(ch * c.S, ch * c.S + c.S):
                at = self.arrivals[(dst, src, t, b)][0]
                assert at <= tick, (f"fused_emb_a2a: flag of GPU {src} slice ({t}, {ch}) landed at GPU {dst} at {tick} "
                                    f"ps, before its vector of sample {b} ({at} ps)")
            self.flags_checked += 1
        self.polls_checked = check_polls("fused_emb_a2a", c.flags, self.seen,
                                         {g: c.incoming(g) for g in c.model.sim_gpus},
                                         {g: c.kernels[g].run.end_tick for g in c.model.sim_gpus})
        self.verified_values()

    def _values(self, d: int, fs) -> int:
        c, geom = self.ctx, self.ctx.geom
        n = 0
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
