"""``gemv_ar``: the library baseline of GEMV + AllReduce (fused-collective paper, Sec. IV-A).

Bulk-synchronous, as the paper's baseline ("bulk-synchronous execution of computation and communication kernels",
"blit kernel-based collectives for intra-node ... from RCCL"): the GEMV kernel (:func:`~t3sim.compute.gemv_kernel.bulk_gemv`:
one WG per tile of output rows, every tile stored into the GPU's own ``y``), then, on the same stream, one CU-driven
all-reduce collective kernel over ``y`` (:meth:`~t3sim.system.model.SystemModel.collective`, the system's
``collective.algorithm``: on the fully connected ``mi210-4gpu-fc`` preset the direct algorithm, reduce-scatter then
all-gather in one kernel; its CTAs take CUs through the GPU's dispatcher).

Phases: ``gemm`` is the GEMV kernel, ``rs`` the whole all-reduce kernel (both of its steps; ``ag`` is 0), so
``total`` is the operator's time. Statistics ``gemv.*``: the GEMV's tiles, WGs per CU, FLOPs and load bytes.

Functional data is not supported: the collective kernels move timing only (their plans are checked functionally by
:mod:`t3sim.collectives.verify`); ``fused_gemv_ar`` has the functional path.

This module also holds what the GEMV schemes share: :func:`gemv_geometry` and :func:`launch_bulk_gemv`.
"""

from __future__ import annotations

from t3sim.compute.gemv_kernel import GemvGeometry, bulk_gemv
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.schemes.fused.bulk import run_bulk
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.runtime.program import ProgramRun
from t3sim.workload.gemv import is_gemv


def gemv_geometry(model) -> GemvGeometry:
    """The GEMV of ``model``'s workload (``workload.gemv``): W, x and y at the model's A, B and C addresses."""
    if not is_gemv(model.kernel):
        raise InputError("workload", f"{model.kernel.name} (not a GEMV) with scheme.kind={model.exp.scheme.kind}",
                         "workload.gemv")
    return GemvGeometry.of(model.kernel, model.a_base, model.b_base, model.c_base)


def gemv_stats(model, geom: GemvGeometry, prefix: str = "gemv") -> Stats:
    """The GEMV's shape statistics (per GPU)."""
    s = Stats()
    s.add(f"{prefix}.tiles", geom.tiles, "count", "output tiles (logical WGs) of the GEMV on one GPU")
    s.add(f"{prefix}.flops", 2 * geom.M * geom.K, "FLOP", "multiply-add FLOPs of one GPU's GEMV (2 M K/tp)")
    s.add(f"{prefix}.w_B", geom.M * geom.K * geom.elem_B, "B", "bytes of one GPU's slice of W")
    return s


def launch_bulk_gemv(model, name: str = "gemv"):
    """Launch the library GEMV on every simulated GPU (tiles in order); the event fires when all ended."""
    geom = gemv_geometry(model)
    events = []
    steps = model.exp.workload.gemv.steps_in_flight
    for g in model.sim_gpus:
        k = bulk_gemv(model.engine, f"gpu{g}.{name}", model.hiers[g], model.system.gpu, model.kernel, geom,
                      range(geom.tiles), model.dispatchers[g], steps_in_flight=steps)
        k.wg_spans = [] if model.trace else None
        model.gemm_kernels.append(k)  # timelines and the progress meter see it as the run's compute kernel
        events.append(k.start())
    return events[0] if len(events) == 1 else model.env.all_of(events)


def run_gemv_ar(model) -> ProgramRun:
    """Run the baseline on ``model`` (module doc): the GEMV, then the all-reduce of its output, on one stream."""
    geom = gemv_geometry(model)
    model.add_stats(lambda: gemv_stats(model, geom))
    return run_bulk(model, "gemv", lambda: launch_bulk_gemv(model), "all_reduce", "allreduce", "fused_gemv_ar")


register_simulation("gemv_ar", run_gemv_ar)
register_scheme(Scheme("gemv_ar", "GEMV kernel, then the library's CU-driven all-reduce of its output (bulk-synchronous "
                       "baseline of the fused GEMV+AllReduce)", label="GEMV+AllReduce (RCCL)", color="#8c564b",
                       paper_section="fused-collective paper Sec. IV-A", simulation="gemv_ar", workloads=("gemv",)))
