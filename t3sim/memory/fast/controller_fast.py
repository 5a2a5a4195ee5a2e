"""Fast memory controller: the reference algorithm compiled with numba.

Same decisions as :mod:`t3sim.memory.controller_ref` (read its docstring for
the per-cycle order), with two differences that do not change results:

* state is held in flat numpy arrays (per unit: timing-ready cycles per
  scope node and command, open rows, the ACT window ring, queues whose entries
  carry copies of their requests' fields; layout in :mod:`t3sim.memory.fast.fast_kernel`);
* a cycle in which nothing happens ends with the earliest cycle at which
  anything *could* happen (a command's timing becomes satisfied, a pending
  request arrives, a refresh falls due, a write ages past the starvation
  limit, the arbitration policy's wake-up time passes), and the unit jumps
  there, crediting the skipped cycles to the occupancy statistics. A woken
  cycle that turns out idle is harmless; the jump is never past a possible
  action because every time-dependent condition contributes its time.

The inner loop does not allocate; ``t3sim.memory.system`` sizes the output
buffers before each call.

The kernels are compiled per arbitration policy class (:func:`kernels`): the cycle
loop inlines the policy's own decision and wake-up functions, the ones the reference
controller calls as Python.
"""

from __future__ import annotations

import functools

import numpy as np

from t3sim.memory import accum, bookkeeping, page_policy
from t3sim.memory import timing as T
from t3sim.memory.bookkeeping import NOUT
from t3sim.memory.fast import command_kernel, queue_lists, step_kernel
from t3sim.memory.fast import fast_kernel as K
from t3sim.memory.fast.command_kernel import (
    AWAITED, BIG, CYC, LAST_DIR, NEXT, NP, NUS, P_ADM, P_BPG, P_DONE_RD, P_DONE_WR, P_FAW, P_FAWN, P_HARD, P_LOG,
    P_NB, P_NPP, P_OBSERVING, P_PAGE, P_PER_BANK, P_REFRESH_ON, P_RQ, P_STOP_IDLE, P_TBL, P_TREFI, P_WLIM, P_WQ,
    REF_DUE, RQN, WQN, STOP_NO_REQUESTS)
from t3sim.memory.fast.queue_lists import QF_REQ
from t3sim.memory.fast.specialise import specialise


#: functions of other modules that :func:`~t3sim.memory.fast.fast_kernel.run_kernel` compiles in (their source files go
#: into every cache digest of code that contains it)
RUN_DEPENDS = (command_kernel.issue, page_policy.closes_row, queue_lists.enqueue)
#: the memory's functions that compiled code calling a specialised :func:`~t3sim.memory.fast.step_kernel.pump_step`
#: and :func:`~t3sim.memory.bookkeeping.fill_requests` compiles in (the ``depends`` of such code's
#: :func:`~t3sim.memory.fast.specialise.specialise`: the GEMM window's kernel, :mod:`t3sim.window`)
PUMP_DEPENDS = (bookkeeping.fill_requests, accum.retire, K.run_kernel, step_kernel.pump_step, *RUN_DEPENDS)


@functools.lru_cache(maxsize=None)
def kernels(policy_cls, drain_cls):
    """``(run_kernel, pump_step)`` compiled for arbitration policy class ``policy_cls`` and write-drain
    policy class ``drain_cls``: the templates of :mod:`~t3sim.memory.fast.fast_kernel` and
    :mod:`~t3sim.memory.fast.step_kernel` with the arbitration policy's ``choose`` and ``wake`` and the
    write-drain policy's ``decide`` inlined (:func:`~t3sim.memory.fast.specialise.specialise`; cached on disk
    per pair). Compiled on first call."""
    if policy_cls.choose is None:
        raise TypeError(f"arbitration policy {policy_cls.__name__} defines no choose function")
    if drain_cls.decide is None:
        raise TypeError(f"write-drain policy {drain_cls.__name__} defines no decide function")
    tag = f"{policy_cls.__name__}_{drain_cls.__name__}"
    policy_fns = (policy_cls.choose, policy_cls.wake, drain_cls.decide)
    # the kernels call functions of other modules: their sources go into the cache digest (numba itself
    # checks only the template's file)
    run = specialise(K.run_kernel, tag, {"policy_choose": policy_cls.choose, "policy_wake": policy_cls.wake,
                                         "drain_decide": drain_cls.decide}, depends=RUN_DEPENDS, _nrt=False)
    step = specialise(step_kernel.pump_step, tag, {"run_kernel": run},
                      depends=(*policy_fns, accum.retire, bookkeeping.admission_rows, *RUN_DEPENDS))
    return run, step


class FastController:
    """numba controller over a MemorySystem's arrays (see module docstring)."""

    def __init__(self, ms) -> None:
        self.ms = ms
        g, mc, tm = ms.geom, ms.mc, ms.timing
        U = g.units
        self.US = np.zeros((U, NUS), dtype=np.int64)
        self.US[:, LAST_DIR] = -1
        for u in range(U):
            self.US[u, REF_DUE] = ms.first_refresh(u)
        # ready[u, node, cmd]: node 0 the channel, then the bank groups, then the banks
        self.ready = np.zeros((U, 1 + g.bank_groups + g.banks, T.NCMD), dtype=np.int64)
        self.open_row = np.full((U, g.banks), -1, dtype=np.int64)
        self.act_hist = np.full((U, tm.faw_count), -1, dtype=np.int64)
        # queue slots, then the list sentinels: the queue's, one per bank, the free list's, the bank ring's (fast_kernel)
        self.Q = np.zeros(queue_lists.shape(U, max(mc.read_queue_entries, mc.write_queue_entries), g.banks),
                          dtype=np.int64)
        queue_lists.init_queues(self.Q, g.banks)
        #: request indices of the read and write queues' slots, -1 where none (views of Q, renumbered by compaction)
        self.rq = self.Q[:, 0, :, QF_REQ]
        self.wq = self.Q[:, 1, :, QF_REQ]
        # hits[u, q, b]: requests of queue q (0 read, 1 write) that hit bank b's open row
        self.hits = np.zeros((U, 2, g.banks), dtype=np.int64)
        # qcnt[u, q, b]: requests of queue q that go to bank b
        self.qcnt = np.zeros((U, 2, g.banks), dtype=np.int64)
        # closing[u, b]: bank b's row is to be closed (page policy; t3sim.memory.page_policy)
        self.closing = np.zeros((U, g.banks), dtype=np.int64)
        pp = np.asarray(ms.policy.params(), dtype=np.int64).reshape(-1)
        dp = np.asarray(ms.drain.params(), dtype=np.int64).reshape(-1)
        self.P = np.zeros(NP + pp.size + dp.size, dtype=np.int64)
        self.P[NP: NP + pp.size] = pp  # the arbitration policy's parameters
        self.P[NP + pp.size:] = dp  # the write-drain policy's
        P = self.P
        P[P_NB], P[P_BPG], P[P_NPP] = g.banks, g.banks_per_group, pp.size
        P[P_RQ], P[P_WQ] = mc.read_queue_entries, mc.write_queue_entries
        P[P_WLIM], P[P_ADM] = mc.write_starvation_limit_cycles, mc.admissions_per_cycle
        P[P_TREFI], P[P_PER_BANK] = tm.refresh_interval, int(tm.per_bank_refresh)
        self._run_kernel, self._pump_step = kernels(type(ms.policy), type(ms.drain))
        P[P_TBL], P[P_DONE_RD], P[P_DONE_WR] = tm.tBL, tm.done_offset(T.RD), tm.done_offset(T.WR)
        P[P_FAW], P[P_FAWN] = tm.faw, tm.faw_count
        P[P_REFRESH_ON] = int(ms.refresh_on)
        P[P_PAGE] = page_policy.code(mc.page_policy)
        self.counts = np.zeros(5, dtype=np.int64)  # issued, admitted, log rows, min NEXT, first stop for no awaited
        self._out = np.empty((NOUT, 1024), dtype=np.int64)  # issued, admitted request indices, issue records
        self._no_log = np.empty((1, 5), dtype=np.int64)
        #: lower bound on the cycle of any unit's next action (hence column command), valid until
        #: the next submission or arbitration-state change (see MemorySystem.advance)
        self.next_lb = 0
        #: per-unit lower bound on the next action (a view of US[:, NEXT]); a submission lowers it
        #: to its arrival cycle for every unit it reaches (MemorySystem.submit), and next_lb with it
        self.unit_next = self.US[:, NEXT]
        #: per-unit count of awaited requests not yet issued (a view of US[:, AWAITED]; bookkeeping.fill_requests)
        self.unit_awaited = self.US[:, AWAITED]
        #: the earliest cycle at which a lookahead step left a unit with only unawaited requests (write-backs),
        #: raised to where a later run to an earlier tick brought it, BIG if none (MemorySystem.next_event_tick)
        self.lag = int(BIG)

    def invalidate_next(self) -> None:
        """Arbitration state changed outside the kernel: no lower bound until the next run."""
        self.US[:, NEXT] = 0
        self.next_lb = 0

    def unit_cycle(self, u: int) -> int:
        return int(self.US[u, CYC])

    def queued(self, u: int) -> int:
        return int(self.US[u, RQN] + self.US[u, WQN])

    #: with a command log, simulate at most this many cycles per kernel call (bounds the log buffer)
    LOG_CHUNK = 1 << 20
    #: requests whose issue records one call may return at most (9 int64 each: 9.4 MiB) when more are
    #: outstanding; :meth:`piece_cycles` then cuts the run into pieces (``MemorySystem._run``). Without it a
    #: run of 2M requests submitted at once (``hbm-stream``) wrote its records to a 137 MiB buffer.
    OUT_CAP = 1 << 17

    def piece_cycles(self) -> int:
        """Cycles per kernel call for the caller to simulate in, 0 for one call: with more than
        :data:`OUT_CAP` requests outstanding (and no command log, whose runs :meth:`run` cuts itself),
        ``OUT_CAP // (units x admissions per cycle)``, so that a call issues and admits at most ``OUT_CAP``
        (a unit issues one column command per cycle). The same simulation: a unit's run does not depend on
        where it is cut (:func:`~t3sim.memory.fast.fast_kernel.run_kernel`)."""
        ms = self.ms
        if ms.record_commands or ms.outstanding <= self.OUT_CAP:
            return 0
        return max(1, self.OUT_CAP // (self.US.shape[0] * max(1, int(self.P[P_ADM]))))

    def min_cycle(self) -> int:
        """The cycle of the unit furthest behind."""
        return int(self.US[:, CYC].min())

    def reached(self, cycle: int) -> bool:
        """Whether some unit has been simulated up to ``cycle`` (after a run that stops idle units: one
        has not stopped before it)."""
        return bool((self.US[:, CYC] >= cycle).any())

    def run(self, until: int, stop_when_idle: bool):
        """Simulate every unit up to cycle ``until`` (exclusive); return (issued, admitted) request indices."""
        ms = self.ms
        left = ms.outstanding
        if not ms.record_commands:
            if left > self.OUT_CAP:  # a piece (piece_cycles): at most one issue and P_ADM admissions per unit-cycle
                # (Python integers: ``until`` may be near the int64 limit)
                left = min(left, sum(max(0, until - c) for c in self.US[:, CYC].tolist()) * max(1, int(self.P[P_ADM])))
            res = self._run(until, stop_when_idle, left)
            self.records = self._out
            return res
        self.records = None  # issue records of several calls: not kept
        parts_i, parts_a = [], []
        while True:
            lo = int(self.US[:, CYC].min())
            if lo >= until:
                break
            iss, adm = self._run(min(until, lo + self.LOG_CHUNK), stop_when_idle, left)
            left -= iss.size
            parts_i.append(iss)
            parts_a.append(adm)
            if stop_when_idle and left == 0:
                break
        if not parts_i:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(parts_i), np.concatenate(parts_a)

    def _prepare(self, stop_when_idle: int, pending: int) -> np.ndarray:
        """Set the per-call parameters (``stop_when_idle``: ``P[P_STOP_IDLE]``, 0, 1 = ``STOP_IDLE`` or
        ``STOP_NO_REQUESTS``) and size the output buffer for ``pending`` requests; return it."""
        ms = self.ms
        P = self.P
        P[P_OBSERVING] = int(ms.observing)
        P[P_STOP_IDLE] = int(stop_when_idle)
        P[P_LOG] = int(ms.record_commands)
        cap = max(1, pending)
        if self._out.shape[1] < cap:
            self._out = np.empty((NOUT, max(cap, 2 * self._out.shape[1])), dtype=np.int64)
        self.counts[0] = self.counts[1] = self.counts[2] = 0
        return self._out

    def step(self, until: int, hook: bool, writes_only: bool, ahead: bool = False, hard: int = 0):
        """One fused pump step (:func:`~t3sim.memory.fast.step_kernel.pump_step`): simulate up to ``until``
        (``ahead``: a lookahead, ``MemorySystem.advance``: a unit stops at its first cycle without requests, or from
        cycle ``hard`` on at its first without awaited requests, ``STOP_NO_REQUESTS``; :attr:`lag` then says where)
        and retire; only without functional data or a command log. Returns ``pump_step``'s tuple and the number of
        requests issued."""
        ms = self.ms
        out = self._prepare(STOP_NO_REQUESTS if ahead else 0, ms.outstanding)
        self.P[P_HARD] = hard
        acc = ms.acc
        counts = self.counts
        res = self._pump_step(until, self.P, ms.timing.lat, ms.RQ, ms.f_head, ms.f_tail, ms.arb, ms.obs, self.US,
                        self.ready, self.open_row, self.act_hist, self.Q, self.hits, self.qcnt, self.closing,
                        ms.occ_hist, ms.bus_busy, ms.turnarounds, ms.cmd_count, out, self._no_log, counts, ms.batches.done,
                        ms.batches.remaining, acc.cnt, acc.rowcls, acc.sc, acc.bw, acc.lat, acc.bin_cycles, hook,
                        writes_only, ms.clock.freq_kHz, ms.geom.pseudo_channels)
        self.next_lb = int(counts[3])
        if ahead:
            self.lag = int(counts[4])
        elif self.lag < until:  # a run to ``until``: what a lookahead left behind is there now (or at the frontier)
            self.lag = until if until < ms.frontier else int(BIG)
        return res, int(counts[0])

    #: after :meth:`run`: the output buffer whose issue records (``bookkeeping.O_*``) cover every request
    #: it returned as issued, in order (valid until the next call), or None
    records = None

    def issued_view(self, n: int) -> np.ndarray:
        """The request indices the last call issued (valid until the next call)."""
        return self._out[0, :n]

    def _run(self, until: int, stop_when_idle: bool, pending: int):
        ms = self.ms
        out = self._prepare(stop_when_idle, pending)
        if ms.record_commands:
            # column <= pending; ACT/PRE <= pending + NB per all-bank refresh (1 per per-bank one) + NB open banks;
            # a REF per refresh interval; a closing page policy adds a PRE per column command
            span = until - int(self.US[:, CYC].min())
            g = ms.geom
            refs = span // max(1, ms.timing.refresh_interval) + 2 if ms.refresh_on else 0
            per_ref = 2 if ms.timing.per_bank_refresh else 2 * g.banks + 1
            per_req = 3 if self.P[P_PAGE] == page_policy.OPEN else 4
            log = np.empty((per_req * pending + g.units * (refs * per_ref + g.banks) + 1, 5), dtype=np.int64)
        else:
            log = self._no_log
        counts = self.counts
        self._run_kernel(until, self.P, ms.timing.lat, ms.RQ, ms.f_head, ms.f_tail, ms.arb, ms.obs, self.US, self.ready,
                   self.open_row, self.act_hist, self.Q, self.hits, self.qcnt, self.closing, ms.occ_hist, ms.bus_busy,
                   ms.turnarounds,
                   ms.cmd_count, out, log, counts)
        ni, na, nl, self.next_lb = counts[:4].tolist()
        if ms.record_commands:
            ms.add_command_log(log[:nl].copy())
        return out[0, :ni].copy(), out[1, :na].copy()
