"""Where a GEMM's operands live and which memory requests each WG issues (vectorized numpy).

**Layout convention** (BLAS, column-major storage as in cuBLAS/rocBLAS, the
libraries the paper's GEMMs come from, Sec. 5.2 refs [30, 61]). The GEMM is
``C[M, N] = op(A)[M, K] @ op(B)[K, N]``; element offsets (in elements from the
array's base address) are

=========  ==================  ==========================  =====================
operand    flag                stored as                   offset of op(X)[i, j]
=========  ==================  ==========================  =====================
A          ``trans_a=False``   M x K col-major, lda = M    ``j * M + i``
A          ``trans_a=True``    K x M col-major, lda = K    ``i * K + j``
B          ``trans_b=False``   K x N col-major, ldb = K    ``j * K + i``
B          ``trans_b=True``    N x K col-major, ldb = N    ``i * N + j``
C          ``c_col_major``     M x N col-major, ldc = M    ``j * M + i``
C          not ``c_col_major`` M x N row-major, ldc = N    ``i * N + j``
=========  ==================  ==========================  =====================

Forward GEMMs use transposed inputs and backward GEMMs non-transposed ones
(paper Sec. 5.2). Column-major output (the BLAS default) means one stage's
output tiles are not contiguous in memory (paper Sec. 4.2.1, Figure 9(a)).

**Tiles.** WG ``(tm, tn)`` computes output rows ``[tm*tile_m, ...)`` and
columns ``[tn*tile_n, ...)``, clipped to ``M x N`` (partial edge tiles). At
main-loop step ``s`` it loads the K-slice ``k in [s*tile_k, ...)`` (clipped to
``K``) of A's rows and B's columns. Inside a tile the ``wfs_per_wg`` WFs form
a ``wf_m x wf_n`` grid; WF ``w`` owns the sub-tile at grid position
``(w % wf_m, w // wf_m)`` (m fastest, the CUTLASS warp numbering, same as
:mod:`t3sim.workload.gemm`) of ``tile_m/wf_m x tile_n/wf_n`` elements, i.e.
``wf_tile_size = tile_m * tile_n / wfs_per_wg`` (paper Sec. 4.2.1), clipped at
edge tiles (where it may be empty).

**Requests.** Memory requests are ``req_B``-byte aligned blocks (64 B by
default: two 32 B L2 sectors; 128 B for whole L2 lines). Load functions return
the *unique* aligned addresses of the requests touching the slice, ascending.
Store functions return, per (WG, WF), the unique aligned requests its sub-tile
touches with a ``uint64`` byte mask (bit ``b`` = byte ``addr + b`` written),
so two WFs sharing a request (unaligned M/N) each store only their bytes:
across all WGs and WFs every output byte is written exactly once.
Base addresses may be unaligned; addresses are bytes (``int64``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional, Tuple

import numpy as np

_ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


def default_wf_grid(wfs_per_wg: int) -> Tuple[int, int]:
    """``(wf_m, wf_n)`` with ``wf_m`` the largest divisor of ``wfs_per_wg`` not above
    its square root (8 -> 2x4, matching the trace generator's default)."""
    wf_m = max(d for d in range(1, int(wfs_per_wg**0.5) + 1) if wfs_per_wg % d == 0)
    return wf_m, wfs_per_wg // wf_m


@dataclass(frozen=True)
class GemmGeometry:
    """Plain GEMM parameters (sizes in elements, addresses in bytes).

    Invariants (checked): all sizes >= 1; ``wf_m * wf_n == wfs_per_wg``;
    ``wf_m | tile_m`` and ``wf_n | tile_n``; bases >= 0.
    """

    M: int
    N: int
    K: int
    tile_m: int
    tile_n: int
    tile_k: int
    elem_B: int
    trans_a: bool
    trans_b: bool
    a_base_B: int
    b_base_B: int
    c_base_B: int
    wfs_per_wg: int = 8
    c_col_major: bool = True
    wf_grid: Optional[Tuple[int, int]] = None

    def __post_init__(self) -> None:
        for name in ("M", "N", "K", "tile_m", "tile_n", "tile_k", "elem_B", "wfs_per_wg"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("a_base_B", "b_base_B", "c_base_B"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.wf_grid is None:
            object.__setattr__(self, "wf_grid", default_wf_grid(self.wfs_per_wg))
        wf_m, wf_n = self.wf_grid  # type: ignore[misc]
        if wf_m * wf_n != self.wfs_per_wg or self.tile_m % wf_m or self.tile_n % wf_n:
            raise ValueError(f"wf_grid {wf_m}x{wf_n} must multiply to wfs_per_wg={self.wfs_per_wg} "
                             f"and divide the {self.tile_m}x{self.tile_n} tile")

    @property
    def tiles_m(self) -> int:
        return -(-self.M // self.tile_m)

    @property
    def tiles_n(self) -> int:
        return -(-self.N // self.tile_n)

    @property
    def k_steps(self) -> int:
        return -(-self.K // self.tile_k)

    @property
    def wf_tile_shape(self) -> Tuple[int, int]:
        """Full (unclipped) WF sub-tile ``(rows, cols)``; ``rows*cols = wf_tile_size``."""
        wf_m, wf_n = self.wf_grid  # type: ignore[misc]
        return self.tile_m // wf_m, self.tile_n // wf_n

    # (col_major, leading dimension) of each operand's logical (row, col) view
    def a_view(self) -> Tuple[bool, int]:
        return (False, self.K) if self.trans_a else (True, self.M)

    def b_view(self) -> Tuple[bool, int]:
        return (False, self.N) if self.trans_b else (True, self.K)

    def c_view(self) -> Tuple[bool, int]:
        return (True, self.M) if self.c_col_major else (False, self.N)


def _check_req(req_B: int, max_B: Optional[int] = None) -> None:
    if req_B < 1 or req_B & (req_B - 1) or (max_B is not None and req_B > max_B):
        raise ValueError(f"req_B must be a power of two{f' <= {max_B}' if max_B else ''}, got {req_B}")


def _runs(row0, col0, rows, cols, col_major: bool, ld: int, elem_B: int, base_B: int):
    """Contiguous byte runs ``[start, end)`` of rectangles (arrays), with the rect index of each run."""
    row0, col0, rows, cols = (np.atleast_1d(np.asarray(x, dtype=np.int64)) for x in (row0, col0, rows, cols))
    rows = np.maximum(rows, 0)
    cols = np.maximum(cols, 0)
    # a run is one column (col-major) or one row (row-major) of the rectangle
    nrun = np.where(rows * cols > 0, cols if col_major else rows, 0)
    rect = np.repeat(np.arange(len(nrun), dtype=np.int64), nrun)
    first = np.cumsum(nrun) - nrun
    j = np.arange(int(nrun.sum()), dtype=np.int64) - np.repeat(first, nrun)
    if col_major:
        off = (col0[rect] + j) * ld + row0[rect]
        length = rows[rect]
    else:
        off = (row0[rect] + j) * ld + col0[rect]
        length = cols[rect]
    start = base_B + off * elem_B
    return start, start + length * elem_B, rect


def _pieces(start, end, rect, req_B: int):
    """Split byte runs at ``req_B`` boundaries: (request addr, lo, hi, rect) per piece."""
    first = start // req_B
    count = (end - 1) // req_B - first + 1
    idx = np.repeat(np.arange(len(start), dtype=np.int64), count)
    k = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
    addr = (first[idx] + k) * req_B
    lo = np.maximum(start[idx], addr)
    hi = np.minimum(end[idx], addr + req_B)
    return addr, lo, hi, rect[idx]


def _unique_pairs(rect, addr):
    """Sort by (rect, addr); return the sort order and a first-of-group mask."""
    order = np.lexsort((addr, rect))
    r, a = rect[order], addr[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (r[1:] != r[:-1]) | (a[1:] != a[:-1])
    return order, first


def rect_requests(row0, col0, rows, cols, *, col_major: bool, ld: int, elem_B: int, base_B: int,
                  req_B: int = 64) -> Tuple[np.ndarray, np.ndarray]:
    """Unique aligned requests touching each rectangle of a matrix.

    Args:
        row0, col0, rows, cols: rectangles (scalars or equal-length arrays), in
            elements of the logical matrix; empty ones (``rows*cols == 0``) give nothing.
        col_major: offset is ``col*ld + row`` (else ``row*ld + col``).
        ld: leading dimension, in elements.
        elem_B: bytes per element; base_B: array base address, in B.
        req_B: request size, a power of two, in B.

    Returns:
        ``(addr, rect)``: ``int64`` request addresses and the index of the
        rectangle each belongs to, sorted by ``(rect, addr)``, unique per rectangle.
    """
    _check_req(req_B)
    start, end, rect = _runs(*np.broadcast_arrays(row0, col0, rows, cols), col_major, ld, elem_B, base_B)
    addr, _, _, r = _pieces(start, end, rect, req_B)
    order, keep = _unique_pairs(r, addr)
    return addr[order][keep], r[order][keep]


# ------------------------------------------------------------------ loads


def a_slice_rect(g: GemmGeometry, tm, s):
    """Rectangle ``(row0, col0, rows, cols)`` of op(A) (M x K) read by tile row ``tm`` at k-step ``s``."""
    tm, s = np.asarray(tm, dtype=np.int64), np.asarray(s, dtype=np.int64)
    r0, c0 = tm * g.tile_m, s * g.tile_k
    return r0, c0, np.minimum(g.tile_m, g.M - r0), np.minimum(g.tile_k, g.K - c0)


def b_slice_rect(g: GemmGeometry, tn, s):
    """Rectangle ``(row0, col0, rows, cols)`` of op(B) (K x N) read by tile column ``tn`` at k-step ``s``."""
    tn, s = np.asarray(tn, dtype=np.int64), np.asarray(s, dtype=np.int64)
    r0, c0 = s * g.tile_k, tn * g.tile_n
    return r0, c0, np.minimum(g.tile_k, g.K - r0), np.minimum(g.tile_n, g.N - c0)


def _check_tiles(g: GemmGeometry, tm, tn, s) -> None:
    tm, tn, s = (np.asarray(x) for x in (tm, tn, s))
    if tm.size and (tm.min() < 0 or tm.max() >= g.tiles_m):
        raise IndexError(f"tile row out of range 0..{g.tiles_m - 1}")
    if tn.size and (tn.min() < 0 or tn.max() >= g.tiles_n):
        raise IndexError(f"tile column out of range 0..{g.tiles_n - 1}")
    if s.size and (s.min() < 0 or s.max() >= g.k_steps):
        raise IndexError(f"k-step out of range 0..{g.k_steps - 1}")


def a_requests(g: GemmGeometry, tm: int, s: int, req_B: int = 64) -> np.ndarray:
    """Unique aligned addresses (ascending, B) of A's K-slice for tile row ``tm`` at k-step ``s``."""
    _check_tiles(g, tm, 0, s)
    col_major, ld = g.a_view()
    return rect_requests(*a_slice_rect(g, tm, s), col_major=col_major, ld=ld, elem_B=g.elem_B,
                         base_B=g.a_base_B, req_B=req_B)[0]


def b_requests(g: GemmGeometry, tn: int, s: int, req_B: int = 64) -> np.ndarray:
    """Unique aligned addresses (ascending, B) of B's K-slice for tile column ``tn`` at k-step ``s``."""
    _check_tiles(g, 0, tn, s)
    col_major, ld = g.b_view()
    return rect_requests(*b_slice_rect(g, tn, s), col_major=col_major, ld=ld, elem_B=g.elem_B,
                         base_B=g.b_base_B, req_B=req_B)[0]


def slice_requests(g: GemmGeometry, operand: str, t: int, s0: int, s1: int,
                   req_B: int = 64) -> Tuple[np.ndarray, np.ndarray]:
    """K-slices of A's tile row ``t`` (``operand`` ``"a"``) or B's tile column ``t`` (``"b"``) at k-steps
    ``[s0, s1)`` in one vectorised call.

    Returns ``(addr, step)``: the concatenation over ``s`` of :func:`a_requests` / :func:`b_requests`
    ``(g, t, s)`` (each unique and ascending; the same address may recur in different steps) and the
    k-step of each request, in that order (equal to the per-step calls: tests/compute/test_addresses.py)."""
    if operand not in ("a", "b"):
        raise ValueError(f"operand {operand!r}; allowed: a, b")
    steps = np.arange(s0, s1, dtype=np.int64)
    _check_tiles(g, t if operand == "a" else 0, 0 if operand == "a" else t, steps)
    rect = a_slice_rect(g, np.full(steps.size, t), steps) if operand == "a" else \
        b_slice_rect(g, np.full(steps.size, t), steps)
    col_major, ld = g.a_view() if operand == "a" else g.b_view()
    addr, r = rect_requests(*rect, col_major=col_major, ld=ld, elem_B=g.elem_B,
                            base_B=g.a_base_B if operand == "a" else g.b_base_B, req_B=req_B)
    return addr, r + s0


class LoadRequests(NamedTuple):
    """Load requests of a batch of WGs at one k-step (parallel arrays).

    ``addr`` (int64, B), ``wg`` (index into the WG arrays passed in),
    ``operand`` (int8: 0 = A, 1 = B). Sorted by (wg, operand, addr); unique
    per (wg, operand). WGs of one tile row share A addresses (that reuse is
    what the L2 must capture).
    """

    addr: np.ndarray
    wg: np.ndarray
    operand: np.ndarray


def wg_load_requests(g: GemmGeometry, tm, tn, s: int, req_B: int = 64) -> LoadRequests:
    """A and B K-slice requests of WGs ``(tm[i], tn[i])`` at k-step ``s`` (vectorized over WGs)."""
    tm, tn = np.atleast_1d(np.asarray(tm, dtype=np.int64)), np.atleast_1d(np.asarray(tn, dtype=np.int64))
    if tm.shape != tn.shape:
        raise ValueError("tm and tn must have the same shape")
    _check_tiles(g, tm, tn, s)
    out = []
    for op, (rect, view, base) in enumerate(((a_slice_rect(g, tm, s), g.a_view(), g.a_base_B),
                                             (b_slice_rect(g, tn, s), g.b_view(), g.b_base_B))):
        addr, wg = rect_requests(*np.broadcast_arrays(*rect), col_major=view[0], ld=view[1],
                                 elem_B=g.elem_B, base_B=base, req_B=req_B)
        out.append((addr, wg, np.full(len(addr), op, dtype=np.int8)))
    addr, wg, opnd = (np.concatenate(x) for x in zip(*out))
    order = np.lexsort((addr, opnd, wg))
    return LoadRequests(addr[order], wg[order], opnd[order])


# ------------------------------------------------------------------ stores


def wf_rects(g: GemmGeometry, tm, tn):
    """Output rectangles of every WF of WGs ``(tm[i], tn[i])``: arrays of length
    ``len(tm) * wfs_per_wg`` ordered (wg, wf), plus the wg index and wf id of each."""
    tm, tn = np.atleast_1d(np.asarray(tm, dtype=np.int64)), np.atleast_1d(np.asarray(tn, dtype=np.int64))
    wf_m = g.wf_grid[0]  # type: ignore[index]
    sub_r, sub_c = g.wf_tile_shape
    nw = g.wfs_per_wg
    wg = np.repeat(np.arange(len(tm), dtype=np.int64), nw)
    wf = np.tile(np.arange(nw, dtype=np.int64), len(tm))
    t_r0, t_c0 = tm[wg] * g.tile_m, tn[wg] * g.tile_n
    t_rows, t_cols = np.minimum(g.tile_m, g.M - t_r0), np.minimum(g.tile_n, g.N - t_c0)
    fr0, fc0 = (wf % wf_m) * sub_r, (wf // wf_m) * sub_c
    rows = np.clip(t_rows - fr0, 0, sub_r)
    cols = np.clip(t_cols - fc0, 0, sub_c)
    return t_r0 + fr0, t_c0 + fc0, rows, cols, wg, wf


class StoreRequests(NamedTuple):
    """Output store requests (parallel arrays), sorted by (wg, wf, addr).

    ``addr`` (int64, B, ``req_B``-aligned), ``mask`` (uint64 byte mask within
    the request), ``nbytes`` (int64, popcount of ``mask``), ``wg_id`` and
    ``wf_id`` (int64; the WG id is the caller's, e.g. for the Tracker's
    ``wg_lsb``/``wg_msb``, paper Sec. 4.2.1).
    """

    addr: np.ndarray
    mask: np.ndarray
    nbytes: np.ndarray
    wg_id: np.ndarray
    wf_id: np.ndarray


def _popcount64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


def wg_store_requests(g: GemmGeometry, tm, tn, wg_id=None, req_B: int = 64) -> StoreRequests:
    """Store requests of each WF's output sub-tile for WGs ``(tm[i], tn[i])``.

    Args:
        g: geometry; tm, tn: tile coordinates (scalars or arrays).
        wg_id: id reported for each WG (default ``tm * tiles_n + tn``, the row-major tile number).
        req_B: request size, a power of two <= 64 (the byte mask is 64 bits), in B.
    """
    _check_req(req_B, 64)
    tm, tn = np.atleast_1d(np.asarray(tm, dtype=np.int64)), np.atleast_1d(np.asarray(tn, dtype=np.int64))
    if tm.shape != tn.shape:
        raise ValueError("tm and tn must have the same shape")
    _check_tiles(g, tm, tn, 0)
    ids = tm * g.tiles_n + tn if wg_id is None else np.atleast_1d(np.asarray(wg_id, dtype=np.int64))
    r0, c0, rows, cols, wg, wf = wf_rects(g, tm, tn)
    col_major, ld = g.c_view()
    start, end, rect = _runs(r0, c0, rows, cols, col_major, ld, g.elem_B, g.c_base_B)
    addr, lo, hi, rect = _pieces(start, end, rect, req_B)
    width = (hi - lo).astype(np.uint64)
    mask = (_ALL_ONES >> (np.uint64(64) - width)) << (lo - addr).astype(np.uint64)
    order, first = _unique_pairs(rect, addr)
    starts = np.flatnonzero(first)
    mask = np.bitwise_or.reduceat(mask[order], starts) if len(order) else mask
    addr, rect = addr[order][starts], rect[order][starts]
    return StoreRequests(addr, mask, _popcount64(mask), ids[wg[rect]], wf[rect])
