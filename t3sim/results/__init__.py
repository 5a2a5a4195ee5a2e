"""Results: statistics with units, and the on-disk results layout (writer and reader).

This package imports no simulation code; ``t3sim.analysis`` reads through it.
"""

from t3sim.results.stats import Stat, Stats  # noqa: F401
from t3sim.results.store import ResultStore, RunResult, config_hash, load_run, read_csv  # noqa: F401,E402
