"""Component/integration tests of the GEMM on one simulated GPU: directions and roofline bounds.

Small token counts keep each run to a few seconds; the directions are what matter.
"""

from __future__ import annotations

import pytest

from t3sim.config.workload import DTYPE_BYTES
from tests.system.helpers import exp, gemm_only


def _roofline_us(e, k):
    g, h = e.system.gpu, e.system.hbm
    flops = 2 * k.M * k.N * k.K
    compute_us = flops / (g.num_cus * g.fp16_flops_per_cycle * g.clock_GHz * 1e3)
    inputs_B = (k.M * k.K + k.K * k.N) * DTYPE_BYTES[k.dtype]
    memory_us = inputs_B / (h.peak_bandwidth_GBps * 1e3)
    return max(compute_us, memory_us)


@pytest.fixture(scope="module")
def op1024():
    e = exp("workload.sublayer=OP", "workload.tokens=1024")
    return e, *gemm_only(e)


def test_gemm_above_roofline(op1024):
    e, run, m = op1024
    sim_us = run.duration_ticks / 1e6
    bound = _roofline_us(e, m.kernel)
    assert sim_us >= bound
    assert sim_us < 3 * bound, "a compute-bound GEMM should not be far from its roofline"


def test_gemm_slower_with_fewer_cus(op1024):
    _, full, _ = op1024
    half, _ = gemm_only(exp("workload.sublayer=OP", "workload.tokens=1024", "system.gpu.num_cus=40"))
    assert half.stages == 2 * full.stages
    assert half.duration_ticks > 1.5 * full.duration_ticks


def test_gemm_slower_with_larger_k(op1024):
    _, op, _ = op1024
    fc2, m = gemm_only(exp("workload.sublayer=FC-2", "workload.tokens=1024"))  # K = 4H/TP = 4 x OP's K
    assert m.kernel.K == 4 * 532
    assert 3.0 * op.duration_ticks < fc2.duration_ticks < 5.0 * op.duration_ticks


def test_smaller_l2_means_more_dram_reads_and_no_speedup():
    """FC-2's B operand (K x N = 2128 x 4256 fp16 = 18 MB) does not fit a 2 MiB L2 (paper Secs. 3.2.2, 6.1.2)."""
    big, mb = gemm_only(exp("workload.sublayer=FC-2", "workload.tokens=512"))
    small, ms = gemm_only(exp("workload.sublayer=FC-2", "workload.tokens=512", "system.l2.size_MiB=2"))
    rd_big, rd_small = mb.hiers[0].traffic["gemm"]["read"], ms.hiers[0].traffic["gemm"]["read"]
    k = mb.kernel
    unique_inputs = (k.M * k.K + k.K * k.N) * 2
    assert rd_big >= 0.95 * unique_inputs  # every input byte comes from DRAM at least once
    assert rd_small > 1.3 * rd_big
    assert small.duration_ticks >= big.duration_ticks
