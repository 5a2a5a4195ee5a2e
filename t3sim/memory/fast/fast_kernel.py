"""The numba kernel of the fast memory controller (see :mod:`t3sim.memory.fast.controller_fast`).

Pure compiled functions over flat numpy state: request eligibility and the per-unit cycle loop
:func:`run_kernel`; the timing readiness and command issue it inlines, and the state layout, are in
:mod:`t3sim.memory.fast.command_kernel`. Split from the Python wrapper so each module stays small.

Arbitration and write drain. :func:`run_kernel` is a template: it calls ``policy_choose`` and
``policy_wake``, the arbitration policy's decision and wake-up functions
(:mod:`t3sim.memory.policies.base`), and ``drain_decide``, the write-drain policy's decision
(:mod:`t3sim.memory.write_drain.base`), and is compiled once per pair of policies with those
names bound to the policies' own functions, inlined
(:func:`t3sim.memory.fast.controller_fast.kernels`). The arbitration policy's parameters are
``P[NP:NP + P[P_NPP]]``, the write-drain policy's follow them; the arbitration state of a channel
is ``arb[u, LAST_STREAM..THRESHOLD]``, its drain state ``US[u, DRAINING]``, ``US[u, DRAIN_LEFT]``.

State layout (all int64, ``u`` a unit):

* ``RQ``: ``MemorySystem.RQ``, one row per request field (``F_*`` of
  :mod:`t3sim.memory.bookkeeping`), one column per request (stored request-major);
* ``ready[u, node, cmd]``: first cycle ``cmd`` may issue at a timing node:
  node 0 the channel, ``1 + g`` bank group ``g``, ``ready.shape[1] - NB + b``
  bank ``b``;
* ``Q[u, q, s, f]``: unit ``u``'s read (``q`` 0) and write (1) queues, slots on linked lists
  (:mod:`t3sim.memory.fast.queue_lists`: admission order, and per bank, so an issue moves no entry and
  FR-FCFS compares each bank's oldest candidate, steps 5-6 of :func:`run_kernel`);
* ``hits[u, q, b]`` / ``qcnt[u, q, b]``: entries of queue ``q`` that hit bank ``b``'s
  open row / that go to bank ``b``; a closing bank has no hits;
* ``closing[u, b]``: 1 while bank ``b``'s open row is to be closed (page policy,
  :mod:`t3sim.memory.page_policy`): no column command may use it, its PRE issues first on the
  row bus; ``US[u, NCLOSING]`` counts such banks.

Every function is compiled without the numba runtime (``_nrt=False``): nothing here
allocates, and with the runtime numba reference-counts array arguments and views at
each helper call (atomic updates that cost about as much as the cycle loop itself).
"""

from __future__ import annotations

import numba as nb

from t3sim.memory.bookkeeping import (F_ADMIT, F_ARRIVE, F_AWAITED, F_BANK, F_BATCH, F_CLASS, F_DONE, F_ISSUE, F_KIND,
                                      F_LINE, F_NDEPS, F_NEXT, F_ROW, F_SEQ, F_SOURCE, F_STREAM, O_ARRIVE, O_BATCH,
                                      O_CLASS, O_DONE, O_KIND, O_SOURCE, O_STREAM)
from t3sim.memory.fast.command_kernel import (ACT, AWAITED, BIG, CYC, DRAIN_LEFT, DRAINING, LAST_DIR, NCLOSING, NEXT,
                                              NP, STOP_NO_REQUESTS, P_ADM, P_BPG, P_DONE_RD, P_DONE_WR, P_FAW, P_HARD,
                                              P_NB, P_NPP, P_OBSERVING, P_PAGE, P_PER_BANK, P_REFRESH_ON, P_RQ,
                                              P_STOP_IDLE, P_TBL, P_TREFI, P_WLIM, P_WQ, PRE, RD, REF, REF_BANK,
                                              REF_DUE, REF_PENDING, RQN, SEQ, UPD,
                                              WQN, WR)
from t3sim.memory.fast.command_kernel import issue as _issue
from t3sim.memory.fast.command_kernel import ready as _ready
from t3sim.memory.fast.queue_lists import (QF_BANK, QF_BN, QF_GN, QF_KIND, QF_LINE, QF_NDEPS, QF_REQ, QF_ROW, QF_SEQ,
                                           count_line, dequeue, enqueue)
from t3sim.memory.page_policy import OPEN, closes_row
from t3sim.memory.policies.base import DRAIN, LAST_COMM, LAST_STREAM, THRESHOLD

#: cycles per round of :func:`run_kernel` (a time slice all units advance through before the next)
SLICE = 512


@nb.njit(cache=True, _nrt=False, inline='always')
def _head_wake(h, r_arrive, c, wake):
    """A FIFO head ``h`` (-1: empty) at cycle ``c``: ``(wake, t)``, ``wake`` lowered to its arrival if that is
    still to come, ``t`` its arrival if it has arrived (else -1)."""
    if h < 0:
        return wake, -1
    a = r_arrive[h]
    if a > c:
        return (a if a < wake else wake), -1
    return wake, a


@nb.njit(cache=True, _nrt=False, inline='always')
def _eligible(u, h, RQ, US, Q, P):
    """Room in the request's queue and no same-line request in the other queue."""
    q = 1 if RQ[F_KIND, h] == 0 else 0  # the other queue
    if US[u, RQN + 1 - q] >= P[P_RQ + 1 - q]:
        return False
    return count_line(u, q, RQ[F_BANK, h], RQ[F_LINE, h], Q, P[P_NB], True) == 0


def policy_choose(c, e0, e1, a0, a1, occ, last_stream, last_comm, drain, threshold, pp):  # pragma: no cover
    """Placeholder: bound to the policy's decision per specialisation of :func:`run_kernel`."""
    raise NotImplementedError("run_kernel is a template: use t3sim.memory.fast.controller_fast.kernels(policy)")


def policy_wake(c, a0, a1, occ, last_stream, last_comm, drain, threshold, pp):  # pragma: no cover
    """Placeholder: bound to the policy's wake-up per specialisation of :func:`run_kernel`."""
    raise NotImplementedError("run_kernel is a template: use t3sim.memory.fast.controller_fast.kernels(policy)")


def drain_decide(draining, nr, nw, aged, left, cap, dp):  # pragma: no cover
    """Placeholder: bound to the write-drain policy's decision per specialisation of :func:`run_kernel`."""
    raise NotImplementedError("run_kernel is a template: use t3sim.memory.fast.controller_fast.kernels(policy, drain)")


def run_kernel(until, P, LAT, RQ, f_head, f_tail, arb, obs, US, ready, open_row, act_hist, Q, hits, qcnt, closing,
               occ_hist, bus_busy, turnarounds, cmd_count, out, out_log, counts):  # pragma: no cover - compiled
    """Simulate every unit up to cycle ``until`` (exclusive). A template (module docstring): compile it
    with ``_nrt=False`` and ``policy_choose``/``policy_wake``/``drain_decide`` bound, as ``controller_fast.kernels``
    does.

    Writes the indices of the requests issued to ``out[0, :counts[0]]`` and their issue records
    to ``out[O_BATCH:O_CLASS + 1, :counts[0]]`` (``bookkeeping.O_*``), the indices of those admitted to
    ``out[1, :counts[1]]``, the command log (with ``P[P_LOG]``) to ``out_log[:counts[2]]``, the
    minimum over units of ``US[u, NEXT]`` to ``counts[3]`` and, with ``STOP_NO_REQUESTS``, the earliest cycle at
    which a unit with requests left stopped for want of an awaited one to ``counts[4]`` (``BIG``: none).
    """
    r_arrive = RQ[F_ARRIVE]
    r_admit = RQ[F_ADMIT]
    r_next = RQ[F_NEXT]
    U = US.shape[0]
    NB = P[P_NB]
    nb0 = ready.shape[1] - NB
    bpg = P[P_BPG]
    faw = P[P_FAW]
    tBL = P[P_TBL]
    refresh_on = P[P_REFRESH_ON] != 0
    per_bank = P[P_PER_BANK] != 0  # a REF refreshes the one bank US[u, REF_BANK] (controller_ref step 6)
    observing = P[P_OBSERVING] != 0
    page = P[P_PAGE]
    pp = P[NP:NP + P[P_NPP]]  # the arbitration policy's parameters
    dp = P[NP + P[P_NPP]:]  # the write-drain policy's
    wcap = P[P_WQ]
    S = Q.shape[2] - NB - 3  # a queue's slots; S: its list's sentinel, S + 1 + b: bank b's (module docstring)
    AS = S + 2 + NB  # the sentinel of the ring of banks with entries
    # Rounds (time slices): every unit advances to the round's limit ``lim``, then the next round starts
    # SLICE cycles past the earliest next action of a unit still running. The units are independent and
    # a unit's simulation does not depend on where its runs are cut (as for pump steps), so this is the
    # same simulation as one run per unit; it touches the request rows of all units in one time window
    # together (for a stream, neighbouring rows) instead of sweeping them unit by unit.
    hard = P[P_HARD]  # with STOP_NO_REQUESTS: from this cycle on a unit without awaited requests stops
    no_requests_mode = P[P_STOP_IDLE] == STOP_NO_REQUESTS
    counts[4] = BIG
    lim_next = BIG
    for u in range(U):
        if US[u, CYC] < lim_next:
            lim_next = US[u, CYC]
    active = lim_next < until
    while active:
        lim = until if until - lim_next <= SLICE else lim_next + SLICE
        active = False
        lim_next = BIG
        for u in range(U):
            c = US[u, CYC]
            if c >= lim:
                if c < until:  # ahead of this round
                    active = True
                    if c < lim_next:
                        lim_next = c
                continue
            na = c  # earliest cycle at which unit u could act next (see NEXT)
            stopped = False
            while c < lim:
                rqn = US[u, RQN]
                wqn = US[u, WQN]
                empty = rqn == 0 and wqn == 0
                if (P[P_STOP_IDLE] != 0 and empty and f_head[u, 0] < 0 and f_head[u, 1] < 0
                        and (US[u, NCLOSING] == 0 or no_requests_mode)):
                    na = c
                    stopped = True
                    break
                # only write-backs left (or none): stop from ``hard`` on, and skip no idle or blocked cycles past it
                cap = lim
                if no_requests_mode and US[u, AWAITED] == 0:
                    if c >= hard:
                        na = c
                        stopped = True
                        if c < counts[4]:
                            counts[4] = c
                        break
                    cap = min(lim, hard)
                h0 = f_head[u, 0]
                h1 = f_head[u, 1]
                a0 = h0 >= 0 and r_arrive[h0] <= c
                a1 = h1 >= 0 and r_arrive[h1] <= c
                refresh_now = refresh_on and (US[u, REF_PENDING] != 0 or c >= US[u, REF_DUE])
                if empty and not refresh_now and not a0 and not a1 and US[u, NCLOSING] == 0:
                    na = BIG  # next cycle anything can arrive or refresh
                    if h0 >= 0 and r_arrive[h0] < na:
                        na = r_arrive[h0]
                    if h1 >= 0 and r_arrive[h1] < na:
                        na = r_arrive[h1]
                    if refresh_on and US[u, REF_DUE] < na:
                        na = US[u, REF_DUE]
                    nxt = min(cap, na)
                    occ_hist[u, 0] += nxt - c
                    if observing:
                        obs[u, 1] += nxt - c
                    if arb[u, DRAIN] != 0:
                        arb[u, DRAIN] = 0
                    c = nxt
                    continue
                acted = False
                wake = BIG
                # 1. refresh due
                if refresh_on and US[u, REF_PENDING] == 0 and c >= US[u, REF_DUE]:
                    US[u, REF_PENDING] = 1
                # 2. drain flag
                if arb[u, DRAIN] != 0 and not a1:
                    arb[u, DRAIN] = 0
                # 3. admissions
                for _k in range(P[P_ADM]):
                    h0 = f_head[u, 0]
                    h1 = f_head[u, 1]
                    t0 = r_arrive[h0] if h0 >= 0 and r_arrive[h0] <= c else -1  # arrival of the arrived head
                    t1 = r_arrive[h1] if h1 >= 0 and r_arrive[h1] <= c else -1
                    e0 = t0 >= 0 and _eligible(u, h0, RQ, US, Q, P)
                    e1 = t1 >= 0 and _eligible(u, h1, RQ, US, Q, P)
                    st = policy_choose(c, e0, e1, t0, t1, US[u, RQN] + US[u, WQN], arb[u, LAST_STREAM],
                                       arb[u, LAST_COMM], arb[u, DRAIN], arb[u, THRESHOLD], pp)
                    if st < 0:
                        break
                    r = f_head[u, st]
                    f_head[u, st] = r_next[r]
                    if r_next[r] < 0:
                        f_tail[u, st] = -1
                    r_admit[r] = c
                    RQ[F_SEQ, r] = US[u, SEQ]
                    US[u, SEQ] += 1
                    # eligibility kept same-line pairs out of different queues, so only a
                    # write/update can have dependencies: the queued writes to its line
                    qi = 0 if RQ[F_KIND, r] == 0 else 1
                    nd = 0
                    if qi == 1:
                        nd = count_line(u, 1, RQ[F_BANK, r], RQ[F_LINE, r], Q, NB, False)
                    enqueue(u, qi, r, nd, RQ, Q, qcnt)
                    US[u, RQN + qi] += 1
                    b = RQ[F_BANK, r]
                    if open_row[u, b] == RQ[F_ROW, r] and closing[u, b] == 0:
                        hits[u, qi, b] += 1
                    arb[u, LAST_STREAM] = st
                    if st == 1:
                        arb[u, LAST_COMM] = c
                    out[1, counts[1]] = r
                    counts[1] += 1
                    acted = True
                # wake-ups of admission: the next arrival at a FIFO head, and the policy's
                wake, t0 = _head_wake(f_head[u, 0], r_arrive, c, wake)
                wake, t1 = _head_wake(f_head[u, 1], r_arrive, c, wake)
                t = policy_wake(c, t0, t1, US[u, RQN] + US[u, WQN], arb[u, LAST_STREAM], arb[u, LAST_COMM],
                                arb[u, DRAIN], arb[u, THRESHOLD], pp)
                if t < wake:
                    wake = t
                # 4. write drain mode
                rqn = US[u, RQN]
                wqn = US[u, WQN]
                oldest_w = r_admit[Q[u, 1, Q[u, 1, S, QF_GN], QF_REQ]] if wqn > 0 else 0  # the oldest write's admission
                aged = wqn > 0 and c - oldest_w >= P[P_WLIM]
                dr, left = drain_decide(US[u, DRAINING], rqn, wqn, aged, US[u, DRAIN_LEFT], wcap, dp)
                US[u, DRAINING] = dr
                US[u, DRAIN_LEFT] = left
                if wqn > 0 and oldest_w + P[P_WLIM] < wake:
                    wake = oldest_w + P[P_WLIM]
                qi = US[u, DRAINING]  # the active queue
                ref_pending = US[u, REF_PENDING] != 0
                rb = US[u, REF_BANK] if ref_pending and per_bank else -1  # the bank a pending per-bank refresh holds
                col_off = ref_pending and not per_bank  # an all-bank refresh pending: no column command
                # 5. column bus (skipped while the channel-level column timing forbids every
                # command the active queue could issue: a lower bound on all of them). The oldest
                # entry that may issue is the oldest of each bank's oldest that may: whether an
                # entry may depends on its bank, its kind and its dependencies only, and a bank's
                # list is in admission order. Only a bank's row hits (hits[u, qi, b] of them; a
                # closing bank has none) are candidates. (Every bank's hits are visited only when
                # none may issue: then their ready cycles are the wake-up.)
                cmin = ready[u, 0, RD]
                if qi == 1:
                    cmin = ready[u, 0, WR] if ready[u, 0, WR] < ready[u, 0, UPD] else ready[u, 0, UPD]
                if not col_off and c < cmin:
                    if cmin < wake:
                        wake = cmin
                elif not col_off:
                    best = -1  # slot of the oldest entry that may issue
                    bseq = BIG
                    x = Q[u, qi, AS, QF_GN]
                    while x != AS:  # the banks with entries
                        b = x - S - 1
                        x = Q[u, qi, x, QF_GN]
                        left = hits[u, qi, b]
                        if left == 0 or b == rb:
                            continue
                        op = open_row[u, b]
                        bs = S + 1 + b
                        k = Q[u, qi, bs, QF_BN]
                        while left > 0 and k != bs:
                            if Q[u, qi, k, QF_ROW] == op:
                                left -= 1
                                if Q[u, qi, k, QF_NDEPS] == 0:
                                    t = _ready(u, b, b // bpg, RD + Q[u, qi, k, QF_KIND], nb0, ready, act_hist, US, faw)
                                    if c >= t:
                                        if Q[u, qi, k, QF_SEQ] < bseq:
                                            bseq = Q[u, qi, k, QF_SEQ]
                                            best = k
                                        break
                                    if t < wake:
                                        wake = t
                                    if qi == 0:  # reads: one command, no dependencies: none of the bank's may
                                        break
                            k = Q[u, qi, k, QF_BN]
                    if best >= 0:
                        k = best
                        b = Q[u, qi, k, QF_BANK]
                        cmd = RD + Q[u, qi, k, QF_KIND]
                        r = Q[u, qi, k, QF_REQ]
                        _issue(u, c, cmd, b, Q[u, qi, k, QF_ROW], P, LAT, nb0, ready, open_row, act_hist, US,
                               cmd_count, out_log, counts, hits, Q, closing)
                        RQ[F_ISSUE, r] = c
                        RQ[F_DONE, r] = c + (P[P_DONE_RD] if cmd == RD else P[P_DONE_WR])
                        if RQ[F_AWAITED, r] != 0:
                            US[u, AWAITED] -= 1
                        bus_busy[u] += tBL
                        if qi == 1:  # draining: the write-drain policy's counter
                            US[u, DRAIN_LEFT] -= 1
                        d = 0 if cmd == RD else 1
                        if US[u, LAST_DIR] >= 0 and d != US[u, LAST_DIR]:
                            turnarounds[u] += 1
                        US[u, LAST_DIR] = d
                        dequeue(u, qi, k, Q, qcnt)
                        US[u, RQN + qi] -= 1
                        hits[u, qi, b] -= 1
                        if page != OPEN and closes_row(page, hits[u, qi, b]):
                            closing[u, b] = 1  # its PRE issues on the row bus (page_policy)
                            US[u, NCLOSING] += 1
                            hits[u, 0, b] = 0
                            hits[u, 1, b] = 0
                        if qi == 1:  # only writes/updates have dependants: the younger same-line writes
                            # (all the queued ones: it had no older one left), in its bank's list
                            line = RQ[F_LINE, r]
                            bs = S + 1 + b
                            k = Q[u, 1, bs, QF_BN]
                            while k != bs:
                                if Q[u, 1, k, QF_LINE] == line:
                                    Q[u, 1, k, QF_NDEPS] -= 1
                                    RQ[F_NDEPS, Q[u, 1, k, QF_REQ]] -= 1
                                k = Q[u, 1, k, QF_BN]
                        k = counts[0]
                        out[0, k] = r
                        out[O_BATCH, k] = RQ[F_BATCH, r]  # the issue record (bookkeeping.O_*)
                        out[O_DONE, k] = RQ[F_DONE, r]
                        out[O_ARRIVE, k] = r_arrive[r]
                        out[O_KIND, k] = RQ[F_KIND, r]
                        out[O_STREAM, k] = RQ[F_STREAM, r]
                        out[O_SOURCE, k] = RQ[F_SOURCE, r]
                        out[O_CLASS, k] = RQ[F_CLASS, r]
                        counts[0] = k + 1
                        acted = True
                # 6. row bus
                if col_off:
                    any_open = False
                    for b in range(NB):
                        if open_row[u, b] >= 0:
                            any_open = True
                            t = _ready(u, b, b // bpg, PRE, nb0, ready, act_hist, US, faw)
                            if c >= t:
                                _issue(u, c, PRE, b, open_row[u, b], P, LAT, nb0, ready, open_row, act_hist, US,
                                       cmd_count, out_log, counts, hits, Q, closing)
                                acted = True
                                break
                            if t < wake:
                                wake = t
                    if not any_open:
                        t = ready[u, 0, REF]
                        if c >= t:
                            _issue(u, c, REF, -1, -1, P, LAT, nb0, ready, open_row, act_hist, US, cmd_count, out_log,
                                   counts, hits, Q, closing)
                            US[u, REF_PENDING] = 0
                            US[u, REF_DUE] += P[P_TREFI]
                            acted = True
                        elif t < wake:
                            wake = t
                else:
                    if refresh_on and US[u, REF_DUE] < wake:
                        wake = US[u, REF_DUE]
                    closed_one = False  # a row command was issued this cycle
                    if rb >= 0:  # per-bank refresh: PRE its bank, or REF it once closed, when that may issue
                        if open_row[u, rb] >= 0:
                            t = _ready(u, rb, rb // bpg, PRE, nb0, ready, act_hist, US, faw)
                            if c >= t:
                                _issue(u, c, PRE, rb, open_row[u, rb], P, LAT, nb0, ready, open_row, act_hist, US,
                                       cmd_count, out_log, counts, hits, Q, closing)
                                closed_one = True
                        else:
                            t = _ready(u, rb, rb // bpg, REF, nb0, ready, act_hist, US, faw)
                            if c >= t:
                                _issue(u, c, REF, rb, -1, P, LAT, nb0, ready, open_row, act_hist, US, cmd_count,
                                       out_log, counts, hits, Q, closing)
                                US[u, REF_PENDING] = 0
                                US[u, REF_DUE] += P[P_TREFI]
                                US[u, REF_BANK] = (rb + 1) % NB
                                closed_one = True
                        if closed_one:
                            acted = True
                        elif t < wake:
                            wake = t
                    # closing banks first: the lowest one whose PRE is ready
                    if US[u, NCLOSING] > 0 and not closed_one:
                        for b in range(NB):
                            if closing[u, b] == 0:
                                continue
                            t = _ready(u, b, b // bpg, PRE, nb0, ready, act_hist, US, faw)
                            if c >= t:
                                _issue(u, c, PRE, b, open_row[u, b], P, LAT, nb0, ready, open_row, act_hist, US,
                                       cmd_count, out_log, counts, hits, Q, closing)
                                acted = True
                                closed_one = True
                                break
                            if t < wake:
                                wake = t
                    # Only an entry that misses its bank's open row may act (ACT a closed bank, PRE an
                    # open one that no entry of the queue hits), and whether it may depends on its bank
                    # alone; in such a bank every entry misses, so the bank's oldest is its candidate,
                    # and the oldest candidate of a bank that may act acts.
                    best = -1  # slot of the entry that acts
                    bseq = BIG
                    x = AS if closed_one else Q[u, qi, AS, QF_GN]
                    while x != AS:  # the banks with entries
                        b = x - S - 1
                        x = Q[u, qi, x, QF_GN]
                        if qcnt[u, qi, b] == hits[u, qi, b] or closing[u, b] != 0 or b == rb:
                            continue
                        if open_row[u, b] < 0:
                            t = _ready(u, b, b // bpg, ACT, nb0, ready, act_hist, US, faw)
                        elif hits[u, qi, b] > 0:
                            continue
                        else:
                            t = _ready(u, b, b // bpg, PRE, nb0, ready, act_hist, US, faw)
                        if c >= t:
                            k = Q[u, qi, S + 1 + b, QF_BN]
                            if Q[u, qi, k, QF_SEQ] < bseq:
                                bseq = Q[u, qi, k, QF_SEQ]
                                best = k
                        elif t < wake:
                            wake = t
                    if best >= 0:
                        k = best
                        b = Q[u, qi, k, QF_BANK]
                        op = open_row[u, b]
                        cmd = ACT if op < 0 else PRE
                        r = Q[u, qi, k, QF_REQ]
                        _issue(u, c, cmd, b, Q[u, qi, k, QF_ROW] if cmd == ACT else op, P, LAT, nb0, ready,
                               open_row, act_hist, US, cmd_count, out_log, counts, hits, Q, closing)
                        if cmd == PRE:
                            RQ[F_CLASS, r] = 2
                        elif RQ[F_CLASS, r] != 2:
                            RQ[F_CLASS, r] = 1
                        acted = True
                # 7. occupancy; skip ahead when nothing happened
                occ = US[u, RQN] + US[u, WQN]
                step = 1
                na = c + 1
                if not acted:
                    step = wake - c
                    if step < 1:
                        step = 1
                    na = c + step  # before clipping to lim: nothing can happen earlier
                    if c + step > cap:
                        step = cap - c
                occ_hist[u, occ] += step
                if observing:
                    obs[u, 0] += occ * step
                    obs[u, 1] += step
                c += step
            US[u, CYC] = c
            US[u, NEXT] = na if na > c else c
            if not stopped and c < until:
                active = True
                if US[u, NEXT] < lim_next:
                    lim_next = US[u, NEXT]
        if lim_next < lim:
            lim_next = lim
    lb = BIG
    for u in range(U):
        if US[u, NEXT] < lb:
            lb = US[u, NEXT]
    counts[3] = lb  # min over units of NEXT (FastController.next_lb)
