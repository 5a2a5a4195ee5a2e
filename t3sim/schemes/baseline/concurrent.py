"""``concurrent``: the GEMM and an independent reduce-scatter on two streams.

What NCCL on a side stream does when the collective does not depend on the GEMM
beside it (e.g. the previous layer's gradients): stream ``compute`` runs the
sub-layer's GEMM, stream ``comm`` a reduce-scatter of an independent array of
the GEMM output's size (its own buffer and receive slots); both are launched at
the start, ``scheme.launch_first`` first. ``scheme.comm_cus`` > 0 reserves CUs:
the RS's CTAs run only on the last ``comm_cus`` CUs, the GEMM on the others
(:func:`~t3sim.schemes.runtime.program.cu_split`; paper Sec. 3.2.1, Fig. 6). Their WGs/CTAs share the CUs as the
GPU's dispatcher allows (:mod:`t3sim.compute.dispatcher`: launch order,
occupancy), and their traffic shares the L2, the memory controllers and HBM,
and the links. The all-gather of the sub-layer follows once both have ended.

Phases (:class:`~t3sim.schemes.runtime.program.ProgramRun`): ``gemm`` = GEMM end,
``rs`` = the RS that outlives the GEMM, ``ag``. Bounds (tests): never faster
than the longer of the two alone, never slower than both in sequence plus a
launch.
"""

from __future__ import annotations

from typing import Optional

from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, boundary, cu_split, run_program
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation


def concurrent_program(model, with_ag: Optional[bool] = None) -> Program:
    """GEMM on ``compute`` beside an independent RS on ``comm`` (module doc); then the AG."""
    indep = model.alloc(model.c_elems * model.elem_B)
    gemm_cus, comm_mask = cu_split(model)
    gemm = Kernel("gemm", "gemm", "gemm", lambda: model.gemm(num_cus=gemm_cus), on_end=boundary(model))
    rs = Kernel("rs", "collective", "rs",
                lambda: model.collective("reduce_scatter", base_B=indep, elems=model.c_elems, cu_mask=comm_mask).done,
                comm=True)
    p = Program()
    p.add_in_launch_order(model.exp.scheme.launch_first, [("compute", gemm)], [("comm", rs)])
    if model.with_ag if with_ag is None else with_ag:
        p.add("compute", Kernel("ag", "collective", "ag", lambda: model.collective("all_gather").done, comm=True,
                                after=("rs",)))
    return p


def run_concurrent(model) -> ProgramRun:
    return run_program(model, concurrent_program(model))


register_simulation("concurrent", run_concurrent)
register_scheme(Scheme("concurrent", "the GEMM and an independent RS on two streams sharing CUs, L2, HBM and links; then AG",
                       label="Concurrent", color="#8c564b", paper_section="T3 Sec. 3.2 (resource contention)",
                       simulation="concurrent", variants="launch_first"))
