"""``chunked``: software decomposition of the GEMM with per-chunk reduce-scatters (issue 12).

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
shared/reference/h200/overlap_4gpu.csv).

``scheme.comm_cus`` > 0 reserves CUs: the chunk RSs' CTAs run only on the last ``comm_cus`` CUs and
the GEMM chunks on the others (:func:`~t3sim.schemes.program.cu_split`). The DMA-driven variant, copy
engines instead of collective kernels, is its own scheme, ``chunked_dma``
(:mod:`t3sim.schemes.chunked_dma`).

Invariant (tests): the chunks' outputs partition C, so the chunk RSs reduce
every element of C exactly once, and their DRAM and link bytes add up to one
RS of C.
"""

from __future__ import annotations

from typing import Optional

from t3sim.errors import InputError
from t3sim.schemes.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.program import Kernel, Program, ProgramRun, cu_split, run_program
from t3sim.schemes.sequential import boundary
from t3sim.workload.chunks import chunks


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


def compute_stream(model, i: int, prefix: str = "") -> str:
    """The stream chunk ``i``'s GEMM is issued on: ``compute`` with one stream, else ``compute<i mod S>``
    (``scheme.compute_streams``, round robin as Transformer Engine does)."""
    s = model.exp.scheme.compute_streams
    return f"{prefix}compute" if s == 1 else f"{prefix}compute{i % s}"


def chunk_parts(model):
    """The chunks of the workload's GEMM (``scheme.chunks`` along ``scheme.chunk_axis``); InputError if too many."""
    sc = model.exp.scheme
    k = model.kernel
    if sc.chunk_axis == "K":
        raise InputError("scheme.chunk_axis", f"K with scheme.kind={sc.kind} (its chunks each reduce-scatter a part "
                         "of C; K chunks would each produce all of C)", "M or N")
    whole = k.M if sc.chunk_axis == "M" else k.N
    if sc.chunks > whole:
        raise InputError("scheme.chunks", f"{sc.chunks} chunks of a GEMM with {whole} "
                         f"{'rows' if sc.chunk_axis == 'M' else 'columns'} ({k.M} x {k.N})",
                         f"1..{whole}, or scheme.chunk_axis={'N' if sc.chunk_axis == 'M' else 'M'}")
    return chunks(k, sc.chunks, sc.chunk_axis)


def run_chunked(model) -> ProgramRun:
    return run_program(model, chunked_program(model))


register_simulation("chunked", run_chunked)
register_scheme(Scheme("chunked", "GEMM in C chunks, each chunk's RS (a CU-driven collective) issued on a second stream "
                       "when it ends (CoCoNet/TE style); then AG", label="Chunked", color="#17becf",
                       paper_section="issue 12", simulation="chunked", options=("chunks", "chunk_axis", "comm_cus", "compute_streams")))
