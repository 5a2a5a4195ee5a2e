"""``compute_first``: always prefer the compute stream; communication only when compute has nothing eligible."""

from __future__ import annotations

from t3sim.memory.policies.base import COMM, COMPUTE, NONE, Policy
from t3sim.registry import register


def choose(c, e0, e1, a0, a1, occ, last_stream, last_comm, drain, threshold, pp):
    """Compute if eligible, else communication if eligible."""
    if e0:
        return COMPUTE
    if e1:
        return COMM
    return NONE


@register("arbitration", "compute_first")
class ComputeFirst(Policy):
    choose = staticmethod(choose)
