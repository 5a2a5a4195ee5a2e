"""``fused_emb_a2a``: the fused embedding + All-to-All kernel, intra-node zero-copy (fused-collective paper Secs.
III-A, III-B, IV-B).

One persistent kernel per GPU pools every bag of its tables for the global batch and puts each pooled vector
straight into the memory of the GPU that keeps its sample, in the final layout ``{local batch, N x T x D}``
(``recv + ((b_local N + src) T + t) D e``): no local output buffer, no separate all-to-all kernel.

* **Logical WGs.** One per bag ``(t, b)`` (``B x T`` of them: "batch size=2048, tables/GPU=256 ... 512k total
  logical WGs"), each the pooling kernel's WG program (:func:`~t3sim.compute.embedding_kernel.pool_bag`).
* **Slices.** ``scheme.fused_slice_bags`` consecutive samples of one table (all kept by one GPU): slice ``(t, c)``
  holds bags ``(t, cS) .. (t, cS + S - 1)``.
* **Persistent WGs.** The grid is the maximum occupancy of the pooling WG with the library's extra registers
  (:class:`~t3sim.schemes.fused.gpu_initiated.LibraryCosts`; "a fixed, input-independent grid size (less than or equal to
  maximum occupancy)", Sec. III-A), at most the logical WG count; the logical WGs are laid out in one list (slice
  by slice, so a slice's WGs run together: "schedule logical WGs computing the same slice together") and
  persistent WG ``p`` takes entries ``p, p + grid, ...``.
* **Communication-aware order** (``scheme.fused_comm_aware``): on GPU ``g`` the list holds the slices of GPU
  ``g+1``'s samples first, then ``g+2``'s ..., its own last (off: destinations in index order, 0 first).
* **Per logical WG.** Pool the bag; its threads store the pooled vector: into the destination peer (zero-copy CU
  stores over the links: a wavefront's per-thread 4 B stores of consecutive features coalesce into 64 B requests,
  which travel in link packets of ``interconnect.sm_store_payload_B`` payload, each with ``packet_header_B`` of
  protocol overhead; posted) or into its own memory (a local slice; uncached: the output is symmetric-heap
  data); then the bookkeeping (``fused_bookkeeping_ns``: its WG_Done bit). The logical WG that completes a remote slice fences the slice's stores (every store of the
  slice written at the destination and acknowledged: each WG's release before its WG_Done bit, then the last WG's
  fence; modelled as the last WG waiting for all of the slice's payloads) and puts the slice's ``sliceRdy`` flag
  into the destination (one 64 B request, API latency).
* **Receivers poll.** After its logical WGs, persistent WG ``p`` polls a distinct subset of the flags of the
  slices its GPU receives (incoming slice ``i`` is polled by WG ``i mod grid``), then exits. Local slices set no
  flag (the kernel's end covers them; the paper keeps a local flag too, whose store is not modelled).

**Between nodes** (``interconnect.kind: multinode``): bags for another node's GPUs are staged in a send buffer and
each slice goes out as one NIC put, then a fence and the flag (:mod:`t3sim.schemes.fused.fused_emb_nic`).

Program: ``fused_emb`` (phase ``gemm``) ends when every logical WG's pooling is done and its stores were issued;
its companion ``fused_a2a`` (phase ``rs``) when the kernel has ended on every simulated GPU and every payload
landed, so ``gemm`` is the pooling part and ``rs`` the exposed all-to-all tail.

Homogeneous mode: GPU 0 is simulated; shadow ``j`` mirrors each send and flag of GPU 0 rotated by ``j`` (sample
``b + j B/N``, destination ``+ j``), as ``fused_gemv_ar`` does. The rotation symmetry needs the communication-aware
order. Functional data (fp32): every pooled vector carries its value (:meth:`EmbeddingGeometry.pooled`), checked at
the receivers. Invariants (:mod:`t3sim.schemes.fused.fused_emb_check`) are checked at the end of every run.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from t3sim.compute.embedding_kernel import pool_bag, span_requests
from t3sim.compute.memhier import REQ_B
from t3sim.compute.wg_program import ProgramKernel
from t3sim.dma.engine import Payload
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.fused.emb_a2a import emb_geometry, emb_stats
from t3sim.schemes.fused.fused_emb_check import EmbChecks
from t3sim.schemes.fused.fused_emb_nic import SlicePuts
from t3sim.schemes.fused.gpu_initiated import (Countdown, LibraryCosts, SliceTracker, check_rotation, launch_persistent,
                                               library_waits, occupancies, run_fused_kernel, signalling)
from t3sim.schemes.runtime.program import ProgramRun
from t3sim.sim.clock import TICKS_PER_NS


class FusedEmbA2A:
    """The fused embedding+All-to-All on every GPU (module doc)."""

    def __init__(self, model):
        self.model = m = model
        self.env, self.N = m.env, m.n
        self.geom = geom = emb_geometry(m)
        self.e = e = m.exp.workload.embedding_bag
        sc, gpu = m.exp.scheme, m.system.gpu
        self.homogeneous = m.mode == "homogeneous"
        self.functional = m.exp.simulation.functional_data
        self.comm_aware = sc.fused_comm_aware
        self.S = S = int(sc.fused_slice_bags)
        self.lb = lb = geom.local_batch
        self._check()
        self.cpg = lb // S
        self.C = geom.B // S
        self.costs = LibraryCosts.of(sc)
        self.occ = occupancies(gpu, e.threads_per_wg, e.registers_per_thread, 0, self.costs.extra_registers_per_thread)
        self.L = geom.B * geom.T
        self.grid = min(self.L, self.occ.fused_wgs_per_cu * gpu.num_cus)
        self.rate = gpu.fp32_flops_per_cycle
        self.recv_B = m.alloc(lb * self.N * geom.T * geom.row_B)
        keys = [(src, t, c) for src in range(self.N) for t in range(geom.T) for c in range(self.C)]
        self.completion, self.fabric, self.flags, self.fences, self.payload_B = signalling(m, self.costs, keys)
        self.orders = {g: self.order(g) for g in m.sim_gpus}
        self.trackers = {g: SliceTracker({(t, c): [(t, b) for b in range(c * S, c * S + S)]
                                          for t in range(geom.T) for c in range(self.C) if c // self.cpg != g})
                         for g in m.sim_gpus}
        self.checks = EmbChecks(self)
        self.nic = SlicePuts(self)  # inter-node slices (multinode interconnect); nothing on one node
        self.kernels: Dict[int, ProgramKernel] = {}
        self.computed = Countdown(self.env, self.L * len(m.sim_gpus))  # done: the last logical WG computed
        self.local_store_B = self.remote_store_B = 0
        self.launch_tick = 0
        self.end_ticks: Dict[int, int] = {}  # simulated GPU -> tick its fused kernel ended (last WG, polls included)

    def _check(self) -> None:
        if self.lb % self.S:
            raise InputError("scheme.fused_slice_bags", f"{self.S} with a local batch of {self.lb} samples (global "
                             f"batch {self.geom.B} over {self.N} GPUs): a slice would span two GPUs' samples",
                             f"a divisor of {self.lb}")
        check_rotation(self.homogeneous, self.comm_aware)
        ic = self.model.system.interconnect
        if self.homogeneous and ic.num_nodes > 1 and ic.gpus_per_node > 1:
            raise InputError("simulation.mode", f"homogeneous with a multinode interconnect of {ic.gpus_per_node} GPUs "
                             "per node (rotating GPU 0's traffic does not keep which peers share its node)",
                             "explicit, or interconnect.gpus_per_node=1")
        if self.functional and self.geom.elem_B != 4:
            raise InputError("workload.dtype", f"{self.model.kernel.dtype} with simulation.functional_data and "
                             "scheme.kind=fused_emb_a2a", "fp32")

    # ---------------------------------------------------------------- layout and order
    def dests(self, g: int) -> List[int]:
        return [(g + i) % self.N for i in range(1, self.N + 1)] if self.comm_aware else list(range(self.N))

    def order(self, g: int) -> Tuple[np.ndarray, np.ndarray]:
        """GPU ``g``'s logical WGs ``(t, b)`` in list order (module doc), as two arrays."""
        S, T = self.S, self.geom.T
        ts, bs = [], []
        for d in self.dests(g):
            for c in range(d * self.cpg, (d + 1) * self.cpg):
                for t in range(T):
                    ts.append(np.full(S, t, dtype=np.int64))
                    bs.append(np.arange(c * S, c * S + S, dtype=np.int64))
        return np.concatenate(ts), np.concatenate(bs)

    def incoming(self, g: int) -> List[Tuple[int, int, int]]:
        """The flag keys ``(src, t, c)`` of the remote slices GPU ``g`` receives, in polling order."""
        return [(s, t, c) for s in range(self.N) if s != g for t in range(self.geom.T)
                for c in range(g * self.cpg, (g + 1) * self.cpg)]

    def recv_requests(self, src: int, t: int, b: int) -> np.ndarray:
        lo = self.recv_B + (((b % self.lb) * self.N + src) * self.geom.T + t) * self.geom.row_B
        return span_requests(np.array([lo]), np.array([lo + self.geom.row_B]))

    def rot_b(self, j: int, b: int) -> int:
        return (b + j * self.lb) % self.geom.B

    # ---------------------------------------------------------------- sends
    def _send(self, src: int, t: int, b: int, key) -> None:
        dst = self.geom.dest(b)
        data = self.geom.pooled(src, t, b) if self.functional else None
        self.fences.sent(key)
        self.checks.sent(dst, src, t, b)

        def landed(_pl):
            self.fences.landed(key)
            self.checks.arrived(dst, src, t, b)

        self.fabric.send(src, dst, Payload(self.recv_requests(src, t, b), None, None, "store", data, category="other",
                                           then=landed), self.payload_B)

    def remote(self, g: int, t: int, b: int) -> None:
        """GPU ``g`` stores bag ``(t, b)`` into its sample's GPU; mirrored by the shadows (homogeneous)."""
        key = (g, (t, b // self.S), self.geom.dest(b))
        if g in self.model.hiers:
            self.remote_store_B += self.geom.row_B
        self._send(g, t, b, key)
        if self.homogeneous and g == 0:
            for j in range(1, self.N):
                self._send(j, t, self.rot_b(j, b), key)

    def flag(self, g: int, t: int, c: int) -> None:
        dst = c // self.cpg
        self.flags.send(g, dst, (g, t, c), self.payload_B)
        if self.homogeneous and g == 0:
            for j in range(1, self.N):
                self.flags.send(j, (dst + j) % self.N, (j, t, (c + j * self.cpg) % self.C), self.payload_B)

    # ---------------------------------------------------------------- the persistent WGs
    def program(self, g: int):
        hier, geom, env, costs = self.model.hiers[g], self.geom, self.env, self.costs
        ts, bs = self.orders[g]
        polls = self.incoming(g)
        rif = self.e.rows_in_flight

        def prog(p: int, cu: int):
            k = self.kernels[g]
            for i in range(p, self.L, self.grid):
                t, b = int(ts[i]), int(bs[i])
                yield from pool_bag(k, hier, geom, g, cu, t, b, rif, self.rate)
                if geom.dest(b) == g:  # a local slice: zero-copy into the final layout
                    self.checks.sent(g, g, t, b)
                    data = geom.pooled(g, t, b) if self.functional else None
                    w = hier.write(self.recv_requests(g, t, b), "gemm", uncached=True, data=data)
                    w.callbacks.append(lambda _e, t=t, b=b: self.checks.arrived(g, g, t, b))
                    k.track_write(w)
                    self.local_store_B += geom.row_B
                elif self.nic.remote_node(g, geom.dest(b)):  # another node: staged, the slice goes out as one put
                    self.nic.stage(k, hier, g, t, b)
                else:
                    self.remote(g, t, b)
                self.computed.tick()
                k.progressed()
                if costs.bookkeeping_ticks:
                    yield env.timeout(costs.bookkeeping_ticks)
                for st, c in self.trackers[g].complete((t, b)):
                    if self.nic.remote_node(g, c // self.cpg):
                        yield from self.nic.issue(g, st, c)
                        continue
                    yield from self.fences.fence((g, (st, c), c // self.cpg))
                    yield env.timeout(costs.api_ticks)
                    self.flag(g, st, c)
            for key in polls[p::self.grid]:
                yield from self.flags.wait(g, key)
                self.checks.polled(g, key)

        return prog

    def launch(self):
        e = self.e
        self.kernels = launch_persistent(self.model, "fused_emb", self.program, threads_per_wg=e.threads_per_wg,
                                         registers_per_thread=e.registers_per_thread
                                         + self.costs.extra_registers_per_thread, lds_per_wg_B=0, num_wgs=self.grid)
        self.launch_tick = self.env.now
        starts = []
        for g, k in self.kernels.items():
            ev = k.start()
            ev.callbacks.append(lambda _e, g=g: self.end_ticks.__setitem__(g, self.env.now))
            starts.append(ev)
        self.ended = self.env.all_of(starts)
        self.ended.callbacks.append(lambda _e: self.completion.seal())
        return self.computed.done

    def end(self):
        return self.completion.done

    # ---------------------------------------------------------------- results
    def stats(self) -> Stats:
        s, o = Stats(), self.occ
        s.add("fused.grid_wgs", self.grid, "count", "persistent WGs per GPU (min(logical WGs, max occupancy))")
        s.add("fused.logical_wgs", self.L, "count", "logical WGs (bags) per GPU")
        s.add("fused.slices", geom_slices(self), "count", "remote slices each GPU sends (one ready flag each)")
        s.add("fused.wgs_per_cu", o.fused_wgs_per_cu, "count", "WGs per CU of the fused kernel (library registers included)")
        s.add("fused.base_wgs_per_cu", o.base_wgs_per_cu, "count", "WGs per CU of the pooling WG without the library")
        s.add("fused.occupancy_reduction", round(o.reduction, 6), "ratio",
              "1 - fused / original waves per CU (the paper's embedding kernel: 0.125)")
        s.add("fused.occupancy_limiter", o.fused_limiter, "text", "the resource that limits the fused kernel's occupancy")
        s.add("fused.local_store_B", self.local_store_B, "B", "bytes of pooled vectors the simulated GPUs stored locally")
        s.add("fused.remote_store_B", self.remote_store_B, "B", "bytes of pooled vectors the simulated GPUs stored "
              "into peers over the links")
        s.add("fused.flag_puts", self.flags.puts, "count", "sliceRdy flags put (all GPUs, shadows' mirrored ones included)")
        library_waits(s, self.fences, self.flags)
        self._skew_stats(s)
        s.merge("fused.fabric", self.fabric.stats())
        s.merge("fused.checks", self.checks.stats())
        if self.nic.send_B:
            s.merge("fused", self.nic.stats())
        return s

    def _skew_stats(self, s: Stats) -> None:
        """Per simulated GPU, its fused kernel's time (launch to its last WG's end, flag polls included), and the
        skew between GPUs (the paper's Fig. 14 / Sec. IV-C measure: node 1's kernel time against node 0's)."""
        times = {g: (t - self.launch_tick) / TICKS_PER_NS / 1e3 for g, t in sorted(self.end_ticks.items())}
        for g, us in times.items():
            s.add(f"fused.kernel_us.gpu{g}", round(us, 6), "us", f"GPU {g}'s fused kernel time: launch to the end of "
                  "its last persistent WG (its flag polls included)")
        if times:
            lo, hi = min(times.values()), max(times.values())
            s.add("fused.kernel_skew", round(hi / lo - 1, 6) if lo > 0 else 0.0, "ratio",
                  "execution-time skew between GPUs: slowest / fastest simulated GPU's fused kernel time - 1 (the "
                  "paper's Sec. IV-C skew between its two nodes; homogeneous mode simulates one GPU, so 0 there by "
                  "the rotation symmetry it assumes)")


def geom_slices(ctx: FusedEmbA2A) -> int:
    return (ctx.N - 1) * ctx.cpg * ctx.geom.T


def analytic_link_bytes(ctx: FusedEmbA2A) -> int:
    """Payload bytes all GPUs together put on the links: each GPU's pooled vectors of its peers' samples (whole
    64 B requests) and one 64 B request per remote slice's flag."""
    per_bag = REQ_B * len(ctx.recv_requests(0, 0, 0))
    return ctx.N * ((ctx.N - 1) * ctx.lb * ctx.geom.T * per_bag + REQ_B * geom_slices(ctx))


def run_fused(model) -> ProgramRun:
    ctx = FusedEmbA2A(model)
    model.attach(ctx)
    model.add_stats(lambda: emb_stats(ctx.geom))
    return run_fused_kernel(model, ctx, "fused_emb", "fused_a2a", ctx.checks.verify)


register_simulation("fused_emb_a2a", run_fused)
register_scheme(Scheme("fused_emb_a2a", "fused embedding+All-to-All (intra-node zero-copy): persistent WGs pool bags "
                       "(peers' samples first) and store each pooled vector straight into its sample's GPU; the last "
                       "WG of a slice fences and puts its ready flag; receivers poll", label="Fused Embedding+All-to-All",
                       color="#bcbd22", paper_section="fused-collective paper Secs. III-A, IV-B",
                       simulation="fused_emb_a2a", workloads=("embedding_bag",),
                       table_sampling="its remote slices go destination by destination, so each link's backlog and "
                       "the fences' waits grow with the layer (mean link queue delay 5.6, 19 and 50 us at 9, 35 and 100 "
                       "tables, batch 256): its time per table is not steady (experiments/fused-a2a/README.md)"))
