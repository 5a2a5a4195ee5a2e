"""``t3_mca``: T3's communication-aware memory-controller arbitration (paper Sec. 4.5).

Decision order for one admission:

1. communication, if the producer kernel's end requested a drain (:meth:`T3MCA.producer_end`),
   or if the oldest pending communication request has waited ``starvation_limit_cycles`` since
   it arrived or since the last communication admission, whichever is later;
2. compute, if eligible (compute always has priority);
3. communication, only while the channel's queue occupancy (read + write queue entries) is
   below the threshold.

The threshold is static (``occupancy_threshold``; None = unlimited) or, with
``threshold_mode: dynamic``, unlimited until the producer's first, isolated stage ends and then
chosen per channel from the mean occupancy observed during that stage: the first
``dynamic_occupancy_levels[i]`` the mean reaches selects ``dynamic_thresholds[i]``; a mean below
every level (a compute-bound kernel) leaves the threshold unlimited. When the producer kernel
ends, communication drains and the threshold is lifted (nothing left to keep queue room for:
a fused reduce-scatter outliving its GEMM would otherwise stay throttled to a few queue entries
per channel) until the next producer kernel starts, which restores it.
"""

from __future__ import annotations

import numpy as np

from t3sim.memory.policies.base import COMM, COMPUTE, NEVER, NONE, ArbState, Policy
from t3sim.registry import register

#: ``pp``: the starvation limit (memory cycles)
STARVE = 0


def choose(c, e0, e1, a0, a1, occ, last_stream, last_comm, drain, threshold, pp):
    """Drained or starved communication, else compute, else communication below the threshold."""
    if e1:
        since = last_comm if last_comm > a1 else a1
        if drain != 0 or c - since >= pp[STARVE]:
            return COMM
    if e0:
        return COMPUTE
    if e1 and (threshold < 0 or occ < threshold):
        return COMM
    return NONE


def wake(c, a0, a1, occ, last_stream, last_comm, drain, threshold, pp):
    """The cycle the waiting communication request becomes starved."""
    if a1 < 0:
        return NEVER
    since = last_comm if last_comm > a1 else a1
    return since + pp[STARVE]


@register("arbitration", "t3_mca")
class T3MCA(Policy):
    choose = staticmethod(choose)
    wake = staticmethod(wake)

    @property
    def dynamic(self) -> bool:
        return self.cfg.threshold_mode == "dynamic"

    def params(self) -> tuple:
        return (int(self.cfg.starvation_limit_cycles),)

    def initial_threshold(self) -> int:
        if self.dynamic or self.cfg.occupancy_threshold is None:
            return -1
        return int(self.cfg.occupancy_threshold)

    def thresholds_from_observation(self, mean_occupancy) -> np.ndarray:
        """Per-channel dynamic thresholds from the mean occupancies of the isolated stage."""
        occ = np.asarray(mean_occupancy, dtype=float)
        out = np.full(occ.shape, -1, dtype=np.int64)
        for level, thr in reversed(list(zip(self.cfg.dynamic_occupancy_levels, self.cfg.dynamic_thresholds))):
            out[occ >= level] = thr
        return out

    def init(self, state: ArbState) -> None:
        state.threshold[:] = self.initial_threshold()
        if self.dynamic:
            state.observe()

    def producer_start(self, state: ArbState) -> None:
        state.threshold[:] = self.initial_threshold()
        if self.dynamic:
            state.observe()

    def first_stage_end(self, state: ArbState) -> None:
        mean = state.end_observation()
        if self.dynamic:
            state.threshold[:] = self.thresholds_from_observation(mean)

    def producer_end(self, state: ArbState) -> None:
        state.drain[:] = 1
        state.threshold[:] = -1
