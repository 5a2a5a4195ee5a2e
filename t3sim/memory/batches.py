"""The batches submitted to one :class:`~t3sim.memory.system.MemorySystem` and their completions.

A batch is one ``submit`` call; ids are 0, 1, 2, ... in submission order. Per batch:

* ``first[b]``, ``count[b]``: its requests' slots in the request arrays at submission (Python
  lists; only valid until the arrays are compacted, ``MemorySystem.compactions``);
* ``remaining[b]``: requests not yet issued; ``done[b]``: its completion cycle, the latest
  completion of its issued requests (its arrival cycle until one issues). Both are int64
  arrays that the compiled :func:`~t3sim.memory.accum.retire` updates in place, so they are
  replaced (grown) only by :meth:`Batches.add`.

A batch completes when its last request issues (the completion then lies at most
``tCL + tBL`` cycles ahead); :meth:`Batches.known` queues ``(batch, completion tick)`` pairs
in the order they become known and :meth:`Batches.pop_known` hands each out once.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from t3sim.cache.common import cycles_to_ticks
from t3sim.sim.clock import Clock


class Batches:
    """Submitted batches of one memory system (module docstring). ``clock``: the memory's clock."""

    def __init__(self, clock: Clock, capacity: int = 1024) -> None:
        self.clock = clock
        self.first: List[int] = []
        self.count: List[int] = []
        self.remaining = np.zeros(capacity, dtype=np.int64)
        self.done = np.zeros(capacity, dtype=np.int64)
        self._known: List[Tuple[int, int]] = []

    def add(self, first: int, n: int, arrive: int) -> int:
        """A batch of ``n`` requests in slots ``first..first+n-1``, arriving at cycle ``arrive``; its id.
        An empty batch completes at its arrival."""
        bid = len(self.first)
        self.first.append(first)
        self.count.append(n)
        if bid >= self.done.size:
            for name in ("remaining", "done"):
                old = getattr(self, name)
                new = np.zeros(2 * old.size, dtype=np.int64)
                new[: old.size] = old
                setattr(self, name, new)
        self.remaining[bid] = n
        self.done[bid] = arrive
        if n == 0:
            self._known.append((bid, self.clock.cycle_to_tick(arrive)))
        return bid

    def known(self, bids: np.ndarray, ticks: Optional[np.ndarray] = None) -> None:
        """Batches ``bids`` completed (in this order); ``ticks``: their completion ticks if already
        converted (else from ``done``, exactly)."""
        if not bids.size:
            return
        if ticks is None:
            ticks = cycles_to_ticks(self.clock, self.done[bids])
        self._known.extend(zip(bids.tolist(), ticks.tolist()))

    def pop_known(self) -> List[Tuple[int, int]]:
        """``(batch, completion tick)`` of the batches whose completion became known since the last call."""
        out, self._known = self._known, []
        return out

    def done_tick(self, bid: int) -> Optional[int]:
        """Completion tick of batch ``bid``, or None while requests remain."""
        if self.remaining[bid] > 0:
            return None
        return self.clock.cycle_to_tick(int(self.done[bid]))
