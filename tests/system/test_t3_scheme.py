"""T3 fused GEMM-RS: runs in both modes, numerically exact reduce-scatter, tracker/DMA invariants."""

from __future__ import annotations

import pytest

from t3sim.memory.policies.round_robin import RoundRobin
from t3sim.memory.policies.t3_mca import T3MCA
from t3sim.schemes.runtime import scheme_for
from t3sim.schemes.t3.t3 import final_chunk_check
from t3sim.system.model import SystemModel
from tests.system.helpers import exp

SMALL = ("workload.sublayer=OP", "workload.tokens=128", "system.gpu.num_cus=4")


def _model(n, mode, scheme="t3", algo="ring", *extra):
    kind = "ring" if algo == "ring" else "direct"
    e = exp(*SMALL, f"workload.tp={n}", f"system.interconnect.num_gpus={n}", f"system.interconnect.kind={kind}",
            f"system.collective.algorithm={algo}", f"simulation.mode={mode}", f"scheme.kind={scheme}", *extra)
    return SystemModel(e)


def _run(n, mode, scheme="t3", algo="ring", *extra):
    m = _model(n, mode, scheme, algo, *extra)
    phases = scheme_for(m.exp.scheme.kind).run(m)
    m.network.check_conserved()
    return m, phases


@pytest.mark.parametrize("algo", ["ring", "direct"])
@pytest.mark.parametrize("mode", ["homogeneous", "explicit"])
def test_functional_reduce_scatter_is_exact(algo, mode):
    """Every simulated GPU ends with exactly the sum of all GPUs' partials for its chunk (Sec. 4.1, 7.1)."""
    m, p = _run(4, mode, "t3", algo, "simulation.functional_data=true")
    assert final_chunk_check(m) > 0
    ctx = m.context
    for g, tr in ctx.trackers.items():
        tr.check_done()  # every programmed entry fired exactly once
        for blk in ctx.blocks[g]:
            # no DMA read before its tracker entries reached their thresholds
            assert 0 <= blk.trigger_tick <= blk.read_tick
            assert ctx.dmas[g].blocks_done == len(ctx.blocks[g])
    assert ctx.fabric.sent_B == ctx.fabric.landed_B > 0  # bytes sent == bytes received
    # phases from the mechanisms' own clocks: the GEMM ends when its last kernel does (GemmRun.end_tick), the
    # RS when the last payload landed (the DMA completion counter's tick; the tail may be fully hidden
    # behind this slow 4-CU GEMM), and a functional run stops after the RS (no all-gather)
    gemm_end = max(g.run.end_tick for g in m.gemm_kernels)
    assert p.gemm == gemm_end - m.marks["start"] > 0
    assert p.rs == ctx.completion.done.value - gemm_end
    assert p.ag == 0 and p.total == p.gemm + p.rs


@pytest.mark.parametrize("n", [2, 7, 8, pytest.param(16, marks=pytest.mark.slow)])
@pytest.mark.parametrize("bidir", [True, False])
def test_functional_ring_other_gpu_counts(n, bidir):
    """Exact for any GPU count, one-way or two-way ring; 4 CUs x 2 WGs = 8 WGs per stage over the OP
    GEMM's WGs gives stage counts that are not multiples of the ring steps (uneven stages)."""
    m, _ = _run(n, "explicit", "t3", "ring", "simulation.functional_data=true",
                f"system.collective.ring_bidirectional={str(bidir).lower()}")
    assert final_chunk_check(m) > 0
    assert m.context.W % m.context.stage_wgs != 0 or (m.context.W // m.context.stage_wgs) % n != 0


@pytest.mark.parametrize("n", [2, 8, pytest.param(16, marks=pytest.mark.slow)])
def test_functional_direct_other_gpu_counts(n):
    """Direct RS (Sec. 7.1): every stage sliced n ways and remote-updated; exact for any GPU count."""
    m, _ = _run(n, "explicit", "t3", "direct", "simulation.functional_data=true")
    assert final_chunk_check(m) > 0
    assert not any(m.context.blocks[g] for g in m.sim_gpus)  # no DMA: the GEMM's stores do all of it


def test_fused_ring_rs_uses_both_link_directions_like_the_baseline():
    """Table 1's ring is 150 GB/s bi-directional: the fused RS sends on both of GPU 0's outgoing links,
    as the baseline RS kernel does, and roughly halves its per-link bytes vs the one-way mapping."""
    def sent(bidir):  # functional runs stop after the reduce-scatter, so only its bytes count
        m, _ = _run(4, "explicit", "t3", "ring", f"system.collective.ring_bidirectional={str(bidir).lower()}",
                    "simulation.functional_data=true")
        return {(a, b): l.bytes_sent for (a, b), l in m.network.links.items() if a == 0}
    two, one = sent(True), sent(False)
    assert sum(1 for v in two.values() if v > 0) == 2 and sum(1 for v in one.values() if v > 0) == 1
    assert max(two.values()) < 0.6 * max(one.values())


def test_homogeneous_and_explicit_agree_and_t3_beats_sequential():
    h = _run(4, "homogeneous")[1]
    x = _run(4, "explicit")[1]
    assert x.total == pytest.approx(h.total, rel=0.05)
    s = _run(4, "homogeneous", "sequential")[1]
    assert h.total < s.total


def test_tiny_tracker_stalls_but_completes():
    m, _ = _run(4, "explicit", "t3", "ring", "system.tracker.entries=2", "system.tracker.ways=1",
                "simulation.functional_data=true")
    assert final_chunk_check(m) > 0
    assert sum(t.stalled_accesses for t in m.context.trackers.values()) > 0


def test_t3_mca_uses_its_arbitration(monkeypatch):
    """T3-MCA's memory controllers hold the T3-MCA policy and run it (Sec. 4.5): the producer's first stage sets a
    dynamic occupancy threshold from the observed queue occupancy, and compute's priority shows in the latencies vs
    T3 on the same system (round robin): compute reads wait less, communication reads wait more."""
    thresholds = []

    def first_stage_end(self, state, _orig=T3MCA.first_stage_end):
        _orig(self, state)
        thresholds.append(state.threshold.copy())

    monkeypatch.setattr(T3MCA, "first_stage_end", first_stage_end)
    runs = {}
    for scheme, policy in (("t3", RoundRobin), ("t3_mca", T3MCA)):
        m, _ = _run(4, "homogeneous", scheme)
        assert type(m.hiers[0].mem.policy) is policy
        runs[scheme] = m.stats()
    # one producer GEMM, one isolated first stage; a channel busy enough gets a finite threshold from the mapping
    assert len(thresholds) == 1 and (thresholds[0] >= 0).any()
    assert set(thresholds[0][thresholds[0] >= 0].tolist()) <= {5, 10, 30}

    def lat(scheme, stream):
        return runs[scheme].value(f"gpu0.hbm.read_latency.{stream}_mean_ns")

    assert lat("t3_mca", "compute") < lat("t3", "compute")
    assert lat("t3_mca", "comm") > lat("t3", "comm")


def test_t3_mca_static_threshold_on_a_round_robin_system():
    """The scheme switches the system's round-robin arbitration to t3_mca without marking the unused dynamic mapping as
    given (else the full-size sweep-mca static-threshold points fail to build)."""
    arb = "system.memory_controller.arbitration"
    m = _model(4, "homogeneous", "t3_mca", "ring", f"{arb}.threshold_mode=static", f"{arb}.occupancy_threshold=5")
    a = m.system.memory_controller.arbitration
    assert (a.kind, a.threshold_mode, a.occupancy_threshold) == ("t3_mca", "static", 5)


def test_t3_run_reports_tracker_dma_and_fabric_statistics():
    """The tracker, DMA and fabric counters reach stats.json (units, descriptions) and agree with each other."""
    m, _ = _run(4, "homogeneous", "t3", "ring", "simulation.functional_data=true")
    s = m.stats()
    k = m.kernel
    # The ring RS on 4 GPUs (paper Sec. 4.1): of GPU 0's 4 chunks of the 34 WGs (8, 9, 8, 9 WGs), its own stays,
    # the first it sends is stored remotely by the GEMM, and the 2 in between (adjacent: 17 WGs) are reduced
    # locally, then forwarded by tracker-triggered DMA: one tracked region and one DMA block per WF tile.
    assert (k.num_wgs, k.wfs_per_wg) == (34, 8)
    regions = 17 * 8
    assert s.value("gpu0.tracker.programmed_regions") == regions
    assert s.value("gpu0.tracker.fired") == regions  # every region reached its threshold once
    assert s.value("gpu0.dma.blocks_triggered") == s.value("gpu0.dma.blocks_done") == regions
    wf_tile_B = (k.tile_m // k.wf_grid[0]) * (k.tile_n // k.wf_grid[1]) * 2  # 64 x 32 fp16
    assert s.value("gpu0.dma.bytes_read") == regions * wf_tile_B
    assert s.value("gpu0.dram_traffic.rs.read_bytes") == regions * wf_tile_B  # seen by the memory as RS reads
    assert s.value("t3.fabric.sent_B") == s.value("t3.fabric.landed_B") > 0
    assert s["gpu0.tracker.storage_bytes"].unit == "B"


def test_wg_regions_straddling_two_dma_mappings_are_a_clear_input_error():
    """WG-granular regions of 2 WGs cross chunk boundaries (different peers): one-line config error, not
    a double-programmed tracker (the tracker fires one threshold per region)."""
    from t3sim.errors import InputError

    with pytest.raises(InputError, match="granularity_multiple"):
        _run(4, "homogeneous", "t3", "ring", "system.tracker.granularity=wg", "system.tracker.granularity_multiple=2")
    m, _ = _run(4, "homogeneous", "t3", "ring", "system.tracker.granularity=wg",
                "simulation.functional_data=true")  # multiple 1 is always valid
    assert final_chunk_check(m) > 0
