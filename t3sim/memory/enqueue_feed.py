"""The enqueue hook's feed: requests admitted to controller queues, handed to a hook (T3's tracker) in canonical
order.

Order. The hook sees admissions by admission cycle, then unit, then a unit's own admission order, independent of
the memory's pump cadence and lookahead. After every controller run, :meth:`EnqueueFeed.offer` hands over the
admissions before the *horizon* -- the earliest cycle any unit may still admit at: the run's end or, after a
lookahead, the earliest cycle at which it left a unit with only write-backs (``FastController.lag``) -- and holds
the later ones for the next run. At the reference cadence (no lookahead) the horizon is the run's end, so every
report passes at once, as it comes. With the lookahead a report may come up to the frontend latency before its
tick or, held, about one pump step after it: a hook acts at the reported tick, not at ``env.now``
(tests/memory/test_lookahead.py, tests/memory/test_port.py).

Rows are :func:`~t3sim.memory.bookkeeping.admission_rows`'s (``AR_*`` fields, one column per admission, sorted by
admission cycle with ties in unit order within one controller run); ticks are integer picoseconds.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from t3sim.memory import bookkeeping as BK
from t3sim.memory.interface import EnqueueInfo

#: a horizon past every cycle (a run until idle: nothing can be admitted later)
BIG_CYCLE = np.iinfo(np.int64).max // 4


class EnqueueFeed:
    """Feeds ``fn(EnqueueInfo)`` (``writes_only``: only writes and updates -- T3's tracker counts nothing else); no
    call for a run that handed over nothing. ``cycle_to_tick``: the memory clock's conversion, ``access_B`` the
    bytes of one DRAM access (``EnqueueInfo.bytes``)."""

    def __init__(self, fn: Callable[[EnqueueInfo], None], writes_only: bool, cycle_to_tick: Callable[[int], int],
                 access_B: int, held: Optional[np.ndarray] = None):
        self.fn, self.writes_only = fn, bool(writes_only)
        self._cycle_to_tick, self._access_B = cycle_to_tick, access_B
        #: rows at or past the last horizon, in canonical order (``held``: a previous feed's, see :meth:`flush`)
        self.held: Optional[np.ndarray] = held

    def offer(self, rows: np.ndarray, horizon: int) -> None:
        """One controller run's admission rows; every unit has simulated the cycles before ``horizon``."""
        if self.held is not None:
            rows = np.concatenate((self.held, rows), axis=1)
            rows = rows[:, np.lexsort((rows[BK.AR_UNIT], rows[BK.AR_TICK]))]  # stable: per unit, admission order
            self.held = None
        n = rows.shape[1]
        if n and horizon < BIG_CYCLE:
            n = int(np.searchsorted(rows[BK.AR_TICK], self._cycle_to_tick(horizon), "left"))
        if n < rows.shape[1]:
            self.held = rows[:, n:]
        if n:
            self.fn(EnqueueInfo(
                tick=rows[BK.AR_TICK, :n], channel=rows[BK.AR_CHANNEL, :n], kind=rows[BK.AR_KIND, :n],
                stream=rows[BK.AR_STREAM, :n], source=rows[BK.AR_SOURCE, :n], wg_id=rows[BK.AR_WG, :n],
                wf_id=rows[BK.AR_WF, :n], batch=rows[BK.AR_BATCH, :n], bytes=self._access_B))

    def flush(self, horizon: int) -> Optional[np.ndarray]:
        """Hand over every held admission before ``horizon`` (every unit has simulated the cycles before it) and
        return the rest, now no longer this feed's (None: none)."""
        self.offer(np.zeros((BK.NAR, 0), dtype=np.int64), horizon)
        held, self.held = self.held, None
        return held
