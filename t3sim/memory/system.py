"""MemorySystem: the HBM + per-channel memory controllers of one GPU (pure, no simpy).

Time. Callers speak integer **ticks** (1 tick = 1 ps, :mod:`t3sim.sim.clock`);
the memory runs in HBM command-clock **cycles**. A request submitted at tick
``t`` arrives at the controller at the first cycle starting at or after
``t + frontend`` (``frontend`` = ``memory_controller.frontend_latency_gpu_cycles``
of the GPU clock, in ticks: the controller pipeline before its queues; 0 in the
memory tests that count cycles).
``advance(until_tick)`` simulates every cycle that *starts before*
``until_tick``; the memory's *frontier* is the first unsimulated cycle, and
a submission's arrival must not be earlier than the frontier (no request can
change the past), nor its tick earlier than the previous submission's.

Lookahead. A request submitted at tick ``t`` or later arrives at or after the
cycle starting at ``t + frontend``, so at ``t`` the cycles before it are
determined: ``advance(t, t + frontend)`` simulates them, saving pump steps
where ``frontend`` exceeds the pump cadence. Completions are learned earlier
and fire at their own ticks; ``sync`` and ``stats`` take the tick they
describe. A run may end with requests in flight that nobody waits for (the
L2's write-backs, submitted with ``awaited=False``): a unit whose only
requests left are such is not run past ``t`` (it resumes there), so the
statistics at a run's end are exact. Exact unless a lookahead ran awaited
requests past that tick (``stats`` then refuses, and ``t3sim.system.core``
re-runs the point without it; tests/memory/test_lookahead.py).

Enqueue hook. Admissions reach the hook (T3's tracker) in canonical order, independent of the cadence and the
lookahead, held back to the horizon after each controller run (:mod:`t3sim.memory.enqueue_feed`).

Requests. Every request is one column access of ``hbm.access_size_B`` bytes
(bus width x burst length: 32 B on Table 1); its address names the access-sized,
aligned block that contains it (:class:`~t3sim.memory.port.MemoryPort` splits the
GPU's larger requests into accesses).
A batch (one ``submit`` call) shares kind, stream and source; it completes
when its last request's data burst ends: reads when the data has returned
(command + tCL + tBL), writes and op-and-store updates when their data has
been written (command + tWL + tBL). Requests wait in per-channel, per-stream
pending FIFOs (unbounded: the backpressure the GPU sees is the completion
time) until the arbitration policy admits them into the channel's read or
write queue (bounded). Within a channel, requests to one access-sized block take
effect in admission order unless both are reads.

Determinism: the simulation is a function of the submissions alone; the two
controllers (``mode="fast"``: numba, skips idle and blocked cycles;
``mode="reference"``: plain Python, cycle by cycle) make identical decisions.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

from t3sim.config.system import REQUEST_B
from t3sim.errors import InputError
from t3sim.cache.common import cycles_to_ticks
from t3sim.memory import address_map
from t3sim.memory import bookkeeping as BK
from t3sim.memory.accum import SC_A0, SC_LAST_DONE, Accum, retire, retire_records
from t3sim.memory.batches import Batches
from t3sim.memory.controller_ref import ReferenceController
from t3sim.memory.enqueue_feed import BIG_CYCLE, EnqueueFeed
from t3sim.memory.fast import FastController
from t3sim.memory import timing as T
from t3sim.memory.functional import FunctionalStore
from t3sim.memory.interface import EnqueueInfo, Geometry
from t3sim.memory.policies import build as build_policy
from t3sim.memory.write_drain import build as build_drain
from t3sim.memory.policies.base import LAST_COMM, LAST_STREAM, NARB, THRESHOLD, ArbState, Policy
from t3sim.memory.request import Kind, Source, Stream, parse_enum
from t3sim.memory.policy_events import PolicyEvents
from t3sim.memory.request_store import RequestStore, ids
from t3sim.memory.stats import collect
from t3sim.sim.clock import Clock

_NO_UNITS = np.zeros(0, dtype=np.int64)


class LookaheadPastEnd(RuntimeError):
    """The memory was asked for its state at a tick that a lookahead (:meth:`MemorySystem.advance`) simulated
    requests past: that of the reference cadence cannot be given (``t3sim.system.core`` re-runs such a point
    without the lookahead)."""


class MemorySystem(RequestStore, PolicyEvents):
    """All channels of one GPU's HBM. See the module docstring for the time model.

    ``lazy`` (class attribute, default True): let :meth:`advance` skip controller runs that
    cannot issue anything (see there); False simulates eagerly, for agreement tests.

    Args:
        system: a :class:`~t3sim.config.system.SystemConfig` (uses ``hbm``,
            ``address_map`` and ``memory_controller``).
        mode: ``"fast"`` (numba) or ``"reference"`` (plain Python).
        functional: keep real data; writes store, updates add, reads return values.
        dtype: element type of functional data (an access holds access_size_B / itemsize elements).
        record_commands: keep the DRAM command log (for :mod:`t3sim.memory.checker`).
    """

    lazy = True

    def __init__(self, system, mode: str = "fast", functional: bool = False, dtype=np.float32,
                 record_commands: bool = False) -> None:
        hbm, mc = system.hbm, system.memory_controller
        self.system, self.hbm, self.mc = system, hbm, mc
        self.clock = Clock.from_GHz(hbm.clock_GHz, "hbm")
        #: ticks every request spends before it reaches the controller (memory_controller.frontend_latency_gpu_cycles)
        self.frontend_ticks = Clock.from_GHz(system.gpu.clock_GHz, "gpu").cycle_to_tick(mc.frontend_latency_gpu_cycles)
        self.timing = T.resolve(hbm)
        self.amap = address_map.build(system)
        self.policy = build_policy(mc.arbitration, system)
        self.geom = Geometry(hbm.channels, hbm.pseudo_channels, hbm.bank_groups, hbm.banks_per_group)
        self.access_B = hbm.access_size_B
        self.drain = build_drain(mc)
        self.refresh_on = self.timing.refresh_interval > 0
        # fewest cycles from a column command to its request's completion: any kind, and a read
        self._min_done = min(self.timing.done_offset(T.RD), self.timing.done_offset(T.WR))
        self._read_done = self.timing.done_offset(T.RD)
        if self.clock.cycle_to_tick(1) < 2:
            raise InputError("hbm.clock_GHz", f"{hbm.clock_GHz} (a cycle shorter than 2 ps)", "at most 500 GHz")
        U = self.geom.units
        self._init_requests(U)  # the request rows and pending FIFOs (RequestStore)
        # arbitration state (columns LAST_STREAM, LAST_COMM, DRAIN, THRESHOLD of policies.base)
        self.arb = np.zeros((U, NARB), dtype=np.int64)
        self.arb[:, [LAST_STREAM, LAST_COMM, THRESHOLD]] = -1
        self.obs = np.zeros((U, 2), dtype=np.int64)  # occupancy-cycles, cycles (while observing)
        #: what the policy's hooks may change (views of arb and obs, and whether to observe)
        self.arb_state = ArbState(self.arb, self.obs)
        self.policy.init(self.arb_state)
        #: ticks from a producer-kernel event (MemoryPort.kernel_boundary...) to the controllers applying it: the
        #: frontend latency, as for a request sent then (past any lookahead), where the policy's hooks act; 0 where
        #: they do nothing
        static = all(getattr(type(self.policy), h) is getattr(Policy, h)
                     for h in ("producer_start", "first_stage_end", "producer_end"))
        self.policy_event_delay_ticks = 0 if static else self.frontend_ticks
        # statistics accumulated by the controllers
        self.occ_hist = np.zeros((U, mc.read_queue_entries + mc.write_queue_entries + 1), dtype=np.int64)
        self.bus_busy = np.zeros(U, dtype=np.int64)
        self.turnarounds = np.zeros(U, dtype=np.int64)
        self.cmd_count = np.zeros((U, T.NCMD), dtype=np.int64)
        self.record_commands = record_commands
        self._log: List[np.ndarray] = []
        self._pylog: List[Tuple[int, int, int, int, int]] = []
        self.batches = Batches(self.clock)
        self._kernel_at = 0  # cycle the controllers have simulated to (<= frontier; see advance)
        self._posted = []  # producer events posted for later cycles (PolicyEvents.post_policy_event)
        self.acc = Accum(len(Stream), len(Kind), len(Source))
        self.frontier = 0  # first unsimulated cycle
        self._last_submit_tick = 0
        #: arrival cycle of the last submission (``discovery_tick`` of its tick is computed from it)
        self.last_arrive = 0
        self.outstanding = 0
        self.outstanding_writes = 0  # of them, writes and updates (they set the pump cadence)
        self.feed: Optional[EnqueueFeed] = None  # the enqueue hook's (set_enqueue_hook)
        self.functional = FunctionalStore(self.access_B, dtype, REQUEST_B) if functional else None
        self.mode = mode
        #: pump steps take the fused compiled path (fast controller, no functional data, no command log)
        self._fused = mode == "fast" and not functional and not record_commands
        if mode == "fast":
            self.engine = FastController(self)
        elif mode == "reference":
            self.engine = ReferenceController(self)
        else:
            raise InputError("memory mode", repr(mode), "fast, reference")
        self._unit_next = getattr(self.engine, "unit_next", _NO_UNITS)  # per-unit lower bounds (fast only)
        self._unit_awaited = getattr(self.engine, "unit_awaited", _NO_UNITS)  # per-unit awaited requests (fast only)
        self._has_lb = hasattr(self.engine, "next_lb")

    # ---------------------------------------------------------------- setup
    def first_refresh(self, u: int) -> int:
        """Cycle of unit ``u``'s first refresh (staggered over the units by a fraction of the refresh interval)."""
        t = self.timing.refresh_interval
        return t + (u * t) // self.geom.units

    # ---------------------------------------------------------------- time
    @property
    def now_tick(self) -> int:
        """Tick of the frontier (first unsimulated cycle)."""
        return self.clock.cycle_to_tick(self.frontier)

    def next_event_tick(self) -> Optional[int]:
        """The latest tick at which :meth:`advance` still learns every completion strictly before it happens.

        None when nothing is outstanding. Otherwise one tick before the frontier (or the cycle a lookahead left a
        unit with write-backs at, if earlier) plus the shortest
        command-to-completion latency of the outstanding kinds (``tWL + tBL`` while a write or
        update is outstanding, else ``tCL + tBL``): a request that issues at or after the frontier
        cannot complete earlier. A later submission of a write can need an earlier advance:
        :meth:`discovery_tick` of its arrival.
        """
        if self.outstanding == 0:
            return None
        # a unit that a lookahead stopped with only write-backs left resumes from where it stopped
        return self._last_tick_before_done(min(self.frontier, getattr(self.engine, "lag", self.frontier)),
                                           self.outstanding_writes > 0)

    def discovery_tick(self, tick: int, write: bool) -> int:
        """The latest tick at which :meth:`advance` learns, strictly before it happens, the completion of a
        request submitted at ``tick`` (of a write/update if ``write``, else of a read)."""
        return self._last_tick_before_done(self.clock.next_cycle_at_or_after(tick + self.frontend_ticks), write)

    def last_discovery_tick(self, write: bool) -> int:
        """:meth:`discovery_tick` of the last submission's tick (from its arrival cycle, computed once)."""
        return self._last_tick_before_done(self.last_arrive, write)

    def _last_tick_before_done(self, cycle: int, write: bool) -> int:
        """One tick before the earliest completion of a request (a write/update if ``write``) that issues
        at or after ``cycle``."""
        return self.clock.cycle_to_tick(cycle + (self._min_done if write else self._read_done)) - 1

    # ---------------------------------------------------------------- submit
    def submit(self, tick: int, addrs, kind, stream, source, wg_id=None, wf_id=None, data=None,
               awaited: bool = True) -> int:
        """Submit a batch of DRAM accesses at ``tick`` (they reach the controller ``frontend_ticks`` later);
        return its batch id.

        ``addrs``: byte addresses (any integer array-like; each names the
        ``access_size_B`` block containing it). ``kind``/``stream``/``source``: :class:`Kind`,
        :class:`Stream`, :class:`Source` (member, code or name). ``wg_id`` /
        ``wf_id``: scalars or per-request arrays, passed to the enqueue hook.
        ``data``: functional mode, writes and updates: array ``(n, elems)``. ``awaited``: False for a batch no
        requester waits for (the L2's write-backs: a run may end with them in flight), which a lookahead does not
        run past the tick it is called at (:meth:`advance`).
        """
        kind = parse_enum(Kind, kind, "memory request kind")
        stream = parse_enum(Stream, stream, "memory request stream")
        source = parse_enum(Source, source, "memory request source")
        tick = int(tick)
        arrive = self.clock.next_cycle_at_or_after(tick + self.frontend_ticks)
        if arrive < self.frontier or tick < self._last_submit_tick:
            raise ValueError(f"submit at tick {tick} arrives in the past (memory frontier {self.now_tick}, last submit "
                             f"{self._last_submit_tick})")
        self._last_submit_tick = tick
        if type(addrs) is not np.ndarray or addrs.dtype != np.int64 or addrs.ndim != 1:
            addrs = np.atleast_1d(np.asarray(addrs, dtype=np.int64))
        a = addrs
        n = int(a.size)
        self.last_arrive = arrive
        # an empty batch completes on submission
        bid = self.batches.add(self.n, n, arrive if n else self.clock.next_cycle_at_or_after(tick))
        if self.functional is not None:
            self.functional.on_submit(bid, kind, n, data)
        if n == 0:
            return bid
        if self.acc.sc[SC_A0] < 0:
            self.acc.sc[SC_A0] = arrive
        if self.n + n > self._cap:
            self._compact_or_grow(n)
        s0, s1 = self.n, self.n + n
        am = self.amap
        eng = self.engine
        BK.fill_requests(self.RQ, s0, a, self.access_B, int(kind), int(stream), int(source), bid,
                         ids(wg_id, n), ids(wf_id, n),
                         arrive, am.radix_arr, am.pos_arr, am.bpg, am.xor, am.chash, self.f_head, self.f_tail,
                         self._unit_next, int(bool(awaited)), self._unit_awaited)
        self.n = s1
        self.outstanding += n
        if kind is not Kind.READ:
            self.outstanding_writes += n
        if self._has_lb and arrive < eng.next_lb:
            eng.next_lb = arrive
        return bid

    # ---------------------------------------------------------------- run
    def may_run_ahead(self) -> bool:
        """Whether :meth:`advance` may look ahead (module doc): fused fast path and a frontend latency. An enqueue
        hook may be set (its reports are ordered and held back to the horizon: :mod:`t3sim.memory.enqueue_feed`),
        and a policy with producer hooks (the port posts their events a frontend latency late, where no lookahead
        passes them: :meth:`~t3sim.memory.policy_events.PolicyEvents.post_policy_event`)."""
        return self._fused and self.frontend_ticks > 0

    def advance(self, until_tick: int, ahead_tick: Optional[int] = None) -> None:
        """Simulate every memory cycle that starts before ``until_tick``.

        ``ahead_tick`` (at most ``until_tick`` + the frontend latency; where :meth:`may_run_ahead`): a lookahead
        (module doc) to the cycle starting at or after it; a unit stops at its first cycle without requests (a row
        to close waits), or past ``until_tick`` at its first without awaited ones (only write-backs left: a run may
        end before they issue), and resumes there later, so no idle cycle and no write-back past ``until_tick`` is
        simulated yet.

        Lazily: with the fast controllers, no enqueue hook and no unit able to act before ``until`` (a lower bound
        the controllers keep; a submission lowers it to its arrival cycle, an arbitration-state change clears it),
        the controllers are left behind the frontier; the next advance that may issue (or :meth:`sync`) simulates
        the gap. Results are identical: the controllers are a function of the submissions, which never arrive
        before the frontier."""
        if ahead_tick is not None and (not self.may_run_ahead() or ahead_tick > until_tick + self.frontend_ticks):
            raise ValueError(f"advance({until_tick}, ahead_tick={ahead_tick}): a lookahead needs may_run_ahead() and "
                             f"at most the frontend latency ({self.frontend_ticks} ticks)")
        until = self.clock.next_cycle_at_or_after(int(until_tick if ahead_tick is None else ahead_tick))
        if self._posted:  # producer events: those due apply in order; no lookahead passes the next one
            until = self._apply_posted(self.clock.next_cycle_at_or_after(int(until_tick)), until)
        if until <= self.frontier:
            return
        self.frontier = until
        if self.lazy and self.feed is None and getattr(self.engine, "next_lb", 0) >= until:
            return
        if ahead_tick is None:
            self._run(until, False)
        else:
            self._run(until, False, ahead=True, hard=self.clock.next_cycle_at_or_after(int(until_tick)))

    def sync(self, until_tick: Optional[int] = None) -> None:
        """Bring the controllers up to the frontier (before reading their state or changing arbitration); with
        ``until_tick``, only up to the cycle starting at or after it, if the frontier is further (it ran ahead:
        :meth:`advance`), so that idle cycles are counted up to that tick and no further."""
        c = self.frontier
        if until_tick is not None:
            c = min(c, self.clock.next_cycle_at_or_after(int(until_tick)))
        if self._kernel_at < c:
            self._run(c, False)

    def settle(self, at_tick: int) -> None:
        """The controllers as they are at tick ``at_tick`` (for its statistics): advanced to it, idle units brought
        up to it and none further; LookaheadPastEnd if a lookahead simulated requests past it."""
        self.advance(at_tick)
        self.sync(at_tick)
        c = self.clock.next_cycle_at_or_after(int(at_tick))
        if any(self.engine.unit_cycle(u) > c for u in range(self.geom.units)):
            raise LookaheadPastEnd(f"memory statistics asked for t={at_tick} ps, but a lookahead simulated requests "
                                   "past it (simulation.memory_lookahead: false gives them)")

    def _invalidate(self) -> None:
        inv = getattr(self.engine, "invalidate_next", None)
        if inv is not None:
            inv()

    def run_until_idle(self) -> int:
        """Simulate until every submitted request has completed; return the last completion tick."""
        if self._posted:
            raise RuntimeError("run_until_idle with producer events posted for later cycles")
        self.sync()
        self._run(BIG_CYCLE, True)
        self._invalidate()
        last = max(0, int(self.acc.sc[SC_LAST_DONE]))
        self.frontier = max(self.frontier, max(self.engine.unit_cycle(u) for u in range(self.geom.units)), last)
        self._kernel_at = self.frontier
        return self.clock.cycle_to_tick(last)

    def _retire(self, issued: np.ndarray, records: Optional[np.ndarray] = None):
        """Account issued requests (growing the statistics arrays as needed); return completed batches.
        ``records``: the fast controller's output buffer holding their issue records (read instead of
        the request rows: the same fields, so the same result)."""
        acc = self.acc
        while True:
            b = self.batches
            if records is not None:
                done, need_b, need_l = retire_records(records, issued.size, b.done, b.remaining, acc.cnt, acc.rowcls,
                                                      acc.sc, acc.bw, acc.lat, acc.bin_cycles)
            else:
                done, need_b, need_l = retire(issued, self.r_batch, self.r_done, self.r_arrive, self.r_kind,
                                              self.r_stream, self.r_source, self.r_class, b.done, b.remaining,
                                              acc.cnt, acc.rowcls, acc.sc, acc.bw, acc.lat, acc.bin_cycles)
            if not (need_b or need_l):
                return done
            acc.grow(need_b, need_l)

    def _run(self, until: int, stop_when_idle: bool, ahead: bool = False, hard: int = 0) -> None:
        """Run the controllers up to cycle ``until``; ``ahead``: a lookahead from cycle ``hard`` (:meth:`advance`;
        fused path only)."""
        eng = self.engine
        feed = self.feed
        if not stop_when_idle and self._fused:
            # one compiled call (step_kernel.pump_step): controllers, hook rows, retire, ticks
            (done, ticks, rows, need_b, need_l, nw), ni = eng.step(until, feed is not None,
                                                                   feed is not None and feed.writes_only,
                                                                   ahead=ahead, hard=hard)
            if not ahead:  # after a lookahead, idle units (and those with only write-backs) are behind ``until``
                self._kernel_at = until
            if feed is not None:
                feed.offer(rows, min(until, eng.lag) if ahead else until)
            if not ni:
                return
            self.outstanding -= ni
            self.outstanding_writes -= nw
            if need_b or need_l:  # the statistics arrays were too small: nothing was retired yet
                self.batches.known(self._retire(eng.issued_view(ni)))
            else:
                self.batches.known(done, ticks)
            return
        span = eng.piece_cycles()
        if not span:
            self._run_piece(until, stop_when_idle)
            return
        lim = eng.min_cycle()
        while lim < until:  # in pieces (FastController.piece_cycles): the same simulation
            lim = min(until, lim + span)
            self._run_piece(lim, stop_when_idle)
            if stop_when_idle and not eng.reached(lim):
                break  # every unit stopped idle

    def _run_piece(self, until: int, stop_when_idle: bool) -> None:
        """The controllers' run up to ``until`` (not fused): issued and admitted requests reported and retired."""
        eng = self.engine
        feed = self.feed
        issued, admitted = eng.run(until, stop_when_idle)
        if not stop_when_idle:
            self._kernel_at = until
        if feed is not None:  # every unit reached ``until`` (or stopped idle)
            feed.offer(BK.admission_rows(admitted, self.RQ, feed.writes_only, self.clock.freq_kHz,
                                         self.geom.pseudo_channels), BIG_CYCLE if stop_when_idle else until)
        if not issued.size:
            return
        if self.functional is not None:
            self.functional.apply(self, issued)
        rec = getattr(eng, "records", None)
        self.outstanding -= int(issued.size)
        kinds = self.r_kind[issued] if rec is None else rec[BK.O_KIND, : issued.size]
        self.outstanding_writes -= int(np.count_nonzero(kinds != int(Kind.READ)))
        self.batches.known(self._retire(issued, rec))

    # ---------------------------------------------------------------- results
    def pop_completed(self) -> List[Tuple[int, int]]:
        """Batches whose completion became known since the last call: ``(batch_id, done_tick)``.

        ``done_tick`` may lie after the frontier (the last request has issued
        but its data burst is still in flight); it never lies before the
        previous :meth:`next_event_tick` when the caller advances that often.
        """
        return self.batches.pop_known()

    def batch_done_tick(self, bid: int) -> Optional[int]:
        """Completion tick of batch ``bid`` or None while requests remain."""
        return self.batches.done_tick(bid)

    def request_done_ticks(self, bid: int) -> np.ndarray:
        """Per-request completion ticks of batch ``bid`` (-1 while not issued), in submission order."""
        if self.compactions:
            raise RuntimeError("request_done_ticks: request arrays were compacted (set MemorySystem.compact_min = 0)")
        s = self.batches.first[bid]
        cyc = self.r_done[s: s + self.batches.count[bid]]
        return np.where(cyc < 0, -1, cycles_to_ticks(self.clock, np.maximum(cyc, 0)))

    def read_data(self, bid: int) -> np.ndarray:
        """Functional mode: values returned by the reads of batch ``bid``, ``(n, elems)``."""
        if self.functional is None:
            raise RuntimeError("read_data needs functional=True")
        return self.functional.read_result(bid)

    # ---------------------------------------------------------------- hooks
    def set_enqueue_hook(self, fn: Optional[Callable[[EnqueueInfo], None]], writes_only: bool = False,
                         at_tick: Optional[int] = None) -> None:
        """Call ``fn(EnqueueInfo)`` with the requests admitted to controller queues during each advance
        (``writes_only``: only writes and updates -- T3's tracker counts nothing else -- and no call
        for an advance that admitted none), in canonical order (:class:`~t3sim.memory.enqueue_feed.EnqueueFeed`).
        ``at_tick`` (the port's now): the hook changes then; admissions before it reach the old hook, and those a
        lookahead made at or after it go to the new one (none: dropped), as at the reference cadence, where they
        have not happened yet. Without it the controllers are run to the frontier first, past any lookahead."""
        self.sync(at_tick)
        held = None
        if self.feed is not None:
            c = self.frontier if at_tick is None else min(self.frontier, self.clock.next_cycle_at_or_after(int(at_tick)))
            held = self.feed.flush(c)  # sync brought every unit to c
            if held is not None and at_tick is None:
                raise RuntimeError(f"enqueue hook changed with {held.shape[1]} admissions held past the frontier "
                                   f"(cycle {self.frontier})")
        self.feed = None if fn is None else EnqueueFeed(fn, writes_only, self.clock.cycle_to_tick, self.access_B, held)

    @property
    def observing(self) -> bool:
        """Whether the controllers accumulate queue occupancy into ``obs`` (the policy's choice)."""
        return self.arb_state.observing

    # ---------------------------------------------------------------- controllers' callbacks
    def record_occupancy(self, u: int, occ: int, dt: int) -> None:
        self.occ_hist[u, occ] += dt
        if self.observing:
            self.obs[u, 0] += occ * dt
            self.obs[u, 1] += dt

    def count_command(self, u: int, c: int, cmd: int, bank: int, row: int) -> None:
        self.cmd_count[u, cmd] += 1
        if self.record_commands:
            self._pylog.append((c, u, cmd, bank, row))

    def add_command_log(self, log: np.ndarray) -> None:
        if self.record_commands and log.size:
            self._log.append(log)

    def command_log(self) -> np.ndarray:
        """Recorded commands, ``int64 [n, 5]``: cycle, unit, command, bank, row (bank/row -1 for REF)."""
        self.sync()
        parts = list(self._log)
        if self._pylog:
            parts.append(np.array(self._pylog, dtype=np.int64).reshape(-1, 5))
        if not parts:
            return np.zeros((0, 5), dtype=np.int64)
        log = np.concatenate(parts)
        return log[np.lexsort((np.arange(len(log)), log[:, 0], log[:, 1]))]

    def stats(self, prefix: str = "", at_tick: Optional[int] = None):
        """All statistics as a :class:`~t3sim.results.stats.Stats`, at tick ``at_tick`` (:meth:`settle`; None: at
        the frontier)."""
        return collect(self, prefix, at_tick)
