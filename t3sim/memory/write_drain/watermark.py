"""``watermark``: drain between a high and a low watermark, and whenever no read waits.

Ramulator 2's ``ControllerBase::set_write_mode`` (src/ramulator/controller/controller_base.cpp):
not draining, it starts when the write buffer is fuller than ``wr_high_watermark`` x its size or
the read buffer is empty; draining, it stops when the write buffer is below ``wr_low_watermark``
x its size and a read waits. Here the thresholds are whole entries, inclusive:
``hi = max(1, round(write_high_watermark x write_queue_entries))`` starts a drain at ``nw >= hi``,
``lo = round(write_low_watermark x write_queue_entries)`` ends it at ``nw <= lo``; a drain also
ends when the write queue is empty, and starts (and is not ended) while the oldest write is aged.
"""

from __future__ import annotations

from t3sim.memory.write_drain.base import WriteDrain
from t3sim.registry import register


def decide(draining, nr, nw, aged, left, cap, dp):
    """``dp = (hi, lo)`` in entries (module docstring)."""
    if draining != 0:
        if nw == 0 or (nr > 0 and nw <= dp[1] and not aged):
            return 0, left
        return 1, left
    if nw >= dp[0] or (nr == 0 and nw > 0) or aged:
        return 1, left
    return 0, left


@register("write_drain", "watermark")
class Watermark(WriteDrain):
    decide = staticmethod(decide)
    reads = ("write_high_watermark", "write_low_watermark")

    def params(self) -> tuple:
        mc = self.mc
        hi = max(1, int(round(mc.write_high_watermark * mc.write_queue_entries)))
        lo = int(round(mc.write_low_watermark * mc.write_queue_entries))
        return hi, lo
