"""System layer: build a simulated multi-GPU system from an experiment config and run it.

Public API::

    from t3sim.system import simulate
    result = simulate(experiment_config)      # -> t3sim.results.RunResult
"""

from t3sim.system.model import SystemModel  # noqa: F401
from t3sim.system.run import simulate  # noqa: F401
