"""Windowed GEMM: a kernel's WGs, its GPU's L2 and memory advanced in compiled code.

The reference path runs each WG slot of a :class:`~t3sim.compute.gemm_kernel.GemmKernel` as a simpy
process: per k-group a math timeout, an L2 read, a DRAM submission and a join event, plus the
memory port's pump steps and completion dispatch -- about ten Python-level events per k-group.
:class:`GemmWindow` runs the same events in :func:`~t3sim.window.window_kernel.run_window`
instead, one compiled loop over a heap with simpy's ``(tick, priority, eid)`` keys and eids taken
from the environment's own counter, so the two heaps form one total order (the kernel module's
docstring lists the mirrored events). simpy sees one *bridge* entry at the compiled heap's first
key; when it fires, the loop runs every compiled event that comes before the simpy heap's first
event (the *window*), then re-arms the bridge. Statistics are identical to the reference path's
(``tests/compute/test_gemm_window.py`` holds them byte-identical), except ``sim.events``, which
counts simpy events.

When. A kernel runs windowed (:func:`eligible`) only where the mirrored events are all that
happens on its GPU while it runs: the caller marks it ``exclusive`` (nothing else uses the GPU's
memory or CUs meanwhile: a program with one stream, :func:`t3sim.schemes.runtime.program.run_program`),
the output goes through :class:`~t3sim.compute.sinks.CachedLocalOutput` or
:class:`~t3sim.compute.sinks.AccumulatingOutput` (:func:`sink_kind`), no split-K (a split kernel's slices write
a workspace and a reduction kernel follows them: the simpy path runs both), no cluster, prologue,
stage callback, WG trace, CU mask, enqueue hook, functional data or command log, the memory is idle
and the CUs are free. Otherwise the kernel takes the reference path. In explicit mode every GPU's GEMM
of an exclusive phase runs windowed, all behind one bridge (:class:`_Group`: one window after another
over the same stretch of time, exact because the GPUs do not interact while their GEMMs run). While
the window owns the GPU, the hierarchy, port and CU dispatcher refuse other users (RuntimeError): a
broken ``exclusive`` promise fails loudly instead of computing something else.
``simulation.gemm_window: false`` turns windows off (the reference path everywhere).
"""

from __future__ import annotations

import functools
import heapq
import itertools

import numpy as np
import simpy

from t3sim.cache.common import cycles_to_ticks
from t3sim.cache.fast import access_uniform
from t3sim.compute.addresses import slice_requests, wg_store_requests
from t3sim.compute.dispatcher import CuDispatcher
from t3sim.compute.fast import REQ_B, l2_read
from t3sim.compute.memhier import CATEGORY_SOURCE
from t3sim.compute.sinks import AccumulatingOutput, CachedLocalOutput
from t3sim.memory import Kind, Source, Stream
from t3sim.memory.fast import NOUT, PUMP_DEPENDS, kernels, specialise
from t3sim.memory.port import BatchResult
from t3sim.sim.clock import cycle_start_tick
from t3sim.window import window_heap as WH
from t3sim.window import window_kernel as WK

_NO_ID = np.array([-1], dtype=np.int64)
#: compiled events per window at most (then the bridge is re-armed: progress reports and the watchdog run)
EVENTS_PER_CALL = 1 << 16


@functools.lru_cache(maxsize=None)
def kernel(policy_cls, drain_cls):
    """:func:`~t3sim.window.window_kernel.run_window` compiled with the memory's fused pump step for this
    arbitration / write-drain policy pair (:func:`t3sim.memory.fast.kernels`)."""
    step = kernels(policy_cls, drain_cls)[1]
    return specialise(WK.run_window, f"{policy_cls.__name__}_{drain_cls.__name__}", {"pump_step": step},
                      depends=(WH.push, l2_read, access_uniform, cycle_start_tick, *PUMP_DEPENDS, policy_cls.choose,
                               drain_cls.decide))


def run_windowed(gk, first_wg: int, slots: int, launch_ticks: int) -> bool:
    """Run kernel ``gk``'s WGs ``first_wg..`` on ``slots`` slots in compiled windows if it may (:func:`eligible`;
    True), else nothing (False: its simpy slots run them). The runner :class:`~t3sim.compute.gemm_kernel.GemmKernel`
    calls at its start where ``simulation.gemm_window`` is on (its ``window``)."""
    if not eligible(gk):
        return False
    GemmWindow(gk, first_wg, slots, launch_ticks)
    return True


def sink_kind(sink):
    """How the window runs output sink ``sink``: ``"cached"`` (:class:`~t3sim.compute.sinks.CachedLocalOutput`),
    ``"accumulate"`` (an :class:`~t3sim.compute.sinks.AccumulatingOutput` whose ``store`` is that class's; a
    subclass may count the reads), or None (another sink: the reference path)."""
    if type(sink) is CachedLocalOutput:
        return "cached"
    if isinstance(sink, AccumulatingOutput) and type(sink).store is AccumulatingOutput.store:
        return "accumulate"
    return None


def eligible(gk) -> bool:
    """Whether kernel ``gk`` (just registered with its dispatcher) may run windowed (module doc)."""
    h = gk.hier
    mem = h.mem
    sink = gk.sink
    disp = gk.dispatcher
    if not (getattr(gk, "exclusive", False) and sink_kind(sink) is not None and sink.hier is h
            and gk.split == 1 and gk.cluster == (1, 1) and gk.prologue is None and gk.on_stage_done is None
            and gk.wg_spans is None
            and gk.num_cus == gk.gpu.num_cus and type(disp) is CuDispatcher):
        return False
    if not (mem._fused and mem.feed is None and mem.outstanding == 0 and h.outstanding_writes == 0
            and not h.fills.events and not h.port._events and h.window is None and not mem.posted_policy_events
            and not h._rooms):
        return False
    if getattr(mem.engine, "_pump_step", None) is None:
        return False
    others = [c for hh, c in disp._clients.items() if hh != gk._h and (c.resident or c.pending() > 0)]
    return not others and bool(np.all(disp.free == disp.cap))


class GemmWindow:
    """Runs kernel ``gk``'s WGs ``first_wg..`` on ``slots`` slots in compiled windows (module doc)."""

    def __init__(self, gk, first_wg: int, slots: int, launch_ticks: int):
        self.gk, self.env = gk, gk.env
        h = self.hier = gk.hier
        mem = self.mem = h.mem
        k, g = gk.kernel, gk.geom
        steps, G, P = g.k_steps, gk.k_group, gk.in_flight
        ng = -(-steps // G)
        self.fn = kernel(type(mem.policy), type(mem.drain))
        # the kernel's addresses: A slices per (tile row, k-group), B per (tile column, k-group), stores per tile
        self.a_addr, self.a_off = _slices(g, "a", k.tiles_m, ng, G, steps)
        self.b_addr, self.b_off = _slices(g, "b", k.tiles_n, ng, G, steps)
        st = [np.unique(wg_store_requests(g, *divmod(t, k.tiles_n)).addr) for t in range(k.num_wgs)]
        self.st_off = np.concatenate(([0], np.cumsum([len(x) for x in st]))).astype(np.int64)
        self.st_addr = np.concatenate(st).astype(np.int64)
        wpc = gk.occ.wgs_per_cu
        self.mcyc = np.zeros((ng, wpc + 1), dtype=np.int64)  # CU cycles per (k-group, WGs sharing the CU)
        for gi in range(ng):
            for share in range(1, wpc + 1):
                self.mcyc[gi, share] = gk.math_cycles(gi * G, min(gi * G + G, steps), share)
        la = np.diff(self.a_off).reshape(k.tiles_m, ng).max(initial=0)
        lb = np.diff(self.b_off).reshape(k.tiles_n, ng).max(initial=0)
        self.scratch = np.zeros(int(la + lb), dtype=np.int64)
        self.stage_left = np.asarray(gk._stage_left, dtype=np.int64)
        self.stage_end = np.asarray(gk.run.stage_end_ticks, dtype=np.int64)
        ncat = len(h.categories)
        self.cat_src = np.array([int(CATEGORY_SOURCE.get(c, Source.OTHER)) for c in h.categories], dtype=np.int64)
        self.TR = np.zeros((ncat, 3), dtype=np.int64)
        C = self.C = np.zeros(WK.NC, dtype=np.int64)
        acc = sink_kind(gk.sink) == "accumulate"  # a store also reads C's lines, and writes them when back
        am = mem.amap
        stmax = int(np.diff(self.st_off).max(initial=0))
        line_B, sector_B, access_B = h._geo
        for i, v in ((WK.C_S, slots), (WK.C_P, P), (WK.C_NG, ng), (WK.C_G, G), (WK.C_STEPS, steps),
                     (WK.C_NWGS, k.num_wgs), (WK.C_TILES_N, k.tiles_n), (WK.C_LAUNCH, launch_ticks),
                     (WK.C_CU_F, gk.clock.freq_kHz), (WK.C_L2_F, h.l2.clock.freq_kHz), (WK.C_MEM_F, mem.clock.freq_kHz),
                     (WK.C_FRONTEND, mem.frontend_ticks), (WK.C_MIN_DONE, mem._min_done),
                     (WK.C_READ_DONE, mem._read_done), (WK.C_LAZY, int(mem.lazy)), (WK.C_L2_LAT, h.l2_latency),
                     (WK.C_CAT, h._cat(gk.category)), (WK.C_SCAT, int(CATEGORY_SOURCE.get(gk.category, Source.OTHER))),
                     (WK.C_ACCESS_B, access_B), (WK.C_LINE_B, line_B), (WK.C_SECTOR_B, sector_B), (WK.C_REQ_B, REQ_B),
                     (WK.C_FLMASK, h.fills.mask), (WK.C_SLOTS, gk.slots), (WK.C_BID0, len(mem.batches.first)),
                     (WK.C_TAG0, h.fills._next), (WK.C_BPG, am.bpg), (WK.C_XOR, int(am.xor)),
                     (WK.C_PCH, mem.geom.pseudo_channels), (WK.C_READ, int(Kind.READ)), (WK.C_WRITE, int(Kind.WRITE)),
                     (WK.C_COMPUTE, int(Stream.COMPUTE)),
                     (WK.C_MARGIN_REQ, 8 * ((1 + acc) * stmax + (P + 1) * (la + lb)) + 64),
                     (WK.C_MARGIN_B, (P + 2 + acc) * (ncat + 2) + 8), (WK.C_ACC, int(acc)),
                     (WK.C_STCAT, h._cat(gk.sink.category)),
                     (WK.C_STSRC, int(CATEGORY_SOURCE.get(gk.sink.category, Source.OTHER))), (WK.C_R, P + 1),
                     (WK.C_AHEAD, int(h.port.lookahead and mem.may_run_ahead())), (WK.C_WQLIM, h.wq_limit),
                     (WK.C_PORT, h.cu_port_B)):
            C[i] = int(v)
        W = self.W = np.zeros(WK.NW, dtype=np.int64)
        eng = mem.engine
        for i, v in ((WK.W_NOW, self.env.now), (WK.W_NEXT, first_wg), (WK.W_LIVE, slots),
                     (WK.W_NB, C[WK.C_BID0]), (WK.W_TAG, C[WK.C_TAG0]), (WK.W_N, mem.n), (WK.W_OUT, mem.outstanding),
                     (WK.W_OUTW, mem.outstanding_writes), (WK.W_FRONTIER, mem.frontier), (WK.W_KAT, mem._kernel_at),
                     (WK.W_LASTSUB, mem._last_submit_tick), (WK.W_NEXTLB, eng.next_lb), (WK.W_JFREE, -1),
                     (WK.W_CBFREE, -1), (WK.W_LAG, eng.lag), (WK.W_WQOUT, h.wq_out), (WK.W_RMH, -1), (WK.W_RMT, -1),
                     (WK.W_WQSTALLS, h.wq_stalls), (WK.W_WQPEAK, h.wq_peak)):
            W[i] = int(v)
        n0 = max(1024, 8 * slots * (P + 3))
        self.H = np.zeros((n0, 5), dtype=np.int64)
        self.CH = np.zeros((n0, 2), dtype=np.int64)
        self.SL = np.full((slots, WK.SL_RING + P + 1), -1, dtype=np.int64)
        self.BI = np.zeros((n0, WK.NB), dtype=np.int64)
        self.TB = np.zeros(n0, dtype=np.int64)
        self.J = np.zeros((n0, WK.NJ), dtype=np.int64)
        self.CB = np.zeros((n0, 2), dtype=np.int64)
        self._seen = (0, 0)  # progress, beats already credited to the kernel
        # the slots take their CUs now (the reference takes them after the launch latency: the same CUs, since
        # nothing else uses the dispatcher meanwhile)
        disp = gk.dispatcher
        self.cus = []
        for j in range(slots):
            cu = disp.acquire(gk._h)
            if cu is None or cu != j % gk.num_cus:
                raise RuntimeError(f"{gk.name}: windowed GEMM expected slot {j} on CU {j % gk.num_cus}, got {cu}")
            self.cus.append(cu)
            self.SL[j, WK.SL_CU] = cu
        disp.settled(gk._h)
        disp.window = h.window = h.port.window = self
        h.port._step, h.port._step_at = None, -1  # the window pumps this memory now
        # the slot processes' Initialize events (URGENT, now), with eids from the environment's counter
        env = self.env
        W[WK.W_EID] = next(env._eid)
        for j in range(slots):
            WK.push(self.H, W, env.now, WK.URGENT, WK.EV_INIT, j)
        env._eid = itertools.count(int(W[WK.W_EID]))
        _group(env).add(self)

    def key(self):
        """The compiled heap's first key ``(tick, priority, eid)``."""
        H = self.H
        return int(H[0, 0]), int(H[0, 1]), int(H[0, 2])

    # ------------------------------------------------------------------ one window
    def _window(self) -> bool:
        """Run this kernel's compiled events that come before the simpy heap's first event (at most
        EVENTS_PER_CALL of them); True when the kernel ended."""
        env = self.env
        W = self.W
        q = env._queue
        lim = (int(q[0][0]), int(q[0][1]), int(q[0][2])) if q else (int(WK.BIG),) * 3
        W[WK.W_EID] = next(env._eid)
        self.mem.engine._prepare(False, max(1, int(W[WK.W_OUT])))
        while True:
            r = self.fn(*lim, EVENTS_PER_CALL, W, self.C, self.H, self.CH, self.SL, self.BI, self.CB, self.J, self.TB, self.TR,
                        self.cat_src, *self._arrays())
            if r == WK.R_GROW:
                # R_GROW comes at the same point as R_LIMIT (before the next pop): end the window here too, so a
                # window never outlives EVENTS_PER_CALL however often the arrays grow (else a whole GEMM ran in one
                # simpy event, with no progress report or watchdog check in between)
                self._grow()
                r = WK.R_LIMIT
                break
            elif r == WK.R_STATS:
                self._retire_grown()
            else:
                break
        env._eid = itertools.count(int(W[WK.W_EID]))
        # simulated time is that of the last compiled event (<= the next simpy event's): the watchdog and
        # the progress display read it
        env._now = max(env._now, int(W[WK.W_NOW]))
        self._credit()
        if r == WK.R_DONE:
            self._finish()
            return True
        if r != WK.R_LIMIT:
            raise RuntimeError(f"{self.gk.name}: windowed GEMM has no events left before its end "
                               f"(t={env.now} ps; {self.gk.pending()})")
        return False

    def _arrays(self):
        mem, h, gk = self.mem, self.hier, self.gk
        eng, acc, b, am = mem.engine, mem.acc, mem.batches, mem.amap
        SA = (mem.RQ, b.done, b.remaining, acc.sc, am.radix_arr, am.pos_arr, bool(am.chash), mem.f_head, mem.f_tail,
              mem._unit_next, _NO_ID, mem._unit_awaited)
        LS = (*h.l2.kernel_state, h.fills.line, h.fills.tag)
        KD = (gk.order, self.a_addr, self.a_off, self.b_addr, self.b_off, self.st_addr, self.st_off, self.mcyc,
              self.stage_left, self.stage_end, gk.cu_active, self.scratch, h.cu_port_free)
        MP = (eng.P, mem.timing.lat, mem.RQ, mem.f_head, mem.f_tail, mem.arb, mem.obs, eng.US, eng.ready, eng.open_row,
              eng.act_hist, eng.Q, eng.hits, eng.qcnt, eng.closing, mem.occ_hist, mem.bus_busy, mem.turnarounds,
              mem.cmd_count, eng._out, eng._no_log, eng.counts)
        MS = (b.done, b.remaining, acc.cnt, acc.rowcls, acc.sc, acc.bw, acc.lat, acc.bin_cycles)
        caps = np.array([mem._cap, len(self.BI), len(self.H), len(self.CH), len(self.J), len(self.CB)], dtype=np.int64)
        return SA, LS, KD, MP, MS, caps

    # ------------------------------------------------------------------ capacity
    def _grow(self) -> None:
        W, C, mem = self.W, self.C, self.mem
        if W[WK.W_N] + C[WK.C_MARGIN_REQ] > mem._cap:
            mem.n, mem.outstanding = int(W[WK.W_N]), int(W[WK.W_OUT])
            mem._compact_or_grow(int(C[WK.C_MARGIN_REQ]))
            W[WK.W_N] = mem.n
        b = mem.batches
        need = int(W[WK.W_NB] + C[WK.C_MARGIN_B])
        if need > b.done.size:
            for name in ("remaining", "done"):
                old = getattr(b, name)
                new = np.zeros(max(need, 2 * old.size), dtype=np.int64)
                new[: old.size] = old
                setattr(b, name, new)
        nb = int(W[WK.W_NB] - C[WK.C_BID0])
        if nb + C[WK.C_MARGIN_B] > len(self.BI):
            self.BI = _doubled(self.BI)
            self.TB = _doubled(self.TB)
        live = int(W[WK.W_LIVEB]) + 4 * int(C[WK.C_S]) + 64
        if W[WK.W_HN] + live > len(self.H):
            self.H = _doubled(self.H, W[WK.W_HN] + live)
        if W[WK.W_CHN] + live > len(self.CH):
            self.CH = _doubled(self.CH, W[WK.W_CHN] + live)
        if W[WK.W_JTOP] + 4 * C[WK.C_S] + 64 > len(self.J):
            self.J = _doubled(self.J)
        if W[WK.W_CBTOP] + C[WK.C_MARGIN_REQ] > len(self.CB):
            self.CB = _doubled(self.CB, W[WK.W_CBTOP] + C[WK.C_MARGIN_REQ])
        eng = mem.engine
        if eng._out.shape[1] < W[WK.W_OUT]:
            eng._out = np.empty((NOUT, max(int(W[WK.W_OUT]), 2 * eng._out.shape[1])), dtype=np.int64)

    def _retire_grown(self) -> None:
        """The pump step's statistics arrays were too small (``MemorySystem._run``'s slow path)."""
        W, mem = self.W, self.mem
        ni, need_b, need_l = int(W[WK.W_ARG0]), int(W[WK.W_ARG1]), int(W[WK.W_ARG2])
        mem.acc.grow(need_b, need_l)
        done = np.asarray(mem._retire(mem.engine.issued_view(ni)), dtype=np.int64)
        ticks = np.asarray(cycles_to_ticks(mem.clock, mem.batches.done[done]), dtype=np.int64)
        WK.register_done(W, self.C, self.H, self.CH, done, ticks)

    # ------------------------------------------------------------------ the end
    def _credit(self) -> None:
        """Progress for the watchdog and the progress display."""
        W, gk = self.W, self.gk
        p, b = int(W[WK.W_PROGRESS]), int(W[WK.W_BEATS])
        gk.progress += p - self._seen[0]
        gk.beats += b - self._seen[1]
        self._seen = (p, b)
        gk._next = int(W[WK.W_NEXT])

    def _finish(self) -> None:
        """The kernel ended: hand the memory back to the port and end the kernel as the reference does."""
        env, W, C, mem, h, gk = self.env, self.W, self.C, self.mem, self.hier, self.gk
        env._now = int(W[WK.W_END])
        mem.n, mem.outstanding, mem.outstanding_writes = int(W[WK.W_N]), int(W[WK.W_OUT]), int(W[WK.W_OUTW])
        if W[WK.W_RMH] >= 0:
            raise RuntimeError(f"{gk.name}: windowed GEMM ended with accesses waiting for write queue room")
        h.wq_out, h.wq_stalls, h.wq_peak = int(W[WK.W_WQOUT]), int(W[WK.W_WQSTALLS]), int(W[WK.W_WQPEAK])
        mem.frontier, mem._kernel_at, mem._last_submit_tick = int(W[WK.W_FRONTIER]), int(W[WK.W_KAT]), int(W[WK.W_LASTSUB])
        mem.engine.next_lb, mem.engine.lag = int(W[WK.W_NEXTLB]), int(W[WK.W_LAG])
        nb = int(W[WK.W_NB] - C[WK.C_BID0])
        mem.batches.first.extend(self.BI[:nb, WK.B_FIRST].tolist())
        mem.batches.count.extend(self.BI[:nb, WK.B_COUNT].tolist())
        h.fills._next = int(W[WK.W_TAG])
        for c, cat in enumerate(h.categories):
            for kk, kind in enumerate(("read", "write", "update")):
                if self.TR[c, kk]:
                    h.traffic[cat][kind] += int(self.TR[c, kk])
        port = h.port
        port.pump_steps += int(W[WK.W_PUMPS])
        gk.run.load_requests += int(W[WK.W_LOADREQ])
        if self.C[WK.C_ACC]:
            gk.sink.count_reads(int(W[WK.W_ACCLINES]))
        gk.run.stage_end_ticks = self.stage_end.tolist()
        gk._stage_left = self.stage_left.tolist()
        gk._live = gk._held = gk._writes_left = 0
        disp = gk.dispatcher
        disp.window = h.window = port.window = None
        for cu in self.cus:
            disp.release(gk._h, cu)
        # batches still outstanding (write-backs of evicted lines) go back to the port
        known = {int(b): int(t) for t, b in self.CH[: int(W[WK.W_CHN])]}
        for bid in range(int(C[WK.C_BID0]), int(W[WK.W_NB])):
            b = bid - int(C[WK.C_BID0])
            if self.BI[b, WK.B_FIRED]:
                continue
            if self.BI[b, WK.B_CBH] >= 0:
                raise RuntimeError(f"{gk.name}: windowed GEMM ended with a batch that still has waiters")
            ev = env.event()
            if self.BI[b, WK.B_TRACK]:
                h.track_write(ev)
            if self.BI[b, WK.B_WQ]:
                h.wq_out -= int(self.BI[b, WK.B_WQ])  # count_write counts it again, with its callback
                h.count_write(ev, int(self.BI[b, WK.B_WQ]))
            if bid in known:
                port._dispatch.at(known[bid], (port._id, bid), ev, BatchResult(bid, known[bid]))
            else:
                port._events[bid] = ev
        nxt = mem.next_event_tick()
        if nxt is not None:
            port._arm(nxt)
        gk._all_retired = True
        gk.run.end_tick = env.now
        gk.done.succeed(gk.run)


class _Group:
    """The windowed GEMMs running in one environment (explicit mode: every GPU's GEMM of an exclusive phase),
    behind one simpy *bridge* entry at the earliest of their compiled heaps' first keys.

    When the bridge fires, each window in turn (in launch order) runs its events that come before the simpy heap's
    first event, then the bridge is re-armed. A lone window (homogeneous mode) is thus exactly the single bridge
    of the module doc. Several run one after the other over the same stretch of simulated time; that is exact
    because their GPUs do not interact while they run: a window needs ``exclusive`` (its program runs one kernel
    at a time on every GPU, so the GPUs' GEMMs are independent until all have ended) and its GPU's memory, L2 and
    CUs to itself, so each GPU's events keep their order, and only the interleaving of different GPUs' events of
    one tick changes, which no GPU observes. A window that ends hands its GPU back at its own end tick
    (``env._now`` is set to it for its callbacks, even if another window ran further), and the windows still
    running stop before the simpy events that its end scheduled."""

    def __init__(self, env):
        self.env = env
        self.windows: list = []
        self._ev = None
        self._key = None

    def add(self, w: "GemmWindow") -> None:
        self.windows.append(w)
        self._arm()

    def _arm(self) -> None:
        if not self.windows:
            return
        k = min(w.key() for w in self.windows)
        if self._ev is not None and self._key <= k:
            return
        ev = simpy.Event(self.env)  # an earlier bridge supersedes the armed one, which then does nothing
        ev._ok, ev._value = True, None
        ev.callbacks.append(self._fire)
        heapq.heappush(self.env._queue, (*k, ev))
        self._ev, self._key = ev, k

    def _fire(self, ev) -> None:
        if ev is not self._ev:
            return
        self._ev = None
        for w in list(self.windows):
            if w._window():
                self.windows.remove(w)
        self._arm()


def _group(env) -> _Group:
    """The environment's :class:`_Group` (created on first use)."""
    g = getattr(env, "_t3sim_windows", None)
    if g is None:
        g = env._t3sim_windows = _Group(env)
    return g


def _slices(g, operand: str, tiles: int, ng: int, G: int, steps: int):
    """Flat requests of ``operand``'s K-slices (:func:`~t3sim.compute.addresses.slice_requests`) per tile and
    k-step, grouped per (tile, k-group of ``G`` steps; tile-major), and offsets ``[tiles * ng + 1]`` (group
    ``t * ng + gi`` is ``addr[off[t * ng + gi]:off[t * ng + gi + 1]]``)."""
    parts, counts = [], np.zeros((tiles, ng), dtype=np.int64)
    for t in range(tiles):
        addr, step = slice_requests(g, operand, t, 0, steps)
        parts.append(addr)
        counts[t] = np.bincount(step // G, minlength=ng)
    off = np.concatenate(([0], np.cumsum(counts.ravel()))).astype(np.int64)
    return (np.concatenate(parts) if parts else np.zeros(0, np.int64)), off


def _doubled(a: np.ndarray, need: int = 0) -> np.ndarray:
    new = np.zeros((max(2 * a.shape[0], int(need)),) + a.shape[1:], dtype=a.dtype)
    new[: a.shape[0]] = a
    return new
