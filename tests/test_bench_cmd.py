"""``t3sim bench``: the command runs and reports every metric; no timing assertions."""

from __future__ import annotations

from t3sim.cli import main
from t3sim.commands.bench_cmd import CASES, DEFAULT_CASES, run_case


def test_cases_are_defined(capsys):
    assert set(DEFAULT_CASES) <= set(CASES)
    assert main(["bench", "--list"]) == 0
    assert "fc2-tp8" in capsys.readouterr().out


def test_memtest_case_reports_every_metric():
    r = run_case("hbm-stream-quick")
    for key in ("wall_s", "simulated_us", "slowdown", "dram_requests_per_s", "simpy_events_per_s", "peak_rss_MB"):
        assert key in r and r[key] is not None
    assert r["dram_requests"] == 200_000 and r["simulated_us"] > 0


def test_unknown_case_is_an_input_error(capsys):
    assert main(["bench", "--case", "nope"]) == 2


def test_sweep_counts_a_shared_simulation_once(tmp_path):
    """A sweep case sums simulated time and DRAM requests over simulations, not points: Sequential and
    Ideal-GEMM-RS-Overlap of one config share one simulation (t3sim.system.core.simulate_shared)."""
    from t3sim.commands.bench_cmd import _run_sweep
    from tests.system.helpers import tiny_sweep

    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(tiny_sweep("bench-tiny", ["sequential", "ideal_gemm_rs_overlap"]))
    shared = _run_sweep(dict(config=str(cfg), overrides=[], jobs=1))  # 2 token counts x 2 schemes
    cfg.write_text(tiny_sweep("bench-tiny", ["sequential"]))
    alone = _run_sweep(dict(config=str(cfg), overrides=[], jobs=1))
    assert shared["points"] == 4 and shared["simulations"] == 2
    assert alone["points"] == alone["simulations"] == 2
    assert shared["simulated_us"] == alone["simulated_us"] > 0
    assert shared["dram_requests"] == alone["dram_requests"] > 0


def test_every_registered_scheme_has_a_bench_case():
    """A t3sim bench case per scheme (named in a case's overrides, in its config, or in the fc2-tp8 set)."""
    from t3sim.commands.bench_cmd import CASES
    from t3sim.schemes.runtime import SCHEMES
    from tests.conftest import REPO

    covered = set()
    for case in CASES.values():
        if case["kind"] != "experiment":
            continue
        sets = [o.split("=", 1)[1] for o in case.get("overrides", []) if o.startswith("scheme.kind=")]
        if sets:
            covered.update(sets)
        else:
            text = (REPO / case["config"]).read_text()
            covered.update(name for name in SCHEMES if f"kind: {name}\n" in text)
    assert set(SCHEMES) - covered == set()


def test_scheme_set_has_a_small_case_per_scheme_schedule_and_comm():
    """``t3sim bench --schemes`` holds a case for every registered scheme, every FiCCO schedule
    and every FiCCO communication kind (their resolved configs say so), and only cases that exist."""
    from t3sim.commands.bench_cmd import SCHEME_SET, _repo_path
    from t3sim.config import load_experiment
    from t3sim.schemes.ficco.heuristic import SCHEDULES
    from t3sim.schemes.runtime import SCHEMES

    assert set(SCHEME_SET) <= set(CASES) and len(set(SCHEME_SET)) == len(SCHEME_SET)
    kinds, schedules, comms = set(), set(), set()
    for name in SCHEME_SET:
        case = CASES[name]
        assert case["kind"] == "experiment", name
        e = load_experiment(_repo_path(case["config"]), list(case["overrides"]))
        assert not (e.sweep.grid or e.sweep.cases), f"{name}: a scheme-set case is one point"
        kinds.add(e.scheme.kind)
        if e.scheme.kind == "ficco":
            schedules.add(e.scheme.ficco_schedule)
            comms.add(e.scheme.ficco_comm)
    assert set(SCHEMES) - kinds == set()
    assert set(SCHEDULES) - schedules == set()
    from typing import get_args

    from t3sim.schemes.ficco.options import FiccoOptions

    assert comms == set(get_args(FiccoOptions.model_fields["ficco_comm"].annotation))


def test_scheme_set_is_listed(capsys):
    assert main(["bench", "--list"]) == 0
    out = capsys.readouterr().out
    assert "ficco-uniform-fused-2d-dma-ag-fc1-h200-1k" in out and "scheme" in out
