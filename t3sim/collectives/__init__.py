"""Collectives as plans on logical topologies, their DRAM-traffic accounting, analytic bounds,
a symbolic verifier and a timing runner on the simulated network.

Importing this package registers every plan builder under the ``"collective"``
registry category (see :mod:`t3sim.collectives.algorithms`).
"""

from t3sim.collectives import algorithms  # noqa: F401  (registers the plans)
from t3sim.collectives.algorithms import PLAN_NAMES, build_plan
from t3sim.collectives.plan import COLLECTIVES, Plan, Step, Xfer, split_ranges

__all__ = ["COLLECTIVES", "PLAN_NAMES", "Plan", "Step", "Xfer", "build_plan", "split_ranges"]
