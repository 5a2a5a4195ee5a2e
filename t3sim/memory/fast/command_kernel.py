"""Unit state layout and the command rules of the fast controller's kernel (:mod:`t3sim.memory.fast.fast_kernel`).

:func:`ready` gives the first cycle a command meets every timing rule (channel, bank group, bank, four-activate
window); :func:`issue` applies an issued command to the timing state, open rows, row-hit counts, closing banks and
the command log. Both are inlined into :func:`~t3sim.memory.fast.fast_kernel.run_kernel`, which owns the cycle loop;
the layout constants here (``US`` columns, ``P`` indices) are the kernel's state layout, shared by both modules
and by :mod:`t3sim.memory.fast.controller_fast`. Compiled without the numba runtime (nothing allocates). The
compiled kernels' cache digests depend on this file (:data:`t3sim.memory.fast.controller_fast.RUN_DEPENDS`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from t3sim.memory import timing as T
from t3sim.memory.policies.base import NEVER
from t3sim.memory.fast.queue_lists import QF_BN, QF_ROW

# unit state columns (US[u, col]); the queue lengths are adjacent: US[u, RQN + q] is queue q's
# (AWAITED: the unit's requests not yet issued that a requester waits for, fill_requests' ``unit_awaited``)
# (REF_BANK: the bank the next per-bank refresh refreshes, round robin)
(CYC, DRAINING, REF_DUE, REF_PENDING, SEQ, LAST_DIR, RQN, WQN, ACTPOS, NEXT, NCLOSING, DRAIN_LEFT, AWAITED,
 REF_BANK, NUS) = range(15)
# parameters (P[NP:NP + P[P_NPP]]: the arbitration policy's; after them the write-drain policy's)
# (P_TREFI: cycles from one REF to the next due, Timing.refresh_interval; P_PER_BANK: REF refreshes one bank)
(P_NB, P_BPG, P_RQ, P_WQ, P_NPP, P_WLIM, P_ADM, P_TREFI, P_TBL, P_DONE_RD,
 P_DONE_WR, P_FAW, P_FAWN, P_OBSERVING, P_STOP_IDLE, P_LOG, P_REFRESH_ON, P_PAGE, P_HARD, P_PER_BANK, NP) = range(21)
#: ``P[P_STOP_IDLE]``: 0 runs every unit to the call's end; STOP_IDLE stops a unit at its first cycle without work
#: (no queued or pending request, no row to close: ``run_until_idle``); STOP_NO_REQUESTS at its first cycle without
#: requests, a row still to close waiting for its resumption, or at its first cycle from ``P[P_HARD]`` on without
#: an awaited request (``US[u, AWAITED]`` 0: only write-backs left; the kernel's ``counts[4]`` is then the earliest
#: such stop): a lookahead (``MemorySystem.advance``) runs every unit to the tick it is called at (``P_HARD``) and
#: past it only while a requester waits for one of the unit's requests
STOP_IDLE, STOP_NO_REQUESTS = 1, 2
ACT, PRE, RD, WR, UPD, REF = T.ACT, T.PRE, T.RD, T.WR, T.UPD, T.REF
BIG = np.int64(NEVER)
@nb.njit(cache=True, _nrt=False, inline="always")
def ready(u, bank, g, cmd, nb0, ready, act_hist, US, faw):
    """First cycle ``cmd`` to ``bank`` (of bank group ``g``) meets the channel, bank-group, bank and
    ACT-window rules (``nb0``: node of bank 0 in ``ready``)."""
    t = ready[u, 0, cmd]
    x = ready[u, 1 + g, cmd]
    if x > t:
        t = x
    x = ready[u, nb0 + bank, cmd]
    if x > t:
        t = x
    if cmd == ACT:
        oldest = act_hist[u, US[u, ACTPOS]]
        if oldest >= 0 and oldest + faw > t:
            t = oldest + faw
    return t


@nb.njit(cache=True, _nrt=False, inline='always')
def issue(u, c, cmd, bank, row, P, LAT, nb0, ready, open_row, act_hist, US, cmd_count, out_log, counts, hits, Q,
           closing):
    """Issue ``cmd`` (to ``bank``/``row``; -1 for an all-bank REF, row -1 for a per-bank one) at cycle ``c``: timing, open rows, row-hit counts,
    closing banks, log."""
    ng = 1 + bank // P[P_BPG]  # bank-group node (unused for REF)
    nk = nb0 + bank  # bank node
    for n in range(6):
        v = LAT[0, cmd, n]
        if v >= 0 and c + v > ready[u, 0, n]:
            ready[u, 0, n] = c + v
        if bank >= 0:
            v = LAT[1, cmd, n]
            if v >= 0 and c + v > ready[u, ng, n]:
                ready[u, ng, n] = c + v
            v = LAT[2, cmd, n]
            if v >= 0 and c + v > ready[u, nk, n]:
                ready[u, nk, n] = c + v
    if cmd == ACT:
        act_hist[u, US[u, ACTPOS]] = c
        US[u, ACTPOS] = (US[u, ACTPOS] + 1) % P[P_FAWN]
        open_row[u, bank] = row
        bs = Q.shape[2] - hits.shape[2] - 2 + bank  # the bank's list sentinel
        for q in range(2):
            n = 0
            k = Q[u, q, bs, QF_BN]
            while k != bs:
                if Q[u, q, k, QF_ROW] == row:
                    n += 1
                k = Q[u, q, k, QF_BN]
            hits[u, q, bank] = n
    elif cmd == PRE:
        open_row[u, bank] = -1
        hits[u, 0, bank] = 0
        hits[u, 1, bank] = 0
        if closing[u, bank] != 0:
            closing[u, bank] = 0
            US[u, NCLOSING] -= 1
    cmd_count[u, cmd] += 1
    if P[P_LOG]:
        k = counts[2]
        out_log[k, 0] = c
        out_log[k, 1] = u
        out_log[k, 2] = cmd
        out_log[k, 3] = bank
        out_log[k, 4] = row
        counts[2] = k + 1
