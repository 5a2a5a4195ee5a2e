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

``scheme.chunk_comm: dma`` communicates instead with the copy engines, as PyTorch AsyncTP and
Transformer Engine's userbuffers do: each chunk's output is scattered shard by shard into the peers'
receive slots (stream ``dma``, no CUs), and one local reduction kernel on the CUs sums the N partial
shards after the last chunk (:mod:`t3sim.schemes.chunked_dma`).

Invariant (tests): the chunks' outputs partition C, so the chunk RSs reduce
every element of C exactly once, and their DRAM and link bytes add up to one
RS of C.
"""

from __future__ import annotations

from t3sim.errors import InputError
from t3sim.schemes.chunked_dma import DmaScatter, FunctionalOutput, check_reduced
from t3sim.schemes.program import Kernel, Program, ProgramRun, run_program
from t3sim.schemes.sequential import boundary
from t3sim.workload.chunks import chunks
from t3sim.schemes.base import Scheme, register_scheme, register_simulation


def chunked_program(model, with_ag: bool = True) -> Program:
    """The chunk GEMMs on ``compute``, each chunk's RS on ``comm`` after it (module doc); then the AG.
    ``scheme.chunk_comm: dma``: :func:`dma_program`."""
    sc = model.exp.scheme
    parts = _parts(model)
    if sc.chunk_comm == "dma":
        return dma_program(model, parts, with_ag)
    p = Program()
    for c in parts:
        on_end = boundary(model) if c.index == len(parts) - 1 else None
        p.add("compute", Kernel(f"gemm_c{c.index}", "gemm", "gemm", lambda c=c: model.gemm(f"gemm_c{c.index}", chunk=c),
                                on_end=on_end))
        p.add("comm", Kernel(f"rs_c{c.index}", "collective", "rs",
                             lambda c=c: model.collective("reduce_scatter", base_B=model.c_base + c.c_offset_B,
                                                          elems=c.c_elems).done,
                             comm=True, after=(f"gemm_c{c.index}",)))
    if with_ag:
        p.add("compute", Kernel("ag", "collective", "ag", lambda: model.collective("all_gather").done, comm=True,
                                after=(f"rs_c{len(parts) - 1}",)))
    return p


def _parts(model):
    sc = model.exp.scheme
    k = model.kernel
    tiles = k.tiles_m if sc.chunk_axis == "M" else k.tiles_n
    if sc.chunks > tiles:
        raise InputError("scheme.chunks", f"{sc.chunks} chunks of a GEMM with {tiles} tile "
                         f"{'rows' if sc.chunk_axis == 'M' else 'columns'} ({k.M} x {k.N}, {k.tile_m} x {k.tile_n} tiles)",
                         f"1..{tiles}, or scheme.chunk_axis={'N' if sc.chunk_axis == 'M' else 'M'}")
    return chunks(k, sc.chunks, sc.chunk_axis)


def dma_program(model, parts, with_ag: bool = True) -> Program:
    """``chunk_comm: dma`` (:mod:`t3sim.schemes.chunked_dma`): the chunk GEMMs on ``compute``, each chunk's
    copy-engine scatter on ``dma`` when it ends, the local reduction on ``compute`` once the last scatter has
    landed, then the AG (functional mode: the check of every reduced element instead)."""
    ctx = DmaScatter(model, parts)
    model.context = ctx
    model.add_stats(ctx.stats)
    functional = ctx.functional
    last = len(parts) - 1
    p = Program()
    for c in parts:
        sink = (lambda g: FunctionalOutput(model.hiers[g], g)) if functional else None
        p.add("compute", Kernel(f"gemm_c{c.index}", "gemm", "gemm",
                                lambda c=c, sink=sink: model.gemm(f"gemm_c{c.index}", chunk=c, sink_for=sink),
                                on_end=boundary(model) if c.index == last else None))
        p.add("dma", Kernel(f"scatter_c{c.index}", "dma", "rs", lambda c=c: ctx.scatter(c.index), comm=True,
                            after=(f"gemm_c{c.index}",)))
    p.add("compute", Kernel("reduce", "copy", "rs", ctx.reduce, comm=True, after=(f"scatter_c{last}",)))
    if with_ag:
        ag = (lambda: check_reduced(model, ctx) and None) if functional else \
            (lambda: model.collective("all_gather").done)
        p.add("compute", Kernel("ag", "collective", "ag", ag, comm=True))
    return p


def run_chunked(model) -> ProgramRun:
    return run_program(model, chunked_program(model))


register_simulation("chunked", run_chunked)
register_scheme(Scheme("chunked", "GEMM in C chunks, each chunk's RS issued on a second stream when it ends (CoCoNet/TE style; "
                       "scheme.chunk_comm: a CU-driven collective, or copy-engine scatters plus a local reduction, AsyncTP "
                       "style); then AG", label="Chunked", color="#17becf", paper_section="issue 12", simulation="chunked",
                       options=("chunks", "chunk_axis", "chunk_comm")))
