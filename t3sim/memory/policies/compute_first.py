"""``compute_first``: always prefer the compute stream; communication only when compute has nothing eligible."""

from __future__ import annotations

from t3sim.memory.policies.base import COMM, COMPUTE, FAST_COMPUTE_FIRST, ArbView, Policy
from t3sim.registry import register


@register("arbitration", "compute_first")
class ComputeFirst(Policy):
    fast_code = FAST_COMPUTE_FIRST

    def choose(self, v: ArbView) -> int:
        if v.eligible_compute:
            return COMPUTE
        if v.eligible_comm:
            return COMM
        return -1
