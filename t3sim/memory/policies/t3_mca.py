"""``t3_mca``: T3's communication-aware memory-controller arbitration (paper Sec. 4.5).

Decision order for one admission:

1. communication, if the producer kernel's end requested a drain (:meth:`T3MCA.producer_end`),
   or if the oldest pending communication request has waited the starvation limit since
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
per channel) until the next producer kernel starts, which restores it. The producer's events (start, first
stage end, end) reach the controllers a frontend latency (``frontend_latency_gpu_cycles``) after they happen, as a
request sent then would (``MemoryPort._producer_event``; an assumption: the paper does not say how the controllers
learn of them); that keeps the results independent of the memory's pump cadence and lookahead.

The starvation limit when compute requests are always queued. Sec. 4.5:
"The MC always prioritizes compute stream accesses, but if empty, falls back to communication
stream. Additionally, it monitors the DRAM queue occupancy and only issues communication-related
accesses if occupancy is below a threshold. [...] Finally, the MC tracks cycles elapsed since the
last issue from the communication stream and prioritizes it if it exceeds a limit to ensure it is
not starved." With a memory-intensive producer (the TP=32 GEMMs of Sec. 6.4) a compute request is
always waiting, so rule 3 (the fallback, and with it the threshold) never applies and rule 1 alone
serves the communication stream: one DRAM access per limit cycles per channel. The limit *is* then the
communication bandwidth, access size x channels x HBM clock / limit. Sec. 4.5 rules out the two ends:
"giving the local compute stream dedicated access results in wasted cycles and memory bandwidth
underutilization" (a limit so long that the RS runs after the GEMM), and the threshold exists
because "Communication-related memory accesses appear in bursts and can occupy DRAM queues,
stalling the compute kernel's critical memory reads/writes" (serving them as they come). Sec.
6.1.3: the threshold "prevents RS traffic from completely occupying DRAM queues", i.e. it limits
communication's share of the queues, it does not stop communication. And Sec. 6.4 reports that
"T3-MCA also effectively speeds up larger models" (29 % geomean at the sub-layer), which it cannot
do with the RS serialised after the GEMM. So "not starved" must mean: communication is served at
least as fast as it can use memory, and no faster is useful. The communication stream of a GPU
cannot use more than its links carry, in (DMA updates, remote stores) plus out (DMA reads): the
default limit (``starvation_limit_cycles: null``) is the longest that still serves that rate,
floor(channels x access size x HBM clock / (links x link bandwidth x 2)) -- Table 1 (32 channels,
32 B accesses (hbm.access_size_B), 1 GHz, 2 x 75 GB/s each way): floor(1024 / 300)
= 3 cycles (6 when accesses were 64 B). Communication then gets at most the link
rate's share of each channel, and compute the rest, whatever the threshold; a communication
request that has waited less is still admitted only when compute is empty and the occupancy is
below the threshold. A fixed ``starvation_limit_cycles`` overrides it (1000 was t3sim's earlier
assumption; experiments/sweep-mca sweeps both).
"""

from __future__ import annotations

import numpy as np

from t3sim.config.system import SystemConfig
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


def link_rate_limit(system=None) -> int:
    """The longest starvation limit (memory cycles) at which one communication request per limit per
    channel carries the GPU's link bandwidth in both directions (module doc); ``system`` None = the
    default system. With no links (one GPU) there is no communication to serve: :data:`NEVER`."""
    system = SystemConfig() if system is None else system
    hbm, ic = system.hbm, system.interconnect
    link_GBps = 2 * ic.gpu_link_GBps
    if link_GBps <= 0:
        return NEVER
    units = hbm.channels * hbm.pseudo_channels
    return max(1, int(units * hbm.access_size_B * hbm.clock_GHz / link_GBps))


@register("arbitration", "t3_mca")
class T3MCA(Policy):
    choose = staticmethod(choose)
    wake = staticmethod(wake)

    @property
    def dynamic(self) -> bool:
        return self.cfg.threshold_mode == "dynamic"

    def params(self) -> tuple:
        return (self.starvation_limit(),)

    def starvation_limit(self) -> int:
        """``starvation_limit_cycles``, or the link-rate limit when it is None (module doc)."""
        if self.cfg.starvation_limit_cycles is not None:
            return int(self.cfg.starvation_limit_cycles)
        return link_rate_limit(self.system)

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
