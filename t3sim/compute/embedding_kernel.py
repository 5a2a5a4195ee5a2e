"""An embedding-bag pooling kernel on one GPU's CUs: memory-bound gathers of random table rows.

Structure (PyTorch's ``EmbeddingBag_updateOutputKernel_sum_mean``, the kernel the DLRM code's ``nn.EmbeddingBag``
runs; :data:`~t3sim.config.embedding.PYTORCH_EMBBAG`): a WG of ``threads_per_wg`` threads pools one *bag* -- sample
``b`` of table ``t``, ``P`` (pooling) indices -- each thread ``ceil(D / threads)`` of the ``D`` features. For each
index the WG loads the index (8 B, int64; the bag's indices are contiguous, so mostly one 64 B request that the
L2 then holds) and then the ``D x e`` bytes of the indexed table row (a random row: the gather, real 64 B requests
through the L2 into HBM), then adds it (``D`` FLOPs on the vector ALUs, ``gpu.fp32_flops_per_cycle``, shared with
the CU's other busy WGs). ``rows_in_flight`` indices' loads are outstanding at once (1: index, row, add, next).
Mean mode multiplies by ``1/P`` at the end (``D`` more FLOPs). Nothing else is modelled (the ``offsets`` read, the
bag-size and max-index bookkeeping of PyTorch's kernel).

Layouts (bytes): table ``t`` row ``r`` at ``tables + (t R + r) D e``; bag ``(t, b)``'s indices at ``indices + ((t B
+ b) P) 8``; the pooled vector of ``(b, t)`` at ``out + (b T + t) D e`` (sample-major: the all-to-all's input). The
indices are drawn uniformly from ``[0, R)`` by a generator seeded with ``(seed, gpu)`` (the DLRM data generator's
random indices; each GPU its own). Functional values: row ``r`` of GPU ``g``'s table ``t`` holds
``value = ((g T + t) 131 + 7 r + d) mod 97`` in feature ``d`` (exact in fp32), so a pooled vector is checkable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np

from t3sim.compute.gemv_kernel import span_requests
from t3sim.compute.memhier import REQ_B
from t3sim.compute.occupancy import ceil_div
from t3sim.compute.wg_program import ProgramKernel
from t3sim.config.workload import DTYPE_BYTES

INDEX_B = 8


@dataclass
class EmbeddingGeometry:
    """Sizes (elements), buffers (bytes) and indices of one layer (module doc)."""

    B: int
    T: int
    D: int
    P: int
    R: int
    N: int
    elem_B: int
    tables_B: int
    indices_B: int
    out_B: int
    seed: int
    mean: bool = False

    def __post_init__(self):
        self._idx: Dict[int, np.ndarray] = {}

    @classmethod
    def of(cls, e, n: int, dtype: str, tables_B: int, indices_B: int, out_B: int, seed: int) -> "EmbeddingGeometry":
        return cls(e.global_batch, e.tables_per_gpu, e.embedding_dim, e.pooling, e.rows_per_table, n,
                   DTYPE_BYTES[dtype], tables_B, indices_B, out_B, seed, e.mode == "mean")

    @property
    def row_B(self) -> int:
        return self.D * self.elem_B

    @property
    def local_batch(self) -> int:
        return self.B // self.N

    def tables_size_B(self) -> int:
        return self.T * self.R * self.row_B

    def indices_size_B(self) -> int:
        return self.T * self.B * self.P * INDEX_B

    def indices(self, g: int) -> np.ndarray:
        """GPU ``g``'s indices, ``(T, B, P)`` (module doc)."""
        if g not in self._idx:
            rng = np.random.default_rng([self.seed, g])
            self._idx[g] = rng.integers(0, self.R, size=(self.T, self.B, self.P), dtype=np.int64)
        return self._idx[g]

    def dest(self, b: int) -> int:
        """The GPU that keeps sample ``b``."""
        return b // self.local_batch

    def index_requests(self, t: int, b: int, i0: int, i1: int) -> np.ndarray:
        lo = self.indices_B + ((t * self.B + b) * self.P + i0) * INDEX_B
        return span_requests(np.array([lo]), np.array([lo + (i1 - i0) * INDEX_B]))

    def row_requests(self, t: int, rows: np.ndarray) -> np.ndarray:
        lo = self.tables_B + (t * self.R + np.asarray(rows, dtype=np.int64)) * self.row_B
        return span_requests(lo, lo + self.row_B)

    def out_requests(self, b: int, t: int, base_B: Optional[int] = None) -> np.ndarray:
        """The requests of ``(b, t)``'s pooled vector in the sample-major output at ``base_B`` (default: C)."""
        lo = (self.out_B if base_B is None else base_B) + (b * self.T + t) * self.row_B
        return span_requests(np.array([lo]), np.array([lo + self.row_B]))

    def pooled(self, g: int, t: int, b: int) -> np.ndarray:
        """The pooled vector of GPU ``g``'s bag ``(t, b)`` as fp32 words per 64 B request (functional data)."""
        if self.elem_B != 4:
            raise ValueError("functional embedding data needs fp32 (4 B elements)")
        rows = self.indices(g)[t, b]
        d = np.arange(self.D, dtype=np.int64)
        v = (((g * self.T + t) * 131 + 7 * rows[:, None] + d[None, :]) % 97).astype(np.float32).sum(axis=0)
        if self.mean:
            v = v / np.float32(self.P)
        return v.reshape(-1, REQ_B // 4)

    def load_B(self) -> int:
        """Bytes one bag loads: its index requests and its rows' requests."""
        return REQ_B * (len(self.index_requests(0, 0, 0, self.P)) + self.P * ceil_div(self.row_B, REQ_B))


def pool_bag(kernel: ProgramKernel, hier, geom: EmbeddingGeometry, g: int, cu: int, t: int, b: int, rows_in_flight: int,
             flops_per_cycle: int, category: str = "gemm"):
    """One WG pools bag ``(t, b)`` of GPU ``g`` on ``cu`` (module doc): a generator; the pooled vector is in the WG's
    registers when it returns (the caller stores it)."""
    rows = geom.indices(g)[t, b]
    R = max(1, int(rows_in_flight))
    kernel.busy(cu)
    for i0 in range(0, geom.P, R):
        i1 = min(geom.P, i0 + R)
        idx = geom.index_requests(t, b, i0, i1)
        kernel.load_requests += len(idx)
        yield hier.read(idx, category)
        reqs = geom.row_requests(t, rows[i0:i1])
        kernel.load_requests += len(reqs)
        yield hier.read(reqs, category)
        yield kernel.math(cu, (i1 - i0) * geom.D, flops_per_cycle)
        kernel.beat()
    if geom.mean:
        yield kernel.math(cu, geom.D, flops_per_cycle)
    kernel.idle(cu)


def bulk_embedding(engine, name: str, hier, gpu, e, geom: EmbeddingGeometry, g: int, tables: Tuple[int, ...],
                   dispatcher=None, category: str = "gemm") -> ProgramKernel:
    """The library kernel over ``tables`` (one table: DLRM's per-table call): ``min(grid_wgs, bags)`` WGs, WG ``w``
    pools bags ``w, w + grid, ...`` (table-major), each stored into the local pooled output C (cached, posted)."""
    bags = [(t, b) for t in tables for b in range(geom.B)]
    grid = min(e.grid_wgs, len(bags))
    rate = gpu.fp32_flops_per_cycle
    k: Optional[ProgramKernel] = None

    def program(w: int, cu: int):
        for t, b in bags[w::grid]:
            yield from pool_bag(k, hier, geom, g, cu, t, b, e.rows_in_flight, rate, category)
            written, room = hier.posted_write(geom.out_requests(b, t), category)
            k.track_write(written)
            if room is not None:  # its writes met a full write queue (MemoryHierarchy module doc)
                yield room

    k = ProgramKernel(engine, name, hier, gpu, threads_per_wg=e.threads_per_wg,
                      registers_per_thread=e.registers_per_thread, lds_per_wg_B=0, num_wgs=grid, program=program,
                      dispatcher=dispatcher)
    return k
