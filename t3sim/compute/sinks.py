"""Output sinks of a GEMM kernel (:class:`~t3sim.compute.gemm_kernel.GemmKernel`): where each WG's output tile goes
when its main loop ends, and what the WG and the kernel's end wait for (:class:`Stored`). The two local sinks live
here: :class:`CachedLocalOutput` (Sequential's cached stores) and :class:`AccumulatingOutput` (C += the tile);
schemes define their own (T3's uncached and remote stores, FLUX's, ...). The GEMM window
(:func:`t3sim.window.gemm_window.sink_kind`) runs a kernel whose sink is one of the two local ones. Addresses are
bytes (the tile's 64 B store requests, :class:`~t3sim.compute.addresses.StoreRequests`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol

import numpy as np
import simpy

from t3sim.compute.addresses import StoreRequests
from t3sim.compute.memhier import MemoryHierarchy


@dataclass
class Stored:
    """What a sink reports for one WG's output tile.

    ``retire``: event the WG waits for before it retires (None: posted stores, retire at once).
    ``written``: event that fires when the tile's local stores have completed; the kernel's end
    waits for every such event (None: nothing local to wait for, e.g. all stores went remote).
    ``hold``: event the WG waits for after ``retire`` holding its CU slot but no longer sharing the CU's math
    (an epilogue's store issue, fence and flag, e.g. FLUX's; None: none).
    """

    retire: Optional[simpy.Event] = None
    written: Optional[simpy.Event] = None
    hold: Optional[simpy.Event] = None


class OutputSink(Protocol):
    """Where a WG's output tile goes; returns a :class:`Stored` (or None: nothing to wait for)."""

    def store(self, seq: int, tile: int, reqs: StoreRequests) -> Optional[Stored]:
        ...


class CachedLocalOutput:
    """Sequential's output: ordinary cached stores into local memory (write-back L2)."""

    def __init__(self, hier: MemoryHierarchy, category: str = "gemm"):
        self.hier, self.category = hier, category

    def store(self, seq: int, tile: int, reqs: StoreRequests) -> Stored:
        # posted stores: the WG retires at once (unless their writes met a full write queue: then once it has
        # drained, MemoryHierarchy.posted_write); the kernel's end waits for them to be written
        written, room = self.hier.posted_write(np.unique(reqs.addr), self.category)
        return Stored(retire=room, written=written)


class AccumulatingOutput:
    """C += the tile (beta = 1; FiCCO's K-sharded GEMMs): read the tile's C lines, retire the WG when they are
    back (its epilogue needs them), then write them (cached, as :class:`CachedLocalOutput`); the kernel's end
    waits for the write. A subclass may count the reads (:meth:`count_reads`); the windowed GEMM runs this
    sink only where :meth:`store` is this one (:func:`t3sim.window.gemm_window.eligible`)."""

    def __init__(self, hier: MemoryHierarchy, category: str = "gemm"):
        self.hier, self.category = hier, category

    def count_reads(self, lines: int) -> None:
        """``lines`` request lines of C were read (called per tile, or once with the total by a window)."""

    def store(self, seq: int, tile: int, reqs: StoreRequests) -> Stored:
        h, cat = self.hier, self.category
        addrs = np.unique(reqs.addr)
        self.count_reads(len(addrs))
        read = h.read(addrs, cat)
        written = h.env.event()
        read.callbacks.append(lambda _e: h.write(addrs, cat).callbacks.append(lambda _e2: written.succeed()))
        return Stored(retire=read, written=written)
