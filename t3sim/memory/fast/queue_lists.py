"""The fast controller's read and write queues as slots on linked lists (used by :mod:`t3sim.memory.fast.fast_kernel`).

``Q[u, q, s, f]`` (int64): field ``f`` of slot ``s`` of unit ``u``'s queue ``q`` (0 read, 1 write).
A queue is ``S = Q.shape[2] - NB - 3`` slots (``S >=`` its capacity; ``NB`` banks) threaded on
doubly linked lists, each closed by a sentinel slot:

* slot ``S`` heads the queue in admission order (links ``QF_GN``/``QF_GP``: next/previous; so
  ascending ``QF_SEQ``);
* slot ``S + 1 + b`` heads the entries that go to bank ``b``, also in admission order (links
  ``QF_BN``/``QF_BP``);
* slot ``S + 1 + NB`` heads the free slots (singly linked by ``QF_GN``; -1 ends it);
* slot ``S + 2 + NB`` heads the ring of the banks that have entries, a ring of their sentinels
  (linked by the bank sentinels' ``QF_GN``/``QF_GP``; any order), so the kernel's bank loops visit
  those banks only (in a stream, one or two of 16).

Admission appends to both lists and issue unlinks from both, in O(1): no entry moves. (The queue
was an array in admission order whose dequeue shifted the younger entries: ~54 of 64 per issue
in a stream.) FR-FCFS needs each bank's oldest qualifying entry only, and two requests to one line
go to one bank, so every same-line search walks one bank's list.

Fields: ``QF_REQ`` the request index (-1 in a free or sentinel slot); ``QF_BANK``, ``QF_ROW``,
``QF_LINE``, ``QF_KIND`` copies of its constant fields, so queue scans stay cache-resident;
``QF_SEQ`` its admission number (``RQ[F_SEQ]``); ``QF_NDEPS`` its count of unfinished older
same-line writes, kept equal to ``RQ[F_NDEPS, request]``.

The queue lengths are the caller's (``US[u, RQN + q]`` of the kernel). Compiled without the numba
runtime and inlined into the kernel (as its other helpers).
"""

from __future__ import annotations

import numba as nb

from t3sim.memory.bookkeeping import F_BANK, F_KIND, F_LINE, F_NDEPS, F_ROW, F_SEQ

# slot fields (Q[u, q, s, field])
QF_REQ, QF_BANK, QF_ROW, QF_LINE, QF_KIND, QF_NDEPS, QF_SEQ, QF_GN, QF_GP, QF_BN, QF_BP, NQF = range(12)


def shape(units: int, entries: int, banks: int) -> tuple:
    """The shape of ``Q`` for queues of ``entries`` slots (the larger capacity) and ``banks`` banks."""
    return (units, 2, entries + banks + 3, NQF)


def init_queues(Q, nbanks):
    """Empty queues in ``Q`` (layout in the module docstring): sentinels linked to themselves, every
    slot free, no request anywhere."""
    S = Q.shape[2] - nbanks - 3
    Q[...] = 0
    Q[:, :, :, QF_REQ] = -1
    for x in range(S, S + 3 + nbanks):
        Q[:, :, x, QF_GN] = Q[:, :, x, QF_GP] = Q[:, :, x, QF_BN] = Q[:, :, x, QF_BP] = x
    Q[:, :, S + 1 + nbanks, QF_GN] = 0 if S > 0 else -1
    for s in range(S):
        Q[:, :, s, QF_GN] = s + 1 if s + 1 < S else -1


@nb.njit(cache=True, _nrt=False, inline="always")
def count_line(u, q, bank, line, Q, nbanks, first):  # pragma: no cover - compiled
    """Entries of unit ``u``'s queue ``q`` to ``line`` (which lies in ``bank``: one bank list to walk);
    with ``first``, stop at the first (0 or 1)."""
    bs = Q.shape[2] - nbanks - 2 + bank
    n = 0
    k = Q[u, q, bs, QF_BN]
    while k != bs:
        if Q[u, q, k, QF_LINE] == line:
            n += 1
            if first:
                break
        k = Q[u, q, k, QF_BN]
    return n


@nb.njit(cache=True, _nrt=False, inline="always")
def enqueue(u, qi, r, nd, RQ, Q, qcnt):  # pragma: no cover - compiled
    """Append request ``r`` (``nd`` dependencies) to unit ``u``'s queue ``qi``: a free slot, linked
    last in the queue's and in its bank's list (``qcnt[u, qi, bank]`` counts the bank's entries)."""
    nbanks = qcnt.shape[2]
    gs = Q.shape[2] - nbanks - 3  # the queue's sentinel (S)
    fs = gs + 1 + nbanks  # the free list's
    b = RQ[F_BANK, r]
    bs = gs + 1 + b  # the bank list's
    s = Q[u, qi, fs, QF_GN]
    Q[u, qi, fs, QF_GN] = Q[u, qi, s, QF_GN]
    qcnt[u, qi, b] += 1
    if qcnt[u, qi, b] == 1:  # the bank joins the ring of banks with entries
        a = fs + 1
        t = Q[u, qi, a, QF_GP]
        Q[u, qi, bs, QF_GN] = a
        Q[u, qi, bs, QF_GP] = t
        Q[u, qi, t, QF_GN] = bs
        Q[u, qi, a, QF_GP] = bs
    Q[u, qi, s, QF_REQ] = r
    Q[u, qi, s, QF_BANK] = b
    Q[u, qi, s, QF_ROW] = RQ[F_ROW, r]
    Q[u, qi, s, QF_LINE] = RQ[F_LINE, r]
    Q[u, qi, s, QF_KIND] = RQ[F_KIND, r]
    Q[u, qi, s, QF_NDEPS] = nd
    Q[u, qi, s, QF_SEQ] = RQ[F_SEQ, r]
    t = Q[u, qi, gs, QF_GP]
    Q[u, qi, s, QF_GN] = gs
    Q[u, qi, s, QF_GP] = t
    Q[u, qi, t, QF_GN] = s
    Q[u, qi, gs, QF_GP] = s
    t = Q[u, qi, bs, QF_BP]
    Q[u, qi, s, QF_BN] = bs
    Q[u, qi, s, QF_BP] = t
    Q[u, qi, t, QF_BN] = s
    Q[u, qi, bs, QF_BP] = s
    RQ[F_NDEPS, r] = nd


@nb.njit(cache=True, _nrt=False, inline="always")
def dequeue(u, qi, s, Q, qcnt):  # pragma: no cover - compiled
    """Remove slot ``s`` from unit ``u``'s queue ``qi`` (unlinked from both lists, put on the free list)."""
    fs = Q.shape[2] - 2
    b = Q[u, qi, s, QF_BANK]
    qcnt[u, qi, b] -= 1
    if qcnt[u, qi, b] == 0:  # the bank leaves the ring of banks with entries
        bs = fs - qcnt.shape[2] + b
        n = Q[u, qi, bs, QF_GN]
        p = Q[u, qi, bs, QF_GP]
        Q[u, qi, p, QF_GN] = n
        Q[u, qi, n, QF_GP] = p
    n = Q[u, qi, s, QF_GN]
    p = Q[u, qi, s, QF_GP]
    Q[u, qi, p, QF_GN] = n
    Q[u, qi, n, QF_GP] = p
    n = Q[u, qi, s, QF_BN]
    p = Q[u, qi, s, QF_BP]
    Q[u, qi, p, QF_BN] = n
    Q[u, qi, n, QF_BP] = p
    Q[u, qi, s, QF_REQ] = -1
    Q[u, qi, s, QF_GN] = Q[u, qi, fs, QF_GN]
    Q[u, qi, fs, QF_GN] = s
