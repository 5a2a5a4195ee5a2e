"""Compute/communication arbitration policies (registry category ``arbitration``).

Importing this package registers the built-in policies. A policy decides, each memory
cycle and per channel, which stream's pending request enters the controller
queues (``memory_controller.admissions_per_cycle`` decisions per cycle). See
:mod:`t3sim.memory.policies.base` for the contract.
"""

from t3sim.memory.policies import base, compute_first, round_robin, t3_mca  # noqa: F401  (registration)
from t3sim.memory.policies.base import ArbState, Policy, build

__all__ = ["ArbState", "Policy", "build"]
