"""``drain_when_full``: serve reads until the write queue is full, then drain it.

DRAMsim3's ``Controller::ScheduleTransaction`` (src/controller.cc): when not draining, a drain
starts once the write buffer is full (``write_buffer_.size() >= capacity``), or holds more than 8
writes while the command queues are empty (``size() > 8 && cmd_queue_.QueueEmpty()``); the
drain then issues as many writes as the buffer held when it began (``write_draining_ =
write_buffer_.size()``, decremented per write scheduled) and returns to reads. Here "the command
queues are empty" is "no read is queued" (t3sim schedules commands straight from its queues),
the drain counter is the contract's ``left``, and a drain also starts when the oldest write is
aged (the controllers' liveness bound, absent in DRAMsim3, which can leave up to 8 writes
waiting while reads never come).
"""

from __future__ import annotations

from t3sim.memory.write_drain.base import WriteDrain
from t3sim.registry import register

#: DRAMsim3's constant: with no read pending, drain once the write buffer holds more than this many writes
IDLE_DRAIN_WRITES = 8


def decide(draining, nr, nw, aged, left, cap, dp):
    """``dp = (IDLE_DRAIN_WRITES,)`` (module docstring)."""
    if draining != 0 and nw > 0 and left > 0:
        return 1, left
    if nw >= cap or (nr == 0 and nw > dp[0]) or (aged and nw > 0):
        return 1, nw
    return 0, 0


@register("write_drain", "drain_when_full")
class DrainWhenFull(WriteDrain):
    decide = staticmethod(decide)

    def params(self) -> tuple:
        return (IDLE_DRAIN_WRITES,)
