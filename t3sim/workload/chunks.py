"""Software decomposition of a GEMM into chunks (CoCoNet, Transformer Engine, PyTorch AsyncTP).

A GEMM ``C[M, N] = A[M, K] B[K, N]`` split into ``C`` chunks along ``M``
(rows of A and C), ``N`` (columns of B and C) or ``K`` (the reduction: columns
of A, rows of B; every chunk computes all of C, and chunks after the first
accumulate into it, ``C += A_i B_i``, beta = 1: :attr:`Chunk.accumulate`; FiCCO
Sec. IV-C1's column sharding). With at most as many chunks
as tile rows (columns; along K, ``tile_k`` steps), splits fall on tile boundaries: the ``tiles`` tile rows
(columns) are dealt out as evenly as possible, the first chunks getting the
extra tile, so every chunk is itself a tiled GEMM kernel and the chunks' output
tiles partition C's tiles exactly. With more chunks than tiles (Transformer
Engine splitting a 64-row GEMM eight ways, FLUX Sec. 6), the rows (columns)
themselves are dealt out the same way and every chunk is a GEMM of one partial
tile row (column): a tensor-core tile computes its whole ``tile_m x tile_n``
block whatever the rows present, and each chunk reads all of B (A) again.

Each chunk's operand slices are contiguous regions, as for PyTorch tensors
sliced along their outer dimension (``A[r0:r1]`` of a row-major ``A``,
``C[r0:r1]``; along ``N``, the column blocks of ``B`` and ``C`` stored one
after another): :attr:`Chunk.a_offset_B`, :attr:`Chunk.b_offset_B` and
:attr:`Chunk.c_offset_B` are byte offsets from the whole arrays' bases, and
:attr:`Chunk.c_elems` elements of C start at ``c_offset_B``.

Along ``K`` a chunk's A block (columns ``[k0, k1)`` of an ``M x K`` A) is strided
in a row-major A; t3sim stores A and B **K-block-major** (as ``ficco``'s
uniform_fused_2d stores A): block ``i`` of A is ``M x (k1 - k0)`` in its own
layout at byte ``M k0 e`` from A's base, block ``i`` of B ``(k1 - k0) x N`` at
``k0 N e`` -- for a B stored K-row-major (forward GEMMs, ``trans_b``) exactly its
natural rows -- and each chunk's C is the whole C (``c_offset_B`` = 0). The
blocks partition A's and B's bytes, so the chunks read what the whole GEMM reads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, List, Optional

from t3sim.config.workload import DTYPE_BYTES

AXES = ("M", "N", "K")


@dataclass(frozen=True)
class Chunk:
    """Chunk ``index`` of ``count``: its own kernel record and where its slices start (bytes)."""

    index: int
    count: int
    axis: str
    kernel: object  # KernelRecord of the chunk
    a_offset_B: int
    b_offset_B: int
    c_offset_B: int

    @property
    def c_elems(self) -> int:
        return self.kernel.M * self.kernel.N

    @property
    def accumulate(self) -> bool:
        """The chunk adds into C (beta = 1): a K chunk after the first (module doc)."""
        return self.axis == "K" and self.index > 0


def split(n_tiles: int, count: int) -> List[range]:
    """``n_tiles`` tiles dealt into ``count`` contiguous ranges, sizes differing by at most one (first ones larger)."""
    if not 1 <= count <= n_tiles:
        raise ValueError(f"cannot split {n_tiles} tiles into {count} chunks (need 1 <= chunks <= tiles)")
    q, r = divmod(n_tiles, count)
    out, lo = [], 0
    for i in range(count):
        hi = lo + q + (1 if i < r else 0)
        out.append(range(lo, hi))
        lo = hi
    return out


def chunks(kernel, count: int, axis: str = "M", retile: Optional[Callable] = None) -> List[Chunk]:
    """``kernel`` (a :class:`~t3sim.workload.record.KernelRecord`) as ``count`` chunks along ``axis`` (module doc).
    ``retile(record) -> record``: gives each chunk's GEMM its own kernel (the system's selection for the chunk's
    shape, :func:`t3sim.compute.selection.retile`; schemes pass ``model.retile``); default: the whole GEMM's tile."""
    if axis not in AXES:
        raise ValueError(f"chunk axis must be one of {AXES}, got {axis!r}")
    eb = DTYPE_BYTES[kernel.dtype]
    if axis == "K":
        tiles, tile, whole = -(-kernel.K // kernel.tile_k), kernel.tile_k, kernel.K
    else:
        tiles = kernel.tiles_m if axis == "M" else kernel.tiles_n
        tile = kernel.tile_m if axis == "M" else kernel.tile_n
        whole = kernel.M if axis == "M" else kernel.N
    order = kernel.wg_order if kernel.wg_order.get("kind") != "explicit" else {"kind": "row_major"}
    if count > tiles:  # sub-tile chunks: deal out the rows (columns); one partial tile row (column) each
        tiles, tile = whole, 1
    out = []
    for i, r in enumerate(split(tiles, count)):
        lo, hi = r.start * tile, min(whole, r.stop * tile)
        if axis == "K":  # K-block-major A and B (module doc); the whole C
            k = dataclasses.replace(kernel, K=hi - lo, wg_order=order)
            out.append(Chunk(i, count, axis, k, lo * kernel.M * eb, lo * kernel.N * eb, 0))
            continue
        n = -(-(hi - lo) // (kernel.tile_m if axis == "M" else kernel.tile_n))  # tile rows (columns) of the chunk
        if axis == "M":
            k = dataclasses.replace(kernel, M=hi - lo, tiles_m=n, num_wgs=n * kernel.tiles_n,
                                    wg_order=order)
            out.append(Chunk(i, count, axis, k, lo * kernel.K * eb, 0, lo * kernel.N * eb))
        else:
            k = dataclasses.replace(kernel, N=hi - lo, tiles_n=n, num_wgs=kernel.tiles_m * n,
                                    wg_order=order)
            out.append(Chunk(i, count, axis, k, 0, lo * kernel.K * eb, lo * kernel.M * eb))
    if retile is not None:
        out = [dataclasses.replace(c, kernel=retile(c.kernel)) for c in out]
    return out
