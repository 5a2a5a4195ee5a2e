"""FLUX's thread-block-specialised pull reduction (``flux_rs`` with ``scheme.flux_reduce: pull``; Chang et al.
2024, Sec. 4.2): the part of :mod:`t3sim.schemes.flux.flux_rs` that runs the owners' pull CTAs.

Every GPU's epilogue writes its whole partial C locally (:meth:`~t3sim.schemes.flux.flux_rs.FluxContext.store_tile`);
a written partial flags each owner of its parts (a flag per partial, visible at the owner one path latency
later). The owner's ``scheme.flux_pull_ctas`` pull CTAs, resident beside the GEMM's WGs from the fused kernel's
launch (their share of the CUs through the GPU's WG dispatcher), take an owned tile once all N partials are
flagged, read the N - 1 remote partials over the links (request: path latency; data: the source's DRAM, then
the link back in ``sm_store_payload_B`` packets) and the local one, and store the sum in place. The additions
take no modelled time (a few adds per loaded element, far below the loads' time).

Homogeneous mode (``pull``), by rotation symmetry (``g -> g + k`` mod N maps GPU ``g``'s shard,
order and pulls onto GPU ``g + k``'s; with the swizzle, GPU ``k``'s order is GPU 0's shifted by
``k`` shards, exactly where the shard axis has a multiple of N tiles; rings and switches are
invariant). Partials: shadow ``j``'s ``seq``-th partial (``orders[j][seq]``) counts as written
when GPU 0's ``seq``-th is (shadows write no memory) and flags GPU 0's part of it one path
latency ``j -> 0`` later. Reads: GPU 0's pull of requests ``R`` (in shard 0) from shadow ``d``
takes the request's path latency ``0 -> d``; ``d``'s DRAM read, not simulated, is replaced by
its image under the rotation by ``-d``: GPU ``N - d`` reads the same requests of its shard from
GPU 0 then, so GPU 0's DRAM serves ``R + (N - d) x shard`` of its partial C (category ``rs``);
when that read completes every GPU ``k`` receives its data from ``k + d``: GPU 0's from ``d``,
GPU ``N - d``'s from GPU 0 (GPU 0's egress), and the shadow-to-shadow ones (dropped on arrival;
on a ring they share GPU 0's links). The reduction ends when GPU 0 stored its owned tiles and
every mirrored transfer arrived. Functional data: shadow partials are computed (``store_data``).
Without the swizzle there is no such symmetry: every GPU runs one order and the owner of the
last-written shard pulls last and ends the RS. Homogeneous mode then runs the order with GPU 0's
shard last (a relabelling: GPU 0 is that last owner, its times the operation's). The other
owners pull during the GEMM; their reads of GPU 0's partial (DRAM, egress) are still mirrored at
GPU 0's own pulls (its GEMM misses them: the GEMM phase comes out up to ~1 % short, the RS's end
within ~1 % on the tests' ring), and shadow-to-shadow reads are not sent (at GPU 0's pulls they
would pile N - 2 owners' pulls onto the links at the end, where the real run has one owner's).
Where the symmetry is broken (a shard axis not of N x whole tiles, shortest-path ties on an even
ring, DRAM channels of rotated addresses) GPU 0 stands for all GPUs, which run in lockstep (an
explicit run's tile is ready at the slowest of its N writers: homogeneous ends a little early).
"""

from __future__ import annotations

from typing import Dict, Tuple

import numpy as np
import simpy

from t3sim.compute.dispatcher import Footprint
from t3sim.compute.memhier import REQ_B
from t3sim.interconnect.network import PacketMeta
from t3sim.memory.request import Source, Stream
from t3sim.schemes.common.functional_data import store_data
from t3sim.sim.clock import ns_to_ticks

#: a pull CTA: one warpgroup (Hopper's unit of warp specialisation) of few registers, no shared memory
#: (assumption: FLUX does not publish its pull CTA's shape)
PULL_THREADS = 128
PULL_REGISTERS_PER_THREAD = 32


class FluxPull:
    """The pull reduction of a :class:`~t3sim.schemes.flux.flux_rs.FluxContext` ``ctx`` (module doc): flags, the owners'
    pull CTAs and their reads. Completion counts one item per owned tile part on every simulated owner."""

    def __init__(self, ctx):
        self.ctx = ctx
        net = ctx.model.network
        self.port = net.new_port("flux.pull")
        self.ready_count: Dict[Tuple[int, int], int] = {}
        self.queues: Dict[int, simpy.Store] = {}
        self.items: Dict[int, int] = {}
        self.taken: Dict[int, int] = {}
        self.pulled_B = 0  # bytes the pull CTAs read from peers over the links
        self.mirror_B = 0  # homogeneous mode: bytes of the shadows' mirrored pulls
        for o in ctx.model.sim_gpus:
            self.queues[o] = simpy.Store(ctx.env)
            self.items[o] = sum(1 for ps in ctx.parts for v, _ in ps if v == o)
            self.taken[o] = 0
            ctx.completion.add(self.items[o])

    # ---------------------------------------------------------------- flags
    def partial_written(self, g: int, tile: int) -> None:
        """GPU ``g``'s partial of ``tile`` is written: flag each simulated owner of its parts."""
        ctx = self.ctx
        for o, _ in ctx.parts[tile]:
            if o not in self.queues:  # a shadow owner (homogeneous mode): its pulls are not simulated
                continue
            if o == g:
                self._flag(o, tile)
            else:
                lat = ctx.model.network.path_latency_ticks(g, o)
                ctx.env.timeout(lat).callbacks.append(lambda _e, o=o, tile=tile: self._flag(o, tile))

    def _flag(self, o: int, tile: int) -> None:
        key = (o, tile)
        n = self.ready_count.get(key, 0) + 1
        self.ready_count[key] = n
        if n == self.ctx.N:
            self.queues[o].put(tile)

    def shadows_written(self, seq: int) -> None:
        """Homogeneous mode: GPU 0's ``seq``-th partial tile is written, so is every shadow ``j``'s (its order's
        ``seq``-th): flag GPU 0's parts of them (module doc)."""
        ctx = self.ctx
        for j in range(1, ctx.N):
            self.partial_written(j, ctx.orders[j][seq])

    # ---------------------------------------------------------------- the pull CTAs
    def start(self) -> None:
        """Launch every simulated GPU's pull CTAs (before the GEMM's WGs, in the fused kernel's launch)."""
        ctx = self.ctx
        gpu = ctx.model.system.gpu
        fp = Footprint.of(gpu, PULL_THREADS, PULL_REGISTERS_PER_THREAD, 0)
        n = ctx.model.exp.scheme.flux_pull_ctas
        launch = ns_to_ticks(gpu.kernel_launch_overhead_ns)
        for o in ctx.model.sim_gpus:
            disp = ctx.model.dispatchers[o]
            st = {"next": 0}

            def place(cu, o=o, st=st, disp=disp):
                st["next"] += 1
                ctx.env.process(self._puller(o, disp, st["h"], cu))

            st["h"] = disp.register(f"gpu{o}.flux_pull", fp, lambda st=st: n - st["next"], place)

            def start(_e=None, st=st, disp=disp, place=place):
                while st["next"] < n:
                    cu = disp.acquire(st["h"])
                    if cu is None:
                        break
                    place(cu)
                disp.settled(st["h"])

            ctx.env.timeout(launch).callbacks.append(start)

    def _puller(self, o: int, disp, h: int, cu: int):
        ctx = self.ctx
        env, q = ctx.env, self.queues[o]
        r = ctx.table.reqs
        hier = ctx.model.hiers[o]
        while self.taken[o] < self.items[o]:
            self.taken[o] += 1
            tile = yield q.get()
            idx = next(ix for v, ix in ctx.parts[tile] if v == o)
            addrs = r.addr[idx]
            reads = [env.process(self._mirrored_read(idx, j) if ctx.mirror else self._remote_read(o, j, addrs))
                     for j in range(ctx.N) if j != o]
            reads.append(hier.direct_read(addrs, "rs", Stream.COMM, Source.COLLECTIVE))
            got = yield env.all_of(reads)
            data = None
            if ctx.functional:
                data = sum(v if isinstance(v, np.ndarray) else v.data for v in (got[e] for e in reads))
            wev = hier.write(addrs, "rs", Stream.COMM, uncached=True, data=data)
            ctx.reduced_B += REQ_B * len(idx)
            wev.callbacks.append(lambda _e: ctx.completion.finish())
        disp.release(h, cu)

    # ---------------------------------------------------------------- reads
    def _remote_read(self, o: int, j: int, addrs: np.ndarray):
        """GPU ``o`` reads ``addrs`` of GPU ``j`` over the link: the request's path latency, ``j``'s DRAM read, the
        data back over the links. Value: the data (functional mode) or None."""
        ctx = self.ctx
        net = ctx.model.network
        yield ctx.env.timeout(net.path_latency_ticks(o, j))
        hj = ctx.model.hiers[j]
        res = yield hj.direct_read(addrs, "rs", Stream.COMM, Source.COLLECTIVE)
        nbytes = REQ_B * len(addrs)
        self.pulled_B += nbytes
        yield net.send(j, o, nbytes, PacketMeta(addr=int(addrs[0]), tag="flux.pull", port=self.port),
                       payload_B=ctx.payload_B)
        return res.data if ctx.functional else None

    def _mirrored_read(self, idx: np.ndarray, d: int):
        """Homogeneous mode: GPU 0 reads its owned requests ``idx`` of shadow ``d``'s partial (module doc). The
        request's path latency; then, for ``d``'s DRAM read, the rotation's image read at GPU 0's DRAM (shadow
        ``N - d`` reading GPU 0's partial of the same requests of its own shard); then every GPU ``k`` receives
        its data from ``k + d``: GPU 0's from ``d``, the shadows' mirrored (dropped on arrival). Value: shadow
        ``d``'s partial (functional mode) or None."""
        ctx = self.ctx
        net, N, r = ctx.model.network, ctx.N, ctx.table.reqs
        addrs = r.addr[idx]
        nbytes = REQ_B * len(addrs)
        yield ctx.env.timeout(net.path_latency_ticks(0, d))
        h0 = ctx.model.hiers[0]
        yield h0.direct_read(addrs + (N - d) * ctx.shard_B, "rs", Stream.COMM, Source.COLLECTIVE)
        self.pulled_B += nbytes
        meta = PacketMeta(addr=int(addrs[0]), tag="flux.pull", port=self.port)
        mine = net.send(d, 0, nbytes, meta, payload_B=ctx.payload_B)
        for k in range(1, N):
            if not ctx.swizzle and (k + d) % N:  # shadow-to-shadow reads: only under the rotation symmetry
                continue
            ctx.completion.add()
            self.mirror_B += nbytes
            net.send((k + d) % N, k, nbytes, meta, payload_B=ctx.payload_B).callbacks.append(
                lambda _e: ctx.completion.finish())
        yield mine
        return store_data(d, addrs, r.mask[idx]) if ctx.functional else None
