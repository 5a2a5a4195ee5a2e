"""Simulation side of ``t3sim validate``: simulate measured rows on a system config.

Each row of a measured CSV (:mod:`t3sim.analysis.validation` reads and checks
them) is simulated in isolation, the way it was measured:

* a **collective** row (``collective,gpus,size_mb,dtype,median_us``) runs the
  collective as a GPU kernel (:func:`~t3sim.collectives.gpu_run.simulate_collective_on_gpus`,
  homogeneous mode: the paper's Sec. 5.1.1 method) on ``system`` with
  ``interconnect.num_gpus = gpus``. ``size_mb`` is the whole input array on
  each GPU in **MiB** (2^20 B), as the H200 measurements define it
  for its ``torch.distributed`` benchmarks (experiments/validation/README.md);
  the simulated time is launch to the last GPU's last step, including the
  collective's start-up (``collective.latency``: software plus the library's base latency).
* a **GEMM** row (``model,sublayer,tp,M,N,K,dtype,median_us``) runs one
  ``M x K`` by ``K x N`` GEMM on one GPU's memory hierarchy with the kernel
  of :func:`t3sim.system.kernels.gemm_kernel_record` (the kernel's time includes
  ``system.gpu.kernel_launch_overhead_ns``: CUDA-event timing includes the launch), timed after a warm-up run of
  the same GEMM on the same hierarchy, as the rows were measured after warm-up calls
  (:func:`simulate_gemm_sequence`, which also runs a GEMM as row shards back to back).

Rows are independent, so ``t3sim validate`` spreads them over processes (:func:`t3sim.validation.tasks.simulate_row`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Dict, List, Tuple

from t3sim.collectives.gpu_run import simulate_collective_on_gpus
from t3sim.compute.gemm_kernel import GemmKernel
from t3sim.compute.kernel_run import GemmRun
from t3sim.compute.sinks import CachedLocalOutput
from t3sim.compute.memhier import MemoryHierarchy
from t3sim.config.loader import build
from t3sim.config.system import SystemConfig
from t3sim.config.workload import DTYPE_BYTES
from t3sim.errors import InputError
from t3sim.sim.clock import TICKS_PER_NS
from t3sim.sim.engine import Engine
from t3sim.system.kernels import gemm_kernel_record
from t3sim.workload.wg_order import wg_order

#: Bytes in the CSV's ``size_mb`` unit: MiB (2^20 B; see module doc and experiments/validation/README.md).
MIB = 1 << 20


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
    lat = sysg.collective.latency
    detail = {"startup_us": lat.startup_ns(collective) / 1e3, "library_base_us": lat.base_latency_ns(collective) / 1e3,
              "cus": float(st.value("collective.cus")),
              "cu_math_us": float(st.value("collective.cu_math_ns")[0]) / 1e3}
    return SimOutcome(run.duration_ns / 1e3, wall, detail)


def gemm_sequence_runs(system: SystemConfig, M: int, N: int, K: int, dtype: str, pieces: int = 1,
                       warm: bool = True) -> Tuple[List[GemmRun], int, float]:
    """Run the passes of :func:`simulate_gemm_sequence`: the :class:`GemmRun` of every GEMM in launch order (the
    warm-up pass first, where ``warm``), the tick the timed pass started, and the wall-clock seconds taken."""
    if pieces < 1 or M % pieces:
        raise ValueError(f"{M} rows do not split into {pieces} equal shards")
    m = M // pieces
    k = gemm_kernel_record(system, m, N, K, dtype)
    eng = Engine(seed=0)
    hier = MemoryHierarchy(eng.env, system)
    eb = DTYPE_BYTES[dtype]
    align = 2 << 20
    up = lambda x: -(-x // align) * align  # noqa: E731
    a, b = 0, up(M * K * eb)
    c = up(b + K * N * eb)
    ws = up(c + M * N * eb) if k.split_k > 1 else None  # split-K partials, reused by every shard
    sink = CachedLocalOutput(hier)
    total = (2 if warm else 1) * pieces
    runs: List[GemmRun] = []
    timed_from = [0]

    def launch(i):
        if i == total - pieces:
            timed_from[0] = eng.env.now
        gk = GemmKernel(eng, f"gpu0.gemm{i}", hier, system.gpu, k, wg_order(k), a + (i % pieces) * m * K * eb, b,
                        c + (i % pieces) * m * N * eb, sink, workspace_B=ws)
        gk.start().callbacks.append(lambda e, i=i: ended(i, e.value))

    def ended(i, run):
        runs.append(run)
        if i + 1 < total:
            launch(i + 1)
        else:
            eng.finish()

    eng.work = lambda: (len(runs) / total, f"{len(runs)}/{total} GEMMs")  # progress display only
    t0 = time.perf_counter()
    launch(0)
    eng.run()
    if len(runs) != total:
        raise RuntimeError(f"the GEMM sequence stopped after {len(runs)} of {total} GEMMs (a deadlock)")
    return runs, timed_from[0], time.perf_counter() - t0


def simulate_gemm_sequence(system: SystemConfig, M: int, N: int, K: int, dtype: str, pieces: int = 1,
                           warm: bool = True) -> SimOutcome:
    """Simulated time (us) of an ``M x K`` by ``K x N`` GEMM run as ``pieces`` GEMMs of ``M / pieces`` rows back to
    back on one stream of one GPU (``torch.matmul`` on row shards of A and C, B whole: the ``rows8``/``rows64``
    forms of ``experiments/validation/gemm_kernels/``; ``pieces = 1``: the GEMM whole).

    Each shard gets the kernel the library picks for its own shape and is launched when the previous one ends, its
    first WGs dispatching ``gpu.kernel_launch_overhead_ns`` later (a stream's next kernel); the time is the pass's,
    from its first launch to its last GEMM's end. ``warm``: the pass runs twice on the same memory hierarchy and the
    second is timed, as the measurements time their calls after warm-up calls of the same tensors -- so the L2
    holds what the previous call left in it (a small GEMM's B, say), not nothing."""
    runs, timed_from, wall = gemm_sequence_runs(system, M, N, K, dtype, pieces, warm)
    last = runs[-1]
    us = (last.end_tick - timed_from) / TICKS_PER_NS / 1e3
    flop = 2.0 * M * N * K
    peak_us = flop / (system.gpu.num_cus * system.gpu.fp16_flops_per_cycle * system.gpu.clock_GHz * 1e9) * 1e6
    return SimOutcome(us, wall, {"launch_overhead_us": system.gpu.kernel_launch_overhead_ns / 1e3,
                                 "peak_compute_us": peak_us, "wgs_per_cu": float(last.wgs_per_cu),
                                 "stages": float(last.stages), "pieces": float(pieces),
                                 "split_k": float(last.split_k), "warm": float(warm)})


def simulate_gemm_row(system: SystemConfig, M: int, N: int, K: int, dtype: str, where: str = "row") -> SimOutcome:
    """Simulated time (us) of one GEMM on one GPU, launch included (:func:`simulate_gemm_sequence` with one piece,
    after a warm-up call, as the rows were measured)."""
    return simulate_gemm_sequence(system, M, N, K, dtype)
