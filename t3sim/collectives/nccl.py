"""NCCL's ring collectives with the Simple protocol, timed on simulated GPUs (``collective.protocol: nccl_simple``).

The schedule (channels, chunks, ops, slices) is :mod:`t3sim.collectives.nccl_schedule`.
This module runs it. Sources: NCCL 2.28.9, ``src/device/prims_simple.h``
(``genericOp``, ``waitPeer``, ``postPeer``, the constructor's roles), ``src/device/common_kernel.h``
(``reduceCopyPacks``), ``src/enqueue.cc`` (``topoGetAlgoInfo``: one extra warp for Ring/Simple).

Each channel of each GPU is one CTA, a simpy process running its chunks' ops slice
by slice. One slice:

1. **wait** (``waitPeer``, by worker threads): a receiving op waits until the
   previous GPU's flag (``tail``) for this slice is visible; a sending op waits
   until the next GPU has freed the FIFO slot (``head``): a sender may be
   ``steps / slice_steps`` slices ahead of its receiver.
2. **copy** (``reduceCopy`` by the 512 worker threads): on the channel's own CU,
   in pieces of ``collective.inflight_per_cu_B`` bytes of output -- the loads of
   every source of a piece in flight together, then the reduction, then the
   stores (:class:`~t3sim.collectives.gpu_hook.CuPool` with one CU); with
   ``collective.cu_bandwidth_GBps`` a piece takes at least its loads and stores
   at the CU's memory-pipe rate. Stores to
   the next GPU enter the link as each piece is done (posted), carried in link
   packets of ``interconnect.sm_store_payload_B`` (CU stores); local stores go
   to memory (uncached, communication stream).
3. **barrier**: the slice ends when the workers are done *and* the extra warp
   posted the previous slice (it fences and flags slice ``k`` while the workers
   copy slice ``k+1``; the barrier closing ``k+1`` waits for it).
4. **post** (``postPeer``, by the extra warp): a receiving op frees the slot
   (``head`` store to the previous GPU, visible one path latency later); a
   sending op fences (``fence.acq_rel.sys``: its stores to the next GPU are
   acknowledged -- the slice's last arrival plus the path latency back -- and,
   with a library in ``collective.latency``, the fence's own cost: its tuning
   model's per-hop Simple latency ``hwLat[link][RING][SIMPLE]`` less the three
   path latencies of data, acknowledgement and flag) and stores the ``tail`` flag (visible at the next
   GPU one path latency later). The extra warp posts one slice at a time, so a
   channel closes at most one slice per post.
   Flags and acknowledgements are 8-byte messages: modelled as latency only
   (no link occupancy, no queueing behind data).

A GPU ends when all its channels finished their last op and its local stores
completed in memory; the collective when every GPU ended. The start-up
(``collective.latency``: software plus the library's base latency ``baseLat[RING][SIMPLE]``)
precedes every GPU's first op. NCCL's own model of a ring's latency is that base plus one per-hop
latency per step (``src/graph/tuning.cc``); here the hops are the slices' simulated ones.

Receiving: packets arriving at a simulated GPU are written into its FIFO
(uncached, communication stream); the receiving op reads them from there.

Homogeneous mode (paper Sec. 5.1.1): GPU ``ref`` is simulated in full (CUs and
memory); every other GPU's piece of (channel, chunk, op, slice, piece) completes
when the reference's did, or its duration after the shadow started it
(:class:`~t3sim.collectives.mirror.MirrorBoard`). Shadows' waits, flags and
packets are simulated; their packets to the reference GPU are written into its memory.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import simpy

from t3sim.collectives.gpu_hook import CuPool, _Group, _Piece, line_addrs
from t3sim.collectives.mirror import MirrorBoard
from t3sim.collectives.nccl_schedule import Schedule
from t3sim.collectives.plan import PHASE_CATEGORY, Plan
from t3sim.collectives.runner import CollectiveRun
from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.interconnect.network import Network, PacketMeta
from t3sim.memory.request import Stream
from t3sim.sim.clock import TICKS_PER_NS, Clock, ns_to_ticks
from t3sim.sim.engine import Component, Engine

_ALIGN_B = 2 << 20  # buffers start on 2 MiB boundaries


class NcclLayout:
    """Addresses (bytes) of one GPU's user input, user output and FIFO buffers (the same on every GPU).

    ``fifo_base_B + c * buffer_B`` is channel ``c``'s receive FIFO (its connection from the previous GPU).
    """

    def __init__(self, in_base_B: int, out_base_B: int, fifo_base_B: int, buffer_B: int):
        self.in_base_B, self.out_base_B, self.fifo_base_B, self.buffer_B = in_base_B, out_base_B, fifo_base_B, buffer_B

    @classmethod
    def for_schedule(cls, sched: Schedule, buffer_B: int, base_B: int = 0) -> "NcclLayout":
        """Input, output, then the FIFOs, each on a 2 MiB boundary from ``base_B``."""
        up = lambda x: -(-x // _ALIGN_B) * _ALIGN_B  # noqa: E731
        a = up(base_B)
        b = up(a + sched.in_elems * sched.elem_bytes)
        c = up(b + sched.out_elems * sched.elem_bytes)
        return cls(a, b, c, buffer_B)

    @classmethod
    def in_place(cls, sched: Schedule, buf_B: int, fifo_base_B: int, buffer_B: int, gpu_block: int = 0) -> "NcclLayout":
        """One buffer ``buf_B`` holding the collective's array (RS: the input; AG: the output; AR: both)."""
        count_B = sched.num_elems // sched.n * sched.elem_bytes
        if sched.collective == "reduce_scatter":
            return cls(buf_B, buf_B + gpu_block * count_B, fifo_base_B, buffer_B)
        if sched.collective == "all_gather":
            return cls(buf_B + gpu_block * count_B, buf_B, fifo_base_B, buffer_B)
        return cls(buf_B, buf_B, fifo_base_B, buffer_B)


class NcclRing(Component):
    """Runs a :class:`~t3sim.collectives.nccl_schedule.Schedule` on ``network``; :attr:`done` fires with a :class:`CollectiveRun`.

    Args:
        engine, network: the simulation and its network (GPU ids 0..n-1).
        sched: the schedule.
        plan: the equivalent step plan (reported in the :class:`CollectiveRun`; its steps are the ring steps).
        hiers: GPU id -> memory hierarchy of the GPUs simulated in full (homogeneous: only ``ref``).
        gpu: :class:`~t3sim.config.gpu.GPUConfig` (clock, fp32 lanes for the reductions).
        inflight_per_cu_B: bytes of output per CU piece (loads of every source in flight together).
        sm_store_payload_B: link-protocol payload of the CU's stores to the next GPU.
        launch_overhead_ns: wait before the first op (the collective's start-up, ns).
        layouts: GPU id -> :class:`NcclLayout` (default: :meth:`NcclLayout.for_schedule` on every GPU).
        mirror: homogeneous mode (GPUs not in ``hiers`` mirror ``ref``); False: every GPU must be in ``hiers``.
        ref: the reference GPU of the homogeneous mode.
        stream: arbitration class of the kernel's memory traffic.
        free_copies: no memory model at all (``hiers`` empty): a slice's pieces are stored to the next GPU at
            once when the slice starts (the closed-form timing of the protocol and the links alone; tests).
        hop_latency_ns: the per-hop Simple latency (``collective.latency.hop_latency_ns``; module doc, step 4),
            None: the fence costs only the acknowledgement round trip.
        cu_bandwidth_GBps: a channel CU's memory-pipe rate, loads plus stores (:class:`CuPool`), None for none.
    """

    def __init__(self, engine: Engine, network: Network, sched: Schedule, plan: Plan, hiers: Dict[int, MemoryHierarchy],
                 gpu, *, inflight_per_cu_B: int, sm_store_payload_B: int, launch_overhead_ns: float = 0.0,
                 layouts: Optional[Dict[int, NcclLayout]] = None, buffer_B: int, mirror: bool = True, ref: int = 0,
                 stream: Stream = Stream.COMM, free_copies: bool = False, port: Optional[str] = None,
                 dispatchers=None, footprint=None, hop_latency_ns: Optional[float] = None,
                 cu_bandwidth_GBps: Optional[float] = None):
        super().__init__(engine, f"nccl_ring:{sched.collective}")
        n = sched.n
        if n > len(network.gpus):
            raise ValueError(f"NCCL ring for {n} GPUs on a network of {len(network.gpus)}")
        if inflight_per_cu_B < REQ_B or inflight_per_cu_B % REQ_B:
            raise ValueError(f"inflight_per_cu_B must be a positive multiple of {REQ_B} B, got {inflight_per_cu_B}")
        if sched.channels > gpu.num_cus:
            raise ValueError(f"{sched.channels} NCCL channels need as many CUs; the GPU has {gpu.num_cus}")
        self.free = bool(free_copies)
        if self.free:
            if hiers:
                raise ValueError("free_copies runs without memory models: pass no hierarchies")
            mirror = False
        elif not mirror and any(g not in hiers for g in range(n)):
            raise ValueError("explicit mode needs a memory hierarchy for every GPU")
        elif mirror and ref not in hiers:
            raise ValueError(f"homogeneous mode needs the reference GPU {ref}'s memory hierarchy")
        self.net, self.sched, self.plan = network, sched, plan
        self.hiers = {} if self.free else (dict(hiers) if not mirror else {ref: hiers[ref]})
        self.piece_B, self.payload_B, self.stream, self.ref = int(inflight_per_cu_B), int(sm_store_payload_B), stream, ref
        default = NcclLayout.for_schedule(sched, buffer_B)
        self.layouts = {g: (layouts or {}).get(g, default) for g in range(n)}
        self.board = MirrorBoard(engine, f"mirror:nccl:{sched.collective}") if mirror else None
        eb = sched.elem_bytes
        lanes = max(1, gpu.fp32_flops_per_cycle // 2)
        clock = Clock.from_GHz(gpu.clock_GHz, "cu")
        #: per simulated GPU, one single-CU pool per channel (the channel's CTA)
        # with the GPU's WG dispatcher (other kernels may run beside this one), each channel's CTA takes a CU
        # through it at the kernel's start and leaves it at the end (t3sim.compute.dispatcher)
        disp = dispatchers or {}
        self.pools: Dict[int, List[CuPool]] = {
            g: [CuPool(self.env, h, 1, clock, lanes * max(1, 4 // eb), stream, self.progressed, disp.get(g), footprint,
                       f"{port or 'nccl'}.ch{c}", cu_bandwidth_GBps) for c in range(sched.channels)]
            for g, h in self.hiers.items()}
        self.port = port
        self.cus = sched.channels
        lat = network.path_latency_ticks
        self._lat_next = [lat(g, (g + 1) % n) for g in range(n)]
        self._lat_prev = [lat(g, (g - 1) % n) for g in range(n)]
        # the fence's own cost (module doc, step 4): what a minimal slice's hop (hop_latency_ns) takes beyond the
        # three path latencies simulated (data stores g -> g+1, their acknowledgement back, the flag g -> g+1)
        hop = None if hop_latency_ns is None else ns_to_ticks(hop_latency_ns)
        self._fence = [0 if hop is None else max(0, hop - 2 * self._lat_next[g] - self._lat_prev[(g + 1) % n])
                       for g in range(n)]
        # flag events: tail[(c, g)][k]: slice k that g sent to g+1 on channel c is flagged (visible at g+1);
        # head[(c, g)][k]: g+1 consumed slice k from g (visible at g)
        self._tail: Dict[Tuple[int, int], Dict[int, simpy.Event]] = {}
        self._head: Dict[Tuple[int, int], Dict[int, simpy.Event]] = {}
        self._writes: Dict[int, List[simpy.Event]] = {}   # simulated GPU -> its slices with local stores
        self.launch_ticks = ns_to_ticks(launch_overhead_ns)
        self.start = self.env.now
        S = len(sched.ops) - 1
        self.step_end = [[-1] * S for _ in range(n)]
        self.gpu_end = [-1] * n
        self._chan_left = [sched.channels] * n
        self.slices_done = 0
        self.recv_wait_ticks = 0   # reference GPU: time its channels waited for tail flags
        self.send_wait_ticks = 0   # reference GPU: time its channels waited for free FIFO slots
        self.done = self.env.event()
        self._finished = 0
        for g in self.hiers:
            network.set_receiver(g, self._packet, port)
        for g in range(n):
            for c in range(sched.channels):
                self.env.process(self._channel(g, c))

    # ------------------------------------------------------------------ flags
    def _flag(self, table, c: int, g: int, k: int) -> simpy.Event:
        d = table.setdefault((c, g), {})
        ev = d.get(k)
        if ev is None:
            ev = d[k] = self.env.event()
        return ev

    def _later(self, ticks: int, ev: simpy.Event) -> None:
        if ticks <= 0:
            ev.succeed()
        else:
            self.env.timeout(ticks).callbacks.append(lambda _e: ev.succeed())

    # ------------------------------------------------------------------ one CTA
    def _channel(self, g: int, c: int):
        env, sched = self.env, self.sched
        n = sched.n
        nxt, prv = (g + 1) % n, (g - 1) % n
        if self.launch_ticks:
            yield env.timeout(self.launch_ticks)
        sent = recvd = 0
        posted: Optional[simpy.Event] = None  # the extra warp's post of the previous slice
        for ci, chunk in enumerate(sched.chunks[c]):
            for j, op in enumerate(sched.ops):
                span = chunk.spans[g][j]
                for s, (lo, k) in enumerate(sched.op_slices(span.nelem)):
                    t0 = env.now
                    if op.recv:
                        ev = self._flag(self._tail, c, prv, recvd)
                        if not ev.processed:
                            yield ev
                        if g == self.ref:
                            self.recv_wait_ticks += env.now - t0
                    if op.send and sent >= sched.slots:
                        t1 = env.now
                        ev = self._flag(self._head, c, g, sent - sched.slots)
                        if not ev.processed:
                            yield ev
                        if g == self.ref:
                            self.send_wait_ticks += env.now - t1
                    arrivals: List[simpy.Event] = []
                    if k:
                        work = self._copy(g, c, (ci, j, s), op, span, lo, k, recvd, sent, arrivals)
                        if work is not None:
                            yield work
                    if posted is not None and not posted.processed:
                        yield posted
                    self.slices_done += 1
                    # post: free the consumed slot; fence the stores, then flag the slice
                    if op.recv:
                        self._later(self._lat_prev[g], self._flag(self._head, c, prv, recvd))
                        recvd += 1
                    if op.send:
                        posted = env.event()
                        env.process(self._post_send(g, c, sent, arrivals, posted))
                        sent += 1
                    else:
                        posted = None
                if j >= 1:
                    self._step_done(g, j - 1, c, ci)
        if posted is not None and not posted.processed:
            yield posted
        self._chan_left[g] -= 1
        if self._chan_left[g] == 0:
            yield from self._gpu_done(g)

    def _post_send(self, g: int, c: int, k: int, arrivals: Sequence[simpy.Event], posted: simpy.Event):
        """The extra warp: fence (stores acknowledged), then the tail flag for slice ``k``."""
        if arrivals:
            yield simpy.AllOf(self.env, arrivals)
            # the last store's acknowledgement comes back one path latency after it arrived
            acked = max(ev.value for ev in arrivals) + self._lat_prev[(g + 1) % self.sched.n] + self._fence[g]
            if acked > self.env.now:
                yield self.env.timeout(acked - self.env.now)
        posted.succeed()
        self._later(self._lat_next[g], self._flag(self._tail, c, g, k))

    def _step_done(self, g: int, step: int, c: int, ci: int) -> None:
        if ci == len(self.sched.chunks[c]) - 1:
            row = self.step_end[g]
            row[step] = max(row[step], self.env.now)

    def _gpu_done(self, g: int):
        if g in self._writes:
            left = [w for w in self._writes[g] if not w.processed]
            if left:
                yield simpy.AllOf(self.env, left)
        self.gpu_end[g] = self.env.now
        self.progressed()
        self._finished += 1
        if self._finished == self.sched.n:
            self.done.succeed(CollectiveRun(self.plan, self.start, self.env.now, self.step_end, self.gpu_end))

    # ------------------------------------------------------------------ copy
    def _copy(self, g: int, c: int, key: tuple, op, span, lo: int, k: int, recvd: int, sent: int,
              arrivals: List[simpy.Event]) -> Optional[simpy.Event]:
        """Run one slice's copy on ``g``'s channel ``c`` (module doc, step 2); return its completion event."""
        sched, eb, P, env = self.sched, self.sched.elem_bytes, self.piece_B, self.env
        nbytes = k * eb
        parts = [(off, min(P, nbytes - off)) for off in range(0, nbytes, P)]
        key = (c,) + key
        send = None
        if op.send:
            nxt = (g + 1) % sched.n
            base = self.layouts[nxt].fifo_base_B + c * self.layouts[nxt].buffer_B + sched.slot_offset_B(sent)
            meta = [PacketMeta(op="store", addr=base + off, tag=("nccl", PHASE_CATEGORY[op.phase]), port=self.port)
                    for off, _ in parts]

            def send(i: int, arrived: simpy.Event, gone: simpy.Event) -> None:
                """Inject part ``i`` now; ``gone`` fires when its last byte left the GPU's link."""
                self.net.send(g, nxt, parts[i][1], meta[i], payload_B=self.payload_B,
                              left=lambda end: self._later(end - env.now, gone)).callbacks.append(
                    lambda _t: arrived.succeed(env.now))

            arrivals.extend(env.event() for _ in parts)
        if self.free:
            if send is None:
                return None
            gone = [env.event() for _ in parts]
            for i in range(len(parts)):
                send(i, arrivals[-len(parts) + i], gone[i])
            return simpy.AllOf(env, gone)
        if g in self.hiers:
            L = self.layouts[g]
            srcs = []
            if op.recv:
                srcs.append(L.fifo_base_B + c * L.buffer_B + sched.slot_offset_B(recvd))
            if op.reads_input:
                srcs.append(L.in_base_B + (span.in_elem + lo) * eb)
            dst = L.out_base_B + (span.out_elem + lo) * eb if op.writes_output else None
            group = _Group(env, f"gpu{g} ch{c} {op.prim} {key}", len(parts))
            pieces, left_link = [], []
            for i, (off, nb) in enumerate(parts):
                hold = None
                if send is not None:
                    gone = env.event()
                    left_link.append(gone)

                    def hold(_p, i=i, gone=gone):
                        # store backpressure: the CTA moves on once this piece's stores left on the link
                        send(i, arrivals[-len(parts) + i], gone)
                        return gone
                pieces.append(_Piece([line_addrs(a + off, nb) for a in srcs], (len(srcs) - 1) * (nb // eb),
                                     None if dst is None else line_addrs(dst + off, nb), group, env.event(), hold))
            if dst is not None:
                self._writes.setdefault(g, []).append(group.event)
                if self.board is not None:
                    self.board.track(("stored",) + key, group.event)
            evs = [p.event for p in pieces]
            if self.board is not None:
                for i, ev in enumerate(evs):
                    self.board.track(key + (i,), ev)
            self.pools[g][c].submit(pieces, PHASE_CATEGORY[op.phase])
            done = left_link or evs
        else:
            evs = [self.board.mirror(key + (i,), f"gpu{g}") for i in range(len(parts))]
            if op.writes_output:  # a shadow's local stores complete as the reference's did
                self._writes.setdefault(g, []).append(self.board.mirror(("stored",) + key, f"gpu{g}"))
            done = evs
            if send is not None:
                done = []
                for i, ev in enumerate(evs):
                    arrived, gone = arrivals[-len(parts) + i], env.event()
                    done.append(gone)

                    def go(_e=None, i=i, a=arrived, gone=gone):
                        send(i, a, gone)

                    if ev.processed:
                        go()
                    else:
                        ev.callbacks.append(go)
        return simpy.AllOf(env, done)

    # ------------------------------------------------------------------ packets
    def _packet(self, packet) -> Optional[simpy.Event]:
        """A packet reached a simulated GPU: written into its FIFO (uncached, communication stream); returns the
        writes' event."""
        tag = packet.meta.tag
        if not (isinstance(tag, tuple) and tag and tag[0] == "nccl"):
            return None
        ev = self.hiers[packet.dst].write(line_addrs(packet.addr, packet.nbytes), tag[1], self.stream, uncached=True)
        ev.callbacks.append(lambda _e: self.progressed())
        return ev

    # ------------------------------------------------------------------ stats & diagnostics
    def pieces_done(self) -> int:
        return sum(p.pieces_done for ps in self.pools.values() for p in ps)

    def math_ns(self) -> Dict[int, float]:
        return {g: sum(p.math_ticks for p in ps) / TICKS_PER_NS for g, ps in self.pools.items()}

    def pending(self) -> str:
        if self.done.triggered:
            return ""
        waiting = [f"gpu{g}: {left} channels running" for g, left in enumerate(self._chan_left) if left]
        return "; ".join(waiting[:8])
