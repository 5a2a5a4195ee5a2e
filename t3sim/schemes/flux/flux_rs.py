"""``flux_rs``: FLUX's fused GEMM + reduce-scatter (Chang et al. 2024, Alg. 1, Secs. 3.1, 4.1, 4.2).

One fused kernel: every WG computes its output tile as the GEMM does, and its
*epilogue* stores the tile straight into the GPU that owns those elements of
the reduce-scatter's result -- CU stores, not DMA, issued within the kernel,
over the links for a peer and into local memory for this GPU's own shard
(Alg. 1 ``GetOutput``/``Write``/``Reduce``). The reduce-scatter's shard ``o``
is the ``o``-th contiguous ``1/N`` of the output array C (the same split as
the baseline collective: rows of a row-major C, columns of a column-major one),
so a tile straddling two shards sends each part to its owner; every GPU keeps
the identical address layout, so a store lands at the same address at its
owner.

Reduction (``scheme.flux_reduce``, Sec. 4.2):

* ``atomic`` -- the epilogue's stores are atomic adds (``red``) into the owner's
  shard: local ones into this GPU's memory, remote ones over the links as
  update packets. Modelled with t3sim's one read-modify-write mechanism, the
  memory-side op-and-store (``update``) at the owner's memory controller (an
  approximation: NVIDIA GPUs perform ``red`` in the L2 slice). Only for the
  element types ``system.gpu.atomic_add_dtypes`` lists (FLUX footnote 5: no
  bf16 atomics on A100/H800); other combinations are rejected.
* ``pull`` -- every GPU stores its whole partial C locally; the owner's
  dedicated pull CTAs (thread-block specialisation, Sec. 4.2; ``scheme.flux_pull_ctas``
  of them, resident beside the GEMM's WGs from the kernel's launch, taking
  their share of the CUs through the GPU's WG dispatcher) wait for a tile's
  N partials to be written (a flag per partial: visible at the owner one path
  latency after the partial's stores completed), read the N-1 remote partials
  over the links (request: path latency; data: the source's DRAM, then the
  link back in ``sm_store_payload_B`` packets, an SM's load transactions) and
  the local one, and store the sum in place. The additions take no modelled
  time (a few adds per loaded element, far below the loads' time).
* ``a2a_local`` -- write-only all-to-all (the Write branch, Sec. 3.1): the
  epilogue stores each remote part as plain stores into the owner's receive
  slot for this source (``N - 1`` slots of one shard each, allocated on every
  GPU), the local part into C; once every GPU's stores have landed, a local
  reduction kernel on each GPU -- the one CU reduction kernel
  (:meth:`~t3sim.dma.copy_kernel.SMCopyKernel.reduce`, the SM copy kernel's
  CTAs through the GPU's WG dispatcher) -- reads the N partial shards and
  writes the sum over its own partial in C (the paper's "discrete reduction").

Stores (every variant) are posted; remote stores enter the link in
``interconnect.sm_store_payload_B`` packets. The epilogue's own time
(:mod:`t3sim.schemes.flux.costs`): after issuing a tile's stores the WG holds
its CU slot, without math, while it issues them as TMA boxes
(``scheme.flux_store_box_issue_ns`` per box of ``min(tile_m, rows of the
part)`` x ``scheme.flux_store_box_cols``, per owner's part; Sec. 6), waits for
them to be performed (a fence, ``scheme.flux_tile_fence_ns``) and sets the
tile's flag (``scheme.flux_tile_flag_ns``); a ``pull`` owner sees a partial's
flag only once that flag is set. The fused kernel's threads carry
``scheme.flux_extra_registers_per_thread`` more registers (its occupancy). With
every cost at 0 the WG retires as soon as its stores are issued. The
GEMM kernel's record ends when its WGs retired and its own local stores are
written; the companion ``flux_rs`` (communication) ends when every remote
store landed (and, for ``pull``, every owned tile was reduced and written):
``rs`` is the exposed tail, as for T3. The all-gather follows.

Tile-coordinate swizzle (``scheme.flux_swizzle``, Sec. 4.1, Fig. 7): GPU ``g``
runs the kernel's tile order with every tile's coordinate along the shard axis
shifted by ``(g + 1) x tiles / N`` (mod tiles), so at any moment the GPUs write
to different owners, and each GPU's last tiles are its own shard (the order
"starting after the local rank" of FLUX's Sec. 4.3; the shift's origin is an
assumption, the paper says only that coordinates are shifted by rank). Off:
every GPU runs the same order and all write to the same owner at once.

Homogeneous mode (``atomic`` and ``a2a_local``): GPU 0 is simulated; when it stores its
``seq``-th tile, every shadow ``j`` stores its own ``seq``-th tile (its order's),
sending every remote part over the network (to GPU 0: written into its memory;
to another shadow: the links carry it and it is dropped), so every link carries
its full traffic. GPU 0's local reduction (``a2a_local``) starts once every
store, shadows' included, has landed.

Homogeneous mode (``pull``): :mod:`t3sim.schemes.flux.flux_pull`.

Functional mode: partials are :func:`t3sim.schemes.common.functional_data.partial_value` (exact
in float32) and every simulated owner's shard is checked against the sum of all
GPUs' partials at the end of the reduce-scatter (:func:`final_shard_check`); a
functional run stops there (no all-gather), as T3's does.

Invariants (tests): each element of C is reduced exactly once per source;
bytes sent == bytes landed; the fused kernel is never faster than the GEMM
alone.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from t3sim.compute.gemm_kernel import gemm_geometry, gemm_occupancy
from t3sim.compute.sinks import Stored
from t3sim.compute.memhier import REQ_B
from t3sim.dma.copy_kernel import SMCopyKernel
from t3sim.dma.engine import Completion, Fabric, Payload
from t3sim.errors import InputError
from t3sim.memory.request import Stream
from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_US
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.flux.costs import EpilogueCosts, fused_kernel, tile_parts
from t3sim.schemes.flux.flux_pull import FluxPull
from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, boundary, run_program
from t3sim.schemes.common.functional_data import check_summed, store_data
from t3sim.schemes.common.outputs import OutputTable
from t3sim.workload import wg_order


def swizzled_order(base: List[int], g: int, n: int, tiles_m: int, tiles_n: int, col_major: bool) -> List[int]:
    """``base`` (tile numbers ``tm * tiles_n + tn``) with each tile's coordinate along the shard axis (columns of
    a column-major C, rows of a row-major one) shifted by ``(g + 1) * tiles // n`` (module doc)."""
    t = np.asarray(base, dtype=np.int64)
    tm, tn = t // tiles_n, t % tiles_n
    if col_major:
        tn = (tn + (g + 1) * tiles_n // n) % tiles_n
    else:
        tm = (tm + (g + 1) * tiles_m // n) % tiles_m
    return (tm * tiles_n + tn).tolist()


class FluxContext:
    """The fused GEMM+RS on every GPU (module doc): tile ownership, orders, the fabric, pull state, counters."""

    def __init__(self, model):
        self.model = model
        sc, k = model.exp.scheme, model.kernel
        self.variant, self.swizzle = sc.flux_reduce, sc.flux_swizzle
        self.N = N = model.n
        self.env = model.env
        self.functional = model.exp.simulation.functional_data
        self.homogeneous = model.mode == "homogeneous"
        self._check(model)
        self.shard_B = model.c_elems * model.elem_B // N
        self.payload_B = int(model.system.interconnect.sm_store_payload_B)
        geom = gemm_geometry(k, model.a_base, model.b_base, model.c_base)
        self.W = k.num_wgs
        self.table = OutputTable(geom, list(range(self.W)), k.tiles_n)  # position = tile number
        owner = (self.table.reqs.addr - model.c_base) // self.shard_B
        #: tile -> [(owner, request indices into table.reqs)], owners ascending
        self.parts: List[List[Tuple[int, np.ndarray]]] = []
        for t in range(self.W):
            a, b = self.table.start[t], self.table.start[t + 1]
            o = owner[a:b]
            self.parts.append([(int(v), a + np.flatnonzero(o == v)) for v in np.unique(o)])
        base = list(wg_order(k))
        col = k.c_layout == "col_major"
        self.orders = {g: (swizzled_order(base, g, N, k.tiles_m, k.tiles_n, col) if self.swizzle else base)
                       for g in range(N)}
        #: homogeneous pull: GPU 0's pulls of shadows' partials are mirrored reads of its own (flux_pull)
        self.mirror = self.homogeneous and self.variant == "pull"
        if self.mirror and not self.swizzle:  # one order on every GPU, GPU 0's shard last: GPU 0 is the last owner
            last = swizzled_order(base, 0, N, k.tiles_m, k.tiles_n, col)
            self.orders = {g: last for g in range(N)}
        self.completion = Completion(self.env)
        self.fabric = Fabric(model.engine, model.network, model.hiers, self.completion,
                             port=model.network.new_port("flux.stores"), name="flux.fabric")
        self.local_store_B = 0
        self.remote_store_B = 0
        self.words_checked = 0
        self.reduced_B = 0
        # a2a_local state: receive slots (slot r - 1 holds the shard from the GPU r hops back) and reducers
        self.recv = model.alloc((N - 1) * self.shard_B) if self.variant == "a2a_local" else -1
        self.reducers: Dict[int, SMCopyKernel] = {}
        if self.variant == "a2a_local":
            cfg = model.system.copy_engine
            self.reducers = {g: SMCopyKernel(model.engine, g, model.hiers[g], model.dispatchers[g], model.system.gpu,
                                             cfg, category="rs") for g in model.sim_gpus}
        #: the pull reduction (its CTAs, flags and reads), for flux_reduce=pull
        self.pull = FluxPull(self) if self.variant == "pull" else None
        #: the fused kernel (its registers) and the epilogue's costs (t3sim.schemes.flux.costs)
        self.fused = fused_kernel(k, model.system.gpu, sc.flux_extra_registers_per_thread)
        self.costs = EpilogueCosts.of(model)
        #: per tile: TMA store boxes and bytes (every owner's part)
        self.boxes = np.zeros(self.W, dtype=np.int64)
        self.tile_B = np.zeros(self.W, dtype=np.int64)
        for t in range(self.W):
            tm, tn = divmod(t, k.tiles_n)
            ps = tile_parts(k.M, k.N, k.tile_m, k.tile_n, tm, tn, model.c_elems // N, col)
            self.boxes[t] = sum(-(-c // self.costs.box_cols) for _o, _r, c in ps)  # one box row: rows <= tile_m
            self.tile_B[t] = sum(r * c for _o, r, c in ps) * model.elem_B
        self.epi = {"boxes": 0, "box_B": 0, "hold": 0, "fences": 0}

    # ---------------------------------------------------------------- checks
    def _check(self, model) -> None:
        k, N = model.kernel, self.N
        c_B = model.c_elems * model.elem_B
        if c_B % (N * REQ_B):
            raise InputError("scheme.kind", f"flux_rs with a {c_B} B output over {N} GPUs, which does not split into "
                             f"{N} shards of whole {REQ_B} B requests",
                             f"an output of a multiple of {N * REQ_B} B (workload.tokens, hidden size)")
        if self.variant == "a2a_local" and self.functional and model.system.copy_engine.l2_allocate:
            raise InputError("system.copy_engine.l2_allocate", "true with simulation.functional_data and "
                             "scheme.flux_reduce=a2a_local", "false (the reduction kernel's functional reads bypass "
                             "the L2, which keeps no values)")
        dflt = type(model.exp.scheme).model_fields["flux_pull_ctas"].default
        if self.variant != "pull" and model.exp.scheme.flux_pull_ctas != dflt:
            raise InputError("scheme.flux_pull_ctas", f"{model.exp.scheme.flux_pull_ctas} with "
                             f"scheme.flux_reduce={self.variant}, which has no pull CTAs",
                             "scheme.flux_pull_ctas only with scheme.flux_reduce=pull")
        if self.variant == "atomic" and k.dtype not in model.system.gpu.atomic_add_dtypes:
            raise InputError("scheme.flux_reduce", f"atomic with workload.dtype={k.dtype} on a GPU whose atomic add "
                             f"supports {', '.join(model.system.gpu.atomic_add_dtypes) or 'no type'} "
                             "(system.gpu.atomic_add_dtypes)",
                             "scheme.flux_reduce=pull, or workload.dtype in system.gpu.atomic_add_dtypes")
        if self.variant != "atomic" and self.functional:
            a = self.shared_requests(model)
            if a:
                raise InputError("simulation.functional_data", f"true with scheme.flux_reduce={self.variant} on tiles that share "
                                 f"{a} output requests (a plain store of one tile's partial would overwrite its "
                                 "neighbour's words)", "output tiles of whole 64 B requests, or scheme.flux_reduce=atomic")

    @staticmethod
    def shared_requests(model) -> int:
        """How many 64 B output requests two tiles share (tiles not aligned to requests)."""
        k = model.kernel
        geom = gemm_geometry(k, model.a_base, model.b_base, model.c_base)
        addr = OutputTable(geom, list(range(k.num_wgs)), k.tiles_n).reqs.addr
        return int(len(addr) - len(np.unique(addr)))

    # ---------------------------------------------------------------- the epilogue
    def store_tile(self, g: int, tile: int, flag=None):
        """GPU ``g``'s epilogue stores tile ``tile`` (module doc); returns its local write's event (None: shadow) and
        the event the WG waits for before it goes on (None unless that write met a full write queue,
        ``MemoryHierarchy.posted_write``). ``flag``: the event of the WG's flag store (pull: the owners are flagged
        once it and the write are done)."""
        h = self.model.hiers.get(g)
        r = self.table.reqs
        a, b = int(self.table.start[tile]), int(self.table.start[tile + 1])
        data = store_data(g, r.addr[a:b], r.mask[a:b]) if self.functional else None  # rows a..b-1
        wg = np.full(len(r.addr), tile, dtype=np.int64)
        written = room = None
        if self.variant == "atomic":
            for o, idx in self.parts[tile]:
                d = None if data is None else data[idx - a]
                if o == g:
                    if h is not None:
                        written, room = h.posted_write(r.addr[idx], "gemm", Stream.COMPUTE, uncached=True, update=True,
                                                       wg_id=wg[idx], wf_id=r.wf_id[idx], data=d)
                        self.local_store_B += REQ_B * len(idx)
                else:
                    if h is not None:
                        self.remote_store_B += REQ_B * len(idx)
                    self.fabric.send(g, o, Payload(r.addr[idx], wg[idx], r.wf_id[idx], "update", d), self.payload_B)
        elif self.variant == "a2a_local":  # plain stores: local part into C, remote parts into the owner's slot
            for o, idx in self.parts[tile]:
                d = None if data is None else data[idx - a]
                if o == g:
                    if h is not None:
                        written, room = h.posted_write(r.addr[idx], "gemm", Stream.COMPUTE, uncached=True,
                                                       wg_id=wg[idx], wf_id=r.wf_id[idx], data=d)
                        self.local_store_B += REQ_B * len(idx)
                else:
                    if h is not None:
                        self.remote_store_B += REQ_B * len(idx)
                    dst = self.slot(g, o) + (r.addr[idx] - self.model.c_base - o * self.shard_B)
                    self.fabric.send(g, o, Payload(dst, wg[idx], r.wf_id[idx], "store", d), self.payload_B)
        else:  # pull: the whole partial tile into local memory; flags to its owners once written
            written, room = h.posted_write(r.addr[a:b], "gemm", Stream.COMPUTE, uncached=True, wg_id=wg[a:b],
                                           wf_id=r.wf_id[a:b], data=data)
            self.local_store_B += REQ_B * (b - a)
            ready = written if flag is None else self.env.all_of([written, flag])
            ready.callbacks.append(lambda _e, g=g, tile=tile: self.pull.partial_written(g, tile))
        return written, room

    def epilogue(self, g: int, tile: int):
        """GPU ``g``'s epilogue time after issuing tile ``tile``'s stores: its boxes, the fence, the flag (module
        doc); the event of its end, None when every cost is 0."""
        c = self.costs
        if c.free:
            return None
        dests = [g] if self.variant == "pull" else [o for o, _ in self.parts[tile]]  # where its stores went
        fence = c.fence_ticks(self.model, g, dests)
        hold = int(self.boxes[tile]) * c.box_issue + fence + c.flag
        e = self.epi
        e["boxes"] += int(self.boxes[tile])
        e["box_B"] += int(self.tile_B[tile])
        e["hold"] += hold
        e["fences"] += 1 if fence else 0
        return self.env.timeout(hold)

    # ---------------------------------------------------------------- a2a_local reduction
    def slot(self, src: int, dst: int) -> int:
        """Byte address, at GPU ``dst``, of the receive slot for GPU ``src``'s part of ``dst``'s shard."""
        return self.recv + ((dst - src) % self.N - 1) * self.shard_B

    def reduce(self):
        """Launch every simulated GPU's local reduction kernel (own partial + N - 1 slots -> its shard of C)."""
        evs = []
        for g in self.model.sim_gpus:
            own = self.model.c_base + g * self.shard_B
            srcs = [own] + [self.slot((g - r) % self.N, g) for r in range(1, self.N)]
            evs.append(self.reducers[g].reduce([(srcs, own, self.shard_B)]))
            self.reduced_B += self.shard_B
        return evs[0] if len(evs) == 1 else self.env.all_of(evs)

    # ---------------------------------------------------------------- end
    def gemm_end(self) -> None:
        """The fused kernel ended: every store it will issue has been sent (homogeneous: shadows' too)."""
        self.completion.seal()

    def stats(self) -> Stats:
        s = Stats()
        s.add("flux.local_store_B", self.local_store_B, "B",
              "bytes the fused kernel's epilogues stored into their own GPU's memory (simulated GPUs)")
        s.add("flux.remote_store_B", self.remote_store_B, "B",
              "bytes the fused kernel's epilogues stored to peer GPUs over the links (simulated GPUs)")
        s.merge("flux.fabric", self.fabric.stats())
        s.add("flux.pull.remote_read_B", self.pull.pulled_B if self.pull else 0, "B",
              "bytes the pull CTAs read from peers over the links")
        s.add("flux.reduced_B", self.reduced_B, "B",
              "bytes of reduced shard stored by the pull CTAs or the local reduction kernels (simulated GPUs)")
        e = self.epi
        s.add("flux.epilogue.store_boxes", e["boxes"], "count",
              "TMA store boxes the fused epilogues issued (simulated GPUs; 0 when every epilogue cost is 0)")
        s.add("flux.epilogue.box_mean_B", e["box_B"] / e["boxes"] if e["boxes"] else 0.0, "B",
              "mean bytes of output per TMA store box (narrow boxes at small m: FLUX Sec. 6)")
        s.add("flux.epilogue.fences", e["fences"], "count", "per-tile fences with a nonzero wait (simulated GPUs)")
        s.add("flux.epilogue.hold_us", e["hold"] / TICKS_PER_US, "us",
              "sum over WGs of the epilogue's own time: box issue, fence, flag (simulated GPUs)")
        s.add("flux.fused_registers_per_thread", self.fused.registers_per_thread, "count",
              "registers per thread of the fused kernel (the GEMM's plus scheme.flux_extra_registers_per_thread)")
        s.add("flux.fused_wgs_per_cu", gemm_occupancy(self.model.system.gpu, self.fused).wgs_per_cu, "count",
              "WGs of the fused kernel resident per CU (its occupancy)")
        if self.mirror:
            s.add("flux.pull.mirrored_B", self.pull.mirror_B, "B", "homogeneous mode: bytes of the shadows' pulls "
                  "sent over the links as GPU 0 pulled (t3sim.schemes.flux.flux_pull)")
        for g, red in self.reducers.items():
            s.merge(f"gpu{g}.flux_reduce", red.stats())
        return s


class FluxOutput:
    """The fused kernel's epilogue on GPU ``g`` (module doc): an output sink of the GEMM kernel."""

    def __init__(self, ctx: FluxContext, g: int):
        self.ctx, self.g = ctx, g

    def store(self, seq: int, tile: int, reqs) -> Stored:
        ctx = self.ctx
        hold = ctx.epilogue(self.g, tile)
        written, room = ctx.store_tile(self.g, tile, hold)
        if ctx.mirror and self.g == 0:  # every shadow's seq-th partial is flagged when GPU 0's is (symmetry)
            ready = written if hold is None else ctx.env.all_of([written, hold])
            ready.callbacks.append(lambda _e, seq=seq: ctx.pull.shadows_written(seq))
        elif ctx.homogeneous and self.g == 0:  # every shadow stores its seq-th tile now (symmetry)
            for j in range(1, ctx.N):
                ctx.store_tile(j, ctx.orders[j][seq])
        # posted stores (the WG waits only where they met a full write queue); it holds its slot for its epilogue
        return Stored(retire=room, written=written, hold=hold)


def flux_program(model, ctx: FluxContext, with_ag: Optional[bool] = None) -> Program:
    """The fused kernel (with its companion, the communication it issues), then the all-gather (module doc)."""
    def gemm():
        if ctx.pull:
            ctx.pull.start()
        return model.gemm("flux_gemm", sink_for=lambda g: FluxOutput(ctx, g), order_for=lambda g: ctx.orders[g],
                          kernel=ctx.fused)

    mc_boundary = boundary(model)

    def gemm_end():
        mc_boundary()
        ctx.gemm_end()

    def rs_end():
        if ctx.functional:  # check every owner's shard now: a functional run stops after the reduce-scatter
            ctx.words_checked = final_shard_check(model)

    a2a = ctx.variant == "a2a_local"
    p = Program()
    p.add("main", Kernel("flux_gemm", "fused", "gemm", gemm, on_end=gemm_end))
    p.add("comm", Kernel("flux_rs", "fused", "rs", lambda: ctx.completion.done, comm=True, start_with="flux_gemm",
                         on_end=None if a2a else rs_end))
    last = "flux_rs"
    if a2a:  # the local reduction once every GPU's all-to-all stores have landed
        p.add("main", Kernel("flux_reduce", "copy", "rs", ctx.reduce, comm=True, after=("flux_rs",), on_end=rs_end))
        last = "flux_reduce"
    if (model.with_ag if with_ag is None else with_ag) and not ctx.functional:  # the AG has no functional data path
        p.add("main", Kernel("ag", "collective", "ag", lambda: model.collective("all_gather").done, comm=True,
                             after=(last,)))
    return p


def run_flux(model) -> ProgramRun:
    """Run the fused GEMM+RS, then the all-gather, on ``model`` (module doc)."""
    ctx = FluxContext(model)
    model.attach(ctx)
    return run_program(model, flux_program(model, ctx))


def final_shard_check(model) -> int:
    """Functional mode: every simulated GPU's shard equals the sum of all GPUs' partials. Returns the 4 B words
    checked; raises AssertionError on the first mismatch."""
    ctx: FluxContext = model.context
    r = ctx.table.reqs
    checked = 0
    for o in model.sim_gpus:
        fs = model.hiers[o].mem.functional
        for t, parts in enumerate(ctx.parts):
            for v, idx in parts:
                if v != o:
                    continue
                checked += check_summed(fs, r.addr[idx], r.mask[idx], ctx.N, f"GPU {o} tile {t}")
    return checked


register_simulation("flux_rs", run_flux)
register_scheme(Scheme("flux_rs", "FLUX: one fused kernel whose WG epilogues store each output tile into its owner GPU (CU "
                       "stores over the links), reduced by atomic adds, by pull CTAs on the owner, or by a local reduction "
                       "kernel after a write-only all-to-all; tile coordinates swizzled by rank; then AG",
                       label="FLUX", color="#d62728", paper_section="FLUX Alg. 1, Secs. 3.1, 4.1, 4.2", simulation="flux_rs",
                       fused_epilogue=True, autotune=True, variants="flux_reduce"))
