"""The state layout of the windowed GEMM's compiled loop (:mod:`t3sim.window.window_kernel`) and its joins.

Indices into the loop's arrays: ``C`` (constants), ``SL[j]`` (slot ``j``: its CU, WG, yield point ``PC_*`` and the
ring of its loads' joins), ``J[k]`` (join ``k``: a ``MemoryHierarchy._join`` output event, counting the batches and
room events it waits for), ``BI[bid - bid0]`` (batch ``bid``: its fill tag, whether its write is tracked, its
callbacks list in ``CB``, its write accesses counted against the L2's write queue bound) and the loop's return
reasons ``R_*``. ``W`` (the scalar state) and the heaps are :mod:`t3sim.window.window_heap`'s.

A join waiting for write queue room (``MemoryHierarchy._room``'s event, the bound ``C[C_WQLIM]`` > 0) is on
the room FIFO: ``W[W_RMH]`` to ``W[W_RMT]``, linked by ``J_RNEXT``; ``J_RWG`` is the slot whose WG waits for that
room too (a posted store's, ``CachedLocalOutput.store``'s ``retire``; -1: none). :func:`fire_tick` wakes the FIFO,
oldest first, as ``MemoryHierarchy._write_done`` succeeds the room events.
"""

from __future__ import annotations

import numba
import numpy as np

from t3sim.window.window_heap import (NORMAL, EV_JOIN, EV_ROOM, W_CBFREE, W_CBTOP, W_CHN, W_JFREE, W_JTOP, W_LIVEB,
                                      W_NFILL, W_RMH, W_RMT, W_TRACKED, W_WQOUT, W_WQPEAK, W_WQSTALLS, _ch_pop, push)

# constants C
(C_S, C_P, C_NG, C_G, C_STEPS, C_NWGS, C_TILES_N, C_LAUNCH, C_CU_F, C_L2_F, C_MEM_F, C_FRONTEND, C_MIN_DONE,
 C_READ_DONE, C_LAZY, C_L2_LAT, C_CAT, C_SCAT, C_ACCESS_B, C_LINE_B, C_SECTOR_B, C_REQ_B, C_FLMASK, C_SLOTS,
 C_BID0, C_TAG0, C_BPG, C_XOR, C_PCH, C_READ, C_WRITE, C_COMPUTE, C_MARGIN_REQ, C_MARGIN_B, C_STCAT, C_STSRC, C_R,
 C_ACC, C_AHEAD, C_WQLIM, C_PORT, NC) = range(42)
# slot fields SL[j]; the ring of its loads' join ids follows
SL_CU, SL_SEQ, SL_TM, SL_TN, SL_GI, SL_PC, SL_WAIT, SL_RING = range(8)
PC_START, PC_AFTER_LOAD, PC_AFTER_MATH, PC_AFTER_ACC, PC_AFTER_ROOM = range(5)
# join fields J[k]; a join waiting for write queue room is on the room FIFO (W_RMH..W_RMT, linked by J_RNEXT), J_RWG
# the slot whose WG waits for the room too (-1: none)
J_STATE, J_WAITER, J_N, J_T, J_KIND, J_EXTRA, J_RNEXT, J_RWG, NJ = range(9)
# a load's; a store's write (the kernel waits for it); an accumulating store's read of C (the WG waits for it,
# then writes); that write, whose firing succeeds the kernel's ``written`` event one event later
JOIN_LOAD, JOIN_STORE, JOIN_ACC, JOIN_ACCW = 0, 1, 2, 3
# batch fields BI[bid - bid0]
# (B_WQ: a compute-stream write's accesses counted against the write queue bound)
B_FILL, B_TRACK, B_FIRED, B_CBH, B_CBT, B_FIRST, B_COUNT, B_WQ, NB = range(9)
# return reasons
R_LIMIT, R_DONE, R_GROW, R_STATS, R_IDLE = 1, 2, 3, 4, 5
BIG = np.int64(1) << np.int64(62)


@numba.njit(cache=True, _nrt=False)  # allocates nothing (window_heap says why)
def _new_join(J, W, kind, t, extra):  # pragma: no cover - compiled
    k = W[W_JFREE]
    if k >= 0:
        W[W_JFREE] = J[k, J_WAITER]
    else:
        k = W[W_JTOP]
        W[W_JTOP] = k + 1
    J[k, J_STATE], J[k, J_WAITER], J[k, J_N], J[k, J_T], J[k, J_KIND], J[k, J_EXTRA] = 0, -1, 0, t, kind, extra
    J[k, J_RNEXT], J[k, J_RWG] = -1, -1
    return k


@numba.njit(cache=True, _nrt=False)  # allocates nothing (window_heap says why)
def _room(k, nwb, W, C, J):  # pragma: no cover - compiled
    """``MemoryHierarchy._room``: join ``k``'s access submitted ``nwb`` counted write accesses; if
    more than the bound are outstanding now, it also waits for them to drain (the room FIFO). True if it waits."""
    if nwb and W[W_WQOUT] > W[W_WQPEAK]:
        W[W_WQPEAK] = W[W_WQOUT]
    if nwb == 0 or W[W_WQOUT] <= C[C_WQLIM]:
        return False
    W[W_WQSTALLS] += 1
    J[k, J_N] += 1
    if W[W_RMT] < 0:
        W[W_RMH] = k
    else:
        J[W[W_RMT], J_RNEXT] = k
    W[W_RMT] = k
    return True


@numba.njit(cache=True, _nrt=False)  # allocates nothing (window_heap says why)
def _free_join(J, W, k):  # pragma: no cover - compiled
    J[k, J_WAITER] = W[W_JFREE]
    W[W_JFREE] = k


@numba.njit(cache=True, _nrt=False)  # allocates nothing (window_heap says why)
def _attach(BI, CB, W, C, bid, k, J):  # pragma: no cover - compiled
    """Join ``k`` waits on batch ``bid`` (appended to the batch's callbacks)."""
    n = W[W_CBFREE]
    if n >= 0:
        W[W_CBFREE] = CB[n, 1]
    else:
        n = W[W_CBTOP]
        W[W_CBTOP] = n + 1
    CB[n, 0], CB[n, 1] = k, -1
    b = bid - C[C_BID0]
    if BI[b, B_CBT] < 0:
        BI[b, B_CBH] = n
    else:
        CB[BI[b, B_CBT], 1] = n
    BI[b, B_CBT] = n
    J[k, J_N] += 1


@numba.njit(cache=True, _nrt=False)  # allocates nothing (window_heap says why)
def fire_tick(T, W, C, H, CH, BI, CB, J):  # pragma: no cover - compiled
    """The dispatcher entry of tick ``T``: the batches due then, in batch-id order, each running its
    callbacks (fill entry dropped / tracked write counted; a counted write's accesses uncounted, the room FIFO's
    joins woken, oldest first, while at most the bound are outstanding; then its joins in attachment order)."""
    while W[W_CHN] > 0 and CH[0, 0] == T:
        n = _ch_pop(CH, W)
        bid = CH[n, 1]
        b = bid - C[C_BID0]
        BI[b, B_FIRED] = 1
        W[W_LIVEB] -= 1
        if BI[b, B_FILL] >= 0:
            W[W_NFILL] -= 1
        if BI[b, B_TRACK]:
            W[W_TRACKED] -= 1
        if BI[b, B_WQ]:
            W[W_WQOUT] -= BI[b, B_WQ]
            while W[W_RMH] >= 0 and W[W_WQOUT] <= C[C_WQLIM]:
                k = W[W_RMH]
                W[W_RMH] = J[k, J_RNEXT]
                if W[W_RMH] < 0:
                    W[W_RMT] = -1
                push(H, W, T, NORMAL, EV_ROOM, k)
        node = BI[b, B_CBH]
        while node >= 0:
            k = CB[node, 0]
            J[k, J_T] = max(J[k, J_T], T + J[k, J_EXTRA])
            J[k, J_N] -= 1
            if J[k, J_N] == 0:
                J[k, J_STATE] = 1
                push(H, W, max(J[k, J_T], T), NORMAL, EV_JOIN, k)
            nxt = CB[node, 1]
            CB[node, 1] = W[W_CBFREE]
            W[W_CBFREE] = node
            node = nxt
        BI[b, B_CBH] = -1
        BI[b, B_CBT] = -1
