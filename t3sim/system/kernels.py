"""Which GEMM kernel runs: a configuration's GEMM as a kernel record, given its kernel by the system's library.

* :func:`point_kernel` -- the kernel an experiment point runs: its workload's GEMM, GEMV or embedding kernel, the
  GEMM given the library kernel that :func:`t3sim.compute.selection.retile` picks for its shape and the scheme (a
  fused epilogue takes no split-K; an autotuning scheme the fastest estimate). The system model, the sampling plan,
  the pre-run checks and the progress meter all take the kernel from here, through the resolved point
  (:func:`t3sim.system.core.resolve`).
* :func:`gemm_kernel_record` -- the kernel of a measured ``M x K`` by ``K x N`` GEMM on a system (``t3sim
  validate``'s GEMM, overlap and contention rows): the library's pick, else the :data:`GEMM_TILES` shape of the
  GPU family (a system whose library has no kernels).

Also the sizes the pre-run checks compare: a kernel's HBM footprint and one GPU's HBM capacity (bytes).
"""

from __future__ import annotations

from typing import Dict

from t3sim.compute.selection import retile
from t3sim.config.experiment import ExperimentConfig
from t3sim.config.system import SystemConfig
from t3sim.config.workload import DTYPE_BYTES
from t3sim.schemes.runtime.base import scheme_for
from t3sim.workload.gemm import tile_grid
from t3sim.workload.generate import system_kernel
from t3sim.workload.record import KernelRecord

#: GEMM kernel shape per GPU family, keyed by ``gpu.threads_per_wf`` (32: NVIDIA, 64: AMD), for measured GEMM rows
#: on a system whose library has no kernels (its experiments run their traces' kernels).
#: NVIDIA: the cuBLAS sm90 bf16 kernel of the large Mega-GPT-2 GEMMs (nvjet_sm90_tst_256x128_64x4_1x2: a 128 x 256
#: tile of torch's M x N, 64-deep K slice, two consumer warpgroups = 8 warps with 240 registers (CUTLASS sm90
#: warp-specialized kernels raise consumer warps to 240 with setmaxnreg), 4 smem stages = 192 KiB -> 1 CTA per SM).
#: AMD (MI210, rocBLAS/Tensile MT128x128x32 with 256 threads): as the Table 1 default tile.
GEMM_TILES: Dict[int, Dict[str, object]] = {
    32: dict(tile_m=128, tile_n=256, tile_k=64, wf_grid=(2, 4), wfs_per_wg=8, registers_per_thread=240,
             lds_stages=4),
    64: dict(tile_m=128, tile_n=128, tile_k=32, wf_grid=(2, 2), wfs_per_wg=4, registers_per_thread=128,
             lds_stages=2),
}


def point_kernel(exp: ExperimentConfig) -> KernelRecord:
    """The kernel the resolved point ``exp`` runs on its system (module doc). Raises
    :class:`~t3sim.errors.InputError` for a workload whose kernel cannot be made (e.g. a trace without it) or a
    shape no library kernel runs."""
    s = scheme_for(exp.scheme.kind)
    return retile(system_kernel(exp.workload, exp.system), exp.system, fused_epilogue=s.fused_epilogue,
                  autotune=s.autotune)


def gemm_kernel_record(system: SystemConfig, M: int, N: int, K: int, dtype: str, name: str = "gemm") -> KernelRecord:
    """The kernel record of an ``M x K`` by ``K x N`` GEMM on ``system`` (module doc).

    Both inputs non-transposed (``torch.matmul`` of row-major tensors, seen by
    column-major cuBLAS as ``C^T = B^T A^T``: both operands contiguous along K
    for one of them); output column-major, as the repo's traces.
    """
    p = GEMM_TILES.get(system.gpu.threads_per_wf, GEMM_TILES[32])
    tm, tn = tile_grid(M, N, p["tile_m"], p["tile_n"])
    lds = (p["tile_m"] + p["tile_n"]) * p["tile_k"] * DTYPE_BYTES[dtype] * p["lds_stages"]
    rec = KernelRecord(name=name, model="validate", sublayer="gemm", pass_="fwd", tp=1, M=M, N=N, K=K,
                       dtype=dtype, trans_a=False, trans_b=False, c_layout="col_major",
                       tile_m=p["tile_m"], tile_n=p["tile_n"], tile_k=p["tile_k"], tiles_m=tm, tiles_n=tn,
                       num_wgs=tm * tn, wfs_per_wg=p["wfs_per_wg"], wf_grid=tuple(p["wf_grid"]),
                       threads_per_wf=system.gpu.threads_per_wf, registers_per_thread=p["registers_per_thread"],
                       lds_per_wg_B=lds, wg_order={"kind": "row_major"}, role="standalone", collective=None)
    return retile(rec, system)


def hbm_capacity_B(hbm) -> int:
    """Bytes the address map decodes on one GPU (:attr:`t3sim.memory.address_map.DigitMap.capacity_B`)."""
    return hbm.channels * hbm.pseudo_channels * hbm.bank_groups * hbm.banks_per_group * hbm.rows * hbm.row_size_B


def footprint_B(kernel) -> int:
    """Bytes the run keeps in one GPU's HBM: A (M x K), B (K x N), C (M x N) and a receive buffer of C's size."""
    return (kernel.M * kernel.K + kernel.K * kernel.N + 2 * kernel.M * kernel.N) * DTYPE_BYTES[kernel.dtype]
