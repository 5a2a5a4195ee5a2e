"""``emb_a2a`` and ``fused_emb_a2a``: the embedding workload's config, the remote-first order,
occupancy from the stated register count, and whole runs at reduced sizes: every pooled vector arrives exactly once
with the right value, no slice is taken before its ready flag, the bytes on the links are the analytic count."""

from __future__ import annotations

import numpy as np
import pytest

from t3sim.config import load_experiment
from t3sim.errors import InputError
from t3sim.schemes.fused.fused_emb_a2a import FusedEmbA2A, analytic_link_bytes
from t3sim.schemes.fused.gpu_initiated import occupancies
from t3sim.system.model import SystemModel
from tests.conftest import REPO
from tests.schemes.helpers import run_experiment

EXP = REPO / "configs/experiments/fused-a2a.yaml"
# global batch 128 (32 samples per GPU: one slice of 32), 2 tables, pooling 3; 2 CUs
SMALL = ["sweep.grid={}", "scheme.kind=fused_emb_a2a", "workload.embedding_bag.global_batch=128",
         "workload.embedding_bag.tables_per_gpu=2", "workload.embedding_bag.pooling=3",
         "workload.embedding_bag.rows_per_table=1000", "system.gpu.num_cus=2"]


def run(*overrides: str):
    return run_experiment(EXP, SMALL, overrides)


def test_paper_sizes_in_the_experiment_config():
    e = load_experiment(EXP, ["sweep.grid={}"]).workload.embedding_bag
    assert (e.embedding_dim, e.tables_per_gpu, e.global_batch) == (256, 256, 2048)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_functional_explicit_every_vector_once_with_its_value(mode):
    m, ph = run("simulation.mode=explicit", "simulation.functional_data=true", f"workload.embedding_bag.mode={mode}")
    c = m.context
    assert c.checks.verified
    # every GPU's 128 x 2 pooled vectors, all simulated: each arrives once at its sample's GPU
    assert c.checks.vectors_once == 4 * 128 * 2
    assert c.checks.words_checked == 4 * 128 * 2 * 256  # every receiver's {32, 4 x 2 x 256} output, word by word
    assert c.checks.polls_checked == 4 * 3 * 2  # each GPU: 3 peers x 2 tables x 1 slice
    assert ph.total > 0


def test_homogeneous_link_bytes_and_flags():
    m, _ = run()
    c = m.context
    assert c.checks.verified and c.flags.puts == 4 * 3 * 2
    assert sum(m.network.bytes_injected.values()) == analytic_link_bytes(c) == c.fabric.sent_B == c.fabric.landed_B


def test_explicit_link_bytes_match_homogeneous():
    m, _ = run("simulation.mode=explicit")
    assert sum(m.network.bytes_injected.values()) == analytic_link_bytes(m.context)


def test_checks_catch_a_flag_before_its_data():
    m, _ = run()
    c = m.context
    (dst, key), tick = next(iter(c.flags.land_tick.items()))
    c.flags.land_tick[(dst, key)] = -1  # the flag "landed" before its slice's vectors
    with pytest.raises(AssertionError, match="before its vector"):
        c.checks.verify()


def test_checks_catch_a_missing_poll():
    m, _ = run()
    c = m.context
    c.checks.seen.pop(next(iter(c.checks.seen)))
    with pytest.raises(AssertionError, match="never polled"):
        c.checks.verify()


def test_remote_first_order_and_slices():
    m = SystemModel(load_experiment(EXP, SMALL + ["workload.embedding_bag.global_batch=256"]))
    c = FusedEmbA2A(m)
    ts, bs = c.order(1)
    dests = [c.geom.dest(int(b)) for b in bs]
    # GPU 1: the samples of GPUs 2, 3, 0 first, its own last; each destination's block is whole slices
    blocks = [dests[i * len(dests) // 4] for i in range(4)]
    assert blocks == [2, 3, 0, 1] and dests == sorted(dests, key=[2, 3, 0, 1].index)
    assert sorted(zip(ts.tolist(), bs.tolist())) == [(t, b) for t in range(2) for b in range(256)]
    first = list(zip(ts[:32].tolist(), bs[:32].tolist()))
    assert first == [(0, b) for b in range(128, 160)]  # one slice: 32 consecutive samples of one table
    assert c.incoming(1) == [(s, t, 2 * 1 + i) for s in (0, 2, 3) for t in range(2) for i in range(2)]


def test_occupancy_from_the_stated_register_count():
    """The pooling WG (256 threads, the config's 32 VGPRs) and the library's 16: 48 VGPRs still fit gfx90a's 8 waves
    per SIMD, so no occupancy is lost; at 64 + 8 VGPRs the fused kernel drops to 7 WGs per CU (12.5 %)."""
    m, _ = run()
    o = m.context.occ
    assert (o.base_wgs_per_cu, o.fused_wgs_per_cu, o.reduction) == (8, 8, 0.0)
    assert m.context.grid == 8 * 2
    m2, _ = run("workload.embedding_bag.registers_per_thread=64", "scheme.fused_library_registers_per_thread=8")
    o2 = m2.context.occ
    assert (o2.base_wgs_per_cu, o2.fused_wgs_per_cu) == (8, 7) and o2.reduction == pytest.approx(0.125)
    assert m2.context.grid == 7 * 2
    assert occupancies(m.system.gpu, 256, 32, 0, 16).reduction == 0


def test_baseline_runs_and_the_fused_kernel_is_faster_here():
    mb, pb = run("scheme.kind=emb_a2a")
    mf, pf = run()
    assert pb.gemm > 0 and pb.rs > 0
    assert pf.total < pb.total


def test_bad_inputs():
    with pytest.raises(InputError, match="fused_slice_bags"):
        run("scheme.fused_slice_bags=24")
    with pytest.raises(InputError, match="functional_data"):
        run("scheme.kind=emb_a2a", "simulation.functional_data=true")
    with pytest.raises(InputError, match="comm_aware"):
        run("scheme.fused_comm_aware=false")
    with pytest.raises(Exception, match="global_batch"):
        load_experiment(EXP, SMALL + ["workload.embedding_bag.global_batch=130"])
    with pytest.raises(InputError):
        run("scheme.kind=gemv_ar")


def test_comm_oblivious_explicit_runs():
    m, _ = run("simulation.mode=explicit", "scheme.fused_comm_aware=false")
    assert m.context.checks.verified
    ts, bs = m.context.order(1)
    assert m.context.geom.dest(int(bs[0])) == 0


def test_pooled_values_are_sums_of_the_gathered_rows():
    m = SystemModel(load_experiment(EXP, SMALL + ["workload.dtype=fp32"]))
    c = FusedEmbA2A(m)
    g = c.geom
    rows = g.indices(2)[1, 5]
    v = g.pooled(2, 1, 5).ravel()
    assert v[3] == sum(((2 * g.T + 1) * 131 + 7 * int(r) + 3) % 97 for r in rows)
    assert not np.array_equal(g.indices(0), g.indices(1))


def test_embedding_record_is_the_all_to_all_input_and_round_trips(tmp_path):
    """The record's C (M x N) is the pooled output B x (T D), one logical WG per bag; it is a trace kind (EMB)."""
    from t3sim.workload.embedding import EMB, embedding_record
    from t3sim.workload.trace import Trace, load_trace, write_trace

    e = load_experiment(EXP, ["sweep.grid={}"]).workload.embedding_bag
    r = embedding_record(e, 4, "fp32")
    assert (r.M, r.N, r.K, r.num_wgs, r.sublayer) == (2048, 256 * 256, 10, 2048 * 256, EMB)
    p = write_trace(tmp_path / "emb.json", Trace((r,), "embedding"))
    assert load_trace(p).kernels[0] == r
