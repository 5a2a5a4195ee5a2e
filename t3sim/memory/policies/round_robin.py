"""``round_robin``: the paper's starting point (Sec. 4.5 a/b).

Alternate between the compute and communication streams; when only one is
eligible, take it (fall back to the other stream when one is empty).
"""

from __future__ import annotations

from t3sim.memory.policies.base import COMM, COMPUTE, FAST_ROUND_ROBIN, ArbView, Policy
from t3sim.registry import register


@register("arbitration", "round_robin")
class RoundRobin(Policy):
    fast_code = FAST_ROUND_ROBIN

    def choose(self, v: ArbView) -> int:
        if v.eligible_compute and v.eligible_comm:
            return COMPUTE if v.last_stream == COMM else COMM if v.last_stream == COMPUTE else COMPUTE
        if v.eligible_compute:
            return COMPUTE
        if v.eligible_comm:
            return COMM
        return -1
