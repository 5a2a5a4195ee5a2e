"""CUDA-event timing shared by the one-GPU measurement scripts (``gemm_pipeline/``, ``gemm_kernels/``,
``loaded_latency/``).

The method of the committed H200 measurements: warm-ups, then each call between two CUDA events, microseconds.
"""

from __future__ import annotations

from typing import Callable, List

import torch


def ev_times(fn: Callable[[], object], reps: int, warm: int = 5) -> List[float]:
    """Microseconds of ``reps`` calls of ``fn``, each between two CUDA events, after ``warm`` warm-up calls."""
    out = []
    for i in range(warm + reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        if i >= warm:
            out.append(e0.elapsed_time(e1) * 1e3)
    return out
