"""Runners: an experiment's points run on this process, a local process pool or a Dask cluster.

* :mod:`t3sim.exec.runner` -- ``run_points`` / ``run_experiment``: reuse finished points, simulate the rest,
  save each as it lands;
* :mod:`t3sim.exec.dispatch` -- resolves a point once and runs it whole (:mod:`t3sim.system`) or sampled
  (:mod:`t3sim.sampling`);
* :mod:`t3sim.exec.checks` -- the pre-run checks of a resolved point;
* :mod:`t3sim.exec.executors`, :mod:`t3sim.exec.progress` -- where tasks run, how progress is shown.

Usage::

    from t3sim.config.sweep import expand
    from t3sim.exec.progress import Progress
    from t3sim.exec.runner import run_points

    outcomes = run_points(expand("exp.yaml"), jobs=4, progress=Progress())
    outcomes = run_points(expand("exp.yaml"), executor="dask", scheduler="tcp://host:8786")

The package imports nothing itself: ``t3sim --help`` loads :mod:`t3sim.exec.executors` (for its error type)
without the simulator.
"""
