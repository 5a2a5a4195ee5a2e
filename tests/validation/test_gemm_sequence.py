"""A GEMM run whole or as row shards back to back, timed after a warm-up pass (t3sim.validation.rows).

Unit: bad shard counts are rejected. Component: the shards run back to back on one stream, each with the kernel the
library picks for its own shape, each launched when the previous one ends; the launch gap is paid once per shard;
the warm-up pass leaves an L2-sized GEMM's operands in the L2, so the timed pass reads less from DRAM and is faster.
"""

from __future__ import annotations

import pytest

from t3sim.config import load_system
from t3sim.sim.clock import ns_to_ticks
from t3sim.system.kernels import gemm_kernel_record
from t3sim.validation.rows import gemm_sequence_runs, simulate_gemm_row, simulate_gemm_sequence
from tests.conftest import REPO

SHAPE = (512, 1536, 1536)  # A 1.5 MiB, B 4.5 MiB, C 1.5 MiB: well inside the H800's 50 MB L2


@pytest.fixture(scope="module")
def system():
    return load_system(REPO / "configs/systems/h800-8gpu.yaml")


def _with_launch(system, ns):
    return system.model_copy(update={"gpu": system.gpu.model_copy(update={"kernel_launch_overhead_ns": ns})})


def test_bad_shard_counts_are_rejected(system):
    for pieces in (0, 3):
        with pytest.raises(ValueError, match="equal shards"):
            simulate_gemm_sequence(system, *SHAPE, "bf16", pieces)


def test_shards_run_back_to_back_with_their_own_kernel(system):
    runs, timed_from, _ = gemm_sequence_runs(system, *SHAPE, "bf16", pieces=8, warm=True)
    assert len(runs) == 16 and timed_from == runs[8].start_tick
    assert runs[0].start_tick == 0
    assert all(b.start_tick == a.end_tick for a, b in zip(runs, runs[1:]))
    shard = gemm_kernel_record(system, SHAPE[0] // 8, *SHAPE[1:], "bf16")
    whole = gemm_kernel_record(system, *SHAPE, "bf16")
    assert shard.kernel != whole.kernel  # a 64-row shard runs another kernel than the 512-row GEMM
    assert all(r.wgs == shard.num_wgs * shard.split_k for r in runs)
    out = simulate_gemm_sequence(system, *SHAPE, "bf16", 8)
    assert out.sim_us == pytest.approx((runs[-1].end_tick - timed_from) / ns_to_ticks(1000.0))


def test_each_shard_pays_the_launch_gap_once(system):
    """10 us more launch gap per kernel: the 8-shard pass takes 80 us more (the memory system has drained between
    the shards either way, so the shards themselves barely move)."""
    base = simulate_gemm_sequence(system, *SHAPE, "bf16", 8).sim_us
    more = simulate_gemm_sequence(_with_launch(system, system.gpu.kernel_launch_overhead_ns + 10_000), *SHAPE, "bf16",
                                  8).sim_us
    assert more - base == pytest.approx(80.0, abs=0.02 * base)


def test_the_warm_up_pass_leaves_the_operands_in_the_l2(system):
    cold = gemm_sequence_runs(system, *SHAPE, "bf16", warm=False)
    warm = gemm_sequence_runs(system, *SHAPE, "bf16", warm=True)
    assert warm[0][0] == cold[0][0]  # the warm-up pass is the cold run
    cold_us, warm_us = (simulate_gemm_sequence(system, *SHAPE, "bf16", warm=w).sim_us for w in (False, True))
    assert warm_us < cold_us
    assert simulate_gemm_row(system, *SHAPE, "bf16").sim_us == warm_us
