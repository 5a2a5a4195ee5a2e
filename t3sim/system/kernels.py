"""Which GEMM kernel runs: the one place a configuration is turned into its kernel record.

* :func:`point_kernel` -- the kernel an experiment point runs (its workload's GEMM, GEMV or embedding kernel,
  re-tiled with ``system.gemm_kernel`` when the system names one). The system model, the sampling plan, the
  pre-run checks and the progress meter all take the kernel from here, through the resolved point
  (:func:`t3sim.system.core.resolve`).
* :func:`gemm_kernel_record` -- the kernel of a measured ``M x K`` by ``K x N`` GEMM on a system (``t3sim
  validate``'s GEMM, overlap and contention rows): ``system.gemm_kernel``, else the :data:`GEMM_TILES` shape of
  the GPU family.

Also the sizes the pre-run checks compare: a kernel's HBM footprint and one GPU's HBM capacity (bytes).
"""

from __future__ import annotations

from typing import Dict

from t3sim.config.experiment import ExperimentConfig
from t3sim.config.system import SystemConfig
from t3sim.config.workload import DTYPE_BYTES
from t3sim.workload.gemm import tile_grid
from t3sim.workload.generate import system_kernel
from t3sim.workload.record import KernelRecord

#: GEMM kernel shape per GPU family, keyed by ``gpu.threads_per_wf`` (32: NVIDIA, 64: AMD).
#: NVIDIA (sm90 cuBLAS bf16 GEMMs, ``sm90_xmma_gemm_..._128x256x64_warpgroupsize2x1x1``):
#: a 128 x 256 output tile, 64-deep K slice, two consumer warpgroups = 8 warps (2 x 4, 64 x 64
#: each) with 240 registers per thread (CUTLASS sm90 warp-specialized kernels raise consumer
#: warps to 240 with ``setmaxnreg``; the producer (TMA) warpgroup, which does no math, is not
#: modelled), 4 smem stages of (128 + 256) x 64 x 2 B = 192 KiB -> 1 CTA per SM.
#: AMD (MI210, rocBLAS/Tensile MT128x128x32 with 256 threads): as the Table 1 default tile.
GEMM_TILES: Dict[int, Dict[str, object]] = {
    32: dict(tile_m=128, tile_n=256, tile_k=64, wf_grid=(2, 4), wfs_per_wg=8, registers_per_thread=240,
             lds_stages=4),
    64: dict(tile_m=128, tile_n=128, tile_k=32, wf_grid=(2, 2), wfs_per_wg=4, registers_per_thread=128,
             lds_stages=2),
}


def point_kernel(exp: ExperimentConfig) -> KernelRecord:
    """The kernel the resolved point ``exp`` runs on its system (:func:`t3sim.workload.generate.system_kernel`:
    the workload's kernel, with the system's tile when ``system.gemm_kernel`` names one). Raises
    :class:`~t3sim.errors.InputError` for a workload whose kernel cannot be made (e.g. a trace without it)."""
    return system_kernel(exp.workload, exp.system)


def gemm_kernel_record(system: SystemConfig, M: int, N: int, K: int, dtype: str, name: str = "gemm") -> KernelRecord:
    """The kernel record of an ``M x K`` by ``K x N`` GEMM with ``system.gemm_kernel`` (the kernel experiments
    on the system run, :func:`point_kernel`), or the :data:`GEMM_TILES` shape of its GPU family when the system
    names none.

    Both inputs non-transposed (``torch.matmul`` of row-major tensors, seen by
    column-major cuBLAS as ``C^T = B^T A^T``: both operands contiguous along K
    for one of them); output column-major, as the repo's traces.
    """
    gk = system.gemm_kernel
    p = (GEMM_TILES.get(system.gpu.threads_per_wf, GEMM_TILES[32]) if gk is None else
         dict(tile_m=gk.tile_m, tile_n=gk.tile_n, tile_k=gk.tile_k, wf_grid=tuple(gk.wf_grid),
              wfs_per_wg=gk.wf_grid[0] * gk.wf_grid[1], registers_per_thread=gk.registers_per_thread,
              lds_stages=gk.lds_stages, cluster_m=gk.cluster_m, cluster_n=gk.cluster_n))
    tm, tn = tile_grid(M, N, p["tile_m"], p["tile_n"])
    lds = (p["tile_m"] + p["tile_n"]) * p["tile_k"] * DTYPE_BYTES[dtype] * p["lds_stages"]
    return KernelRecord(name=name, model="validate", sublayer="gemm", pass_="fwd", tp=1, M=M, N=N, K=K,
                        dtype=dtype, trans_a=False, trans_b=False, c_layout="col_major",
                        tile_m=p["tile_m"], tile_n=p["tile_n"], tile_k=p["tile_k"], tiles_m=tm, tiles_n=tn,
                        num_wgs=tm * tn, wfs_per_wg=p["wfs_per_wg"], wf_grid=tuple(p["wf_grid"]),
                        threads_per_wf=system.gpu.threads_per_wf, registers_per_thread=p["registers_per_thread"],
                        lds_per_wg_B=lds, wg_order={"kind": "row_major"}, role="standalone", collective=None,
                        cluster_m=p.get("cluster_m", 1), cluster_n=p.get("cluster_n", 1))


def hbm_capacity_B(hbm) -> int:
    """Bytes the address map decodes on one GPU (:attr:`t3sim.memory.address_map.DigitMap.capacity_B`)."""
    return hbm.channels * hbm.pseudo_channels * hbm.bank_groups * hbm.banks_per_group * hbm.rows * hbm.row_size_B


def footprint_B(kernel) -> int:
    """Bytes the run keeps in one GPU's HBM: A (M x K), B (K x N), C (M x N) and a receive buffer of C's size."""
    return (kernel.M * kernel.K + kernel.K * kernel.N + 2 * kernel.M * kernel.N) * DTYPE_BYTES[kernel.dtype]
