"""``chunked_dma``, direction ``ag_gemm``: shard-based AllGather+GEMM overlap with copy-engine pushes.

The medium-grained baseline FLUX compares against (Transformer Engine 1.4's userbuffers, FLUX Secs. 2.2,
3.3, 5; PyTorch AsyncTP's ``fused_all_gather_matmul`` is the same decomposition): the AllGather of the
GEMM's input A is split along the devices, and the GEMM into one step per shard, so that the step over a
shard that has arrived runs while the next shard's copy is in flight.

Layout (as :mod:`t3sim.schemes.flux_ag`): A is ``M x K``, row-major (the forward sub-layers' consumer
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
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from t3sim.compute.memhier import REQ_B
from t3sim.dma.copy_engine import Copy, CopyEngines
from t3sim.dma.engine import Completion, Fabric, Payload
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.schemes.ag_gemm import check_row_sharded
from t3sim.schemes.chunked import compute_stream
from t3sim.schemes.program import Kernel, Program, ProgramRun, run_program
from t3sim.sim.clock import TICKS_PER_US
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
                for c in chunks(shard_k, sc.chunks // n, "M")]
        for c in subs:
            nb = c.kernel.M * k.K * eb
            if nb % REQ_B or c.a_offset_B % REQ_B:
                raise InputError("scheme.chunks", f"{sc.chunks}: a sub-chunk of {c.kernel.M} rows of A is {nb} B at "
                                 f"byte {c.a_offset_B} (copies move whole {REQ_B} B requests)",
                                 f"fewer chunks, so that each sub-chunk of A is a multiple of {REQ_B} B")
        out.append(subs)
    return out


class ChunkAgContext:
    """The shard pushes, flags and step records of every simulated GPU (module doc)."""

    def __init__(self, model, pieces: Optional[List[List[Tuple[int, int]]]] = None, name: str = "chunked",
                 src_of: Optional[Callable[[int, int, int], int]] = None):
        """``pieces[p][j]``: byte offset from ``model.a_base`` and length of piece ``j`` of GPU ``p``'s part of A
        (the same offsets on every GPU; rotation symmetry needs piece ``j`` of every GPU the same length);
        None: ``chunked_dma``'s sub-chunks (:func:`shard_chunks`). ``name`` prefixes the fabric's port.
        ``src_of(g, dst, j)``: the byte address GPU ``g`` reads the piece ``j`` it sends to ``dst`` from
        (an all-to-all: different data per destination); None: the piece's own place in A."""
        self.model = model
        self.src_of = src_of
        k = model.kernel
        self.row_B = k.K * model.elem_B
        if pieces is None:
            if model.exp.simulation.functional_data:
                raise InputError("simulation.functional_data", "true with scheme.kind=chunked_dma and "
                                 "workload.direction=ag_gemm, which has no functional check", "false")
            check_row_sharded(model)
            self.parts = shard_chunks(model)
            pieces = [[(c.a_offset_B, c.kernel.M * self.row_B) for c in cs] for cs in self.parts]
        self.pieces = pieces
        self.n = n = model.n
        self.env = model.env
        self.homogeneous = model.mode == "homogeneous"
        self.c = len(pieces[0])
        #: per consumer GPU, per (shard, sub-chunk): the event its flag is set (own shard: preset)
        self.flags: Dict[int, Dict[Tuple[int, int], object]] = {}
        self.flag_tick: Dict[int, Dict[Tuple[int, int], int]] = {}
        #: per consumer GPU, per (shard, sub-chunk): the tick its last line landed there
        self.landed_tick: Dict[int, Dict[Tuple[int, int], int]] = {g: {} for g in model.sim_gpus}
        for g in model.sim_gpus:
            self.flags[g], self.flag_tick[g] = {}, {}
            for p in range(n):
                for j in range(self.c):
                    ev = self.flags[g][p, j] = self.env.event()
                    if p == g:
                        ev.succeed()
                        self.flag_tick[g][p, j] = self.env.now
        #: per GPU: (step name, shard, sub-chunk, wait start, flag set, GEMM end) ticks
        self.steps: Dict[int, List[list]] = {g: [] for g in model.sim_gpus}
        self.port = model.network.new_port(f"{name}.ag_push")
        self.fabric = Fabric(model.engine, model.network, model.hiers, port=self.port, name=f"{name}.ag_fabric")
        self.engines: Dict[int, CopyEngines] = {
            g: CopyEngines(model.engine, g, model.hiers[g], model.system.copy_engine, category="ag",
                           peer_send=self._peer_send) for g in model.sim_gpus}
        #: homogeneous mode: GPU 0's incoming sub-chunk (shard, j) -> the mirrored payloads' completion
        self.incoming: Dict[Tuple[int, int], Completion] = {}
        self.received_B = {g: 0 for g in model.sim_gpus}
        self.shadow_B = 0
        self.copies = 0

    # ---------------------------------------------------------------- geometry
    def sub(self, p: int, j: int) -> Tuple[int, int]:
        """Byte address (the same on every GPU) and length of sub-chunk ``j`` of shard ``p`` of A."""
        off, nb = self.pieces[p][j]
        return self.model.a_base + off, nb

    def shard_at(self, g: int, s: int) -> int:
        """The shard GPU ``g``'s step ``s`` computes: its own, then ``g - 1``, ``g - 2``, ... (arrival order)."""
        return (g - s) % self.n

    # ---------------------------------------------------------------- the pushes
    def push(self, g: int, d: int, j: int):
        """GPU ``g``'s copy of sub-chunk ``j`` of its shard into peer ``g + d``'s gathered buffer; the event
        fires when it has landed (the destination's flag follows one path latency later)."""
        dst = (g + d) % self.n
        a, nb = self.sub(g, j)
        self.copies += 1
        if self.homogeneous:  # GPU 0's incoming copy of the same (d, j) is mirrored by its issue (module doc)
            self.incoming[(-d) % self.n, j] = Completion(self.env)
        src = a if self.src_of is None else self.src_of(g, dst, j)
        ev = self.engines[g].copy(src, a, nb, "d2p", peer=dst, tag=(d, j))
        ev.callbacks.append(lambda _e: self._copied(g, dst, d, j))
        return ev

    def _copied(self, g: int, dst: int, d: int, j: int) -> None:
        if dst in self.flags:  # explicit mode: the destination is simulated
            self._flag_after(g, dst, (g, j))
        if self.homogeneous:
            src = (-d) % self.n
            comp = self.incoming[src, j]
            comp.done.callbacks.append(lambda _e: self._flag_after(src, 0, (src, j)))
            comp.seal()

    def _flag_after(self, src: int, dst: int, key: Tuple[int, int]) -> None:
        self.landed_tick[dst][key] = self.env.now
        lat = self.model.network.path_latency_ticks(src, dst)
        self.env.timeout(lat).callbacks.append(lambda _e: self._set(dst, key))

    def _set(self, g: int, key: Tuple[int, int]) -> None:
        self.flag_tick[g][key] = self.env.now
        self.flags[g][key].succeed()

    def _peer_send(self, gpu: int, c: Copy, off: int, dst_addrs: np.ndarray, data):
        """A copy engine's d2p request: its lines written into the peer's gathered buffer; mirrored (module doc)."""
        ev = self.env.event()
        nb = REQ_B * len(dst_addrs)

        def landed(_pl, p=c.peer):
            if p in self.received_B:
                self.received_B[p] += nb
            ev.succeed()

        self.fabric.send(gpu, c.peer, Payload(dst_addrs, None, None, "store", data, category="ag", then=landed))
        if self.homogeneous and gpu == 0:
            self._mirror(c, off // REQ_B, off // REQ_B + len(dst_addrs))
        return ev

    def _mirror(self, c: Copy, j0: int, j1: int) -> None:
        """GPU 0 sent requests ``[j0, j1)`` of its copy of sub-chunk ``k`` to peer ``d``: each shadow ``j``
        sends the same requests of its own sub-chunk ``k`` to ``j + d`` now (module doc)."""
        d, k = c.tag
        for j in range(1, self.n):
            p = (j + d) % self.n
            nb = REQ_B * (j1 - j0)
            self.shadow_B += nb
            if p and self.fabric.elide_image(j, p, nb):  # shadow to shadow, where the network can (module doc)
                continue
            a, _nb = self.sub(j, k)
            addrs = a + REQ_B * np.arange(j0, j1, dtype=np.int64)
            then = self._landed_at_0(self.incoming[j, k], nb) if p == 0 else None
            self.fabric.send(j, p, Payload(addrs, None, None, "store", None, category="ag", then=then))

    def _landed_at_0(self, comp: Completion, nbytes: int):
        """The ``then`` of a mirrored payload to GPU 0: count it in ``comp`` (its sub-chunk's landings)."""
        comp.add()

        def then(_pl):
            self.received_B[0] += nbytes
            comp.finish()

        return then

    # ---------------------------------------------------------------- the steps' stream waits
    def wait(self, g: int, s: int, j: int):
        """GPU ``g``'s stream wait before step ``(s, j)``: the flag's event, or None when it is set."""
        p = self.shard_at(g, s)
        rec = [f"s{s}_{j}", p, j, self.env.now, -1, -1]
        self.steps[g].append(rec)
        ev = self.flags[g][p, j]
        if ev.triggered:
            rec[4] = self.env.now
            return None
        ev.callbacks.append(lambda _e: rec.__setitem__(4, self.env.now))
        return ev

    def step_ended(self, g: int, s: int, j: int, boundary: bool) -> None:
        """GPU ``g``'s step ``(s, j)`` ended; its last step's end is a kernel boundary for its memory controllers."""
        next(r for r in self.steps[g] if r[0] == f"s{s}_{j}")[5] = self.env.now
        if boundary:
            self.model.hiers[g].port.kernel_boundary()

    # ---------------------------------------------------------------- results
    def stats(self) -> Stats:
        s = Stats()
        s.add("chunk_ag.steps_per_gpu", self.n * self.c, "count", "GEMM steps per GPU (N shards x sub-chunks)")
        s.add("chunk_ag.copies", self.copies, "count", "copy-engine pushes issued (simulated GPUs)")
        for g in self.engines:
            s.add(f"gpu{g}.chunk_ag.received_B", self.received_B[g], "B", "bytes of A that landed in this GPU's buffer")
            s.merge(f"gpu{g}.chunk_ag_copy", self.engines[g].stats())
            waited = [b - a for _n, _p, _j, a, b, _e in self.steps[g]]
            s.add(f"gpu{g}.chunk_ag.steps_waited", sum(1 for x in waited if x > 0), "count",
                  "GEMM steps whose stream wait found the shard not yet there")
            s.add(f"gpu{g}.chunk_ag.wait_us_total", sum(waited) / TICKS_PER_US, "us",
                  "sum over GEMM steps of the stream wait for their shard")
        s.merge("chunk_ag.fabric", self.fabric.stats())
        s.add("chunk_ag.fabric.shadow_B", self.shadow_B, "B", "bytes of those the homogeneous mode's shadows sent")
        return s


def chunked_dma_ag_program(model, ctx: ChunkAgContext) -> Program:
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
    ctx = ChunkAgContext(model)
    model.attach(ctx)
    return run_program(model, chunked_dma_ag_program(model, ctx))
