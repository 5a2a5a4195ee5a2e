"""Simulation side of ``t3sim validate``: measured hardware rows simulated the way they were measured.

* :mod:`t3sim.validation.rows` -- a collective or a GEMM alone;
* :mod:`t3sim.validation.overlap` -- a GEMM and a reduce-scatter in sequence, concurrently or chunked;
* :mod:`t3sim.validation.contention` -- a GEMM beside background copies;
* :mod:`t3sim.validation.loaded_latency` -- a dependent-load chase, idle or beside a streaming kernel
  (``experiments/validation/loaded_latency/compare.py``);
* :mod:`t3sim.validation.tasks` -- one row as a task for a worker process.

The statistics that compare simulated with measured times are :mod:`t3sim.analysis.validation` (which
simulates nothing).
"""
