"""FiCCO-rccl (``scheme.ficco_comm=rccl``, FiCCO Sec. VI-E: "FiCCO with GPU core-based RCCL communication").

The four schedules of :mod:`t3sim.schemes.ficco.ficco` with each step's communication done by one CU-driven
collective kernel (:meth:`~t3sim.system.model.SystemModel.collective`, ``system.collective``'s protocol:
its CTAs take CUs through each GPU's dispatcher beside the GEMMs -- the compute interference that FiCCO's
DMA offload removes) instead of copy-engine pushes: step ``s`` = one ``all_gather`` of every GPU's piece
``s`` (direction ``ag_gemm``) or one ``all_to_all`` of every GPU's pieces ``s`` of each destination's block
(``a2a_gemm``). The step collectives run in order on one stream (``comm``, kernels ``coll_s<s>``); a step's
data is available when its collective has ended: the gathers and GEMMs of step ``s`` run ``after`` it (no
flags, no stream waits).

Where the data lands (a reading: the paper gives no FiCCO-rccl details). t3sim's all-gather is in place
over one array (:func:`~t3sim.collectives.algorithms` ``buf``: chunk ``p`` of the array is GPU ``p``'s, and
every GPU ends with the whole array; ``store`` receipts are written straight into the array, the receive
slots hold only unreduced copies of reductions) and its all-to-all reads an ``in`` array and writes an
``out`` array (block ``p`` of GPU ``q``'s ``in`` lands at block ``q`` of GPU ``p``'s ``out``). So each step
has an *RCCL step buffer* ``X_s``: ``N`` pieces, piece ``p`` (GPU ``p``'s) at ``X_s + p piece_B`` -- RCCL's
``recvbuff``:

* ``ag_gemm`` 1D: ``X_s`` is a buffer of its own; GPU ``g`` first copies its piece ``s`` from A into
  ``X_s``'s slot ``g`` (kernel ``gpu<g>.pack_s<s>``, a local copy by ``copy_engine.d2d_path``: RCCL's
  out-of-place all-gather's copy of ``sendbuff`` into ``recvbuff``, made explicit), then the all-gather
  fills the other slots. The all-gather's output is in ``X_s``, **not** in the gathered A (A holds only
  the GPU's own shard at the end).
* ``ag_gemm`` 2D: A is K-block-major (as with dma), so block ``s`` of all GPUs is contiguous with GPU
  ``p``'s part at chunk ``p``: the all-gather is **in place in A** (RCCL's in-place all-gather,
  ``sendbuff = recvbuff + rank count``), ``X_s`` = A's K-block ``s``; no pack.
* ``a2a_gemm`` 1D: the token buffer is block-major (:mod:`t3sim.schemes.ficco.ficco`), so step ``s``'s N pieces
  (one per destination) are at stride ``S`` rows; GPU ``g`` packs them into a contiguous send buffer
  (``pack_s<s>``: N local copies, its own piece included, since the all-to-all's local transfer
  ``g -> g`` reads it), then the all-to-all writes ``X_s`` (its ``out``). RCCL's ``ncclAllToAllv``
  (send displacements) would avoid the pack; it is not modelled.
* ``a2a_gemm`` 2D: the token buffer is K-block-major, so step ``s``'s pieces are contiguous: the
  all-to-all reads it in place and writes ``X_s``; no pack.

The schedules then read the pieces from ``X_s``: ``uniform_fused_1d``/``2d`` run their GEMM directly on
``X_s`` (the collective's output already is the contiguous step buffer the dma schedule gathers into, so
there is no gather; 1D still scatters its output rows into C); ``hetero_fused_1d`` gathers the N-1 remote
pieces from ``X_s`` into its step buffer (its local GEMM reads the own shard/block in place, as with
dma); ``hetero_unfused_1d``'s GEMMs read each remote piece in its slot of ``X_s``. Homogeneous mode: the
collective mirrors the shadows (:mod:`t3sim.collectives.gpu_run`); GPU 0 packs and computes.

Functional data is rejected: the collective kernels move no values.
"""

from __future__ import annotations

from typing import List, Tuple

from t3sim.results.stats import Stats
from t3sim.schemes.runtime.program import Kernel, Program


def step_out(ctx, s: int) -> int:
    """``X_s``: where step ``s``'s collective leaves the N pieces (module doc)."""
    if ctx.two_d and not ctx.a2a:
        return ctx.model.a_base + ctx.piece_off(0, s)
    return ctx.buffer("rccl_out", s, ctx.n * ctx.piece_B)


def step_in(ctx, s: int) -> int:
    """The collective's input array of step ``s``: ``X_s`` (all-gather, in place) or the send buffer."""
    if not ctx.a2a:
        return step_out(ctx, s)
    if ctx.two_d:
        return ctx.tok + ctx.piece_off(0, s)
    return ctx.buffer("rccl_in", s, ctx.n * ctx.piece_B)


def packs(ctx, g: int, s: int) -> List[Tuple[int, int, int]]:
    """GPU ``g``'s local copies ``(src, dst, bytes)`` that put step ``s``'s input in place (module doc)."""
    nb = ctx.piece_B
    if ctx.two_d:
        return []
    if not ctx.a2a:
        return [(ctx.model.a_base + ctx.piece_off(g, s), step_out(ctx, s) + g * nb, nb)]
    dst = step_in(ctx, s)
    return [(ctx.tok + ctx.piece_off(p, s), dst + p * nb, nb) for p in range(ctx.n)]


def launch(ctx, s: int):
    """Launch step ``s``'s collective now; its end event."""
    m = ctx.model
    a2a = ctx.a2a
    k = m.collective("all_to_all" if a2a else "all_gather", base_B=step_in(ctx, s),
                     elems=ctx.n * ctx.piece_B // ctx.eb, out_B=step_out(ctx, s) if a2a else None)
    ctx.collectives.append(k)
    return k.done


def add_collectives(model, ctx, p: Program, copy_kind: str) -> None:
    """The packs (per simulated GPU, stream ``gpu<g>.pack``) and the step collectives (stream ``comm``)."""
    for s in range(ctx.n):
        after = []
        for g in model.sim_gpus:
            copies = packs(ctx, g, s)
            if copies:
                p.add(f"gpu{g}.pack", Kernel(f"gpu{g}.pack_s{s}", copy_kind, "ag",
                                             lambda g=g, c=copies: ctx.local_copies(g, c, ctx.packed_B), comm=True))
                after.append(f"gpu{g}.pack_s{s}")
        p.add("comm", Kernel(f"coll_s{s}", "collective", "ag", lambda s=s: launch(ctx, s), comm=True,
                             after=tuple(after)))


def stats(ctx) -> Stats:
    """FiCCO-rccl's own counters (the collectives' traffic is in ``network.*`` and the GPUs' DRAM stats)."""
    s = Stats()
    s.add("ficco.collectives", len(ctx.collectives), "count", "step collective kernels launched (one per step)")
    s.add("ficco.collective_cus", max((k.hook.cus for k in ctx.collectives), default=0), "count",
          "CUs (CTAs) each step collective kernel asks for (system.collective.cus)")
    for g in ctx.model.sim_gpus:
        s.add(f"gpu{g}.ficco.packed_B", ctx.packed_B[g], "B",
              "bytes the pack copies moved into the step collectives' input buffers")
    return s
