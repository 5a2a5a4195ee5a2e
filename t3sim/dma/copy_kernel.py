"""Device-to-device copies executed by SMs: the CUDA driver's copy kernel.

On the measured H200 (CUDA 13.0, driver 580) a device-to-device ``cudaMemcpyAsync`` does not run on a
copy engine: issued while a kernel holds every SM's thread slots it makes no progress until that
kernel ends, whereas host<->device copies issued the same way run at full speed
(experiments/validation/copy_contention/probe_memcpy_kind.json). It behaves as a kernel: its CTAs
are dispatched onto CUs in launch order with the other kernels', by the GPU's one WG dispatcher
(:class:`~t3sim.compute.dispatcher.CuDispatcher`; the kernel is in line from its launch, its CTAs are
placed once its launch overhead has passed).

:class:`SMCopyKernel` models it: each copy is a kernel of ``sm_copy_ctas_per_cu x num_cus`` CTAs
(``sm_copy_threads_per_cta`` threads, ``sm_copy_registers_per_thread`` registers, no LDS); CTA ``i``
copies the ``i``-th contiguous 1/n of the bytes in requests of ``min(request_B, sm_copy_inflight_per_cu_B)``
-- the request mechanics of :class:`~t3sim.dma.copy_engine.CopyPath`. The CTAs on one CU share that CU's
``sm_copy_inflight_per_cu_B`` bytes of requests in flight (a request counts from its load until its
store is written): an SM's memory pipeline, not a CTA, bounds its outstanding requests, so a copy
squeezed onto a few CUs (beside another kernel's CTAs) has proportionally fewer bytes in flight. A CTA
retires once its last request is issued (its stores are posted) and hands its CU back to the dispatcher
(CTAs are not persistent: the dispatcher places the next waiting CTA, of this or another kernel, in
launch order); the copy is done when every byte is written. Grid size, CTA shape
and bytes in flight are not published: they are assumptions or set from measured copies (the
config says which).

A *reduction* (:meth:`SMCopyKernel.reduce`, e.g. the local sum of the partial shards a DMA-driven
reduce-scatter gathered) is the same kernel with ``k`` sources: each request loads its lines from
every source and stores their sum (:class:`~t3sim.dma.copy_engine.CopyPath`); ``k`` loads of a line
take ``k`` of the CU's in-flight bytes. The adds are not timed: a few vector adds per 64 B loaded are
far below a CU's vector rate, so the loads bound it (assumption).

Invariants: bytes read == bytes written == ``nbytes`` (a reduction: read ``k x nbytes``); a CTA never has more than its in-flight bytes
outstanding; CTAs run only where the dispatcher placed them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import simpy

from t3sim.compute.dispatcher import CuDispatcher, Footprint
from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.dma.copy_engine import Copy, CopyPath, _EngineState
from t3sim.sim.clock import ns_to_ticks
from t3sim.sim.engine import Engine


@dataclass(eq=False)
class CopyLaunch:
    """One copy kernel as launched (ticks): its CTAs, how many the dispatcher has placed, when."""

    name: str
    n_ctas: int
    launch_tick: int
    handle: int = -1  # the dispatcher's
    next_cta: int = 0  # CTAs placed so far (CTA i is placed i-th)
    running: int = 0
    first_dispatch_tick: int = -1
    last_dispatch_tick: int = -1
    end_tick: int = -1  # its last CTA retired


class SMCopyKernel(CopyPath):
    """Device-to-device copies as SM kernels on the GPU's shared dispatcher (module doc).

    Args:
        engine: the simulation engine.
        gpu: this GPU's index.
        hier: this GPU's memory hierarchy.
        dispatcher: the GPU's WG dispatcher (shared with the other kernels).
        gpu_cfg: the :class:`~t3sim.config.gpu.GPUConfig` (launch overhead, CU count, CTA resources).
        cfg: the :class:`~t3sim.config.system.CopyEngineConfig`.
        category: DRAM-traffic category of the copies.
    """

    def __init__(self, engine: Engine, gpu: int, hier: MemoryHierarchy, dispatcher: CuDispatcher, gpu_cfg, cfg,
                 category: str = "dma"):
        # a request is at most a CU's bytes in flight
        req_B = max(REQ_B, min(cfg.request_B, cfg.sm_copy_inflight_per_cu_B) // REQ_B * REQ_B)
        super().__init__(engine, f"gpu{gpu}.sm_copy", gpu, hier, cfg, category, None, req_B, not cfg.l2_allocate)
        self.dispatcher = dispatcher
        self.footprint = Footprint.of(gpu_cfg, cfg.sm_copy_threads_per_cta, cfg.sm_copy_registers_per_thread, 0)
        self.n_ctas = cfg.sm_copy_ctas_per_cu * dispatcher.num_cus
        self.credits = max(self.req_n, cfg.sm_copy_inflight_per_cu_B // REQ_B)
        self.latency = ns_to_ticks(gpu_cfg.kernel_launch_overhead_ns)
        self.ps_per_B = 0.0  # no rate cap beyond the CTA's requests in flight
        self.cu_state = [_EngineState(self.credits) for _ in range(dispatcher.num_cus)]
        self.launches: List[CopyLaunch] = []
        #: called with each copy's :class:`CopyLaunch` when the GPU starts it (after the launch overhead)
        self.on_launch: Optional[Callable[[CopyLaunch], None]] = None

    def copy(self, src_B: int, dst_B: int, nbytes: int, direction: str = "d2d", peer=None) -> simpy.Event:
        """Launch a device-to-device copy kernel now (its CTAs are placed after the launch overhead); the
        event fires with its :class:`Copy`."""
        if direction != "d2d":
            raise ValueError(f"the SM copy kernel only does device-to-device copies, not {direction!r}")
        return self._launch(self._new_copy(src_B, dst_B, nbytes, direction, peer))

    def reduce(self, segments: Sequence[Tuple[Sequence[int], int, int]]) -> simpy.Event:
        """Launch one reduction kernel now over ``segments``, each ``(srcs, dst_B, nbytes)``:
        ``dst[i] = sum(src[i] for src in srcs)`` (module doc: the copy kernel's CTAs and requests, each request
        reading every source; CTA ``i`` takes the ``i``-th 1/grid of all segments' bytes, in order). The event
        fires when every segment is written."""
        if not segments or any(len(srcs) < 1 for srcs, _d, _n in segments):
            raise ValueError("a reduction needs at least one segment, each with at least one source")
        cs = [self._new_copy(srcs[0], dst, nbytes, "d2d", None, srcs=srcs[1:]) for srcs, dst, nbytes in segments]
        return self._launch(cs)

    def _launch(self, c) -> simpy.Event:
        """Launch one kernel over copy ``c`` (or a list of copies, its segments)."""
        cs: List[Copy] = c if isinstance(c, list) else [c]
        for x in cs:
            x.left = x.nbytes // REQ_B
        n = min(self.n_ctas, sum(x.left for x in cs))
        k = CopyLaunch(f"{self.name}{len(self.launches)}", n, self.env.now)
        self.launches.append(k)
        disp = self.dispatcher
        # in line from its launch: a kernel launched after it never gets ahead while it waits out its latency
        k.handle = disp.register(k.name, self.footprint, lambda: k.n_ctas - k.next_cta,
                                 lambda cu: self._place(k, cs, cu))

        def start():
            for x in cs:
                x.start_tick = self.env.now
            if self.on_launch is not None:
                self.on_launch(k)
            while k.next_cta < k.n_ctas:
                cu = disp.acquire(k.handle)
                if cu is None:  # the rest wait for CUs (launch order): the dispatcher calls _place
                    break
                self._place(k, cs, cu)
            disp.settled(k.handle)

        if self.latency:
            self.env.timeout(self.latency).callbacks.append(lambda _e: start())
        else:
            start()
        return cs[0].done if len(cs) == 1 else self.env.all_of([x.done for x in cs])

    def _place(self, k: CopyLaunch, c: List[Copy], cu: int) -> None:
        """CTA ``k.next_cta`` of the kernel over copies ``c`` got ``cu`` (its footprint is taken): run it there."""
        i = k.next_cta
        k.next_cta += 1
        k.running += 1
        if k.first_dispatch_tick < 0:
            k.first_dispatch_tick = self.env.now
        k.last_dispatch_tick = self.env.now
        self.env.process(self._cta(k, c, cu, i))

    def _cta(self, k: CopyLaunch, cs: List[Copy], cu: int, i: int):
        total = sum(c.nbytes // REQ_B for c in cs)
        n = k.n_ctas
        j0, j1 = total * i // n, total * (i + 1) // n
        s0 = 0
        for c in cs:  # the CTA's share of the requests, segment by segment
            s1 = s0 + c.nbytes // REQ_B
            if max(j0, s0) < min(j1, s1):
                yield from self._stream(self.cu_state[cu], c, max(j0, s0) - s0, min(j1, s1) - s0)
            s0 = s1
        k.running -= 1
        if k.next_cta == k.n_ctas and k.running == 0:
            k.end_tick = self.env.now
        self.dispatcher.release(k.handle, cu)  # the CTA retires: its CU goes to the next waiting CTA

    def max_in_flight(self) -> int:
        """Most 64 B requests one CU had in flight."""
        return max((s.max_in_flight for s in self.cu_state), default=0)
