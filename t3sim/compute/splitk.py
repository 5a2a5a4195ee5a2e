"""Split-K: a GEMM kernel's K loop cut into slices run by separate WGs, then a reduction kernel that sums the
slices' partial tiles into C -- cuBLAS's ``splitK`` GEMM kernels followed by ``cublasLt::splitKreduce_kernel``,
two kernels back to back on the stream, as an H200 runs them for GEMMs of M = 16 ... 128
(``experiments/validation/gemm_kernels/``). :class:`~t3sim.compute.gemm_kernel.GemmKernel` runs a kernel record
whose ``split_k`` is ``s > 1`` this way; this module holds the slices' arithmetic, the workspace layout and the
reduction.

Slices. With ``T`` tiles the kernel has ``T x s`` WGs: WG ``seq`` of the dispatch order is slice
``z = seq // T`` of tile ``order[seq % T]`` -- all tiles of slice 0 in the given tile order, then slice 1, ...,
as a grid's z dimension (the slowest) dispatches. Slice ``z`` runs k-steps ``[z*steps//s, (z+1)*steps//s)``
(:func:`slice_steps`; ``steps = ceil(K / tile_k)``, and ``s <= steps`` so that no slice is empty).

Workspace. Slice ``z``'s WG of tile ``t`` stores its fp32 partial tile -- the whole ``tile_m x tile_n`` tile, also
at the matrix's edges, 4 B per element -- as one contiguous run of 64 B requests at
``workspace_B + (z * T + t) * partial_stride_B`` (:func:`partial_stride_B`: the tile's bytes rounded up to a whole
request), through cached local stores (:class:`~t3sim.compute.sinks.CachedLocalOutput`: the write-back L2), not
through the kernel's output sink. The caller allocates the workspace (:func:`workspace_size_B` bytes) and passes
its base address to the kernel (``GemmKernel(..., workspace_B=...)``).

Reduction. When every slice WG retired and its partial stores completed (the split kernel's end), the reduction
kernel is launched on the same GPU: a :class:`~t3sim.compute.wg_program.ProgramKernel` with one WG per output tile
(in the given tile order), placed by the GEMM's dispatcher on the GEMM's CUs. Its first WGs dispatch
``gpu.dependent_launch_gap_ns`` after the split kernel's end: cuBLAS enqueues the reduction right behind the split
kernel as a programmatic dependent launch, and on the measured H100 the pair adds no launch gap beyond the first
kernel's (``gpu.dependent_launch_gap_ns``'s source); where a preset leaves that field unset, the reduction pays
``gpu.kernel_launch_overhead_ns`` as any stream's next kernel does. Reduction WG ``w`` (tile ``t``) reads the ``s`` partial tiles
of ``t`` (one batch of real 64 B requests through the L2 into DRAM), adds them (``(s - 1) x tile_m x tile_n`` fp32
adds at ``gpu.fp32_flops_per_cycle``, shared with the WGs computing on its CU), and stores the tile through the
GEMM kernel's output sink with the tile's own store requests and ``seq = w``: a scheme's sink sees each tile's
final (bf16/fp16) stores exactly once, as without split-K. The WG retires when the sink's ``retire`` event fires;
the reduction (and the GEMM kernel) ends when every WG retired and every store the sink reported completed.

Assumption: a reduction WG is 256 threads with 32 registers per thread and no shared memory, the footprint of a
small elementwise kernel (the launch configuration of ``splitKreduce_kernel`` was not recorded).
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from t3sim.compute.addresses import StoreRequests, wg_store_requests
from t3sim.compute.memhier import REQ_B
from t3sim.compute.wg_program import ProgramKernel
from t3sim.workload.record import ceil_div

#: bytes per element of a partial tile: cuBLAS's splitK kernels accumulate and write fp32
PARTIAL_ELEM_B = 4
#: a reduction WG's threads and registers per thread (assumption, module doc)
REDUCE_THREADS = 256
REDUCE_REGISTERS = 32


def k_steps(kernel) -> int:
    """Main-loop k-steps of one tile: ``ceil(K / tile_k)``."""
    return ceil_div(kernel.K, kernel.tile_k)


def split_of(kernel) -> int:
    """The kernel record's ``split_k`` (1 when it has none), checked: an integer in ``1 .. k_steps(kernel)``."""
    s = getattr(kernel, "split_k", 1)
    if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
        raise ValueError(f"{kernel.name}: split_k must be an integer >= 1, got {s!r}")
    steps = k_steps(kernel)
    if s > steps:
        raise ValueError(f"{kernel.name}: split_k={s} exceeds the {steps} k-steps of K={kernel.K} "
                         f"(tile_k={kernel.tile_k}): a slice would be empty")
    return int(s)


def slice_steps(steps: int, split: int, z: int) -> Tuple[int, int]:
    """k-steps ``[lo, hi)`` of slice ``z`` of ``split`` over ``steps`` k-steps: ``[z*steps//split,
    (z+1)*steps//split)``; the slices partition ``0 .. steps``."""
    if not 0 <= z < split:
        raise IndexError(f"slice {z} out of range 0..{split - 1}")
    return z * steps // split, (z + 1) * steps // split


def partial_stride_B(kernel) -> int:
    """Bytes between consecutive partial tiles in the workspace: the fp32 tile rounded up to whole requests."""
    return ceil_div(kernel.tile_m * kernel.tile_n * PARTIAL_ELEM_B, REQ_B) * REQ_B


def workspace_size_B(kernel) -> int:
    """Bytes of workspace the kernel needs: ``tiles x split_k`` partial tiles (0 without split-K)."""
    s = split_of(kernel)
    return 0 if s == 1 else kernel.num_wgs * s * partial_stride_B(kernel)


def partial_requests(kernel, workspace_B: int, z: int, tile: int) -> np.ndarray:
    """The 64 B requests (byte addresses, ascending) of slice ``z``'s partial tile of ``tile`` in the workspace."""
    base = workspace_B + (z * kernel.num_wgs + tile) * partial_stride_B(kernel)
    n = ceil_div(kernel.tile_m * kernel.tile_n * PARTIAL_ELEM_B, REQ_B)
    return base + REQ_B * np.arange(n, dtype=np.int64)


def partial_store(kernel, workspace_B: int, z: int, tile: int, seq: int) -> StoreRequests:
    """Slice WG ``seq``'s stores of its partial tile (whole requests; WF 0 named for all: the workspace has no
    tracker)."""
    addr = partial_requests(kernel, workspace_B, z, tile)
    n = len(addr)
    full = np.full(n, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    return StoreRequests(addr, full, np.full(n, REQ_B, dtype=np.int64), np.full(n, seq, dtype=np.int64),
                         np.zeros(n, dtype=np.int64))


def reduce_kernel(gk) -> ProgramKernel:
    """The reduction kernel of split GEMM kernel ``gk`` (a :class:`~t3sim.compute.gemm_kernel.GemmKernel` whose
    slice WGs have all ended; module doc), not started."""
    k, hier, sink, geom = gk.kernel, gk.hier, gk.sink, gk.geom
    s, ws, cat = gk.split, gk.workspace_B, gk.category
    order = [int(t) for t in gk.tile_order]
    flops = (s - 1) * k.tile_m * k.tile_n
    rate = gk.gpu.fp32_flops_per_cycle
    rk: ProgramKernel

    def program(w: int, cu: int):
        tile = order[w]
        addrs = np.concatenate([partial_requests(k, ws, z, tile) for z in range(s)])
        rk.load_requests += len(addrs)
        yield hier.read(addrs, cat)
        rk.busy(cu)
        yield rk.math(cu, flops, rate)
        rk.idle(cu)
        tm, tn = divmod(tile, k.tiles_n)
        st = sink.store(w, tile, wg_store_requests(geom, tm, tn, wg_id=w))
        if st is not None:
            rk.track_write(st.written)
            if st.retire is not None:
                yield st.retire

    rk = ProgramKernel(gk.engine, f"{gk.name}.reduce", hier, gk.gpu, threads_per_wg=REDUCE_THREADS,
                       registers_per_thread=REDUCE_REGISTERS, lds_per_wg_B=0, num_wgs=len(order), program=program,
                       dispatcher=gk.dispatcher, tiles=order,
                       cus=None if gk.num_cus == gk.gpu.num_cus else range(gk.num_cus),
                       launch_overhead_ns=gk.gpu.dependent_launch_gap)
    return rk
