"""Sequential (the baseline) and the two ideal configurations (paper Sec. 5.3).

Sequential: the sliced GEMM, then the reduce-scatter, then the all-gather,
each a separate kernel using all CUs (collectives as RCCL-style GPU kernels),
one stream: :func:`sequential_program`, the simulation ``sequential/baseline``.

Ideal-GEMM-RS-Overlap: ``max(GEMM, RS) + AG`` from the isolated kernel times
(:func:`compose_ideal`). The kernels of a Sequential run execute one at a
time, so its phase times are the isolated times, and the ideal scheme needs no
simulation of its own: it composes the phases of the very same
``sequential/baseline`` simulation that Sequential reports, which a sweep runs
once for both (:mod:`t3sim.schemes.runtime.base`). Ideal-RS+NMC: the same composition
of a Sequential run whose RS reductions use near-memory op-and-store (Fig.
10(b)), the simulation ``sequential/nmc``.
"""

from __future__ import annotations

from typing import Optional

from functools import partial

from t3sim.schemes.runtime.program import Kernel, Phases, Program, ProgramRun, boundary, run_program
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation


def sequential_program(model, rs_variant: str = "baseline", with_ag: Optional[bool] = None) -> Program:
    """GEMM -> RS -> AG back to back on one stream (``with_ag=False``: GEMM -> RS, as measured in
    experiments/validation/overlap_4gpu.csv)."""
    p = Program()
    p.add("main", Kernel("gemm", "gemm", "gemm", model.gemm, on_end=boundary(model)))
    p.add("main", Kernel("rs", "collective", "rs", lambda: model.collective("reduce_scatter", variant=rs_variant).done,
                         comm=True))
    if model.with_ag if with_ag is None else with_ag:
        p.add("main", Kernel("ag", "collective", "ag", lambda: model.collective("all_gather").done, comm=True))
    return p


def ag_gemm_program(model) -> Program:
    """``workload.direction=ag_gemm``: the all-gather of the GEMM's input A (each GPU holds its 1/N of A's
    rows), then the GEMM, back to back on one stream. ``a2a_gemm``: the all-to-all that brings the expert
    GEMM's M rows of A, M/N from each GPU (each GPU's own M rows of routed tokens, block ``p`` for GPU
    ``p``; the collective's ``all_to_all`` plan), then the GEMM; its phase is ``ag`` too (the input's
    collective)."""
    k = model.kernel
    coll = "all_to_all" if model.exp.workload.direction == "a2a_gemm" else "all_gather"
    p = Program()
    p.add("main", Kernel("ag", "collective", "ag", lambda: model.collective(
        coll, base_B=model.a_base, elems=k.M * k.K).done, comm=True))
    p.add("main", Kernel("gemm", "gemm", "gemm", model.gemm, on_end=boundary(model)))
    return p


def run_sequential(model, rs_variant: str = "baseline") -> ProgramRun:
    """Run GEMM -> RS -> AG back to back on ``model`` (``workload.direction=ag_gemm``: AG of A -> GEMM)."""
    if model.exp.workload.collective_feeds_gemm:
        return run_program(model, ag_gemm_program(model), phase_order=("ag", "rs", "gemm"))
    return run_program(model, sequential_program(model, rs_variant))


def compose_ideal(p: Phases) -> Phases:
    """The ideal schemes' result from a Sequential run's (isolated) phase times: ``max(GEMM, RS) + AG``."""
    return Phases(p.gemm, p.rs, p.ag, max(p.gemm, p.rs) + p.ag)


register_simulation("sequential/baseline", run_sequential)
register_simulation("sequential/nmc", partial(run_sequential, rs_variant="nmc"))
register_scheme(Scheme("sequential", "GEMM, then RS, then AG, each a separate kernel with all CUs (the baseline); "
                       "workload.direction=ag_gemm: AG of the input, then the GEMM; a2a_gemm: the all-to-all of "
                       "the input, then the GEMM",
                       label="Sequential", color="#7f7f7f", simulation="sequential/baseline",
                       directions=("gemm_rs", "ag_gemm", "a2a_gemm")))
register_scheme(Scheme("ideal_gemm_rs_overlap", "max(isolated GEMM, isolated RS) + AG: perfect software overlap, no contention",
                       label="Ideal-GEMM-RS-Overlap", color="#1f77b4", ideal=True, simulation="sequential/baseline",
                       compose=compose_ideal))
register_scheme(Scheme("ideal_rs_nmc", "max(isolated GEMM, isolated RS using NMC) + AG", label="Ideal-RS+NMC",
                       color="#9467bd", ideal=True, nmc=True, simulation="sequential/nmc", compose=compose_ideal))
