"""A tiled GEMM kernel running on one GPU's CUs (paper Secs. 2.5, 5.2).

Dispatch. The kernel's WGs are dispatched in the given tile order. The GPU
holds ``wgs_per_cu x num_cus`` WG slots (the occupancy of
:mod:`t3sim.compute.occupancy`); slot ``j`` lives on CU ``j % num_cus``. A new
WG starts as soon as a slot frees, so WGs ``[s*S, (s+1)*S)`` of the order form
*stage* ``s`` (``S`` = slots): the paper's "set of WGs that the CUs can
accommodate".

One WG. CUTLASS-style multistage main loop over ``ceil(K / tile_k)``
k-steps, processed ``k_group`` steps at a time, with ``P = lds_stages - 1``
groups of loads in flight (``lds_stages`` = shared-memory buffers, derived from
the record's ``lds_per_wg_B``; at least 1): the loads of groups ``0..P-1``
(A and B K-slices: real 64 B requests through the L2 into DRAM) are issued
before the loop, those of group ``g+P`` when the math of group ``g`` starts
(the buffer of group ``g-1`` is free); group ``g``'s math starts when group
``g-1``'s math and group ``g``'s loads are done. ``lds_stages = 2`` (``P = 1``)
is double buffering. The math of one step
takes :func:`~t3sim.compute.occupancy.k_step_compute_cycles` at the CU's
FLOP rate times the record's ``mma_rate`` (the fraction of the SM's tensor rate its MMA instructions reach),
shared by the WGs resident on that CU at that moment (:meth:`GemmKernel.math_cycles`, which the GEMM window
uses too). Finally each
WF's output sub-tile is stored through the kernel's *output sink*
(:mod:`t3sim.compute.sinks`: cached local stores for Sequential; uncached near-memory updates, remote stores...
for T3), carrying ``wg_id``/``wf_id``; a sink's ``hold`` keeps the WG on its CU after that without math (its
epilogue's own time, e.g. FLUX's store issue, fence and flag).

Split-K (``kernel.split_k`` = ``s`` > 1, :mod:`t3sim.compute.splitk`). The kernel's WGs are the ``tiles x s``
slice WGs (WG ``seq`` is slice ``seq // tiles`` of tile ``order[seq % tiles]``), each running its slice's k-steps
and storing its fp32 partial tile to the workspace (``workspace_B``) with cached local stores instead of the output
sink; stages are over the slice WGs (stage ``i`` = slice WGs ``[i*S, (i+1)*S)`` of that order, so ``on_stage_done``
reports slice WGs retired, no final output). When all have retired and their partial stores completed, a reduction
kernel (one WG per tile, on the same dispatcher and CUs) reads the partials back and stores the final tiles through
the output sink; the kernel ends with it. The GEMM window does not run split kernels (the simpy path does).

Clusters (``kernel.cluster_m`` x ``cluster_n`` > 1, sm90 thread-block clusters with TMA multicast). WGs are
dispatched cluster by cluster: the clusters (``cluster_m`` consecutive tile rows x ``cluster_n`` tile columns)
in the order their first tile has in the given order, a cluster's tiles consecutively (with split-K: so within
each slice, and a slice's WGs share only with WGs of the same slice). The WGs of a cluster
that share a tile column (row) share each k-step's B (A) slice: each issues ``1/n`` of the slice's requests
(``n`` sharers: its rank's part of :func:`numpy.array_split`) and the slice is in every sharer's shared memory
when all ``n`` parts are, so a k-group's math waits for the slowest part. The L2 sees each shared slice once
per cluster; DRAM sees the same lines. Sharers are the cluster's WGs that run (``start(first_wg)``); clusters
are off when the kernel has fewer slots than a cluster's WGs.

The kernel's first WGs dispatch ``gpu.kernel_launch_overhead_ns`` after
:meth:`GemmKernel.start` (its duration includes the launch, as CUDA-event
timings do). The kernel is done when every WG has finished and every store it issued
has completed (its *own* writes: the ``written`` events its sink reports, i.e. accepted by the
write-back L2 or, for uncached/near-memory stores, written in DRAM). Other traffic on the GPU
(e.g. T3's incoming reduce-scatter updates, or a concurrent collective) does not delay its end;
nor do L2 evictions of its dirty lines, which the L2 writes back on its own schedule. A split-K kernel ends when its
reduction kernel does. Times are integer ticks; CU cycles convert through the CU
:class:`~t3sim.sim.clock.Clock` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
import simpy

from t3sim.compute.addresses import GemmGeometry, slice_requests, wg_store_requests
from t3sim.compute.dispatcher import CuDispatcher, Footprint
from t3sim.compute.kernel_run import GemmRun  # noqa: F401  (GemmRun: also this module's API)
from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.compute.occupancy import cu_flops_per_cycle, k_step_compute_cycles, occupancy
from t3sim.compute.sinks import CachedLocalOutput, OutputSink
from t3sim.compute.splitk import partial_store, reduce_kernel, slice_steps, split_of, workspace_size_B
from t3sim.config.gpu import GPUConfig
from t3sim.config.workload import DTYPE_BYTES
from t3sim.sim.clock import Clock, ns_to_ticks
from t3sim.sim.engine import Component, Engine


class GemmKernel(Component):
    """Runs one GEMM kernel record on ``num_cus`` CUs of one GPU.

    Args:
        engine: the simulation engine.
        name: component name (e.g. ``gpu0.gemm``).
        hier: the GPU's memory hierarchy.
        gpu: the GPU config (clock, FLOP rates, per-CU limits).
        kernel: a :class:`~t3sim.workload.record.KernelRecord`.
        tile_order: tile numbers (``tm * tiles_n + tn``) in dispatch order.
        a_base_B, b_base_B, c_base_B: operand base addresses (bytes).
        sink: where output tiles go.
        num_cus: CUs given to the kernel (default all).
        k_group: k-steps per load batch (1 = exact CUTLASS double buffering).
        on_stage_done: called with the stage index when a stage's last WG retires.
        dispatcher: the GPU's WG dispatcher, shared with the kernels that run beside this one
            (:mod:`t3sim.compute.dispatcher`); default a private one (the kernel alone on the GPU).
        prologue: ``prologue(seq, tile) -> event or None``: what a WG waits for, holding its CU slot but
            not sharing the CU's math, before its first load (e.g. a per-tile signal); default none.
        workspace_B: base address (bytes) of the split-K workspace, a buffer of
            :func:`~t3sim.compute.splitk.workspace_size_B` bytes the caller allocated (e.g. ``SystemModel.alloc``);
            required when ``kernel.split_k`` > 1, ignored otherwise.
    """

    def __init__(self, engine: Engine, name: str, hier: MemoryHierarchy, gpu: GPUConfig, kernel, tile_order: Sequence[int],
                 a_base_B: int, b_base_B: int, c_base_B: int, sink: OutputSink, num_cus: Optional[int] = None,
                 k_group: int = 1, on_stage_done: Optional[Callable[[int], None]] = None, category: str = "gemm",
                 dispatcher: Optional[CuDispatcher] = None,
                 prologue: Optional[Callable[[int, int], Optional[simpy.Event]]] = None,
                 workspace_B: Optional[int] = None):
        super().__init__(engine, name)
        #: ``prologue(seq, tile)``: an event the WG waits for on its CU before its main loop (None: none;
        #: FLUX's AllGather+GEMM spins on its tiles' signals there)
        self.prologue = prologue
        self.hier, self.gpu, self.kernel, self.sink = hier, gpu, kernel, sink
        tiles = np.asarray(tile_order, dtype=np.int64)
        if sorted(tiles.tolist()) != list(range(kernel.num_wgs)):
            raise ValueError(f"{name}: tile order is not a permutation of the kernel's {kernel.num_wgs} tiles")
        #: split-K slices (1: none; module doc) and the WGs of the kernel: tiles x slices
        self.split = split_of(kernel)
        self.num_wgs = kernel.num_wgs * self.split
        if self.split > 1 and workspace_B is None:
            raise ValueError(f"{name}: split_k={self.split} needs a workspace: pass workspace_B, the base address of "
                             f"{workspace_size_B(kernel)} bytes (splitk.workspace_size_B)")
        self.workspace_B = workspace_B
        #: the split kernel's partial tiles go to the workspace through cached local stores; its reduction kernel
        #: (t3sim.compute.splitk.reduce_kernel), once launched
        self.ws_sink = CachedLocalOutput(hier, category) if self.split > 1 else None
        self.reduce = None
        self.mma_rate = float(getattr(kernel, "mma_rate", 1.0))
        if not 0 < self.mma_rate <= 1:
            raise ValueError(f"{name}: mma_rate must be in (0, 1] (a fraction of the SM's tensor FLOP rate), "
                             f"got {self.mma_rate}")
        self.num_cus = num_cus or gpu.num_cus
        self.k_group = max(1, int(k_group))
        self.category = category
        self.on_stage_done = on_stage_done
        self.geom = gemm_geometry(kernel, a_base_B, b_base_B, c_base_B)
        per_stage = (kernel.tile_m + kernel.tile_n) * kernel.tile_k * DTYPE_BYTES[kernel.dtype]
        #: k-groups of loads in flight while one computes (lds_stages - 1, module doc)
        self.in_flight = max(1, kernel.lds_per_wg_B // per_stage - 1)
        self.occ = gemm_occupancy(gpu, kernel)
        self.slots = self.occ.wgs_per_cu * self.num_cus
        self.dispatcher = dispatcher or CuDispatcher(gpu, name)
        self.footprint = Footprint.of(gpu, kernel.wfs_per_wg * kernel.threads_per_wf, kernel.registers_per_thread,
                                      kernel.lds_per_wg_B)
        self._h = -1  # dispatcher handle, from start()
        self._held = 0  # slots holding a CU that have not taken their first WG yet
        self.clock = Clock.from_GHz(gpu.clock_GHz, "cu")
        self.flops = cu_flops_per_cycle(gpu, kernel.dtype)
        self.cu_active = np.zeros(self.num_cus, dtype=np.int64)
        self.cluster = (int(getattr(kernel, "cluster_m", 1)), int(getattr(kernel, "cluster_n", 1)))
        if self.cluster != (1, 1) and self.slots >= self.cluster[0] * self.cluster[1]:
            tiles = cluster_order(tiles, kernel.tiles_n, *self.cluster)
        else:
            self.cluster = (1, 1)
        #: the tiles in dispatch order (clusters regrouped), and the tile of each WG in dispatch order (split-K:
        #: every slice repeats the tile order)
        self.tile_order = tiles
        self.order = np.tile(tiles, self.split) if self.split > 1 else tiles
        self._share: dict = {}  # (operand, group key, first k-step) -> _Shared (clusters only)
        self._sharers: dict = {}  # seq -> ((a group, rank, n), (b group, rank, n)), from start()
        self.stages = -(-self.num_wgs // self.slots)
        self._stage_left = [min(self.slots, self.num_wgs - s * self.slots) for s in range(self.stages)]
        self._next = 0
        self._live = 0
        self._addr_cache: dict = {}
        self._math_cycles: dict = {}
        self.run: Optional[GemmRun] = None
        self.done = engine.env.event()
        self._writes_left = 0  # this kernel's stores not yet completed
        self._all_retired = False
        #: set to a list to record ``(cu, seq, start_tick, end_tick)`` of every WG (timelines)
        self.wg_spans: Optional[list] = None
        #: ``window(kernel, first_wg, slots, launch_ticks)``: a runner that takes the kernel's WGs into compiled
        #: windows where it can (returns True; else the simpy slots below run them), called by :meth:`start`:
        #: :func:`t3sim.window.run_windowed` where ``simulation.gemm_window`` is on (the model sets it); None: the
        #: simpy slots always. ``exclusive``: the caller promises that nothing else uses this GPU's memory or CUs
        #: while the kernel runs (set by the model for one-stream programs)
        self.window: Optional[Callable[["GemmKernel", int, int, int], bool]] = None
        self.exclusive = False

    # ------------------------------------------------------------------ processes
    def start(self, first_wg: int = 0) -> simpy.Event:
        """Launch now; returns the event that fires with the :class:`GemmRun` when done.

        ``first_wg`` > 0 runs only WGs ``first_wg..`` of the dispatch order, as if the earlier ones had already
        run (e.g. the last stages of a kernel that a steady-state simulation starts from); stages that end
        before ``first_wg`` keep ``stage_end_ticks`` -1 and ``GemmRun.wgs`` counts the WGs that ran. (Split-K:
        WGs of the slice order; the reduction still reduces every tile.)
        """
        k = self.kernel
        if not 0 <= first_wg < self.num_wgs:
            raise ValueError(f"{self.name}: first_wg={first_wg} out of range 0..{self.num_wgs - 1}")
        self.run = GemmRun(self.env.now, wgs=self.num_wgs - first_wg, stages=self.stages, stage_wgs=self.slots,
                           wgs_per_cu=self.occ.wgs_per_cu, occupancy_limiter=self.occ.limiter,
                           stage_end_ticks=[-1] * self.stages, split_k=self.split,
                           workspace_B=workspace_size_B(k))
        for seq in range(first_wg):
            self._stage_left[seq // self.slots] -= 1
        self._next = first_wg
        if self.cluster != (1, 1):
            self._sharers = sharer_groups(self.order, first_wg, k.tiles_n, *self.cluster, tiles=k.num_wgs)
        n = min(self.slots, self.num_wgs - first_wg)
        self._live = n
        self._h = self.dispatcher.register(self.name, self.footprint, self._pending, self._on_cu,
                                           None if self.num_cus == self.gpu.num_cus else range(self.num_cus))
        launch = ns_to_ticks(self.gpu.kernel_launch_overhead_ns)
        if self.window is not None and self.window(self, first_wg, n, launch):
            return self.done
        for _ in range(n):
            self.env.process(self._slot(None, launch))
        return self.done

    def _pending(self) -> int:
        """WGs that no slot holding a CU will take: from its launch on, the kernel waits for CUs for all of
        them, so kernels launched after it never get ahead (the dispatcher's view)."""
        return self.num_wgs - self._next - self._held

    def _on_cu(self, cu: int) -> None:
        """The dispatcher placed one more of this kernel's WGs on ``cu`` (its footprint is taken)."""
        self._live += 1
        self._held += 1
        self.env.process(self._slot(cu))

    def math_cycles(self, s0: int, s1: int, share: int) -> int:
        """CU cycles of one WG's math over k-steps ``[s0, s1)`` with ``share`` WGs sharing the CU: the sum of
        :func:`~t3sim.compute.occupancy.k_step_compute_cycles` at the CU's rate times ``mma_rate`` (the one
        definition the simpy slots and the GEMM window both use)."""
        k = self.kernel
        return sum(k_step_compute_cycles(k.tile_m, k.tile_n, k.tile_k, k.K, s, self.flops, share, self.mma_rate)
                   for s in range(s0, s1))

    def _cycles_to_ticks(self, cycles: int) -> int:
        now_c = self.clock.next_cycle_at_or_after(self.env.now)
        return self.clock.cycle_to_tick(now_c + cycles) - self.env.now

    def _slice_addrs(self, operand: str, t: int, s0: int, s1: int) -> np.ndarray:
        """Requests of A's tile row ``t`` (or B's tile column) over k-steps ``[s0, s1)``: a view of the tile's
        requests over all k-steps, computed in one vectorised call on first use and memoised (every WG of a
        tile row (column) loads the same A (B) slices; equal to ``slice_requests(geom, operand, t, s0, s1)``,
        which lists the steps' requests in step order)."""
        key = (operand, t)
        got = self._addr_cache.get(key)
        if got is None:
            steps = self.geom.k_steps
            addr, step = slice_requests(self.geom, operand, t, 0, steps)
            got = self._addr_cache[key] = (addr, np.searchsorted(step, np.arange(steps + 1)))
        addr, at = got
        return addr[at[s0]:at[s1]]

    def _loads(self, seq: int, cu: int, tm: int, tn: int, s0: int, s1: int) -> simpy.Event:
        """Issue the A and B slices of k-steps ``[s0, s1)`` of tile ``(tm, tn)`` from a WG on ``cu``; the event fires
        when they are in the WG's shared memory (with a cluster: when every sharer's part is, module doc), and no
        sooner than ``cu``'s port from the L2 has passed both slices (MemoryHierarchy.cu_port_done)."""
        a, b = self._slice_addrs("a", tm, s0, s1), self._slice_addrs("b", tn, s0, s1)
        port = self.hier.cu_port_done(cu, (len(a) + len(b)) * REQ_B)
        if self.cluster == (1, 1):
            addrs = np.concatenate((a, b))
            self.run.load_requests += len(addrs)
            return self.hier.read(addrs, self.category, at_least_tick=port)
        (ga, ra, na), (gb, rb, nb) = self._sharers[seq]
        addrs = np.concatenate((np.array_split(a, na)[ra], np.array_split(b, nb)[rb]))
        self.run.load_requests += len(addrs)
        ev = self.hier.read(addrs, self.category, at_least_tick=port)
        return self.env.all_of([self._part(("a", ga, s0), na, ev), self._part(("b", gb, s0), nb, ev)])

    def _part(self, key, n: int, ev: simpy.Event) -> simpy.Event:
        """Add one sharer's part ``ev`` of the shared slice ``key`` (``n`` sharers); returns the event that fires
        when all ``n`` parts have arrived."""
        if n == 1:
            return ev
        sh = self._share.get(key)
        if sh is None:
            sh = self._share[key] = _Shared(self.env.event(), [], n)
        sh.parts.append(ev)
        if len(sh.parts) == sh.n:
            del self._share[key]
            done = sh.ready
            self.env.all_of(sh.parts).callbacks.append(lambda _e: done.succeed())
        return sh.ready

    def _slot(self, cu: Optional[int], launch_ticks: int = 0):
        """One WG slot: a CU's share held while WGs run back to back (dispatcher module doc)."""
        if launch_ticks:
            yield self.env.timeout(launch_ticks)
        disp, h = self.dispatcher, self._h
        if cu is None:
            cu = disp.acquire(h) if self._next < self.num_wgs else None
            if cu is None:  # no room (or nothing left): the dispatcher hands this kernel CUs as they free
                self._live -= 1
                self._check_retired()
                return
            self._held += 1
            if self._held + self._next >= self.num_wgs:
                disp.settled(h)  # every WG has a slot: leftover CUs go to kernels launched after this one
        first = True
        k = self.kernel
        g = self.geom
        steps = g.k_steps
        G = self.k_group
        P = self.in_flight
        nw, split = self.num_wgs, self.split
        memo = self._math_cycles  # (first k-step of the group, its end, WGs sharing the CU) -> CU cycles
        while self._next < nw:
            seq = self._next
            self._next += 1
            if first:
                self._held -= 1
                first = False
            tile = int(self.order[seq])
            tm, tn = divmod(tile, k.tiles_n)
            t0 = self.env.now
            if self.prologue is not None:
                wait = self.prologue(seq, tile)
                if wait is not None:
                    yield wait
            self.cu_active[cu] += 1
            z = seq // k.num_wgs  # split-K slice (0 without)
            lo, hi = slice_steps(steps, split, z) if split > 1 else (0, steps)
            groups = list(range(lo, hi, G))
            loads = [self._loads(seq, cu, tm, tn, g0, min(g0 + G, hi)) for g0 in groups[:P]]
            yield loads[0]
            for gi, s0 in enumerate(groups):
                s1 = min(s0 + G, hi)
                if gi + P < len(groups):  # the buffer of group gi-1 is free: refill it with group gi+P
                    g0 = groups[gi + P]
                    loads.append(self._loads(seq, cu, tm, tn, g0, min(g0 + G, hi)))
                pending = loads[gi + 1] if gi + 1 < len(groups) else None
                share = int(self.cu_active[cu])
                cycles = memo.get((s0, s1, share))
                if cycles is None:
                    cycles = memo[(s0, s1, share)] = self.math_cycles(s0, s1, share)
                yield self.env.timeout(self._cycles_to_ticks(cycles))
                self.beat()  # a deep-K WG can run longer than the watchdog's window
                if pending is not None:
                    yield pending
            if split > 1:  # the fp32 partial tile to the workspace, not the output (splitk module doc)
                st = self.ws_sink.store(seq, tile, partial_store(k, self.workspace_B, z, tile, seq))
            else:
                st = self.sink.store(seq, tile, wg_store_requests(g, tm, tn, wg_id=seq))
            hold = None
            if st is not None:
                if st.written is not None:
                    self._track_own_write(st.written)
                if st.retire is not None:
                    yield st.retire
                hold = st.hold
            self.cu_active[cu] -= 1
            if hold is not None:  # the WG's epilogue: its slot held, the CU's math left to the others
                yield hold
            self.progressed()
            if self.wg_spans is not None:
                self.wg_spans.append((cu, seq, t0, self.env.now))
            self._wg_done(seq)
            if self._next < nw and disp.should_yield(h, cu):
                break  # an earlier-launched kernel waits for this CU
        if first:
            self._held -= 1
        self._live -= 1
        disp.release(h, cu)
        self._check_retired()

    def _check_retired(self) -> None:
        if self._live == 0 and self._next >= self.num_wgs:
            self._all_retired = True
            self._maybe_end()

    def _track_own_write(self, ev: simpy.Event) -> None:
        if ev.processed:
            return
        self._writes_left += 1

        def done(_e):
            self._writes_left -= 1
            self._maybe_end()

        ev.callbacks.append(done)

    def _maybe_end(self) -> None:
        """End the kernel once every WG retired and every store it issued completed (module doc); a split-K
        kernel launches its reduction then and ends with it."""
        if self._all_retired and self._writes_left == 0 and not self.done.triggered:
            if self.split == 1:
                self._end()
            elif self.reduce is None:
                self.run.reduce_start_tick = self.env.now
                self.reduce = reduce_kernel(self)
                self.reduce.wg_spans = [] if self.wg_spans is not None else None
                self.run.reduce_wgs = self.reduce.num_wgs
                self.reduce.start().callbacks.append(lambda _e: self._end())

    def _end(self) -> None:
        self.run.end_tick = self.env.now
        self.done.succeed(self.run)

    def _wg_done(self, seq: int) -> None:
        s = seq // self.slots
        self._stage_left[s] -= 1
        if self._stage_left[s] == 0:
            self.run.stage_end_ticks[s] = self.env.now
            if self.on_stage_done is not None:
                self.on_stage_done(s)

    def pending(self) -> str:
        if self.run is None or self.done.triggered:
            return ""
        if self.reduce is not None:
            return "split-K slices done, reducing"
        return f"{self.num_wgs - self._next} WGs not started, {int(self.cu_active.sum())} running"


@dataclass
class _Shared:
    """One shared (multicast) slice of a cluster: the parts its sharers issued so far, and when all arrived."""

    ready: simpy.Event
    parts: list
    n: int


def cluster_order(order: np.ndarray, tiles_n: int, cm: int, cn: int) -> np.ndarray:
    """``order`` regrouped by cluster: clusters (``cm`` tile rows x ``cn`` tile columns) in the order their first
    tile appears in ``order``, each cluster's tiles consecutive in their order in ``order``."""
    tm, tn = np.divmod(np.asarray(order, dtype=np.int64), tiles_n)
    cid = (tm // cm) * (-(-tiles_n // cn)) + tn // cn
    first = {}
    for i, c in enumerate(cid.tolist()):
        first.setdefault(c, i)
    rank = np.array([first[c] for c in cid.tolist()], dtype=np.int64)
    return np.asarray(order, dtype=np.int64)[np.lexsort((np.arange(len(cid)), rank))]


def sharer_groups(order: np.ndarray, first_wg: int, tiles_n: int, cm: int, cn: int,
                  tiles: Optional[int] = None) -> dict:
    """For each dispatched WG ``seq >= first_wg``: ``((a key, rank, n), (b key, rank, n))`` -- the group of WGs
    of its cluster that share its A slice (same tile row) and its B slice (same tile column), its rank in each
    and the group's size, over the WGs that run. ``order``: the tile of each WG; ``tiles``: WGs per split-K slice
    (WG ``seq`` is of slice ``seq // tiles``; only WGs of one slice share; default all one slice)."""
    per = tiles or max(1, len(order))
    groups: dict = {}
    members = []
    for seq in range(first_wg, len(order)):
        tm, tn = divmod(int(order[seq]), tiles_n)
        c = (tm // cm, tn // cn, seq // per)
        ka, kb = ("a", c, tm), ("b", c, tn)
        members.append((seq, ka, kb))
        groups.setdefault(ka, []).append(seq)
        groups.setdefault(kb, []).append(seq)
    out = {}
    for seq, ka, kb in members:
        out[seq] = ((ka, groups[ka].index(seq), len(groups[ka])), (kb, groups[kb].index(seq), len(groups[kb])))
    return out


def gemm_geometry(kernel, a_base_B: int, b_base_B: int, c_base_B: int) -> GemmGeometry:
    """The address geometry of ``kernel`` (a :class:`~t3sim.workload.record.KernelRecord`) with its operands at
    the given byte addresses."""
    return GemmGeometry(kernel.M, kernel.N, kernel.K, kernel.tile_m, kernel.tile_n, kernel.tile_k,
                        DTYPE_BYTES[kernel.dtype], kernel.trans_a, kernel.trans_b, a_base_B, b_base_B, c_base_B,
                        kernel.wfs_per_wg, kernel.c_layout == "col_major", tuple(kernel.wf_grid))


def gemm_occupancy(gpu: GPUConfig, kernel):
    """WGs of ``kernel`` resident per CU of ``gpu`` (:func:`~t3sim.compute.occupancy.occupancy`)."""
    return occupancy(gpu, wfs_per_wg=kernel.wfs_per_wg, registers_per_thread=kernel.registers_per_thread,
                     lds_per_wg_B=kernel.lds_per_wg_B, threads_per_wf=kernel.threads_per_wf)


def stage_wgs(gpu: GPUConfig, kernel, num_cus: Optional[int] = None) -> int:
    """WGs per stage of ``kernel`` on ``num_cus`` CUs (default all): the paper's Sec. 2.5 stage."""
    return gemm_occupancy(gpu, kernel).wgs_per_cu * (num_cus or gpu.num_cus)
