"""t3sim: a cycle-level, discrete-event multi-GPU architecture simulator.

Layers (data flows one way): ``config`` -> ``system`` (build) -> simulate ->
``results`` (stats) -> ``analysis`` (metrics, plots). See README.md.
"""

__version__ = "0.1.0"

from t3sim.numba_cache import configure as _configure_numba_cache

_configure_numba_cache()  # before any compiled function is defined (t3sim/numba_cache.py)
