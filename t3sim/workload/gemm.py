"""GEMM shape, tiling and occupancy math for one trace kernel.

Conventions (all sizes are in **elements** unless a name ends in ``_B``):

* The GEMM computes ``C[M, N] = op(A)[M, K] @ op(B)[K, N]``; for the sliced
  Transformer sub-layers ``M = T`` tokens, ``N = H`` and ``K = H * f / TP``
  (paper Sec. 6.1; :mod:`t3sim.workload.generate`).
* The output is cut into a grid of ``tiles_m x tiles_n`` macro tiles of
  ``tile_m x tile_n`` elements; tiles in the last tile row/column are
  *partial* when ``tile_m`` does not divide ``M`` (or ``tile_n`` does not
  divide ``N``): they are clipped to the matrix. Each WG produces exactly one
  whole tile (paper Sec. 5.2, no split-K), so ``num_wgs = tiles_m * tiles_n``.
* Tiles are numbered row-major: ``tile = tm * tiles_n + tn``. A WG's *index*
  is its dispatch position; which tile it computes is given by the kernel's
  WG order (:mod:`t3sim.workload.wg_order`).
* Inside a tile the ``wfs_per_wg`` wavefronts form a ``wf_m x wf_n`` grid
  (``wf_grid``); WF ``w`` owns the sub-tile at grid position
  ``(w % wf_m, w // wf_m)`` (m fastest, as CUTLASS numbers warps in
  ``MmaPipelined``: ``warp_idx_m = warp_idx % WarpCount::kM``). A WF sub-tile
  has ``tile_m / wf_m x tile_n / wf_n`` elements (the Tracker's
  ``wf_tile_size = tile_m * tile_n / wfs_per_wg``, paper Sec. 4.2.1), clipped
  at partial tiles, where it may be empty.

Invariant (property-tested): the rectangles of all tiles cover every output
element exactly once, and the WF rectangles of a tile partition its rectangle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Tuple

from t3sim.compute.occupancy import Occupancy
from t3sim.compute.occupancy import occupancy as _occupancy
from t3sim.config.workload import DTYPE_BYTES
from t3sim.workload.record import KernelRecord, ceil_div
from t3sim.workload.wg_order import base_tile

if TYPE_CHECKING:  # pragma: no cover
    from t3sim.config.gpu import GPUConfig

Rect = Tuple[int, int, int, int]  # (row0, col0, rows, cols), in elements

def tile_grid(M: int, N: int, tile_m: int, tile_n: int) -> Tuple[int, int]:
    """``(tiles_m, tiles_n)``: macro tiles along M and N, counting partial tiles."""
    return ceil_div(M, tile_m), ceil_div(N, tile_n)


def tile_coords(kernel: "KernelRecord", tile: int) -> Tuple[int, int]:
    """``(tm, tn)`` grid position of row-major tile number ``tile``."""
    if not 0 <= tile < kernel.num_wgs:
        raise IndexError(f"tile {tile} out of range 0..{kernel.num_wgs - 1}")
    return divmod(tile, kernel.tiles_n)


def tile_rect_of(kernel: "KernelRecord", tile: int) -> Rect:
    """Output rectangle ``(row0, col0, rows, cols)`` of tile number ``tile``.

    Partial edge tiles are clipped to ``M x N``.
    """
    tm, tn = tile_coords(kernel, tile)
    r0, c0 = tm * kernel.tile_m, tn * kernel.tile_n
    return r0, c0, min(kernel.tile_m, kernel.M - r0), min(kernel.tile_n, kernel.N - c0)


def _tile_of(kernel: "KernelRecord", wg_index: int, order: "list[int] | None") -> int:
    if order is None:
        return base_tile(kernel, wg_index)
    if not 0 <= wg_index < len(order):
        raise IndexError(f"WG index {wg_index} out of range 0..{len(order) - 1}")
    return order[wg_index]


def tile_rect(kernel: "KernelRecord", wg_index: int, order: "list[int] | None" = None) -> Rect:
    """Output rectangle of the WG dispatched at position ``wg_index``.

    Args:
        kernel: the trace kernel.
        wg_index: WG dispatch index, ``0 <= wg_index < num_wgs``.
        order: WG -> tile list (default: the kernel's base order, unstaggered).
    """
    return tile_rect_of(kernel, _tile_of(kernel, wg_index, order))


def wf_subtile_shape(kernel: "KernelRecord") -> Tuple[int, int]:
    """Full (unclipped) WF sub-tile ``(rows, cols)``."""
    wf_m, wf_n = kernel.wf_grid
    return kernel.tile_m // wf_m, kernel.tile_n // wf_n


def wf_tile_size(kernel: "KernelRecord") -> int:
    """Elements of a full WF sub-tile: ``tile_m * tile_n / wfs_per_wg`` (paper Sec. 4.2.1)."""
    rows, cols = wf_subtile_shape(kernel)
    return rows * cols


def wf_rect_in_tile(kernel: "KernelRecord", tile: int, wf: int) -> Rect:
    """Output rectangle of WF ``wf`` of tile number ``tile`` (may have 0 rows/cols at an edge)."""
    if not 0 <= wf < kernel.wfs_per_wg:
        raise IndexError(f"WF {wf} out of range 0..{kernel.wfs_per_wg - 1}")
    r0, c0, rows, cols = tile_rect_of(kernel, tile)
    wf_m = kernel.wf_grid[0]
    sub_r, sub_c = wf_subtile_shape(kernel)
    wr, wc = wf % wf_m, wf // wf_m
    fr0, fc0 = wr * sub_r, wc * sub_c
    return r0 + fr0, c0 + fc0, max(0, min(sub_r, rows - fr0)), max(0, min(sub_c, cols - fc0))


def wf_rect(kernel: "KernelRecord", wg_index: int, wf: int, order: "list[int] | None" = None) -> Rect:
    """Output rectangle of WF ``wf`` of the WG dispatched at ``wg_index``."""
    return wf_rect_in_tile(kernel, _tile_of(kernel, wg_index, order), wf)


def element_offset(kernel: "KernelRecord", row: int, col: int) -> int:
    """Element offset of ``C[row, col]`` in the output array (``c_layout``, leading dim M or N)."""
    if kernel.c_layout == "col_major":
        return col * kernel.M + row
    return row * kernel.N + col


def dtype_bytes(kernel: "KernelRecord") -> int:
    """Bytes per element of the kernel's dtype."""
    return DTYPE_BYTES[kernel.dtype]


def output_bytes(kernel: "KernelRecord") -> int:
    """Bytes of the whole output ``C`` (what the all-reduce reduces)."""
    return kernel.M * kernel.N * dtype_bytes(kernel)


def tile_bytes(kernel: "KernelRecord", tile: int) -> int:
    """Output bytes written by tile number ``tile`` (smaller for partial tiles)."""
    _, _, rows, cols = tile_rect_of(kernel, tile)
    return rows * cols * dtype_bytes(kernel)


def flops(kernel: "KernelRecord") -> int:
    """Useful FLOPs of the GEMM: ``2 * M * N * K`` (one multiply-add = 2 FLOPs)."""
    return 2 * kernel.M * kernel.N * kernel.K


def tile_k_steps(kernel: "KernelRecord") -> int:
    """Main-loop iterations of one WG: ``ceil(K / tile_k)``."""
    return ceil_div(kernel.K, kernel.tile_k)


# ----------------------------------------------------------------------- occupancy


def occupancy(kernel: "KernelRecord", gpu: "GPUConfig") -> Occupancy:
    """Resident WGs per CU for a trace kernel: :func:`t3sim.compute.occupancy.occupancy` on its resources.

    Raises ``ValueError`` (naming the resource) when not even one WG fits.
    """
    return _occupancy(gpu, wfs_per_wg=kernel.wfs_per_wg, registers_per_thread=kernel.registers_per_thread,
                      lds_per_wg_B=kernel.lds_per_wg_B, threads_per_wf=kernel.threads_per_wf)


def num_stages(kernel: "KernelRecord", stage_wgs: int) -> int:
    """Stages of the GEMM: ``ceil(num_wgs / stage_wgs)`` (the last may be partial)."""
    return ceil_div(kernel.num_wgs, stage_wgs)
