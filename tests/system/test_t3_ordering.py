"""The schemes' ordering: sequential slower than T3; T3-MCA no slower than T3; neither T3 scheme faster
than Ideal-RS+NMC, each within TOL. Reduced size: workload.tokens=1024 on the Table 1 system gives
the T-NLG GEMMs 272 WGs = 2 stages of 160 (full size: 14), so the fused RS can overlap the GEMM.

Known exceptions are measured and explained in experiments/t3-sublayers/README.md (none is
expected at this size; the slow cases below check it).
"""

from __future__ import annotations

import pytest

from t3sim.analysis.comparison import case_metrics, ordering_violations
from t3sim.collectives.analytic import ring_time
from t3sim.config.workload import DTYPE_BYTES
from t3sim.config.sweep import expand
from t3sim.system.core import simulate
from tests.conftest import REPO

SWEEP = REPO / "configs/experiments/t3-sublayers.yaml"
TOL = 0.02  # relative: run-to-run structure noise (arbitration, homogeneous mirroring) stays below 1 %


def _points(sub: str, tp: int, schemes):
    ov = ["workload.tokens=1024", f"sweep.cases=[{{workload.tp: {tp}, system.interconnect.num_gpus: {tp}}}]",
          f"sweep.grid={{workload.sublayer: [{sub}], scheme.kind: [{', '.join(schemes)}]}}"]
    return expand(SWEEP, ov)


def _runs(sub: str, tp: int, schemes):
    return {p.config.scheme.kind: simulate(p.config).summary for p in _points(sub, tp, schemes)}


def test_t3_beats_sequential_fc2_tp8():
    """Default-suite check (~40 s): one overlap-friendly case, T3 faster than Sequential."""
    m = case_metrics(_runs("FC-2", 8, ["sequential", "t3"]))
    assert m["t3"]["total_us"] < m["sequential"]["total_us"] * (1 - TOL)
    assert m["t3"]["dram_red_pct"] > 0  # fusion + NMC remove GEMM-write / RS-read traffic


@pytest.mark.slow
@pytest.mark.parametrize("sub,tp", [("FC-2", 8), ("FC-2", 16), ("OP", 8), ("OP", 16)])
def test_scheme_ordering(sub, tp):
    """Sequential < T3 <= T3-MCA <= Ideal-RS+NMC, within TOL, except for OP. The paper's stated
    exception (Sec. 6.1.2: "T3 achieves close to the Ideal-GEMM-RS-Overlap speedups, and even exceeds
    them") is about Ideal-GEMM-RS-Overlap; in t3sim the same cause goes one step further for OP, where
    the RS is the long pole: the fused RS streams WF tiles with no kernel launch and no per-step
    barrier, so it may finish before the isolated RS+NMC kernel Ideal-RS+NMC is built from (full size: by up to
    2.0 %, experiments/t3-sublayers/README.md item 5; at this reduced size, where the launch and the 15 step
    barriers weigh more, T-NLG OP TP=16 by 6.9 %: fused GEMM + RS 77.3 us against the NMC RS kernel's 88.7 us).
    What it cannot beat is the links: for OP, a T3 scheme's GEMM + exposed RS lasts at least the RS's ring
    link-bound time (both directions, per-step link latency, no launch)."""
    pts = list(_points(sub, tp, ["sequential", "t3", "t3_mca", "ideal_rs_nmc"]))
    runs = {p.config.scheme.kind: simulate(p.config).summary for p in pts}
    m = case_metrics(runs)
    bad = ordering_violations(m, TOL)
    if sub == "OP":
        bad = [b for b in bad if "beats ideal_rs_nmc" not in b]
        cfg = pts[0].config
        w, ic = cfg.workload, cfg.system.interconnect
        size_B = w.tokens * w.model.hidden_size * DTYPE_BYTES[w.dtype]  # the RS's array, T x H
        est = ring_time("reduce_scatter", size_B, tp, ic.link_bandwidth_GBps, ic.link_latency_ns, 2)
        for s in ("t3", "t3_mca"):
            assert runs[s]["gemm_us"] + runs[s]["rs_us"] >= est.total_ns / 1e3, s
    assert bad == []
