"""``chunked``: software decomposition of the GEMM with per-chunk reduce-scatters.

As CoCoNet, Transformer Engine's userbuffers and PyTorch AsyncTP do it: the
GEMM runs as ``scheme.chunks`` kernels, each over a slice of its rows (or
columns, ``scheme.chunk_axis``; :mod:`t3sim.workload.chunks`), back to back on
stream ``compute``; when chunk ``i`` ends, the reduce-scatter of chunk ``i``'s
output is issued on stream ``comm`` (waiting on an event recorded after chunk
``i``), while chunk ``i + 1`` computes. The chunk RSs run one after another on
``comm`` (one NCCL stream), each a CU-driven collective whose CTAs take CUs
beside the GEMM chunks as the dispatcher allows. The all-gather of the whole
output follows the last RS.

Decomposition costs what it costs on real GPUs: smaller GEMMs with more
partial waves, smaller collectives further from the link rate, and every
chunk's RS contending with the next chunk's GEMM. So ``chunked`` can be slower
than ``sequential`` (measured so on H200 for small K,
experiments/validation/overlap_4gpu.csv).

``scheme.comm_cus`` > 0 reserves CUs: the chunk RSs' CTAs run only on the last ``comm_cus`` CUs and
the GEMM chunks on the others (:func:`~t3sim.schemes.runtime.program.cu_split`). The DMA-driven variant, copy
engines instead of collective kernels, is its own scheme, ``chunked_dma``
(:mod:`t3sim.schemes.decomposed.chunked_dma`).

Invariant (tests): the chunks' outputs partition C, so the chunk RSs reduce
every element of C exactly once, and their DRAM and link bytes add up to one
RS of C.
"""

from __future__ import annotations

from typing import Optional

from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, boundary, cu_split, run_program
from t3sim.schemes.common.chunking import chunk_parts, compute_stream


def chunked_program(model, with_ag: Optional[bool] = None) -> Program:
    """The chunk GEMMs on ``compute``, each chunk's RS on ``comm`` after it (module doc); then the AG."""
    parts = chunk_parts(model)
    gemm_cus, comm_mask = cu_split(model)
    p = Program()
    for c in parts:
        on_end = boundary(model) if c.index == len(parts) - 1 else None
        p.add(compute_stream(model, c.index), Kernel(f"gemm_c{c.index}", "gemm", "gemm", lambda c=c: model.gemm(f"gemm_c{c.index}", chunk=c, num_cus=gemm_cus),
                                on_end=on_end))
        p.add("comm", Kernel(f"rs_c{c.index}", "collective", "rs",
                             lambda c=c: model.collective("reduce_scatter", base_B=model.c_base + c.c_offset_B,
                                                          elems=c.c_elems, cu_mask=comm_mask).done,
                             comm=True, after=(f"gemm_c{c.index}",)))
    if model.with_ag if with_ag is None else with_ag:
        p.add(compute_stream(model, 0), Kernel("ag", "collective", "ag", lambda: model.collective("all_gather").done, comm=True,
                                after=(f"rs_c{len(parts) - 1}",)))
    return p


def run_chunked(model) -> ProgramRun:
    return run_program(model, chunked_program(model))


register_simulation("chunked", run_chunked)
register_scheme(Scheme("chunked", "GEMM in C chunks, each chunk's RS (a CU-driven collective) issued on a second stream "
                       "when it ends (CoCoNet/TE style); then AG", label="Chunked", color="#17becf",
                       paper_section="T3 Sec. 3.1; FLUX Sec. 2.2", simulation="chunked"))
