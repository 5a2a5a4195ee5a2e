"""Row-buffer (page) policies: when a bank's open row is closed.

One definition, used by both controllers: :func:`closes_row` is numba-compiled, the fast kernel
(:mod:`t3sim.memory.fast.fast_kernel`) calls it inlined and the reference controller
(:mod:`t3sim.memory.controller_ref`) calls its Python function.

``memory_controller.page_policy`` (the names follow gem5's DRAM controller, whose ``page_policy``
offers ``open``, ``open_adaptive``, ``close`` and ``close_adaptive``):

* ``open`` -- a row stays open until a queued request to another row of the bank needs the bank
  and no queued request of the active queue hits the open row (FR-FCFS conflict precharge), or a
  refresh closes every bank.
* ``closed`` -- every column command closes its row (auto-precharge, as DRAMsim3's
  ``row_buf_policy = CLOSE_PAGE``, which issues every access as READ_PRECHARGE/WRITE_PRECHARGE, and
  gem5's ``close``): a request is a row hit only if it issues from a row opened for another request
  before that request's own column command (rare: only when dependencies reorder them).
* ``closed_adaptive`` -- a column command closes its row unless another request of the same queue
  (read queue for a read, write queue for a write or update) still hits it (gem5's
  ``close_adaptive``: "auto-precharge when there are no more row hits in the queue"; Ramulator 1's
  ``Closed`` and DRAMsim3's ``ArbitratePrecharge`` likewise close rows that no pending request hits).
  Requests queued together with the first access to a row still hit; a request that arrives after
  the row's last queued hit was served finds the bank closed (or closing) and pays tRP + tRCD.

How a close is carried out (both controllers): the column command marks its bank *closing*; a
closing bank accepts no further column commands, and its precharge (PRE) is issued on the row
command bus at the first cycle that meets every PRE timing rule (tRAS after the ACT, tRTP after a
read, tWL + tBL + tWR after a write), ahead of the row commands that queued requests want in that
cycle: the timing of an auto-precharge (the device precharges at that same earliest cycle), made
visible in the command log as a PRE that the independent checker verifies. The difference from a
true auto-precharge: two banks whose precharges fall due in the same cycle precharge one cycle
apart (HBM's row bus carries one command per cycle; an auto-precharge needs no bus slot).
A closing bank is precharged even while the queues are empty.
"""

from __future__ import annotations

from typing import Tuple

import numba as nb

OPEN, CLOSED, CLOSED_ADAPTIVE = 0, 1, 2
#: policy names in code order (``memory_controller.page_policy``)
NAMES: Tuple[str, ...] = ("open", "closed", "closed_adaptive")


def code(name: str) -> int:
    """The code of page policy ``name`` (ValueError for an unknown name)."""
    if name not in NAMES:
        raise ValueError(f"unknown page policy {name!r}; allowed: {', '.join(NAMES)}")
    return NAMES.index(name)


@nb.njit(cache=True, inline="always")
def closes_row(policy, hits_left):
    """Whether a column command closes its row under page policy ``policy`` (a code above), given
    ``hits_left``, the requests of the same queue that still hit the row after this one."""
    if policy == CLOSED:
        return True
    if policy == CLOSED_ADAPTIVE:
        return hits_left == 0
    return False
