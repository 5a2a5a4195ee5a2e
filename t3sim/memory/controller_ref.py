"""Reference memory controller: plain Python, one cycle at a time.

This is the specification the fast (numba) controller is held to. It shares
the request arrays and pending FIFOs of :class:`~t3sim.memory.system.MemorySystem`
and keeps its own per-channel state as Python objects. Every channel (unit)
is independent, so units are simulated one after another up to the target
cycle. The only time it skips is when a unit is completely idle (no queued
and no arrived pending request, no refresh pending).

Per unit and memory cycle ``c``, in this order:

1. refresh becomes pending once ``c >= ref_due`` (per-bank refresh: for the bank ``ref_bank``);
2. the communication drain flag clears when no communication request waits;
3. up to ``admissions_per_cycle`` requests enter the queues, the stream chosen
   by the arbitration policy's ``choose`` (the function the fast kernel compiles,
   called here as Python) among the *eligible* ones (oldest pending request
   arrived, room in its queue, and no request to the same access-sized line in the
   *other* queue: a read waits for queued writes to its line and vice versa);
   an entering request counts the older queued requests to its line it must
   follow (any pair but read/read; with the rule above, writes after writes);
4. write-drain mode is updated by the write-drain policy's ``decide`` (the function the fast kernel
   compiles, :mod:`t3sim.memory.write_drain`; e.g. high/low watermark, empty read queue, write age);
5. column bus: the oldest request of the active queue (write queue while
   draining, else read queue) with no unfinished dependency, whose row is
   open (and not closing) and whose column command meets every timing rule,
   issues (RD, WR or UPD); none while an all-bank refresh is pending, none to
   the bank of a pending per-bank refresh. The page policy
   (:func:`~t3sim.memory.page_policy.closes_row`) decides whether it closes
   its row: then the bank is *closing*;
6. row bus: with an all-bank refresh pending, PRE the lowest open bank that
   may precharge, or, all banks closed, REF. With a per-bank refresh pending,
   PRE its bank if open, or REF it if closed, when that may issue; if it may
   not, the row bus serves the other banks as below, never ACTing the
   refresh's bank. Otherwise the lowest closing bank
   that may precharge gets its PRE; if none, the oldest request of the
   active queue whose bank is closed gets an ACT, or whose bank holds another
   row gets a PRE unless a queued request still hits that row (FR-FCFS);
   closing banks are left to their own PRE;
7. the queue occupancy of the cycle is recorded.

A unit with closing banks is never idle (their PRE is due whether or not
requests wait).
"""

from __future__ import annotations

from collections import deque
from typing import List

import numpy as np

from t3sim.memory import page_policy
from t3sim.memory import timing as T
from t3sim.memory.policies.base import COMM, COMPUTE, DRAIN, LAST_COMM, LAST_STREAM, THRESHOLD
from t3sim.memory.request import Kind

HIT, MISS, CONFLICT = 0, 1, 2


class _Unit:
    def __init__(self, u: int, ms) -> None:
        g = ms.geom
        self.cycle = 0
        self.chan_ready = [0] * T.NCMD
        self.bg_ready = [[0] * T.NCMD for _ in range(g.bank_groups)]
        self.bank_ready = [[0] * T.NCMD for _ in range(g.banks)]
        self.open_row = [-1] * g.banks
        self.closing = [False] * g.banks  # the page policy closes the bank's row (PRE pending)
        self.nclosing = 0
        self.acts = deque(maxlen=ms.timing.faw_count)
        self.rq: List[int] = []
        self.wq: List[int] = []
        self.draining = False
        self.drain_left = 0  # the write-drain policy's counter (write_drain.base)
        self.ref_due = ms.first_refresh(u)
        self.ref_pending = False
        self.ref_bank = 0  # the bank the next per-bank refresh refreshes (round robin)
        self.seq = 0
        self.last_dir = -1


class ReferenceController:
    """Cycle-by-cycle controller for every unit of a MemorySystem."""

    def __init__(self, ms) -> None:
        self.ms = ms
        self.units = [_Unit(u, ms) for u in range(ms.geom.units)]
        #: the policy's decision, the same function the fast kernel compiles, run as Python
        self._choose = getattr(ms.policy.choose, "py_func", ms.policy.choose)
        self._pp = np.asarray(ms.policy.params(), dtype=np.int64).reshape(-1)
        #: the page policy's decision, the function the fast kernel inlines, run as Python
        self._closes_row = getattr(page_policy.closes_row, "py_func", page_policy.closes_row)
        self._page = page_policy.code(ms.mc.page_policy)
        #: the write-drain policy's decision, the function the fast kernel inlines, run as Python
        self._decide = getattr(ms.drain.decide, "py_func", ms.drain.decide)
        self._dp = np.asarray(ms.drain.params(), dtype=np.int64).reshape(-1)

    # ------------------------------------------------------------ queries
    def unit_cycle(self, u: int) -> int:
        return self.units[u].cycle

    def queued(self, u: int) -> int:
        s = self.units[u]
        return len(s.rq) + len(s.wq)

    # ------------------------------------------------------------ timing
    def _ready(self, s: _Unit, bank: int, cmd: int) -> int:
        bg = bank // self.ms.geom.banks_per_group
        t = max(s.chan_ready[cmd], s.bg_ready[bg][cmd], s.bank_ready[bank][cmd])
        if cmd == T.ACT and len(s.acts) == s.acts.maxlen:
            t = max(t, s.acts[0] + self.ms.timing.faw)
        return t

    def _issue(self, u: int, s: _Unit, c: int, cmd: int, bank: int, row: int) -> None:
        lat = self.ms.timing.lat
        bg = bank // self.ms.geom.banks_per_group
        for n in range(T.NCMD):
            if lat[T.SC_CHANNEL, cmd, n] >= 0:
                s.chan_ready[n] = max(s.chan_ready[n], c + int(lat[T.SC_CHANNEL, cmd, n]))
            if lat[T.SC_BANKGROUP, cmd, n] >= 0:
                s.bg_ready[bg][n] = max(s.bg_ready[bg][n], c + int(lat[T.SC_BANKGROUP, cmd, n]))
            if lat[T.SC_BANK, cmd, n] >= 0:
                s.bank_ready[bank][n] = max(s.bank_ready[bank][n], c + int(lat[T.SC_BANK, cmd, n]))
        if cmd == T.ACT:
            s.acts.append(c)
            s.open_row[bank] = row
        elif cmd == T.PRE:
            s.open_row[bank] = -1
            if s.closing[bank]:
                s.closing[bank] = False
                s.nclosing -= 1
        self.ms.count_command(u, c, cmd, bank, row)

    # ------------------------------------------------------------ run
    def piece_cycles(self) -> int:
        """0: one call per run (its results are Python lists, with no buffer to bound; cf.
        :meth:`FastController.piece_cycles <t3sim.memory.fast.controller_fast.FastController.piece_cycles>`)."""
        return 0

    def run(self, until: int, stop_when_idle: bool):
        """Simulate every unit up to cycle ``until`` (exclusive); return (issued, admitted) request indices.

        ``issued`` lists column commands unit by unit in issue order.
        """
        issued: list = []
        admitted: list = []
        for u in range(self.ms.geom.units):
            self._run_unit(u, until, stop_when_idle, issued, admitted)
        return np.array(issued, dtype=np.int64), np.array(admitted, dtype=np.int64)

    def _fifo_head_arrived(self, u: int, st: int, c: int) -> int:
        h = int(self.ms.f_head[u, st])
        return h if h >= 0 and self.ms.r_arrive[h] <= c else -1

    def _run_unit(self, u: int, until: int, stop_when_idle: bool, issued: list, admitted: list) -> None:
        ms, s = self.ms, self.units[u]
        while s.cycle < until:
            c = s.cycle
            empty = not s.rq and not s.wq
            if stop_when_idle and empty and ms.f_head[u, 0] < 0 and ms.f_head[u, 1] < 0 and not s.nclosing:
                return
            refresh_now = ms.refresh_on and (s.ref_pending or c >= s.ref_due)
            if (empty and not refresh_now and not s.nclosing and self._fifo_head_arrived(u, 0, c) < 0
                    and self._fifo_head_arrived(u, 1, c) < 0):
                nxt = until
                for st in (COMPUTE, COMM):
                    h = int(ms.f_head[u, st])
                    if h >= 0:
                        nxt = min(nxt, int(ms.r_arrive[h]))
                if ms.refresh_on:
                    nxt = min(nxt, s.ref_due)
                ms.record_occupancy(u, 0, nxt - c)
                if ms.arb[u, DRAIN] and self._fifo_head_arrived(u, COMM, c) < 0:
                    ms.arb[u, DRAIN] = 0
                s.cycle = nxt
                continue
            self._cycle(u, s, c, issued, admitted)
            s.cycle = c + 1

    def _cycle(self, u: int, s: _Unit, c: int, issued: list, admitted: list) -> None:
        ms, g = self.ms, self.ms.geom
        if ms.refresh_on and not s.ref_pending and c >= s.ref_due:
            s.ref_pending = True
        if ms.arb[u, DRAIN] and self._fifo_head_arrived(u, COMM, c) < 0:
            ms.arb[u, DRAIN] = 0
        for _ in range(ms.mc.admissions_per_cycle):
            if not self._admit(u, s, c, admitted):
                break
        self._update_drain(s, c)
        q = s.wq if s.draining else s.rq
        per_bank = ms.timing.per_bank_refresh
        rb = s.ref_bank if s.ref_pending and per_bank else -1  # the bank a pending per-bank refresh holds
        if not s.ref_pending or per_bank:
            for r in q:
                b, row = int(ms.r_bank[r]), int(ms.r_row[r])
                cmd = T.KIND_TO_CMD[ms.r_kind[r]]
                if (b != rb and ms.r_ndeps[r] == 0 and s.open_row[b] == row and not s.closing[b]
                        and c >= self._ready(s, b, cmd)):
                    self._issue_column(u, s, c, r, cmd, q, issued)
                    break
        if s.ref_pending and not per_bank:
            pre_issued = False
            for b in range(g.banks):
                if s.open_row[b] >= 0:
                    pre_issued = True  # a bank is still open: no REF this cycle
                    if c >= self._ready(s, b, T.PRE):
                        self._issue(u, s, c, T.PRE, b, s.open_row[b])
                        break
            if not pre_issued and c >= s.chan_ready[T.REF]:
                self._issue(u, s, c, T.REF, -1, -1)
                s.ref_pending = False
                s.ref_due += ms.timing.refresh_interval
        elif not self._refresh_bank(u, s, c, rb) and not self._close_one(u, s, c):
            for r in q:
                b, row = int(ms.r_bank[r]), int(ms.r_row[r])
                op = s.open_row[b]
                if op == row or s.closing[b] or b == rb:
                    continue
                if op < 0:
                    if c >= self._ready(s, b, T.ACT):
                        self._issue(u, s, c, T.ACT, b, row)
                        if ms.r_class[r] != CONFLICT:
                            ms.r_class[r] = MISS
                        break
                else:
                    if any(int(ms.r_bank[x]) == b and int(ms.r_row[x]) == op for x in q):
                        continue
                    if c >= self._ready(s, b, T.PRE):
                        self._issue(u, s, c, T.PRE, b, op)
                        ms.r_class[r] = CONFLICT
                        break
        ms.record_occupancy(u, len(s.rq) + len(s.wq), 1)

    def _refresh_bank(self, u: int, s: _Unit, c: int, rb: int) -> bool:
        """Per-bank refresh of bank ``rb`` (-1: none pending): PRE it if open, else REF it, if that may issue now;
        whether a command was issued."""
        if rb < 0:
            return False
        if s.open_row[rb] >= 0:
            if c >= self._ready(s, rb, T.PRE):
                self._issue(u, s, c, T.PRE, rb, s.open_row[rb])
                return True
            return False
        if c >= self._ready(s, rb, T.REF):
            self._issue(u, s, c, T.REF, rb, -1)
            s.ref_pending = False
            s.ref_due += self.ms.timing.refresh_interval
            s.ref_bank = (rb + 1) % self.ms.geom.banks
            return True
        return False

    def _close_one(self, u: int, s: _Unit, c: int) -> bool:
        """PRE the lowest closing bank that may precharge now; whether one was."""
        for b in range(self.ms.geom.banks if s.nclosing else 0):
            if s.closing[b] and c >= self._ready(s, b, T.PRE):
                self._issue(u, s, c, T.PRE, b, s.open_row[b])
                return True
        return False

    def _issue_column(self, u: int, s: _Unit, c: int, r: int, cmd: int, q: list, issued: list) -> None:
        ms = self.ms
        b = int(ms.r_bank[r])
        self._issue(u, s, c, cmd, b, int(ms.r_row[r]))
        ms.r_issue[r] = c
        ms.r_done[r] = c + ms.timing.done_offset(cmd)
        ms.bus_busy[u] += ms.timing.tBL
        if s.draining:  # a write or update from the write queue: the drain policy's counter
            s.drain_left -= 1
        d = 0 if cmd == T.RD else 1
        if s.last_dir >= 0 and d != s.last_dir:
            ms.turnarounds[u] += 1
        s.last_dir = d
        q.remove(r)
        row = int(ms.r_row[r])
        if self._page != page_policy.OPEN:
            left = sum(1 for x in q if int(ms.r_bank[x]) == b and int(ms.r_row[x]) == row)
            if self._closes_row(self._page, left):
                s.closing[b] = True
                s.nclosing += 1
        line, seq, rd = ms.r_line[r], ms.r_seq[r], ms.r_kind[r] == Kind.READ
        for x in s.rq + s.wq:
            if ms.r_line[x] == line and ms.r_seq[x] > seq and not (rd and ms.r_kind[x] == Kind.READ):
                ms.r_ndeps[x] -= 1
        issued.append(r)

    def _admit(self, u: int, s: _Unit, c: int, admitted: list) -> bool:
        ms = self.ms
        heads = [self._fifo_head_arrived(u, st, c) for st in (COMPUTE, COMM)]
        elig = []
        for h in heads:
            if h < 0:
                elig.append(False)
            elif ms.r_kind[h] == Kind.READ:
                elig.append(len(s.rq) < ms.mc.read_queue_entries and all(ms.r_line[x] != ms.r_line[h] for x in s.wq))
            else:
                elig.append(len(s.wq) < ms.mc.write_queue_entries and all(ms.r_line[x] != ms.r_line[h] for x in s.rq))
        arrival = [int(ms.r_arrive[h]) if h >= 0 else -1 for h in heads]
        arb = ms.arb[u]
        st = self._choose(c, elig[0], elig[1], arrival[0], arrival[1], len(s.rq) + len(s.wq), int(arb[LAST_STREAM]),
                          int(arb[LAST_COMM]), int(arb[DRAIN]), int(arb[THRESHOLD]), self._pp)
        if st < 0:
            return False
        if st not in (COMPUTE, COMM) or not elig[st]:
            raise RuntimeError(f"policy {ms.policy!r} chose an ineligible stream")
        r = heads[st]
        ms.f_head[u, st] = ms.r_next[r]
        if ms.r_next[r] < 0:
            ms.f_tail[u, st] = -1
        ms.r_admit[r] = c
        ms.r_seq[r] = s.seq
        s.seq += 1
        line, rd = ms.r_line[r], ms.r_kind[r] == Kind.READ
        ms.r_ndeps[r] = sum(1 for x in s.rq + s.wq if ms.r_line[x] == line and not (rd and ms.r_kind[x] == Kind.READ))
        (s.rq if rd else s.wq).append(r)
        ms.arb[u, LAST_STREAM] = st
        if st == COMM:
            ms.arb[u, LAST_COMM] = c
        admitted.append(r)
        return True

    def _update_drain(self, s: _Unit, c: int) -> None:
        ms = self.ms
        nw, nr = len(s.wq), len(s.rq)
        aged = nw > 0 and c - int(ms.r_admit[s.wq[0]]) >= ms.mc.write_starvation_limit_cycles
        d, s.drain_left = self._decide(int(s.draining), nr, nw, aged, s.drain_left, ms.mc.write_queue_entries, self._dp)
        s.draining = bool(d)
