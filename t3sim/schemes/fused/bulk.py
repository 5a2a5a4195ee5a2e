"""What the bulk-synchronous baselines of the fused kernels (``gemv_ar``, ``emb_a2a``, ``gemm_a2a``; fused-collective
paper Sec. IV-A) share: the compute kernel, then, on the same stream, the library's CU-driven collective of its
output (:meth:`~t3sim.system.model.SystemModel.collective`; its CTAs take CUs through the GPU's dispatcher). Phases:
``gemm`` the compute kernel, ``rs`` the whole collective kernel. The collective kernels move timing only, so
functional data is refused (the fused schemes have the functional path)."""

from __future__ import annotations

from typing import Callable

from t3sim.errors import InputError
from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, boundary, run_program


def run_bulk(model, compute: str, launch: Callable, collective: str, comm: str, fused: str) -> ProgramRun:
    """Run the compute kernel ``compute`` (``launch()`` starts it on every simulated GPU and returns its end event),
    the kernel boundary, then collective ``collective`` (plan name; kernel ``comm``) on ``model``. ``fused``: the
    fused scheme the functional-data error points to."""
    if model.exp.simulation.functional_data:
        raise InputError("simulation.functional_data", f"true with scheme.kind={model.exp.scheme.kind}, whose "
                         "collective kernel moves no data values", f"false, or scheme.kind={fused}")
    p = Program()
    p.add("main", Kernel(compute, "gemm", "gemm", launch, on_end=boundary(model)))
    p.add("main", Kernel(comm, "collective", "rs", lambda: model.collective(collective).done, comm=True))
    return run_program(model, p)
