"""``gemm_a2a``: the library baseline of the MoE GEMM + All-to-All combine (fused-collective paper Secs. II-A, IV-A).

Bulk-synchronous: the expert GEMM (``workload.gemm`` with ``direction: gemm_a2a``: ``M/tp x N x K`` per GPU, one
expert per GPU, its ``M/tp`` routed rows ``M/tp^2`` from each GPU under top-k routing with equal load; C row-major,
so the rows that go back to GPU ``d`` are one contiguous block of C), then, on the same stream, the library's
CU-driven all-to-all of C (:meth:`~t3sim.system.model.SystemModel.collective`, plan ``all_to_all``: block ``d`` to
GPU ``d``). Phases: ``gemm`` the GEMM, ``rs`` the all-to-all kernel.
"""

from __future__ import annotations

from t3sim.schemes.fused.bulk import run_bulk
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.runtime.program import ProgramRun


def run_gemm_a2a(model) -> ProgramRun:
    return run_bulk(model, "gemm", lambda: model.gemm(), "all_to_all", "alltoall", "fused_gemm_a2a")


register_simulation("gemm_a2a", run_gemm_a2a)
register_scheme(Scheme("gemm_a2a", "expert GEMM, then the library's CU-driven all-to-all of its output rows back to "
                       "their tokens' GPUs (bulk-synchronous baseline of the fused GEMM+All-to-All, MoE combine)",
                       label="GEMM+All-to-All (RCCL)", color="#17becf", paper_section="fused-collective paper Sec. IV-A",
                       simulation="gemm_a2a", workloads=("gemm",), directions=("gemm_a2a",)))
