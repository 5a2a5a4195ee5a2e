"""Sampled simulation (``simulation.sampling.mode``): detailed runs of part of a workload, the rest extrapolated.

* :mod:`t3sim.sampling.plan` -- the arithmetic (steady state, extrapolation) and the waves mode's plan: the
  workload cut to its first rows;
* :mod:`t3sim.sampling.waves` -- ``mode: waves``, by GEMM waves;
* :mod:`t3sim.sampling.tables` -- ``mode: tables``, an embedding-bag layer by its tables.

The package sits above the simulation core: each detailed run is a point simulated whole by
:func:`t3sim.system.core.simulate_shared`. :mod:`t3sim.exec.dispatch` chooses a mode per point.
"""
