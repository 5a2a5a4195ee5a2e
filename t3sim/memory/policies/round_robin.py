"""``round_robin``: the paper's starting point (Sec. 4.5 a/b).

Alternate between the compute and communication streams; when only one is
eligible, take it (fall back to the other stream when one is empty).
"""

from __future__ import annotations

from t3sim.memory.policies.base import COMM, COMPUTE, NONE, Policy
from t3sim.registry import register


def choose(c, e0, e1, a0, a1, occ, last_stream, last_comm, drain, threshold, pp):
    """Both eligible: the stream not admitted last (compute first); else the eligible one."""
    if e0 and e1:
        return COMPUTE if last_stream == COMM else (COMM if last_stream == COMPUTE else COMPUTE)
    if e0:
        return COMPUTE
    if e1:
        return COMM
    return NONE


@register("arbitration", "round_robin")
class RoundRobin(Policy):
    choose = staticmethod(choose)
