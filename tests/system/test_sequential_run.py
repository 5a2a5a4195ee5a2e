"""Whole Sequential runs: modes agree, links conserve bytes, RS near the analytic ring estimate."""

from __future__ import annotations

import pytest

from t3sim.system import simulate
from tests.system.helpers import MEM64, exp


def _run(n: int, mode: str, *extra: str):
    return simulate(exp("workload.sublayer=OP", "workload.tokens=256", f"workload.tp={n}",
                        f"system.interconnect.num_gpus={n}", f"simulation.mode={mode}", *extra))


@pytest.mark.parametrize("n", [4, 8, pytest.param(16, marks=pytest.mark.slow)])
def test_homogeneous_and_explicit_agree(n):
    """Paper Sec. 5.1.1: by symmetry, simulating GPU 0 and mirroring it equals simulating every GPU (on MEM64,
    tests/system/helpers.py). Under the current defaults at 256 tokens the all-gather differs by +5.1 % (4 GPUs,
    explicit 21.873 vs 20.812 us) and +7.5 % (8 GPUs): explicit GPUs end it over a 20.2-21.9 us spread, since each
    forwards chunks at other addresses through latency-bound in-flight limits; at 1024 tokens they agree (below)."""
    h = _run(n, "homogeneous", *MEM64).summary
    x = _run(n, "explicit", *MEM64).summary
    for key in ("gemm_us", "rs_us", "ag_us", "total_us"):
        assert x[key] == pytest.approx(h[key], rel=0.03), key
    assert x["rs_write_MB"] == pytest.approx(h["rs_write_MB"], rel=0.03)


@pytest.mark.slow
def test_homogeneous_and_explicit_agree_on_the_default_memory_at_1024_tokens():
    """The current defaults (32 B accesses, frontend latency): at 1024 tokens on 4 GPUs the per-GPU spread averages
    out (measured: all-gather 53.582 vs 53.721 us, +0.26 %)."""
    h = simulate(exp("workload.sublayer=OP", "workload.tokens=1024", "workload.tp=4", "system.interconnect.num_gpus=4",
                     "simulation.mode=homogeneous")).summary
    x = simulate(exp("workload.sublayer=OP", "workload.tokens=1024", "workload.tp=4", "system.interconnect.num_gpus=4",
                     "simulation.mode=explicit")).summary
    for key in ("gemm_us", "rs_us", "ag_us", "total_us"):
        assert x[key] == pytest.approx(h[key], rel=0.01), key


def test_run_result_is_complete_and_deterministic():
    a = _run(4, "homogeneous")
    b = _run(4, "homogeneous")
    assert a.stats.to_dict() == b.stats.to_dict()  # same config + seed -> identical statistics
    s = a.stats
    for name in ("time.gemm_us", "time.rs_us", "time.ag_us", "time.total_us", "gpu0.dram_traffic.rs.read_bytes",
                 "gpu0.l2.read_hits", "gpu0.hbm.bytes"):
        assert name in s and s[name].unit and s[name].description
    # every link conserves bytes (simulate() checks; here: the totals add up too)
    inj = sum(v.value for k, v in s.items() if k.startswith("network.") and k.endswith("bytes_injected"))
    dlv = sum(v.value for k, v in s.items() if k.startswith("network.") and k.endswith("bytes_delivered"))
    assert inj == dlv > 0


def test_unrunnable_scheme_is_an_input_error():
    from t3sim.errors import InputError
    from t3sim.schemes.runtime.base import Scheme

    with pytest.raises(InputError, match="cannot run yet"):
        Scheme("future", "a scheme whose mechanism is not built", missing="not built").run(None)


@pytest.mark.slow
def test_tnlg_fc2_tp8_reduce_scatter_near_ring_estimate():
    """T-NLG FC-2, TP=8, Table 1.

    The array is the GEMM output T x H = 8192 x 4256 fp16 = S = 69,730,304 B. The ring RS uses both link
    directions (two rings, each carrying half the array), so each of the N-1 = 7 steps moves a chunk of
    S / N / 2 bytes per direction over a 75 GB/s link and pays the 500 ns link latency once:
        t = (N-1) * (S / (2 N B) + L) + launch = 7 * (4,358,144 B / 75 GB/s + 0.5 us) + 5 us = 415.3 us.
    The links bound it from below. Above that bound is DRAM time: each ring step's CU reduction reads both
    operands and writes the sum, a 2:1 read/write mix that 32 B accesses serve at 59 % efficiency (with
    64 B accesses the RS was within 15 % of the estimate, with 32 B it is 15.4 % above it, 479.1 us;
    experiments/t3-sublayers/README.md item 8, claim ``s611_nmc_rs_8``). So the Sequential RS lies 0-25 % above the
    estimate, and the Ideal-RS+NMC RS, whose near-memory updates remove the received operand's reads, within 10 %.
    """
    S, N, B, L, launch = 8192 * 4256 * 2, 8, 75e9, 0.5e-6, 5e-6
    estimate_us = ((N - 1) * (S / (2 * N) / B + L) + launch) * 1e6
    assert estimate_us == pytest.approx(415.3, abs=0.1)
    rs = simulate(exp()).summary["rs_us"]
    nmc = simulate(exp("scheme.kind=ideal_rs_nmc")).summary["rs_us"]
    assert estimate_us <= nmc <= 1.10 * estimate_us
    assert nmc < rs <= 1.25 * estimate_us
