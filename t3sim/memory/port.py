"""The interface the GPU model uses: a thin simpy adapter over :class:`MemorySystem`.

Core API (pure, no simpy; all times are integer ticks, 1 tick = 1 ps)::

    ms = MemorySystem(system_cfg, mode="fast", functional=False)
    bid = ms.submit(tick, addrs, kind, stream, source, wg_id=None, wf_id=None, data=None)
    ms.advance(until_tick)          # simulate memory cycles starting before until_tick
    ms.next_event_tick()            # None when idle, else when to advance next
    ms.pop_completed()              # [(batch_id, done_tick), ...] newly known completions
    ms.request_done_ticks(bid)      # per-request completion ticks (reads: data returned)
    ms.read_data(bid)               # functional mode: values the reads returned
    ms.set_enqueue_hook(fn)         # fn(EnqueueInfo): requests entering controller queues
    ms.begin_isolated_stage()       # producer kernel events, for the arbitration policy:
    ms.end_isolated_stage()         #   starts, its first (isolated) stage ends,
    ms.kernel_boundary()            #   it ends (e.g. t3_mca: drain, dynamic threshold);
                                    #   the port posts them a frontend latency late (_producer_event)
    ms.stats(prefix)                # Stats with units

simpy adapter::

    port = MemoryPort(env, ms)
    result = yield port.access(addrs, Kind.READ, Stream.COMPUTE, Source.GEMM, wg_id=3)
    result.done_tick, result.batch_id, result.data   # data: functional reads
    port.access(addrs, Kind.WRITE, ..., request_B=64) # each address a 64 B request: 64 / access_size_B accesses

Requests and accesses. The memory moves ``hbm.access_size_B`` bytes per column command (32 B on
Table 1). ``access`` takes either DRAM accesses (one address each, the default) or, with
``request_B``, the GPU's larger requests (an aligned ``request_B`` block per address, a multiple of
the access size): each becomes ``request_B / access_size_B`` consecutive accesses of the same batch,
with its ``wg_id``/``wf_id`` (the tracker counts each access) and its data split among them;
functional reads return one row per request.

Exactness. A batch's completion tick is known once its last request's column
command has issued (completion = command + tCL + tBL for reads, + tWL + tBL
for writes/updates). While requests are outstanding the pump advances the
memory to ``env.now`` at the latest one tick before the frontier plus the
shortest completion latency of the outstanding kinds (``tWL + tBL`` = 4 cycles
while a write or update is outstanding, ``tCL + tBL`` = 16 while only reads are:
:meth:`MemorySystem.next_event_tick`), so every completion becomes known
strictly before it happens and the batch's event fires at exactly its
completion tick. While nothing is outstanding the pump sleeps until the next
``access``. Lookahead (``lookahead``, ``simulation.memory_lookahead``): where
:meth:`MemorySystem.may_run_ahead` (a frontend latency), a pump step at ``now``
advances the memory to
``now + frontend`` instead, the cycles no later submission can reach
(:mod:`t3sim.memory.system`, "Lookahead"); results are the same with fewer steps.

Order. Completions are fired through the environment's
:class:`~t3sim.sim.engine.Dispatcher`: all completions due at one tick fire
together, in (port creation, batch id) order, before every other (normal
priority) event of that tick. When a completion became known -- which depends on
the pump cadence -- therefore changes nothing: a simulation's results do not
depend on the cadence (``tests/memory/test_port.py`` holds Sequential, T3 and
T3-MCA runs at the default cadence and at one step per cycle to identical
statistics), which makes the cadence a pure speed setting.

An ``access`` only submits: it does not advance the memory. Its requests arrive
at or after ``env.now``, so they cannot complete before
:meth:`MemorySystem.discovery_tick` of their arrival (a write submitted while only
reads are outstanding re-arms the pump that early), and the controllers, which
may lag the frontier, simulate the cycles before the arrival exactly as if they
had run first (:meth:`MemorySystem.advance`). This saves one controller run per
access at a distinct time.

Enqueue hook timing: admissions are reported after an advance, with their own
ticks (``EnqueueInfo.tick``) and in canonical order (:mod:`t3sim.memory.enqueue_feed`):
without the lookahead at most one pump step after they
happened, with it up to a frontend latency before or, for the few held back,
about one pump step after. Whoever reacts must act at ``tick``, not at
``env.now``, to be independent of the cadence: T3's DMA engines start a block
``issue_latency_ns`` after the admission that completed its regions
(:meth:`t3sim.dma.engine.DMAEngines.trigger`).
"""

from __future__ import annotations

import itertools
from typing import Dict, NamedTuple, Optional

import numpy as np
import simpy

from t3sim.memory.system import MemorySystem
from t3sim.memory.request import Kind, parse_enum
from t3sim.sim.engine import dispatcher


def split_requests(addrs, wg_id, wf_id, data, request_B: int, access_B: int):
    """Requests of ``request_B`` bytes at ``addrs`` as accesses of ``access_B``: ``(addrs, wg_id, wf_id, data,
    accesses per request)``; per-request ids are repeated, data rows split (:func:`access_fields`)."""
    if request_B < access_B or request_B % access_B:
        raise ValueError(f"a request of {request_B} B is not a whole number of {access_B} B DRAM accesses")
    k = request_B // access_B
    a = np.asarray(addrs, dtype=np.int64).reshape(-1)
    base = a - a % request_B
    out = (base[:, None] + np.arange(0, request_B, access_B, dtype=np.int64)[None, :]).reshape(-1)
    return (out, *access_fields(wg_id, wf_id, data, a.size, k), k)


def access_fields(wg_id, wf_id, data, n: int, k: int):
    """The ids and data of ``n`` requests as those of their ``k`` accesses each: ``(wg_id, wf_id, data)``; an id
    that is None, a scalar or one value stays as it is, per-request ids are repeated, data rows split
    (``(n, e)`` -> ``(n k, e / k)``)."""

    def rep(x):
        if x is None or np.ndim(x) == 0 or np.size(x) == 1:
            return x
        return np.repeat(np.asarray(x, dtype=np.int64), k)

    if data is not None:
        d = np.asarray(data)
        data = d.reshape(n * k, d.size // (n * k)) if n else d
    return rep(wg_id), rep(wf_id), data


class BatchResult(NamedTuple):
    """Value of an access event (a NamedTuple: one is built per completed batch)."""

    batch_id: int
    done_tick: int
    data: Optional[np.ndarray] = None


class MemoryPort:
    """simpy front end of one GPU's memory (see module docstring).

    The pump is a callback, not a process: one pump step (a simpy timeout) is armed at a
    time, at the memory's :meth:`~MemorySystem.next_event_tick`; each step advances the memory
    to ``env.now``, hands the completions that became known to the dispatcher and re-arms itself.
    :meth:`access` only submits (module docstring) and arms an earlier step if its requests need
    one. A step superseded by an earlier one stays in the heap and is ignored when it fires. One
    heap entry per distinct completion tick (the dispatcher's).
    """

    _ids = itertools.count()  # creation order: the first part of the completion order key

    def __init__(self, env: simpy.Environment, memory: MemorySystem) -> None:
        self.env = env
        self.mem = memory
        self._id = next(MemoryPort._ids)
        self._dispatch = dispatcher(env)
        #: the windowed GEMM (t3sim.window.gemm_window) that drives this memory now, or None
        self.window = None
        self._events: Dict[int, simpy.Event] = {}
        self._reads: Dict[int, int] = {}  # functional reads: batch -> accesses per request
        self._step: Optional[simpy.Event] = None  # the scheduled pump step
        self._step_at = -1  # its tick
        self.pump_steps = 0
        #: let each pump step run the memory one frontend latency ahead of now where it may
        #: (MemorySystem.advance; simulation.memory_lookahead): fewer pump steps, the same results
        self.lookahead = True

    def access(self, addrs, kind, stream, source, wg_id=None, wf_id=None, data=None,
               request_B: Optional[int] = None, awaited: bool = True) -> simpy.Event:
        """Submit a batch now; the returned event fires with a :class:`BatchResult` when it completes.

        ``request_B``: each address names an aligned request of that many bytes, issued as
        ``request_B / access_size_B`` accesses (module docstring); None: each address is one access.
        ``awaited``: False for a batch that no requester waits for (the L2's write-backs), which the lookahead
        does not run past now (:meth:`MemorySystem.advance`): a run may end with it in flight."""
        env, mem = self.env, self.mem
        if self.window is not None:
            self.window_conflict()
        k = 1
        if request_B is not None and request_B != mem.access_B:
            addrs, wg_id, wf_id, data, k = split_requests(addrs, wg_id, wf_id, data, int(request_B), mem.access_B)
        bid = mem.submit(env.now, addrs, kind, stream, source, wg_id=wg_id, wf_id=wf_id, data=data, awaited=awaited)
        ev = env.event()
        self._events[bid] = ev
        if mem.functional is not None and data is None:
            self._reads[bid] = k
        for b, done in mem.pop_completed():  # an empty batch completes on submission
            self._fire(b, done)
        if mem.outstanding:  # no-op unless the new requests could complete before the armed step
            self._arm(mem.last_discovery_tick(parse_enum(Kind, kind, "memory request kind") is not Kind.READ))
        return ev

    def window_conflict(self) -> None:
        raise RuntimeError(f"memory accessed while the windowed GEMM {self.window.gk.name} drives it: the kernel was "
                           "marked exclusive but something else runs beside it (set simulation.gemm_window: false)")

    def kernel_boundary(self) -> None:
        """The producer kernel ended now (for the arbitration policy: ``Policy.producer_end``)."""
        self._producer_event("kernel_boundary")
        self._service()

    def begin_isolated_stage(self) -> None:
        """A producer kernel starts now (``Policy.producer_start``)."""
        self._producer_event("begin_isolated_stage")

    def end_isolated_stage(self) -> None:
        """The producer's first, isolated stage ended now (``Policy.first_stage_end``)."""
        self._producer_event("end_isolated_stage")

    def _producer_event(self, name: str) -> None:
        """A producer-kernel event that happens now reaches the controllers now, for a policy whose hooks do nothing;
        else after the frontend latency, as a request sent now would (an assumption: the paper does not say how the
        producer's progress reaches the controllers), so no lookahead has passed it. It is posted for that tick
        (:meth:`MemorySystem.post_policy_event`): one due after the run's end never applies."""
        if self.window is not None:
            self.window_conflict()
        mem = self.mem
        if mem.policy_event_delay_ticks:
            mem.post_policy_event(name, self.env.now + mem.policy_event_delay_ticks)
        else:
            mem.advance(self.env.now)
            getattr(mem, name)(self.env.now)

    def set_enqueue_hook(self, fn, writes_only: bool = False) -> None:
        """:meth:`MemorySystem.set_enqueue_hook` now; refused while the memory runs ahead of now (a lookahead
        admitted requests the hook would not see)."""
        mem = self.mem
        if fn is not None and mem.frontier > mem.clock.next_cycle_at_or_after(self.env.now):
            raise RuntimeError(f"enqueue hook set at t={self.env.now} ps while the memory has run ahead to cycle "
                               f"{mem.frontier} (set it before the run, or simulation.memory_lookahead: false)")
        mem.set_enqueue_hook(fn, writes_only, at_tick=self.env.now)

    def _fire(self, bid: int, done: int) -> None:
        ev = self._events.pop(bid, None)
        if ev is None:
            return
        k = self._reads.pop(bid, 0)
        data = None
        if k:
            data = self.mem.read_data(bid)
            if k > 1:  # one row per request
                data = data.reshape(data.shape[0] // k, k * data.shape[1])
        self._dispatch.at(done, (self._id, bid), ev, BatchResult(bid, done, data))

    def _service(self) -> None:
        """Advance the memory to now, fire what completed, and arm the next pump step."""
        env = self.env
        mem = self.mem
        if self.lookahead and mem.may_run_ahead():
            mem.advance(env.now, env.now + mem.frontend_ticks)
        else:
            mem.advance(env.now)
        for bid, done in mem.pop_completed():
            self._fire(bid, done)
        nxt = mem.next_event_tick()
        if nxt is not None:
            self._arm(nxt)

    def _arm(self, at: int) -> None:
        """Make sure a pump step runs no later than tick ``at`` (and after now)."""
        env = self.env
        at = max(at, env.now + 1)
        if self._step is not None and self._step_at <= at:
            return
        self._step_at = at
        self._step = step = env.timeout(at - env.now)
        step.callbacks.append(self._on_step)

    def _on_step(self, ev: simpy.Event) -> None:
        if ev is not self._step:
            return  # superseded by an earlier step
        self._step = None
        self.pump_steps += 1
        self._service()
