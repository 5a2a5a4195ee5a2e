"""Helpers for whole-system tests: build experiment configs in code and simulate pieces of them."""

from __future__ import annotations

from t3sim.config import load_experiment
from t3sim.system.model import SystemModel

from tests.conftest import REPO

DEFAULT = REPO / "configs/experiments/default.yaml"

# Two-GPU OP sub-layer of a 512-wide model: ~0.2 s a point once numba's cache is warm.
_TINY_SWEEP = """\
name: {name}
system:
  base: systems/t3-table1.yaml
  interconnect: {{num_gpus: 2}}
workload:
  model: {{base: models/t-nlg.yaml, hidden_size: 512}}
  sublayer: OP
  tp: 2
  tokens: 128
scheme: {{kind: sequential}}
sweep:
  grid:
    workload.tokens: [128, 256]
    scheme.kind: [{schemes}]
"""


def tiny_sweep(name: str, schemes) -> str:
    """Experiment-file text: the tiny sub-layer above at 128 and 256 tokens (one and two GEMM tile rows) under each of ``schemes``."""
    return _TINY_SWEEP.format(name=name, schemes=", ".join(schemes))


#: The earlier Table 1 memory model: 64 B DRAM accesses (BL4, tRTW = 16) and no controller frontend
#: latency. The homogeneous-vs-explicit tests run on it: they check the mirroring machinery at the tolerances that
#: were measured on it. Under the current defaults (32 B accesses, 100-cycle frontend latency) per-GPU data placement
#: matters more (bank groups, latency-bound in-flight limits), and the explicit runs' per-GPU spread, which
#: homogeneous mode cannot see, grows at these small sizes (measured gaps in each test's docstring).
MEM64 = ("system.hbm.burst_length=4", "system.hbm.timing.tRTW_nCK=16", "system.memory_controller.frontend_latency_gpu_cycles=0")


def exp(*overrides: str):
    return load_experiment(DEFAULT, list(overrides))


def gemm_only(e):
    """Simulate just the workload's GEMM on GPU 0; returns (GemmRun, model)."""
    m = SystemModel(e)
    done = m.gemm()
    done.callbacks.append(lambda _e: m.engine.finish())
    m.engine.run()
    return done.value[next(iter(done.value))], m
