"""Per-CU occupancy, GEMM stages and per-WG compute time (pure functions, no simpy).

Occupancy follows the CUDA occupancy rules for the Table 1 (Volta-class) GPU;
every resource gives the number of WGs it alone allows on one CU and the
minimum wins:

* ``threads``   -- ``max_threads_per_cu // (wfs_per_wg * threads_per_wf)``;
* ``registers`` -- registers are allocated per WF in multiples of
  ``register_alloc_unit_per_wf`` (256 on sm_70, CUDA Occupancy Calculator);
  a CU has ``register_file_size_KiB * 1024 / 4`` 32-bit registers;
* ``lds``       -- LDS per WG is rounded up to ``lds_alloc_unit_B``; the WGs
  must fit in the largest usable LDS carve-out (see below);
* ``wg_slots``  -- the hardware cap ``max_wgs_per_cu``.

**Unified LDS + L1 split.** Table 1's "128KB unified LDS + L1 cache" is one
array per CU that the driver carves into LDS (shared memory) and L1 cache, as
on Volta: the carve-out is one of ``GPUConfig.lds_carveouts`` (0, 8, 16, 32,
64, 96 KiB on sm_70, CUDA C++ Programming Guide, compute capability 7.0) and
the rest of ``lds_l1_size_KiB`` is L1. The LDS limit is therefore the largest
usable carve-out (96 KiB, not 128 KiB), and the chosen carve-out is the
smallest one holding the resident WGs' LDS, so LDS use reduces L1 capacity
(:attr:`Occupancy.l1_capacity_B`). Carve-outs larger than ``lds_l1_size_KiB``
are unusable (a config with a separate, smaller LDS such as MI210's just
lists the usable sizes).

Paper check (Sec. 2.5, Table 1): a 128x128x32 fp16 tile with 256 threads,
128 registers/thread and 32 KiB LDS gives ``threads``: 8, ``registers``: 2,
``lds``: 3, ``wg_slots``: 32 -> 2 WGs/CU (register-limited) -> 160 WGs per
stage on 80 CUs; the LDS carve-out is 64 KiB, leaving 64 KiB of L1.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, Optional, Tuple

from t3sim.config.gpu import GPUConfig

#: Bytes per (vector) register: registers are 32-bit (task spec, CUDA/ROCm).
REGISTER_B = 4

#: Order in which resources are reported and ties broken (first listed wins a tie).
RESOURCES = ("registers", "lds", "threads", "wg_slots")


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for integers ``a >= 0``, ``b > 0``."""
    return -(-a // b)


@dataclass(frozen=True)
class Occupancy:
    """Resident WGs of one kernel per CU and why.

    Attributes:
        wgs_per_cu: WGs resident on one CU at once (>= 1), in WGs.
        limiter: the resource that sets ``wgs_per_cu`` (one of :data:`RESOURCES`;
            ties go to the first in that order).
        limits: resource -> WGs per CU that resource alone allows, in WGs.
        regs_per_wg: 32-bit registers allocated per WG (after rounding), in registers.
        lds_per_wg_B: LDS allocated per WG (after rounding), in B.
        lds_carveout_B: LDS carve-out needed by ``wgs_per_cu`` WGs, in B.
        l1_capacity_B: what the unified LDS+L1 array leaves for L1, in B.
    """

    wgs_per_cu: int
    limiter: str
    limits: Tuple[Tuple[str, int], ...]
    regs_per_wg: int
    lds_per_wg_B: int
    lds_carveout_B: int
    l1_capacity_B: int

    @property
    def limits_dict(self) -> Dict[str, int]:
        return dict(self.limits)

    def stage_wgs(self, num_cus: int) -> int:
        """WGs in one stage: ``wgs_per_cu * num_cus`` (paper Sec. 2.5)."""
        if num_cus < 1:
            raise ValueError(f"num_cus must be >= 1, got {num_cus}")
        return self.wgs_per_cu * num_cus


def occupancy(
    gpu: GPUConfig,
    *,
    wfs_per_wg: int,
    registers_per_thread: int,
    lds_per_wg_B: int,
    threads_per_wf: Optional[int] = None,
) -> Occupancy:
    """How many WGs of a kernel fit on one CU of ``gpu``, and which resource limits.

    Args:
        gpu: the GPU (Table 1 defaults).
        wfs_per_wg: wavefronts per WG.
        registers_per_thread: 32-bit registers per thread (1 ..
            ``gpu.max_registers_per_thread``).
        lds_per_wg_B: LDS bytes a WG allocates (>= 0).
        threads_per_wf: threads per WF (default ``gpu.threads_per_wf``).

    Returns:
        :class:`Occupancy`.

    Raises:
        ValueError: bad arguments, or not even one WG fits (message names the
            resource).
    """
    tpw = gpu.threads_per_wf if threads_per_wf is None else threads_per_wf
    if wfs_per_wg < 1 or tpw < 1:
        raise ValueError(f"wfs_per_wg and threads_per_wf must be >= 1, got {wfs_per_wg}, {tpw}")
    if not 1 <= registers_per_thread <= gpu.max_registers_per_thread:
        raise ValueError(f"registers_per_thread must be in 1..{gpu.max_registers_per_thread} "
                         f"(system.gpu.max_registers_per_thread), got {registers_per_thread}")
    if lds_per_wg_B < 0:
        raise ValueError(f"lds_per_wg_B must be >= 0, got {lds_per_wg_B}")

    threads_per_wg = wfs_per_wg * tpw
    unit = gpu.register_alloc_unit_per_wf
    regs_per_wf = ceil_div(registers_per_thread * tpw, unit) * unit
    regs_per_wg = regs_per_wf * wfs_per_wg
    regs_per_cu = gpu.register_file_size_KiB * 1024 // REGISTER_B

    usable = [c * 1024 for c in gpu.lds_carveouts if c <= gpu.lds_l1_size_KiB]
    lds_max_B = usable[-1] if usable else 0
    lds_wg_B = ceil_div(lds_per_wg_B, gpu.lds_alloc_unit_B) * gpu.lds_alloc_unit_B

    limits = {
        "registers": regs_per_cu // regs_per_wg,
        "lds": lds_max_B // lds_wg_B if lds_wg_B else gpu.max_wgs_per_cu,
        "threads": gpu.max_threads_per_cu // threads_per_wg,
        "wg_slots": gpu.max_wgs_per_cu,
    }
    # a WG without LDS is not LDS-limited: its reported LDS limit is the slot cap
    candidates = [r for r in RESOURCES if not (r == "lds" and lds_wg_B == 0)]
    limiter = min(candidates, key=lambda r: (limits[r], RESOURCES.index(r)))
    n = limits[limiter]
    if n < 1:
        raise ValueError(
            f"a WG does not fit on one CU: limited by {limiter} "
            f"(threads/WG={threads_per_wg}, regs/WG={regs_per_wg} of {regs_per_cu}, "
            f"LDS/WG={lds_wg_B} B of {lds_max_B} B)")
    need = n * lds_wg_B
    carve = next(c for c in usable if c >= need) if usable else 0
    return Occupancy(
        wgs_per_cu=n,
        limiter=limiter,
        limits=tuple((r, limits[r]) for r in RESOURCES),
        regs_per_wg=regs_per_wg,
        lds_per_wg_B=lds_wg_B,
        lds_carveout_B=carve,
        l1_capacity_B=gpu.lds_l1_size_KiB * 1024 - carve,
    )


def stage_size(occ: Occupancy, num_cus: int) -> int:
    """WGs per stage = WGs per CU x CUs (paper Sec. 2.5: "a stage is a set of WGs that the CUs can accommodate")."""
    return occ.stage_wgs(num_cus)


def num_stages(num_wgs: int, stage_wgs: int) -> int:
    """Stages of a kernel: ``ceil(num_wgs / stage_wgs)``; the last stage may be partial."""
    if num_wgs < 0 or stage_wgs < 1:
        raise ValueError(f"need num_wgs >= 0 and stage_wgs >= 1, got {num_wgs}, {stage_wgs}")
    return ceil_div(num_wgs, stage_wgs)


def stage_of_wg(wg_index: int, stage_wgs: int) -> int:
    """Stage of the WG dispatched at position ``wg_index`` (0-based) under
    stage-synchronous dispatch: WGs ``[s*stage_wgs, (s+1)*stage_wgs)`` form stage ``s``."""
    if wg_index < 0 or stage_wgs < 1:
        raise ValueError(f"need wg_index >= 0 and stage_wgs >= 1, got {wg_index}, {stage_wgs}")
    return wg_index // stage_wgs


# ------------------------------------------------------------------ compute time

#: dtype -> GPUConfig field holding that dtype's per-CU FLOPs per cycle.
#: bf16 uses the fp16 tensor rate (assumption: GPUs with bf16 tensor cores,
#: e.g. A100/H100/MI210, run bf16 and fp16 MMAs at the same rate; the Table 1
#: Volta GPU has no bf16, so a bf16 run on it is an approximation). fp8 has no
#: rate field and is rejected.
FLOPS_FIELD = {"fp16": "fp16_flops_per_cycle", "bf16": "fp16_flops_per_cycle", "fp32": "fp32_flops_per_cycle"}


def cu_flops_per_cycle(gpu: GPUConfig, dtype: str) -> int:
    """Peak FLOPs per CU cycle for ``dtype`` (paper Sec. 5.2: GEMMs are fp16)."""
    try:
        return int(getattr(gpu, FLOPS_FIELD[dtype]))
    except KeyError:
        raise ValueError(f"no compute rate for dtype {dtype!r}; known: {', '.join(FLOPS_FIELD)}") from None


def wg_compute_cycles(tile_m: int, tile_n: int, k: int, flops_per_cycle: int, wgs_sharing_cu: int = 1,
                      mma_rate: float = 1.0) -> int:
    """CU cycles one WG needs for the math of a ``tile_m x tile_n`` output tile over depth ``k``.

    ``cycles = ceil(2 * tile_m * tile_n * k / (flops_per_cycle * mma_rate / wgs_sharing_cu))``,
    computed exactly in integers as ``ceil(2*tile_m*tile_n*k*wgs_sharing_cu*q / (flops_per_cycle*p))`` where
    ``p / q`` is ``mma_rate`` as an exact fraction (the float's binary value, :class:`fractions.Fraction`): with
    ``mma_rate = 1`` this is ``ceil(2*tile_m*tile_n*k*wgs_sharing_cu / flops_per_cycle)``.

    One multiply-add is 2 FLOPs. The CU's math throughput ``flops_per_cycle``
    (e.g. :func:`cu_flops_per_cycle`) is shared equally by the
    ``wgs_sharing_cu`` WGs resident on the CU at once (<= ``wgs_per_cu``), so a
    WG's math takes proportionally longer when it has company; the CU's
    aggregate rate stays at ``flops_per_cycle``. Pass the full ``tile_m`` /
    ``tile_n`` also for partial edge tiles: the MMA instructions execute on the
    whole tile and predication only masks memory accesses (CUTLASS
    ``PredicatedTileIterator``). This is pure math time at peak rate; memory
    stalls are the simulator's job.

    Args:
        tile_m, tile_n: output tile, in elements.
        k: reduction depth covered (``K`` for the whole WG, ``tile_k`` for one
            main-loop step), in elements.
        flops_per_cycle: CU FLOPs per cycle, in FLOP/cycle.
        wgs_sharing_cu: WGs sharing the CU's math units.
        mma_rate: fraction (0, 1] of ``flops_per_cycle`` the kernel's MMA instructions reach (the kernel record's
            ``mma_rate``: below 1 e.g. an sm80 ``mma.sync`` kernel on an sm90 SM).

    Returns:
        cycles, in CU cycles (0 iff ``k == 0``).
    """
    if min(tile_m, tile_n, flops_per_cycle, wgs_sharing_cu) < 1 or k < 0 or not 0 < mma_rate <= 1:
        raise ValueError(f"bad compute-time arguments: tile {tile_m}x{tile_n}, k={k}, "
                         f"flops/cycle={flops_per_cycle}, sharing={wgs_sharing_cu}, mma_rate={mma_rate}")
    if mma_rate == 1:
        return ceil_div(2 * tile_m * tile_n * k * wgs_sharing_cu, flops_per_cycle)
    r = Fraction(mma_rate)
    return ceil_div(2 * tile_m * tile_n * k * wgs_sharing_cu * r.denominator, flops_per_cycle * r.numerator)


def k_step_compute_cycles(tile_m: int, tile_n: int, tile_k: int, K: int, step: int,
                          flops_per_cycle: int, wgs_sharing_cu: int = 1, mma_rate: float = 1.0) -> int:
    """Cycles of main-loop step ``step`` (0-based) of a WG: the last step covers
    only ``K - step * tile_k`` when ``tile_k`` does not divide ``K``. Summing
    all ``ceil(K / tile_k)`` steps gives at least :func:`wg_compute_cycles`
    over ``K`` (per-step ceilings can add at most one cycle per step). ``mma_rate``: as
    :func:`wg_compute_cycles`."""
    steps = ceil_div(K, tile_k)
    if not 0 <= step < steps:
        raise IndexError(f"k-step {step} out of range 0..{steps - 1}")
    depth = min(tile_k, K - step * tile_k)
    return wg_compute_cycles(tile_m, tile_n, depth, flops_per_cycle, wgs_sharing_cu, mma_rate)
