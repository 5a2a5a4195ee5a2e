"""The per-element loops of the compiled kernels run without the numba runtime (docs/performance.md).

With the runtime, numba reference-counts each array argument of every call, inlined helpers included, with atomic
updates: in the L2 kernel's per-access loop they were 47 % of its time, and 11-17 % of whole runs (FLUX, explicit
TP=16) under perf. The loops below therefore live in functions compiled with ``_nrt=False`` (they allocate nothing;
their callers allocate). This holds each to that flag, so a refactoring that drops it fails here instead of showing
only as a slower benchmark; and it holds the flag to what it buys: the same loop compiled with the runtime has
reference-count calls, compiled without it has none.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from t3sim.cache.fast import l2_kernel as L2K
from t3sim.compute.fast import memhier_kernel as MK
from t3sim.dma.fast import tracker_kernel as TK
from t3sim.memory import bookkeeping as BK
from t3sim.memory.fast import controller_fast as CF
from t3sim.window import window_heap as WH
from t3sim.window import window_joins as WJ
from t3sim.window import window_kernel as WK

RUNTIME_FREE = {
    "l2_kernel._run_uniform": L2K._run_uniform,
    "l2_kernel._run_arrays": L2K._run_arrays,
    "memhier_kernel._cover": MK._cover,
    "memhier_kernel._plan": MK._plan,
    "memhier_kernel.record_fills": MK.record_fills,
    "bookkeeping._fill": BK._fill,
    "tracker_kernel.count_common": TK.count_common,
    **{f"window_heap.{n}": getattr(WH, n) for n in ("next_cycle", "_less", "_swap", "_sift_up", "_remove_first", "push",
                                                   "pop", "_ch_push", "_ch_pop", "register_done")},
    **{f"window_kernel.{n}": getattr(WK, n) for n in ("_maybe_end", "_retire_wg")},
    **{f"window_joins.{n}": getattr(WJ, n) for n in ("_new_join", "_room", "_free_join", "_attach", "fire_tick")},
}


@pytest.mark.parametrize("name", sorted(RUNTIME_FREE))
def test_hot_loop_is_compiled_without_the_runtime(name):
    assert RUNTIME_FREE[name].targetoptions.get("_nrt") is False, f"{name} is compiled with the numba runtime"


def test_the_controller_kernel_is_compiled_without_the_runtime():
    from t3sim.memory.policies.round_robin import RoundRobin
    from t3sim.memory.write_drain.watermark import Watermark

    run_kernel, _pump = CF.kernels(RoundRobin, Watermark)
    assert run_kernel.targetoptions.get("_nrt") is False


def _refcount_calls(nrt: bool) -> int:
    """NRT_incref/decref call sites in the L2 loop compiled afresh (no cache) with or without the runtime."""
    fn = numba.njit(_nrt=nrt)(L2K._run_uniform.py_func)
    S = np.zeros((4, 5, 2), dtype=np.int64)
    G = np.zeros(L2K.NG, dtype=np.int64)
    G[L2K.G_LINE_SHIFT], G[L2K.G_NBANKS], G[L2K.G_SPB], G[L2K.G_ASSOC] = 7, 2, 2, 2
    G[L2K.G_LINE_B], G[L2K.G_SECTOR_SHIFT], G[L2K.G_FREQ_KHZ] = 128, 5, 1_000_000
    addr = np.array([0, 128, 4096], dtype=np.int64)
    R = np.empty((L2K.NR, 3), dtype=np.int64)
    E = np.empty((L2K.NE, 3), dtype=np.int64)
    fn(addr, False, False, 0, 64, 0, S, G, np.zeros(3, dtype=np.int64), np.zeros(5, dtype=np.int64),
       np.zeros((1, 12), dtype=np.int64), R, E)
    ir = fn.inspect_llvm(fn.signatures[0])
    return ir.count("@NRT_incref") + ir.count("@NRT_decref")


def test_the_flag_removes_the_reference_counts():
    assert _refcount_calls(True) > 0
    assert _refcount_calls(False) == 0
