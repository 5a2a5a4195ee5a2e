"""A GEMV kernel on one GPU's CUs: ``y = W x``, memory-bound as on hardware.

Structure (rocBLAS's non-transposed GEMV, ``rocblas_gemvn_kernel_calc``; the defaults of
:class:`~t3sim.config.workload.GemvShapeConfig` cite it): ``W`` is ``M x K`` column-major (element ``(i, k)`` at byte
``W_base + (i + k M) e``, ``e`` the element size), ``x`` has ``K`` elements, ``y`` ``M``. The output is cut into
*tiles* of ``rows_per_wg`` consecutive rows (the last one partial); one WG computes one tile. Its main loop walks
the ``K`` columns in *steps* of ``cols_per_step`` columns: a step loads the tile's rows of those columns of ``W``
(``rows x cols`` elements, one contiguous run of ``rows x e`` bytes per column) and the step's ``cols`` elements of
``x`` -- real 64 B requests through the L2 into HBM -- and then does its ``2 x rows x cols`` multiply-add FLOPs on the
vector ALUs (``gpu.fp32_flops_per_cycle``: rocBLAS accumulates in fp32), shared with the other WGs computing on that
CU. ``steps_in_flight`` steps of loads are outstanding at once (1: rocBLAS's loop loads, waits, computes, loads the
next). After the loop the tile's ``rows`` outputs are reduced across the WG in LDS (no modelled time) and stored.

Nothing is padded: the FLOPs of a tile are ``2 x rows x K`` for its real rows, its loads are the requests covering
its rows of ``W`` and of ``x`` (the last, partial tile loads only its rows), so a whole kernel does ``2 M K`` FLOPs
and loads ``M K e`` bytes of ``W`` (plus ``x`` once per tile). :func:`gemv_tile` is one tile's main loop;
:func:`bulk_gemv` the library kernel (one WG per tile, tiles in order, each stored into local ``y``) on a
:class:`~t3sim.compute.wg_program.ProgramKernel`; the fused kernels call :func:`gemv_tile` from their persistent WGs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from t3sim.compute.memhier import REQ_B
from t3sim.compute.wg_program import ProgramKernel
from t3sim.config.workload import DTYPE_BYTES
from t3sim.compute.occupancy import ceil_div


def span_requests(lo_B: np.ndarray, hi_B: np.ndarray) -> np.ndarray:
    """The 64 B requests covering every byte span ``[lo_B[i], hi_B[i])`` (non-empty), concatenated in span order."""
    lo = np.asarray(lo_B, dtype=np.int64) // REQ_B
    hi = (np.asarray(hi_B, dtype=np.int64) - 1) // REQ_B + 1
    n = hi - lo
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(n)[:-1])), n)
    return (starts + np.arange(int(n.sum()), dtype=np.int64)) * REQ_B


def span_masks(lo_B: int, hi_B: int) -> Tuple[np.ndarray, np.ndarray]:
    """The 64 B requests covering ``[lo_B, hi_B)`` and, per request, the bit mask of the bytes the span covers."""
    addrs = span_requests(np.array([lo_B]), np.array([hi_B]))
    first = np.maximum(addrs, lo_B) - addrs
    last = np.minimum(addrs + REQ_B, hi_B) - addrs  # exclusive
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    lo_bits = np.where(first > 0, (np.uint64(1) << first.astype(np.uint64)) - np.uint64(1), np.uint64(0))
    hi_bits = np.where(last < REQ_B, (np.uint64(1) << last.astype(np.uint64)) - np.uint64(1), full)
    return addrs, hi_bits & ~lo_bits


@dataclass(frozen=True)
class GemvGeometry:
    """Addresses and tiling of one GPU's GEMV (module doc). Sizes in elements, addresses in bytes."""

    M: int
    K: int
    elem_B: int
    rows_per_wg: int
    cols_per_step: int
    w_base_B: int
    x_base_B: int
    y_base_B: int

    @classmethod
    def of(cls, record, w_base_B: int, x_base_B: int, y_base_B: int) -> "GemvGeometry":
        """The geometry of a GEMV :class:`~t3sim.workload.record.KernelRecord` (:mod:`t3sim.workload.gemv`)."""
        return cls(record.M, record.K, DTYPE_BYTES[record.dtype], record.tile_m, record.tile_k, w_base_B, x_base_B,
                   y_base_B)

    @property
    def tiles(self) -> int:
        return ceil_div(self.M, self.rows_per_wg)

    @property
    def steps(self) -> int:
        return ceil_div(self.K, self.cols_per_step)

    def rows(self, tile: int) -> Tuple[int, int]:
        """``[r0, r1)``: the rows of ``tile``."""
        if not 0 <= tile < self.tiles:
            raise IndexError(f"tile {tile} out of range 0..{self.tiles - 1}")
        r0 = tile * self.rows_per_wg
        return r0, min(self.M, r0 + self.rows_per_wg)

    def cols(self, step: int) -> Tuple[int, int]:
        """``[c0, c1)``: the columns of main-loop step ``step``."""
        c0 = step * self.cols_per_step
        return c0, min(self.K, c0 + self.cols_per_step)

    def flops(self, tile: int, step: int) -> int:
        """Multiply-add FLOPs of one step of one tile: ``2 x rows x cols`` (its real rows and columns)."""
        r0, r1 = self.rows(tile)
        c0, c1 = self.cols(step)
        return 2 * (r1 - r0) * (c1 - c0)

    def w_requests(self, tile: int, step: int) -> np.ndarray:
        """The distinct 64 B requests of ``W``'s rows of ``tile`` in the columns of ``step``, ascending (a request two
        columns share, when ``M x e`` is not a multiple of 64 B, is loaded once per step)."""
        r0, r1 = self.rows(tile)
        c0, c1 = self.cols(step)
        e, M = self.elem_B, self.M
        ks = np.arange(c0, c1, dtype=np.int64)
        req = span_requests(self.w_base_B + (r0 + ks * M) * e, self.w_base_B + (r1 + ks * M) * e)
        return req if (M * e) % REQ_B == 0 and ((r1 - r0) * e) % REQ_B == 0 else np.unique(req)

    def x_requests(self, step: int) -> np.ndarray:
        """The 64 B requests of ``x``'s elements of ``step``'s columns."""
        c0, c1 = self.cols(step)
        return span_requests(np.array([self.x_base_B + c0 * self.elem_B]), np.array([self.x_base_B + c1 * self.elem_B]))

    def y_span(self, tile: int, base_B: Optional[int] = None) -> Tuple[int, int]:
        """Byte span ``[lo, hi)`` of ``tile``'s outputs in ``y`` (or in a copy of ``y`` at ``base_B``)."""
        r0, r1 = self.rows(tile)
        b = self.y_base_B if base_B is None else base_B
        return b + r0 * self.elem_B, b + r1 * self.elem_B

    def y_requests(self, tile: int, base_B: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
        """``(addrs, byte masks)`` of ``tile``'s outputs in ``y`` (or in a copy of ``y`` at ``base_B``)."""
        return span_masks(*self.y_span(tile, base_B))

    def load_B(self) -> int:
        """Bytes of ``W`` and ``x`` the whole kernel loads (its requests; ``x`` once per tile)."""
        return REQ_B * sum(len(self.w_requests(t, s)) + len(self.x_requests(s))
                           for t in range(self.tiles) for s in range(self.steps))


def gemv_tile(kernel: ProgramKernel, hier, geom: GemvGeometry, cu: int, tile: int, steps_in_flight: int,
              flops_per_cycle: int, category: str = "gemm"):
    """One WG's main loop over ``tile`` on ``cu`` (module doc): a generator; the tile's outputs are in the WG's
    registers when it returns (the caller stores them). The WG shares the CU's math while it runs."""
    steps = geom.steps
    P = max(1, int(steps_in_flight))

    def load(s):
        addrs = np.concatenate((geom.w_requests(tile, s), geom.x_requests(s)))
        kernel.load_requests += len(addrs)
        return hier.read(addrs, category)

    kernel.busy(cu)
    loads = [load(s) for s in range(min(P, steps))]
    for s in range(steps):
        yield loads[s]
        yield kernel.math(cu, geom.flops(tile, s), flops_per_cycle)
        kernel.beat()
        if s + P < steps:
            loads.append(load(s + P))
    kernel.idle(cu)


def bulk_gemv(engine, name: str, hier, gpu, record, geom: GemvGeometry, order: Sequence[int], dispatcher=None,
              steps_in_flight: int = 1, category: str = "gemm") -> ProgramKernel:
    """The library GEMV kernel (module doc): one WG per tile, dispatched in ``order``; each WG's tile is stored into
    local ``y`` with cached stores (posted: the WG retires at once, the kernel's end waits for them)."""
    order = [int(t) for t in order]
    if sorted(order) != list(range(geom.tiles)):
        raise ValueError(f"{name}: tile order is not a permutation of the GEMV's {geom.tiles} tiles")
    rate = gpu.fp32_flops_per_cycle
    k: Optional[ProgramKernel] = None

    def program(w: int, cu: int):
        tile = order[w]
        yield from gemv_tile(k, hier, geom, cu, tile, steps_in_flight, rate, category)
        addrs, _mask = geom.y_requests(tile)
        written, room = hier.posted_write(addrs, category)
        k.track_write(written)
        if room is not None:  # its writes met a full write queue (MemoryHierarchy module doc)
            yield room

    k = ProgramKernel(engine, name, hier, gpu, threads_per_wg=record.threads_per_wg,
                      registers_per_thread=record.registers_per_thread, lds_per_wg_B=record.lds_per_wg_B,
                      num_wgs=geom.tiles, program=program, dispatcher=dispatcher, tiles=order)
    return k
