"""The tracker's common increment, in compiled code and as its Python reference.

:class:`~t3sim.dma.tracker.Tracker` keeps each programmed region's state in dense arrays indexed by
a region id (``rid``, in programming order): rows of one ``int64 [3, regions]`` array: ``thr[rid]`` the threshold, ``cnt[rid]`` the
counter (-1 while the region holds no way), ``rdy[rid]`` whether it is ready (``reserve_ready``); and
``lut[k0, k1]`` the rid of region key ``(k0, k1)`` (-1: not programmed). Most accesses the enqueue
hook reports only increment a counter that stays below its threshold; :func:`count_common` does
those for a run of accesses, buffers the accesses that stall in a set no access may enter (the caller queues
them), and stops at the first one that needs the tracker's general path (allocation, firing, a readiness
change or another stall: :meth:`Tracker._access`), which the caller runs before calling again from the next
access. :func:`count_common_py` is the same function as plain
Python (``count_common.py_func``), the reference the tests hold the compiled one to; a tracker with
``Tracker.counting = "python"`` counts with it.

Which accesses count: kind WRITE or UPDATE (:class:`~t3sim.memory.request.Kind` codes 1, 2) with
``wg_id >= 0``; the rest are skipped (not counted, not untracked). A counted access whose region
(``(wg // m, 0)`` at WG granularity, ``(wg, wf // m)`` at WF granularity) was not programmed is
*untracked*. An access is from a peer when its stream is COMM and the policy reads readiness.
"""

from __future__ import annotations

import numba as nb
import numpy as np

#: :class:`~t3sim.memory.request.Kind` codes the tracker counts (WRITE, UPDATE) and the COMM stream code
_WRITE, _UPDATE, _COMM = 1, 2, 1
#: rows of the region state array
THR, CNT, RDY = 0, 1, 2


def count_common(kind, wg, wf, stream, tick, start, wg_gran, m, uses_ready, lut, st, setof, closed, sbuf):
    """Count accesses ``start..`` that only increment a counter below its threshold, and buffer those that stall
    in a closed set; return ``(i, counted, untracked, stalled)``: the index of the first access that needs the
    general path (``len(kind)`` if none; with ``stalled == sbuf.shape[1]`` the buffer is full and access ``i``
    is not looked at yet), how many accesses before it were counted and untracked, and how many stalled.

    A stall here is an access whose region holds no way in a set that is *closed* (``closed[set] != 0``: the
    admission policy refuses every access in the set's state, which the tracker keeps up to date); it goes to
    ``sbuf`` as a column ``(rid, from a peer, tick)``, in order, and the caller queues the buffered stalls before
    anything else (nothing between them changes a set: only common increments, which touch regions holding a way).

    Arrays: ``kind``, ``wg``, ``wf``, ``stream``, ``tick`` per access (int64); ``lut`` int64 ``[K0, K1]``; ``st``
    int64 ``[3, regions]``: rows ``thr``, ``cnt``, ``rdy`` (:data:`THR`, :data:`CNT`, :data:`RDY`); ``setof``
    int64 per region, ``closed`` int64 per set; ``sbuf`` int64 ``[3, capacity]``.
    """
    n = kind.shape[0]
    counted = 0
    untracked = 0
    stalled = 0
    cap = sbuf.shape[1]
    K0, K1 = lut.shape[0], lut.shape[1]
    i = start
    while i < n:
        k = kind[i]
        w = wg[i]
        if (k == _WRITE or k == _UPDATE) and w >= 0:
            if wg_gran:
                k0 = w // m
                k1 = 0
            else:
                k0 = w
                k1 = wf[i] // m
            rid = -1
            if k0 < K0 and 0 <= k1 < K1:
                rid = lut[k0, k1]
            if rid < 0:
                untracked += 1
            else:
                c = st[CNT, rid]
                comm = uses_ready and stream[i] == _COMM
                if c >= 0 and c + 1 < st[THR, rid] and not (comm and st[RDY, rid] == 0):
                    st[CNT, rid] = c + 1
                    counted += 1
                elif c < 0 and closed[setof[rid]] != 0:
                    if stalled == cap:
                        break
                    sbuf[0, stalled] = rid
                    sbuf[1, stalled] = 1 if comm else 0
                    sbuf[2, stalled] = tick[i]
                    stalled += 1
                else:
                    break
        i += 1
    return i, counted, untracked, stalled


count_common_py = count_common
count_common = nb.njit(cache=True, nogil=True, _nrt=False)(count_common)  # allocates nothing: no reference counts per call


def first_counted(kind: np.ndarray, wg: np.ndarray) -> int:
    """Index of the first access the tracker counts or finds untracked (module doc), -1 if none."""
    sel = np.flatnonzero(((kind == _WRITE) | (kind == _UPDATE)) & (wg >= 0))
    return int(sel[0]) if sel.size else -1
