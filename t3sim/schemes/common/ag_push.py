"""Copy-engine pushes of the pieces of a gathered A, with a flag per piece at each destination.

Shared by the schemes that gather the GEMM's input A themselves with copy engines: ``chunked_dma``'s
``ag_gemm`` direction (:mod:`t3sim.schemes.decomposed.chunked_dma_ag`, one piece per sub-chunk of a shard),
FiCCO and its characterization (:mod:`t3sim.schemes.ficco.ficco`, :mod:`t3sim.schemes.ficco.ficco_char`).

GPU ``r``'s part of A is cut into pieces ``j`` (``pieces[r][j]``: byte offset from ``model.a_base`` and length,
the same on every GPU). :meth:`ChunkAgContext.push` copies piece ``j`` of GPU ``g``'s part into peer ``g + d``'s
gathered buffer (direction ``d2p``: :class:`~t3sim.dma.copy_engine.CopyEngines` reading local memory, category
``ag``, the lines written into the peer's memory through a :class:`~t3sim.dma.engine.Fabric` on a port of its own);
a copy is done when its last line has landed, and the piece's flag at the destination is set one path latency
later (the flag write crosses the links). A consumer's stream wait (:meth:`ChunkAgContext.wait`) holds its stream
until a piece's flag is set; its own part's flags are set from the start.

Homogeneous mode (paper Sec. 5.1.1). GPU 0 is simulated; by rotation symmetry shadow ``j``'s copy to
``j + d`` is GPU 0's copy to ``d``: when GPU 0's engine sends requests ``[a, b)`` of its copy to ``d``,
every shadow ``j`` sends requests ``[a, b)`` of its own piece to ``j + d`` at that instant, so every link
carries every GPU's traffic; shadow ``N - d``'s payloads land in GPU 0's gathered buffer as real writes, and
GPU 0's flag for that piece is set one path latency after the last of them has landed (and GPU 0's own copy,
whose issue mirrors them, is done). Packets to shadows are delivered and dropped; a shadow's send to another
shadow is elided where the network allows it (:meth:`~t3sim.interconnect.network.Network.elide_image`: a full
mesh), its links reporting their images' statistics.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from t3sim.compute.memhier import REQ_B
from t3sim.dma.copy_engine import Copy, CopyEngines
from t3sim.dma.engine import Completion, Fabric, Payload
from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_US


class ChunkAgContext:
    """The pushes of A's pieces, their flags and the step records of every simulated GPU (module doc)."""

    def __init__(self, model, pieces: List[List[Tuple[int, int]]], name: str = "chunked",
                 src_of: Optional[Callable[[int, int, int], int]] = None):
        """``pieces[p][j]``: byte offset from ``model.a_base`` and length of piece ``j`` of GPU ``p``'s part of A
        (the same offsets on every GPU; rotation symmetry needs piece ``j`` of every GPU the same length).
        ``name`` prefixes the fabric's port.
        ``src_of(g, dst, j)``: the byte address GPU ``g`` reads the piece ``j`` it sends to ``dst`` from
        (an all-to-all: different data per destination); None: the piece's own place in A."""
        self.model = model
        self.src_of = src_of
        k = model.kernel
        self.row_B = k.K * model.elem_B
        self.pieces = pieces
        self.n = n = model.n
        self.env = model.env
        self.homogeneous = model.mode == "homogeneous"
        self.c = len(pieces[0])
        #: per consumer GPU, per (shard, sub-chunk): the event its flag is set (own shard: preset)
        self.flags: Dict[int, Dict[Tuple[int, int], object]] = {}
        self.flag_tick: Dict[int, Dict[Tuple[int, int], int]] = {}
        #: per consumer GPU, per (shard, sub-chunk): the tick its last line landed there
        self.landed_tick: Dict[int, Dict[Tuple[int, int], int]] = {g: {} for g in model.sim_gpus}
        for g in model.sim_gpus:
            self.flags[g], self.flag_tick[g] = {}, {}
            for p in range(n):
                for j in range(self.c):
                    ev = self.flags[g][p, j] = self.env.event()
                    if p == g:
                        ev.succeed()
                        self.flag_tick[g][p, j] = self.env.now
        #: per GPU: (step name, shard, sub-chunk, wait start, flag set, GEMM end) ticks
        self.steps: Dict[int, List[list]] = {g: [] for g in model.sim_gpus}
        self.port = model.network.new_port(f"{name}.ag_push")
        self.fabric = Fabric(model.engine, model.network, model.hiers, port=self.port, name=f"{name}.ag_fabric")
        self.engines: Dict[int, CopyEngines] = {
            g: CopyEngines(model.engine, g, model.hiers[g], model.system.copy_engine, category="ag",
                           peer_send=self._peer_send) for g in model.sim_gpus}
        #: homogeneous mode: GPU 0's incoming sub-chunk (shard, j) -> the mirrored payloads' completion
        self.incoming: Dict[Tuple[int, int], Completion] = {}
        self.received_B = {g: 0 for g in model.sim_gpus}
        self.shadow_B = 0
        self.copies = 0

    # ---------------------------------------------------------------- geometry
    def sub(self, p: int, j: int) -> Tuple[int, int]:
        """Byte address (the same on every GPU) and length of sub-chunk ``j`` of shard ``p`` of A."""
        off, nb = self.pieces[p][j]
        return self.model.a_base + off, nb

    def shard_at(self, g: int, s: int) -> int:
        """The shard GPU ``g``'s step ``s`` computes: its own, then ``g - 1``, ``g - 2``, ... (arrival order)."""
        return (g - s) % self.n

    # ---------------------------------------------------------------- the pushes
    def push(self, g: int, d: int, j: int):
        """GPU ``g``'s copy of sub-chunk ``j`` of its shard into peer ``g + d``'s gathered buffer; the event
        fires when it has landed (the destination's flag follows one path latency later)."""
        dst = (g + d) % self.n
        a, nb = self.sub(g, j)
        self.copies += 1
        if self.homogeneous:  # GPU 0's incoming copy of the same (d, j) is mirrored by its issue (module doc)
            self.incoming[(-d) % self.n, j] = Completion(self.env)
        src = a if self.src_of is None else self.src_of(g, dst, j)
        ev = self.engines[g].copy(src, a, nb, "d2p", peer=dst, tag=(d, j))
        ev.callbacks.append(lambda _e: self._copied(g, dst, d, j))
        return ev

    def _copied(self, g: int, dst: int, d: int, j: int) -> None:
        if dst in self.flags:  # explicit mode: the destination is simulated
            self._flag_after(g, dst, (g, j))
        if self.homogeneous:
            src = (-d) % self.n
            comp = self.incoming[src, j]
            comp.done.callbacks.append(lambda _e: self._flag_after(src, 0, (src, j)))
            comp.seal()

    def _flag_after(self, src: int, dst: int, key: Tuple[int, int]) -> None:
        self.landed_tick[dst][key] = self.env.now
        lat = self.model.network.path_latency_ticks(src, dst)
        self.env.timeout(lat).callbacks.append(lambda _e: self._set(dst, key))

    def _set(self, g: int, key: Tuple[int, int]) -> None:
        self.flag_tick[g][key] = self.env.now
        self.flags[g][key].succeed()

    def _peer_send(self, gpu: int, c: Copy, off: int, dst_addrs: np.ndarray, data):
        """A copy engine's d2p request: its lines written into the peer's gathered buffer; mirrored (module doc)."""
        ev = self.env.event()
        nb = REQ_B * len(dst_addrs)

        def landed(_pl, p=c.peer):
            if p in self.received_B:
                self.received_B[p] += nb
            ev.succeed()

        self.fabric.send(gpu, c.peer, Payload(dst_addrs, None, None, "store", data, category="ag", then=landed))
        if self.homogeneous and gpu == 0:
            self._mirror(c, off // REQ_B, off // REQ_B + len(dst_addrs))
        return ev

    def _mirror(self, c: Copy, j0: int, j1: int) -> None:
        """GPU 0 sent requests ``[j0, j1)`` of its copy of sub-chunk ``k`` to peer ``d``: each shadow ``j``
        sends the same requests of its own sub-chunk ``k`` to ``j + d`` now (module doc)."""
        d, k = c.tag
        for j in range(1, self.n):
            p = (j + d) % self.n
            nb = REQ_B * (j1 - j0)
            self.shadow_B += nb
            if p and self.fabric.elide_image(j, p, nb):  # shadow to shadow, where the network can (module doc)
                continue
            a, _nb = self.sub(j, k)
            addrs = a + REQ_B * np.arange(j0, j1, dtype=np.int64)
            then = self._landed_at_0(self.incoming[j, k], nb) if p == 0 else None
            self.fabric.send(j, p, Payload(addrs, None, None, "store", None, category="ag", then=then))

    def _landed_at_0(self, comp: Completion, nbytes: int):
        """The ``then`` of a mirrored payload to GPU 0: count it in ``comp`` (its sub-chunk's landings)."""
        comp.add()

        def then(_pl):
            self.received_B[0] += nbytes
            comp.finish()

        return then

    # ---------------------------------------------------------------- the steps' stream waits
    def wait(self, g: int, s: int, j: int):
        """GPU ``g``'s stream wait before step ``(s, j)``: the flag's event, or None when it is set."""
        p = self.shard_at(g, s)
        rec = [f"s{s}_{j}", p, j, self.env.now, -1, -1]
        self.steps[g].append(rec)
        ev = self.flags[g][p, j]
        if ev.triggered:
            rec[4] = self.env.now
            return None
        ev.callbacks.append(lambda _e: rec.__setitem__(4, self.env.now))
        return ev

    def step_ended(self, g: int, s: int, j: int, boundary: bool) -> None:
        """GPU ``g``'s step ``(s, j)`` ended; its last step's end is a kernel boundary for its memory controllers."""
        next(r for r in self.steps[g] if r[0] == f"s{s}_{j}")[5] = self.env.now
        if boundary:
            self.model.hiers[g].port.kernel_boundary()

    # ---------------------------------------------------------------- results
    def stats(self) -> Stats:
        s = Stats()
        s.add("chunk_ag.steps_per_gpu", self.n * self.c, "count", "GEMM steps per GPU (N shards x sub-chunks)")
        s.add("chunk_ag.copies", self.copies, "count", "copy-engine pushes issued (simulated GPUs)")
        for g in self.engines:
            s.add(f"gpu{g}.chunk_ag.received_B", self.received_B[g], "B", "bytes of A that landed in this GPU's buffer")
            s.merge(f"gpu{g}.chunk_ag_copy", self.engines[g].stats())
            waited = [b - a for _n, _p, _j, a, b, _e in self.steps[g]]
            s.add(f"gpu{g}.chunk_ag.steps_waited", sum(1 for x in waited if x > 0), "count",
                  "GEMM steps whose stream wait found the shard not yet there")
            s.add(f"gpu{g}.chunk_ag.wait_us_total", sum(waited) / TICKS_PER_US, "us",
                  "sum over GEMM steps of the stream wait for their shard")
        s.merge("chunk_ag.fabric", self.fabric.stats())
        s.add("chunk_ag.fabric.shadow_B", self.shadow_B, "B", "bytes of those the homogeneous mode's shadows sent")
        return s
