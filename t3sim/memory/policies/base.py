"""Arbitration policy contract.

Each memory cycle, for each channel, the controller builds an :class:`ArbView`
and asks the policy for the stream (0 = compute, 1 = communication) whose
oldest pending request enters the read/write queue now, or -1 for none. A
stream is *eligible* when its oldest pending request has arrived and the
queue it needs (read queue for reads, write queue for writes and updates) has
a free entry; a policy only ever picks an eligible stream.

The reference controller calls :meth:`Policy.choose`. The fast (numba)
controller runs the same decision compiled, selected by :attr:`Policy.fast_code`;
a policy with ``fast_code = None`` runs in reference mode only. The two are
held equal by ``tests/memory/test_fast_vs_reference.py``.

Per-channel arbitration state (all in memory cycles):

* ``last_stream``: the stream admitted last (-1 before any);
* ``last_comm_admit``: cycle of the last communication admission (-1 none);
* ``drain``: communication drain requested at the producer kernel boundary;
* ``threshold``: occupancy threshold for communication (-1 = unlimited).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

COMPUTE, COMM = 0, 1

#: numba codes of the built-in policies
FAST_ROUND_ROBIN, FAST_COMPUTE_FIRST, FAST_T3_MCA = 0, 1, 2


@dataclass
class ArbView:
    """What a policy may look at (one channel, one decision)."""

    cycle: int
    eligible_compute: bool
    eligible_comm: bool
    comm_head_arrival: int  # arrival cycle of the oldest pending comm request (-1 if none)
    occupancy: int  # requests in the read + write queues
    last_stream: int
    last_comm_admit: int
    drain: bool
    threshold: int


class Policy:
    """Base class; subclasses register under ``arbitration``."""

    fast_code: Optional[int] = None
    #: True when the policy uses ``threshold`` set by :meth:`thresholds_from_observation`
    dynamic: bool = False

    def __init__(self, arb_cfg):
        self.cfg = arb_cfg

    def initial_threshold(self) -> int:
        return -1

    def starvation_limit(self) -> int:
        return 0

    def choose(self, v: ArbView) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def thresholds_from_observation(self, mean_occupancy):
        """Per-channel thresholds after the first, isolated stage (None: keep)."""
        return None


def build(arb_cfg) -> Policy:
    """Instantiate the policy named by ``arb_cfg.kind``."""
    from t3sim import registry

    cls = registry.get("arbitration", arb_cfg.kind, "memory_controller.arbitration.kind")
    return cls(arb_cfg)
