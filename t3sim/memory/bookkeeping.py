"""Compiled helpers for :class:`~t3sim.memory.system.MemorySystem`'s per-call bookkeeping.

They replace numpy sequences (argsort + per-unit Python loop in ``submit``; ``np.add.at``,
``np.maximum.at``, ``np.unique`` and a stable argsort after every advance) whose fixed
per-call cost dominated when a call touches only a few requests. Same results, same order.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def link_fifo(s0, s1, st, r_unit, r_next, f_head, f_tail, touched):  # pragma: no cover - compiled
    """Append requests ``s0..s1-1`` (submission order) to their unit's pending FIFO of stream ``st``.

    Sets ``touched[u] = 1`` for every unit that received a request; returns how many units did.
    """
    n = 0
    for i in range(s0, s1):
        u = r_unit[i]
        t = f_tail[u, st]
        if t >= 0:
            r_next[t] = i
        else:
            f_head[u, st] = i
        f_tail[u, st] = i
        if touched[u] == 0:
            touched[u] = 1
            n += 1
    return n


@nb.njit(cache=True)
def retire(issued, r_batch, r_done, b_done, b_remaining):  # pragma: no cover - compiled
    """Account issued requests to their batches; return the batches that completed.

    Order: by completion cycle, ties by batch id (what the numpy version produced).
    """
    out = np.empty(issued.size, dtype=np.int64)
    k = 0
    for j in range(issued.size):
        i = issued[j]
        b = r_batch[i]
        d = r_done[i]
        if d > b_done[b]:
            b_done[b] = d
        b_remaining[b] -= 1
        if b_remaining[b] == 0:
            out[k] = b
            k += 1
    done = np.sort(out[:k])
    keys = np.empty(k, dtype=np.int64)
    for j in range(k):
        keys[j] = b_done[done[j]]
    return done[np.argsort(keys, kind="mergesort")]
