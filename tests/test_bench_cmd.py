"""``t3sim bench``: the command runs and reports every metric; no timing assertions."""

from __future__ import annotations

import pytest

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


def test_write_replaces_only_the_marked_table(tmp_path):
    """``t3sim bench --write``: the block between the markers becomes the measured cases, machine and commit; the
    text around it is kept; a file without the markers is refused (one line, nothing written)."""
    from t3sim.commands import bench_table
    from t3sim.errors import InputError

    page = tmp_path / "performance.md"
    page.write_text(f"# Speed\n\nbefore\n{bench_table.BEGIN}\nold table\n{bench_table.END}\nafter\n")
    result = {"case": "fc2-tp8-1k", "what": "T-NLG FC-2 TP=8 Sequential, 1024 tokens", "wall_s": 2.5,
              "simulated_us": 338.44, "slowdown": 7386.9, "dram_requests_per_s": 1.1e6, "simpy_events_per_s": 4.4e4,
              "peak_rss_MB": 301.2, "simpy_events": 121_345}
    machine = {"cpu": "Test CPU", "cpus": 2, "platform": "Linux", "python": "3.11", "numpy": "2", "numba": "0.6",
               "simpy": "4.1"}
    bench_table.write(page, bench_table.render([result, {"case": "x", "error": ["boom"]}], machine, "abc123"))
    text = page.read_text()
    assert text.startswith("# Speed\n\nbefore\n") and text.endswith("\nafter\n") and "old table" not in text
    assert "Test CPU, 2 CPUs" in text and "at commit abc123" in text
    row = "| fc2-tp8-1k (T-NLG FC-2 TP=8 Sequential, 1024 tokens) | 2.50 | 338.4 | 7.39e+03 | 1.10e+06 | 4.40e+04 | 301 | 121k |"
    assert row in text.splitlines()
    assert "| x " not in text  # a failed case is not a row
    bare = tmp_path / "bare.md"
    bare.write_text("no markers\n")
    with pytest.raises(InputError, match="--write"):
        bench_table.write(bare, "x")
    assert bare.read_text() == "no markers\n"


@pytest.mark.parametrize("grew", [False, True])
def test_a_case_that_compiled_is_timed_again_from_the_cache(monkeypatch, grew):
    """A run that compiled kernels (numba's cache grew) is not a speed measurement: the case runs again and the second
    run is the one reported, with the difference as ``compile_s``."""
    import t3sim.commands.bench_cmd as B
    import t3sim.exec.dispatch as D

    files = iter([0, 1 if grew else 0, 1, 1])
    monkeypatch.setattr(B, "_cache_files", lambda: next(files))
    calls = []
    real = D.simulate
    monkeypatch.setattr(D, "simulate", lambda e: calls.append(e) or real(e))
    r = run_case("fc2-tp8-256")
    assert len(calls) == (2 if grew else 1)
    assert ("compile_s" in r) == grew
    assert r["wall_s"] > 0 and r["simulated_us"] > 0
