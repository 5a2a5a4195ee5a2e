"""The compiled event loop of a windowed GEMM (:mod:`t3sim.window.gemm_window`).

One call advances a GEMM kernel's WG slots, their loads through the L2 and its fill table (the
MSHR merge), the DRAM submissions, the memory controllers and the completion dispatch together,
event by event, exactly as the simpy processes of :class:`~t3sim.compute.gemm_kernel.GemmKernel`
and :class:`~t3sim.compute.memhier.MemoryHierarchy` would, until the next event of the simpy heap
(the *limit*) or until the kernel ends.

Exactness. simpy orders events by ``(tick, priority, eid)``, ``eid`` a counter shared by all
events; this loop keeps its own heap of the same keys and takes its eids from the same counter
(the caller hands it over), so compiled and simpy events interleave in one total order. Each
event kind mirrors one simpy event of the reference path and runs what that event's callbacks
run, in their order:

* ``EV_INIT``: a slot process's ``Initialize`` (URGENT): it yields the launch timeout;
* ``EV_TIMEOUT``: a slot's launch or k-group math timeout: the slot resumes;
* ``EV_JOIN``: a ``MemoryHierarchy._join`` output event: the WG waiting on a load resumes, or the
  kernel counts a completed store; with an ``AccumulatingOutput`` sink (``C[C_ACC]``), a WG's read of its C
  lines fires its write, then the WG resumes, and the write's event succeeds the kernel's ``written`` event,
  which fires one event later (both as ``AccumulatingOutput.store``'s callbacks do);
* ``EV_DISPATCH``: the :class:`~t3sim.sim.engine.Dispatcher` entry of a completion tick
  (URGENT): the batches due then fire in batch-id order (fill-table entry dropped, tracked
  write counted, a counted write's accesses uncounted and the accesses waiting for room woken, then the joins
  waiting on it, in attachment order);
* ``EV_ROOM``: the room event of an L2 access whose writes met a full write queue
  (``MemoryHierarchy``'s write queue bound, ``C[C_WQLIM]`` > 0): its join counts it, then the WG whose posted store
  it was resumes (``CachedLocalOutput.store``'s ``retire``).

The pump is not an event: before each event the memory is advanced (as ``MemoryPort``'s pump
step would, at ``MemorySystem.next_event_tick``) until every completion up to the event's tick
is known; results do not depend on the cadence (the completion order is canonical). With ``C_AHEAD``
(the port's lookahead) a step due at tick ``nxt`` runs to ``nxt + frontend``, a unit with only
write-backs left stopping at ``nxt`` (``MemorySystem.advance``; ``W_LAG`` is ``FastController.lag``).

A slot is a state machine over the reference generator's ``yield`` points (``PC_*``). All state
lives in arrays the caller owns; the call returns a reason (``R_*``) and can be re-entered.
"""

from __future__ import annotations

import numba
import numpy as np

from t3sim.cache.fast import access_uniform
from t3sim.compute.fast import l2_read, record_fills, write_plan, writeback_groups
from t3sim.memory.fast import P_HARD, P_STOP_IDLE, SC_A0, STOP_NO_REQUESTS, fill_requests
from t3sim.memory.fast import pump_step  # rebound per arbitration policy (gemm_window.kernel)
from t3sim.sim.clock import cycle_start_tick
from t3sim.window.window_heap import (  # noqa: F401 (state indices: also this module's API)
    EV_DISPATCH, EV_INIT, EV_JOIN, EV_ROOM, EV_TIMEOUT, NORMAL, URGENT, _ch_pop, next_cycle, pop, push, register_done,
    W_EID, W_NOW, W_HN, W_CHN, W_NEXT, W_LIVE, W_WLEFT, W_RETIRED, W_DONE, W_END, W_LOADREQ, W_PROGRESS, W_BEATS,
    W_NB, W_NFILL, W_TAG, W_TRACKED, W_LIVEB, W_N, W_OUT, W_OUTW, W_FRONTIER, W_KAT, W_LASTSUB, W_NEXTLB, W_PUMPS,
    W_ARG0, W_ARG1, W_ARG2, W_JFREE, W_CBFREE, W_JTOP, W_CBTOP, W_ACCLINES, W_LAG, W_WQOUT, W_RMH, W_RMT, W_WQSTALLS,
    W_WQPEAK, NW)
from t3sim.window.window_joins import (  # noqa: F401 (state layout: also this module's API)
    B_CBH, B_CBT, B_COUNT, B_FILL, B_FIRED, B_FIRST, B_TRACK, B_WQ, BIG, J_EXTRA, J_KIND, J_N, J_RNEXT, J_RWG, J_STATE,
    J_T, J_WAITER, JOIN_ACC, JOIN_ACCW, JOIN_LOAD, JOIN_STORE, NB, NJ, PC_AFTER_ACC, PC_AFTER_LOAD, PC_AFTER_MATH,
    PC_AFTER_ROOM, PC_START, R_DONE, R_GROW, R_IDLE, R_LIMIT, R_STATS, SL_CU, SL_GI, SL_PC, SL_RING, SL_SEQ, SL_TM,
    SL_TN, SL_WAIT, _attach, _free_join, _new_join, _room, fire_tick,
    C_S, C_P, C_NG, C_G, C_STEPS, C_NWGS, C_TILES_N, C_LAUNCH, C_CU_F, C_L2_F, C_MEM_F, C_FRONTEND, C_MIN_DONE,
    C_READ_DONE, C_LAZY, C_L2_LAT, C_CAT, C_SCAT, C_ACCESS_B, C_LINE_B, C_SECTOR_B, C_REQ_B, C_FLMASK, C_SLOTS,
    C_BID0, C_TAG0, C_BPG, C_XOR, C_PCH, C_READ, C_WRITE, C_COMPUTE, C_MARGIN_REQ, C_MARGIN_B, C_STCAT, C_STSRC,
    C_R, C_ACC, C_AHEAD, C_WQLIM, C_PORT, NC)


@numba.njit(cache=True)
def _submit(addrs, kind, source, W, C, BI, RQ, b_done, b_rem, sc, radix, pos, chash, f_head, f_tail, unit_next,
            noid, awaited, unit_awaited):  # pragma: no cover - compiled
    """``MemorySystem.submit`` of a non-empty batch at ``W[W_NOW]`` (the caller checked capacity; ``awaited``: 0 for
    a write-back)."""
    tick = W[W_NOW]
    W[W_LASTSUB] = tick
    arrive = next_cycle(tick + C[C_FRONTEND], C[C_MEM_F])
    bid = W[W_NB]
    W[W_NB] = bid + 1
    n = addrs.shape[0]
    b = bid - C[C_BID0]
    BI[b, B_FILL], BI[b, B_TRACK], BI[b, B_FIRED], BI[b, B_CBH], BI[b, B_CBT], BI[b, B_WQ] = -1, 0, 0, -1, -1, 0
    BI[b, B_FIRST], BI[b, B_COUNT] = W[W_N], n
    b_rem[bid] = n
    b_done[bid] = arrive
    if sc[SC_A0] < 0:
        sc[SC_A0] = arrive
    fill_requests(RQ, W[W_N], addrs, C[C_ACCESS_B], kind, C[C_COMPUTE], source, bid, noid, noid, arrive, radix, pos,
                  C[C_BPG], C[C_XOR] != 0, chash, f_head, f_tail, unit_next, awaited, unit_awaited)
    W[W_N] += n
    W[W_OUT] += n
    if kind != C[C_READ]:
        W[W_OUTW] += n
    if arrive < W[W_NEXTLB]:
        W[W_NEXTLB] = arrive
    W[W_LIVEB] += 1
    return bid


@numba.njit(cache=True)
def _writebacks(E, W, C, BI, TR, cat_src, SA):  # pragma: no cover - compiled
    """``MemoryHierarchy._writebacks``: per owner (ascending), the accesses of its lines' dirty sectors as one
    tracked DRAM write batch; returns the accesses counted against the write queue bound (0 without one)."""
    if E.shape[1] == 0:
        return 0
    RQ, b_done, b_rem, sc, radix, pos, chash, f_head, f_tail, unit_next, noid, unit_awaited = SA
    srcs, off, acc = writeback_groups(E, C[C_SECTOR_B], C[C_LINE_B] // C[C_SECTOR_B], C[C_ACCESS_B])
    nwb = 0
    for g in range(srcs.shape[0]):
        s = srcs[g]
        addrs = acc[off[g]:off[g + 1]]
        if addrs.shape[0]:
            bid = _submit(addrs, C[C_WRITE], cat_src[s], W, C, BI, RQ, b_done, b_rem, sc, radix, pos, chash, f_head,
                          f_tail, unit_next, noid, 0, unit_awaited)
            BI[bid - C[C_BID0], B_TRACK] = 1
            W[W_TRACKED] += 1
            TR[s, 1] += C[C_ACCESS_B] * addrs.shape[0]
            if C[C_WQLIM] > 0:
                BI[bid - C[C_BID0], B_WQ] = addrs.shape[0]
                W[W_WQOUT] += addrs.shape[0]
                nwb += addrs.shape[0]
    return nwb


@numba.njit(cache=True)
def _read(addrs, jkind, cat, scat, at_least, W, C, H, BI, CB, J, TB, TR, cat_src, SA, LS):  # pragma: no cover - compiled
    """``MemoryHierarchy.read`` of batch ``addrs`` (L2 category ``cat``, DRAM source ``scat``) now, its data back no
    sooner than tick ``at_least`` (-1: no bound); returns the id of its done event's join (of kind ``jkind``)."""
    S, G, V, occ, cnt, fl_line, fl_tag = LS
    RQ, b_done, b_rem, sc, radix, pos, chash, f_head, f_tail, unit_next, noid, unit_awaited = SA
    now = W[W_NOW]
    ready, tags, req, E = l2_read(addrs, False, cat, next_cycle(now, C[C_L2_F]), S, G, V, occ, cnt, fl_line,
                                   fl_tag, C[C_FLMASK], W[W_NFILL] > 0, C[C_LINE_B], C[C_SECTOR_B], C[C_ACCESS_B])
    nwb = _writebacks(E, W, C, BI, TR, cat_src, SA)
    k = _new_join(J, W, jkind, max(ready if ready >= 0 else now, at_least), C[C_L2_LAT])
    for t in tags:
        ti = t - C[C_TAG0]
        if ti >= 0:
            bid = TB[ti]
            if BI[bid - C[C_BID0], B_FIRED] == 0:
                _attach(BI, CB, W, C, bid, k, J)
    if req.shape[0]:
        bid = _submit(req, C[C_READ], scat, W, C, BI, RQ, b_done, b_rem, sc, radix, pos, chash, f_head, f_tail,
                      unit_next, noid, 1, unit_awaited)
        TR[cat, 0] += C[C_ACCESS_B] * req.shape[0]
        tag = W[W_TAG]
        W[W_TAG] = tag + 1
        TB[tag - C[C_TAG0]] = bid
        BI[bid - C[C_BID0], B_FILL] = tag
        W[W_NFILL] += 1
        record_fills(req, fl_line, fl_tag, C[C_FLMASK], tag)
        _attach(BI, CB, W, C, bid, k, J)
    _room(k, nwb, W, C, J)
    if J[k, J_N] == 0:
        J[k, J_STATE] = 1
        push(H, W, max(J[k, J_T], now), NORMAL, EV_JOIN, k)
    return k


@numba.njit(cache=True)
def _store(a, jkind, W, C, H, BI, CB, J, TR, cat_src, SA, LS):  # pragma: no cover - compiled
    """``MemoryHierarchy.write`` of the tile's requests ``a`` now (cached), its done event a join of kind
    ``jkind``: ``CachedLocalOutput.store`` (``JOIN_STORE``: the kernel then waits for it,
    ``GemmKernel._track_own_write``) or an ``AccumulatingOutput``'s write once its read is back (``JOIN_ACCW``;
    the kernel counted the write when the WG stored). Returns ``k`` if the write waits for write queue room (the
    storing WG of a ``JOIN_STORE`` waits for it too), else -1."""
    S, G, V, occ, cnt, fl_line, fl_tag = LS
    RQ, b_done, b_rem, sc, radix, pos, chash, f_head, f_tail, unit_next, noid, unit_awaited = SA
    now = W[W_NOW]
    R, E, _cyc = access_uniform(a, True, False, C[C_STCAT], C[C_REQ_B], next_cycle(now, C[C_L2_F]), S, G, V,
                                    occ, cnt)
    nwb = _writebacks(E, W, C, BI, TR, cat_src, SA)
    t, sel, sp = write_plan(a, R, C[C_REQ_B], C[C_ACCESS_B])
    nd = sel.shape[0]
    k = _new_join(J, W, jkind, t, 0)
    if nd:
        bid = _submit(sp, C[C_WRITE], C[C_STSRC], W, C, BI, RQ, b_done, b_rem, sc, radix, pos, chash, f_head, f_tail,
                      unit_next, noid, 1, unit_awaited)
        TR[C[C_STCAT], 1] += C[C_REQ_B] * nd
        BI[bid - C[C_BID0], B_TRACK] = 1
        W[W_TRACKED] += 1
        if C[C_WQLIM] > 0:  # a compute-stream DRAM write, counted against the write queue bound
            BI[bid - C[C_BID0], B_WQ] = sp.shape[0]
            W[W_WQOUT] += sp.shape[0]
            nwb += sp.shape[0]
        _attach(BI, CB, W, C, bid, k, J)
    waits = _room(k, nwb, W, C, J)
    if J[k, J_N] == 0:
        J[k, J_STATE] = 1
        push(H, W, max(t, now), NORMAL, EV_JOIN, k)
    if jkind == JOIN_STORE:
        W[W_WLEFT] += 1
    return k if waits else -1


@numba.njit(cache=True, _nrt=False)  # allocates nothing (window_heap says why)
def _maybe_end(W):  # pragma: no cover - compiled
    if W[W_RETIRED] and W[W_WLEFT] == 0 and not W[W_DONE]:
        W[W_DONE] = 1
        W[W_END] = W[W_NOW]


@numba.njit(cache=True)
def _load(j, g, W, C, H, SL, BI, CB, J, TB, TR, cat_src, SA, LS, KD):  # pragma: no cover - compiled
    """``GemmKernel._loads`` of k-group ``g`` of slot ``j``'s WG: its A and B slices in one read batch."""
    order, a_addr, a_off, b_addr, b_off, st_addr, st_off, mcyc, stage_left, stage_end, cu_active, scratch, port = KD
    ia = SL[j, SL_TM] * C[C_NG] + g
    ib = SL[j, SL_TN] * C[C_NG] + g
    na = a_off[ia + 1] - a_off[ia]
    nb = b_off[ib + 1] - b_off[ib]
    buf = scratch[: na + nb]
    buf[:na] = a_addr[a_off[ia]: a_off[ia + 1]]
    buf[na:] = b_addr[b_off[ib]: b_off[ib + 1]]
    W[W_LOADREQ] += na + nb
    at_least = -1
    if C[C_PORT]:  # MemoryHierarchy.cu_port_done: the CU's port from the L2 passes the batch after earlier ones
        cu = SL[j, SL_CU]
        f = C[C_CU_F]
        at_least = cycle_start_tick(next_cycle(max(W[W_NOW], port[cu]), f) + (-(-(na + nb) * C[C_REQ_B] // C[C_PORT])), f)
        port[cu] = at_least
    return _read(buf, JOIN_LOAD, C[C_CAT], C[C_SCAT], at_least, W, C, H, BI, CB, J, TB, TR, cat_src, SA, LS)


@numba.njit(cache=True)
def resume(j, pc, W, C, H, SL, BI, CB, J, TB, TR, cat_src, SA, LS, KD):  # pragma: no cover - compiled
    """Run slot ``j``'s process (``GemmKernel._slot``) from yield point ``pc`` until it waits again or ends."""
    order, a_addr, a_off, b_addr, b_off, st_addr, st_off, mcyc, stage_left, stage_end, cu_active, scratch, port = KD
    P = C[C_P]
    ng = C[C_NG]
    R = C[C_R]
    cu = SL[j, SL_CU]
    while True:
        if pc == PC_AFTER_ROOM:  # its posted store's write queue room came: the WG retires
            _retire_wg(SL[j, SL_SEQ], cu, W, C, cu_active, stage_left, stage_end)
            pc = PC_START
        if pc == PC_AFTER_ACC:  # an accumulating store's read of C is back: the WG retires
            _free_join(J, W, SL[j, SL_WAIT])
            SL[j, SL_WAIT] = -1
            _retire_wg(SL[j, SL_SEQ], cu, W, C, cu_active, stage_left, stage_end)
            pc = PC_START
        if pc == PC_START:  # a new WG (the slot's first after its launch, or the next one after a store)
            if W[W_NEXT] >= C[C_NWGS]:
                W[W_LIVE] -= 1  # the slot retires
                if W[W_LIVE] == 0:
                    W[W_RETIRED] = 1
                    _maybe_end(W)
                return
            seq = W[W_NEXT]
            W[W_NEXT] = seq + 1
            tile = order[seq]
            SL[j, SL_SEQ], SL[j, SL_TM], SL[j, SL_TN], SL[j, SL_GI] = seq, tile // C[C_TILES_N], tile % C[C_TILES_N], 0
            cu_active[cu] += 1
            for g in range(min(P, ng)):
                SL[j, SL_RING + g % R] = _load(j, g, W, C, H, SL, BI, CB, J, TB, TR, cat_src, SA, LS, KD)
            k = SL[j, SL_RING]
            if J[k, J_STATE] != 2:
                J[k, J_WAITER] = j
                SL[j, SL_PC], SL[j, SL_WAIT] = PC_AFTER_LOAD, k
                return
            _free_join(J, W, k)
            pc = PC_AFTER_LOAD
            SL[j, SL_WAIT] = -1
        if pc == PC_AFTER_LOAD:  # group gi's loads are in: its math starts
            if SL[j, SL_WAIT] >= 0:
                _free_join(J, W, SL[j, SL_WAIT])
                SL[j, SL_WAIT] = -1
            gi = SL[j, SL_GI]
            if gi + P < ng:
                SL[j, SL_RING + (gi + P) % R] = _load(j, gi + P, W, C, H, SL, BI, CB, J, TB, TR, cat_src, SA, LS, KD)
            cycles = mcyc[gi, cu_active[cu]]
            now = W[W_NOW]
            f = C[C_CU_F]
            push(H, W, cycle_start_tick(next_cycle(now, f) + cycles, f), NORMAL, EV_TIMEOUT, j)
            SL[j, SL_PC] = PC_AFTER_MATH
            return
        # PC_AFTER_MATH
        W[W_BEATS] += 1
        gi = SL[j, SL_GI]
        if gi + 1 < ng:
            SL[j, SL_GI] = gi + 1
            k = SL[j, SL_RING + (gi + 1) % R]
            if J[k, J_STATE] != 2:
                J[k, J_WAITER] = j
                SL[j, SL_PC], SL[j, SL_WAIT] = PC_AFTER_LOAD, k
                return
            _free_join(J, W, k)
            pc = PC_AFTER_LOAD
            continue
        tile = SL[j, SL_TM] * C[C_TILES_N] + SL[j, SL_TN]
        if C[C_ACC]:  # AccumulatingOutput.store: read C's lines; the kernel tracks the write to come; wait
            a = st_addr[st_off[tile]: st_off[tile + 1]]
            W[W_ACCLINES] += a.shape[0]
            W[W_WLEFT] += 1
            k = _read(a, JOIN_ACC, C[C_STCAT], C[C_STSRC], -1, W, C, H, BI, CB, J, TB, TR, cat_src, SA, LS)
            J[k, J_WAITER] = j
            SL[j, SL_PC], SL[j, SL_WAIT] = PC_AFTER_ACC, k
            return
        k = _store(st_addr[st_off[tile]: st_off[tile + 1]], JOIN_STORE, W, C, H, BI, CB, J, TR, cat_src, SA, LS)
        if k >= 0:  # CachedLocalOutput.store's retire: the write queue room
            J[k, J_RWG] = j
            SL[j, SL_PC] = PC_AFTER_ROOM
            return
        _retire_wg(SL[j, SL_SEQ], cu, W, C, cu_active, stage_left, stage_end)
        pc = PC_START


@numba.njit(cache=True, _nrt=False)  # allocates nothing (window_heap says why)
def _retire_wg(seq, cu, W, C, cu_active, stage_left, stage_end):  # pragma: no cover - compiled
    """After its store (``GemmKernel._slot``): WG ``seq`` leaves its CU's share, counts as progress and in its
    stage."""
    cu_active[cu] -= 1
    W[W_PROGRESS] += 1
    s = seq // C[C_SLOTS]
    stage_left[s] -= 1
    if stage_left[s] == 0:
        stage_end[s] = W[W_NOW]


def run_window(lim_t, lim_p, lim_e, budget, W, C, H, CH, SL, BI, CB, J, TB, TR, cat_src, SA, LS, KD, MP, MS, caps):
    """Process this window's events in order while they come before ``(lim_t, lim_p, lim_e)`` (the simpy
    heap's first key), at most ``budget`` of them (then ``R_LIMIT`` too: the caller re-arms the bridge, so
    progress reports and the watchdog see the window advance); returns a reason ``R_*`` (module doc). ``MP``: the memory controllers' arrays
    (``FastController.step``'s arguments), ``MS``: the statistics arrays; ``caps``: request, batch, heap,
    completion-heap, join and callback-node capacities (``R_GROW`` asks the caller for more)."""
    (P, LAT, RQ, f_head, f_tail, arb, obs, US, ready, open_row, act_hist, Q, hits, qcnt, closing, occ_hist, bus_busy,
     turnarounds, cmd_count, out, no_log, counts) = MP
    b_done, b_rem, cnt, rowcls, sc, bw, lat, bin_cycles = MS
    f = C[C_MEM_F]
    done_events = 0
    while True:
        if W[W_DONE]:
            return R_DONE
        # the pump: learn every completion up to the next event's tick (MemoryPort, module doc)
        ahead = C[C_AHEAD] != 0
        while W[W_OUT] > 0:
            # MemorySystem.next_event_tick: from the frontier, or from where a lookahead left a unit with only
            # write-backs, if earlier
            base = min(W[W_FRONTIER], W[W_LAG]) if ahead else W[W_FRONTIER]
            nxt = cycle_start_tick(base + (C[C_MIN_DONE] if W[W_OUTW] > 0 else C[C_READ_DONE]), f) - 1
            if W[W_HN] > 0 and nxt >= H[0, 0]:
                break
            if W[W_HN] + W[W_LIVEB] + 64 > caps[2] or W[W_CHN] + W[W_LIVEB] + 64 > caps[3]:
                return R_GROW
            if out.shape[1] < W[W_OUT]:
                return R_GROW
            if ahead:
                # the port's lookahead (MemoryPort._service at tick nxt: every event before nxt has run, so no
                # submission arrives before nxt + frontend); a lagging unit runs at least to cycle nxt
                until = max(next_cycle(nxt + C[C_FRONTEND], f), W[W_FRONTIER])
            else:
                until = next_cycle(nxt, f)
                if until <= W[W_FRONTIER]:
                    break  # cannot happen: nxt lies past the frontier
            # (a step to the frontier itself, for a lagging unit, is never skipped: the loop would not advance)
            lazy = C[C_LAZY] and W[W_NEXTLB] >= until and until > W[W_FRONTIER]
            W[W_FRONTIER] = until
            if lazy:
                continue
            counts[0] = 0
            counts[1] = 0
            counts[2] = 0
            if ahead:
                P[P_STOP_IDLE] = STOP_NO_REQUESTS
                P[P_HARD] = next_cycle(nxt, f)
            done, ticks, _rows, need_b, need_l, nw = pump_step(
                until, P, LAT, RQ, f_head, f_tail, arb, obs, US, ready, open_row, act_hist, Q, hits, qcnt, closing,
                occ_hist, bus_busy, turnarounds, cmd_count, out, no_log, counts, b_done, b_rem, cnt, rowcls, sc, bw,
                lat, bin_cycles, False, False, f, C[C_PCH])
            W[W_NEXTLB] = counts[3]
            if ahead:  # idle units, and those with only write-backs, are behind ``until`` (FastController.step)
                W[W_LAG] = counts[4]
            else:
                W[W_KAT] = until
            W[W_PUMPS] += 1
            ni = counts[0]
            if ni == 0:
                continue
            W[W_OUT] -= ni
            W[W_OUTW] -= nw
            if need_b or need_l:  # statistics arrays too small: the caller grows them and retires
                W[W_ARG0], W[W_ARG1], W[W_ARG2] = ni, need_b, need_l
                return R_STATS
            register_done(W, C, H, CH, done, ticks)
        if W[W_HN] == 0:
            return R_IDLE
        if done_events >= budget:
            return R_LIMIT
        done_events += 1
        if (H[0, 0] > lim_t or (H[0, 0] == lim_t and (H[0, 1] > lim_p or (H[0, 1] == lim_p and H[0, 2] > lim_e)))):
            return R_LIMIT
        if (W[W_N] + C[C_MARGIN_REQ] > caps[0] or W[W_NB] - C[C_BID0] + C[C_MARGIN_B] > caps[1]
                or W[W_HN] + W[W_LIVEB] + 4 * C[C_S] + 64 > caps[2] or W[W_JTOP] + 4 * C[C_S] + 64 > caps[4]
                or W[W_CBTOP] + C[C_MARGIN_REQ] > caps[5] or W[W_NB] + C[C_MARGIN_B] > b_done.shape[0]):
            return R_GROW
        n = pop(H, W)
        t, kind, arg = H[n, 0], H[n, 3], H[n, 4]
        W[W_NOW] = t
        if kind == EV_DISPATCH:
            fire_tick(t, W, C, H, CH, BI, CB, J)
        elif kind == EV_JOIN:
            J[arg, J_STATE] = 2
            jk = J[arg, J_KIND]
            if jk == JOIN_STORE:
                _free_join(J, W, arg)
                W[W_WLEFT] -= 1
                _maybe_end(W)
            elif jk == JOIN_ACCW:  # the write's event succeeds the kernel's ``written`` event: one event later
                J[arg, J_KIND], J[arg, J_STATE] = JOIN_STORE, 1
                push(H, W, t, NORMAL, EV_JOIN, arg)
            elif jk == JOIN_ACC:  # the read's callbacks: AccumulatingOutput's write, then the WG resumes
                j = J[arg, J_WAITER]
                st_addr, st_off = KD[5], KD[6]
                tile = SL[j, SL_TM] * C[C_TILES_N] + SL[j, SL_TN]
                _store(st_addr[st_off[tile]: st_off[tile + 1]], JOIN_ACCW, W, C, H, BI, CB, J, TR, cat_src, SA, LS)
                resume(j, PC_AFTER_ACC, W, C, H, SL, BI, CB, J, TB, TR, cat_src, SA, LS, KD)
            elif J[arg, J_WAITER] >= 0:
                resume(J[arg, J_WAITER], PC_AFTER_LOAD, W, C, H, SL, BI, CB, J, TB, TR, cat_src, SA, LS, KD)
        elif kind == EV_TIMEOUT:
            resume(arg, SL[arg, SL_PC], W, C, H, SL, BI, CB, J, TB, TR, cat_src, SA, LS, KD)
        elif kind == EV_ROOM:  # the room event's callbacks: its join counts it, then the waiting WG resumes
            j = J[arg, J_RWG]
            J[arg, J_T] = max(J[arg, J_T], t + J[arg, J_EXTRA])
            J[arg, J_N] -= 1
            if J[arg, J_N] == 0:
                J[arg, J_STATE] = 1
                push(H, W, max(J[arg, J_T], t), NORMAL, EV_JOIN, arg)
            if j >= 0:
                resume(j, PC_AFTER_ROOM, W, C, H, SL, BI, CB, J, TB, TR, cat_src, SA, LS, KD)
        else:  # EV_INIT: the slot process starts and waits out the launch latency
            if C[C_LAUNCH] > 0:
                SL[arg, SL_PC] = PC_START
                push(H, W, t + C[C_LAUNCH], NORMAL, EV_TIMEOUT, arg)
            else:
                resume(arg, PC_START, W, C, H, SL, BI, CB, J, TB, TR, cat_src, SA, LS, KD)
