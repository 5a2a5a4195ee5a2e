"""Occupancy limits per resource, stage counts and per-WG compute time."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.compute.occupancy import (
    cu_flops_per_cycle, k_step_compute_cycles, num_stages, occupancy, stage_of_wg, stage_size, wg_compute_cycles,
)
from t3sim.config.gpu import GPUConfig

GPU = GPUConfig()


def test_paper_table1_tile_is_register_limited_160_wgs_per_stage():
    # 128x128x32 tile, 256 threads, 128 regs/thread, 32 KB LDS (task brief / paper Sec. 2.5, Table 1)
    occ = occupancy(GPU, wfs_per_wg=8, registers_per_thread=128, lds_per_wg_B=32 * 1024)
    assert occ.limits_dict == {"registers": 2, "lds": 3, "threads": 8, "wg_slots": 32}
    assert (occ.wgs_per_cu, occ.limiter) == (2, "registers")
    assert stage_size(occ, GPU.num_cus) == 160
    # LDS carve-out for 2 x 32 KiB is 64 KiB, leaving 64 KiB of the unified array as L1
    assert occ.lds_carveout_B == 64 * 1024 and occ.l1_capacity_B == 64 * 1024


@pytest.mark.parametrize(
    "kw, limiter, n",
    [
        (dict(wfs_per_wg=32, registers_per_thread=16, lds_per_wg_B=0), "threads", 2),  # 1024 threads/WG
        (dict(wfs_per_wg=4, registers_per_thread=255, lds_per_wg_B=0), "registers", 2),  # 255 -> 256 regs x 128 thr
        (dict(wfs_per_wg=1, registers_per_thread=8, lds_per_wg_B=40 * 1024), "lds", 2),  # 96 KiB / 40 KiB
        (dict(wfs_per_wg=1, registers_per_thread=8, lds_per_wg_B=0), "wg_slots", 32),
    ],
)
def test_each_resource_can_limit(kw, limiter, n):
    occ = occupancy(GPU, **kw)
    assert (occ.limiter, occ.wgs_per_cu) == (limiter, n)
    assert occ.wgs_per_cu == min(occ.limits_dict.values())


def test_register_allocation_granularity():
    # 33 regs x 32 threads = 1056 -> rounded to 1280 per WF; 65536 / (1280*8) = 6
    occ = occupancy(GPU, wfs_per_wg=8, registers_per_thread=33, lds_per_wg_B=0)
    assert occ.regs_per_wg == 1280 * 8 and occ.limits_dict["registers"] == 6


def test_lds_reduces_l1_and_rounding():
    occ = occupancy(GPU, wfs_per_wg=4, registers_per_thread=32, lds_per_wg_B=1)
    assert occ.lds_per_wg_B == 256  # allocation unit
    assert occ.lds_carveout_B == 8 * 1024 and occ.l1_capacity_B == 120 * 1024
    none = occupancy(GPU, wfs_per_wg=4, registers_per_thread=32, lds_per_wg_B=0)
    assert none.lds_carveout_B == 0 and none.l1_capacity_B == 128 * 1024


def test_carveouts_above_unified_size_unusable():
    small = GPUConfig(lds_l1_size_KiB=80)  # e.g. MI210: 64 KB LDS + 16 KB L1
    occ = occupancy(small, wfs_per_wg=4, registers_per_thread=32, lds_per_wg_B=40 * 1024)
    assert occ.limits_dict["lds"] == 1 and occ.lds_carveout_B == 64 * 1024 and occ.l1_capacity_B == 16 * 1024


def test_does_not_fit_raises_naming_resource():
    with pytest.raises(ValueError, match="lds"):
        occupancy(GPU, wfs_per_wg=1, registers_per_thread=8, lds_per_wg_B=97 * 1024)
    with pytest.raises(ValueError, match="threads"):
        occupancy(GPU, wfs_per_wg=65, registers_per_thread=8, lds_per_wg_B=0)
    with pytest.raises(ValueError):
        occupancy(GPU, wfs_per_wg=1, registers_per_thread=256, lds_per_wg_B=0)


@settings(max_examples=200, deadline=None)
@given(wfs=st.integers(1, 32), regs=st.integers(1, 255), lds=st.integers(0, 96 * 1024))
def test_resident_wgs_respect_every_resource(wfs, regs, lds):
    try:
        occ = occupancy(GPU, wfs_per_wg=wfs, registers_per_thread=regs, lds_per_wg_B=lds)
    except ValueError:  # only when a single WG overflows the register file
        assert wfs * (-(-regs * 32 // 256) * 256) > 65536
        return
    n = occ.wgs_per_cu
    assert 1 <= n <= GPU.max_wgs_per_cu
    assert n * wfs * GPU.threads_per_wf <= GPU.max_threads_per_cu
    assert n * occ.regs_per_wg <= GPU.register_file_size_KiB * 1024 // 4
    assert n * lds <= n * occ.lds_per_wg_B <= occ.lds_carveout_B <= 96 * 1024
    assert occ.l1_capacity_B == GPU.lds_l1_size_KiB * 1024 - occ.lds_carveout_B
    # one more WG would break the limiting resource
    lim = occ.limiter
    if lim == "threads":
        assert (n + 1) * wfs * GPU.threads_per_wf > GPU.max_threads_per_cu
    elif lim == "registers":
        assert (n + 1) * occ.regs_per_wg > GPU.register_file_size_KiB * 1024 // 4
    elif lim == "lds":
        assert (n + 1) * occ.lds_per_wg_B > 96 * 1024
    else:
        assert n == GPU.max_wgs_per_cu


def test_stage_counts():
    assert num_stages(160, 160) == 1
    assert num_stages(161, 160) == 2
    assert num_stages(0, 160) == 0
    # Mega-GPT-2-like FC-2 output 16K x 3072 with 128x128 tiles = 3072 WGs over 160-WG stages
    assert num_stages(128 * 24, 160) == 20
    assert [stage_of_wg(i, 160) for i in (0, 159, 160, 3071)] == [0, 0, 1, 19]
    with pytest.raises(ValueError):
        num_stages(10, 0)


def test_compute_cycles():
    f16 = cu_flops_per_cycle(GPU, "fp16")
    assert f16 == 1024 and cu_flops_per_cycle(GPU, "fp32") == 128
    with pytest.raises(ValueError):
        cu_flops_per_cycle(GPU, "fp8")
    # 2*128*128*32 = 1,048,576 FLOP / 1024 = 1024 cycles alone; 2048 with 2 WGs sharing the CU
    assert wg_compute_cycles(128, 128, 32, f16) == 1024
    assert wg_compute_cycles(128, 128, 32, f16, wgs_sharing_cu=2) == 2048
    assert wg_compute_cycles(128, 128, 0, f16) == 0
    assert wg_compute_cycles(1, 1, 1, f16) == 1  # ceil
    # per-step times sum to the whole-WG time when tile_k divides K; last step is partial otherwise
    assert sum(k_step_compute_cycles(128, 128, 32, 1024, s, f16) for s in range(32)) == wg_compute_cycles(128, 128, 1024, f16)
    assert k_step_compute_cycles(128, 128, 32, 40, 1, f16) == wg_compute_cycles(128, 128, 8, f16)
    with pytest.raises(IndexError):
        k_step_compute_cycles(128, 128, 32, 40, 2, f16)


@given(tm=st.sampled_from([16, 64, 128, 256]), tn=st.sampled_from([8, 64, 128]), k=st.integers(0, 4096),
       share=st.integers(1, 4), rate=st.floats(0.01, 1.0, allow_nan=False))
def test_mma_rate_scales_the_flop_rate_exactly(tm, tn, k, share, rate):
    """The kernel's MMA rate fraction divides the CU's FLOP rate; cycles are the exact integer ceiling (the float's
    binary value as a fraction), and rate 1 is the plain formula."""
    f16 = cu_flops_per_cycle(GPU, "fp16")
    r = Fraction(rate)
    want = -(-(2 * tm * tn * k * share * r.denominator) // (f16 * r.numerator))
    assert wg_compute_cycles(tm, tn, k, f16, share, mma_rate=rate) == want
    assert wg_compute_cycles(tm, tn, k, f16, share, mma_rate=1.0) == wg_compute_cycles(tm, tn, k, f16, share)
    assert wg_compute_cycles(tm, tn, k, f16, share, mma_rate=rate) >= wg_compute_cycles(tm, tn, k, f16, share)


def test_mma_rate_half_doubles_and_bad_rates_are_rejected():
    f16 = cu_flops_per_cycle(GPU, "fp16")
    assert wg_compute_cycles(128, 128, 32, f16, mma_rate=0.5) == 2048
    assert k_step_compute_cycles(128, 128, 32, 40, 1, f16, 1, 0.5) == 2 * wg_compute_cycles(128, 128, 8, f16)
    for bad in (0.0, -0.5, 1.5, float("nan")):
        with pytest.raises(ValueError, match="mma_rate"):
            wg_compute_cycles(128, 128, 32, f16, mma_rate=bad)
