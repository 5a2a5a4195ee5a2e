"""Issue 5 ordering: sequential slower than T3; T3-MCA no slower than T3; neither T3 scheme faster
than Ideal-RS+NMC, each within TOL. Reduced size: workload.tokens=1024 on the Table 1 system gives
the T-NLG GEMMs 272 WGs = 2 stages of 160 (full size: 14), so the fused RS can overlap the GEMM.

Known exceptions are measured and explained in experiments/t3-sublayers/README.md (none is
expected at this size; the slow cases below check it).
"""

from __future__ import annotations

import pytest

from t3sim.analysis.comparison import case_metrics, ordering_violations
from t3sim.config.sweep import expand
from t3sim.system.run import simulate
from tests.conftest import REPO

SWEEP = REPO / "configs/experiments/t3-sublayers.yaml"
TOL = 0.02  # relative: run-to-run structure noise (arbitration, homogeneous mirroring) stays below 1 %


def _runs(sub: str, tp: int, schemes):
    ov = ["workload.tokens=1024", f"sweep.cases=[{{workload.tp: {tp}, system.interconnect.num_gpus: {tp}}}]",
          f"sweep.grid={{workload.sublayer: [{sub}], scheme.kind: [{', '.join(schemes)}]}}"]
    return {p.config.scheme.kind: simulate(p.config).summary for p in expand(SWEEP, ov)}


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
    barrier, so it may finish before the isolated RS+NMC kernel Ideal-RS+NMC is built from. OP_BEAT
    bounds that t3sim-specific margin; it is set from the measured full-size margin (<= 4 %,
    experiments/t3-sublayers/README.md item 5), not from the paper."""
    m = case_metrics(_runs(sub, tp, ["sequential", "t3", "t3_mca", "ideal_rs_nmc"]))
    bad = ordering_violations(m, TOL)
    if sub == "OP":
        bad = [b for b in bad if "beats ideal_rs_nmc" not in b]
        for s in ("t3", "t3_mca"):
            assert m[s]["total_us"] >= m["ideal_rs_nmc"]["total_us"] * (1 - OP_BEAT)
    assert bad == []


OP_BEAT = 0.05
