"""System layer: build a simulated multi-GPU system from an experiment config and run it.

Public API::

    from t3sim.system import simulate
    result = simulate(experiment_config)      # -> t3sim.results.RunResult
    seq, ideal = simulate_shared([seq_cfg, ideal_cfg])  # points sharing one simulation, simulated once
"""

from t3sim.system.model import SystemModel  # noqa: F401
from t3sim.system.run import simulate, simulate_shared  # noqa: F401
