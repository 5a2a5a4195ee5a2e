"""``ficco_char``: FiCCO's characterization of inefficiencies (FiCCO Secs. IV-A, IV-C, IV-D).

Direction ``ag_gemm`` only; layout as :mod:`t3sim.schemes.ficco.ficco`: N GPUs, A is ``M x K`` row-major, GPU ``r``
holds rows ``[r S, (r+1) S)``, ``S = M/N``, at their place in the gathered A (``model.a_base``); the per-GPU
GEMM is ``M x N_loc x K`` and writes C **row-major** (PyTorch's layout, as every FiCCO GEMM; so a block of C's
rows is contiguous), whatever the trace's ``c_layout`` -- so ``chunks = 1`` is the workload's GEMM with a
row-major C, and DIL compares like with like. ``scheme.char_part`` says what runs:

* ``gemm`` -- **GEMM DIL** (Sec. IV-C1: "the isolated execution of baseline GEMM [against] eight 8-way sharded
  and sixty-four 64-way sharded smaller GEMMs ... in either the row (M) or column (K) dimension"): the GEMM
  as ``scheme.chunks`` chunk GEMMs along ``scheme.chunk_axis`` (:func:`t3sim.workload.chunks.chunks`), back
  to back on one stream (``compute``), no communication. Along K ("column-sharding necessitates accumulative
  GEMM kernels (that is, C += A * B)") every chunk computes all of C and the chunks after the first
  accumulate, beta = 1: each output tile's C lines are read, the WG retires when they are back, then they
  are written (:class:`~t3sim.compute.sinks.AccumulatingOutput`, the sink ficco's uniform_fused_2d
  uses); A and B are stored K-block-major (each chunk's blocks contiguous: ficco's 2D layout, module doc
  of :mod:`t3sim.workload.chunks`). DIL = ``T(chunks) / T(1)`` of two runs.
* ``comm`` -- **communication DIL** (Sec. IV-C2: "we scale down collective size 8-way for eight GPU
  system"): the all-gather of A alone, no GEMM. ``scheme.char_comm_pattern``:

  - ``a2a`` (FiCCO): GPU ``r``'s shard is cut into ``T = scheme.char_comm_steps`` pieces of ``S/T``
    contiguous rows; in step ``s`` every GPU sends its piece ``s`` to all N-1 peers at once. With
    ``scheme.ficco_comm=dma``: N-1 copy-engine copies per step (``ChunkAgContext`` pushes, as ficco's: one
    DMA stream per peer, ``gpu<g>.dma<d>``, step ``s + 1``'s copy to a peer after step ``s``'s), each
    landing at the piece's place in the peer's gathered A. With ``rccl``: one CU-driven ``all_gather``
    collective per step on stream ``comm`` (``model.collective``, RCCL style; step ``s`` gathers the N
    pieces ``s`` into a step buffer of their own, ``N S/T`` rows, as ``ncclAllGather`` into a receive
    buffer does; ``T = 1``: the whole all-gather in place, as ``sequential``'s). DIL = ``T(T = N) /
    T(T = 1)``.
  - ``p2p`` (shard-based overlap, PyTorch AsyncTP / :mod:`t3sim.schemes.decomposed.chunked_dma_ag`'s pushes): every
    GPU sends its whole shard to peers ``r+1, r+2, ...`` one after another on one DMA stream
    (``gpu<g>.dma``); copy engines only, ``T = 1``.

  Communication time ends when every GPU holds every piece it was sent and its flag is set (one path
  latency after the last line landed: what a consumer's stream wait sees): a stream wait per GPU
  (``gpu<g>.wait_recv``, kind ``wait``) on all those flags, or the collectives' ends.
* ``both`` -- **CIL** (Sec. IV-D1: "we execute 8-way M-sharded GEMM concurrently with RCCL or DMA-based
  all-gather"; IV-D2: "Using the same setup ... slowdown in the communication kernel"): the GEMM chunks on
  ``compute`` and the all-gather's streams launched together at the start (``scheme.launch_first``
  first), sharing CUs (rccl), L2, memory controllers, HBM and links. CIL = beside / alone for each part,
  the "alone" being the same config with ``char_part`` ``gemm`` or ``comm``.

``scheme.char_pieces=first`` runs only the first GEMM chunk and the first step (``p2p``: the shard to peer
``r+1`` only): with ``both``, one M/N-row GEMM shard beside one all-gather step, the CIL unit; the GEMM shard
reads rows ``[0, M/C)`` of A (GPU 0's own shard for C = N), which the step's landing pieces never touch.

Phases: ``ag`` = to the end of the communication, ``gemm`` = what the GEMM adds after it (``total`` = the
run's span). The characterization's numbers are the statistics ``ficco_char.gemm_us`` (first GEMM launch to
last GEMM end) and ``ficco_char.comm_us`` (first communication launch to its end, as above).

Homogeneous mode: GPU 0 runs everything; the shadows' pushes are ChunkAgContext's mirrored copies, the
collectives' their own homogeneous model. Functional data is not supported (rejected).

Invariants (tests): chunks = 1 is the plain GEMM's time exactly; M chunks' rows sum to M, K chunks' depths
to K; the accumulating chunks read ``(C-1) M N_loc e`` bytes of C; every GPU receives ``(N-1)/N`` of A
(``all``); beside each other neither part is faster than alone.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

from t3sim.compute.sinks import AccumulatingOutput
from t3sim.compute.memhier import REQ_B
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.schemes.common.ag_gemm import check_row_sharded
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.common.ag_push import ChunkAgContext
from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, boundary, run_program
from t3sim.sim.clock import TICKS_PER_US
from t3sim.workload.chunks import Chunk, chunks

#: the options each part reads besides char_part and char_pieces (the others must keep their defaults)
PART_OPTIONS = {"gemm": ("chunks", "chunk_axis"),
                "comm": ("ficco_comm", "char_comm_pattern", "char_comm_steps"),
                "both": ("chunks", "chunk_axis", "ficco_comm", "char_comm_pattern", "char_comm_steps",
                         "launch_first")}


class CountingAccumulate(AccumulatingOutput):
    """C += the tile (beta = 1), counting the bytes of C it reads (``ficco_char.gpu<g>.c_read_B``)."""

    def __init__(self, hier, counter: Dict[int, int], g: int):
        super().__init__(hier)
        self.counter, self.g = counter, g

    def count_reads(self, lines: int) -> None:
        self.counter[self.g] += REQ_B * lines


class CharContext:
    """The parts, pieces, transfers and counters of one ``ficco_char`` run (module doc)."""

    def __init__(self, model):
        self.model = model
        sc = model.exp.scheme
        self.part, self.pattern, self.comm = sc.char_part, sc.char_comm_pattern, sc.ficco_comm
        self.first = sc.char_pieces == "first"
        self.steps = sc.char_comm_steps
        defaults = type(sc).model_fields
        for name in PART_OPTIONS["both"]:
            if name not in PART_OPTIONS[self.part] and getattr(sc, name) != defaults[name].default:
                raise InputError(f"scheme.{name}", f"{getattr(sc, name)!r} with scheme.kind=ficco_char and "
                                 f"scheme.char_part={self.part}, which does not use it",
                                 f"its default ({defaults[name].default!r}), or a char_part that uses it")
        if model.exp.simulation.functional_data:
            raise InputError("simulation.functional_data", "true with scheme.kind=ficco_char, which has no "
                             "functional check", "false")
        k = model.kernel
        self.n, self.eb = model.n, model.elem_B
        #: the GEMMs' kernel: row-major C (module doc)
        self.base = dataclasses.replace(k, c_layout="row_major", wg_order=(
            k.wg_order if k.wg_order.get("kind") != "explicit" else {"kind": "row_major"}))
        self.parts: List[Chunk] = []
        if self.part in ("gemm", "both"):
            whole = k.M if sc.chunk_axis == "M" else k.K if sc.chunk_axis == "K" else 0
            if not whole:
                raise InputError("scheme.chunk_axis", f"{sc.chunk_axis} with scheme.kind=ficco_char (FiCCO shards "
                                 "the GEMM by rows or by its reduction)", "M or K")
            if sc.chunks > whole:
                raise InputError("scheme.chunks", f"{sc.chunks} chunks along {sc.chunk_axis} = {whole}",
                                 f"1..{whole}")
            self.parts = chunks(self.base, sc.chunks, sc.chunk_axis, retile=model.retile)[:1 if self.first else None]
        self.c_read_B = {g: 0 for g in model.sim_gpus}
        self.push: Optional[ChunkAgContext] = None
        self.pieces: List[List[tuple]] = []
        self.run: Optional[ProgramRun] = None
        if self.part in ("comm", "both"):
            self._plan_comm()

    def _plan_comm(self) -> None:
        model, k, n = self.model, self.model.kernel, self.n
        check_row_sharded(model)
        if self.pattern == "p2p" and (self.steps != 1 or self.comm != "dma"):
            bad = ("scheme.char_comm_steps", self.steps, "1 (one whole shard per peer)") if self.steps != 1 else \
                ("scheme.ficco_comm", self.comm, "dma (shard pushes by copy engines)")
            raise InputError(bad[0], f"{bad[1]} with scheme.char_comm_pattern=p2p", bad[2])
        if k.M % (n * self.steps):
            raise InputError("scheme.char_comm_steps", f"{self.steps} steps of a shard of M/N = {k.M}/{n} rows",
                             f"a divisor of the shard's {k.M // n} rows" if k.M % n == 0 else "M a multiple of N")
        self.S = k.M // n
        rows = self.S // self.steps
        self.piece_B = rows * k.K * self.eb
        if self.piece_B % REQ_B:
            raise InputError("scheme.char_comm_steps", f"{self.steps}: a piece of {rows} rows of A is "
                             f"{self.piece_B} B, not whole {REQ_B} B copy requests", "fewer steps")
        row_B = k.K * self.eb
        self.pieces = [[(p * self.S * row_B + s * self.piece_B, self.piece_B) for s in range(self.steps)]
                       for p in range(n)]
        #: (peer distances d, steps s) each GPU sends: piece s to GPU g + d
        if self.pattern == "a2a":
            self.dists, self.run_steps = list(range(1, n)), list(range(1 if self.first else self.steps))
        else:
            self.dists, self.run_steps = list(range(1, 2 if self.first else n)), [0]
        if self.comm == "dma":
            self.push = ChunkAgContext(model, pieces=self.pieces, name="ficco_char")

    @property
    def received_plan_B(self) -> int:
        """Bytes of A each GPU receives: its peers' pieces of the steps run."""
        return len(self.dists) * len(self.run_steps) * self.piece_B if self.pieces else 0

    # ---------------------------------------------------------------- kernels' launches
    def gemm(self, i: int, c: Chunk):
        m = self.model
        sink = (lambda g: CountingAccumulate(m.hiers[g], self.c_read_B, g)) if c.accumulate else None
        return m.gemm(f"gemm_c{i}", chunk=c, sink_for=sink)

    def wait_recv(self, g: int):
        """GPU ``g``'s stream wait for the flags of every piece sent to it (None: all set)."""
        flags = self.push.flags[g]
        keys = [((g - d) % self.n, s) for d in self.dists for s in self.run_steps]
        pending = [flags[key] for key in keys if not flags[key].triggered]
        if not pending:
            return None
        return pending[0] if len(pending) == 1 else self.model.env.all_of(pending)

    def collective(self, s: int):
        """Step ``s``'s CU-driven all-gather (module doc)."""
        m, k = self.model, self.model.kernel
        if self.steps == 1:
            return m.collective("all_gather", base_B=m.a_base, elems=k.M * k.K).done
        nb = self.n * self.piece_B
        return m.collective("all_gather", base_B=m.alloc(nb), elems=nb // self.eb).done

    # ---------------------------------------------------------------- results
    def span_us(self, comm: bool) -> float:
        recs = [r for r in (self.run.records if self.run else []) if (r.comm if comm else r.kind == "gemm")]
        if not recs:
            return 0.0
        return (max(r.end for r in recs) - min(r.start for r in recs)) / TICKS_PER_US

    def stats(self) -> Stats:
        s = Stats()
        p = "ficco_char"
        s.add(f"{p}.part", self.part, "text", "what ran (scheme.char_part): gemm, comm or both")
        s.add(f"{p}.gemm_us", self.span_us(False), "us",
              "GEMM chunks' time: first chunk's launch to last chunk's end (0: no GEMM)")
        s.add(f"{p}.comm_us", self.span_us(True), "us",
              "all-gather's time: first transfer's (collective's) launch until every GPU holds every piece sent "
              "to it, flags set (0: no communication)")
        s.add(f"{p}.gemms", len(self.parts), "count", "chunk GEMMs run per GPU")
        s.add(f"{p}.gemm_rows_total", sum(c.kernel.M for c in self.parts), "count", "rows of C summed over the chunks")
        s.add(f"{p}.gemm_K_total", sum(c.kernel.K for c in self.parts), "count",
              "reduction depth summed over the chunks")
        s.add(f"{p}.comm_steps_run", len(self.run_steps) * len(self.dists) if self.pieces else 0, "count",
              "pieces each GPU sends (steps x peers)")
        s.add(f"{p}.piece_B", self.piece_B if self.pieces else 0, "B", "bytes of one transferred piece")
        s.add(f"{p}.received_plan_B", self.received_plan_B, "B", "bytes of A each GPU is sent by its peers")
        for g in self.model.sim_gpus:
            s.add(f"{p}.gpu{g}.c_read_B", self.c_read_B[g], "B",
                  "bytes of C the accumulating (K) chunks read before writing (beta = 1)")
        if self.push is not None:
            s.add(f"{p}.copies", self.push.copies, "count", "copy-engine transfers issued (simulated GPUs)")
            s.merge(f"{p}.fabric", self.push.fabric.stats())
            s.add(f"{p}.fabric.shadow_B", self.push.shadow_B, "B", "bytes of those the homogeneous mode's shadows sent")
            for g in self.model.sim_gpus:
                s.add(f"{p}.gpu{g}.sent_B", self.push.engines[g].peer_B, "B", "bytes this GPU's copy engines sent")
                s.add(f"{p}.gpu{g}.received_B", self.push.received_B[g], "B", "bytes of A that landed in this GPU")
                s.merge(f"gpu{g}.ficco_char_copy", self.push.engines[g].stats())
        return s


def char_program(model, ctx: CharContext) -> Program:
    """The GEMM chunks on ``compute`` and the all-gather's streams (module doc)."""
    gemm_streams: List[tuple] = []
    for i, c in enumerate(ctx.parts):
        last = i == len(ctx.parts) - 1
        gemm_streams.append(("compute", Kernel(f"gemm_c{i}", "gemm", "gemm", lambda i=i, c=c: ctx.gemm(i, c),
                                               on_end=boundary(model) if last else None)))
    comm_streams: List[tuple] = []
    if ctx.pieces and ctx.comm == "rccl":
        for s in ctx.run_steps:
            comm_streams.append(("comm", Kernel(f"ag_s{s}", "collective", "ag", lambda s=s: ctx.collective(s),
                                                comm=True)))
    elif ctx.pieces:
        for g in model.sim_gpus:
            for d in ctx.dists:
                stream = f"gpu{g}.dma{d}" if ctx.pattern == "a2a" else f"gpu{g}.dma"
                for s in ctx.run_steps:
                    comm_streams.append((stream, Kernel(f"gpu{g}.push_s{s}_d{d}", "dma", "ag",
                                                        lambda g=g, d=d, s=s: ctx.push.push(g, d, s), comm=True)))
            comm_streams.append((f"gpu{g}.recv", Kernel(f"gpu{g}.wait_recv", "wait", "ag",
                                                        lambda g=g: ctx.wait_recv(g), comm=True)))
    p = Program()
    p.add_in_launch_order(model.exp.scheme.launch_first, gemm_streams, comm_streams)
    return p


def run_ficco_char(model) -> ProgramRun:
    """Run the configured characterization part on ``model`` (module doc)."""
    ctx = CharContext(model)
    model.attach(ctx)
    ctx.run = run_program(model, char_program(model, ctx), phase_order=("ag", "rs", "gemm"))
    return ctx.run


register_simulation("ficco_char", run_ficco_char)
register_scheme(Scheme("ficco_char", "FiCCO's characterization: the GEMM as 1/8/64 row or (accumulating) column "
                       "chunks alone, the all-gather alone whole or in N all-to-all steps (copy engines or RCCL) or "
                       "shard by shard peer to peer, or a GEMM shard beside one step (DIL and CIL)",
                       label="FiCCO characterization", color="#bcbd22", paper_section="FiCCO Secs. IV-C, IV-D",
                       simulation="ficco_char", directions=("ag_gemm",),
                       study="FiCCO's characterization runs (the overlap's parts alone or cut up), not a way to run "
                             "the operation"))
