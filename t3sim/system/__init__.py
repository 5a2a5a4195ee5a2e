"""System layer: the simulation core. Builds a simulated multi-GPU system from a resolved point and runs it.

Public API::

    from t3sim.system import simulate
    result = simulate(experiment_config)      # -> t3sim.results.RunResult
    seq, ideal = simulate_shared([seq_cfg, ideal_cfg])  # points sharing one simulation, simulated once

These simulate points whole; :func:`t3sim.exec.dispatch.simulate` also runs the sampled modes
(``simulation.sampling.mode``, :mod:`t3sim.sampling`).
"""

from t3sim.system.core import Resolved, resolve, shared_groups, simulate, simulate_shared  # noqa: F401
from t3sim.system.model import SystemModel  # noqa: F401
