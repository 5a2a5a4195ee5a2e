"""DMA engines and the remote-write data path of T3 (paper Secs. 4.2.2, 4.3).

:class:`Fabric` carries address-mapped data between GPUs: a :class:`Payload`
(the 64 B request addresses, their ``wg_id``/``wf_id`` for the destination's
tracker, op store/update and, in functional mode, the data) goes over
:meth:`Network.send` with a :class:`PacketMeta`; at a simulated destination
every arriving packet becomes uncached communication-stream writes or
near-memory updates of its requests in that GPU's
:class:`~t3sim.compute.memhier.MemoryHierarchy`, carrying ``wg_id``/``wf_id``
so the destination tracker counts them. Packets must be whole requests
(``packet_size_B`` a multiple of 64 B). At a shadow GPU (homogeneous mode)
packets are delivered and dropped. A payload has *landed* when all its
requests are written at the destination (shadow: when its last packet
arrived); :class:`Completion` (optional) counts payloads not yet landed (and, given
to :class:`DMAEngines` too, blocks triggered but not yet sent), and a
payload's own ``then`` callback runs when it lands. A fabric listens on one
network port (``port``; None = the GPUs' default receivers, T3's), so traffic of
another fabric or kernel never reaches it. Payloads without ``wg_id``/``wf_id``
(None) are untracked plain data (e.g. copy-engine peer writes,
:mod:`t3sim.dma.copy_engine` d2p).

:class:`DMAEngines` (one per GPU): ``engines`` engines share a FIFO of ready
commands (commands are pre-queued before the kernel, Sec. 5.1.1, so a ready
tracker entry only has to mark its block ready). An engine takes a block,
waits ``issue_latency_ns``, then streams it in batches of ``batch_requests``
64 B requests, keeping at most ``max_outstanding_requests`` reads in flight:
each batch is read from local DRAM uncached on the communication stream
(category ``rs``, Fig. 18 "RS reads") and, when its data is back, sent to the
peer as one payload (op from the ``dma_map`` call). Commands are pipelined (an
assumption: the paper does not describe the engine; descriptor-queue engines such as
AMD's SDMA process queued commands back to back), as a DMA engine walks a queue of
pre-built descriptors: the outstanding-request
credits are the engine's, not the block's, so an engine starts issuing its
next block as soon as the last batch of this one is *issued* (credits
permitting), not when its reads return; the issue latency is a delay from a
block's trigger to its first request, overlapped with earlier blocks' work.
(Waiting for every read of a block before taking the next serialises ~0.4 us
of latency per WF-tile block and caps an engine at ~10 GB/s: with 4 engines
the fused RS could not use the 150 GB/s ring, which the paper's simulation,
which does not model the DMA engine at all (Sec. 5.1.1), never limits.)

Invariants: every block is triggered at most once; a block is never read
before :meth:`DMAEngines.trigger` (i.e. before its tracker entries reached
their thresholds); bytes sent == bytes delivered (network conservation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np
import simpy

from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.interconnect.network import Network, PacketMeta
from t3sim.memory.request import Source, Stream
from t3sim.results.stats import Stats
from t3sim.sim.clock import ns_to_ticks
from t3sim.sim.engine import Component, Engine

_COMM, _DMA = Stream.COMM, Source.DMA  # hoisted enum members (hot loops)


class Completion:
    """Counts outstanding work; :attr:`done` fires once sealed and the count is zero."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self.n = 0
        self.sealed = False
        self.done = env.event()

    def add(self, k: int = 1) -> None:
        if self.done.triggered:
            raise RuntimeError("work added after completion")
        self.n += k

    def finish(self, k: int = 1) -> None:
        self.n -= k
        assert self.n >= 0
        self._check()

    def seal(self) -> None:
        self.sealed = True
        self._check()

    def _check(self) -> None:
        if self.sealed and self.n == 0 and not self.done.triggered:
            self.done.succeed(self.env.now)


@dataclass(eq=False)
class Payload:
    """Address-mapped data on its way to a peer (the packets' ``meta.tag``)."""

    addrs: np.ndarray  # destination byte address of each 64 B request
    wg_id: Optional[np.ndarray]
    wf_id: Optional[np.ndarray]
    op: str
    data: Optional[np.ndarray] = None
    category: str = "rs"
    left: int = field(default=-1)
    on_land: Optional[Callable[[], None]] = None
    #: called with the payload when it has landed (after the fabric's own bookkeeping)
    then: Optional[Callable[["Payload"], None]] = None

    def __post_init__(self) -> None:
        self.left = len(self.addrs)

    @property
    def nbytes(self) -> int:
        return REQ_B * len(self.addrs)


class Fabric(Component):
    """Sends payloads and writes arriving packets into simulated GPUs' memories (module doc)."""

    def __init__(self, engine: Engine, network: Network, hiers: Dict[int, MemoryHierarchy],
                 completion: Optional[Completion] = None, port: Optional[str] = None, name: str = "t3.fabric"):
        super().__init__(engine, name)
        if network.packet_size_B % REQ_B:
            raise ValueError(f"packet size {network.packet_size_B} B is not a multiple of {REQ_B} B")
        self.network, self.hiers, self.completion, self.port = network, hiers, completion, port
        self.sent_B = 0
        self.landed_B = 0
        self.in_flight = 0
        for g in hiers:
            network.set_receiver(g, self._receive, port)

    def send(self, src: int, dst: int, pl: Payload, payload_B: Optional[int] = None) -> simpy.Event:
        """Send ``pl`` from ``src`` to ``dst``; returns the network transfer event. ``payload_B``: link-protocol
        payload of its packets (:meth:`Network.send`: default a bulk copy's; CU stores pass ``sm_store_payload_B``)."""
        if not len(pl.addrs):
            ev = self.env.event()
            ev.succeed()
            return ev
        if self.completion is not None:
            self.completion.add()
        self.in_flight += 1
        self.sent_B += pl.nbytes
        meta = PacketMeta(op=pl.op, wg_id=None if pl.wg_id is None else int(pl.wg_id[0]),
                          wf_id=None if pl.wf_id is None else int(pl.wf_id[0]), addr=int(pl.addrs[0]), tag=pl,
                          port=self.port)
        ev = self.network.send(src, dst, pl.nbytes, meta, payload_B)
        if dst in self.hiers:
            pl.on_land = self._landed
        else:
            ev.callbacks.append(lambda _e, pl=pl: self._landed(pl))
        return ev

    def elide_image(self, src: int, dst: int, nbytes: int) -> bool:
        """Homogeneous mode: shadow ``src`` would send shadow ``dst`` the rotation image of the ``nbytes`` payload GPU 0
        sends ``dst - src`` now, with no callback on its landing. True: the network elided it
        (:meth:`Network.elide_image`), and it counts as sent and landed now; False: the caller sends it."""
        if dst in self.hiers or self.completion is not None or not self.network.elide_image(src, dst, nbytes):
            return False
        self.sent_B += nbytes
        self.landed_B += nbytes
        return True

    def _landed(self, pl: Payload) -> None:
        self.landed_B += pl.nbytes
        self.in_flight -= 1
        self.progressed()
        if self.completion is not None:
            self.completion.finish()
        if pl.then is not None:
            pl.then(pl)

    def stats(self):
        """``sent_B`` and ``landed_B`` (merge under the owner's prefix, e.g. ``flux.fabric``)."""
        s = Stats()
        s.add("sent_B", self.sent_B, "B", "bytes of payloads sent over the links, by simulated GPUs and (homogeneous "
              "mode) the shadows mirrored from GPU 0")
        s.add("landed_B", self.landed_B, "B", "bytes of those written at their destination (at a shadow: delivered)")
        return s

    def _receive(self, packet) -> Optional[simpy.Event]:
        pl = packet.meta.tag
        if not isinstance(pl, Payload):
            return None  # not T3 traffic (e.g. a collective kernel's packets, which its own hook handles)
        i0, i1 = packet.offset // REQ_B, (packet.offset + packet.nbytes) // REQ_B
        h = self.hiers[packet.dst]
        ev = h.write(pl.addrs[i0:i1], pl.category, Stream.COMM, uncached=True, update=pl.op == "update",
                     wg_id=None if pl.wg_id is None else pl.wg_id[i0:i1],
                     wf_id=None if pl.wf_id is None else pl.wf_id[i0:i1],
                     data=None if pl.data is None else pl.data[i0:i1])

        def wrote(_e, n=i1 - i0):
            pl.left -= n
            if pl.left == 0:
                pl.on_land(pl)

        ev.callbacks.append(wrote)
        return ev  # the receive buffer holds the packet until then (Network, landing backpressure)

    def pending(self) -> str:
        return f"{self.in_flight} payloads not landed" if self.in_flight else ""


@dataclass(eq=False)
class DmaBlock:
    """One pre-queued DMA command: requests of a region (or block of regions) to copy to ``peer``."""

    key: tuple
    peer: int
    op: str
    addrs: np.ndarray
    wg_id: np.ndarray
    wf_id: np.ndarray
    regions_left: int = 1
    trigger_tick: int = -1
    read_tick: int = -1
    done_tick: int = -1  # when its last batch was read back and sent


class DMAEngines(Component):
    """A GPU's DMA engines (module doc). ``cfg`` is a :class:`~t3sim.config.system.DMAConfig`."""

    def __init__(self, engine: Engine, gpu: int, hier: MemoryHierarchy, fabric: Fabric, cfg,
                 data_of: Optional[Callable[[np.ndarray], np.ndarray]] = None,
                 on_batch_sent: Optional[Callable[[DmaBlock, int, int], None]] = None,
                 completion: Optional[Completion] = None):
        super().__init__(engine, f"gpu{gpu}.dma")
        self.gpu, self.hier, self.fabric, self.cfg = gpu, hier, fabric, cfg
        self.functional = hier.mem.functional is not None
        self.on_batch_sent, self.completion = on_batch_sent, completion
        self.ready = simpy.Store(self.env)
        self.latency = ns_to_ticks(cfg.issue_latency_ns)
        self.blocks_done = 0
        self.blocks_triggered = 0
        self.late_triggers = 0
        self.busy = 0
        self.bytes_read = 0
        for i in range(cfg.engines):
            self.env.process(self._run(i))

    def trigger(self, block: DmaBlock, tick: int) -> None:
        """The block's tracker entries all reached their thresholds at ``tick``: queue it for an engine.

        ``tick`` may lie ahead of now or, by up to a pump step, behind it (the memory reports admissions in
        canonical order, :mod:`t3sim.memory.enqueue_feed`): the engine starts the block
        ``issue_latency_ns`` after ``tick`` (or when free), so the result does not depend on when the report came.
        A report later than that latency starts the block at once, late (``late_triggers``, expected 0)."""
        assert block.trigger_tick < 0, f"DMA block {block.key} triggered twice"
        block.trigger_tick = int(tick)
        self.blocks_triggered += 1
        if self.completion is not None:  # held from the trigger until sent (then its payloads hold it: Fabric)
            self.completion.add()
        if block.trigger_tick + self.latency < self.env.now:
            self.late_triggers += 1
        self.ready.put(block)

    def _run(self, i: int):
        env = self.env
        cfg = self.cfg
        B = int(cfg.batch_requests)
        cap = int(cfg.max_outstanding_requests)
        credits = simpy.Container(env, init=cap, capacity=cap)  # the engine's in-flight reads (module doc)
        while True:
            blk: DmaBlock = yield self.ready.get()
            self.busy += 1
            wait = blk.trigger_tick + self.latency - env.now
            if wait > 0:
                yield env.timeout(wait)
            blk.read_tick = env.now
            n = len(blk.addrs)
            left = [-(-n // B)]  # batches of this block not yet read back
            for j0 in range(0, n, B):
                j1 = min(n, j0 + B)
                yield credits.get(min(j1 - j0, cap))
                ev = self.hier.direct_read(blk.addrs[j0:j1], "rs", _COMM, _DMA)
                self.bytes_read += REQ_B * (j1 - j0)
                ev.callbacks.append(lambda e, blk=blk, j0=j0, j1=j1, left=left:
                                    self._send(blk, j0, j1, e.value, credits, left))

    def _send(self, blk: DmaBlock, j0: int, j1: int, res, credits: simpy.Container, left: List[int]) -> None:
        credits.put(min(j1 - j0, credits.capacity))
        data = res.data if self.functional else None
        pl = Payload(blk.addrs[j0:j1], blk.wg_id[j0:j1], blk.wf_id[j0:j1], blk.op, data)
        self.fabric.send(self.gpu, blk.peer, pl)
        if self.on_batch_sent is not None:
            self.on_batch_sent(blk, j0, j1)
        left[0] -= 1
        if left[0] == 0:
            blk.done_tick = self.env.now
            self.blocks_done += 1
            self.busy -= 1
            if self.completion is not None:
                self.completion.finish()
            self.progressed()

    def pending(self) -> str:
        q = len(self.ready.items)
        return f"{q} ready blocks queued, {self.busy} blocks being read" if (q or self.busy) else ""

    def stats(self):
        s = Stats()
        s.add("blocks_triggered", self.blocks_triggered, "count", "DMA blocks made ready by the tracker (Sec. 4.2.2)")
        s.add("blocks_done", self.blocks_done, "count", "DMA blocks fully read and sent")
        s.add("bytes_read", self.bytes_read, "B", "bytes the DMA engines read from local DRAM (RS reads)")
        s.add("late_triggers", self.late_triggers, "count",
              "blocks whose trigger was reported more than issue_latency_ns after their tracker threshold was reached "
              "(started late, so their timing depends on the memory's pump cadence; expected 0)")
        return s
