"""``ficco``: FiCCO's DMA-driven finer-grain AllGather+GEMM schedules (FiCCO Secs. III, V-A, V-B, VI-A..VI-C).

Directions ``ag_gemm`` and ``a2a_gemm`` (FiCCO excludes reduce-scatter: "DMA engines cannot reduce"; issue
14). Layout
as :mod:`t3sim.schemes.decomposed.chunked_dma_ag`: N GPUs, A is ``M x K`` row-major (forward consumer GEMMs; others
rejected, :func:`~t3sim.schemes.common.ag_gemm.check_row_sharded`), GPU ``r`` holds rows ``[r S, (r+1) S)``,
``S = M/N``, at their place in the gathered A (``model.a_base``, the same address on every GPU); B is the
local weight shard; ``C = A_gathered x B`` is ``M x N_loc``. Every FiCCO GEMM writes C **row-major**
(PyTorch's tensors, in which FiCCO is written, Sec. VI-A: a block of C's rows is contiguous only so, and
the scatter moves row blocks), whatever the trace's ``c_layout``; so C's rows ``[r0, r1)`` are bytes
``[r0, r1) x N_loc x elem`` of C.

Communication ("one-level deeper granularity (additional sharding by number of GPUs)", Sec. III-A;
"all-to-all communication pattern in steady state", Sec. III-B). GPU ``r``'s shard is cut into N pieces.
1D (row sharding): piece ``(r, s)`` = rows ``[r S + s m, r S + (s+1) m)``, ``m = M/N^2`` rows,
contiguous. Step ``s = 0..N-1``: every GPU sends its piece ``s`` to all N-1 peers at once -- N-1
copy-engine copies (direction ``d2p``, hipMemcpyDtoDAsync, Sec. IV-B1), each landing at the piece's final
place in the peer's gathered A (:class:`~t3sim.schemes.common.ag_push.ChunkAgContext`'s push: its
flags, set one path latency after the last line landed, and its homogeneous-mode mirroring). The copies
are issued on N-1 DMA streams per GPU (``gpu<g>.dma<d>``: the copies to peer ``g + d``; "multiple GPU
streams", Sec. IV-B1): stream order puts step ``s + 1``'s copy to a peer after step ``s``'s, while the
copies of one step to different peers run concurrently (on ``copy_engine.engines`` engines; more queue
FIFO). After step ``s`` a GPU holds piece ``s`` of every GPU: N pieces of ``m`` rows at stride ``S`` rows.
Streams wait for flags with stream waits (hipStreamWaitValue, Sec. VI-A): kernel kind ``wait``.

Gather and scatter ("gathering of finer-grain communication buffers (Gather) and potentially scattering
of finer-grain outputs in final output space (Scatter)", Sec. III-B) are local device-to-device copies,
one per piece (a piece's rows are contiguous), executed as ``system.copy_engine.d2d_path`` says (as the
``copy`` scheme does): by the same copy engines as the pushes (``ce``: they share the engines' FIFO) or
by SM copy kernels (``sm``, on the CUs beside the GEMMs); DRAM category ``ag`` like the pushes. Each
step gathers into a buffer of its own and its GEMM writes an output buffer of its own (no reuse, so no
write-after-read waits; assumption: a real implementation would double-buffer).

The four schedules (``scheme.ficco_schedule``). Fig. 11(b) is lost; this is a **reading** of the prose:

* ``uniform_fused_1d`` -- "combine remote and local buffers to ensure all steps execute the exact same
  GEMM (uniform)" (Sec. V-A); "all uniform schedules incur gather of local and remote received buffers"
  and "some schedules scatter output in final output space as they compute on non-contiguous rows"
  (Sec. V-B). Step ``s``: wait for the N-1 remote pieces ``s`` (step 0 too), gather the N pieces (local
  included) into a contiguous ``S``-row buffer, one fused GEMM ``S x N_loc x K`` into an output buffer,
  scatter its N row blocks of ``m`` rows to their places in C. N equal GEMMs. The gather, GEMM and
  scatter of different steps are on streams of their own (``gather``, ``compute``, ``scatter``), so step
  ``s+1``'s gather and step ``s-1``'s scatter overlap step ``s``'s GEMM and the transfers ("uniform-fused-1D
  can execute communication, gather, compute, and scatter at same time", Sec. V-B).
* ``hetero_fused_1d`` -- "at the start of the execution (first step) ... start executing on its local
  shard without waiting for any data from peer GPUs leading to heterogeneous subsequent steps (hetero)"
  (Sec. V-A): the local shard's GEMM (``S`` rows, in place: contiguous, no gather or scatter) runs at once
  while step 0's transfers go; then for every step ``s`` one fused GEMM over the N-1 remote pieces
  ``s`` (``(N-1) m`` rows) after gathering them, and a scatter of its output. 1 + N GEMMs.
* ``hetero_unfused_1d`` -- "individual kernels allowing flexible scheduling (unfused)" (Sec. V-A); "the
  Scatter/Gather operations remain unchanged" between uniform- and hetero-unfused (Sec. V-B), read as:
  none. The local shard's GEMM, then one GEMM per remote piece, directly on the piece at its place in
  the gathered A, writing its place in C (``m`` rows: contiguous in both). 1 + N(N-1) GEMMs, in the
  order the pieces are expected (step by step, peers ``g-1, g-2, ...``, as the senders issue them), each
  after a stream wait for its own flag; they are issued round robin over ``scheme.compute_streams``
  streams (the local GEMM first on stream 0), so with several streams a piece whose flag is set runs
  while an earlier one still waits ("flexible scheduling").
* ``uniform_fused_2d`` -- "2-dimensional (2D) with sharding in column (K) dimension" (Sec. V-A); "Since
  2D DMA memory copies are currently unsupported, we emulate them using equal-sized 1D copies" (Sec.
  VI-C). GPU ``r``'s shard is cut into N column blocks (``S x K/N``); step ``s``: every GPU sends block
  ``s`` to all peers; the GPU gathers the N blocks ``s`` (local included) into a contiguous ``M x K/N``
  buffer and runs an accumulating GEMM ``C += A[:, K-block s] x B[K-block s, :]`` (``M x N_loc x K/N``;
  the GEMM of step ``s > 0`` reads C's partial in its epilogue, beta = 1: each output tile's C lines are
  read, then written). The steps run in order on one stream. No scatter. Emulation: every block
  transfer and gather is one contiguous 1D copy of the block's bytes (the timing emulation of Sec.
  VI-C); so that the emulated copies carry exactly the block's data (functional mode), every GPU's A is
  stored K-block-major: block ``s`` of all GPUs is ``M x K/N`` row-major at ``a_base + s M K/N``,
  GPU ``r``'s part of it at rows ``[r S, (r+1) S)`` -- the same bytes, and the same address on every GPU.
  N GEMMs; B's K-blocks are contiguous rows of a row-major B (forward GEMMs).

Phases (as chunked_dma_ag's): ``gemm`` = from the start to the end of the last GEMM on any GPU; ``ag`` =
what runs after it (the last scatter); ``rs`` = 0; ``total`` = the operation's span. Transfers, waits,
gathers and scatters are communication (``kernels.exposed_comm_us``: time some of them run and no GEMM
does). Per GPU: bytes sent, gathered and scattered, GEMMs, stream waits (``ficco.*``).

EP all-to-all (``workload.direction=a2a_gemm``, FiCCO Sec. IV-B2; ``M`` here is the expert GEMM's rows per
GPU, the workload's M/tp). GPU ``q``'s routed tokens are a token buffer of its own (``M x K``, allocated
past the arrays), laid out as A: block ``p`` (``S`` rows, bound for expert GPU ``p``) where A's shard ``p``
is (2D: K-block-major, as A). After the all-to-all GPU ``r``'s A (the expert input) holds block ``r`` of
every GPU ``q`` at rows ``[q S, (q+1) S)``: the all-gather layout, except that what ``q`` sends to ``r`` is
``q``'s block ``r`` (different data per destination: the push of piece ``s`` to ``r`` reads the token
buffer at piece ``(r, s)``'s offset, :class:`ChunkAgContext`'s ``src_of``) and that GPU ``q``'s own block
``q`` is **read in place in its token buffer** (a reading: no local copy; the hetero local GEMM runs on
it, the uniform gathers take its piece from there), so A's own-block rows stay unwritten. The steps,
flags, gathers, GEMMs and scatters are the all-gather's.

FiCCO-rccl (``scheme.ficco_comm=rccl``): each step's transfers are one CU-driven collective kernel (an
all-gather, or an all-to-all); where the data lands and how the schedules read it:
:mod:`t3sim.schemes.ficco.ficco_rccl`.

Homogeneous mode: GPU 0 runs its whole program; the shadows' transfers are ChunkAgContext's mirrored
copies (rotation symmetry); gathers and scatters are local to GPU 0.

Functional data (explicit mode, dma; rejected with rccl): :mod:`t3sim.schemes.ficco.ficco_data`.

Invariants (tests): each GPU receives ``(N-1)/N`` of A; no GEMM starts before its pieces' flags; GEMMs per
GPU N, 1+N, 1+N(N-1), N; gathered bytes per step ``S K`` (uniform 1D), ``(N-1) m K`` (hetero fused), 0
(unfused), ``M K/N`` (2D); scattered bytes = the gathered rows' outputs (none unfused and 2D); the
operation is never faster than its GEMMs back to back.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from t3sim.compute.memhier import REQ_B
from t3sim.dma.copy_engine import CopyEngines, CopyPath
from t3sim.dma.copy_kernel import SMCopyKernel
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.schemes.ficco.heuristic import pick
from t3sim.schemes.ficco.ficco_data import FiccoData, sink_for
from t3sim.schemes.ficco.ficco_rccl import add_collectives, step_out
from t3sim.schemes.ficco.ficco_rccl import stats as rccl_stats
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, run_program
from t3sim.schemes.common.ag_gemm import check_row_sharded
from t3sim.schemes.common.ag_push import ChunkAgContext
from t3sim.schemes.common.chunking import compute_stream
from t3sim.sim.clock import TICKS_PER_US
from t3sim.workload.chunks import Chunk

#: GEMMs per GPU of each schedule, for N GPUs
GEMMS = {"uniform_fused_1d": lambda n: n, "hetero_fused_1d": lambda n: 1 + n,
         "hetero_unfused_1d": lambda n: 1 + n * (n - 1), "uniform_fused_2d": lambda n: n}


@dataclasses.dataclass
class Gemm:
    """One GEMM of a GPU's program: its chunk (kernel and operand offsets) and where its A rows come from.

    ``a_src``: ``(operand offset B, gathered-A offset B, bytes)`` segments -- the bytes of its A operand and
    the place in the gathered A they must hold (functional checks); ``c_rows``: the rows of C it computes,
    ``(first row of its output, first row of C, rows)`` runs (through the scatter when not in place)."""

    name: str
    chunk: Chunk
    step: int
    flags: Tuple[Tuple[int, int], ...]  # (owner, piece) flags it waits for (empty: none)
    a_src: List[Tuple[int, int, int]]
    accumulate: bool = False


class FiccoContext:
    """The plan, transfers, local copiers and counters of one ``ficco`` run (module doc)."""

    def __init__(self, model):
        self.model = model
        sc = model.exp.scheme
        self.schedule = sc.ficco_schedule
        #: FiCCO-rccl: a CU-driven collective per step (t3sim.schemes.ficco.ficco_rccl); a2a: the EP direction
        self.rccl = sc.ficco_comm == "rccl"
        self.a2a = model.exp.workload.direction == "a2a_gemm"
        if self.rccl and model.exp.simulation.functional_data:
            raise InputError("simulation.functional_data", "true with scheme.ficco_comm=rccl (the collective kernels "
                             "of t3sim.collectives move no functional values)", "false, or scheme.ficco_comm=dma")
        check_row_sharded(model)
        k = model.kernel
        self.n = n = model.n
        self.M, self.K, self.N_loc, self.eb = k.M, k.K, k.N, model.elem_B
        self.two_d = self.schedule == "uniform_fused_2d"
        if sc.compute_streams != 1 and self.schedule != "hetero_unfused_1d":
            raise InputError("scheme.compute_streams", f"{sc.compute_streams} with scheme.ficco_schedule="
                             f"{self.schedule}, whose GEMM steps run in order on one stream",
                             "1, or scheme.ficco_schedule=hetero_unfused_1d")
        if self.two_d and not k.trans_b:
            raise InputError("workload.sublayer", f"{k.sublayer} with uniform_fused_2d: B's K blocks are not "
                             "contiguous rows (B column-major)", "a forward consumer GEMM (IP, FC-1)")
        unit = n * n if not self.two_d else n
        if k.M % unit or (self.two_d and k.K % n):
            raise InputError("workload.tokens", f"M = {k.M} rows (K = {k.K}) with {n} GPUs and scheme.ficco_schedule="
                             f"{self.schedule}", f"M a multiple of {unit}" + (f" and K of {n}" if self.two_d else
                                                                             " (pieces of M/N^2 rows)"))
        self.S = k.M // n
        self.m = self.S // n
        self.kb = k.K // n  # 2D: columns per K block
        for what, nb in (("a piece of A", self.piece_B), ("a piece of C", self.m * self.N_loc * self.eb)):
            if nb % REQ_B:
                raise InputError("workload.tokens", f"M = {k.M}: {what} is {nb} B, not whole {REQ_B} B copy requests",
                                 f"a token count whose pieces are multiples of {REQ_B} B")
        #: the GEMMs' kernel: row-major C (module doc)
        self.base = dataclasses.replace(k, c_layout="row_major", wg_order=(
            k.wg_order if k.wg_order.get("kind") != "explicit" else {"kind": "row_major"}))
        #: a2a: each GPU's routed tokens, laid out as A (block p, GPU p's rows, where A's shard p is); the
        #: pieces sent and the local block are read from it (module doc)
        self.tok = model.alloc(self.M * self.K * self.eb) if self.a2a else None
        self.src0 = self.tok if self.a2a else model.a_base
        pieces = [[(self.piece_off(p, s), self.piece_B) for s in range(n)] for p in range(n)]
        cfg = model.system.copy_engine
        self.push: Optional[ChunkAgContext] = None
        if not self.rccl:
            self.push = ChunkAgContext(model, pieces=pieces, name="ficco", src_of=(
                lambda g, dst, j: self.tok + self.piece_off(dst, j)) if self.a2a else None)
        self.sm = cfg.d2d_path == "sm"
        self.copiers: Dict[int, CopyPath] = {
            g: SMCopyKernel(model.engine, g, model.hiers[g], model.dispatchers[g], model.system.gpu, cfg, category="ag")
            if self.sm else self.push.engines[g] if self.push else
            CopyEngines(model.engine, g, model.hiers[g], cfg, category="ag") for g in model.sim_gpus}
        self.packed_B = {g: 0 for g in model.sim_gpus}
        #: FiCCO-rccl: the launched step collectives (t3sim.schemes.ficco.ficco_rccl)
        self.collectives: list = []
        self.gathered_B = {g: 0 for g in model.sim_gpus}
        self.scattered_B = {g: 0 for g in model.sim_gpus}
        #: per GPU: (wait name, start tick, end tick) of its stream waits
        self.waits: Dict[int, List[Tuple[str, int, int]]] = {g: [] for g in model.sim_gpus}
        #: per GPU: its GEMMs, in program order; their start ticks
        self.gemms: Dict[int, List[Gemm]] = {}
        self.data = None  # functional-data checker (t3sim.schemes.ficco.ficco_data), set by run_ficco
        self._bufs: Dict[Tuple[str, int], int] = {}

    def buffer(self, what: str, s: int, nbytes: int) -> int:
        """Step ``s``'s ``what`` buffer: the same address on every GPU (allocated once)."""
        if (what, s) not in self._bufs:
            self._bufs[what, s] = self.model.alloc(nbytes)
        return self._bufs[what, s]

    # ---------------------------------------------------------------- geometry (byte offsets from a_base)
    @property
    def piece_B(self) -> int:
        return (self.S * self.kb if self.two_d else self.m * self.K) * self.eb

    def piece_off(self, p: int, s: int) -> int:
        """Offset in the gathered A of piece ``s`` of GPU ``p`` (1D: rows; 2D: K block, module doc)."""
        if self.two_d:
            return (s * self.M + p * self.S) * self.kb * self.eb
        return (p * self.S + s * self.m) * self.K * self.eb

    def piece_at(self, g: int, p: int, s: int) -> int:
        """Byte address GPU ``g`` reads piece ``s`` of GPU ``p`` at: dma: its place in the gathered A (its own:
        where it is, in A or the token buffer); rccl: its slot in the step collective's output (module doc)."""
        if self.rccl:
            return step_out(self, s) + p * self.piece_B
        return (self.src0 if p == g else self.model.a_base) + self.piece_off(p, s)

    def remote_order(self, g: int) -> List[int]:
        """GPU ``g``'s peers in the order their pieces are expected: ``g-1, g-2, ...`` (each sender issues its
        copies to ``+1, +2, ...`` first)."""
        return [(g - d) % self.n for d in range(1, self.n)]

    def kernel(self, rows: int, K: Optional[int] = None):
        k, K = self.base, K or self.K
        tm = -(-rows // k.tile_m)
        return self.model.retile(dataclasses.replace(k, M=rows, K=K, tiles_m=tm, num_wgs=tm * k.tiles_n))

    def chunk(self, i: int, rows: int, a_B: int, c_B: int, b_off: int = 0, K: Optional[int] = None) -> Chunk:
        """A GEMM of ``rows`` rows reading A at byte address ``a_B`` and writing C at ``c_B``."""
        m = self.model
        return Chunk(i, 0, "M", self.kernel(rows, K), a_B - m.a_base, b_off, c_B - m.c_base)

    # ---------------------------------------------------------------- the plan
    def plan(self, g: int) -> Tuple[List[Gemm], Dict[int, list], Dict[int, list]]:
        """GPU ``g``'s GEMMs, and per step its gather and scatter copies ``(src B, dst B, bytes)`` (module doc)."""
        n, m, S, K, eb, NB = self.n, self.m, self.S, self.K, self.eb, self.N_loc * self.eb
        c0 = self.model.c_base
        gemms: List[Gemm] = []
        gathers: Dict[int, list] = {}
        scatters: Dict[int, list] = {}
        sched = self.schedule
        if sched in ("hetero_fused_1d", "hetero_unfused_1d"):  # the local shard at once, in place
            off = g * S * K * eb
            gemms.append(Gemm("gemm_local", self.chunk(0, S, self.src0 + off, c0 + g * S * NB), -1, (),
                              [(0, off, S * K * eb)]))
        for s in range(n):
            if sched == "hetero_unfused_1d":
                for p in self.remote_order(g):
                    off = self.piece_off(p, s)
                    r0 = p * S + s * m
                    gemms.append(Gemm(f"gemm_s{s}_p{p}", self.chunk(len(gemms), m, self.piece_at(g, p, s), c0 + r0 * NB), s,
                                      ((p, s),), [(0, off, m * K * eb)]))
                continue
            owners = list(range(n)) if sched != "hetero_fused_1d" else self.remote_order(g)
            nb = self.piece_B
            if self.rccl and sched != "hetero_fused_1d":  # the step collective's output is the gathered buffer
                buf = step_out(self, s)
            else:
                buf = self.buffer("in", s, len(owners) * nb)
                gathers[s] = [(self.piece_at(g, p, s), buf + i * nb, nb) for i, p in enumerate(owners)]
            a_src = [(i * nb, self.piece_off(p, s), nb) for i, p in enumerate(owners)]
            flags = tuple((p, s) for p in owners if p != g)
            if self.two_d:
                gemms.append(Gemm(f"gemm_s{s}", self.chunk(s, self.M, buf, c0, b_off=s * self.kb * NB, K=self.kb),
                                  s, flags, a_src, accumulate=s > 0))
                continue
            rows = len(owners) * m
            out = self.buffer("out", s, rows * NB)
            gemms.append(Gemm(f"gemm_s{s}", self.chunk(s, rows, buf, out), s, flags, a_src))
            scatters[s] = [(out + i * m * NB, c0 + (p * S + s * m) * NB, m * NB) for i, p in enumerate(owners)]
        return gemms, gathers, scatters

    # ---------------------------------------------------------------- kernels' launches
    def wait(self, g: int, name: str, keys):
        """A stream wait of GPU ``g`` for the flags ``keys``: None when all are set, else the event."""
        flags = self.push.flags[g]
        pending = [flags[key] for key in keys if not flags[key].triggered]
        t0 = self.model.env.now
        rec = [name, t0, t0]
        self.waits[g].append(rec)
        if not pending:
            return None
        ev = pending[0] if len(pending) == 1 else self.model.env.all_of(pending)
        ev.callbacks.append(lambda _e: rec.__setitem__(2, self.model.env.now))
        return ev

    def local_copies(self, g: int, copies, counter: Dict[int, int]):
        """Launch GPU ``g``'s local copies ``(src, dst, bytes)`` at once; the event fires when all are written."""
        env = self.model.env
        evs = [self.copiers[g].copy(src, dst, nb, "d2d") for src, dst, nb in copies]
        counter[g] += sum(nb for _s, _d, nb in copies)
        return evs[0] if len(evs) == 1 else env.all_of(evs)

    # ---------------------------------------------------------------- results
    def stats(self) -> Stats:
        s = Stats()
        s.add("ficco.schedule", self.schedule, "text", "FiCCO schedule run (scheme.ficco_schedule)")
        s.add("ficco.piece_B", self.piece_B, "B", "bytes of one transferred piece (1D: M/N^2 rows; 2D: M/N rows x K/N)")
        push = self.push
        if push is not None:
            s.add("ficco.copies", push.copies, "count", "copy-engine transfers issued (simulated GPUs)")
            s.merge("ficco.fabric", push.fabric.stats())
            s.add("ficco.fabric.shadow_B", push.shadow_B, "B", "bytes of those the homogeneous mode's shadows sent")
        else:
            s.merge("", rccl_stats(self))
        for g in self.model.sim_gpus:
            p = f"gpu{g}.ficco"
            if push is not None:
                s.add(f"{p}.sent_B", push.engines[g].peer_B, "B", "bytes of A this GPU's copy engines sent to peers")
                s.add(f"{p}.received_B", push.received_B[g], "B", "bytes of A that landed in this GPU's buffer")
            s.add(f"{p}.gathered_B", self.gathered_B[g], "B", "bytes the gather copies moved into step buffers")
            s.add(f"{p}.scattered_B", self.scattered_B[g], "B", "bytes the scatter copies moved into C")
            s.add(f"{p}.gemms", len(self.gemms.get(g, ())), "count", "GEMM kernels this GPU ran")
            waited = [b - a for _n, a, b in self.waits[g]]
            s.add(f"{p}.waits_blocked", sum(1 for x in waited if x > 0), "count",
                  "stream waits that found a flag not yet set")
            s.add(f"{p}.wait_us_total", sum(waited) / TICKS_PER_US, "us", "sum of the stream waits' durations")
            if push is not None:
                s.merge(f"{p}_copy", push.engines[g].stats())
            if self.sm:
                s.merge(f"{p}_sm_copy", self.copiers[g].stats())
        if self.data is not None:
            s.merge("", self.data.stats())
        return s


def ficco_program(model, ctx: FiccoContext) -> Program:
    """Per simulated GPU: its DMA streams of transfers, and the schedule's wait/gather/GEMM/scatter kernels."""
    n = ctx.n
    p = Program()
    copy_kind = "copy" if ctx.sm else "dma"
    if ctx.rccl:
        add_collectives(model, ctx, p, copy_kind)
    for g in model.sim_gpus:
        for d in range(1, n if not ctx.rccl else 1):
            for s in range(n):
                p.add(f"gpu{g}.dma{d}", Kernel(f"gpu{g}.push_s{s}_d{d}", "dma", "ag",
                                               lambda g=g, d=d, s=s: ctx.push.push(g, d, s), comm=True))
        gemms, gathers, scatters = ctx.plan(g)
        ctx.gemms[g] = gemms
        last = gemms[-1].name
        for i, gm in enumerate(gemms):
            fused = gm.step in gathers
            stream = compute_stream(model, i, f"gpu{g}.") if not fused else f"gpu{g}.compute"
            # rccl: the step's data is there when the step's collective has ended
            coll: Tuple[str, ...] = (f"coll_s{gm.step}",) if ctx.rccl and gm.flags else ()
            after: Tuple[str, ...] = () if fused else coll
            if fused:  # its gather: on the gather stream, after a wait for the step's remote pieces
                gs = f"gpu{g}.gather"
                if gm.flags and not ctx.rccl:
                    p.add(gs, Kernel(f"gpu{g}.wait_s{gm.step}", "wait", "ag",
                                     lambda g=g, gm=gm: ctx.wait(g, f"wait_s{gm.step}", gm.flags), comm=True))
                p.add(gs, Kernel(f"gpu{g}.gather_s{gm.step}", copy_kind, "ag",
                                 lambda g=g, c=gathers[gm.step]: ctx.local_copies(g, c, ctx.gathered_B), comm=True,
                                 after=coll))
                after = (f"gpu{g}.gather_s{gm.step}",)
            elif gm.flags and not ctx.rccl:
                p.add(stream, Kernel(f"gpu{g}.wait_{gm.name[5:]}", "wait", "ag",
                                     lambda g=g, gm=gm: ctx.wait(g, f"wait_{gm.name[5:]}", gm.flags), comm=True))
            on_end = (lambda g=g: model.hiers[g].port.kernel_boundary()) if gm.name == last else None
            p.add(stream, Kernel(f"gpu{g}.{gm.name}", "gemm", "gemm",
                                 lambda g=g, gm=gm: model.gemm(gm.name, chunk=gm.chunk, gpus=[g],
                                                               sink_for=sink_for(ctx, g, gm),
                                                               prologue_for=ctx.data.prologue_for(g, gm)
                                                               if ctx.data else None),
                                 after=after, on_end=on_end))
            if gm.step in scatters:
                p.add(f"gpu{g}.scatter", Kernel(f"gpu{g}.scatter_s{gm.step}", copy_kind, "ag",
                                                lambda g=g, c=scatters[gm.step]: ctx.local_copies(g, c, ctx.scattered_B),
                                                comm=True, after=(f"gpu{g}.{gm.name}",)))
    return p


def run_ficco(model) -> ProgramRun:
    """Run the configured FiCCO schedule on ``model`` (module doc); functional mode checks it at the end."""
    ctx = FiccoContext(model)
    if model.exp.simulation.functional_data:
        ctx.data = FiccoData(model, ctx)
    model.attach(ctx)
    run = run_program(model, ficco_program(model, ctx))
    if ctx.data is not None:
        ctx.data.check_end()
    return run


register_simulation("ficco", run_ficco)
def _heuristic_schedule(direction: str, M: int, N: int, K: int, tp: int, peak_TFLOPS: float, elem_B: int) -> Dict:
    """FiCCO's schedule-picking heuristic (FiCCO Sec. V-C, :func:`t3sim.schemes.ficco.heuristic.pick`) on the whole
    all-gather + GEMM operator; {} for other operations."""
    if direction != "ag_gemm":
        return {}
    return {"ficco_schedule": pick(M, N, K, gpus=tp, peak_TFLOPS=peak_TFLOPS, elem_B=elem_B).schedule}


register_scheme(Scheme("ficco", "FiCCO: the AllGather decomposed one level finer than shards (N pieces per shard, "
                       "all-to-all copy-engine steps), with one of four gather/GEMM/scatter schedules "
                       "(uniform/hetero, fused/unfused, 1D/2D)", label="FiCCO", color="#8c564b",
                       paper_section="FiCCO Secs. III, V-A, V-B, VI-C", simulation="ficco",
                       directions=("ag_gemm", "a2a_gemm"), variants="ficco_schedule",
                       heuristic_pick=_heuristic_schedule))
