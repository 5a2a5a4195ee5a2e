"""``gemm_a2a`` and ``fused_gemm_a2a`` (MoE combine) at reduced sizes: every output tile arrives
exactly once at its tokens' GPU with the right value, flags follow their slices' data and are seen before use, the
bytes on the links are the analytic count, remote rows go first, occupancy follows the stated register count."""

from __future__ import annotations

import pytest

from t3sim.config import load_experiment
from t3sim.errors import InputError
from t3sim.schemes.fused.fused_gemm_a2a import FusedGemmA2A, analytic_link_bytes
from t3sim.system.model import SystemModel
from tests.conftest import REPO
from tests.schemes.helpers import run_experiment

EXP = REPO / "configs/experiments/fused-gemm-a2a.yaml"
# 1024 expert rows per GPU (8 tile rows of 128: 2 per destination), N = 256 (2 tile columns), K = 128; 2 CUs
SMALL = ["sweep.cases=[]", "sweep.grid={}", "workload.gemm.M=4096", "workload.gemm.N=256", "workload.gemm.K=128",
         "system.gpu.num_cus=2"]


def run(*overrides: str):
    return run_experiment(EXP, SMALL, overrides)


def test_functional_explicit_every_tile_once_with_its_value():
    m, _ = run("simulation.mode=explicit", "simulation.functional_data=true")
    c = m.context
    assert c.verified
    assert c.checked["tiles_once"] == 4 * 8 * 2
    assert c.checked["polls_checked"] == 4 * 3 * 2  # each GPU: 3 peers x 2 tile rows
    assert c.checked["words_checked"] == 4 * 1024 * 256 // 2  # every receiver's 4 blocks of 256 rows, fp16 pairs


def test_homogeneous_link_bytes_flags_and_explicit_agree():
    m, ph = run()
    c = m.context
    assert c.verified and c.flags.puts == 4 * 3 * 2
    assert sum(m.network.bytes_injected.values()) == analytic_link_bytes(c) == c.fabric.sent_B == c.fabric.landed_B
    me, phe = run("simulation.mode=explicit")
    assert sum(me.network.bytes_injected.values()) == analytic_link_bytes(me.context)
    assert phe.total == pytest.approx(ph.total, rel=0.05)


def test_checks_catch_a_flag_before_its_data():
    m, _ = run()
    c = m.context
    key = next(iter(c.flags.land_tick))
    c.flags.land_tick[key] = -1
    with pytest.raises(AssertionError, match="before tile"):
        c.verify()


def test_remote_rows_first():
    m = SystemModel(load_experiment(EXP, SMALL))
    c = FusedGemmA2A(m)
    order = c.order(2)
    dests = [c.dest(t // m.kernel.tiles_n) for t in order]
    assert dests == [3] * 4 + [0] * 4 + [1] * 4 + [2] * 4
    assert c.incoming(2) == [(s, tm) for s in (0, 1, 3) for tm in (4, 5)]


def test_occupancy_from_the_stated_register_count():
    """The GEMM WG (8 wavefronts, 128 VGPRs, 32 KB LDS) holds 2 WGs per CU, limited by the 64 KB LDS; the library's
    16 VGPRs (144 per lane: 3 waves per SIMD, 12 per CU) leave it at 2 (no loss); 144 more VGPRs (272: 1 wave per
    SIMD) drop it to 0.5 of the waves."""
    m, _ = run()
    o = m.context.occ
    assert (o.base_wgs_per_cu, o.fused_wgs_per_cu, o.reduction, o.fused_limiter) == (2, 2, 0.0, "lds")
    m2 = SystemModel(load_experiment(EXP, SMALL + ["scheme.fused_library_registers_per_thread=144"]))
    o2 = FusedGemmA2A(m2).occ
    assert (o2.base_wgs_per_cu, o2.fused_wgs_per_cu, o2.reduction) == (2, 1, 0.5)


def test_baseline_and_bad_inputs():
    mb, pb = run("scheme.kind=gemm_a2a")
    assert pb.gemm > 0 and pb.rs > 0
    with pytest.raises(InputError):
        run("scheme.kind=gemm_a2a", "simulation.functional_data=true")
    with pytest.raises(InputError, match="fused_gemm_a2a"):
        run("workload.gemm.M=3072")  # 768 rows per GPU: 192 per destination, not whole 128-row tiles
    with pytest.raises(Exception, match="gemm_a2a"):
        load_experiment(EXP, SMALL + ["workload.gemm.M=4100"])
