"""The simulator's model version: one integer naming the model that produced a result.

Every result records it (``meta.json`` of each run, :mod:`t3sim.results.store`; the committed reproduction
snapshot's ``model_version.json``; ``tests/system/golden_stats.json``), so whether a result is current is computed
(``t3sim reproduce --status``), never written by hand.

Invariant: any change that moves a golden statistic (``tests/system/test_golden.py``: a fidelity fix, a new
mechanism, a changed default) bumps :data:`MODEL_VERSION` by one, adds a row to :data:`HISTORY` naming the change,
and regenerates the golden file (``python -m tests.system.test_golden --write``). A change that leaves every
statistic equal (speed work, refactoring, analysis) keeps it. A stored run whose ``model_version`` differs from
this one is simulated again by ``t3sim run`` / ``t3sim reproduce`` (:mod:`t3sim.exec.runner`); a result with no
recorded version counts as version 0, "before versioning".

=======  =====================================================================================================
version  the change
=======  =====================================================================================================
0        before versioning: results that predate the first versioned model (each names what it predates)
1        the model as of release 0.1.0, the first versioned model
2        GEMM kernels chosen per shape by the system's library (split-K, MMA rate, tile order); collective start-up
         from NCCL's/RCCL's tuning tables; the two-socket PCIe topology; FLUX's tile-level costs
3        landing backpressure: links into a GPU run credit-based flow control over its receive buffer
         (``interconnect.receive_buffer_B``, set on every preset), so a GPU's memory holds a bounded amount of
         landed, unwritten peer data; new per-link statistics of the credits. The skewed L2 index for slice counts
         that are not powers of two (``l2.index_hash: skew``: the H200, H800 and A100 presets); the H200 preset's
         launch overhead, split-K dependent gap and L2-to-controller latency measured on an H200
=======  =====================================================================================================
"""

from __future__ import annotations

from typing import Dict

#: the current model version (an integer, bumped by one per results-moving change)
MODEL_VERSION = 3

#: version -> the change that made it (the table above, as data: ``t3sim reproduce --status`` names what a stale
#: result predates from it)
HISTORY: Dict[int, str] = {
    0: "before versioning",
    1: "the model as of release 0.1.0",
    2: "GEMM kernels chosen per shape by the system's library; collective start-up from NCCL's/RCCL's tuning tables; "
       "the two-socket PCIe topology; FLUX's tile-level costs",
    3: "landing backpressure: credit-based flow control on links into a GPU (interconnect.receive_buffer_B); the "
       "skewed L2 index for slice counts that are not powers of two; the H200 preset's launch costs and "
       "L2-to-controller latency measured on an H200",
}


def describe(version: int) -> str:
    """``version 1`` or ``version 0 (before versioning)``."""
    return f"version {version}" + (" (before versioning)" if version == 0 else "")
