"""``chunked_dma``, direction ``ag_gemm``: shard-based AllGather+GEMM overlap with copy-engine pushes.

The medium-grained baseline FLUX compares against (Transformer Engine 1.4's userbuffers, FLUX Secs. 2.2,
3.3, 5; PyTorch AsyncTP's ``fused_all_gather_matmul`` is the same decomposition): the AllGather of the
GEMM's input A is split along the devices, and the GEMM into one step per shard, so that the step over a
shard that has arrived runs while the next shard's copy is in flight.

Layout (as :mod:`t3sim.schemes.flux.flux_ag`): A is ``M x K``, row-major (the forward sub-layers' consumer
GEMMs, IP and FC-1; others are rejected), row-sharded: GPU ``r`` holds rows ``[r M/N, (r+1) M/N)`` at
their place in the gathered buffer, A at ``model.a_base`` (the same address on every GPU).

Decomposition. ``scheme.chunks`` = ``c N`` (``c >= 1``; any other count is rejected): each shard is cut
into ``c`` sub-chunks of rows (:mod:`t3sim.workload.chunks` applied to one shard; ``c = 1``: one step
per shard, FLUX Sec. 2.2's "decomposition aligned with the number of devices"). GPU ``r``'s GEMM
steps run on its stream ``gpu<r>.compute``, in the order its shards arrive: its own shard first
(step 0, at once), then shard ``r - 1``, ``r - 2``, ... (mod N); each step is a chunk GEMM
(``model.gemm(chunk=...)``) over its sub-chunk's rows of A and C. Before each step a stream wait
(kernel ``gpu<r>.wait_s<s>[_<j>]``, kind ``wait``, phase ``ag``, communication) holds the stream until
that sub-chunk's flag is set; it takes no time when the flag is already set.

Communication (TE userbuffers / AsyncTP push with copy engines). GPU ``r``'s copy engines push its shard
into every peer's gathered buffer, peers in ring order ``r + 1, r + 2, ...`` (mod N), a peer's
sub-chunks in row order, one copy per sub-chunk (direction ``d2p``:
:class:`~t3sim.dma.copy_engine.CopyEngines` reading local memory, category ``ag``, and writing the
lines into the peer's memory through a :class:`~t3sim.dma.engine.Fabric` on a port of its own; on a
switch every peer is one hop, on a ring the transfer is routed). The copies are issued on one stream
(``gpu<r>.dma``), so they run one after another, each when the previous has landed (CUDA's stream
order; TE and AsyncTP issue one copy per step): GPU ``r - 1``'s first copy lands in ``r`` first, which
is why ``r``'s step 1 takes shard ``r - 1``. A copy is done when its last line has landed; the
sub-chunk's flag at the destination is set one path latency later (the flag write crosses the links,
as flux_ag's push signal).

Homogeneous mode (paper Sec. 5.1.1). GPU 0 is simulated; by rotation symmetry shadow ``j``'s copy to
``j + d`` is GPU 0's copy to ``d``: when GPU 0's engine sends requests ``[a, b)`` of its copy to ``d``,
every shadow ``j`` sends requests ``[a, b)`` of its own sub-chunk to ``j + d`` at that instant
(the way ``chunked_dma``'s gemm_rs scatter mirrors), so every link carries every GPU's traffic; shadow
``N - d``'s payloads land in GPU 0's gathered buffer as real writes, and GPU 0's flag for that sub-chunk
is set one path latency after the last of them has landed (and GPU 0's own copy, whose issue
mirrors them, is done). Packets to shadows are delivered and dropped; a shadow's send to another shadow
is elided where the network allows it (:meth:`~t3sim.interconnect.network.Network.elide_image`: a full mesh),
its links reporting their images' statistics.

Phases (as flux_ag's): ``gemm`` = from the program's start to the end of the last GEMM step on any
GPU -- the operation's time, which includes every wait for a shard that the steps could not hide;
``ag`` = communication still running after that (0 in practice: the last step waits for the last
shard); ``rs`` = 0; ``total`` = ``gemm + ag``. How much communication was not hidden is
``kernels.exposed_comm_us`` (time a wait or copy runs and no GEMM step does) and, per GPU,
``gpu<g>.chunk_ag.wait_us_total`` (the stream waits' sum).

Not built: functional data, ``scheme.chunk_axis`` N (a block of A's columns is not a row shard),
pull copies (AsyncTP's default), and TE's ring relay through neighbours (userbuffers' p2p ring).

Invariants (tests): each GPU receives exactly ``(N - 1)/N`` of A; no step starts before its sub-chunk's
flag is set; step 0 starts at the program's start; the steps are never faster than the same chunk GEMMs
back to back.
"""

from __future__ import annotations

import dataclasses
from typing import List

from t3sim.compute.memhier import REQ_B
from t3sim.errors import InputError
from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, run_program
from t3sim.schemes.common.ag_gemm import check_row_sharded
from t3sim.schemes.common.ag_push import ChunkAgContext
from t3sim.schemes.common.chunking import compute_stream
from t3sim.workload.chunks import Chunk, chunks


def shard_chunks(model) -> List[List[Chunk]]:
    """Per shard ``p``, its ``c = scheme.chunks / N`` sub-chunks of rows (offsets from the whole arrays'
    bases); raises InputError for a count that is not a multiple of N, or rows that do not shard."""
    sc, k, n = model.exp.scheme, model.kernel, model.n
    if sc.chunk_axis != "M":
        raise InputError("scheme.chunk_axis", f"{sc.chunk_axis} with scheme.kind=chunked_dma and "
                         "workload.direction=ag_gemm (A is gathered by rows)", "M")
    if k.M % n:
        raise InputError("workload.tokens", f"M = {k.M} rows of A over {n} GPUs (chunked_dma's ag_gemm direction "
                         "shards A by rows)", f"a multiple of {n} tokens")
    rows = k.M // n
    if sc.chunks % n or not 1 <= sc.chunks // n <= rows:
        raise InputError("scheme.chunks", f"{sc.chunks} with scheme.kind=chunked_dma, workload.direction=ag_gemm "
                         f"and {n} GPUs (one GEMM step per shard of A, or each shard cut further)",
                         f"a multiple of {n} (the GPUs), at most {n * rows}: {n}, {2 * n}, {4 * n}, ...")
    eb = model.elem_B
    shard_k = dataclasses.replace(k, M=rows, tiles_m=-(-rows // k.tile_m), num_wgs=-(-rows // k.tile_m) * k.tiles_n)
    out = []
    for p in range(n):
        a0, c0 = p * rows * k.K * eb, p * rows * k.N * eb
        subs = [dataclasses.replace(c, index=p * (sc.chunks // n) + c.index, count=sc.chunks,
                                    a_offset_B=a0 + c.a_offset_B, c_offset_B=c0 + c.c_offset_B)
                for c in chunks(shard_k, sc.chunks // n, "M", retile=model.retile)]
        for c in subs:
            nb = c.kernel.M * k.K * eb
            if nb % REQ_B or c.a_offset_B % REQ_B:
                raise InputError("scheme.chunks", f"{sc.chunks}: a sub-chunk of {c.kernel.M} rows of A is {nb} B at "
                                 f"byte {c.a_offset_B} (copies move whole {REQ_B} B requests)",
                                 f"fewer chunks, so that each sub-chunk of A is a multiple of {REQ_B} B")
        out.append(subs)
    return out


class ShardPush(ChunkAgContext):
    """``chunked_dma``'s pushes (module doc): one piece per sub-chunk of each shard (:func:`shard_chunks`, kept as
    ``parts``), ``parts[p][j]`` GPU ``p``'s sub-chunk ``j``."""

    def __init__(self, model):
        if model.exp.simulation.functional_data:
            raise InputError("simulation.functional_data", "true with scheme.kind=chunked_dma and "
                             "workload.direction=ag_gemm, which has no functional check", "false")
        check_row_sharded(model)
        self.parts = shard_chunks(model)
        row_B = model.kernel.K * model.elem_B
        super().__init__(model, [[(c.a_offset_B, c.kernel.M * row_B) for c in cs] for cs in self.parts])


def chunked_dma_ag_program(model, ctx: ShardPush) -> Program:
    """Per simulated GPU ``g``: stream ``gpu<g>.compute`` of stream waits and GEMM steps in arrival order,
    stream ``gpu<g>.dma`` of its pushes in ring order (module doc)."""
    n, c = ctx.n, ctx.c
    p = Program()
    for g in model.sim_gpus:
        for s in range(n):
            for j in range(c):
                tag = f"s{s}" if c == 1 else f"s{s}_{j}"
                chunk = ctx.parts[ctx.shard_at(g, s)][j]
                last = s == n - 1 and j == c - 1
                stream = compute_stream(model, s * c + j, f"gpu{g}.")
                p.add(stream, Kernel(f"gpu{g}.wait_{tag}", "wait", "ag", lambda g=g, s=s, j=j: ctx.wait(g, s, j),
                                     comm=True))
                p.add(stream, Kernel(
                    f"gpu{g}.gemm_{tag}", "gemm", "gemm",
                    lambda g=g, tag=tag, chunk=chunk: model.gemm(f"gemm_{tag}", chunk=chunk, gpus=[g]),
                    on_end=lambda g=g, s=s, j=j, last=last: ctx.step_ended(g, s, j, boundary=last)))
        for d in range(1, n):
            for j in range(c):
                tag = f"d{d}" if c == 1 else f"d{d}_{j}"
                p.add(f"gpu{g}.dma", Kernel(f"gpu{g}.push_{tag}", "dma", "ag", lambda g=g, d=d, j=j: ctx.push(g, d, j),
                                            comm=True))
    return p


def run_chunked_dma_ag(model) -> ProgramRun:
    """Run the shard-based AllGather+GEMM on ``model`` (module doc)."""
    ctx = ShardPush(model)
    model.attach(ctx)
    return run_program(model, chunked_dma_ag_program(model, ctx))
