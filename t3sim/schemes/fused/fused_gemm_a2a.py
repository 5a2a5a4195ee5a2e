"""``fused_gemm_a2a``: the fused MoE GEMM + All-to-All combine, intra-node zero-copy (fused-collective paper Secs.
II-A, III-B last paragraph, IV-B).

"GPUs perform GEMM operations and the output tiles are communicated to peer GPUs. In this case, no reduction is
performed." Each GPU's expert GEMM (``M_loc x N``, C row-major; ``M_loc / N`` rows per token GPU, the workload of
``gemm_a2a``) runs as one kernel whose WGs store each output tile straight into the final buffer of the GPU that
holds the tile's tokens (zero-copy CU stores over the links; local tiles into its own final buffer), as tiles finish:

* **Grid.** The GEMM kernel (:class:`~t3sim.compute.gemm_kernel.GemmKernel`) with the library's extra registers
  (:func:`~t3sim.schemes.fused.gpu_initiated.gemm_occupancies`): its resident slots are the persistent WGs, each taking
  the next logical WG (output tile) of the order as it finishes one (a dynamic persistent loop).
* **Communication-aware order** (``scheme.fused_comm_aware``): on GPU ``g`` the tiles of GPU ``g+1``'s rows first,
  then ``g+2``'s, ..., its own last; within one destination the kernel's own tile order (off: the kernel's order).
* **Per tile.** The WG's stores (requests of the tile, in link packets of ``interconnect.sm_store_payload_B``,
  each with ``packet_header_B`` overhead), then the bookkeeping (``fused_bookkeeping_ns``). **Slices** are rows of
  tiles (``tile_m`` output rows, all ``N`` columns: rows of one destination); the WG that completes a remote slice
  fences the slice's stores (all landed, plus the acknowledgement's path latency and the API latency) and puts the
  slice's ready flag into the destination (API latency, one 64 B request). The WG holds its slot meanwhile.
* **Receivers poll.** When a GPU's GEMM kernel has ended, its WGs poll the ready flags of every remote slice it
  receives (each flag by one WG, concurrently); the operation ends when every flag was seen and every payload landed.

Receive layout: GPU ``d``'s final buffer holds block ``s`` (the rows from GPU ``s``) at ``recv + s x block``,
each block in C's row-major layout. Homogeneous mode mirrors GPU 0's sends and flags rotated by one row block per
shadow (the rotation symmetry needs the communication-aware order and ``M_loc`` a multiple of ``N x tile_m``).
Functional data: a tile's values are :func:`~t3sim.schemes.common.functional_data.store_data` of its source GPU at its C addresses.
Program: ``fused_gemm`` (phase ``gemm``) ends with the GEMM kernels; ``fused_a2a`` (phase ``rs``) is the exposed
tail. End-of-run invariants (:meth:`FusedGemmA2A.verify`): every tile arrives exactly once at its destination, every flag
after its slice's tiles, every incoming flag seen after it landed, values word by word.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Dict

import numpy as np

from t3sim.compute.addresses import wg_store_requests
from t3sim.compute.gemm_kernel import GemmKernel
from t3sim.compute.sinks import Stored
from t3sim.compute.memhier import REQ_B
from t3sim.dma.engine import Payload
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.fused.gpu_initiated import (LibraryCosts, SliceTracker, check_once, check_polls, check_rotation,
                                               gemm_occupancies, run_fused_kernel, signalling)
from t3sim.schemes.runtime.program import ProgramRun
from t3sim.schemes.common.functional_data import store_data
from t3sim.sim.clock import TICKS_PER_NS
from t3sim.workload.wg_order import wg_order

FULL = np.uint64(0xFFFFFFFFFFFFFFFF)


class FusedGemmA2A:
    """The fused GEMM+All-to-All on every GPU (module doc)."""

    def __init__(self, model):
        self.model = m = model
        self.env, self.N = m.env, m.n
        self.k = k = m.kernel
        sc = m.exp.scheme
        self.homogeneous = m.mode == "homogeneous"
        self.functional = m.exp.simulation.functional_data
        self.comm_aware = sc.fused_comm_aware
        self.costs = LibraryCosts.of(sc)
        self.occ = gemm_occupancies(m.system.gpu, k, self.costs.extra_registers_per_thread)
        self.kf = replace(k, registers_per_thread=k.registers_per_thread + self.costs.extra_registers_per_thread)
        self._check()
        self.tpb = k.tiles_m // self.N  # tile rows per destination block
        self.block_B = (k.M // self.N) * k.N * m.elem_B
        self.recv_B = m.alloc(self.N * self.block_B)
        keys = [(s, tm) for s in range(self.N) for tm in range(k.tiles_m)]
        self.completion, self.fabric, self.flags, self.fences, self.payload_B = signalling(m, self.costs, keys)
        tn = k.tiles_n
        self.trackers = {g: SliceTracker({tm: range(tm * tn, tm * tn + tn) for tm in range(k.tiles_m)
                                          if self.dest(tm) != g}) for g in m.sim_gpus}
        self.arrivals: Dict[tuple, list] = defaultdict(list)
        self.seen: Dict[tuple, int] = {}
        self.kernels: Dict[int, GemmKernel] = {}
        self.local_store_B = self.remote_store_B = 0
        self.checked = {"tiles_once": 0, "flags_checked": 0, "polls_checked": 0, "words_checked": 0}
        self.verified = False

    def _check(self) -> None:
        k, N = self.k, self.N
        if k.c_layout != "row_major" or k.M % (N * k.tile_m):
            raise InputError("workload.gemm.M", f"{k.M} expert rows per GPU with tile_m={k.tile_m} and "
                             f"c_layout={k.c_layout} (scheme.kind=fused_gemm_a2a sends whole row tiles to {N} GPUs)",
                             f"rows per GPU a multiple of N x tile_m = {N * k.tile_m}, direction gemm_a2a")
        check_rotation(self.homogeneous, self.comm_aware)
        if self.functional and ((k.N * self.model.elem_B) % REQ_B or (k.tile_n * self.model.elem_B) % REQ_B):
            raise InputError("simulation.functional_data", "true with a tile row that is not whole 64 B requests",
                             "N and tile_n multiples of 64 B")

    def dest(self, tm: int) -> int:
        return tm // (self.k.tiles_m // self.N)

    def order(self, g: int):
        base = wg_order(self.k)
        if not self.comm_aware:
            return list(base)
        tn = self.k.tiles_n
        return sorted(base, key=lambda t: (self.dest(t // tn) - g - 1) % self.N)  # stable: the kernel's order within

    def incoming(self, g: int):
        return [(s, tm) for s in range(self.N) if s != g for tm in range(g * self.tpb, (g + 1) * self.tpb)]

    def recv_addrs(self, src: int, dst: int, c_addrs: np.ndarray) -> np.ndarray:
        return self.recv_B + src * self.block_B + (c_addrs - self.model.c_base - dst * self.block_B)

    # ---------------------------------------------------------------- sends
    def _send(self, src: int, tm: int, tn: int, c_addrs: np.ndarray, key) -> None:
        dst = self.dest(tm)
        data = store_data(src, c_addrs, np.full(len(c_addrs), FULL)) if self.functional else None
        self.fences.sent(key)

        def landed(_pl):
            self.fences.landed(key)
            self.arrivals[(dst, src, tm, tn)].append(self.env.now)

        self.fabric.send(src, dst, Payload(self.recv_addrs(src, dst, c_addrs), None, None, "store", data,
                                           category="other", then=landed), self.payload_B)

    def sink(self, g: int):
        ctx, hier, tn_ = self, self.model.hiers[g], self.k.tiles_n

        class Sink:
            def store(self, seq, tile, reqs):
                tm, tn = divmod(int(tile), tn_)
                c_addrs = np.unique(reqs.addr)
                d = ctx.dest(tm)
                if d == g:
                    data = store_data(g, c_addrs, np.full(len(c_addrs), FULL)) if ctx.functional else None
                    w, room = hier.posted_write(ctx.recv_addrs(g, g, c_addrs), "gemm", uncached=True, data=data)
                    w.callbacks.append(lambda _e: ctx.arrivals[(g, g, tm, tn)].append(ctx.env.now))
                    ctx.local_store_B += REQ_B * len(c_addrs)
                    after = ctx.env.process(ctx.after(g, tile))
                    # the WG also waits where its store met a full write queue (MemoryHierarchy.posted_write)
                    return Stored(retire=after if room is None else ctx.env.all_of([after, room]), written=w)
                key = (g, tm, d)
                ctx.remote_store_B += REQ_B * len(c_addrs)
                ctx._send(g, tm, tn, c_addrs, key)
                if ctx.homogeneous and g == 0:
                    for j in range(1, ctx.N):
                        ctx._send(j, (tm + j * ctx.tpb) % ctx.k.tiles_m, tn, c_addrs + j * ctx.block_B, key)
                return Stored(retire=ctx.env.process(ctx.after(g, tile)))

        return Sink()

    def after(self, g: int, tile: int):
        """The WG's bookkeeping after a tile, and the slice's fence and flag if it completed one."""
        if self.costs.bookkeeping_ticks:
            yield self.env.timeout(self.costs.bookkeeping_ticks)
        for tm in self.trackers[g].complete(int(tile)):
            d = self.dest(tm)
            yield from self.fences.fence((g, tm, d))
            yield self.env.timeout(self.costs.api_ticks)
            self.flags.send(g, d, (g, tm), self.payload_B)
            if self.homogeneous and g == 0:
                for j in range(1, self.N):
                    self.flags.send(j, (d + j) % self.N, (j, (tm + j * self.tpb) % self.k.tiles_m), self.payload_B)

    # ---------------------------------------------------------------- kernels
    def launch(self):
        m = self.model
        for g in m.sim_gpus:
            gk = GemmKernel(m.engine, f"gpu{g}.fused_gemm", m.hiers[g], m.system.gpu, self.kf, self.order(g),
                            m.a_base, m.b_base, m.c_base, self.sink(g), dispatcher=m.dispatchers[g])
            gk.wg_spans = [] if m.trace else None
            self.kernels[g] = gk
            m.gemm_kernels.append(gk)
        done = [gk.start() for gk in self.kernels.values()]
        self.polls = [self.env.process(self._poll(g, ev)) for g, ev in zip(self.kernels, done)]
        ended = self.env.all_of(done)
        ended.callbacks.append(lambda _e: self.completion.seal())
        return ended

    def _poll(self, g: int, kernel_done):
        yield kernel_done
        yield self.env.all_of([self.env.process(self._wait(g, key)) for key in self.incoming(g)])

    def _wait(self, g: int, key):
        yield from self.flags.wait(g, key)
        self.seen[(g, key)] = self.env.now

    def end(self):
        return self.env.all_of([self.completion.done, *self.polls])

    # ---------------------------------------------------------------- checks
    def verify(self) -> None:
        k, N, sim = self.k, self.N, set(self.model.sim_gpus)
        want = {(self.dest(tm), s, tm, tn) for s in range(N) for tm in range(k.tiles_m) for tn in range(k.tiles_n)
                if self.dest(tm) != s or s in sim}
        self.checked["tiles_once"] = check_once("fused_gemm_a2a", "tiles", self.arrivals, want)
        for (dst, (src, tm)), tick in self.flags.land_tick.items():
            for tn in range(k.tiles_n):
                at = self.arrivals[(dst, src, tm, tn)][0]
                assert at <= tick, f"fused_gemm_a2a: flag of GPU {src} slice {tm} at GPU {dst} ({tick} ps) before tile {tn} ({at} ps)"
            self.checked["flags_checked"] += 1
        self.checked["polls_checked"] = check_polls("fused_gemm_a2a", self.flags, self.seen,
                                                    {g: self.incoming(g) for g in self.model.sim_gpus})
        if self.functional:
            self.checked["words_checked"] = self._values()
        self.verified = True

    def _values(self) -> int:
        k, n = self.k, 0
        for d in self.model.sim_gpus:
            fs = self.model.hiers[d].mem.functional
            for s in range(self.N):
                for tm in range(d * self.tpb, (d + 1) * self.tpb):
                    tms = np.full(k.tiles_n, tm)
                    c_addrs = np.unique(wg_store_requests(self.kernels[d].geom, tms, np.arange(k.tiles_n)).addr)
                    got = np.stack([fs.read_addr(int(a)) for a in self.recv_addrs(s, d, c_addrs)])
                    want = store_data(s, c_addrs, np.full(len(c_addrs), FULL))
                    assert np.array_equal(got, want), f"fused_gemm_a2a: GPU {d} holds wrong rows of tile row {tm} from GPU {s}"
                    n += want.size
        return n

    def stats(self) -> Stats:
        s, o = Stats(), self.occ
        s.add("fused.wgs_per_cu", o.fused_wgs_per_cu, "count", "WGs per CU of the fused GEMM (library registers included)")
        s.add("fused.base_wgs_per_cu", o.base_wgs_per_cu, "count", "WGs per CU of the same GEMM without the library")
        s.add("fused.occupancy_reduction", round(o.reduction, 6), "ratio", "1 - fused / original waves per CU")
        s.add("fused.local_store_B", self.local_store_B, "B", "output bytes the simulated GPUs stored locally")
        s.add("fused.remote_store_B", self.remote_store_B, "B", "output bytes the simulated GPUs stored into peers")
        s.add("fused.flag_puts", self.flags.puts, "count", "ready flags put (shadows' mirrored ones included)")
        s.add("fused.fence_wait_ns", self.fences.wait_ticks / TICKS_PER_NS, "ns", "time WGs spent in fences, summed")
        s.add("fused.flag_wait_ns", self.flags.wait_ticks / TICKS_PER_NS, "ns", "time spent polling flags, summed")
        s.merge("fused.fabric", self.fabric.stats())
        s.add("fused.checks.verified", self.verified, "bool", "the end-of-run invariants were checked and held")
        for name, v in self.checked.items():
            s.add(f"fused.checks.{name}", v, "count", f"end-of-run check: {name.replace('_', ' ')}")
        return s


def analytic_link_bytes(ctx: FusedGemmA2A) -> int:
    """Payload bytes all GPUs put on the links: every GPU's tiles of its peers' rows (64 B requests) and one 64 B
    flag per remote slice."""
    N = ctx.N
    return N * (N - 1) * (ctx.block_B + REQ_B * ctx.tpb)


def run_fused(model) -> ProgramRun:
    ctx = FusedGemmA2A(model)
    model.attach(ctx)
    return run_fused_kernel(model, ctx, "fused_gemm", "fused_a2a", ctx.verify)


register_simulation("fused_gemm_a2a", run_fused)
register_scheme(Scheme("fused_gemm_a2a", "fused MoE GEMM+All-to-All combine (intra-node zero-copy): output tiles "
                       "stored into their tokens' GPUs as they finish (remote rows first), per-slice fence + ready "
                       "flag, receivers poll", label="Fused GEMM+All-to-All", color="#aec7e8",
                       paper_section="fused-collective paper Secs. III-B, IV-B", simulation="fused_gemm_a2a",
                       workloads=("gemm",), directions=("gemm_a2a",), fused_epilogue=True))
