"""Sweep expansion: grid x cases, validated points, deterministic order."""

from __future__ import annotations

from t3sim.config.sweep import expand
from tests.conftest import REPO

BASE = f"""name: sw
system:
  base: {REPO}/configs/systems/t3-table1.yaml
workload:
  model: {{base: {REPO}/configs/models/t-nlg.yaml}}
  tp: 8
"""


def test_single_point(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text(BASE)
    pts = expand(f)
    assert [p.label for p in pts] == ["base"]


def test_grid_times_cases(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text(BASE + """sweep:
  cases:
    - {workload.tp: 8, system.interconnect.num_gpus: 8}
    - {workload.tp: 16, system.interconnect.num_gpus: 16}
  grid:
    scheme.kind: [sequential, t3]
    workload.sublayer: [OP, FC-2]
""")
    pts = expand(f)
    assert len(pts) == 8
    assert pts[0].label == "workload.tp=8,system.interconnect.num_gpus=8,scheme.kind=sequential,workload.sublayer=OP"
    assert {(p.config.workload.tp, p.config.scheme.kind, p.config.workload.sublayer) for p in pts} == {
        (tp, s, sl) for tp in (8, 16) for s in ("sequential", "t3") for sl in ("OP", "FC-2")}
    assert all(p.config.sweep.grid == {} and p.config.sweep.cases == [] for p in pts)


def test_bad_point_reports_sweep(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text(BASE + "sweep:\n  grid:\n    system.gpu.num_cus: [80, -1]\n")
    import pytest
    from t3sim.errors import InputError

    with pytest.raises(InputError) as e:
        expand(f)
    assert "sweep system.gpu.num_cus=-1" in str(e.value)
