"""``fused_gemv_ar``: the fused GEMV + AllReduce kernel (fused-collective paper Sec. III-B, Fig. 7).

One persistent kernel per GPU does the GEMV and a two-phase direct all-reduce of its output, communicating with
GPU stores over the links as tiles are computed (zero copy: no intermediate buffer on the sender):

* **Tiles and owners.** The GEMV's ``T`` output tiles (logical WGs of ``rows_per_wg`` rows,
  :mod:`t3sim.compute.gemv_kernel`) are split into ``N`` contiguous groups; GPU ``o`` owns group ``o`` (it reduces
  those tiles: the reduce-scatter phase, then broadcasts them: the all-gather phase). Every GPU computes all ``T``
  tiles of its partial ``y``.
* **Persistent WGs.** The grid is :func:`~t3sim.schemes.fused.gpu_initiated.persistent_grid` of ``T`` and the maximum
  occupancy of the GEMV's WG with the library's extra registers (:class:`~t3sim.schemes.fused.gpu_initiated.LibraryCosts`);
  persistent WG ``p`` loops over the logical WGs ``S_p = {t : t mod grid = p}`` -- the same tiles on every GPU
  ("every physical WG is responsible for computing the same output tiles across GPUs").
* **Communication-aware order** (``scheme.fused_comm_aware``): on GPU ``g`` WG ``p`` computes its tiles owned by
  ``g+1, g+2, ..., g+N-1`` first and its own last (off: index order).
* **Phase 1, per logical WG.** The tile's main loop; then its threads store the partial tile: into the owner's
  receive slot for this GPU (a peer: CU stores over the links in ``sm_store_payload_B`` packets, posted) or into
  its own slot (the owner itself: local stores); then the bookkeeping (``fused_bookkeeping_ns``:
  the tile's WG_Done bit). The slices are ``(WG p, owner o)``: the tiles of ``S_p`` owned by ``o``; the logical WG
  that completes a slice for a peer owner issues a fence (its stores to that peer written there and acknowledged)
  and one ready-flag put into the owner's flag array ("every physical WG only sets one ready flag per peer GPU").
* **Phase 2** (WG ``p`` owns tiles of ``S_p``): it polls the ready flags of its counterpart WG ``p`` on every peer,
  then for each owned tile reads the ``N`` partials (its own slot and the peers'; uncached), adds them (``N - 1``
  adds per element at the vector rate) and stores the sum into its own ``y`` and every peer's ``y`` (the
  broadcast); then a fence and a done-flag put per peer.
* **Phase 3.** The WG polls the done flag of each peer owner of its tiles (assumption: the paper does not say how
  the broadcast's completion is signalled; the same flag protocol as phase 1), then exits.

Temporary slots, flags and the owner's ``y`` stores are uncached (symmetric-heap data read by another GPU), so the
reduce reads see what landed in DRAM.

Program: the kernel record ``fused_gemv`` (phase ``gemm``) ends when every logical WG's main loop has finished
and its stores were issued; its companion ``fused_allreduce`` (phase ``rs``) when the kernel has ended on every
simulated GPU (every WG exited, its local writes done) and every payload landed. So ``gemm`` is the GEMV part and
``rs`` the exposed all-reduce tail.

Homogeneous mode: GPU 0 is simulated; when it sends a payload or a flag, every shadow ``j`` sends the rotated one
(tile ``t + j T/N``, WG ``p + j T/N mod grid``, destination ``+ j``): into GPU 0's memory when that is where it goes,
else over the links and dropped at the shadow (as ``flux_rs``). It needs the rotation symmetry: ``T`` a multiple
of ``N``, a full last tile, the communication-aware order.

Functional data (``simulation.functional_data``): GPU ``s``'s partial is :func:`~t3sim.schemes.common.functional_data.store_data` of
``s`` at ``y``'s addresses; the owner's reduction reads the slots' values from memory and stores their sum, so at
the end every simulated GPU's ``y`` must equal the sum of all GPUs' partials (shadows' broadcasts carry the sum).

Invariants, checked at the end of every run (:mod:`t3sim.schemes.fused.fused_gemv_check`): every partial tile and every
reduced tile arrives at each GPU that needs it exactly once; no owner reads a peer's partial before that peer's
ready flag landed, and no ready (done) flag lands before the data it covers; the bytes on the links are those of
:func:`analytic_link_bytes`.
"""

from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from t3sim.collectives.plan import split_ranges
from t3sim.compute.gemv_kernel import gemv_tile
from t3sim.compute.memhier import REQ_B
from t3sim.compute.wg_program import ProgramKernel
from t3sim.dma.engine import Payload
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.fused.fused_gemv_check import FusedChecks
from t3sim.schemes.fused.gemv_ar import gemv_geometry, gemv_stats
from t3sim.schemes.fused.gpu_initiated import (Countdown, LibraryCosts, SliceTracker, launch_persistent, library_waits,
                                               occupancies, persistent_grid, run_fused_kernel, signalling)
from t3sim.schemes.runtime.program import ProgramRun
from t3sim.schemes.common.functional_data import store_data

READY, DONE = "ready", "done"


class FusedGemvAR:
    """The fused GEMV+AllReduce on every GPU (module doc): tiles, owners, WG orders, buffers, flags, counters."""

    def __init__(self, model):
        self.model = m = model
        self.env, self.N = m.env, m.n
        self.geom = geom = gemv_geometry(m)
        self.homogeneous = m.mode == "homogeneous"
        self.functional = m.exp.simulation.functional_data
        sc, gpu, rec = m.exp.scheme, m.system.gpu, m.kernel
        self.comm_aware = sc.fused_comm_aware
        self.costs = LibraryCosts.of(sc)
        self.occ = occupancies(gpu, rec.threads_per_wg, rec.registers_per_thread, rec.lds_per_wg_B,
                               self.costs.extra_registers_per_thread)
        self.T = T = geom.tiles
        self.grid = persistent_grid(T, self.occ.fused_wgs_per_cu * gpu.num_cus)
        self.owner = np.empty(T, dtype=np.int64)
        for o, (lo, hi) in enumerate(split_ranges(T, self.N)):
            self.owner[lo:hi] = o
        self._check()
        self.steps_in_flight = m.exp.workload.gemv.steps_in_flight
        self.rate = gpu.fp32_flops_per_cycle
        #: GPU -> WG -> its logical WGs (tiles) in the order it computes them
        self.orders = {g: [self.order(g, p) for p in range(self.grid)] for g in range(self.N)}
        eb = geom.elem_B
        self.slot_B = -(-geom.M * eb // REQ_B) * REQ_B
        self.slots_base = m.alloc(self.N * self.slot_B)
        keys = [(kind, src, p) for kind in (READY, DONE) for src in range(self.N) for p in range(self.grid)]
        self.completion, self.fabric, self.flags, self.fences, self.payload_B = signalling(m, self.costs, keys)
        self.trackers = {g: SliceTracker({(p, o): [t for t in self.orders[g][p] if self.owner[t] == o]
                                          for p in range(self.grid) for o in range(self.N) if o != g})
                         for g in m.sim_gpus}
        self.checks = FusedChecks(self)
        self.kernels: Dict[int, ProgramKernel] = {}
        self.computed = Countdown(self.env, T * len(m.sim_gpus))  # done: the last logical WG computed
        self.local_store_B = self.remote_store_B = self.reduce_read_B = 0

    # ---------------------------------------------------------------- layout and order
    def _check(self) -> None:
        g, N, T = self.geom, self.N, self.T
        if self.homogeneous and (T % N or g.M % g.rows_per_wg or not self.comm_aware):
            raise InputError("simulation.mode", f"homogeneous with scheme.kind=fused_gemv_ar on {T} tiles over {N} GPUs "
                             f"(M={g.M}, rows_per_wg={g.rows_per_wg}, fused_comm_aware={self.comm_aware}), which has no "
                             "rotation symmetry", f"explicit, or M a multiple of N x rows_per_wg = {N * g.rows_per_wg} "
                             "with fused_comm_aware true")
        if self.functional and (g.rows_per_wg * g.elem_B) % REQ_B:
            raise InputError("workload.gemv.rows_per_wg", f"{g.rows_per_wg} rows of {g.elem_B} B with "
                             "simulation.functional_data (tiles would share 64 B output requests, whose plain stores "
                             f"overwrite each other's words)", f"a multiple of {REQ_B // g.elem_B} rows")

    def order(self, g: int, p: int) -> List[int]:
        """WG ``p``'s tiles on GPU ``g``: remote owners ``g+1, g+2, ...`` first, its own last (module doc)."""
        tiles = range(p, self.T, self.grid)
        if not self.comm_aware:
            return list(tiles)
        return sorted(tiles, key=lambda t: ((int(self.owner[t]) - g - 1) % self.N, t))

    def slot(self, src: int) -> int:
        """Byte address (on every GPU) of the receive slot holding GPU ``src``'s partial ``y``."""
        return self.slots_base + src * self.slot_B

    def rot(self, j: int, tile: int) -> int:
        """The tile shadow ``j`` handles when GPU 0 handles ``tile`` (homogeneous mode)."""
        return (tile + j * self.T // self.N) % self.T

    def rot_wg(self, j: int, p: int) -> int:
        return (p + j * self.T // self.N) % self.grid

    # ---------------------------------------------------------------- data
    def partial(self, src: int, tile: int) -> Optional[np.ndarray]:
        """GPU ``src``'s partial values of ``tile`` (functional mode), per 64 B request of ``y``."""
        if not self.functional:
            return None
        addrs, mask = self.geom.y_requests(tile)
        return store_data(src, addrs, mask)

    def reduced(self, tile: int) -> Optional[np.ndarray]:
        if not self.functional:
            return None
        return sum(self.partial(s, tile) for s in range(self.N))

    # ---------------------------------------------------------------- sends
    def _send(self, src: int, dst: int, tile: int, kind: str, data, key) -> None:
        base = self.slot(src) if kind == "partial" else None
        addrs, _mask = self.geom.y_requests(tile, base)
        self.fences.sent(key)
        self.checks.sent(kind, dst, src, tile)

        def landed(_pl):
            self.fences.landed(key)
            self.checks.arrived(kind, dst, src, tile)

        self.fabric.send(src, dst, Payload(addrs, None, None, "store", data,
                                           category="rs" if kind == "partial" else "ag", then=landed), self.payload_B)

    def remote(self, g: int, p: int, dst: int, tile: int, kind: str, data=None) -> None:
        """GPU ``g``'s WG ``p`` stores ``tile`` (its partial, or the reduced tile: ``kind`` ``partial``/``y``) into
        ``dst``; mirrored by the shadows in homogeneous mode. The WG's fence on ``dst`` covers the shadows' mirror
        images too (GPU 0's fence stands for theirs: it ends when the slowest of the symmetric stores has landed)."""
        key = (g, p, dst)
        if g in self.model.hiers:
            self.remote_store_B += self.geom.y_span(tile)[1] - self.geom.y_span(tile)[0]
        self._send(g, dst, tile, kind, data if kind == "y" else self.partial(g, tile), key)
        if self.homogeneous and g == 0:
            for j in range(1, self.N):
                t = self.rot(j, tile)
                self._send(j, (dst + j) % self.N, t, kind, self.partial(j, t) if kind == "partial" else self.reduced(t),
                           key)

    def flag(self, g: int, p: int, dst: int, kind: str) -> None:
        """GPU ``g``'s WG ``p`` puts its ``kind`` flag into ``dst`` (mirrored in homogeneous mode)."""
        self.flags.send(g, dst, (kind, g, p), self.payload_B)
        if self.homogeneous and g == 0:
            for j in range(1, self.N):
                self.flags.send(j, (dst + j) % self.N, (kind, j, self.rot_wg(j, p)), self.payload_B)

    # ---------------------------------------------------------------- the persistent WGs
    def program(self, g: int):
        """WG programs of GPU ``g``'s fused kernel (module doc)."""
        hier, geom, N, env = self.model.hiers[g], self.geom, self.N, self.env
        costs, peers = self.costs, [(g + i) % N for i in range(1, N)]

        def prog(p: int, cu: int):
            k = self.kernels[g]
            tiles = self.orders[g][p]
            own = {}  # tile -> the write of its own partial (read back in phase 2)
            for t in tiles:  # phase 1
                yield from gemv_tile(k, hier, geom, cu, t, self.steps_in_flight, self.rate)
                o = int(self.owner[t])
                if o == g:
                    addrs, _mask = geom.y_requests(t, self.slot(g))
                    self.checks.sent("partial", g, g, t)
                    w = own[t] = hier.write(addrs, "rs", uncached=True, data=self.partial(g, t))
                    w.callbacks.append(lambda _e, t=t: self.checks.arrived("partial", g, g, t))
                    k.track_write(w)
                    self.local_store_B += geom.y_span(t)[1] - geom.y_span(t)[0]
                else:
                    self.remote(g, p, o, t, "partial")
                self.computed.tick()
                k.progressed()  # the progress meter counts logical WGs (the GEMV's tiles)
                if costs.bookkeeping_ticks:
                    yield env.timeout(costs.bookkeeping_ticks)
                for _p, o2 in self.trackers[g].complete(t):
                    yield from self.fences.fence((g, p, o2))
                    yield env.timeout(costs.api_ticks)
                    self.flag(g, p, o2, READY)
            mine = [t for t in tiles if self.owner[t] == g]
            if mine:  # phase 2: reduce the owned tiles, broadcast them
                for src in peers:
                    yield from self.flags.wait(g, (READY, src, p))
                for t in mine:
                    if not own[t].processed:  # a load after the WG's own store to the address sees the stored data
                        yield own[t]
                    k.busy(cu)
                    parts = [geom.y_requests(t, self.slot(s))[0] for s in range(N)]
                    self.checks.reduce_read(g, p, t)
                    self.reduce_read_B += REQ_B * sum(len(a) for a in parts)
                    ev = hier.read(np.concatenate(parts), "rs", uncached=True, with_data=self.functional)
                    yield ev
                    r0, r1 = geom.rows(t)
                    yield k.math(cu, (N - 1) * (r1 - r0), self.rate)
                    k.idle(cu)
                    data = None
                    if self.functional:
                        data = ev.value.reshape(N, len(parts[0]), -1).sum(axis=0)
                    addrs, _mask = geom.y_requests(t)
                    self.checks.sent("y", g, g, t)
                    w = hier.write(addrs, "ag", uncached=True, data=data)
                    w.callbacks.append(lambda _e, t=t: self.checks.arrived("y", g, g, t))
                    k.track_write(w)
                    self.local_store_B += geom.y_span(t)[1] - geom.y_span(t)[0]
                    for o in peers:
                        self.remote(g, p, o, t, "y", data)
                for o in peers:
                    yield from self.fences.fence((g, p, o))
                    yield env.timeout(costs.api_ticks)
                    self.flag(g, p, o, DONE)
            for o in sorted({int(self.owner[t]) for t in tiles} - {g}):  # phase 3
                yield from self.flags.wait(g, (DONE, o, p))

        return prog

    def launch(self):
        """Launch the fused kernel on every simulated GPU; returns the event of its GEMV part (module doc)."""
        rec = self.model.kernel
        self.kernels = launch_persistent(self.model, "fused_gemv", self.program, threads_per_wg=rec.threads_per_wg,
                                         registers_per_thread=rec.registers_per_thread
                                         + self.costs.extra_registers_per_thread, lds_per_wg_B=rec.lds_per_wg_B,
                                         num_wgs=self.grid)
        self.ended = self.env.all_of([k.start() for k in self.kernels.values()])
        self.ended.callbacks.append(lambda _e: self.completion.seal())
        return self.computed.done

    def end(self):
        """The event of the whole kernel's end (every GPU's WGs exited, every payload landed)."""
        return self.completion.done

    # ---------------------------------------------------------------- results
    def stats(self) -> Stats:
        s = Stats()
        o = self.occ
        s.add("fused.grid_wgs", self.grid, "count", "persistent WGs per GPU (a divisor of the tiles, <= max occupancy)")
        s.add("fused.logical_wgs_per_wg", self.T // self.grid, "count", "logical WGs (tiles) each persistent WG loops over")
        s.add("fused.wgs_per_cu", o.fused_wgs_per_cu, "count", "WGs per CU of the fused kernel (library registers included)")
        s.add("fused.base_wgs_per_cu", o.base_wgs_per_cu, "count", "WGs per CU of the same WG without the library")
        s.add("fused.waves_per_cu", o.fused_wgs_per_cu * o.waves_per_wg, "count", "wavefronts per CU of the fused kernel")
        s.add("fused.occupancy_reduction", round(o.reduction, 6), "ratio",
              "1 - fused / original waves per CU (the paper's embedding kernel: 0.125)")
        s.add("fused.occupancy_limiter", o.fused_limiter, "text", "the resource that limits the fused kernel's occupancy")
        s.add("fused.local_store_B", self.local_store_B, "B", "bytes the simulated GPUs' WGs stored into their own memory "
              "(own partials and reduced tiles)")
        s.add("fused.remote_store_B", self.remote_store_B, "B", "bytes the simulated GPUs' WGs stored into peers over the "
              "links (partials and broadcasts)")
        s.add("fused.reduce_read_B", self.reduce_read_B, "B", "bytes of partials the simulated GPUs' owners read to reduce")
        s.add("fused.flag_puts", self.flags.puts, "count", "ready and done flags put (all GPUs, shadows' mirrored ones included)")
        library_waits(s, self.fences, self.flags)
        s.merge("fused.fabric", self.fabric.stats())
        s.merge("fused.checks", self.checks.stats())
        return s


def analytic_link_bytes(ctx: FusedGemvAR) -> int:
    """Payload bytes every GPU together puts on the links: partials to owners, broadcasts, one 64 B request per flag.

    Per GPU ``g``: its partial requests of the tiles peers own, ``N - 1`` copies of the requests of the tiles it owns,
    and one ready and one done flag per (WG, peer) pair the WG's tiles connect."""
    geom, N, total = ctx.geom, ctx.N, 0
    reqs = [len(geom.y_requests(t)[0]) * REQ_B for t in range(ctx.T)]
    for g in range(N):
        total += sum(reqs[t] for t in range(ctx.T) if ctx.owner[t] != g)
        total += (N - 1) * sum(reqs[t] for t in range(ctx.T) if ctx.owner[t] == g)
        for p in range(ctx.grid):
            owners = {int(ctx.owner[t]) for t in ctx.orders[g][p]}
            total += REQ_B * len(owners - {g})  # ready flags to the peer owners of its tiles
            if g in owners:
                total += REQ_B * (N - 1)  # done flags after its broadcast
    return total


def run_fused(model) -> ProgramRun:
    """Run the fused GEMV+AllReduce on ``model`` (module doc)."""
    ctx = FusedGemvAR(model)
    model.attach(ctx)
    model.add_stats(lambda: gemv_stats(model, ctx.geom))
    return run_fused_kernel(model, ctx, "fused_gemv", "fused_allreduce", ctx.checks.verify)


register_simulation("fused_gemv_ar", run_fused)
register_scheme(Scheme("fused_gemv_ar", "fused GEMV+AllReduce: persistent WGs store each output tile into its owner "
                       "GPU as it is computed (remote tiles first), one ready flag per peer per WG; owners reduce, then "
                       "broadcast (two-phase direct all-reduce in the GEMV kernel)", label="Fused GEMV+AllReduce",
                       color="#e377c2", paper_section="fused-collective paper Sec. III-B", simulation="fused_gemv_ar",
                       workloads=("gemv",)))
