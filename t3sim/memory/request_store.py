"""The request arrays of a :class:`~t3sim.memory.system.MemorySystem`: every submitted DRAM access as a row of
fields, and the per-unit, per-stream pending FIFOs linked through them (with a capacity policy).

Layout. ``RQ`` is the transpose of a C-ordered ``[capacity, NF]`` int64 array: indexed field-first
(``RQ[F_*]``, :mod:`t3sim.memory.bookkeeping`), stored request-major, so the fields of one request share a
cache line or two (the controllers touch ~10 fields of each request they admit or issue; field-major storage
cost a cache miss per field: pump step 46 -> 37 us). ``r_<name>`` is the view of row ``F_<NAME>``. Rows
``0..n`` are in use; ``f_head[u, s]`` / ``f_tail[u, s]`` are the oldest and newest request unit ``u`` has not
admitted from stream ``s`` (-1: none), linked by ``F_NEXT``.

Capacity. The arrays double when full; with the fast controller and no functional data, once they hold
``compact_min`` rows, full arrays are first compacted (:func:`~t3sim.memory.bookkeeping.compact`: the requests
not yet issued move to the front and every reference to them is renumbered) and grow only if those still fill
more than 3/4 of them. A grow then copies only the live rows, and after a compaction a quarter is free, so each
request is moved O(1) times. Batch row ranges are valid only until the first compaction (``compactions``).
"""

from __future__ import annotations

import numpy as np

from t3sim.memory import bookkeeping as BK

#: the ``r_<name>`` views, in field order (``F_*`` of :mod:`t3sim.memory.bookkeeping`)
_REQ_FIELDS = ("r_unit", "r_bank", "r_row", "r_line", "r_kind", "r_stream", "r_source", "r_batch", "r_wg", "r_wf",
               "r_arrive", "r_admit", "r_issue", "r_done", "r_class", "r_next", "r_seq", "r_ndeps", "r_awaited")
assert len(_REQ_FIELDS) == BK.NF

_NO_ID = np.array([-1], dtype=np.int64)  # wg/wf id of requests that carry none (read-only use)


def ids(x, n: int) -> np.ndarray:
    """wg/wf ids for a batch of ``n``: one value (length-1 array) or one per request (None: :data:`_NO_ID`)."""
    if x is None:
        return _NO_ID
    a = np.asarray(x, dtype=np.int64)
    if a.ndim == 0:
        return a.reshape(1)
    if a.shape != (n,) and a.shape != (1,):
        raise ValueError(f"wg_id/wf_id: {a.shape[0]} values for {n} requests")
    return np.ascontiguousarray(a)


class RequestStore:
    """The request rows and pending FIFOs (module doc). The memory system that derives from it provides
    ``engine`` (its controllers: a fast one has the queue slots ``rq``/``wq`` that compaction renumbers),
    ``functional`` and ``outstanding`` (requests not yet issued)."""

    #: capacity from which full arrays are compacted before they grow (0: never); 32k rows (5 MB): a small live set
    #: stays in few pages (explicit TP=16: peak 1.4 -> 0.7 GB against 1 << 18, same statistics)
    compact_min = 1 << 15

    def _init_requests(self, units: int) -> None:
        self._cap = 0
        self.n = 0
        self.compactions = 0  # times the request arrays were compacted (batch ranges no longer valid)
        self.RQ = np.zeros((0, BK.NF), dtype=np.int64).T
        self._grow(1024)
        self.f_head = np.full((units, 2), -1, dtype=np.int64)
        self.f_tail = np.full((units, 2), -1, dtype=np.int64)

    def _grow(self, need: int) -> None:
        """At least ``need`` rows of capacity (doubling)."""
        if need <= self._cap:
            return
        cap = max(need, 2 * self._cap)
        old = self.RQ
        self.RQ = np.zeros((cap, BK.NF), dtype=np.int64).T  # request-major storage (module doc)
        self.RQ[:, : self.n] = old[:, : self.n]
        for f, name in enumerate(_REQ_FIELDS):
            setattr(self, name, self.RQ[f])
        self._cap = cap

    def _compact_or_grow(self, batch: int) -> None:
        """Make room for ``batch`` more requests: compact, then grow if still 3/4 full (module doc)."""
        eng = self.engine
        if (self.compact_min and self._cap >= self.compact_min and self.functional is None and hasattr(eng, "rq")
                and self.n > self.outstanding):
            self.n = BK.compact(self.RQ, self.n, self.f_head, self.f_tail, eng.rq, eng.wq)
            self.compactions += 1
            if 4 * (self.n + batch) > 3 * self._cap:
                self._grow(max(self.n + batch, 2 * self._cap))
        self._grow(self.n + batch)
