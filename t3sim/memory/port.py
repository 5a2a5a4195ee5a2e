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

Enqueue hook timing: admissions are reported after each advance, with their
own ticks (``EnqueueInfo.tick``), i.e. at most one pump step after they
happened; a tracker that reacts should act at ``max(env.now, tick)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np
import simpy

from t3sim.memory.system import MemorySystem


@dataclass(frozen=True)
class BatchResult:
    """Value of an access event."""

    batch_id: int
    done_tick: int
    data: Optional[np.ndarray] = None


class MemoryPort:
    """simpy front end of one GPU's memory (see module docstring)."""

    def __init__(self, env: simpy.Environment, memory: MemorySystem) -> None:
        self.env = env
        self.mem = memory
        self._events: Dict[int, simpy.Event] = {}
        self._reads: set = set()
        self._wake = env.event()
        self.pump_steps = 0
        env.process(self._pump())

    def access(self, addrs, kind, stream, source, wg_id=None, wf_id=None, data=None) -> simpy.Event:
        """Submit a batch now; the returned event fires with a :class:`BatchResult` when it completes."""
        self.mem.advance(self.env.now)
        bid = self.mem.submit(self.env.now, addrs, kind, stream, source, wg_id=wg_id, wf_id=wf_id, data=data)
        ev = self.env.event()
        self._events[bid] = ev
        if self.mem.functional is not None and data is None:
            self._reads.add(bid)
        self._poke()
        return ev

    def kernel_boundary(self) -> None:
        """The producer kernel ended now (t3_mca drains communication)."""
        self.mem.advance(self.env.now)
        self.mem.kernel_boundary()
        self._poke()

    def begin_isolated_stage(self) -> None:
        self.mem.advance(self.env.now)
        self.mem.begin_isolated_stage()

    def end_isolated_stage(self) -> None:
        """The producer's first, isolated stage ended now (t3_mca dynamic threshold)."""
        self.mem.advance(self.env.now)
        self.mem.end_isolated_stage()

    def _poke(self) -> None:
        if not self._wake.triggered:
            self._wake.succeed()

    def _fire(self, bid: int, done: int) -> None:
        ev = self._events.pop(bid, None)
        if ev is None:
            return
        data = self.mem.read_data(bid) if bid in self._reads else None
        self._reads.discard(bid)
        res = BatchResult(bid, done, data)
        delay = done - self.env.now
        if delay <= 0:
            ev.succeed(res)
        else:
            self.env.timeout(delay).callbacks.append(lambda _e, ev=ev, res=res: ev.succeed(res))

    def _pump(self):
        env = self.env
        while True:
            self.pump_steps += 1
            self.mem.advance(env.now)
            for bid, done in self.mem.pop_completed():
                self._fire(bid, done)
            nxt = self.mem.next_event_tick()
            if self._wake.triggered:
                self._wake = env.event()
            if nxt is None:
                yield self._wake
            else:
                yield env.timeout(max(1, nxt - env.now)) | self._wake
