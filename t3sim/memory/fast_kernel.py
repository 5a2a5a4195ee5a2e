"""The numba kernel of the fast memory controller (see :mod:`t3sim.memory.controller_fast`).

Pure compiled functions over flat numpy state: timing readiness, command
issue, request eligibility, stream arbitration and the per-unit cycle loop
:func:`run_kernel`. Split from the Python wrapper so each module stays small.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from t3sim.memory import timing as T

# unit state columns
CYC, DRAINING, REF_DUE, REF_PENDING, SEQ, LAST_DIR, RQN, WQN, ACTPOS, NEXT, NUS = range(11)
# parameters
(P_NB, P_BPG, P_RQ, P_WQ, P_HI, P_LO, P_WLIM, P_ADM, P_TREFI, P_POLICY, P_STARVE, P_TBL, P_DONE_RD,
 P_DONE_WR, P_FAW, P_FAWN, P_OBSERVING, P_STOP_IDLE, P_LOG, P_REFRESH_ON, NP) = range(21)
ACT, PRE, RD, WR, UPD, REF = T.ACT, T.PRE, T.RD, T.WR, T.UPD, T.REF
BIG = np.int64(1) << 60


@nb.njit(cache=True, inline="always")
def _ready(u, bank, cmd, bpg, chan_ready, bg_ready, bank_ready, act_hist, US, faw, fawn):
    t = chan_ready[u, cmd]
    x = bg_ready[u, bank // bpg, cmd]
    if x > t:
        t = x
    x = bank_ready[u, bank, cmd]
    if x > t:
        t = x
    if cmd == ACT:
        oldest = act_hist[u, US[u, ACTPOS]]
        if oldest >= 0 and oldest + faw > t:
            t = oldest + faw
    return t


@nb.njit(cache=True)
def _issue(u, c, cmd, bank, row, P, LAT, chan_ready, bg_ready, bank_ready, open_row, act_hist, US, cmd_count,
           out_log, counts, hits, rq, wq, r_bank, r_row):
    bpg = P[P_BPG]
    for n in range(6):
        v = LAT[0, cmd, n]
        if v >= 0 and c + v > chan_ready[u, n]:
            chan_ready[u, n] = c + v
        if bank >= 0:
            v = LAT[1, cmd, n]
            if v >= 0 and c + v > bg_ready[u, bank // bpg, n]:
                bg_ready[u, bank // bpg, n] = c + v
            v = LAT[2, cmd, n]
            if v >= 0 and c + v > bank_ready[u, bank, n]:
                bank_ready[u, bank, n] = c + v
    if cmd == ACT:
        act_hist[u, US[u, ACTPOS]] = c
        US[u, ACTPOS] = (US[u, ACTPOS] + 1) % P[P_FAWN]
        open_row[u, bank] = row
        n0 = 0
        for j in range(US[u, RQN]):
            x = rq[u, j]
            if r_bank[x] == bank and r_row[x] == row:
                n0 += 1
        n1 = 0
        for j in range(US[u, WQN]):
            x = wq[u, j]
            if r_bank[x] == bank and r_row[x] == row:
                n1 += 1
        hits[u, 0, bank] = n0
        hits[u, 1, bank] = n1
    elif cmd == PRE:
        open_row[u, bank] = -1
        hits[u, 0, bank] = 0
        hits[u, 1, bank] = 0
    cmd_count[u, cmd] += 1
    if P[P_LOG]:
        k = counts[2]
        out_log[k, 0] = c
        out_log[k, 1] = u
        out_log[k, 2] = cmd
        out_log[k, 3] = bank
        out_log[k, 4] = row
        counts[2] = k + 1


@nb.njit(cache=True)
def _eligible(u, h, r_kind, r_line, US, rq, wq, P):
    """Room in the request's queue and no same-line request in the other queue."""
    line = r_line[h]
    if r_kind[h] == 0:
        if US[u, RQN] >= P[P_RQ]:
            return False
        for j in range(US[u, WQN]):
            if r_line[wq[u, j]] == line:
                return False
        return True
    if US[u, WQN] >= P[P_WQ]:
        return False
    for j in range(US[u, RQN]):
        if r_line[rq[u, j]] == line:
            return False
    return True


@nb.njit(cache=True, inline="always")
def _choose(code, c, e0, e1, comm_arrival, occ, last_stream, last_comm, drain, thr, starve):
    if code == 0:  # round_robin
        if e0 and e1:
            return 0 if last_stream == 1 else (1 if last_stream == 0 else 0)
        if e0:
            return 0
        if e1:
            return 1
        return -1
    if code == 1:  # compute_first
        if e0:
            return 0
        if e1:
            return 1
        return -1
    # t3_mca
    if e1:
        since = last_comm if last_comm > comm_arrival else comm_arrival
        if drain != 0 or c - since >= starve:
            return 1
    if e0:
        return 0
    if e1 and (thr < 0 or occ < thr):
        return 1
    return -1


@nb.njit(cache=True)
def run_kernel(until, P, LAT, r_bank, r_row, r_line, r_kind, r_arrive, r_admit, r_issue, r_done, r_class, r_next,
               r_seq, r_ndeps, f_head, f_tail, arb, obs, US, chan_ready, bg_ready, bank_ready, open_row, act_hist,
               rq, wq, hits, occ_hist, bus_busy, turnarounds, cmd_count, out_issued, out_admitted, out_log,
               counts):  # pragma: no cover - compiled
    U = US.shape[0]
    NB = P[P_NB]
    bpg = P[P_BPG]
    faw = P[P_FAW]
    fawn = P[P_FAWN]
    tBL = P[P_TBL]
    refresh_on = P[P_REFRESH_ON] != 0
    observing = P[P_OBSERVING] != 0
    code = P[P_POLICY]
    starve = P[P_STARVE]
    for u in range(U):
        c = US[u, CYC]
        if c >= until:
            continue
        na = c  # earliest cycle at which unit u could act next (see NEXT)
        while c < until:
            rqn = US[u, RQN]
            wqn = US[u, WQN]
            empty = rqn == 0 and wqn == 0
            if P[P_STOP_IDLE] != 0 and empty and f_head[u, 0] < 0 and f_head[u, 1] < 0:
                na = c
                break
            h0 = f_head[u, 0]
            h1 = f_head[u, 1]
            a0 = h0 >= 0 and r_arrive[h0] <= c
            a1 = h1 >= 0 and r_arrive[h1] <= c
            refresh_now = refresh_on and (US[u, REF_PENDING] != 0 or c >= US[u, REF_DUE])
            if empty and not refresh_now and not a0 and not a1:
                na = BIG  # next cycle anything can arrive or refresh
                if h0 >= 0 and r_arrive[h0] < na:
                    na = r_arrive[h0]
                if h1 >= 0 and r_arrive[h1] < na:
                    na = r_arrive[h1]
                if refresh_on and US[u, REF_DUE] < na:
                    na = US[u, REF_DUE]
                nxt = min(until, na)
                occ_hist[u, 0] += nxt - c
                if observing:
                    obs[u, 1] += nxt - c
                if arb[u, 2] != 0:
                    arb[u, 2] = 0
                c = nxt
                continue
            acted = False
            wake = BIG
            # 1. refresh due
            if refresh_on and US[u, REF_PENDING] == 0 and c >= US[u, REF_DUE]:
                US[u, REF_PENDING] = 1
            # 2. drain flag
            if arb[u, 2] != 0 and not a1:
                arb[u, 2] = 0
            # 3. admissions
            for _k in range(P[P_ADM]):
                h0 = f_head[u, 0]
                h1 = f_head[u, 1]
                a0 = h0 >= 0 and r_arrive[h0] <= c
                a1 = h1 >= 0 and r_arrive[h1] <= c
                e0 = a0 and _eligible(u, h0, r_kind, r_line, US, rq, wq, P)
                e1 = a1 and _eligible(u, h1, r_kind, r_line, US, rq, wq, P)
                st = _choose(code, c, e0, e1, r_arrive[h1] if h1 >= 0 else -1, US[u, RQN] + US[u, WQN],
                             arb[u, 0], arb[u, 1], arb[u, 2], arb[u, 3], starve)
                if st < 0:
                    break
                r = f_head[u, st]
                f_head[u, st] = r_next[r]
                if r_next[r] < 0:
                    f_tail[u, st] = -1
                r_admit[r] = c
                r_seq[r] = US[u, SEQ]
                US[u, SEQ] += 1
                # eligibility kept same-line pairs out of different queues, so only a
                # write/update can have dependencies: the queued writes to its line
                line = r_line[r]
                b = r_bank[r]
                if r_kind[r] == 0:
                    r_ndeps[r] = 0
                    rq[u, US[u, RQN]] = r
                    US[u, RQN] += 1
                    if open_row[u, b] == r_row[r]:
                        hits[u, 0, b] += 1
                else:
                    nd = 0
                    for j in range(US[u, WQN]):
                        if r_line[wq[u, j]] == line:
                            nd += 1
                    r_ndeps[r] = nd
                    wq[u, US[u, WQN]] = r
                    US[u, WQN] += 1
                    if open_row[u, b] == r_row[r]:
                        hits[u, 1, b] += 1
                arb[u, 0] = st
                if st == 1:
                    arb[u, 1] = c
                out_admitted[counts[1]] = r
                counts[1] += 1
                acted = True
            # wake-ups of admission
            h0 = f_head[u, 0]
            h1 = f_head[u, 1]
            if h0 >= 0 and r_arrive[h0] > c and r_arrive[h0] < wake:
                wake = r_arrive[h0]
            if h1 >= 0:
                if r_arrive[h1] > c:
                    if r_arrive[h1] < wake:
                        wake = r_arrive[h1]
                elif code == 2:
                    since = arb[u, 1] if arb[u, 1] > r_arrive[h1] else r_arrive[h1]
                    if since + starve < wake:
                        wake = since + starve
            # 4. write drain mode
            rqn = US[u, RQN]
            wqn = US[u, WQN]
            aged = wqn > 0 and c - r_admit[wq[u, 0]] >= P[P_WLIM]
            if US[u, DRAINING] != 0:
                if wqn == 0 or (rqn > 0 and wqn <= P[P_LO] and not aged):
                    US[u, DRAINING] = 0
            elif wqn >= P[P_HI] or (rqn == 0 and wqn > 0) or aged:
                US[u, DRAINING] = 1
            if wqn > 0 and r_admit[wq[u, 0]] + P[P_WLIM] < wake:
                wake = r_admit[wq[u, 0]] + P[P_WLIM]
            draining = US[u, DRAINING] != 0
            qn = wqn if draining else rqn
            ref_pending = US[u, REF_PENDING] != 0
            # 5. column bus (skipped while the channel-level column timing forbids every
            # command the active queue could issue: a lower bound on all of them)
            cmin = chan_ready[u, RD]
            if draining:
                cmin = chan_ready[u, WR] if chan_ready[u, WR] < chan_ready[u, UPD] else chan_ready[u, UPD]
            if not ref_pending and c < cmin:
                if cmin < wake:
                    wake = cmin
            elif not ref_pending:
                for j in range(qn):
                    r = wq[u, j] if draining else rq[u, j]
                    b = r_bank[r]
                    if r_ndeps[r] != 0 or open_row[u, b] != r_row[r]:
                        continue
                    cmd = RD + r_kind[r]
                    t = _ready(u, b, cmd, bpg, chan_ready, bg_ready, bank_ready, act_hist, US, faw, fawn)
                    if c >= t:
                        _issue(u, c, cmd, b, r_row[r], P, LAT, chan_ready, bg_ready, bank_ready, open_row, act_hist,
                               US, cmd_count, out_log, counts, hits, rq, wq, r_bank, r_row)
                        r_issue[r] = c
                        r_done[r] = c + (P[P_DONE_RD] if cmd == RD else P[P_DONE_WR])
                        bus_busy[u] += tBL
                        d = 0 if cmd == RD else 1
                        if US[u, LAST_DIR] >= 0 and d != US[u, LAST_DIR]:
                            turnarounds[u] += 1
                        US[u, LAST_DIR] = d
                        # remove from its queue
                        if draining:
                            for k in range(j, wqn - 1):
                                wq[u, k] = wq[u, k + 1]
                            US[u, WQN] -= 1
                        else:
                            for k in range(j, rqn - 1):
                                rq[u, k] = rq[u, k + 1]
                            US[u, RQN] -= 1
                        hits[u, 1 if draining else 0, b] -= 1
                        if cmd != RD:  # only writes/updates have dependants (younger same-line writes)
                            line = r_line[r]
                            seq = r_seq[r]
                            for k in range(US[u, WQN]):
                                x = wq[u, k]
                                if r_line[x] == line and r_seq[x] > seq:
                                    r_ndeps[x] -= 1
                        out_issued[counts[0]] = r
                        counts[0] += 1
                        acted = True
                        break
                    if t < wake:
                        wake = t
            # 6. row bus
            rqn = US[u, RQN]
            wqn = US[u, WQN]
            qn = wqn if draining else rqn
            if ref_pending:
                any_open = False
                for b in range(NB):
                    if open_row[u, b] >= 0:
                        any_open = True
                        t = _ready(u, b, PRE, bpg, chan_ready, bg_ready, bank_ready, act_hist, US, faw, fawn)
                        if c >= t:
                            _issue(u, c, PRE, b, open_row[u, b], P, LAT, chan_ready, bg_ready, bank_ready, open_row,
                                   act_hist, US, cmd_count, out_log, counts, hits, rq, wq, r_bank, r_row)
                            acted = True
                            break
                        if t < wake:
                            wake = t
                if not any_open:
                    t = chan_ready[u, REF]
                    if c >= t:
                        _issue(u, c, REF, -1, -1, P, LAT, chan_ready, bg_ready, bank_ready, open_row, act_hist, US,
                               cmd_count, out_log, counts, hits, rq, wq, r_bank, r_row)
                        US[u, REF_PENDING] = 0
                        US[u, REF_DUE] += P[P_TREFI]
                        acted = True
                    elif t < wake:
                        wake = t
            else:
                if refresh_on and US[u, REF_DUE] < wake:
                    wake = US[u, REF_DUE]
                qi = 1 if draining else 0
                nonhit = qn
                for b in range(NB):
                    nonhit -= hits[u, qi, b]
                for j in range(qn if nonhit > 0 else 0):
                    r = wq[u, j] if draining else rq[u, j]
                    b = r_bank[r]
                    op = open_row[u, b]
                    if op == r_row[r]:
                        continue
                    if op < 0:
                        t = _ready(u, b, ACT, bpg, chan_ready, bg_ready, bank_ready, act_hist, US, faw, fawn)
                        if c >= t:
                            _issue(u, c, ACT, b, r_row[r], P, LAT, chan_ready, bg_ready, bank_ready, open_row,
                                   act_hist, US, cmd_count, out_log, counts, hits, rq, wq, r_bank, r_row)
                            if r_class[r] != 2:
                                r_class[r] = 1
                            acted = True
                            break
                        if t < wake:
                            wake = t
                    else:
                        if hits[u, 1 if draining else 0, b] > 0:
                            continue
                        t = _ready(u, b, PRE, bpg, chan_ready, bg_ready, bank_ready, act_hist, US, faw, fawn)
                        if c >= t:
                            _issue(u, c, PRE, b, op, P, LAT, chan_ready, bg_ready, bank_ready, open_row, act_hist,
                                   US, cmd_count, out_log, counts, hits, rq, wq, r_bank, r_row)
                            r_class[r] = 2
                            acted = True
                            break
                        if t < wake:
                            wake = t
            # 7. occupancy; skip ahead when nothing happened
            occ = US[u, RQN] + US[u, WQN]
            step = 1
            na = c + 1
            if not acted:
                step = wake - c
                if step < 1:
                    step = 1
                na = c + step  # before clipping to until: nothing can happen earlier
                if c + step > until:
                    step = until - c
            occ_hist[u, occ] += step
            if observing:
                obs[u, 0] += occ * step
                obs[u, 1] += step
            c += step
        US[u, CYC] = c
        US[u, NEXT] = na if na > c else c
    lb = BIG
    for u in range(U):
        if US[u, NEXT] < lb:
            lb = US[u, NEXT]
    counts[3] = lb  # min over units of NEXT (FastController.next_lb)


