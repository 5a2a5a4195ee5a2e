"""``t3_mca``: T3's communication-aware memory-controller arbitration (paper Sec. 4.5).

Decision order for one admission:

1. communication, if the producer kernel's boundary requested a drain
   (``kernel_boundary()``), or if the oldest pending communication request
   has waited ``starvation_limit_cycles`` since it arrived or since the last
   communication admission, whichever is later;
2. compute, if eligible (compute always has priority);
3. communication, only while the channel's queue occupancy (read + write
   queue entries) is below the threshold.

The threshold is static (``occupancy_threshold``; None = unlimited) or, with
``threshold_mode: dynamic``, unlimited until ``end_isolated_stage()`` and then
chosen per channel from the mean occupancy observed during the producer's
first, isolated stage: the first ``dynamic_occupancy_levels[i]`` the mean
reaches selects ``dynamic_thresholds[i]``; a mean below every level (a
compute-bound kernel) leaves the threshold unlimited.
"""

from __future__ import annotations

import numpy as np

from t3sim.memory.policies.base import COMM, COMPUTE, FAST_T3_MCA, ArbView, Policy
from t3sim.registry import register


@register("arbitration", "t3_mca")
class T3MCA(Policy):
    fast_code = FAST_T3_MCA

    @property
    def dynamic(self) -> bool:  # type: ignore[override]
        return self.cfg.threshold_mode == "dynamic"

    def initial_threshold(self) -> int:
        if self.dynamic or self.cfg.occupancy_threshold is None:
            return -1
        return int(self.cfg.occupancy_threshold)

    def starvation_limit(self) -> int:
        return int(self.cfg.starvation_limit_cycles)

    def choose(self, v: ArbView) -> int:
        if v.eligible_comm:
            waited_since = max(v.last_comm_admit, v.comm_head_arrival)
            if v.drain or v.cycle - waited_since >= self.cfg.starvation_limit_cycles:
                return COMM
        if v.eligible_compute:
            return COMPUTE
        if v.eligible_comm and (v.threshold < 0 or v.occupancy < v.threshold):
            return COMM
        return -1

    def thresholds_from_observation(self, mean_occupancy):
        if not self.dynamic:
            return None
        occ = np.asarray(mean_occupancy, dtype=float)
        out = np.full(occ.shape, -1, dtype=np.int64)
        for level, thr in reversed(list(zip(self.cfg.dynamic_occupancy_levels, self.cfg.dynamic_thresholds))):
            out[occ >= level] = thr
        return out
