"""Launch-order CTA dispatch onto a GPU's CUs, shared by the kernels that run at once (issue 12).

:class:`CUDispatcher` keeps every CU's free resources (thread slots, 32-bit registers, LDS bytes,
CTA slots, from :class:`~t3sim.config.gpu.GPUConfig`) and a FIFO of launched kernels. It places the
CTAs (WGs) of the kernel at the head of the FIFO on CUs with room, in CTA order; only when every CTA
of the head kernel has been placed does the next kernel's first CTA get a CU (it may then share CUs
with the previous kernel's last CTAs where resources allow). A CTA's resources return when its body
finishes, and placing resumes. This is the hardware block scheduler's behaviour for kernels of equal
stream priority: kernels' CTAs are dispatched in launch order, so a kernel launched behind a large
one waits for that one's last wave (measured on H200: experiments/validation/copy_contention).

CU choice: the CU after the one last used that has room (round robin), so CTAs spread over CUs.

Per-CTA resources come from the same rules as :func:`~t3sim.compute.occupancy.occupancy`
(registers allocated per WF in ``register_alloc_unit_per_wf`` units, LDS in ``lds_alloc_unit_B``);
a CTA that fits on no empty CU is rejected at launch.

Invariants: a CU's free resources never go negative; CTAs of a kernel start in CTA order; a kernel
launched later never has a CTA placed before every CTA of an earlier kernel has been placed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Deque, Generator, List, Optional

import numpy as np
import simpy

from t3sim.compute.occupancy import REGISTER_B, occupancy
from t3sim.config.gpu import GPUConfig
from t3sim.sim.engine import Component, Engine


@dataclass(frozen=True)
class CTAShape:
    """What one CTA (WG) holds on its CU while it runs."""

    threads: int
    registers: int  # 32-bit registers, after allocation rounding
    lds_B: int  # after allocation rounding


def cta_shape(gpu: GPUConfig, *, wfs_per_wg: int, registers_per_thread: int, lds_per_wg_B: int,
              threads_per_wf: Optional[int] = None) -> CTAShape:
    """The resources of one CTA of a kernel (raises ``ValueError`` if not even one fits on a CU)."""
    occ = occupancy(gpu, wfs_per_wg=wfs_per_wg, registers_per_thread=registers_per_thread,
                    lds_per_wg_B=lds_per_wg_B, threads_per_wf=threads_per_wf)
    tpw = gpu.threads_per_wf if threads_per_wf is None else threads_per_wf
    return CTAShape(wfs_per_wg * tpw, occ.regs_per_wg, occ.lds_per_wg_B)


@dataclass(eq=False)
class Launch:
    """One launched kernel in the dispatcher (times in ticks)."""

    name: str
    shape: CTAShape
    n_ctas: int
    body: Callable[[int, int], Generator]
    done: simpy.Event
    launch_tick: int
    next_cta: int = 0
    running: int = 0
    finished: int = 0
    first_dispatch_tick: int = -1
    last_dispatch_tick: int = -1
    end_tick: int = -1


class CUDispatcher(Component):
    """The CTA dispatcher of one GPU (module doc)."""

    def __init__(self, engine: Engine, gpu: GPUConfig, num_cus: Optional[int] = None, name: str = "gpu0.dispatch"):
        super().__init__(engine, name)
        self.gpu = gpu
        self.num_cus = num_cus or gpu.num_cus
        usable = [c * 1024 for c in gpu.lds_carveouts if c <= gpu.lds_l1_size_KiB]
        self.cap = (gpu.max_threads_per_cu, gpu.register_file_size_KiB * 1024 // REGISTER_B,
                    usable[-1] if usable else 0, gpu.max_wgs_per_cu)
        n = self.num_cus
        self.threads = np.full(n, self.cap[0], dtype=np.int64)
        self.regs = np.full(n, self.cap[1], dtype=np.int64)
        self.lds = np.full(n, self.cap[2], dtype=np.int64)
        self.slots = np.full(n, self.cap[3], dtype=np.int64)
        self.queue: Deque[Launch] = deque()
        self._rr = 0
        self.launches: List[Launch] = []

    # ------------------------------------------------------------------ API
    def launch(self, name: str, shape: CTAShape, n_ctas: int, body: Callable[[int, int], Generator]) -> Launch:
        """Launch a kernel of ``n_ctas`` CTAs now; ``body(cu, cta)`` is each CTA's simpy generator.

        Returns the :class:`Launch`; its ``done`` event fires (with the Launch) when every CTA finished.
        """
        if n_ctas < 1:
            raise ValueError(f"kernel {name!r}: n_ctas must be >= 1, got {n_ctas}")
        if (shape.threads > self.cap[0] or shape.registers > self.cap[1] or shape.lds_B > self.cap[2]):
            raise ValueError(f"kernel {name!r}: one CTA ({shape}) does not fit on an empty CU")
        k = Launch(name, shape, int(n_ctas), body, self.env.event(), self.env.now)
        self.queue.append(k)
        self.launches.append(k)
        self._place()
        return k

    def free_resources(self, cu: int):
        """(threads, registers, LDS bytes, CTA slots) free on ``cu`` now."""
        return int(self.threads[cu]), int(self.regs[cu]), int(self.lds[cu]), int(self.slots[cu])

    # ------------------------------------------------------------------ internals
    def _fits(self, cu: int, s: CTAShape) -> bool:
        return (self.threads[cu] >= s.threads and self.regs[cu] >= s.registers and self.lds[cu] >= s.lds_B
                and self.slots[cu] >= 1)

    def _take(self, cu: int, s: CTAShape, sign: int) -> None:
        self.threads[cu] -= sign * s.threads
        self.regs[cu] -= sign * s.registers
        self.lds[cu] -= sign * s.lds_B
        self.slots[cu] -= sign

    def _place(self) -> None:
        n = self.num_cus
        while self.queue:
            k = self.queue[0]
            while k.next_cta < k.n_ctas:
                cu = -1
                for j in range(n):
                    c = (self._rr + j) % n
                    if self._fits(c, k.shape):
                        cu = c
                        break
                if cu < 0:
                    return  # FIFO: nothing behind the head kernel may pass it
                self._rr = (cu + 1) % n
                self._take(cu, k.shape, +1)
                i = k.next_cta
                k.next_cta += 1
                k.running += 1
                if k.first_dispatch_tick < 0:
                    k.first_dispatch_tick = self.env.now
                k.last_dispatch_tick = self.env.now
                self.env.process(self._cta(k, cu, i))
            self.queue.popleft()

    def _cta(self, k: Launch, cu: int, i: int):
        yield from k.body(cu, i)
        self._take(cu, k.shape, -1)
        k.running -= 1
        k.finished += 1
        self.progressed()
        if k.finished == k.n_ctas:
            k.end_tick = self.env.now
            k.done.succeed(k)
        self._place()

    def pending(self) -> str:
        waiting = sum(k.n_ctas - k.next_cta for k in self.queue)
        running = sum(k.running for k in self.launches)
        return f"{waiting} CTAs waiting for a CU, {running} running" if (waiting or running) else ""


def launch_overhead_then(env: simpy.Environment, delay_ticks: int, fn: Callable[[], object]) -> simpy.Event:
    """Event that fires with ``fn()``'s result after ``delay_ticks`` (a launch latency before a launch)."""
    out = env.event()

    def go(_e):
        out.succeed(fn())

    if delay_ticks > 0:
        env.timeout(delay_ticks).callbacks.append(go)
    else:
        go(None)
    return out


__all__ = ["CTAShape", "CUDispatcher", "Launch", "cta_shape", "launch_overhead_then"]
