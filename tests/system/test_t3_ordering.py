"""Issue 5 ordering: sequential slower than T3; T3-MCA no slower than T3; neither T3 scheme faster
than Ideal-RS+NMC, each within TOL. Reduced size: workload.tokens=1024 on the Table 1 system gives
the T-NLG GEMMs 272 WGs = 2 stages of 160 (full size: 14), so the fused RS can overlap the GEMM.

Known exception (experiments/t3-sublayers/README.md): T3's fused ring RS sends in one ring
direction (75 GB/s) while the baseline RS kernel uses both (150 GB/s), so sub-layers whose GEMM
is short next to the RS (OP, TP=16) run slower under T3 than sequentially. Those are strict xfails.
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


_ONE_WAY = pytest.mark.xfail(strict=True, reason="fused ring RS uses one ring direction (README: known difference)")


@pytest.mark.slow
@pytest.mark.parametrize("sub,tp", [("FC-2", 8), ("FC-2", 16), pytest.param("OP", 8, marks=_ONE_WAY),
                                    pytest.param("OP", 16, marks=_ONE_WAY)])
def test_scheme_ordering(sub, tp):
    m = case_metrics(_runs(sub, tp, ["sequential", "t3", "t3_mca", "ideal_rs_nmc"]))
    assert ordering_violations(m, TOL) == []
