"""``ficco``'s GEMM outputs and functional-data checks (:mod:`t3sim.schemes.ficco.ficco`).

Outputs. A GEMM of ``uniform_fused_2d``'s steps ``s > 0`` accumulates into C (beta = 1):
:class:`~t3sim.compute.sinks.AccumulatingOutput` reads each output tile's C lines, and the WG
retires when they are back (its epilogue needs them), then writes them. Every other FiCCO GEMM stores as
the plain GEMM does.

Functional data (``simulation.functional_data``, explicit mode only: the homogeneous mode's mirrored
copies carry no values). A's shards hold :func:`~t3sim.schemes.common.ag_gemm.a_values` (each GPU's own pieces
preloaded, as flux_ag's), the copies carry what they read, and:

* when a GEMM's first WG passes its prologue (so before any WG reads A), its whole A operand (step buffer
  or piece in place) must hold the gathered A's values of the rows (2D: the K blocks) it stands for;
* each output line's stores carry a value derived from the *data* the GEMM reads: ``1 +`` the first 4 B
  word of the A operand row of that output row, read from memory when the tile is stored, as a
  near-memory op-and-store (``update``: uncached adds; so a functional run's timing differs from the
  timing run's, as chunked_dma's). So at the end (:meth:`FiccoData.check_end`) C's row ``R`` holds
  ``1 + word 0 of gathered A row R`` (2D: the sum over the K blocks ``s`` of ``1 +`` word 0 of row ``R`` of
  block ``s``) exactly when row ``R`` was computed once, from the right rows, and put (scattered) in its
  place: a row computed twice doubles, a row never computed or never scattered stays 0, a row from the
  wrong data or put in the wrong place holds another row's value (word 0s are distinct per row);
* at the end every GPU's gathered A equals all GPUs' shards, word by word.

``a2a_gemm``: each GPU's token buffer holds values identifying (its GPU, offset) (:meth:`FiccoData.tok_values`);
GPU ``r``'s A rows of sender ``q`` must hold ``q``'s token-buffer values of block ``r`` (:meth:`FiccoData.want`),
checked at every GEMM's start (own block: in the token buffer), for every routed piece at the end, and
through C's rows as above.

The values must stay exact in float32 (below ``2**24``): larger shapes are rejected.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from t3sim.compute.sinks import AccumulatingOutput, Stored
from t3sim.compute.memhier import REQ_B
from t3sim.errors import InputError
from t3sim.memory.request import Stream
from t3sim.results.stats import Stats
from t3sim.schemes.common.ag_gemm import WORD_B, GatheredA, compare_lines
from t3sim.schemes.common.functional_data import word_mask


class FunctionalC:
    """Functional mode: each output line carries ``1 +`` word 0 of its A operand row (module doc)."""

    def __init__(self, model, g: int, gm):
        self.hier, self.fs = model.hiers[g], model.hiers[g].mem.functional
        k = gm.chunk.kernel
        self.c0 = model.c_base + gm.chunk.c_offset_B
        self.a0 = model.a_base + gm.chunk.a_offset_B
        self.row_c = k.N * model.elem_B
        self.row_a = k.K * model.elem_B

    def store(self, seq: int, tile: int, reqs) -> Stored:
        rows = (reqs.addr - self.c0) // self.row_c
        v = np.array([self.fs.read_addr(int(self.a0 + r * self.row_a))[0] for r in rows], dtype=np.float32) + 1
        data = np.where(word_mask(reqs.mask), v[:, None], np.float32(0)).astype(np.float32)
        written, room = self.hier.posted_write(reqs.addr, "gemm", Stream.COMPUTE, update=True, data=data)
        return Stored(retire=room, written=written)


def sink_for(ctx, g: int, gm):
    """The output sink maker of GEMM ``gm`` on GPU ``g`` (None: the plain GEMM's cached stores)."""
    if ctx.data is not None:
        return lambda _g: FunctionalC(ctx.model, g, gm)
    if gm.accumulate:
        return lambda _g: AccumulatingOutput(ctx.model.hiers[g])
    return None


class FiccoData:
    """A's functional values, the checks at GEMM starts and at the end (module doc)."""

    def __init__(self, model, ctx):
        self.model, self.ctx = model, ctx
        if model.mode != "explicit":
            raise InputError("simulation.functional_data", f"true with scheme.kind=ficco in simulation.mode={model.mode}",
                             "simulation.mode=explicit (the mirrored copies carry no values)")
        if model.system.copy_engine.l2_allocate:
            raise InputError("system.copy_engine.l2_allocate", "true with simulation.functional_data and "
                             "scheme.kind=ficco", "false (functional copies bypass the L2, which keeps no values)")
        if (ctx.N_loc * ctx.eb) % REQ_B:
            raise InputError("workload.tp", f"a C row of {ctx.N_loc * ctx.eb} B with simulation.functional_data "
                             "(each 64 B line of C must hold one row's values)", f"rows of C a multiple of {REQ_B} B")
        self.a = GatheredA(model)
        n = ctx.n
        words = ctx.M * ctx.K * ctx.eb // WORD_B
        top = n * min(words, (1 << 24) // n) + 1  # bound of 1 + a value of a_values
        if top * (n if ctx.two_d else 1) >= 1 << 24:
            raise InputError("workload.tokens", f"M = {ctx.M}, K = {ctx.K} with simulation.functional_data and "
                             "scheme.kind=ficco (check values would pass 2**24, inexact in float32)",
                             "a smaller GEMM for functional checks")
        for g in model.sim_gpus:  # each GPU's own pieces (a2a: its whole token buffer): their initial contents
            if ctx.a2a:
                off = REQ_B * np.arange(ctx.M * ctx.K * ctx.eb // REQ_B, dtype=np.int64)
                model.hiers[g].mem.functional.preload(ctx.tok + off, self.tok_values(g, off))
                continue
            for s in range(n):
                addrs = self.a.lines(ctx.piece_off(g, s), ctx.piece_B)
                model.hiers[g].mem.functional.preload(addrs, self.a.values(addrs))
        self.gemm_words = self.a_words = self.c_words = 0
        self.gemms_checked = 0

    def tok_values(self, q, off: np.ndarray) -> np.ndarray:
        """a2a: the values of GPU ``q``'s token buffer's 64 B lines at byte offsets ``off``: word ``w`` holds
        ``q + n (w mod P)`` (as :func:`~t3sim.schemes.common.ag_gemm.a_values` with ``q`` the owner); ``q`` may be
        an array (one per line)."""
        n = self.ctx.n
        w = np.asarray(off, dtype=np.int64)[:, None] // WORD_B + np.arange(REQ_B // WORD_B, dtype=np.int64)[None, :]
        return (np.asarray(q, dtype=np.int64).reshape(-1, 1) + n * (w % ((1 << 24) // n))).astype(np.float32)

    def want(self, g: int, off: np.ndarray) -> np.ndarray:
        """The values GPU ``g``'s gathered A must hold at byte offsets ``off`` (lines). ag: A's values; a2a:
        the sender ``q``'s (A's shard ``q``, 1D; its part of each K block, 2D) token buffer at the same
        offset moved from block ``q`` to block ``g`` (what ``q`` routed to ``g``)."""
        ctx = self.ctx
        off = np.asarray(off, dtype=np.int64)
        if not ctx.a2a:
            return self.a.values(self.model.a_base + off)
        cols = ctx.kb if ctx.two_d else ctx.K
        q = ((off // (cols * ctx.eb)) % ctx.M) // ctx.S
        return self.tok_values(q, off + (g - q) * ctx.S * cols * ctx.eb)

    def check_segment(self, g: int, op_B: int, src_B: int, nbytes: int, what: str) -> int:
        """GPU ``g``'s ``nbytes`` at byte address ``op_B`` hold the gathered A's values at offset ``src_B`` now."""
        lines = REQ_B * np.arange(nbytes // REQ_B, dtype=np.int64)
        got, want, i, nbad = compare_lines(self.model.hiers[g].mem.functional, op_B + lines,
                                           self.want(g, src_B + lines))
        if nbad:
            raise AssertionError(f"GPU {g} {what}: {nbad} of {got.size} words differ at tick "
                                 f"{self.model.env.now}; first at byte {i * REQ_B} of the operand (gathered A byte "
                                 f"{src_B + i * REQ_B}): got {got[i][:4]} want {want[i][:4]}")
        return got.size

    def prologue_for(self, g: int, gm):
        """The GEMM's prologue hook: at its first WG, check its whole A operand (module doc)."""
        seen = []
        a_op = self.model.a_base + gm.chunk.a_offset_B

        def prologue(fn_g):
            def hook(seq: int, tile: int) -> Optional[object]:
                if not seen:
                    seen.append(seq)
                    self.gemms_checked += 1
                    for op, src, nb in gm.a_src:
                        self.gemm_words += self.check_segment(g, a_op + op, src, nb, f"{gm.name}'s A at its start")
                return None
            return hook

        return prologue

    def check_end(self) -> None:
        """Every GPU's gathered A and C (module doc); raises AssertionError on the first mismatch."""
        ctx, m = self.ctx, self.model
        NB = ctx.N_loc * ctx.eb
        rows = np.arange(ctx.M, dtype=np.int64)
        for g in m.sim_gpus:
            if ctx.two_d:
                want = sum(self.want(g, (s * ctx.M + rows) * ctx.kb * ctx.eb)[:, 0] + 1 for s in range(ctx.n))
            else:
                want = self.want(g, rows * ctx.K * ctx.eb)[:, 0] + 1
            if not ctx.a2a:
                self.a_words += self.a.check_rows(g, 0, ctx.M, "gathered A at the end")
            else:  # every piece routed to g is in its A (its own block stays in its token buffer, read there)
                for p in range(ctx.n):
                    for s in range(ctx.n):
                        if p != g:
                            off = ctx.piece_off(p, s)
                            self.a_words += self.check_segment(g, m.a_base + off, off, ctx.piece_B, "A at the end")
            fs = m.hiers[g].mem.functional
            per = NB // REQ_B
            got = np.stack([fs.read_addr(int(m.c_base + j * REQ_B)) for j in range(ctx.M * per)])
            exp = np.repeat(want.astype(np.float32), per)[:, None]
            bad = got != exp
            if bad.any():
                i = int(np.flatnonzero(bad.any(axis=1))[0])
                raise AssertionError(f"GPU {g} C row {i // per}: {int(bad.any(axis=1).sum())} lines of C differ; "
                                     f"got {got[i][:4]} want {exp[i][0]} (2x: computed twice; 0: never computed "
                                     "or scattered; other: wrong rows or wrong place)")
            self.c_words += got.size

    def stats(self) -> Stats:
        s = Stats()
        s.add("ficco.functional.gemms_checked", self.gemms_checked, "count",
              "GEMMs whose whole A operand was checked when their first WG started")
        s.add("ficco.functional.gemm_a_words", self.gemm_words, "count", "4 B words of A checked at GEMM starts")
        s.add("ficco.functional.gathered_a_words", self.a_words, "count", "4 B words of the gathered A checked at the end")
        s.add("ficco.functional.c_words", self.c_words, "count", "4 B words of C checked at the end")
        return s
