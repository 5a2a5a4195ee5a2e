"""Collectives as GPU kernels: a plan's actions as real memory traffic and CU work on each GPU.

:class:`GpuCollectiveHook` is a :class:`~t3sim.collectives.runner.CostHook`
that charges every action of a :class:`~t3sim.collectives.plan.Plan` to the
:class:`~t3sim.compute.memhier.MemoryHierarchy` of the GPU doing it, the way
an RCCL/NCCL kernel does (paper Secs. 2.3, 3.2, 4.3, Fig. 10):

* **send** (sender's CUs; each piece is injected into the link as soon as it is
  reduced, :class:`~t3sim.collectives.runner.StreamedSend`): read the
  slice of the local buffer and, in the baseline variant after a received
  copy landed (ring RS steps >= 1), the slice of every received copy; add
  them on the CUs; hand the sum to the link (a remote store: no local DRAM
  write). NMC: the local range is already reduced in DRAM, one read. A store
  (all-gather / all-to-all) reads once. A local copy (``src == dst``) reads
  and writes on the same GPU.
* **receive** (packets arriving from the link, written by the interconnect
  into memory as they arrive, no CU involved): a baseline ``reduce`` packet is
  written into a *receive buffer* slot; an NMC ``reduce`` packet becomes
  op-and-store UPDATEs on the local buffer (``write(update=True)``); a
  ``store`` packet is written into the destination buffer. All are uncached,
  communication-stream writes (:attr:`Stream.COMM`) reaching the memory
  controller. The receive action completes when every write of the slice is
  done in DRAM.
* **finalize** (baseline, end of a phase): the CUs read the local range and
  its received copies, add, and write the reduced range back (uncached).

DRAM traffic therefore equals :func:`t3sim.collectives.traffic.account`
byte for byte when element ranges are 64 B aligned (tests check it) and no
read hits a line an earlier access left in the L2 (true for RS and AG alone;
in an all-reduce the AG re-reads the chunk the RS's final step touched).

CU model. The collective owns ``cus`` CUs (``CollectiveConfig.cus``; None =
all). A send or finalize slice is cut into *pieces* of
``inflight_per_cu_B`` bytes of output; each CU takes the next piece from
a FIFO shared by the GPU's concurrent slices, issues the piece's loads (one
per source buffer, ``inflight_per_cu_B`` bytes each), waits for all of
them, spends the reduction's math time (fp16 adds at the CU's packed vector
rate: ``fp32_flops_per_cycle / 2`` lanes x ``4 // elem_bytes`` per lane), then
issues any local stores (posted) and takes its next piece. Loads in flight
are therefore bounded by ``cus x inflight_per_cu_B`` per source, and the
kernel's read throughput follows Little's law: CUs x in-flight / latency.

Addresses. Buffer ``b`` of a GPU starts at ``layout.bases[b]`` (bytes);
element ``e`` is at ``base + e * elem_bytes``. Received copies of a reduce go
to ``layout.recv_base_B + slot * layout.recv_slot_B + e * elem_bytes``, where
``slot`` is the rank of the sender's ring offset ``(dst - src) mod N`` among
the plan's reduce offsets (a ring uses one or two slots, direct RS N-1).
Requests are the 64 B lines covering a byte range (:func:`line_addrs`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np
import simpy

from t3sim.collectives.plan import Plan, Xfer, split_ranges
from t3sim.collectives.runner import StreamedSend
from t3sim.collectives.traffic import VARIANTS, Traffic
from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.memory.request import Stream
from t3sim.sim.clock import TICKS_PER_NS, Clock
from t3sim.sim.engine import Component, Engine

_ALIGN_B = 2 << 20  # buffers start on 2 MiB boundaries (large-page allocation)


def line_addrs(start_B: int, nbytes: int) -> np.ndarray:
    """Byte addresses of the 64 B requests covering ``[start_B, start_B + nbytes)`` (int64, ascending)."""
    if nbytes <= 0:
        return np.empty(0, dtype=np.int64)
    lo = (start_B // REQ_B) * REQ_B
    return np.arange(lo, start_B + nbytes, REQ_B, dtype=np.int64)


@dataclass(frozen=True)
class BufferLayout:
    """Where a collective's buffers live in every GPU's address space (bytes).

    Attributes:
        bases: buffer name (``"buf"``, ``"in"``, ``"out"``) -> base address. ``"buf"``
            is the array being reduced: the producer GEMM's output.
        recv_base_B: base of the receive-buffer slots for baseline reduce copies.
        recv_slot_B: distance between consecutive slots (>= the largest buffer).
    """

    bases: Dict[str, int]
    recv_base_B: int
    recv_slot_B: int

    @classmethod
    def for_plan(cls, plan: Plan, base_B: int = 0, align_B: int = _ALIGN_B) -> "BufferLayout":
        """Buffers one after another from ``base_B`` (each ``align_B`` aligned), receive slots after them."""
        def up(x: int) -> int:
            return -(-x // align_B) * align_B

        bases, addr = {}, up(base_B)
        for name in sorted(plan.buffer_elems):
            bases[name] = addr
            addr = up(addr + max(plan.buffer_elems[name]) * plan.elem_bytes)
        slot = up(max(max(v) for v in plan.buffer_elems.values()) * plan.elem_bytes)
        return cls(bases, addr, max(slot, align_B))

    def addr(self, buf: str, elem: int, elem_bytes: int) -> int:
        return self.bases[buf] + elem * elem_bytes

    def recv_addr(self, slot: int, elem: int, elem_bytes: int) -> int:
        return self.recv_base_B + slot * self.recv_slot_B + elem * elem_bytes


@dataclass
class _Piece:
    """Work one CU does in one go: loads (one array per source), math, posted stores."""

    reads: List[np.ndarray]
    adds: int                      # element additions on the CU
    writes: Optional[np.ndarray]   # local stores after the math (uncached), or None
    group: "_Group"
    event: Optional[simpy.Event] = None  # fires when the CU is done with the piece (streamed sends)
    #: called when the math is done; returns an event the CU waits for before its next piece (None: free at once).
    #: NCCL's CTA holds a piece until its stores to the peer left on the link (t3sim.collectives.nccl).
    hold: Optional[Callable[["_Piece"], Optional[simpy.Event]]] = None


class _Group:
    """A slice's pieces; ``event`` fires when every piece finished and every store completed in DRAM."""

    __slots__ = ("label", "left", "writes", "event")

    def __init__(self, env: simpy.Environment, label: str, pieces: int):
        self.label, self.left, self.writes, self.event = label, pieces, 0, env.event()

    def maybe_done(self) -> None:
        if self.left == 0 and self.writes == 0 and not self.event.triggered:
            self.event.succeed()


class CuPool:
    """The CUs one GPU gives a collective kernel: FIFO pieces, one piece per CU at a time (module doc).

    Args:
        env: simpy environment (ticks).
        hier: the GPU's memory hierarchy.
        cus: CUs available (> 0).
        clock: the CU clock (math time).
        adds_per_cycle: element additions one CU does per cycle.
        stream: arbitration class of the kernel's loads and stores.
        on_progress: called whenever a piece completes (engine watchdog).
        cu_bandwidth_GBps: bytes a CU moves per second, loads plus stores (local or to a peer), or None for no
            such limit: a piece then takes at least its bytes at that rate from its start to its math (a CTA's
            memory-pipe throughput; ``collective.cu_bandwidth_GBps``).
    """

    def __init__(self, env: simpy.Environment, hier: MemoryHierarchy, cus: int, clock: Clock, adds_per_cycle: int,
                 stream: Stream, on_progress: Callable[[], None], dispatcher=None, footprint=None, name: str = "collective",
                 cu_bandwidth_GBps: Optional[float] = None):
        if cus <= 0 or adds_per_cycle <= 0:
            raise ValueError(f"CuPool needs cus > 0 and adds_per_cycle > 0 (got {cus}, {adds_per_cycle})")
        self.env, self.hier, self.cus, self.clock = env, hier, cus, clock
        self.adds_per_cycle, self.stream, self.on_progress = adds_per_cycle, stream, on_progress
        #: ticks per byte of the CU's memory pipe (0: unlimited); 1 GB/s = 1 B/ns
        self.ticks_per_B = 0.0 if cu_bandwidth_GBps is None else TICKS_PER_NS / float(cu_bandwidth_GBps)
        self.queue: Deque[Tuple[_Piece, str]] = deque()
        self.busy = 0
        self.pieces_done = 0
        self.math_ticks = 0
        # CTAs placed on CUs: all of them at once without a dispatcher; else as the GPU's dispatcher places
        # them (concurrent kernels may hold the CUs: t3sim.compute.dispatcher), from the kernel's launch on
        self.placed: List[int] = []
        self._disp = dispatcher
        self._closed = False
        self.ctas = cus if dispatcher is None else 0
        if dispatcher is not None:
            self._h = dispatcher.register(name, footprint, lambda: 0 if self._closed else self.cus - self.ctas,
                                          self._on_cu)

    def place(self) -> None:
        """The GPU starts the kernel: its CTAs take CUs now, as many as the dispatcher has room for; the rest
        follow as CUs free up (launch order)."""
        if self._disp is None:
            return
        while self.ctas < self.cus:
            cu = self._disp.acquire(self._h)
            if cu is None:
                break
            self.placed.append(cu)
            self.ctas += 1
        self._disp.settled(self._h)
        self._run_queue()

    def _on_cu(self, cu: int) -> None:
        self.placed.append(cu)
        self.ctas += 1
        self._run_queue()

    def close(self) -> None:
        """The collective kernel ended: its CTAs leave their CUs."""
        self._closed = True
        if self._disp is not None:
            for cu in self.placed:
                self._disp.release(self._h, cu)
            self.placed = []

    def submit(self, pieces: Sequence[_Piece], category: str) -> None:
        for p in pieces:
            self.queue.append((p, category))
        self._run_queue()

    def _run_queue(self) -> None:
        while self.busy < self.ctas and self.queue:
            self._start(*self.queue.popleft())

    def _pipe_bytes(self, p: _Piece) -> int:
        """Bytes the piece moves through its CU: every source's loads, and its output once per destination
        (local stores, and the stores to the next GPU of a piece that is held until they left)."""
        loads = sum(len(a) for a in p.reads) * REQ_B
        out = len(p.reads[0]) * REQ_B if p.reads else (0 if p.writes is None else len(p.writes) * REQ_B)
        dsts = int(p.writes is not None and len(p.writes) > 0) + int(p.hold is not None)
        return loads + out * dsts

    def _start(self, p: _Piece, cat: str) -> None:
        self.busy += 1
        evs = [self.hier.read(a, cat, self.stream) for a in p.reads if len(a)]
        if self.ticks_per_B:
            pipe = int(round(self._pipe_bytes(p) * self.ticks_per_B))
            if pipe > 0:
                evs.append(self.env.timeout(pipe))
        if not evs:
            self._math(p, cat)
            return
        left = [len(evs)]

        def one(_e):
            left[0] -= 1
            if left[0] == 0:
                self._math(p, cat)

        for ev in evs:
            ev.callbacks.append(one)

    def _math(self, p: _Piece, cat: str) -> None:
        env = self.env
        cycles = -(-p.adds // self.adds_per_cycle)
        if cycles:
            c0 = self.clock.tick_to_cycle(env.now) + 1
            d = self.clock.cycle_to_tick(c0 + cycles) - env.now
            self.math_ticks += d
            env.timeout(d).callbacks.append(lambda _e: self._finish(p, cat))
        else:
            self._finish(p, cat)

    def _finish(self, p: _Piece, cat: str) -> None:
        g = p.group
        if p.writes is not None and len(p.writes):
            g.writes += 1
            ev = self.hier.write(p.writes, cat, self.stream, uncached=True)

            def written(_e, g=g):
                g.writes -= 1
                g.maybe_done()

            ev.callbacks.append(written)
        if p.event is not None:
            p.event.succeed()
        if p.hold is not None:
            held = p.hold(p)
            if held is not None and not held.processed:
                held.callbacks.append(lambda _e: self._release(p))
                return
        self._release(p)

    def _release(self, p: _Piece) -> None:
        g = p.group
        g.left -= 1
        self.busy -= 1
        self.pieces_done += 1
        self.on_progress()
        g.maybe_done()
        self._run_queue()


class GpuCollectiveHook(Component):
    """Cost hook charging a plan's actions to real per-GPU memory and CUs (module doc).

    Args:
        engine, network: the simulation and the network the runner sends on (the hook
            registers itself as the packet receiver of every GPU in ``hiers``).
        plan: the collective plan the runner executes.
        hiers: GPU id -> its memory hierarchy. GPUs missing here must never be asked
            for a cost (the homogeneous mode wraps this hook in a
            :class:`~t3sim.collectives.mirror.MirrorHook`); their incoming packets are dropped.
        gpu: :class:`~t3sim.config.gpu.GPUConfig` (CU count, clock, vector rate).
        cus: CUs the kernel gets (None = all).
        inflight_per_cu_B: bytes per source a CU keeps in flight (> 0).
        slices: the runner's ``slices`` (to map a slice index to its element range).
        variant: ``"baseline"`` or ``"nmc"``.
        layout: buffer addresses (default :meth:`BufferLayout.for_plan`).
        stream: arbitration class of all collective traffic (communication).
        port: the network port its packets are addressed to (None: the GPUs' default receiver).
        dispatchers: GPU id -> its WG dispatcher: the kernel's CTAs (``footprint`` each) then share CUs with
            concurrent kernels (:mod:`t3sim.compute.dispatcher`); None: they own ``cus`` CUs.
        cu_bandwidth_GBps: per-CU memory-pipe rate (:class:`CuPool`), None for none.
    """

    def __init__(self, engine: Engine, network, plan: Plan, hiers: Dict[int, MemoryHierarchy], gpu, *,
                 cus: Optional[int] = None, inflight_per_cu_B: int = 8192, slices: int = 1,
                 variant: str = "baseline", layout: Optional[BufferLayout] = None, stream: Stream = Stream.COMM,
                 port: Optional[str] = None, dispatchers=None, footprint=None,
                 cu_bandwidth_GBps: Optional[float] = None):
        super().__init__(engine, f"collective_kernel:{plan.name}")
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        cus = gpu.num_cus if cus is None else int(cus)
        if not 0 < cus <= gpu.num_cus:
            raise ValueError(f"collective CUs must be in 1..{gpu.num_cus}, got {cus}")
        if inflight_per_cu_B < REQ_B or inflight_per_cu_B % REQ_B:
            raise ValueError(f"inflight_per_cu_B must be a positive multiple of {REQ_B} B, got {inflight_per_cu_B}")
        self.plan, self.hiers, self.variant, self.slices = plan, dict(hiers), variant, int(slices)
        self.layout = layout or BufferLayout.for_plan(plan)
        self.cus, self.piece_B, self.stream = cus, int(inflight_per_cu_B), stream
        eb = plan.elem_bytes
        lanes = max(1, gpu.fp32_flops_per_cycle // 2)  # FMA = 2 FLOP per lane per cycle
        adds_per_cycle = lanes * max(1, 4 // eb)       # packed half2 math doubles fp16 throughput
        clock = Clock.from_GHz(gpu.clock_GHz, "cu")
        self.pools = {g: CuPool(self.env, h, cus, clock, adds_per_cycle, stream, self.progressed,
                                (dispatchers or {}).get(g), footprint, port or plan.name, cu_bandwidth_GBps)
                      for g, h in self.hiers.items()}
        n = plan.n
        rels = sorted({(x.dst - x.src) % n for s in plan.steps for x in s.xfers if x.op == "reduce" and not x.is_local})
        self._slot = {r: i for i, r in enumerate(rels)}
        self._kidx = [{x: k for k, x in enumerate(s.xfers)} for s in plan.steps]
        # (gpu, buf, lo, hi) -> receive slots holding unreduced copies (baseline reduce receipts)
        self._pending: Dict[Tuple[int, str, int, int], List[int]] = {}
        self._send_slots: Dict[Tuple[int, int, int], List[int]] = {}
        self._recv_writes: Dict[Tuple[int, int, int, int], List[simpy.Event]] = {}
        self._open: Dict[int, _Group] = {}
        self._gid = 0
        for g in self.hiers:
            network.set_receiver(g, self._packet, port)

    # ------------------------------------------------------------------ helpers
    def _slice(self, x: Xfer, j: int) -> Tuple[int, int]:
        sl = [(lo, hi) for lo, hi in split_ranges(x.count, self.slices) if hi > lo]
        return sl[j]

    def _hier(self, gpu: int) -> MemoryHierarchy:
        try:
            return self.hiers[gpu]
        except KeyError:
            raise ValueError(f"{self.name}: GPU {gpu} has no memory model (homogeneous mode must mirror it)") from None

    def _pieces(self, group: _Group, srcs: Sequence[int], nbytes: int, dst: Optional[int]) -> List[_Piece]:
        """Pieces of ``nbytes`` of output reading ``srcs`` (start addresses) and storing at ``dst`` (or None)."""
        eb, P = self.plan.elem_bytes, self.piece_B
        out = []
        for off in range(0, nbytes, P):
            n = min(P, nbytes - off)
            reads = [line_addrs(a + off, n) for a in srcs]
            out.append(_Piece(reads, (len(srcs) - 1) * (n // eb), None if dst is None else line_addrs(dst + off, n), group))
        return out

    def _run(self, gpu: int, label: str, pieces: List[_Piece], group: _Group, category: str) -> simpy.Event:
        group.left = len(pieces)
        self._gid += 1
        gid = self._gid
        self._open[gid] = group
        group.event.callbacks.append(lambda _e: self._open.pop(gid, None))
        self.pools[gpu].submit(pieces, category)
        group.maybe_done()
        return group.event

    # ------------------------------------------------------------------ CostHook
    def on_send(self, gpu: int, step: int, xfer: Xfer, slice_idx: int, nbytes: int,
                traffic: Traffic) -> Optional[simpy.Event]:
        self._hier(gpu)
        plan, L, eb = self.plan, self.layout, self.plan.elem_bytes
        lo, hi = self._slice(xfer, slice_idx)
        if (hi - lo) * eb != nbytes:
            raise AssertionError(f"{self.name}: slice {slice_idx} of {xfer} is {(hi - lo) * eb} B, runner says {nbytes}")
        key = (gpu, step, self._kidx[step][xfer])
        if slice_idx == 0:
            self._send_slots[key] = self._pending.pop((gpu, xfer.src_buf, *xfer.src_range), [])
        slots = self._send_slots[key]
        if len(slots) * nbytes != traffic.rs_read_received_B:
            raise AssertionError(f"{self.name}: GPU {gpu} step {step} holds {len(slots)} received copies of "
                                 f"{xfer.src_range}, traffic accounting expects {traffic.rs_read_received_B // max(nbytes, 1)}")
        srcs = [L.addr(xfer.src_buf, xfer.src_lo + lo, eb)] + [L.recv_addr(s, xfer.src_lo + lo, eb) for s in slots]
        dst = L.addr(xfer.dst_buf, xfer.dst_lo + lo, eb) if xfer.is_local else None
        group = _Group(self.env, f"gpu{gpu} send step{step} {xfer.src}->{xfer.dst} slice{slice_idx}", 0)
        pieces = self._pieces(group, srcs, nbytes, dst)
        if xfer.is_local:
            return self._run(gpu, "send", pieces, group, plan.steps[step].category)
        for p in pieces:  # each reduced piece is stored to the peer as soon as its CU is done with it
            p.event = self.env.event()
        self._run(gpu, "send", pieces, group, plan.steps[step].category)
        return StreamedSend(self.env, [(p.event, nb) for p, nb in zip(pieces, self.part_sizes(nbytes))])

    def part_sizes(self, nbytes: int) -> List[int]:
        """Bytes of each streamed part (one CU piece each) of a send slice of ``nbytes``."""
        P = self.piece_B
        return [min(P, nbytes - off) for off in range(0, nbytes, P)]

    def on_receive(self, gpu: int, step: int, xfer: Xfer, slice_idx: int, nbytes: int,
                   traffic: Traffic) -> Optional[simpy.Event]:
        self._hier(gpu)
        if xfer.is_local:
            return None  # the copy's write was paid by the sender's CUs
        k = self._kidx[step][xfer]
        evs = self._recv_writes.pop((gpu, step, k, slice_idx), [])
        if xfer.op == "reduce" and self.variant == "baseline" and slice_idx == 0:
            key = (gpu, xfer.dst_buf, *xfer.dst_range)
            self._pending.setdefault(key, []).append(self._slot[(xfer.dst - xfer.src) % self.plan.n])
        if not evs:
            return None
        return simpy.AllOf(self.env, evs)

    def on_finalize(self, gpu: int, step: int, traffic: Traffic) -> Optional[simpy.Event]:
        self._hier(gpu)
        L, eb = self.layout, self.plan.elem_bytes
        mine = sorted(k for k in self._pending if k[0] == gpu)
        group = _Group(self.env, f"gpu{gpu} finalize step{step}", 0)
        pieces, nbytes_read = [], 0
        for key in mine:
            _, buf, lo, hi = key
            slots = self._pending.pop(key)
            nb = (hi - lo) * eb
            nbytes_read += nb * (1 + len(slots))
            local = L.addr(buf, lo, eb)
            pieces += self._pieces(group, [local] + [L.recv_addr(s, lo, eb) for s in slots], nb, local)
        if nbytes_read != traffic.reads_B:
            raise AssertionError(f"{self.name}: GPU {gpu} finalize after step {step} reads {nbytes_read} B, "
                                 f"traffic accounting expects {traffic.reads_B} B")
        return self._run(gpu, "finalize", pieces, group, self.plan.steps[step].category)

    # ------------------------------------------------------------------ packets
    def _packet(self, packet) -> simpy.Event:
        """A packet reached GPU ``packet.dst``: the interconnect writes it into memory (module doc); returns the
        writes' event."""
        tag = packet.meta.tag
        hier = self.hiers[packet.dst]
        x = self.plan.steps[tag.step].xfers[tag.xfer]
        L = self.layout
        off = packet.addr  # byte offset within the destination buffer
        cat = self.plan.steps[tag.step].category
        if x.op == "reduce" and self.variant == "baseline":
            start = L.recv_base_B + self._slot[(x.dst - x.src) % self.plan.n] * L.recv_slot_B + off
            ev = hier.write(line_addrs(start, packet.nbytes), cat, self.stream, uncached=True)
        elif x.op == "reduce":
            ev = hier.write(line_addrs(L.bases[x.dst_buf] + off, packet.nbytes), cat, self.stream, update=True)
        else:
            ev = hier.write(line_addrs(L.bases[x.dst_buf] + off, packet.nbytes), cat, self.stream, uncached=True)
        self._recv_writes.setdefault((packet.dst, tag.step, tag.xfer, tag.slice), []).append(ev)
        ev.callbacks.append(lambda _e: self.progressed())
        return ev  # the receive buffer holds the packet until then (Network, landing backpressure)

    # ------------------------------------------------------------------ diagnostics
    def pieces_done(self) -> int:
        """CU pieces executed on the simulated GPUs."""
        return sum(p.pieces_done for p in self.pools.values())

    def math_ns(self) -> Dict[int, float]:
        """Reduction math time summed over pieces, per simulated GPU (ns)."""
        return {g: p.math_ticks / TICKS_PER_NS for g, p in self.pools.items()}

    def pending(self) -> str:
        parts = [f"{g.label}: {g.left} pieces left, {g.writes} stores in flight"
                 for g in list(self._open.values())[:8] if not g.event.triggered]
        parts += [f"gpu{gpu}: {p.busy}/{p.cus} CUs busy, {len(p.queue)} pieces queued"
                  for gpu, p in self.pools.items() if p.busy or p.queue]
        return "; ".join(parts)
