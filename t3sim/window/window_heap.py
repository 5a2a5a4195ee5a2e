"""Heaps of the windowed GEMM's compiled event loop (:mod:`t3sim.window.window_kernel`).

The event heap ``H`` holds rows ``(tick, priority, eid, kind, arg)`` ordered as simpy orders its events, by
``(tick, priority, eid)``; a push takes the next eid from ``W[W_EID]`` (the environment's counter while a window
runs). The completion heap ``CH`` holds ``(tick, batch)`` of completions known but not yet fired, in the
order the :class:`~t3sim.sim.engine.Dispatcher` fires them. ``W`` is the loop's scalar state (indices ``W_*``).

Every function here is compiled without the numba runtime (``_nrt=False``): none allocates, and with the runtime
numba reference-counts each array argument at every call (atomic updates; a pop makes ~2 log n calls).
"""

from __future__ import annotations

import numba

from t3sim.sim.clock import cycle_start_tick

# scalar state W
(W_EID, W_NOW, W_HN, W_CHN, W_NEXT, W_LIVE, W_WLEFT, W_RETIRED, W_DONE, W_END, W_LOADREQ, W_PROGRESS, W_BEATS,
 W_NB, W_NFILL, W_TAG, W_TRACKED, W_LIVEB, W_N, W_OUT, W_OUTW, W_FRONTIER, W_KAT, W_LASTSUB, W_NEXTLB, W_PUMPS,
 W_ARG0, W_ARG1, W_ARG2, W_JFREE, W_CBFREE, W_JTOP, W_CBTOP, W_ACCLINES, W_LAG, W_WQOUT, W_RMH, W_RMT, W_WQSTALLS,
 W_WQPEAK, NW) = range(41)
# heap rows H[i] = (tick, priority, eid, kind, arg); simpy's priorities
URGENT, NORMAL = 0, 1
EV_INIT, EV_TIMEOUT, EV_JOIN, EV_DISPATCH, EV_ROOM = range(5)


@numba.njit(cache=True, _nrt=False)
def next_cycle(tick, f):  # pragma: no cover - compiled
    """First cycle of a ``f`` kHz clock starting at or after ``tick`` (Clock.next_cycle_at_or_after)."""
    c = (tick * f) // 1000000000
    return c if cycle_start_tick(c, f) >= tick else c + 1


@numba.njit(cache=True, _nrt=False)
def _less(A, i, j, keys):  # pragma: no cover - compiled
    """Row ``i`` before row ``j``: lexicographic on the first ``keys`` columns."""
    for f in range(keys):
        if A[i, f] != A[j, f]:
            return A[i, f] < A[j, f]
    return False


@numba.njit(cache=True, _nrt=False)
def _swap(H, i, j):  # pragma: no cover - compiled
    for f in range(H.shape[1]):
        x = H[i, f]
        H[i, f] = H[j, f]
        H[j, f] = x


@numba.njit(cache=True, _nrt=False)
def _sift_up(A, i, keys):  # pragma: no cover - compiled
    while i > 0:
        p = (i - 1) >> 1
        if not _less(A, i, p, keys):
            break
        _swap(A, i, p)
        i = p


@numba.njit(cache=True, _nrt=False)
def _remove_first(A, n, keys):  # pragma: no cover - compiled
    """Move row 0 to row ``n`` (the old last row) and restore the heap over rows ``0..n-1``."""
    _swap(A, 0, n)
    i = 0
    while True:
        l = 2 * i + 1
        if l >= n:
            break
        m = l
        if l + 1 < n and _less(A, l + 1, l, keys):
            m = l + 1
        if not _less(A, m, i, keys):
            break
        _swap(A, i, m)
        i = m


@numba.njit(cache=True, _nrt=False)
def push(H, W, t, prio, kind, arg):  # pragma: no cover - compiled
    """Schedule an event at tick ``t`` with the next eid."""
    i = W[W_HN]
    H[i, 0], H[i, 1], H[i, 2], H[i, 3], H[i, 4] = t, prio, W[W_EID], kind, arg
    W[W_EID] += 1
    W[W_HN] = i + 1
    _sift_up(H, i, 3)


@numba.njit(cache=True, _nrt=False)
def pop(H, W):  # pragma: no cover - compiled
    """Remove the first event; it is left in row ``W[W_HN]`` (the old last row)."""
    n = W[W_HN] - 1
    W[W_HN] = n
    _remove_first(H, n, 3)
    return n


@numba.njit(cache=True, _nrt=False)
def _ch_push(CH, W, t, bid):  # pragma: no cover - compiled
    i = W[W_CHN]
    CH[i, 0], CH[i, 1] = t, bid
    W[W_CHN] = i + 1
    _sift_up(CH, i, 2)


@numba.njit(cache=True, _nrt=False)
def _ch_pop(CH, W):  # pragma: no cover - compiled
    n = W[W_CHN] - 1
    W[W_CHN] = n
    _remove_first(CH, n, 2)
    return n


@numba.njit(cache=True, _nrt=False)
def register_done(W, C, H, CH, done, ticks):  # pragma: no cover - compiled
    """Completions that became known: queue each for its tick's dispatch (one URGENT entry per tick is
    what the reference schedules; a repeated entry for a tick finds nothing left and does nothing)."""
    for k in range(done.shape[0]):
        _ch_push(CH, W, ticks[k], done[k])
        push(H, W, ticks[k], URGENT, EV_DISPATCH, 0)
