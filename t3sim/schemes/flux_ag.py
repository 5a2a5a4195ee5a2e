"""``flux_ag``: FLUX's fused AllGather + GEMM (Chang et al. 2024, Algs. 2 and 3, Secs. 3.2, 4.1, 4.3).

The workload's ``ag_gemm`` direction (``workload.direction``): every GPU holds its ``1/N`` row shard of
the GEMM's input A (rows ``[r M/N, (r+1) M/N)`` on GPU ``r``, at their place in the gathered buffer,
which is A at ``model.a_base``, the same address on every GPU) and the GEMM consumes the gathered
``M x K`` A times its own B.

Communication (Alg. 3, the host side). At the fused kernel's launch the host issues, on every GPU,
``N - 1`` peers' worth of *communication tiles* of ``scheme.flux_comm_tile_rows`` rows (0: one tile
per shard, ``M/N`` rows, the medium-grained chunk FLUX starts its tuning from; any divisor of
``M/N`` down to the GEMM's ``tile_m``) as copy-engine copies (``cudaMemcpyAsync``,
:class:`~t3sim.dma.copy_engine.CopyEngines`), in the topology's order: direct transfers to (from)
the peers in ring order starting after the local rank (peer ``r + 1``, ``r + 2``, ... mod N), a
peer's tiles in row order (Sec. 4.3). ``scheme.flux_ag_mode``:

* ``push`` -- GPU ``r``'s engines read its own shard's tile and write it into the peer's gathered
  buffer over the links (direction ``d2p``, a :class:`~t3sim.dma.engine.Fabric` on a port of its
  own); then the engine writes the peer's signal for that tile (``cuStreamWriteValue`` to remote
  memory): the signal is set one path latency after the tile's last line landed.
* ``pull`` -- GPU ``r``'s engines read the peer's tile (direction ``p2d``: the request crosses the
  links, the peer's DRAM is read, the data comes back in bulk-copy packets) and write it into its
  own gathered buffer; then the engine sets the local signal (at once).

The copies of one GPU queue FIFO for its copy engines (more copies than engines wait). The
copy engines' DRAM traffic is category ``ag``.

The kernel (Alg. 2). The GEMM's WGs run as the plain GEMM's do, except that before its main loop a
WG waits (``WaitSignal``, spinning: it holds its CU slot, but adds nothing to the CU's math) until
the signal of every communication tile its A rows overlap is set; the local shard's signals are
preset. The wait is one event per signal (no per-cycle polling); a WG sees a signal the tick it is
set (assumption: the latency of the spin's polling load is not modelled). Tile-coordinate
swizzle (``scheme.flux_swizzle``, Sec. 4.1: "align with the signal arrival order"): GPU ``r``'s tile
order starts at its own shard's first tile row and goes on in row order (wrapping), i.e. its rows in
the order their copies arrive; off: every GPU runs the base order (row 0 first).

Records: ``flux_gemm`` (the fused kernel, phase ``gemm``) and its companion ``flux_ag``
(communication, phase ``ag``, ends when every GPU's last tile has landed and its signal is set).
The program reports ``gemm`` = the fused kernel's time, ``ag`` = any communication after it (0: the
kernel cannot end before its inputs arrived), ``rs`` = 0.

Not built: homogeneous mode (explicit only: every GPU's copies and waits are simulated), functional
data, A layouts whose row blocks are not contiguous (``trans_a`` false: a tile would be a strided
copy), and PCIe's ring forwarding (a ring topology here gets direct transfers routed over the
ring's links).

Invariants (tests): each GPU receives exactly ``(N-1)/N`` of A; no WG starts its main loop before
its tiles' signals are set; the fused kernel is never faster than the GEMM alone.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np
import simpy

from t3sim.compute.memhier import REQ_B
from t3sim.dma.copy_engine import Copy, CopyEngines
from t3sim.dma.engine import Completion, Fabric, Payload
from t3sim.errors import InputError
from t3sim.interconnect.network import PacketMeta
from t3sim.results.stats import Stats
from t3sim.schemes.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.program import Kernel, Program, ProgramRun, run_program
from t3sim.schemes.sequential import boundary
from t3sim.sim.clock import TICKS_PER_US
from t3sim.workload import wg_order


def comm_tile_rows(model) -> int:
    """``scheme.flux_comm_tile_rows`` resolved (0: ``M/N``), checked (module doc); raises InputError."""
    k, n = model.kernel, model.n
    rows = model.exp.scheme.flux_comm_tile_rows
    if k.M % n:
        raise InputError("workload.tokens", f"M = {k.M} rows of A over {n} GPUs (flux_ag shards A by rows)",
                         f"a multiple of {n} tokens")
    shard = k.M // n
    if rows == 0:
        return shard
    if rows > shard or rows < min(k.tile_m, shard) or shard % rows:
        divs = [d for d in range(min(k.tile_m, shard), shard + 1) if shard % d == 0]
        raise InputError("scheme.flux_comm_tile_rows", f"{rows} with a shard of M/N = {shard} rows and GEMM tile_m = "
                         f"{k.tile_m}", "0 (M/N) or a divisor of M/N from tile_m to M/N: " +
                         ", ".join(map(str, divs[:12])) + (" ..." if len(divs) > 12 else ""))
    return rows


class FluxAgContext:
    """The fused AllGather+GEMM on every GPU (module doc): tiles, signals, copies, counters."""

    def __init__(self, model):
        self.model = model
        sc, k = model.exp.scheme, model.kernel
        self.mode, self.swizzle = sc.flux_ag_mode, sc.flux_swizzle
        self.N = N = model.n
        self.env = model.env
        self._check(model)
        self.rows = comm_tile_rows(model)
        self.shard_rows = k.M // N
        self.tiles_per_shard = self.shard_rows // self.rows
        self.T = N * self.tiles_per_shard  # communication tiles of A
        self.row_B = k.K * model.elem_B  # A is row-major (trans_a): a row block is contiguous
        self.tile_B = self.rows * self.row_B
        if self.tile_B % REQ_B:
            raise InputError("scheme.flux_comm_tile_rows", f"{self.rows} rows of {self.row_B} B = {self.tile_B} B, "
                             f"not whole {REQ_B} B requests", f"a row count whose bytes are a multiple of {REQ_B}")
        #: per consumer GPU, per communication tile: the event its signal is set (local shard: preset)
        self.signals: Dict[int, List[simpy.Event]] = {}
        #: per consumer GPU, per communication tile: the tick its signal was set
        self.set_tick: Dict[int, List[int]] = {}
        for g in model.sim_gpus:
            evs = [self.env.event() for _ in range(self.T)]
            self.set_tick[g] = [-1] * self.T
            for t in self.shard_tiles(g):
                evs[t].succeed()
                self.set_tick[g][t] = self.env.now
            self.signals[g] = evs
        #: per GPU: (seq, tile, tick the WG entered its prologue, tick it passed it)
        self.waits: Dict[int, List[Tuple[int, int, int, int]]] = {g: [] for g in model.sim_gpus}
        base = list(wg_order(k))
        tm_of = np.asarray(base, dtype=np.int64) // k.tiles_n
        self.orders = {}
        for g in model.sim_gpus:
            if self.swizzle:  # own shard's first tile row first, then row order (wrapping)
                first = (g * self.shard_rows) // k.tile_m
                key = (tm_of - first) % k.tiles_m
                self.orders[g] = [base[i] for i in np.argsort(key, kind="stable")]
            else:
                self.orders[g] = base
        cfg = model.system.copy_engine
        self.port = model.network.new_port("flux_ag.push")
        self.fabric = Fabric(model.engine, model.network, model.hiers, port=self.port, name="flux_ag.fabric")
        self.pull_port = model.network.new_port("flux_ag.pull")
        self.engines: Dict[int, CopyEngines] = {}
        for g in model.sim_gpus:
            ce = CopyEngines(model.engine, g, model.hiers[g], cfg, category="ag", peer_send=self._peer_send)
            ce.peer_read = self._peer_read
            self.engines[g] = ce
        self.completion = Completion(self.env)
        self.received_B = {g: 0 for g in model.sim_gpus}
        self.copies = 0

    def _check(self, model) -> None:
        k = model.kernel
        if model.mode != "explicit":
            raise InputError("simulation.mode", f"{model.mode} with scheme.kind=flux_ag",
                             "simulation.mode=explicit (every GPU's copies and signal waits are simulated)")
        if model.exp.simulation.functional_data:
            raise InputError("simulation.functional_data", "true with scheme.kind=flux_ag, which has no functional "
                             "check yet", "false")
        if not k.trans_a:
            raise InputError("workload.sublayer", f"{k.sublayer} (its ag_gemm GEMM reads A column-major, so a "
                             "block of rows is not contiguous and is not one copy)",
                             "a sub-layer whose ag_gemm GEMM is a forward one (IP, FC-1)")

    # ---------------------------------------------------------------- geometry
    def shard_tiles(self, r: int) -> range:
        """Communication tiles of GPU ``r``'s shard."""
        return range(r * self.tiles_per_shard, (r + 1) * self.tiles_per_shard)

    def tile_addr(self, t: int) -> int:
        """Byte address of communication tile ``t`` in the gathered A (the same on every GPU)."""
        return self.model.a_base + t * self.tile_B

    def needed(self, tile: int) -> range:
        """Communication tiles that GEMM tile ``tile``'s A rows overlap."""
        k = self.model.kernel
        tm = tile // k.tiles_n
        r0, r1 = tm * k.tile_m, min(k.M, (tm + 1) * k.tile_m)
        return range(r0 // self.rows, (r1 - 1) // self.rows + 1)

    # ---------------------------------------------------------------- the host's copies (Alg. 3)
    def launch(self):
        """Issue every GPU's copies in topology order (module doc); the event fires when all landed and signalled."""
        for g in self.model.sim_gpus:
            for d in range(1, self.N):
                p = (g + d) % self.N
                if self.mode == "push":  # my shard's tiles into p's buffer; p's signals
                    src, dst, owner = g, p, g
                else:  # p's shard's tiles into my buffer; my signals
                    src, dst, owner = p, g, p
                for t in self.shard_tiles(owner):
                    a = self.tile_addr(t)
                    self.completion.add()
                    self.copies += 1
                    direction = "d2p" if self.mode == "push" else "p2d"
                    ev = self.engines[g].copy(a, a, self.tile_B, direction, peer=p, tag=(dst, t))
                    ev.callbacks.append(lambda _e, src=src, dst=dst, t=t: self._landed(src, dst, t))
        self.completion.seal()
        return self.completion.done

    def _landed(self, src: int, dst: int, t: int) -> None:
        """Tile ``t`` is in ``dst``'s buffer: set its signal (push: a remote write, one path latency)."""
        self.received_B[dst] += self.tile_B
        lat = self.model.network.path_latency_ticks(src, dst) if self.mode == "push" else 0
        if lat:
            self.env.timeout(lat).callbacks.append(lambda _e: self._set(dst, t))
        else:
            self._set(dst, t)

    def _set(self, g: int, t: int) -> None:
        self.set_tick[g][t] = self.env.now
        self.signals[g][t].succeed()
        self.completion.finish()

    def _peer_send(self, gpu: int, c: Copy, off: int, dst_addrs: np.ndarray, data):
        """A push copy's request: its lines written into the peer's gathered buffer over the links."""
        ev = self.env.event()
        self.fabric.send(gpu, c.peer, Payload(dst_addrs, None, None, "store", data, category="ag",
                                              then=lambda _pl: ev.succeed()))
        return ev

    def _peer_read(self, gpu: int, c: Copy, off: int, src_addrs: np.ndarray):
        """A pull copy's request: read ``src_addrs`` at the peer, bring them back over the links."""
        return self.env.process(self._remote_read(gpu, c.peer, src_addrs))

    def _remote_read(self, g: int, p: int, addrs: np.ndarray):
        net = self.model.network
        yield self.env.timeout(net.path_latency_ticks(g, p))  # the read request crosses the links
        cfg = self.model.system.copy_engine
        hp = self.model.hiers[p]
        yield hp.read(addrs, "ag", self.engines[g].stream, uncached=not cfg.l2_allocate)
        yield net.send(p, g, REQ_B * len(addrs), PacketMeta(addr=int(addrs[0]), tag="flux_ag.pull", port=self.pull_port))
        return None

    # ---------------------------------------------------------------- the kernel's prologue (Alg. 2)
    def prologue_for(self, g: int):
        """GPU ``g``'s WaitSignal: the event a WG of GEMM tile ``tile`` waits for (None: all set)."""
        sig = self.signals[g]
        log = self.waits[g]

        def prologue(seq: int, tile: int) -> Optional[simpy.Event]:
            pending = [sig[t] for t in self.needed(tile) if not sig[t].triggered]
            t0 = self.env.now
            if not pending:
                log.append((seq, tile, t0, t0))
                return None
            ev = pending[0] if len(pending) == 1 else self.env.all_of(pending)
            ev.callbacks.append(lambda _e: log.append((seq, tile, t0, self.env.now)))
            return ev

        return prologue

    # ---------------------------------------------------------------- results
    def stats(self) -> Stats:
        s = Stats()
        s.add("flux_ag.comm_tile_rows", self.rows, "count", "rows of A per communication tile")
        s.add("flux_ag.signals", self.T, "count", "communication tiles of A (signals per GPU)")
        s.add("flux_ag.copies", self.copies, "count", "copy-engine copies issued (all simulated GPUs)")
        for g in self.engines:
            s.add(f"gpu{g}.flux_ag.received_B", self.received_B[g], "B", "bytes of A that landed in this GPU's buffer")
            s.merge(f"gpu{g}.flux_ag_copy", self.engines[g].stats())
            s.add(f"gpu{g}.flux_ag_copy.p2d_bytes", self.engines[g].pulled_B, "B",
                  "bytes this GPU's copy engines pulled from peers (pull mode)")
            w = self.waits[g]
            waited = [b - a for _s, _t, a, b in w]
            s.add(f"gpu{g}.flux_ag.wgs_waited", sum(1 for x in waited if x > 0), "count",
                  "WGs whose prologue waited for a signal")
            s.add(f"gpu{g}.flux_ag.wait_us_total", sum(waited) / TICKS_PER_US, "us", "sum over WGs of the prologue's wait")
        s.add("flux_ag.fabric.sent_B", self.fabric.sent_B, "B", "bytes the push copies sent over the links")
        s.add("flux_ag.fabric.landed_B", self.fabric.landed_B, "B", "bytes of those written at their destination")
        return s


def flux_ag_program(model, ctx: FluxAgContext) -> Program:
    """The fused kernel with its companion, the host-issued copies (module doc)."""
    def gemm():
        return model.gemm("flux_gemm", order_for=lambda g: ctx.orders[g], prologue_for=ctx.prologue_for)

    p = Program()
    p.add("main", Kernel("flux_gemm", "fused", "gemm", gemm, on_end=boundary(model)))
    p.add("comm", Kernel("flux_ag", "dma", "ag", ctx.launch, comm=True, start_with="flux_gemm"))
    return p


def run_flux_ag(model) -> ProgramRun:
    """Run the fused AllGather+GEMM on ``model`` (module doc)."""
    ctx = FluxAgContext(model)
    model.attach(ctx)
    return run_program(model, flux_ag_program(model, ctx))


register_simulation("flux_ag", run_flux_ag)
register_scheme(Scheme("flux_ag", "FLUX: AllGather+GEMM fused in the prologue: host-issued copy-engine copies of A's "
                       "communication tiles (push or pull, ring order after the local rank) set per-tile signals; each "
                       "GEMM WG waits on its tiles' signals before its main loop",
                       label="FLUX AG", color="#e377c2", paper_section="FLUX Algs. 2-3, Secs. 3.2, 4.1, 4.3",
                       simulation="flux_ag", options=("flux_ag_mode", "flux_comm_tile_rows", "flux_swizzle"),
                       directions=("ag_gemm",)))
