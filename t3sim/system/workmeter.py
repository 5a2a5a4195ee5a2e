"""How much of a run's workload is done: the meter behind the percent and ETA of ``t3sim run``.

The workload of a sub-layer run is the GEMM and its collectives, each weighted by the bytes it moves:

* the GEMM, ``tiles_n x M x K + tiles_m x K x N`` elements loaded (each WG loads its rows of A and
  its columns of B over the whole K loop) plus ``M x N`` stored: done are the bytes its WGs have
  requested through the L2 (64 B reads of the ``gemm`` category, counted as they are issued; at least the
  retired WGs' share, as the L2 counters of a compiled GEMM window are written back only when it ends) plus the
  C tiles of retired WGs (the GEMM kernels' progress counters, one kernel per simulated GPU); the
  GEMM counts as complete once every WG retired, whatever the load estimate said;
* each collective kernel (the reduce-scatter and the all-gather; only the all-gather when the scheme
  fuses the reduce-scatter into the GEMM, whose share then follows the GEMM's WGs; none when the scheme
  runs no collectives, e.g. ``copy``, whose background copies last as long as the GEMM), ``(n - 1) x C``
  bytes over its ``n`` GPUs: done is the fraction of its plan's receive slices and steps retired
  (the runner's progress counter against the count its plan implies).

The fraction is bytes retired over the total. It is only given (else None: no percent and no ETA, rather than a
wrong one) where this model of the work holds: a GEMM *followed* by its collectives (``workload.direction``
``gemm_rs`` or ``gemm_a2a``: the Transformer sub-layers, GEMV + all-reduce, embedding and MoE-combine workloads).
Where the collective feeds the GEMM (``ag_gemm``, ``a2a_gemm``: FiCCO, FLUX's AllGather, chunked DMA all-gathers)
its copies are DMA or CU kernels that no collective runner counts, and the meter read 0.04-0.17 at half the run's
wall time (``t3sim bench --schemes`` cases). Counting those copies as the bytes each GPU injects into
the network (exactly ``(n - 1) / n x M x K`` per GPU in every such case) was tried and does not help: the gather is
~2 % of the bytes but about half of the wall time, so the meter still read 0.08-0.14 there. The meter only reads
counters the simulation keeps anyway, so it never changes a result. It estimates *progress*, not wall time: the ETA
that :mod:`t3sim.sim.report` derives from it assumes the rest goes at the rate so far.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from t3sim.cache.common import C_READ_HIT, C_READ_MISS, C_READ_SMISS
from t3sim.collectives.plan import split_ranges
from t3sim.collectives.runner import CollectiveRunner
from t3sim.config.system import REQUEST_B
from t3sim.config.workload import DTYPE_BYTES
from t3sim.schemes.runtime import scheme_for
from t3sim.system.kernels import point_kernel


def _fused(scheme_kind: str) -> bool:
    return bool(getattr(scheme_for(scheme_kind), "fused_rs", False))


def _collectives(scheme_kind: str) -> bool:
    """Does the scheme run the sub-layer's collectives? (``copy`` does not: its copies run for as long as
    the GEMM does, so the GEMM is the whole of its progress.)"""
    return bool(getattr(scheme_for(scheme_kind), "collectives", True))


class WorkMeter:
    """``meter() -> (fraction, description)`` for a :class:`~t3sim.system.model.SystemModel` (module doc)."""

    def __init__(self, model) -> None:
        self.model = model
        k = model.kernel
        eb = DTYPE_BYTES[k.dtype]
        self.gpus = len(model.sim_gpus)
        self.wgs = k.num_wgs * self.gpus
        self.load_B = (k.tiles_n * k.M * k.K + k.tiles_m * k.K * k.N) * eb * self.gpus
        self.store_B = k.M * k.N * eb * self.gpus
        coll_B = (model.n - 1) * k.M * k.N * eb
        fused = _fused(model.exp.scheme.kind)
        self.fused_B = coll_B if fused else 0  # a fused reduce-scatter advances with the GEMM's WGs
        # kernels of (n - 1) x C bytes each
        self.collectives = (1 if fused else 2) if _collectives(model.exp.scheme.kind) else 0
        self.coll_B = coll_B
        self.total_B = self.load_B + self.store_B + self.fused_B + self.collectives * coll_B
        self._expected: Dict[int, int] = {}
        # module doc: the model holds for a GEMM followed by its collectives only
        self.modelled = not model.exp.workload.collective_feeds_gemm

    def loaded_B(self) -> int:
        """Bytes the GEMM has requested through the L2 so far (every simulated GPU)."""
        n = 0
        for h in self.model.hiers.values():
            row = h.l2.counts[h.categories.index("gemm")]
            n += int(row[C_READ_HIT] + row[C_READ_MISS] + row[C_READ_SMISS])
        return n * REQUEST_B

    def expected(self, r: CollectiveRunner) -> int:
        """Progress units a collective runner retires in all: one per receive slice, one per GPU and step."""
        key = id(r)
        if key not in self._expected:
            p = r.plan
            slices = sum(sum(1 for lo, hi in split_ranges(x.count, r.slices) if hi > lo)
                         for step in p.steps for x in step.xfers)
            self._expected[key] = slices + p.n * p.num_steps
        return self._expected[key]

    def __call__(self) -> Tuple[Optional[float], str]:
        m = self.model
        wgs = min(self.wgs, sum(g.progress for g in m.gemm_kernels))
        f_wgs = wgs / self.wgs if self.wgs else 1.0
        # the L2's counters lag inside a compiled GEMM window (they are written back when it ends), while its
        # retired WGs are credited every window: never count fewer loads than the retired WGs imply
        loads = self.load_B if wgs == self.wgs else min(self.load_B, max(self.loaded_B(), f_wgs * self.load_B))
        runners = [c for c in m.engine.components if isinstance(c, CollectiveRunner)]
        colls = sum(min(1.0, r.progress / max(1, self.expected(r))) for r in runners[: self.collectives])
        done = loads + f_wgs * (self.store_B + self.fused_B) + colls * self.coll_B
        fraction = (done / self.total_B if self.total_B else 1.0) if self.modelled else None
        return fraction, f"GEMM {wgs}/{self.wgs} WGs" + (f", collectives {colls:.2f}/{self.collectives}"
                                                          if self.collectives else "")


def workload_bytes(exp, kernel=None) -> float:
    """The total a :class:`WorkMeter` measures for the resolved point ``exp``, without building its model:
    a sweep's weight for the point (:mod:`t3sim.exec.progress`). ``kernel``: the point's resolved kernel
    (default :func:`~t3sim.system.kernels.point_kernel`, the kernel the model builds)."""
    k = kernel if kernel is not None else point_kernel(exp)
    eb = DTYPE_BYTES[k.dtype]
    n = exp.system.interconnect.num_gpus
    gpus = n if exp.simulation.mode == "explicit" else 1
    gemm = (k.tiles_n * k.M * k.K + k.tiles_m * k.K * k.N + k.M * k.N) * eb * gpus
    return float(gemm + (2 * (n - 1) * k.M * k.N * eb if _collectives(exp.scheme.kind) else 0))
