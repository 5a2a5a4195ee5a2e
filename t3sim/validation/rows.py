"""Simulation side of ``t3sim validate``: simulate measured rows on a system config (issue 4).

Each row of a measured CSV (:mod:`t3sim.analysis.validation` reads and checks
them) is simulated in isolation, the way it was measured:

* a **collective** row (``collective,gpus,size_mb,dtype,median_us``) runs the
  collective as a GPU kernel (:func:`~t3sim.collectives.gpu_run.simulate_collective_on_gpus`,
  homogeneous mode: the paper's Sec. 5.1.1 method) on ``system`` with
  ``interconnect.num_gpus = gpus``. ``size_mb`` is the whole input array on
  each GPU in **MiB** (2^20 B), as ``../shared/reference/h200/README.md`` defines it
  for its ``torch.distributed`` benchmarks (experiments/validation/README.md);
  the simulated time is launch to the last GPU's last step, including
  ``collective.launch_overhead_ns``.
* a **GEMM** row (``model,sublayer,tp,M,N,K,dtype,median_us``) runs one
  ``M x K`` by ``K x N`` GEMM on one GPU's memory hierarchy with the kernel
  shape of :data:`GEMM_TILES` (the kernel's time includes
  ``system.gpu.kernel_launch_overhead_ns``: CUDA-event timing includes the launch).

Rows are independent, so ``t3sim validate`` spreads :func:`simulate_row` over processes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Dict, Optional

from t3sim.collectives.gpu_run import simulate_collective_on_gpus
from t3sim.compute.gemm_kernel import CachedLocalOutput, GemmKernel
from t3sim.compute.memhier import MemoryHierarchy
from t3sim.config.loader import build
from t3sim.config.system import SystemConfig
from t3sim.config.workload import DTYPE_BYTES
from t3sim.errors import InputError
from t3sim.sim.clock import TICKS_PER_NS
from t3sim.sim.engine import Engine
from t3sim.workload.gemm import tile_grid
from t3sim.workload.trace import KernelRecord
from t3sim.workload.wg_order import row_major

#: Bytes in the CSV's ``size_mb`` unit: MiB (2^20 B; see module doc and shared/reference/h200/README.md).
MIB = 1 << 20

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


@dataclass(frozen=True)
class SimOutcome:
    """One simulated row: simulated time (us), wall-clock seconds and notes (what dominated)."""

    sim_us: float
    wall_s: float
    detail: Dict[str, float]


def system_for_gpus(system: SystemConfig, gpus: int, where: str) -> SystemConfig:
    """``system`` with ``interconnect.num_gpus = gpus``; :class:`InputError` at ``where`` if it does not fit."""
    data = system.model_dump(mode="python")
    data["interconnect"]["num_gpus"] = gpus
    try:
        return build(SystemConfig, data, {}, where)
    except InputError as exc:
        raise InputError(where, f"gpus={gpus} does not fit system {system.name!r}: {exc.found}") from None


def simulate_collective_row(system: SystemConfig, collective: str, gpus: int, size_mb: float, dtype: str,
                            where: str = "row") -> SimOutcome:
    """Simulated time of one collective row (module doc); ``size_mb`` in MiB per GPU."""
    return simulate_collective_elems(system, collective, gpus, int(round(size_mb * MIB / DTYPE_BYTES[dtype])), dtype,
                                     where)


def simulate_collective_elems(system: SystemConfig, collective: str, gpus: int, elems: int, dtype: str,
                              where: str = "row") -> SimOutcome:
    """Simulated time of ``collective`` over ``elems`` elements of ``dtype`` per GPU on ``gpus`` GPUs."""
    sysg = system_for_gpus(system, gpus, where)
    eb = DTYPE_BYTES[dtype]
    t0 = time.perf_counter()
    run, st = simulate_collective_on_gpus(sysg, collective, elems, eb)
    wall = time.perf_counter() - t0
    detail = {"launch_overhead_us": sysg.collective.launch_overhead_ns / 1e3,
              "cus": float(st.value("collective.cus")),
              "cu_math_us": float(st.value("collective.cu_math_ns")[0]) / 1e3}
    return SimOutcome(run.duration_ns / 1e3, wall, detail)


def gemm_kernel_record(system: SystemConfig, M: int, N: int, K: int, dtype: str, name: str = "gemm") -> KernelRecord:
    """The kernel record of an ``M x K`` by ``K x N`` GEMM with ``system.gemm_kernel`` (the kernel experiments
    on the system run, :func:`t3sim.workload.generate.system_kernel`), or the :data:`GEMM_TILES` shape of its
    GPU family when the system names none.

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


def simulate_gemm_row(system: SystemConfig, M: int, N: int, K: int, dtype: str, where: str = "row") -> SimOutcome:
    """Simulated time (us) of one GEMM on one GPU, including the kernel launch overhead (GemmKernel applies it)."""
    k = gemm_kernel_record(system, M, N, K, dtype)
    eng = Engine(seed=0)
    hier = MemoryHierarchy(eng.env, system)
    eb = DTYPE_BYTES[dtype]
    align = 2 << 20
    up = lambda x: -(-x // align) * align  # noqa: E731
    a, b = 0, up(M * K * eb)
    c = up(b + K * N * eb)
    gk = GemmKernel(eng, "gpu0.gemm", hier, system.gpu, k, row_major(k.tiles_m, k.tiles_n), a, b, c, CachedLocalOutput(hier))
    eng.work = lambda: (gk.progress / k.num_wgs, f"{gk.progress}/{k.num_wgs} WGs")  # progress display only
    t0 = time.perf_counter()
    done = gk.start()
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    wall = time.perf_counter() - t0
    run = done.value
    kernel_us = run.duration_ticks / TICKS_PER_NS / 1e3
    launch_us = system.gpu.kernel_launch_overhead_ns / 1e3
    flop = 2.0 * M * N * K
    peak_us = flop / (system.gpu.num_cus * system.gpu.fp16_flops_per_cycle * system.gpu.clock_GHz * 1e9) * 1e6
    detail = {"kernel_us": kernel_us, "launch_overhead_us": launch_us, "peak_compute_us": peak_us,
              "wgs_per_cu": float(run.wgs_per_cu), "stages": float(run.stages)}
    return SimOutcome(kernel_us, wall, detail)


def simulate_row(task) -> SimOutcome:
    """One measured row, ``task = (kind, system, fields, where)`` (module-level, so worker processes can run
    it): a collective, a GEMM, or an overlap column (:mod:`t3sim.system.validate_overlap`)."""
    kind, system, row, where = task
    if kind == "overlap":
        from t3sim.system.validate_overlap import simulate_overlap_row

        return simulate_overlap_row(system, row, where)
    if kind == "collective":
        return simulate_collective_row(system, row["collective"], row["gpus"], row["size_mb"], row["dtype"], where)
    return simulate_gemm_row(system, row["M"], row["N"], row["K"], row["dtype"], where)


def row_cost(kind: str, f: dict) -> float:
    """A row's weight for scheduling (largest first) and progress: its bytes (collective) or FLOPs (GEMM; an
    overlap program -- GEMM and collective on 4 GPUs -- counts as three GEMMs)."""
    if kind == "collective":
        return float(f["size_mb"]) * MIB
    from t3sim.system.validate_overlap import PROGRAMS

    scale = 3 if f.get("what") in PROGRAMS else 1
    return 2.0 * f["M"] * f["N"] * f["K"] * scale


def default_jobs(n_rows: int, cpus: Optional[int] = None) -> int:
    """Processes to use for ``n_rows`` rows: at most the CPUs this process may use."""
    from t3sim.exec.executors import default_jobs as usable_cpus

    return max(1, min(n_rows, cpus or usable_cpus()))
