"""The GEMV workload and kernel: config rules, the record, the geometry's requests and FLOPs (no padding),
the library kernel's memory-bound timing, and the ``gemv_ar`` baseline."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from t3sim.compute.gemv_kernel import GemvGeometry, span_masks, span_requests
from t3sim.config import load_experiment
from t3sim.errors import InputError
from t3sim.schemes.runtime import scheme_for
from t3sim.system import simulate
from t3sim.system.model import SystemModel
from t3sim.workload.gemv import gemv_record, is_gemv
from tests.conftest import REPO

EXP = REPO / "configs/experiments/fused-gemv.yaml"
ONE = ["sweep.cases=[]", "sweep.grid={}"]


def gexp(*overrides: str):
    return load_experiment(EXP, ONE + list(overrides))


# ------------------------------------------------------------------ config and record
def test_gemv_workload_is_one_of_three_and_only_gemm_rs_all_reduce():
    e = gexp()
    assert e.workload.kind == "gemv" and e.workload.label == "GEMV" and e.workload.num_tokens == 1
    with pytest.raises(InputError, match="exactly one"):
        gexp("workload.model={name: x, hidden_size: 1024, layers: 1, seq_len: 1, batch: 1, tp_degrees: [4]}")
    with pytest.raises(InputError, match="direction"):
        gexp("workload.direction=ag_gemm")
    with pytest.raises(InputError, match="multiple of 4"):
        gexp("workload.gemv.K=3071")
    with pytest.raises(InputError, match="sublayer"):
        gexp("workload.sublayer=OP")


def test_record_is_one_gpus_slice_with_n_1():
    e = gexp("workload.gemv.M=4000", "workload.gemv.K=8192")
    k = SystemModel(e).kernel
    assert is_gemv(k) and (k.M, k.N, k.K) == (4000, 1, 2048)
    assert (k.tile_m, k.tile_n, k.tiles_m, k.num_wgs) == (256, 1, 16, 16)
    assert k.threads_per_wg == 1024 and k.wfs_per_wg == 16  # rocBLAS gemvn 64 x 16 threads, wave64
    assert gemv_record(e.workload.gemv, 4, "fp16", 32).wfs_per_wg == 32


def test_other_schemes_reject_a_gemv_and_gemv_schemes_reject_a_gemm():
    e = gexp()
    with pytest.raises(InputError, match="gemv_ar, fused_gemv_ar"):
        scheme_for("sequential").check_direction(e.workload)
    m = load_experiment(REPO / "configs/experiments/default.yaml")
    for s in ("gemv_ar", "fused_gemv_ar"):
        with pytest.raises(InputError, match="runs gemv workloads"):
            scheme_for(s).check_direction(m.workload)


# ------------------------------------------------------------------ geometry
def test_span_masks_cover_exactly_the_span():
    addrs, mask = span_masks(100, 300)
    assert addrs.tolist() == [64, 128, 192, 256]
    covered = [a + b for a, m in zip(addrs, mask) for b in range(64) if int(m) >> b & 1]
    assert covered == list(range(100, 300))


@settings(max_examples=25, deadline=None)
@given(M=st.integers(1, 300), K=st.integers(1, 100), rows=st.sampled_from([1, 32, 64, 256]),
       cols=st.sampled_from([1, 16, 64]), eb=st.sampled_from([2, 4]))
def test_geometry_loads_every_w_byte_once_and_counts_real_flops(M, K, rows, cols, eb):
    """No tile-width waste: each (tile, step) loads exactly the requests holding its rows of its columns of W, the
    regions cover W once, the FLOPs sum to 2 M K, and y's tiles partition y."""
    g = GemvGeometry(M, K, eb, rows, cols, w_base_B=1 << 20, x_base_B=1 << 30, y_base_B=1 << 31)
    flops = sum(g.flops(t, s) for t in range(g.tiles) for s in range(g.steps))
    assert flops == 2 * M * K
    cover = np.zeros((M, K), dtype=np.int64)
    for t in range(g.tiles):
        r0, r1 = g.rows(t)
        for s in range(g.steps):
            c0, c1 = g.cols(s)
            cover[r0:r1, c0:c1] += 1
            first = g.w_base_B + (np.arange(r0, r1)[None, :] + np.arange(c0, c1)[:, None] * M) * eb
            want = np.union1d(first // 64, (first + eb - 1) // 64)
            reqs = g.w_requests(t, s)
            assert np.array_equal(np.unique(reqs // 64), want) and len(reqs) == len(want)
    assert (cover == 1).all()
    y = [g.y_span(t) for t in range(g.tiles)]
    assert y[0][0] == g.y_base_B and y[-1][1] == g.y_base_B + M * eb
    assert all(a[1] == b[0] for a, b in zip(y, y[1:]))


def test_span_requests_of_several_spans_in_order():
    r = span_requests(np.array([0, 1000]), np.array([65, 1001]))
    assert r.tolist() == [0, 64, 960]


# ------------------------------------------------------------------ the library kernel and the baseline
def test_baseline_gemv_is_memory_bound_and_loads_w_once():
    """M = 16384, K/4 = 1024: 32 MiB of W per GPU. The GEMV's loads are W's requests plus x per tile; it runs no
    faster than HBM's peak and its math (2 M K at the vector rate over the CUs) is far below its time."""
    e = gexp("workload.gemv.M=16384", "workload.gemv.K=4096")
    m = SystemModel(e)
    run = scheme_for("gemv_ar").simulate(m)
    k = m.gemm_kernels[0]
    geom = GemvGeometry.of(m.kernel, m.a_base, m.b_base, m.c_base)
    assert k.run.load_requests * 64 == geom.load_B() == 16384 * 1024 * 2 + 64 * 16 * 128  # x: 64 columns = 2 requests a step
    recs = {r.name: r for r in run.records}
    gemv_ps = recs["gemv"].end - recs["gemv"].start
    hbm_ps = 16384 * 1024 * 2 / m.system.hbm.peak_bandwidth_GBps * 1e3
    math_ps = 2 * 16384 * 1024 / (m.system.gpu.fp32_flops_per_cycle * m.system.gpu.num_cus) / m.system.gpu.clock_GHz * 1e3
    assert gemv_ps > hbm_ps > 20 * math_ps
    assert recs["allreduce"].start >= recs["gemv"].end  # bulk-synchronous
    m.network.check_conserved()
    # the direct all-reduce moves (N-1)/N of y twice per GPU
    sent = sum(m.network.bytes_injected.values())
    assert sent == 4 * 2 * 3 * (16384 * 2 // 4)


def test_baseline_rejects_functional_data():
    m = SystemModel(gexp("simulation.functional_data=true"))
    with pytest.raises(InputError, match="functional_data"):
        scheme_for("gemv_ar").simulate(m)


def test_baseline_result_names_the_gemv():
    r = simulate(gexp("workload.gemv.K=1024"))
    assert r.summary["sublayer"] == "GEMV" and r.summary["model"] == "mega-gpt-2.OP"
    assert r.summary["total_us"] == pytest.approx(r.summary["gemm_us"] + r.summary["rs_us"])
    assert r.stats.value("gemv.flops") == 2 * 3072 * 256
