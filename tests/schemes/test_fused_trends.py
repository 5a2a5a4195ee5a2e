"""Trend tests of the fused GPU-initiated kernels: the paper's explanations of where
fusion helps less (fused computation-collective paper Sec. IV-B) -- small batches, M = 64k, a GEMM-dominated run -- each as a test of the trend
t3sim shows at small, fast sizes on the paper's Table I node (mi210-4gpu-fc, all 104 CUs). Where t3sim disagrees with
the paper, the test asserts t3sim's trend and its docstring names the cause; the reproduction reports the
disagreement (t3sim/reproduction/fused/numbers.py: ``emb_a2a_intra_batch``, ``gemv_ar_64k``, ``gemm_a2a_gemm_dominates``).
"""

from __future__ import annotations

from t3sim.config import load_experiment
from t3sim.system.core import simulate
from tests.conftest import REPO


def times(experiment: str, kind: str, *overrides: str) -> dict:
    """One point's summary times (us): ``compute`` (the GEMV, pooling or GEMM phase), ``comm`` (the collective, or
    the fused kernel's exposed tail), ``total``."""
    exp = load_experiment(REPO / "configs/experiments" / experiment, ["sweep.cases=[]", "sweep.grid={}",
                                                                        f"scheme.kind={kind}", *overrides])
    s = simulate(exp).summary
    return {"compute": float(s["gemm_us"]), "comm": float(s["rs_us"]), "total": float(s["total_us"])}


def reduction(base: dict, fused: dict) -> float:
    return 1 - fused["total"] / base["total"]


# dim 64, pooling 1, 2 tables per GPU: a few hundred bags per GPU, the per-table baseline of the DLRM code
EMB = ("workload.embedding_bag.tables_per_gpu=2", "workload.embedding_bag.pooling=1",
       "workload.embedding_bag.embedding_dim=64")


def test_small_batches_gain_more_in_t3sim_reversed_from_the_paper():
    """Paper Sec. IV-B (intra-node): "The benefits achieved are lower for smaller batch sizes (e.g., 512) due to the
    small All-to-All latency." t3sim shows the opposite: the reduction *falls* with batch (128 -> 512 here; 63 -> 32 %
    at 256 -> 2048 in experiments/fused-a2a). Cause: the baseline launches one pooling kernel per table (as the DLRM
    code's nn.EmbeddingBag per table), each paying gpu.kernel_launch_overhead_ns and each too small to fill the GPU
    at a small batch; the fused kernel is one kernel for all tables, so what it removes weighs most at small batches
    -- the cause the paper itself names for its inter-node runs ("smaller batch sizes result in poor compute
    utilization for the baseline"), beyond a perfect overlap there."""
    r = {}
    for b in (128, 512):
        base = times("fused-a2a.yaml", "emb_a2a", *EMB, f"workload.embedding_bag.global_batch={b}")
        fused = times("fused-a2a.yaml", "fused_emb_a2a", *EMB, f"workload.embedding_bag.global_batch={b}")
        r[b] = (reduction(base, fused), base["compute"] / fused["compute"],
                min(base["compute"], base["comm"]) / base["total"])
    assert r[128][0] > r[512][0]  # t3sim: the smaller batch gains more
    assert r[128][1] > 1.5 * r[512][1]  # the cause: the per-table baseline's pooling excess, largest at small batch
    assert r[128][0] > r[128][2]  # more than a perfect overlap of the baseline's two kernels would give


def test_m64k_gains_less_but_not_from_link_contention():
    """Paper Sec. IV-B: "The latency reduction is lower for the larger inputs (M = 64k) because as the output vector
    size grows, the contention for the Infinity Fabric links increases." t3sim agrees in direction (M = 8k -> 64k at
    K = 128 here; the 64k model GEMV is even 12 % slower fused in experiments/fused-gemv) with other causes: (1) the
    persistent grid is the largest divisor of the tiles within the occupancy: at M = 8k (32 tiles) one tile per WG,
    as the baseline, but at 64k (256 tiles, 208 WG slots) 128 WGs of two tiles each, which stream the matrix with
    fewer WGs in flight than the baseline's 256, so the fused GEMV part is slower; (2) the HBM-bound GEMV grows with
    M while the fused kernel's saving (the library all-reduce's launch and steps against a chain of flag and link
    latencies) stays a few us. The links carry only 2 x 3/4 x M x 2 B per GPU, so the fused kernel's exposed
    all-reduce tail hardly grows: no link contention in t3sim. A cause the model omits: per-thread uncoalesced stores
    over the links (experiments/fused-gemv/README.md)."""
    r = {}
    for m in (8192, 65536):
        ov = (f"workload.gemv.M={m}", "workload.gemv.K=128")
        r[m] = (times("fused-gemv.yaml", "gemv_ar", *ov), times("fused-gemv.yaml", "fused_gemv_ar", *ov))
    (b8, f8), (b64, f64) = r[8192], r[65536]
    assert reduction(b64, f64) < reduction(b8, f8)  # the paper's direction
    assert f64["comm"] < 1.1 * f8["comm"]  # but the fused all-reduce tail barely grows: not link contention
    assert abs(f8["compute"] / b8["compute"] - 1) < 0.01  # one tile per persistent WG: the baseline's GEMV speed
    assert f64["compute"] > 1.05 * b64["compute"]  # two tiles per WG, half the WGs in flight: slower
    assert b64["compute"] > 1.5 * b8["compute"]  # and the GEMV grows with M


def test_gemm_dominated_run_gains_less():
    """Paper Sec. IV-B (GEMM + All-to-All): "the GEMM dominates the overall execution time and limits the benefits of
    our approach." t3sim agrees: the same MoE combine (512 expert rows per GPU, N = 256) with a 8x deeper GEMM
    (K = 256 -> 2048) moves the same all-to-all bytes behind a longer GEMM, so the baseline's all-to-all share and the
    reduction fall."""
    r = {}
    for k in (256, 2048):
        ov = ("workload.gemm.M=2048", "workload.gemm.N=256", f"workload.gemm.K={k}")
        r[k] = (times("fused-gemm-a2a.yaml", "gemm_a2a", *ov), times("fused-gemm-a2a.yaml", "fused_gemm_a2a", *ov))
    (bs, fs), (bd, fd) = r[256], r[2048]
    assert bd["compute"] / bd["total"] > 0.75 > bs["compute"] / bs["total"]  # the deep GEMM dominates its baseline
    assert reduction(bd, fd) < reduction(bs, fs)
