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
    ms.kernel_boundary()            # t3_mca: drain the communication stream
    ms.begin_isolated_stage(); ms.end_isolated_stage()   # t3_mca dynamic threshold
    ms.stats(prefix)                # Stats with units

simpy adapter::

    port = MemoryPort(env, ms)
    result = yield port.access(addrs, Kind.READ, Stream.COMPUTE, Source.GEMM, wg_id=3)
    result.done_tick, result.batch_id, result.data   # data: functional reads

Exactness. A batch's completion tick is known once its last request's column
command has issued (completion = command + tCL + tBL for reads, + tWL + tBL
for writes/updates). The pump advances the memory to ``env.now`` at least
every ``min(tCL, tWL) + tBL`` memory cycles while requests are outstanding
(``next_event_tick``), so every completion becomes known no later than it
happens and the batch's event fires at exactly its completion tick. While
nothing is outstanding the pump sleeps until the next ``access``.

An ``access`` only submits: it does not advance the memory. Its requests arrive
at or after ``env.now``, so they cannot complete before the pump step already
armed (at most ``min(tCL, tWL) + tBL`` cycles after the frontier), and the
controllers, which may lag the frontier, simulate the cycles before the arrival
exactly as if they had run first (:meth:`MemorySystem.advance`). This saves one
controller run per access at a distinct time.

Enqueue hook timing: admissions are reported after each advance, with their
own ticks (``EnqueueInfo.tick``), i.e. at most one pump step after they
happened; a tracker that reacts should act at ``max(env.now, tick)``.
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional

import numpy as np
import simpy

from t3sim.memory.system import MemorySystem
from t3sim.sim.engine import succeed_later


class BatchResult(NamedTuple):
    """Value of an access event (a NamedTuple: one is built per completed batch)."""

    batch_id: int
    done_tick: int
    data: Optional[np.ndarray] = None


class MemoryPort:
    """simpy front end of one GPU's memory (see module docstring).

    The pump is a callback, not a process: one pump step (a simpy timeout) is armed at a
    time, at the memory's :meth:`~MemorySystem.next_event_tick`; each step advances the memory
    to ``env.now``, fires the completions that became known and re-arms itself. :meth:`access`
    only submits (module docstring) and arms a step if none is armed. A step superseded by an
    earlier one stays in the heap and is ignored when it fires. One heap entry per completion.
    """

    def __init__(self, env: simpy.Environment, memory: MemorySystem) -> None:
        self.env = env
        self.mem = memory
        self._events: Dict[int, simpy.Event] = {}
        self._reads: set = set()
        self._step: Optional[simpy.Event] = None  # the scheduled pump step
        self._step_at = -1  # its tick
        self.pump_steps = 0

    def access(self, addrs, kind, stream, source, wg_id=None, wf_id=None, data=None) -> simpy.Event:
        """Submit a batch now; the returned event fires with a :class:`BatchResult` when it completes."""
        env, mem = self.env, self.mem
        bid = mem.submit(env.now, addrs, kind, stream, source, wg_id=wg_id, wf_id=wf_id, data=data)
        ev = env.event()
        self._events[bid] = ev
        if mem.functional is not None and data is None:
            self._reads.add(bid)
        for b, done in mem.pop_completed():  # an empty batch completes on submission
            self._fire(b, done)
        if self._step is None and mem.outstanding:
            # idle until now: the new requests arrive at or after the next cycle start
            self._arm(mem.clock.cycle_to_tick(mem.clock.next_cycle_at_or_after(env.now) + mem.min_done_cycles()))
        return ev

    def kernel_boundary(self) -> None:
        """The producer kernel ended now (t3_mca drains communication)."""
        self.mem.advance(self.env.now)  # the boundary applies from now on
        self.mem.kernel_boundary()
        self._service()

    def begin_isolated_stage(self) -> None:
        self.mem.advance(self.env.now)
        self.mem.begin_isolated_stage()

    def end_isolated_stage(self) -> None:
        """The producer's first, isolated stage ended now (t3_mca dynamic threshold)."""
        self.mem.advance(self.env.now)
        self.mem.end_isolated_stage()

    def _fire(self, bid: int, done: int) -> None:
        ev = self._events.pop(bid, None)
        if ev is None:
            return
        data = self.mem.read_data(bid) if bid in self._reads else None
        self._reads.discard(bid)
        succeed_later(self.env, ev, BatchResult(bid, done, data), done - self.env.now)

    def _service(self) -> None:
        """Advance the memory to now, fire what completed, and arm the next pump step."""
        env = self.env
        mem = self.mem
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
