"""Simulation side of ``t3sim validate`` for measured GEMM/collective overlap.

``experiments/validation/overlap_4gpu.csv`` times, for each Mega-GPT-2 sub-layer shape at TP=4 on 4 H200s, a
bf16 GEMM ``M x K`` by ``K x N`` and a 4-GPU reduce-scatter of its ``M x N`` output: each alone, in sequence,
concurrently (the RS of an *independent* array on a second stream) and chunked (the GEMM in 4 chunks of M/4
rows, chunk i's RS issued after chunk i on a second stream); its README says how. Each measured column
(:data:`t3sim.analysis.validation.OVERLAP_MEASURED`) is one validation row, simulated the way it was measured:

* ``gemm``: the GEMM alone on one GPU (:func:`~t3sim.validation.rows.simulate_gemm_sequence`), from a cold L2 as
  the program columns below run, so that the columns compare alike;
* ``rs``: the reduce-scatter of ``M x N`` elements alone (homogeneous mode, the paper's method); ``ag``: the
  all-gather of the ``M x K`` input alone (``ag_us`` of an ag_gemm row, t3sim.analysis.validation_settings);
* ``sequential``, ``concurrent``, ``chunked``: that scheme's program without the all-gather
  (:mod:`t3sim.schemes`) on ``system`` with ``tp`` GPUs, running the GEMM kernel ``t3sim validate`` validated
  (:func:`~t3sim.system.kernels.gemm_kernel_record`: ``torch.matmul`` operand layouts) over the row's shape.
  ``concurrent`` launches the RS first (``scheme.launch_first: comm``): the README does not state the issue
  order, and under the measured dispatch rules (experiments/validation/dispatch_order) an RS launched after the
  GEMM could not overlap it, which the measured times contradict. ``chunked``: 4 chunks along M.

The time reported is the program's span (first launch to last end), as the measurement's iteration time.
"""

from __future__ import annotations

import time
from typing import Dict

from t3sim.config.experiment import ExperimentConfig
from t3sim.schemes.baseline.chunked import chunked_program
from t3sim.schemes.baseline.concurrent import concurrent_program
from t3sim.schemes.runtime.program import run_program
from t3sim.schemes.baseline.sequential import sequential_program
from t3sim.sim.clock import TICKS_PER_US
from t3sim.system.kernels import gemm_kernel_record
from t3sim.system.model import SystemModel
from t3sim.validation.rows import SimOutcome, simulate_collective_elems, simulate_gemm_sequence, system_for_gpus

#: what each row's scheme program is, and the scheme options it runs with
PROGRAMS = {"sequential": (sequential_program, {}), "concurrent": (concurrent_program, {"launch_first": "comm"}),
            "chunked": (chunked_program, {"chunks": 4, "chunk_axis": "M"})}


def overlap_experiment(system, f: Dict[str, object], what: str) -> ExperimentConfig:
    """The experiment point of one overlap row: ``system`` with ``tp`` GPUs, the row's shape, scheme ``what``."""
    tp = int(f["tp"])
    sysg = system_for_gpus(system, tp, str(f.get("where", "row")))
    model = {"name": str(f["model"]), "hidden_size": int(f["N"]), "layers": 1, "seq_len": int(f["M"]), "batch": 1,
             "tp_degrees": [tp]}
    return ExperimentConfig.model_validate({
        "name": "validate-overlap", "system": sysg.model_dump(mode="python"),
        "workload": {"model": model, "sublayer": "OP", "tp": tp, "dtype": str(f["dtype"])},
        "scheme": {"kind": what, **PROGRAMS[what][1]}})


def simulate_overlap_row(system, f: Dict[str, object], where: str = "row"):
    """Simulated time (us) of one overlap validation row (module doc); a :class:`~t3sim.validation.rows.SimOutcome`."""
    what = str(f["what"])
    M, N, K, dtype = int(f["M"]), int(f["N"]), int(f["K"]), str(f["dtype"])
    if what == "gemm":
        return simulate_gemm_sequence(system, M, N, K, dtype, warm=False)
    if what in ("rs", "ag"):  # the collective alone: the RS of the M x N output, the AG of the M x K input
        coll, elems = ("reduce_scatter", M * N) if what == "rs" else ("all_gather", M * K)
        return simulate_collective_elems(system, coll, int(f["tp"]), elems, dtype, where)
    exp = overlap_experiment(system, {**f, "where": where}, what)
    t0 = time.perf_counter()
    model = SystemModel(exp, kernel=gemm_kernel_record(exp.system, M, N, K, dtype))
    run = run_program(model, PROGRAMS[what][0](model, with_ag=False))
    model.network.check_conserved()
    span = (run.end - run.start) / TICKS_PER_US
    detail = {r.name + "_end_us": (r.end - run.start) / TICKS_PER_US for r in run.records}
    detail["exposed_comm_us"] = run.exposed_comm() / TICKS_PER_US
    return SimOutcome(span, time.perf_counter() - t0, detail)
