"""The GPU's WG dispatcher: CUs shared between kernels that run at once.

One :class:`CuDispatcher` per simulated GPU places every kernel's WGs (CTAs) on
CUs. A WG occupies a :class:`Footprint` of its CU's resources (threads, 32-bit
registers, LDS bytes, one WG slot) from its dispatch until it retires; a CU
holds any mix of WGs whose footprints fit together (the occupancy rules of
:mod:`t3sim.compute.occupancy`, applied to the sum).

Policy (the hardware's, as measured and described in the literature):

* **Launch order.** Kernels are served in the order they were launched to the
  GPU. A later kernel's WGs are dispatched only onto resources that remain
  after every WG of every earlier kernel has been dispatched (the "left-over"
  policy: Pai et al., *Improving GPGPU concurrency with elastic kernels*,
  ASPLOS'13, Sec. 2; Gilman et al., *Demystifying the placement policies of the
  NVIDIA GPU thread block scheduler for concurrent kernels*, SIGMETRICS PER
  2020). So a WG that retires while an earlier kernel still has WGs waiting
  hands its CU to that kernel.
* **Placement.** A WG goes to the CU (within the kernel's CU mask) with the
  most room for another WG of its kernel, ties to the lowest CU index (Gilman
  et al.: the scheduler picks the SM by its local resource availability). For
  a kernel alone on the GPU this is slot ``j`` -> CU ``j mod num_cus``.
* **Persistence.** A kernel's WG slot that retires a WG while no earlier kernel
  waits keeps its CU and takes the kernel's next WG at once (no re-placement).

A kernel is in line from its launch (:meth:`register`), so a kernel launched
later never gets ahead of it while it waits out its launch latency. It talks
to the dispatcher through :meth:`acquire` (a CU for one more WG now, or
``None``: the kernel is queued and will be offered CUs through its
``on_cu(cu)`` callback as they free up; its first call marks it started),
:meth:`settled` (it holds CUs for all its WGs: leftovers go to later
kernels), :meth:`should_yield`
(after a WG retires: must this slot hand its CU to an earlier kernel?) and
:meth:`release` (the slot's WG left the CU). Invariants (tested): the summed
footprints on a CU never exceed its capacity; every WG a kernel asks for is
eventually placed unless the run deadlocks; placement order is launch order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from t3sim.compute.occupancy import REGISTER_B, ceil_div
from t3sim.config.gpu import GPUConfig

#: resource vector order
RESOURCES = ("threads", "registers", "lds_B", "wg_slots")


@dataclass(frozen=True)
class Footprint:
    """What one WG of a kernel holds on its CU while resident (allocation units applied)."""

    threads: int
    registers: int
    lds_B: int

    @classmethod
    def of(cls, gpu: GPUConfig, threads: int, registers_per_thread: int, lds_B: int) -> "Footprint":
        """A WG of ``threads`` threads with ``registers_per_thread`` registers and ``lds_B`` bytes of LDS on
        ``gpu``: registers rounded per WF to ``register_alloc_unit_per_wf``, LDS to ``lds_alloc_unit_B``."""
        tpw = gpu.threads_per_wf
        wfs = ceil_div(threads, tpw)
        unit = gpu.register_alloc_unit_per_wf
        regs = ceil_div(registers_per_thread * tpw, unit) * unit * wfs
        lds = ceil_div(lds_B, gpu.lds_alloc_unit_B) * gpu.lds_alloc_unit_B
        return cls(int(threads), int(regs), int(lds))

    def vector(self) -> np.ndarray:
        return np.array([self.threads, self.registers, self.lds_B, 1], dtype=np.int64)


def cu_capacity(gpu: GPUConfig) -> np.ndarray:
    """One CU's resources in :data:`RESOURCES` order: threads, 32-bit registers, usable LDS bytes, WG slots."""
    usable = [c * 1024 for c in gpu.lds_carveouts if c <= gpu.lds_l1_size_KiB]
    return np.array([gpu.max_threads_per_cu, gpu.register_file_size_KiB * 1024 // REGISTER_B,
                     usable[-1] if usable else 0, gpu.max_wgs_per_cu], dtype=np.int64)


class _Client:
    """One launched kernel as the dispatcher sees it."""

    __slots__ = ("name", "seq", "need", "mask", "pending", "on_cu", "resident", "started")

    def __init__(self, name: str, seq: int, need: np.ndarray, mask: np.ndarray, pending: Callable[[], int],
                 on_cu: Callable[[int], None]):
        self.name, self.seq, self.need, self.mask = name, seq, need, mask
        self.pending, self.on_cu = pending, on_cu
        self.resident = 0
        self.started = False  # the GPU has started it (after its launch latency): its WGs may be placed


class CuDispatcher:
    """Places the WGs of every kernel launched on one GPU onto its CUs (module doc)."""

    def __init__(self, gpu: GPUConfig, name: str = "gpu"):
        self.gpu, self.name = gpu, name
        self.num_cus = gpu.num_cus
        self.cap = cu_capacity(gpu)
        self.free = np.tile(self.cap, (self.num_cus, 1))  # [cu, resource]
        self._clients: Dict[int, _Client] = {}
        self._waiting: List[_Client] = []  # launch order
        self._seq = 0
        self.placements = 0
        self.handoffs = 0  # CUs a retiring WG handed to an earlier kernel
        #: a windowed GEMM that holds this GPU alone (t3sim.window.gemm_window), or None
        self.window = None

    # ---------------------------------------------------------------- kernels
    def register(self, name: str, footprint: Footprint, pending: Callable[[], int], on_cu: Callable[[int], None],
                 cus: Optional[Sequence[int]] = None) -> int:
        """Launch a kernel now: returns its handle (launch order). ``pending()`` says how many of its WGs still
        wait for a CU; ``on_cu(cu)`` is called when the dispatcher places one of them on ``cu`` (the
        footprint is already taken). ``cus``: the CUs it may use (default all; the paper's 72-8 splits)."""
        if self.window is not None:
            raise RuntimeError(f"{name} launched while the windowed GEMM {self.window.gk.name} holds the GPU alone: it "
                               "was marked exclusive (set simulation.gemm_window: false)")
        need = footprint.vector()
        if np.any(need > self.cap):
            bad = RESOURCES[int(np.argmax(need > self.cap))]
            raise ValueError(f"{name}: one WG needs more {bad} than a CU has ({footprint} vs capacity "
                             f"{dict(zip(RESOURCES, self.cap.tolist()))})")
        mask = np.zeros(self.num_cus, dtype=bool)
        mask[list(range(self.num_cus)) if cus is None else list(cus)] = True
        h = self._seq
        self._seq += 1
        c = self._clients[h] = _Client(name, h, need, mask, pending, on_cu)
        if pending() > 0:  # in line from its launch: no later kernel gets ahead while it waits for its start
            self._waiting.append(c)
        return h

    def _room(self, c: _Client) -> np.ndarray:
        """WGs of ``c`` that still fit on each CU (0 outside its mask)."""
        used = c.need > 0  # a resource the WG does not use (e.g. no LDS) never limits it
        r = (self.free[:, used] // c.need[used]).min(axis=1)
        return np.where(c.mask, r, 0)

    def _take(self, c: _Client, cu: int) -> None:
        self.free[cu] -= c.need
        c.resident += 1
        self.placements += 1

    def _prune(self) -> List[_Client]:
        """The waiting kernels that still have WGs to place (launch order)."""
        self._waiting = [w for w in self._waiting if w.pending() > 0]
        return self._waiting

    def acquire(self, h: int) -> Optional[int]:
        """A CU for one more WG of kernel ``h`` now, its footprint taken; ``None`` if an earlier kernel still
        waits or no CU has room (the kernel then waits and gets CUs through ``on_cu``)."""
        c = self._clients[h]
        c.started = True
        if not any(w.seq < c.seq for w in self._prune()):
            room = self._room(c)
            cu = int(np.argmax(room))
            if room[cu] > 0:
                self._take(c, cu)
                return cu
        if c not in self._waiting:
            self._waiting.append(c)
            self._waiting.sort(key=lambda w: w.seq)
        return None

    def should_yield(self, h: int, cu: int) -> bool:
        """After a WG of kernel ``h`` retired on ``cu``: does an earlier-launched kernel wait for a CU that
        this WG's resources would let it use? (Then the slot must :meth:`release` instead of continuing.)"""
        if not self._waiting or not self._prune():
            return False
        c = self._clients[h]
        after = self.free[cu] + c.need
        return any(w.seq < c.seq and w.mask[cu] and np.all(after >= w.need) for w in self._waiting)

    def release(self, h: int, cu: int) -> None:
        """A WG slot of kernel ``h`` left ``cu``: free its footprint and place waiting WGs (launch order)."""
        c = self._clients[h]
        self.free[cu] += c.need
        c.resident -= 1
        self._fill()

    def _fill(self) -> None:
        """Serve waiting kernels in launch order; a kernel that cannot place its next WG blocks later ones."""
        while self._waiting:
            c = self._waiting[0]
            if c.pending() <= 0:
                self._waiting.pop(0)
                continue
            if not c.started:  # launched but not started yet: it keeps its place in line
                return
            room = self._room(c)
            cu = int(np.argmax(room))
            if room[cu] <= 0:
                return
            self._take(c, cu)
            self.handoffs += 1
            c.on_cu(cu)

    def settled(self, h: int) -> None:
        """Kernel ``h`` holds CUs for all its WGs now: what is left over goes to the kernels after it."""
        if self._waiting and self._clients[h].pending() <= 0:
            self._fill()

    # ---------------------------------------------------------------- introspection
    def resident(self, h: int) -> int:
        return self._clients[h].resident

    def waiting(self) -> List[str]:
        return [f"{c.name} ({c.pending()} WGs)" for c in self._waiting]

    def confined(self, cus: Sequence[int]) -> "ConfinedDispatcher":
        """This dispatcher as seen by kernels confined to ``cus`` (a CU reservation, the paper's 72-8 and
        64-16 splits, Sec. 3.2.1): every kernel they register may use only those CUs."""
        return ConfinedDispatcher(self, cus)


class ConfinedDispatcher:
    """A :class:`CuDispatcher` whose :meth:`register` confines the kernel to a fixed set of CUs; everything
    else is the shared dispatcher's (one launch order, one set of free resources)."""

    def __init__(self, dispatcher: CuDispatcher, cus: Sequence[int]):
        cus = sorted(set(int(c) for c in cus))
        if not cus or cus[0] < 0 or cus[-1] >= dispatcher.num_cus:
            raise ValueError(f"CU reservation {cus[:4]}...: needs CUs within 0..{dispatcher.num_cus - 1}")
        self.dispatcher, self.cus = dispatcher, tuple(cus)

    def register(self, name: str, footprint: Footprint, pending: Callable[[], int], on_cu: Callable[[int], None],
                 cus: Optional[Sequence[int]] = None) -> int:
        allowed = self.cus if cus is None else tuple(c for c in cus if c in self.cus)
        return self.dispatcher.register(name, footprint, pending, on_cu, allowed)

    def __getattr__(self, attr: str):
        return getattr(self.dispatcher, attr)
