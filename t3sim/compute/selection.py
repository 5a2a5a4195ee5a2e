"""The one place a GEMM gets its kernel: the system's library (``system.gemm_library``) and its selection policy.

Every GEMM a run simulates -- a workload's whole GEMM, a software-decomposed chunk, a FiCCO shard or K-chunk, T3's
fused GEMM, the fused GEMM+A2A, a ``t3sim validate`` row -- is a :class:`~t3sim.workload.record.KernelRecord` passed
through :func:`retile`, which asks :func:`select` for the library kernel of its shape and writes that kernel's tile,
warps, registers, stages, cluster, split-K and MMA rate into the record (``record.kernel`` names it). A library with
no kernels leaves the workload's own kernel (its trace's tile). :func:`retile` is idempotent: a record it returned
is returned unchanged, which is how :meth:`t3sim.system.model.SystemModel.gemm` checks that a GEMM it launches was
chosen here.

Selection policies (registry category ``gemm_selection``; each a function ``(library, shape, system) -> kernels in
order of preference``, from which the first that admits the shape is taken):

* ``first_fit`` -- the kernels in library order (a one-kernel library: that kernel, when its alignment fits);
* ``measured`` -- the kernel the library ran for the nearest measured shape (``library.choices``): among the rows
  whose shape has the query's operand alignment (the largest power-of-two byte count, at most 16, dividing both
  the K and the N rows), the least ``4 |log2 M/M'| + |log2 N/N'| + |log2 K/K'|``; M weighs four times because the
  measured choices follow M (experiments/validation/gemm_kernels/README.md); ties go to the earlier row;
* ``fastest`` -- the kernels of the most specialised alignment the shape admits (fallbacks only where the aligned
  kernels cannot run), in order of :func:`estimate_ns`, an analytical time (the longest of waves of tiles at the
  kernel's MMA rate, DRAM bytes at peak bandwidth, and the operand bytes the tiles load through the L2 at its
  bandwidth): what an autotuner that times every kernel of its set picks (FLUX Sec. 4 tunes its tile this way). The
  estimate is a ranking, not the simulated time.

A kernel *admits* a shape when its ``operand_alignment_B`` divides the K and N rows in bytes (TMA's 16-byte
strides). Schemes whose GEMM epilogue carries the communication (``fused_epilogue``: T3, FLUX, the fused kernels)
take no split-K kernel: their epilogue writes each output tile once, to its destination.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional

from t3sim import registry
from t3sim.compute.occupancy import cu_flops_per_cycle, occupancy
from t3sim.config.gemm_library import GemmKernelConfig, GemmLibraryConfig
from t3sim.config.workload import DTYPE_BYTES
from t3sim.errors import InputError
from t3sim.workload.embedding import EMB
from t3sim.workload.gemv import GEMV
from t3sim.workload.record import KernelRecord, ceil_div

CATEGORY = "gemm_selection"


@dataclass(frozen=True)
class Shape:
    """One GEMM: ``M x K`` by ``K x N`` in ``dtype``; ``fused_epilogue``: no split-K (module doc)."""

    M: int
    N: int
    K: int
    dtype: str
    fused_epilogue: bool = False

    @property
    def alignment_B(self) -> int:
        """The largest power-of-two byte count (at most 16) dividing both the K and the N rows."""
        eb = DTYPE_BYTES[self.dtype]
        return math.gcd(16, self.K * eb, self.N * eb)


def admits(k: GemmKernelConfig, s: Shape) -> bool:
    """Whether kernel ``k`` can run shape ``s`` (alignment; no split-K for a fused epilogue; no more K slices
    than k-steps)."""
    if s.alignment_B % k.operand_alignment_B:
        return False
    if k.split_k > 1 and (s.fused_epilogue or k.split_k > ceil_div(s.K, k.tile_k)):
        return False
    return True


def _first_fit(lib: GemmLibraryConfig, s: Shape, system) -> List[GemmKernelConfig]:
    return list(lib.kernels)


def _measured(lib: GemmLibraryConfig, s: Shape, system) -> List[GemmKernelConfig]:
    by_name = {k.name: k for k in lib.kernels}
    lm, ln, lk = math.log2(s.M), math.log2(s.N), math.log2(s.K)
    ranked = []
    for i, (m, n, kk, name) in enumerate(lib.choices):
        same_class = Shape(m, n, kk, s.dtype).alignment_B == s.alignment_B
        d = 4 * abs(lm - math.log2(m)) + abs(ln - math.log2(n)) + abs(lk - math.log2(kk))
        ranked.append((not same_class, d, i, name))
    ranked.sort()
    seen, out = set(), []
    for *_, name in ranked:
        if name not in seen:
            seen.add(name)
            out.append(by_name[name])
    return out + [k for k in lib.kernels if k.name not in seen]


def estimate_ns(k: GemmKernelConfig, s: Shape, gpu, hbm, l2=None) -> float:
    """Analytical time of shape ``s`` on kernel ``k`` (ns; module doc): the longest of the math -- waves of WGs, each
    its whole tile over ``K / split_k`` at ``mma_rate`` of the CU's rate shared by the WGs resident on it --, the
    DRAM bytes (A, B and C once, plus a split-K workspace written and read in fp32) at ``hbm``'s peak bandwidth, and
    (given ``l2``) the operand bytes the WGs load through the L2 (each tile's A rows and B columns over its K range;
    a cluster's multicast shares them) at the L2's bandwidth (banks x bytes per bank cycle x clock)."""
    eb = DTYPE_BYTES[s.dtype]
    wgs = ceil_div(s.M, k.tile_m) * ceil_div(s.N, k.tile_n) * k.split_k
    occ = occupancy(gpu, wfs_per_wg=k.wf_grid[0] * k.wf_grid[1], registers_per_thread=k.registers_per_thread,
                    lds_per_wg_B=lds_bytes(k, s.dtype), threads_per_wf=gpu.threads_per_wf).wgs_per_cu
    resident = max(1, min(occ, ceil_div(wgs, gpu.num_cus)))
    waves = ceil_div(wgs, max(1, occ) * gpu.num_cus)
    flops = cu_flops_per_cycle(gpu, s.dtype) * k.mma_rate
    wave_cycles = 2 * k.tile_m * k.tile_n * ceil_div(s.K, k.split_k) * resident / flops  # a wave's WGs share CUs
    math_ns = waves * wave_cycles / gpu.clock_GHz
    dram_B = eb * (s.M * s.K + s.K * s.N + s.M * s.N) + (2 * 4 * s.M * s.N * k.split_k if k.split_k > 1 else 0)
    mem_ns = dram_B / hbm.peak_bandwidth_GBps
    l2_ns = 0.0
    if l2 is not None:
        tm, tn = ceil_div(s.M, k.tile_m), ceil_div(s.N, k.tile_n)
        l2_B = eb * s.K * (tm * k.tile_m * tn / k.cluster_n + tn * k.tile_n * tm / k.cluster_m)
        l2_ns = l2_B / (l2.banks * l2.bank_bandwidth_B_per_cycle * l2.clock_GHz)
    reduce_launch_ns = gpu.dependent_launch_gap if k.split_k > 1 else 0.0  # split-K's reduction kernel (splitk)
    return max(math_ns, mem_ns, l2_ns) + gpu.kernel_launch_overhead_ns + reduce_launch_ns


def _fastest(lib: GemmLibraryConfig, s: Shape, system) -> List[GemmKernelConfig]:
    """The kernels of the most specialised alignment that admits ``s`` first (a library runs its fallbacks only where
    its aligned kernels cannot run), each group by :func:`estimate_ns`."""
    order = {k.name: i for i, k in enumerate(lib.kernels)}
    best_align = max((k.operand_alignment_B for k in lib.kernels if admits(k, s)), default=0)
    g, hbm, l2 = system.gpu, system.hbm, system.l2
    return sorted(lib.kernels, key=lambda k: (k.operand_alignment_B != best_align, estimate_ns(k, s, g, hbm, l2),
                                              order[k.name]))


POLICIES: dict = {"first_fit": _first_fit, "measured": _measured, "fastest": _fastest}
for _name, _fn in POLICIES.items():
    registry.add(CATEGORY, _name, _fn)


def lds_bytes(k: GemmKernelConfig, dtype: str) -> int:
    """Shared memory of one WG of ``k``: ``(tile_m + tile_n) x tile_k x element bytes x lds_stages``."""
    return (k.tile_m + k.tile_n) * k.tile_k * DTYPE_BYTES[dtype] * k.lds_stages


def select(system, M: int, N: int, K: int, dtype: str, *, fused_epilogue: bool = False,
           autotune: bool = False) -> Optional[GemmKernelConfig]:
    """The library kernel for an ``M x K`` by ``K x N`` GEMM on ``system`` (module doc); None for an empty library
    (the workload's own kernel runs). ``autotune``: rank by :func:`estimate_ns` whatever the library's policy (an
    autotuning scheme, FLUX Sec. 4). Raises :class:`InputError` when no kernel admits the shape."""
    lib: GemmLibraryConfig = system.gemm_library
    if not lib.kernels:
        return None
    s = Shape(M, N, K, dtype, fused_epilogue)
    policy: Callable[..., Iterable[GemmKernelConfig]] = (
        _fastest if autotune else registry.get(CATEGORY, lib.selection, "system.gemm_library.selection"))
    for k in policy(lib, s, system):
        if admits(k, s):
            return k
    raise InputError("system.gemm_library.kernels",
                     f"no kernel of {lib.name or 'the library'} runs a {M} x {N} x {K} {dtype} GEMM "
                     f"(its K and N rows are {s.alignment_B}-byte aligned"
                     f"{'; split-K kernels excluded: the scheme fuses the epilogue' if fused_epilogue else ''})",
                     "a kernel whose operand_alignment_B divides the rows (e.g. an align-2 fallback kernel)")


def retile(rec: KernelRecord, system, *, fused_epilogue: bool = False, autotune: bool = False) -> KernelRecord:
    """``rec`` with the tile, warps, registers, stages, cluster, split-K, MMA rate and tile order
    (:func:`raster_order`) of the kernel :func:`select` picks for its shape; ``rec`` itself for an empty library or a record that already has them (idempotent).
    GEMV and embedding records keep their own kernels."""
    if rec.sublayer in (GEMV, EMB):
        return rec
    k = select(system, rec.M, rec.N, rec.K, rec.dtype, fused_epilogue=fused_epilogue, autotune=autotune)
    if k is None:
        return rec
    tm, tn = ceil_div(rec.M, k.tile_m), ceil_div(rec.N, k.tile_n)
    new = dataclasses.replace(
        rec, wg_order=raster_order(k, tm, tn, rec.wg_order), tile_m=k.tile_m, tile_n=k.tile_n, tile_k=k.tile_k, tiles_m=tm, tiles_n=tn, num_wgs=tm * tn,
        wfs_per_wg=k.wf_grid[0] * k.wf_grid[1], wf_grid=tuple(k.wf_grid), threads_per_wf=system.gpu.threads_per_wf,
        registers_per_thread=k.registers_per_thread, lds_per_wg_B=lds_bytes(k, rec.dtype), cluster_m=k.cluster_m,
        cluster_n=k.cluster_n, kernel=k.name, split_k=k.split_k, mma_rate=k.mma_rate)
    return rec if new == rec else new


def raster_order(k: GemmKernelConfig, tiles_m: int, tiles_n: int, order: dict) -> dict:
    """The WG order of a GEMM on kernel ``k`` (``tiles_m x tiles_n`` tiles): the record's ``order`` unless it is a
    row- or column-major one the kernel's ``raster`` decides (the kernel, not the workload, orders its tiles): along_n
    row-major, along_m column-major, heuristic column-major when there are more tile columns than rows in whole
    clusters (CUTLASS's sm90 persistent scheduler, ``get_rasterization_order``), else row-major."""
    if order.get("kind") not in ("row_major", "column_major"):
        return order
    along_m = k.raster == "along_m" or (
        k.raster == "heuristic" and ceil_div(tiles_n, k.cluster_n) * k.cluster_n > ceil_div(tiles_m, k.cluster_m) * k.cluster_m)
    return {"kind": "column_major" if along_m else "row_major"}


def check_selected(rec: KernelRecord, system, *, fused_epilogue: bool = False, autotune: bool = False) -> None:
    """Raise ``RuntimeError`` unless ``rec`` carries the kernel :func:`retile` picks for its shape: a GEMM built any
    other way (module doc)."""
    if retile(rec, system, fused_epilogue=fused_epilogue, autotune=autotune) is not rec:
        raise RuntimeError(f"GEMM {rec.name} ({rec.M} x {rec.N} x {rec.K}) runs kernel {rec.kernel or rec.tile_m}x"
                           f"{rec.tile_n} that t3sim.compute.selection.retile did not pick for its shape")
