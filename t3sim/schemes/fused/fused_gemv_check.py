"""The invariants of ``fused_gemv_ar``, checked at the end of every run (:mod:`t3sim.schemes.fused.fused_gemv_ar`).

:class:`FusedChecks` logs, as the run goes, every store of a partial or reduced tile and its arrival (tick; counted
at every destination: written at a simulated GPU, delivered at a shadow), and the tick of every owner's reduce
read. :meth:`FusedChecks.verify` (called when the kernel has ended) raises ``AssertionError`` unless

* **exactly once**: each tile's partial from each GPU arrived once at the tile's owner (its own partial: at a
  simulated owner), and each reduced tile arrived once at every GPU (the owner's own store: at a simulated owner),
  and nothing else arrived;
* **flags after data**: every ready flag landed after every partial it covers (the tiles of its WG owned by its
  destination, from its source), every done flag after every reduced tile it covers;
* **no read before its ready flag**: an owner's read of a tile's partials was issued after the ready flags of all
  peers' counterpart WGs had landed, and after its own partial was written;
* **values** (functional data): every simulated GPU's ``y`` holds the sum of all GPUs' partials, word by word.

The counts go to the run's statistics (``fused.checks.*``).
"""

from __future__ import annotations

from typing import List, Tuple

from t3sim.schemes.fused.gpu_initiated import ArrivalLog, check_once
from t3sim.schemes.common.functional_data import check_summed


class FusedChecks(ArrivalLog):
    """Logs and end-of-run checks of one fused GEMV+AllReduce (module doc); payload keys are
    ``(kind, dst, src, tile)``."""

    COUNTS = (("tiles_once", "partial and reduced tile arrivals checked to happen exactly once"),
              ("flags_checked", "flags checked to land after the data they cover"),
              ("reads_checked", "owner reduce reads checked to follow their ready flags"),
              ("words_checked", "4 B words of y checked against the sum of the partials (functional data)"))

    def __init__(self, ctx):
        super().__init__(ctx)
        #: (gpu, wg, tile, tick) of every reduce read issued
        self.reads: List[Tuple[int, int, int, int]] = []
        self.tiles_once = 0
        self.flags_checked = 0
        self.reads_checked = 0

    def reduce_read(self, g: int, p: int, tile: int) -> None:
        self.reads.append((g, p, tile, self.ctx.env.now))

    # ---------------------------------------------------------------- the checks
    def expected(self) -> set:
        """Every (kind, dst, src, tile) that must arrive exactly once."""
        c = self.ctx
        sim = set(c.model.sim_gpus)
        want = set()
        for t in range(c.T):
            o = int(c.owner[t])
            for s in range(c.N):
                if s != o or o in sim:
                    want.add(("partial", o, s, t))
            for d in range(c.N):
                if d != o or o in sim:
                    want.add(("y", d, o, t))
        return want

    def verify(self) -> None:
        c = self.ctx
        self.tiles_once = check_once("fused_gemv_ar", "tiles", self.arrivals, self.expected())
        land = c.flags.land_tick
        flags = 0
        for (dst, (kind, src, p)), tick in land.items():  # flags after the data they cover
            covered = [t for t in c.orders[src][p] if c.owner[t] == (dst if kind == "ready" else src)]
            what = "partial" if kind == "ready" else "y"
            for t in covered:
                at = self.arrivals[(what, dst, src, t)][0]
                assert at <= tick, (f"fused_gemv_ar: {kind} flag of GPU {src} WG {p} landed at GPU {dst} at {tick} ps, "
                                    f"before its tile {t} ({at} ps)")
            flags += 1
        self.flags_checked = flags
        for g, p, t, tick in self.reads:  # no read before its ready flags (and the own partial)
            for s in range(c.N):
                if s == g:
                    at = self.arrivals[("partial", g, g, t)][0]
                else:
                    at = land.get((g, ("ready", s, p)))
                    assert at is not None, f"fused_gemv_ar: GPU {g} WG {p} read tile {t} with no ready flag from GPU {s}"
                assert at <= tick, (f"fused_gemv_ar: GPU {g} WG {p} read the partials of tile {t} at {tick} ps, before "
                                    f"GPU {s}'s {'partial' if s == g else 'ready flag'} ({at} ps)")
        self.reads_checked = len(self.reads)
        self.verified_values()

    def _values(self, d: int, fs) -> int:
        c, geom = self.ctx, self.ctx.geom
        n = 0
        for t in range(c.T):
            addrs, mask = geom.y_requests(t)
            n += check_summed(fs, addrs, mask, c.N, f"fused_gemv_ar: GPU {d} tile {t} of y")
        return n
