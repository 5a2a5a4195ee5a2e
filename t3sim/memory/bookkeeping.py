"""Compiled helpers for :class:`~t3sim.memory.system.MemorySystem`'s per-call bookkeeping.

:func:`fill_requests` (a submission's request fields and FIFO links), :func:`compact`
(reusing the slots of issued requests) and :func:`admission_rows` (the enqueue hook's rows)
replace numpy sequences whose fixed per-call cost dominated when a call touches only a few
requests. Same results, same order. (Retirement lives in :mod:`t3sim.memory.accum`.)
"""

from __future__ import annotations

import numba as nb
import numpy as np

from t3sim.memory.address_map import map_line, map_line_pow2, pow2_shifts
from t3sim.sim.clock import cycle_start_tick


# rows of MemorySystem.RQ (one int64 row per request field; stored request-major, see MemorySystem._grow)
# (F_AWAITED: 1 if a requester waits for the request's batch, 0 for the L2's write-backs: MemorySystem.submit)
(F_UNIT, F_BANK, F_ROW, F_LINE, F_KIND, F_STREAM, F_SOURCE, F_BATCH, F_WG, F_WF, F_ARRIVE, F_ADMIT, F_ISSUE, F_DONE,
 F_CLASS, F_NEXT, F_SEQ, F_NDEPS, F_AWAITED, NF) = range(20)


@nb.njit(cache=True)
def fill_requests(RQ, s0, a, access_B, kind, stream, source, bid, wg, wf, arrive, radix, pos, bpg, xor, chash,
                  f_head, f_tail, unit_next, awaited, unit_awaited):  # pragma: no cover - compiled
    """Write requests ``s0..s0+len(a)-1`` of one batch (addresses ``a``) and link them into the
    per-(unit, stream) pending FIFOs in submission order.

    ``wg``/``wf``: length 1 (one value for the batch) or one per request. ``unit_next``: per-unit
    lower bound of the next action (lowered to ``arrive`` for every unit that got a request;
    empty to skip). ``awaited``: 1 if a requester waits for the batch (0: a write-back); ``unit_awaited``: per-unit
    count of awaited requests not yet issued, raised for every request of an awaited batch (empty to skip; the
    fast controller's lookahead stops a unit that has none, :func:`~t3sim.memory.fast.fast_kernel.run_kernel`).
    Raises ValueError on a negative address (before writing anything).
    """
    d = np.empty(radix.size, np.int64)
    sh = np.empty(radix.size, np.int64)
    if not _fill(RQ, s0, a, access_B, kind, stream, source, bid, wg, wf, arrive, radix, pos, bpg, xor, chash, f_head,
                 f_tail, unit_next, awaited, unit_awaited, d, sh):
        raise ValueError("addresses must be non-negative")


@nb.njit(cache=True, _nrt=False)
def _fill(RQ, s0, a, access_B, kind, stream, source, bid, wg, wf, arrive, radix, pos, bpg, xor, chash, f_head, f_tail,
          unit_next, awaited, unit_awaited, d, sh):  # pragma: no cover - compiled
    """:func:`fill_requests`' work, ``d``/``sh`` its scratch (``radix.size`` each); False (nothing written) on a
    negative address. Compiled without the numba runtime: with it, the address map's inlined helpers
    reference-count their array arguments at every request (atomic updates, about as dear as the mapping)."""
    n = a.shape[0]
    for i in range(n):
        if a[i] < 0:
            return False
    pow2 = pow2_shifts(radix, sh)  # then map by shifts and masks (the same digits, no divisions)
    per_wg = wg.shape[0] != 1
    per_wf = wf.shape[0] != 1
    has_next = unit_next.shape[0] > 0
    count_awaited = awaited != 0 and unit_awaited.shape[0] > 0
    for i in range(n):
        r = s0 + i
        ln = a[i] // access_B
        if pow2:
            u, _bg, bank, row, _col = map_line_pow2(ln, sh, radix, pos, bpg, xor, chash, d)
        else:
            u, _bg, bank, row, _col = map_line(ln, radix, pos, bpg, xor, chash, d)
        RQ[F_UNIT, r] = u
        RQ[F_BANK, r] = bank
        RQ[F_ROW, r] = row
        RQ[F_LINE, r] = ln
        RQ[F_KIND, r] = kind
        RQ[F_STREAM, r] = stream
        RQ[F_SOURCE, r] = source
        RQ[F_BATCH, r] = bid
        RQ[F_WG, r] = wg[i] if per_wg else wg[0]
        RQ[F_WF, r] = wf[i] if per_wf else wf[0]
        RQ[F_ARRIVE, r] = arrive
        RQ[F_ADMIT, r] = -1
        RQ[F_ISSUE, r] = -1
        RQ[F_DONE, r] = -1
        RQ[F_CLASS, r] = 0
        RQ[F_NEXT, r] = -1
        RQ[F_SEQ, r] = 0
        RQ[F_NDEPS, r] = 0
        RQ[F_AWAITED, r] = awaited
        if count_awaited:
            unit_awaited[u] += 1
        t = f_tail[u, stream]
        if t >= 0:
            RQ[F_NEXT, t] = r
        else:
            f_head[u, stream] = r
        f_tail[u, stream] = r
        if has_next and unit_next[u] > arrive:
            unit_next[u] = arrive
    return True


@nb.njit(cache=True)
def compact(RQ, n, f_head, f_tail, rq, wq):  # pragma: no cover - compiled
    """Move the requests that have not issued (``F_DONE < 0``) to the front of ``RQ``, in order,
    and renumber every reference to them (FIFO links and heads/tails, the request indices of the
    queue slots ``rq[u, :]``, ``wq[u, :]``, where -1 marks a slot without one). Returns the new
    request count."""
    newidx = np.full(n, -1, dtype=np.int64)
    k = 0
    for i in range(n):
        if RQ[F_DONE, i] < 0:
            newidx[i] = k
            if k != i:
                for f in range(RQ.shape[0]):
                    RQ[f, k] = RQ[f, i]
            k += 1
    for j in range(k):
        x = RQ[F_NEXT, j]
        if x >= 0:
            RQ[F_NEXT, j] = newidx[x]
    for u in range(f_head.shape[0]):
        for s in range(f_head.shape[1]):
            if f_head[u, s] >= 0:
                f_head[u, s] = newidx[f_head[u, s]]
            if f_tail[u, s] >= 0:
                f_tail[u, s] = newidx[f_tail[u, s]]
        for j in range(rq.shape[1]):
            if rq[u, j] >= 0:
                rq[u, j] = newidx[rq[u, j]]
        for j in range(wq.shape[1]):
            if wq[u, j] >= 0:
                wq[u, j] = newidx[wq[u, j]]
    return k


#: rows of the controllers' output buffer (``out`` of :func:`~t3sim.memory.fast.fast_kernel.run_kernel`): the
#: issued and the admitted request indices, then an *issue record* per issued request (column ``j`` of
#: ``O_BATCH..O_CLASS`` belongs to ``out[O_ISSUED, j]``): the fields :func:`~t3sim.memory.accum.retire`
#: reads, copied when the request issues (its row is in cache then), so retiring reads them in order
#: instead of gathering request rows (:func:`~t3sim.memory.accum.retire_records`)
O_ISSUED, O_ADMITTED, O_BATCH, O_DONE, O_ARRIVE, O_KIND, O_STREAM, O_SOURCE, O_CLASS, NOUT = range(10)

#: rows of :func:`admission_rows`' result
AR_TICK, AR_CHANNEL, AR_KIND, AR_STREAM, AR_SOURCE, AR_WG, AR_WF, AR_BATCH, AR_UNIT, NAR = range(10)


@nb.njit(cache=True)
def admission_rows(admitted, RQ, writes_only, freq_kHz, pseudo_channels):  # pragma: no cover - compiled
    """The enqueue hook's rows for ``admitted`` requests: ``int64[NAR, n]`` in admission order
    (stable by admit cycle); ``writes_only`` drops reads. ``AR_TICK`` is the admit cycle's start
    tick (exact ceil, as :meth:`Clock.cycle_to_tick`), ``AR_CHANNEL`` the unit's channel, ``AR_UNIT`` the unit."""
    sel = np.empty(admitted.size, dtype=np.int64)
    n = 0
    for j in range(admitted.size):
        r = admitted[j]
        if writes_only and RQ[F_KIND, r] == 0:
            continue
        sel[n] = r
        n += 1
    keys = np.empty(n, dtype=np.int64)
    for j in range(n):
        keys[j] = RQ[F_ADMIT, sel[j]]
    order = np.argsort(keys, kind="mergesort")
    out = np.empty((NAR, n), dtype=np.int64)
    for j in range(n):
        r = sel[order[j]]
        out[AR_TICK, j] = cycle_start_tick(RQ[F_ADMIT, r], freq_kHz)
        out[AR_CHANNEL, j] = RQ[F_UNIT, r] // pseudo_channels
        out[AR_KIND, j] = RQ[F_KIND, r]
        out[AR_STREAM, j] = RQ[F_STREAM, r]
        out[AR_SOURCE, j] = RQ[F_SOURCE, r]
        out[AR_WG, j] = RQ[F_WG, r]
        out[AR_WF, j] = RQ[F_WF, r]
        out[AR_BATCH, j] = RQ[F_BATCH, r]
        out[AR_UNIT, j] = RQ[F_UNIT, r]
    return out
