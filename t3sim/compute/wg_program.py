"""A kernel whose WGs run programs on the CUs, placed by the GPU's WG dispatcher.

:class:`ProgramKernel` is a kernel of ``num_wgs`` WGs of one :class:`~t3sim.compute.dispatcher.Footprint`; WG ``w``
runs ``program(w, cu)``, a generator yielding simpy events (its loads, math, stores, waits), on the CU the dispatcher
gave it. It is the GEMM kernel's dispatch without the GEMM: the bulk GEMV (one WG per output tile,
:mod:`t3sim.compute.gemv_kernel`) and the fused kernels' persistent WGs (a grid of at most one WG per slot, each
looping over its logical WGs, :mod:`t3sim.schemes.fused.fused_gemv_ar`) run on it, and so can any kernel whose WGs are
programs (embedding-bag pooling...).

Dispatch (as :class:`~t3sim.compute.gemm_kernel.GemmKernel`): the GPU holds ``wgs_per_cu x num_cus`` slots (the
footprint's occupancy); the first WGs dispatch ``gpu.kernel_launch_overhead_ns`` after :meth:`start`, a WG slot that
retires a WG takes the next one at once unless an earlier-launched kernel waits for its CU
(:meth:`~t3sim.compute.dispatcher.CuDispatcher.should_yield`). WGs start in index order.

Math: :meth:`math` turns FLOPs into CU cycles at a FLOP rate shared by the WGs *busy* on that CU at that moment
(:meth:`busy` / :meth:`idle`, which a program calls around its compute: a persistent WG spinning on a flag does not
take a share), as :func:`~t3sim.compute.occupancy.wg_compute_cycles` does for a GEMM.

End: :attr:`done` fires with a :class:`~t3sim.compute.kernel_run.GemmRun` once every WG retired and every write the
programs tracked (:meth:`track_write`) completed. Times are integer ticks; CU cycles convert through the CU clock.
"""

from __future__ import annotations

from typing import Callable, Generator, List, Optional, Sequence

import numpy as np
import simpy

from t3sim.compute.dispatcher import CuDispatcher, Footprint
from t3sim.compute.kernel_run import GemmRun
from t3sim.compute.occupancy import ceil_div, occupancy
from t3sim.config.gpu import GPUConfig
from t3sim.sim.clock import Clock, ns_to_ticks
from t3sim.sim.engine import Component, Engine

Program = Callable[[int, int], Generator]


def program_occupancy(gpu: GPUConfig, threads_per_wg: int, registers_per_thread: int, lds_per_wg_B: int):
    """:func:`~t3sim.compute.occupancy.occupancy` of a WG of ``threads_per_wg`` threads on ``gpu``."""
    return occupancy(gpu, wfs_per_wg=ceil_div(threads_per_wg, gpu.threads_per_wf),
                     registers_per_thread=registers_per_thread, lds_per_wg_B=lds_per_wg_B,
                     threads_per_wf=gpu.threads_per_wf)


class ProgramKernel(Component):
    """``num_wgs`` WGs running ``program(w, cu)`` on one GPU's CUs (module doc).

    Args:
        engine: the simulation engine.
        name: component name (``gpu0.gemv``).
        hier: the GPU's memory hierarchy (timelines find a kernel's GPU by it).
        gpu: the GPU config.
        threads_per_wg, registers_per_thread, lds_per_wg_B: one WG's resources (its occupancy and footprint).
        num_wgs: WGs of the kernel (its grid).
        program: ``program(w, cu)``: WG ``w``'s work on CU ``cu`` (a generator of simpy events).
        dispatcher: the GPU's WG dispatcher (default a private one: the kernel alone on the GPU).
        tiles: what timelines label WG ``w`` with (``tiles[w]``; default ``w``).
        progress_per_wg: count a unit of progress (the progress meter's) per retired WG; False: the programs count
            their own units (a persistent WG's logical WGs) with :meth:`progressed`.
        cus: the CUs its WGs may use (default all; a GEMM's split-K reduction runs on its GEMM's CUs).
        launch_overhead_ns: ns from :meth:`start` to its first WGs' dispatch (default ``gpu.kernel_launch_overhead_ns``;
            a kernel launched as a programmatic dependent of the one before it passes
            ``gpu.dependent_launch_gap_ns``).
    """

    def __init__(self, engine: Engine, name: str, hier, gpu: GPUConfig, *, threads_per_wg: int, registers_per_thread: int,
                 lds_per_wg_B: int, num_wgs: int, program: Program, dispatcher: Optional[CuDispatcher] = None,
                 tiles: Optional[List[int]] = None, progress_per_wg: bool = True, cus: Optional[Sequence[int]] = None,
                 launch_overhead_ns: Optional[float] = None):
        super().__init__(engine, name)
        self.launch_overhead_ns = gpu.kernel_launch_overhead_ns if launch_overhead_ns is None else launch_overhead_ns
        self.cus = None if cus is None else tuple(int(c) for c in cus)
        self.progress_per_wg = progress_per_wg
        if num_wgs < 1:
            raise ValueError(f"{name}: a kernel needs at least one WG, got {num_wgs}")
        self.hier, self.gpu, self.program, self.num_wgs = hier, gpu, program, int(num_wgs)
        self.occ = program_occupancy(gpu, threads_per_wg, registers_per_thread, lds_per_wg_B)
        self.slots = self.occ.wgs_per_cu * (gpu.num_cus if self.cus is None else len(self.cus))
        self.footprint = Footprint.of(gpu, threads_per_wg, registers_per_thread, lds_per_wg_B)
        self.dispatcher = dispatcher or CuDispatcher(gpu, name)
        #: timelines: WG index -> the tile (or logical WG) it is labelled with
        self.order = np.asarray(tiles if tiles is not None else range(self.num_wgs), dtype=np.int64)
        self.clock = Clock.from_GHz(gpu.clock_GHz, "cu")
        self.cu_active = np.zeros(gpu.num_cus, dtype=np.int64)
        self.stages = -(-self.num_wgs // self.slots)
        self._stage_left = [min(self.slots, self.num_wgs - s * self.slots) for s in range(self.stages)]
        self._h = -1
        self._next = 0
        self._held = 0
        self._live = 0
        self._writes_left = 0
        self._all_retired = False
        self.run: Optional[GemmRun] = None
        self.done = engine.env.event()
        #: set to a list to record ``(cu, w, start_tick, end_tick)`` of every WG (timelines)
        self.wg_spans: Optional[list] = None
        #: 64 B read requests the programs issued (they add to it)
        self.load_requests = 0

    # ---------------------------------------------------------------- programs' helpers
    def busy(self, cu: int) -> None:
        """A WG on ``cu`` starts computing: it shares the CU's math from now."""
        self.cu_active[cu] += 1

    def idle(self, cu: int) -> None:
        """A WG on ``cu`` stops computing (it waits, or it is done)."""
        self.cu_active[cu] -= 1

    def math(self, cu: int, flops: int, flops_per_cycle: int) -> simpy.Event:
        """A timeout for ``flops`` FLOPs of a WG on ``cu`` at ``flops_per_cycle`` shared by the CU's busy WGs."""
        share = max(1, int(self.cu_active[cu]))
        cycles = ceil_div(int(flops) * share, int(flops_per_cycle))
        now_c = self.clock.next_cycle_at_or_after(self.env.now)
        return self.env.timeout(self.clock.cycle_to_tick(now_c + cycles) - self.env.now)

    def track_write(self, ev: Optional[simpy.Event]) -> None:
        """The kernel's end waits for ``ev`` (a write its WGs issued)."""
        if ev is None or ev.processed:
            return
        self._writes_left += 1

        def done(_e):
            self._writes_left -= 1
            self._maybe_end()

        ev.callbacks.append(done)

    # ---------------------------------------------------------------- dispatch
    def start(self) -> simpy.Event:
        """Launch now; returns :attr:`done` (fires with the :class:`GemmRun`)."""
        self.run = GemmRun(self.env.now, wgs=self.num_wgs, stages=self.stages, stage_wgs=self.slots,
                           wgs_per_cu=self.occ.wgs_per_cu, occupancy_limiter=self.occ.limiter,
                           stage_end_ticks=[-1] * self.stages)
        n = min(self.slots, self.num_wgs)
        self._live = n
        self._h = self.dispatcher.register(self.name, self.footprint, self._pending, self._on_cu, self.cus)
        launch = ns_to_ticks(self.launch_overhead_ns)
        for _ in range(n):
            self.env.process(self._slot(None, launch))
        return self.done

    def _pending(self) -> int:
        return self.num_wgs - self._next - self._held

    def _on_cu(self, cu: int) -> None:
        self._live += 1
        self._held += 1
        self.env.process(self._slot(cu))

    def _slot(self, cu: Optional[int], launch_ticks: int = 0):
        if launch_ticks:
            yield self.env.timeout(launch_ticks)
        disp, h = self.dispatcher, self._h
        if cu is None:
            cu = disp.acquire(h) if self._next < self.num_wgs else None
            if cu is None:
                self._live -= 1
                self._check_retired()
                return
            self._held += 1
            if self._held + self._next >= self.num_wgs:
                disp.settled(h)
        first = True
        while self._next < self.num_wgs:
            w = self._next
            self._next += 1
            if first:
                self._held -= 1
                first = False
            t0 = self.env.now
            yield from self.program(w, cu)
            if self.progress_per_wg:
                self.progressed()
            if self.wg_spans is not None:
                self.wg_spans.append((cu, w, t0, self.env.now))
            s = w // self.slots
            self._stage_left[s] -= 1
            if self._stage_left[s] == 0:
                self.run.stage_end_ticks[s] = self.env.now
            if self._next < self.num_wgs and disp.should_yield(h, cu):
                break
        if first:
            self._held -= 1
        self._live -= 1
        disp.release(h, cu)
        self._check_retired()

    def _check_retired(self) -> None:
        if self._live == 0 and self._next >= self.num_wgs:
            self._all_retired = True
            self._maybe_end()

    def _maybe_end(self) -> None:
        if self._all_retired and self._writes_left == 0 and not self.done.triggered:
            self.run.end_tick = self.env.now
            self.run.load_requests = self.load_requests
            self.done.succeed(self.run)

    def pending(self) -> str:
        if self.run is None or self.done.triggered:
            return ""
        return f"{self.num_wgs - self._next} WGs not started, {self._live} slots live"
