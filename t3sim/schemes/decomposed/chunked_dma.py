"""``chunked_dma``: the ``chunked`` decomposition with DMA-driven communication.

What PyTorch AsyncTP's ``fused_matmul_reduce_scatter`` over symmetric memory and Transformer Engine's
userbuffers with copy engines do instead of an NCCL reduce-scatter per chunk:

1. **Scatter** (kernel kind ``dma``, stream ``dma``, no CUs): when GEMM chunk ``i`` ends, every GPU
   ``g``'s copy engines (:class:`~t3sim.dma.copy_engine.CopyEngines`, direction ``d2p``) copy, for
   every peer ``p != g``, the 1/N *shard* of chunk ``i``'s output that ``p`` owns into ``p``'s receive
   slot for (chunk ``i``, source ``g``): N - 1 copies per GPU and chunk, one engine each (more copies
   than engines queue). Each copy request reads its lines from local memory (category ``rs``) and
   writes them into the peer's memory over the network
   (:class:`~t3sim.interconnect.network.Network`): a plain-store
   :class:`~t3sim.dma.engine.Payload` on a :class:`~t3sim.dma.engine.Fabric` listening on a port of
   its own, whose arriving packets become uncached communication-stream writes (category ``rs``) in
   the destination's memory. A copy is done when its last request has landed there.
2. **Reduction** (kernel kind ``copy``, stream ``compute``): once the last chunk's scatters have
   landed, one local reduction kernel per GPU -- the SM copy kernel's CTAs and request mechanics
   (:meth:`~t3sim.dma.copy_kernel.SMCopyKernel.reduce`, through the GPU's one WG dispatcher) -- reads
   the N partial shards of every chunk (its own, in C, and the N - 1 received) and writes the reduced
   shard over its own partial in C: N x shard bytes read, 1 x shard written.
3. The all-gather of C, as ``chunked`` runs it (:func:`~t3sim.system.model.SystemModel.collective`).
   GPU ``g``'s reduced data is its shard of every chunk (not one contiguous block as the collective's
   plan assumes): the all-gather moves the same bytes, so its time is that of the AG of C.

Ownership: a chunk's output (contiguous, :mod:`t3sim.workload.chunks`) is cut at 64 B request
boundaries into N shards, shard ``p`` = requests ``[p R / N, (p+1) R / N)`` of its ``R`` requests.

Homogeneous mode (paper Sec. 5.1.1): GPU 0 is simulated; by rotation symmetry shadow ``j``'s copy to
peer ``j + d`` (mod N) is GPU 0's copy to peer ``d``. When GPU 0's engine sends a request of its copy
to ``d``, every shadow ``j`` sends the same fraction of its copy to ``j + d`` at that instant (the way
:mod:`t3sim.schemes.t3.t3` mirrors its DMA batches), so every link carries every GPU's traffic and the
shadows' writes into GPU 0's receive slots reach its memory controllers as real traffic; packets to
shadows are delivered and dropped. A scatter ends when GPU 0's copies and all mirrored payloads
have landed; the reduction and the all-gather run as on GPU 0.

Functional data (``simulation.functional_data``): the chunk GEMMs store :func:`~t3sim.schemes.common.functional_data.store_data`
values (GPU ``g``'s partial output) as uncached near-memory stores (the L2 keeps no values, so a
functional run does not cache C: its timing differs from the timing run's); the copy engines and the
reduction carry the values they read; :func:`check_reduced` checks every GPU's reduced shard word by
word against the sum of all GPUs' partials, and the run stops after the reduction (as T3's does: the
all-gather kernel has no functional data path).

Direction ``ag_gemm`` (``workload.direction``): the shard-based AllGather+GEMM of
:mod:`t3sim.schemes.decomposed.chunked_dma_ag` (one GEMM step per shard of A, each after the copy-engine push that
delivers it), dispatched by :func:`run_chunked_dma`.

Invariants (tests): each GPU sends (N - 1)/N of C's bytes over the links; the reduction reads N x
and writes 1 x the GPU's shard of C; every element of C is reduced exactly once.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from t3sim.compute.memhier import REQ_B
from t3sim.dma.copy_engine import Copy, CopyEngines
from t3sim.dma.copy_kernel import SMCopyKernel
from t3sim.dma.engine import Completion, Fabric, Payload
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.common.chunking import chunk_parts, compute_stream
from t3sim.schemes.decomposed.chunked_dma_ag import run_chunked_dma_ag
from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, boundary, run_program
from t3sim.schemes.common.functional_data import check_summed, store_data
from t3sim.schemes.common.outputs import FunctionalOutput

_ALL = np.uint64(0xFFFF_FFFF_FFFF_FFFF)  # every byte of a 64 B request


class DmaScatter:
    """The copy engines, fabric, receive slots and reduction kernels of ``chunked_dma`` (module doc)."""

    def __init__(self, model, parts):
        self.model, self.parts = model, parts
        n = self.n = model.n
        self.env = model.env
        self.homogeneous = model.mode == "homogeneous"
        self.functional = model.exp.simulation.functional_data
        eb = model.elem_B
        cfg = model.system.copy_engine
        if self.functional and cfg.l2_allocate:
            raise InputError("system.copy_engine.l2_allocate", "true with simulation.functional_data and "
                             "scheme.kind=chunked_dma", "false (functional copies bypass the L2, which keeps no values)")
        #: shard bounds of every chunk: bytes from the chunk's start, 64 B aligned, n + 1 each
        self.bounds: List[List[int]] = []
        self.recv: List[int] = []
        self.slot_B: List[int] = []
        for c in parts:
            nb = c.c_elems * eb
            if nb % REQ_B or c.c_offset_B % REQ_B or nb // REQ_B < n:
                raise InputError("scheme.chunks", f"{len(parts)} chunks for chunked_dma: chunk {c.index} of {nb} B at byte {c.c_offset_B} "
                                 f"of C (copies move whole {REQ_B} B requests, one shard per GPU)",
                                 f"chunks of at least {n} x {REQ_B} B, multiples of {REQ_B} B (fewer chunks), or scheme.kind=chunked")
            R = nb // REQ_B
            b = [(R * p // n) * REQ_B for p in range(n + 1)]
            self.bounds.append(b)
            slot = max(b[p + 1] - b[p] for p in range(n))
            self.slot_B.append(slot)
            self.recv.append(model.alloc((n - 1) * slot))  # slot r - 1 holds the shard from the GPU r hops back
        self.port = model.network.new_port("chunked.scatter")
        self.fabric = Fabric(model.engine, model.network, model.hiers, port=self.port, name="chunked.fabric")
        self.engines: Dict[int, CopyEngines] = {
            g: CopyEngines(model.engine, g, model.hiers[g], cfg, category="rs", peer_send=self._peer_send)
            for g in model.sim_gpus}
        self.reducers: Dict[int, SMCopyKernel] = {
            g: SMCopyKernel(model.engine, g, model.hiers[g], model.dispatchers[g], model.system.gpu, cfg, category="rs")
            for g in model.sim_gpus}
        self._done: Dict[int, Completion] = {}
        self.shadow_B = 0
        self.words_checked = 0

    # ---------------------------------------------------------------- addresses
    def shard(self, i: int, p: int) -> Tuple[int, int]:
        """Byte address and length of GPU ``p``'s shard of chunk ``i`` in C (the same on every GPU)."""
        b = self.bounds[i]
        return self.model.c_base + self.parts[i].c_offset_B + b[p], b[p + 1] - b[p]

    def slot(self, i: int, src: int, dst: int) -> int:
        """Byte address, at GPU ``dst``, of the receive slot for GPU ``src``'s shard of chunk ``i``."""
        return self.recv[i] + ((dst - src) % self.n - 1) * self.slot_B[i]

    # ---------------------------------------------------------------- the scatter
    def scatter(self, i: int):
        """Launch chunk ``i``'s scatter on every simulated GPU's copy engines; the event fires when it has landed."""
        comp = self._done[i] = Completion(self.env)
        for g in self.model.sim_gpus:
            for d in range(1, self.n):
                p = (g + d) % self.n
                src, nbytes = self.shard(i, p)
                comp.add()
                ev = self.engines[g].copy(src, self.slot(i, g, p), nbytes, "d2p", peer=p, tag=(i, d))
                ev.callbacks.append(lambda _e: comp.finish())
        comp.seal()
        return comp.done

    def _peer_send(self, gpu: int, c: Copy, off: int, dst_addrs: np.ndarray, data):
        """A copy engine's d2p request: write its lines at the peer (module doc); mirror it to the shadows."""
        ev = self.env.event()
        self.fabric.send(gpu, c.peer, Payload(dst_addrs, None, None, "store", data, category="rs",
                                              then=lambda _pl: ev.succeed()))
        if self.homogeneous and gpu == 0:
            self._mirror(c, off // REQ_B, off // REQ_B + len(dst_addrs))
        return ev

    def _mirror(self, c: Copy, j0: int, j1: int) -> None:
        """GPU 0 sent requests ``[j0, j1)`` of its copy to peer ``d``: each shadow ``j`` sends the same fraction
        of its copy to ``j + d`` now (module doc)."""
        i, d = c.tag
        n0 = c.nbytes // REQ_B
        comp = self._done[i]
        for j in range(1, self.n):
            p = (j + d) % self.n
            src, nbytes = self.shard(i, p)
            m = nbytes // REQ_B
            a, b = j0 * m // n0, j1 * m // n0
            if b <= a:
                continue
            data = None
            if self.functional and p in self.model.hiers:  # shadow j's partial values of p's shard
                data = store_data(j, src + REQ_B * np.arange(a, b, dtype=np.int64), np.full(b - a, _ALL))
            addrs = self.slot(i, j, p) + REQ_B * np.arange(a, b, dtype=np.int64)
            comp.add()
            self.shadow_B += (b - a) * REQ_B
            self.fabric.send(j, p, Payload(addrs, None, None, "store", data, category="rs",
                                           then=lambda _pl: comp.finish()))

    # ---------------------------------------------------------------- the reduction
    def reduce(self):
        """Launch every simulated GPU's reduction kernel over its shard of every chunk; event when all are written."""
        evs = []
        for g in self.model.sim_gpus:
            segs = []
            for i in range(len(self.parts)):
                own, nbytes = self.shard(i, g)
                srcs = [own] + [self.slot(i, (g - r) % self.n, g) for r in range(1, self.n)]
                segs.append((srcs, own, nbytes))
            evs.append(self.reducers[g].reduce(segs))
        return evs[0] if len(evs) == 1 else self.env.all_of(evs)

    # ---------------------------------------------------------------- results
    def stats(self) -> Stats:
        s = Stats()
        for g in self.engines:
            s.merge(f"gpu{g}.chunk_scatter", self.engines[g].stats())
            s.merge(f"gpu{g}.chunk_reduce", self.reducers[g].stats())
        s.merge("chunked.fabric", self.fabric.stats())
        s.add("chunked.fabric.shadow_B", self.shadow_B, "B", "bytes of those the homogeneous mode's shadows sent")
        return s


def check_reduced(model, ctx: DmaScatter) -> int:
    """Functional mode: every simulated GPU's shard of every chunk equals the sum of all GPUs' partials.

    Returns the number of 4 B words checked; raises AssertionError on the first mismatch."""
    checked = 0
    for g in model.sim_gpus:
        fs = model.hiers[g].mem.functional
        for i in range(len(ctx.parts)):
            base, nbytes = ctx.shard(i, g)
            addrs = base + REQ_B * np.arange(nbytes // REQ_B, dtype=np.int64)
            checked += check_summed(fs, addrs, np.full(len(addrs), _ALL), model.n, f"GPU {g} chunk {i}")
    ctx.words_checked = checked
    return checked


def chunked_dma_program(model, with_ag: Optional[bool] = None) -> Program:
    """The chunk GEMMs on ``compute``, each chunk's
    copy-engine scatter on ``dma`` when it ends, the local reduction on ``compute`` once the last scatter has
    landed, then the AG (functional mode: the check of every reduced element instead)."""
    parts = chunk_parts(model)
    ctx = DmaScatter(model, parts)
    model.attach(ctx)
    functional = ctx.functional
    last = len(parts) - 1
    p = Program()
    for c in parts:
        sink = (lambda g: FunctionalOutput(model.hiers[g], g)) if functional else None
        p.add(compute_stream(model, c.index), Kernel(f"gemm_c{c.index}", "gemm", "gemm",
                                lambda c=c, sink=sink: model.gemm(f"gemm_c{c.index}", chunk=c, sink_for=sink),
                                on_end=boundary(model) if c.index == last else None))
        p.add("dma", Kernel(f"scatter_c{c.index}", "dma", "rs", lambda c=c: ctx.scatter(c.index), comm=True,
                            after=(f"gemm_c{c.index}",)))
    p.add(compute_stream(model, 0), Kernel("reduce", "copy", "rs", ctx.reduce, comm=True,
                                           after=tuple(f"gemm_c{c.index}" for c in parts) + (f"scatter_c{last}",)))
    if model.with_ag if with_ag is None else with_ag:
        ag = (lambda: check_reduced(model, ctx) and None) if functional else \
            (lambda: model.collective("all_gather").done)
        p.add(compute_stream(model, 0), Kernel("ag", "collective", "ag", ag, comm=True, after=("reduce",)))
    return p


def run_chunked_dma(model) -> ProgramRun:
    """gemm_rs: :func:`chunked_dma_program`; ag_gemm: :mod:`t3sim.schemes.decomposed.chunked_dma_ag`."""
    if model.exp.workload.direction == "ag_gemm":
        return run_chunked_dma_ag(model)
    return run_program(model, chunked_dma_program(model))


def _one_chunk_per_shard(direction: str, tp: int) -> Dict:
    """ag_gemm: one GEMM step per shard of A (FLUX Sec. 2.2: the decomposition aligned with the number of devices;
    its chunks must be a multiple of the GPUs)."""
    return {"chunks": tp} if direction == "ag_gemm" else {}


register_simulation("chunked_dma", run_chunked_dma)
register_scheme(Scheme("chunked_dma", "GEMM in C chunks; when a chunk ends the copy engines write every peer's shard of it "
                       "into the peer's receive slot (no CUs); one local reduction kernel after the last chunk "
                       "(PyTorch AsyncTP / TE userbuffers style); then AG. workload.direction=ag_gemm: one GEMM step per "
                       "shard of A in arrival order, each after a stream wait for the copy-engine push that delivers it",
                       label="Chunked (DMA)", color="#bcbd22", paper_section="T3 Sec. 3.1; FLUX Secs. 2.2, 5",
                       simulation="chunked_dma", directions=("gemm_rs", "ag_gemm"),
                       operation_options=_one_chunk_per_shard))
