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


def _kernels(ends, unfused=False):
    """GPU 0's kernel times for step ends ``ends`` (us); hetero-unfused-1D's steps are 7 GEMMs each."""
    k = {"gemm_local": {"start_us": {"value": 0.0}, "end_us": {"value": 1.0}}}
    for j, e in enumerate(ends):
        for p in ((7, 1) if unfused else (None,)):
            name = f"gemm_s{j}" + (f"_p{p}" if p else "")
            k[name] = {"start_us": {"value": 0.0}, "end_us": {"value": e - (1.0 if p == 7 else 0.0)}}
    return {"kernels": {"gpu0": k}}


def test_steps_estimates_from_the_step_period_and_keeps_the_tail(tmp_path, capsys):
    steps = load_script("benchmarks/ficco_budget/steps.py")
    e = [10.0, 20.0, 30.0, 40.0, 60.0, 80.0, 100.0, 120.0]
    assert steps.step_ends(_kernels(e, unfused=True)) == e  # a step ends with its last GEMM; gemm_local is none
    # S = 4: period (40 - 20) / 2 = 10, so 40 + 4 x 10 + tail 5 = 85 against 125; 45 of the 125 us simulated
    err, kept = steps.estimate(e, 125.0, 4)
    assert abs(err - (85.0 / 125.0 - 1)) < 1e-12 and abs(kept - 45.0 / 125.0) < 1e-12
    steady = [10.0 * (j + 1) for j in range(8)]
    assert all(abs(steps.estimate(steady, 83.0, s)[0]) < 1e-12 for s in steps.DETAIL)  # steady steps: exact

    res = tmp_path / "res"
    s = {"kind": "ficco", "ficco_schedule": "uniform_fused_2d", "ficco_comm": "dma"}
    for name, ends in (("a", steady), ("b", e)):
        _point(res, "ficco-sp", name, 3600.0, s, {**_kernels(ends), "time": {"total_us": {"value": ends[-1]}}})
        cfg = yaml.safe_load((res / "ficco-sp" / name / "config.yaml").read_text())
        (res / "ficco-sp" / name / "config.yaml").write_text(yaml.safe_dump({**cfg, "workload": {"tp": 8}}))
    _point(res, "ficco-sp", "c", 3600.0, {"kind": "sequential"})  # counted whole
    steps.main(str(tmp_path))
    out = capsys.readouterr().out
    # S = 4 keeps 40/80 of point a's hour and 40/120 of b's: 3 - 0.5 - 2/3 CPU-hours
    assert "the whole study: 3.00 CPU-hours; 2 schedule points" in out
    assert f"S=4: about {3 - 0.5 - 2 / 3:.2f} CPU-hours" in out


def test_steps_compares_prefix_runs_with_the_whole_runs(tmp_path, capsys):
    steps = load_script("benchmarks/ficco_budget/steps.py")
    res = tmp_path / "res"
    s = {"kind": "ficco", "ficco_schedule": "hetero_fused_1d", "ficco_comm": "dma"}
    _point(res, "ficco-sp", "a", 100.0, s, {"time": {"total_us": {"value": 500.0}}})
    _point(res, "ficco-sp", "b", 300.0, s, {"time": {"total_us": {"value": 400.0}}})
    lines = [{"config": "x/ficco-sp__a.yaml", "estimate_us": 550.0, "wall_s": 40.0},
             {"config": "ficco-sp__b.yaml", "estimate_us": 396.0, "wall_s": 60.0}]
    f = tmp_path / "prefix.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    steps.compare(str(tmp_path), str(f))
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()]
    # errors +10 % and -1 %: mean +4.5 %, the largest +10 %; |error| mean 5.5 %; walls 100 s of 400 s
    assert ["ficco-dma", "hetero_fused_1d", "2", "+4.5%", "+10.0%", "5.5%", "10.0%", "0.25x"] in rows
    assert "2 points: |error| p50 10.0%, p90 10.0%, max 10.0%; prefix walls 0.03 h against 0.11 h whole" in out
