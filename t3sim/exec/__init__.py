"""Sweep execution: run an experiment's points on this process, a local process pool or a Dask cluster.

Public API::

    from t3sim.config.sweep import expand
    from t3sim.exec import run_points, Progress

    outcomes = run_points(expand("exp.yaml"), jobs=4, progress=Progress())
    outcomes = run_points(expand("exp.yaml"), executor="dask", scheduler="tcp://host:8786")
"""

from t3sim.exec.executors import ExecutorError, default_jobs  # noqa: F401
from t3sim.exec.progress import Progress, Silent  # noqa: F401
from t3sim.exec.runner import PointError, PointOutcome, run_points, simulate_point  # noqa: F401
