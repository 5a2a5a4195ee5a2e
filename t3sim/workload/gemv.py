"""The kernel record of a GEMV workload (``workload.gemv``).

A GEMV ``y = W x`` of the whole-operator shape ``M x K`` (:class:`~t3sim.config.workload.GemvShapeConfig`) runs on
each of the ``tp`` GPUs as ``M x K/tp`` (W split along K, Megatron's row-parallel layer): each GPU's ``M``-element
partial y is then all-reduced. The record is a :class:`~t3sim.workload.record.KernelRecord` with ``N = 1`` (x and y
are ``K x 1`` and ``M x 1`` matrices), so the system model lays out W, x and y as it lays out A, B and C
(:mod:`t3sim.system.model`), and the checks of :mod:`t3sim.exec.checks` (footprint, size, occupancy) apply as they
are. Its tile is ``rows_per_wg x 1``, its ``tile_k`` the columns one WG loads per main-loop step; ``sublayer`` is
``"GEMV"``. Only the GEMV kernel (:mod:`t3sim.compute.gemv_kernel`) runs it: the GEMM kernel never sees it, so
nothing computes or moves a tile's width of padding (the schemes that run a GEMV say so in their ``workloads``).
"""

from __future__ import annotations

from t3sim.config.workload import GemvShapeConfig
from t3sim.workload.record import KernelRecord, ceil_div

#: ``KernelRecord.sublayer`` of every GEMV record
GEMV = "GEMV"


def gemv_record(gemv: GemvShapeConfig, tp: int, dtype: str, threads_per_wf: int = 64) -> KernelRecord:
    """One GPU's GEMV kernel: ``M x K/tp`` with ``gemv``'s kernel fields, wavefronts of ``threads_per_wf`` threads
    (the system GPU's; 64 on AMD GPUs, whose rocBLAS kernel the defaults describe)."""
    tiles = ceil_div(gemv.M, gemv.rows_per_wg)
    wfs = ceil_div(gemv.threads_per_wg, threads_per_wf)
    return KernelRecord(
        name=f"{gemv.name}.tp{tp}.gemv", model=gemv.name, sublayer=GEMV, pass_="fwd", tp=tp,
        M=gemv.M, N=1, K=gemv.K // tp, dtype=dtype, trans_a=False, trans_b=False, c_layout="col_major",
        tile_m=gemv.rows_per_wg, tile_n=1, tile_k=gemv.cols_per_step, tiles_m=tiles, tiles_n=1, num_wgs=tiles,
        wfs_per_wg=wfs, wf_grid=(wfs, 1), threads_per_wf=threads_per_wf,
        registers_per_thread=gemv.registers_per_thread, lds_per_wg_B=gemv.lds_per_wg_B,
        wg_order={"kind": "row_major"}, role="producer", collective="all-reduce")


def is_gemv(kernel) -> bool:
    """Whether ``kernel`` (a KernelRecord) is a GEMV record of :func:`gemv_record`."""
    return getattr(kernel, "sublayer", "") == GEMV
