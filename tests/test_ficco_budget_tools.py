"""benchmarks/ficco_budget's summaries (cost.py, compare.py): what they add up and what they call equal."""

import json

import yaml

from tests.conftest import load_script


def _point(root, exp, name, wall_s, scheme, stats=None):
    d = root / exp / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"wall_s": wall_s}))
    (d / "config.yaml").write_text(yaml.safe_dump({"scheme": scheme, "workload": {"gemm": {"name": "g2"}}}))
    (d / "stats.json").write_text(json.dumps(stats or {"sim": {"events": 1}, "x": 1}))
    (d / "summary.csv").write_text(f"experiment,scheme\n{exp},{scheme['kind']}\n")


def test_cost_sums_wall_times_by_experiment_and_schedule_kind(tmp_path, capsys):
    cost = load_script("benchmarks/ficco_budget/cost.py")
    res = tmp_path / "res"
    _point(res, "ficco-sp", "a", 3600.0, {"kind": "ficco", "ficco_schedule": "uniform_fused_2d", "ficco_comm": "dma"})
    _point(res, "ficco-sp", "b", 1800.0, {"kind": "ficco", "ficco_schedule": "hetero_fused_1d", "ficco_comm": "rccl"})
    _point(res, "ficco-ep", "c", 1800.0, {"kind": "sequential"})
    _point(res, "ficco-char", "d", 0.0, {"kind": "ficco_char"})
    cost.main(str(tmp_path))
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()]
    assert ["ficco-sp", "2", "1.500", "75.0%", "2700.0"] in rows
    assert ["ficco-dma", "2d", "1", "1.000", "50.0%", "3600.0"] in rows  # the methods of ficco.csv (method_of)
    assert ["ficco-rccl", "1d", "1", "0.500", "25.0%", "1800.0"] in rows
    assert ["baseline", "1", "0.500", "25.0%", "1800.0"] in rows
    assert ["ficco_char", "1", "0.000", "0.0%", "0.0"] in rows  # no method: its scheme
    assert out.rstrip().endswith("total 4 points, 2.000 CPU-hours")


def test_compare_ignores_only_the_event_count(tmp_path, capsys):
    compare = load_script("benchmarks/ficco_budget/compare.py")
    s = {"kind": "ficco", "ficco_schedule": "uniform_fused_1d", "ficco_comm": "dma"}
    _point(tmp_path / "base", "e", "p", 10.0, s, {"sim": {"events": 5}, "x": 1})
    _point(tmp_path / "new", "e", "p", 9.0, s, {"sim": {"events": 7}, "x": 1})
    _point(tmp_path / "base", "e", "q", 10.0, s, {"sim": {"events": 5}, "x": 1})
    _point(tmp_path / "new", "e", "q", 10.0, s, {"sim": {"events": 5}, "x": 2})
    compare.main(str(tmp_path))
    out = capsys.readouterr().out
    assert "stats equal" in out and "stats DIFFER" in out
    assert "points 2, statistics equal 1; sum base 20.0 s new 19.0 s ratio 0.950" in out
