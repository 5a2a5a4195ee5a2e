"""``t3sim advise``: every scheme on one operation, ranked; bad input; schemes that cannot run it, with reasons;
and the acceptance check against the measured H200 overlap rows."""

from __future__ import annotations

import csv
import json
import time

import pytest

from t3sim.commands.advise_cmd import Operation, advise, advise_report
from tests.conftest import REPO, assert_one_line_error

#: a small GEMM+RS on the measured H200 node: per GPU 512 x 1024 x 1024, bf16 (each scheme runs in about a second)
SMALL = ("--system", "h200-4gpu", "--m", "512", "--n", "1024", "--k", "4096", "--dtype", "bf16")


def test_every_scheme_ranked_then_reused(run_cli, tmp_path):
    out = str(tmp_path / "r")
    rc, text, err = run_cli("advise", *SMALL, "--out", out)
    assert rc == 0, err
    assert "per GPU 512x1024x1024" in text
    ranked = [line.split()[0] for line in text.splitlines()[4:] if line[:5].strip().isdigit()]
    assert ranked == [str(i) for i in range(1, len(ranked) + 1)] and len(ranked) >= 8
    rc, js, err = run_cli("advise", *SMALL, "--out", out, "--json")
    assert rc == 0, err
    a = json.loads(js)
    rows = {(r["scheme"], r["variant"]): r for r in a["rows"]}
    assert all(r["reused"] for r in a["rows"] if r["status"] == "ok")  # the second call simulates nothing
    # every scheme of the direction ran (FLUX in each reduction, Concurrent in each launch order) ...
    for key in [("sequential", ""), ("concurrent", "launch_first=gemm"), ("concurrent", "launch_first=comm"),
                ("chunked", ""), ("chunked_dma", ""), ("t3", ""), ("t3_mca", ""), ("flux_rs", "flux_reduce=atomic"),
                ("flux_rs", "flux_reduce=a2a_local"), ("flux_rs", "flux_reduce=pull")]:
        assert rows[key]["status"] == "ok" and rows[key]["rank"] >= 1, key
    for key in [("ideal_gemm_rs_overlap", ""), ("ideal_rs_nmc", "")]:
        assert rows[key]["bound"] and rows[key]["rank"] is None
    # ... and every other registered scheme is a row with its reason, never dropped
    from t3sim.schemes.runtime import SCHEMES

    assert {r["scheme"] for r in a["rows"]} == set(SCHEMES)
    na = {r["scheme"]: r["reason"] for r in a["rows"] if r["status"] == "not_applicable"}
    assert "gemm_rs with scheme.kind=fused_gemm_a2a, which runs gemm_a2a" in na["fused_gemm_a2a"]
    assert "gemm_rs with scheme.kind=flux_ag, which runs ag_gemm" in na["flux_ag"]
    assert "gemm_rs with scheme.kind=ficco" in na["ficco"]
    assert "runs gemv workloads" in na["gemv_ar"] and "contention study" in na["copy"]
    seq = rows[("sequential", "")]
    assert seq["speedup_x"] == pytest.approx(1.0) and seq["overlap_efficiency"] == pytest.approx(0.0)
    assert seq["exposed_comm_us"] == pytest.approx(seq["total_us"] - seq["gemm_alone_us"])
    best = a["rows"][0]
    assert best["rank"] == 1 and best["total_us"] == min(r["total_us"] for r in a["rows"] if r["rank"])
    assert (a["gemm_M"], a["gemm_N"], a["gemm_K"], a["operation"]["direction"]) == (512, 1024, 1024, "gemm_rs")
    for r in a["rows"]:
        if r["rank"]:
            assert r["binding_resource"] in ("CUs", "HBM", "links", "none")
            assert 0 < r["cu_utilisation_frac"] <= 1 and 0 <= r["link_utilisation_frac"] <= 1
            assert 0 <= r["hbm_bandwidth_utilisation_frac"] <= 1 and 0 <= r["hbm_queue_occupancy_frac"] <= 1
    stats = json.loads((tmp_path / "r" / "advise" / seq["result_dir"].split("/")[-1] / "stats.json").read_text())
    assert seq["total_us"] == pytest.approx(stats["time"]["total_us"]["value"])


def test_the_python_api_and_a_feature_the_system_lacks(tmp_path):
    """FLUX's atomic reduction on a GPU without bf16 atomics is not applicable, with the project's reason; the
    schemes not asked for are rows that say so."""
    op = Operation(direction="gemm_rs", dtype="bf16", M=512, N=1024, K=4096)
    rows = advise("h200-4gpu", op, schemes=["sequential", "flux_rs"], out=tmp_path,
                  overrides=["system.gpu.atomic_add_dtypes=[fp32]"])
    by = {(r["scheme"], r["variant"]): r for r in rows}
    atomic = by[("flux_rs", "flux_reduce=atomic")]
    assert atomic["status"] == "not_applicable" and "atomic" in atomic["reason"] and atomic["rank"] is None
    assert by[("flux_rs", "flux_reduce=pull")]["status"] == "ok"
    assert by[("t3", "")]["status"] == "skipped" and "--schemes" in by[("t3", "")]["reason"]


def test_ag_gemm_marks_ficcos_heuristic_pick(run_cli, tmp_path):
    rc, js, err = run_cli("advise", "--system", "h200-4gpu", "--model", "mega-gpt-2", "--sublayer", "FC-1",
                          "--tokens", "256", "--direction", "ag-gemm", "--dtype", "bf16", "--json",
                          "--schemes", "sequential,ficco,flux_ag,chunked_dma,ideal_gemm_rs_overlap", "--out",
                          str(tmp_path))
    assert rc == 0, err
    a = json.loads(js)
    ficco = [r for r in a["rows"] if r["scheme"] == "ficco"]
    assert len(ficco) == 4 and a["heuristic_picks"]["ficco"]["ficco_schedule"]
    assert [r["variant"] for r in ficco if r["heuristic_pick"]] == [
        f"ficco_schedule={a['heuristic_picks']['ficco']['ficco_schedule']}"]
    assert set(a["heuristic_picks"]) == {"ficco"}  # no other scheme declares a heuristic
    assert {r["variant"] for r in a["rows"] if r["scheme"] == "flux_ag"} == {"flux_ag_mode=push", "flux_ag_mode=pull"}
    shards = next(r for r in a["rows"] if r["scheme"] == "chunked_dma")
    assert shards["status"] == "ok" and shards["rank"] >= 1
    ideal = next(r for r in a["rows"] if r["scheme"] == "ideal_gemm_rs_overlap")
    assert ideal["status"] == "not_applicable" and "ag_gemm" in ideal["reason"]


@pytest.mark.parametrize("args, fragments", [
    (("--system", "no-such-system", "--m", "512", "--n", "1024", "--k", "4096"), ("--system", "h200-4gpu")),
    (("--system", "h200-4gpu", "--m", "512", "--n", "1024"), ("--k", "all of --m, --n and --k")),
    (("--system", "h200-4gpu", "--m", "512", "--n", "1024", "--k", "4098"), ("--k", "multiple of 4")),
    (("--system", "h200-4gpu", "--model", "t-nlg", "--m", "512"), ("--m/--n/--k", "one of them")),
    (("--system", "h200-4gpu"), ("--model", "no operation")),
    (("--system", "h200-4gpu", "--model", "nope"), ("--model", "t-nlg")),
    (("--system", "h200-4gpu", "--model", "t-nlg", "--tp", "1"), ("--tp", "2 or more")),
    (("--system", "h200-4gpu", "--model", "t-nlg", "--tokens", "0"), ("--tokens", ">= 1")),
    (("--system", "h200-4gpu", "--model", "t-nlg", "--direction", "rs"), ("--direction",)),
    (("--system", "h200-4gpu", "--model", "t-nlg", "--schemes", "sequential,bogus"), ("--schemes", "bogus")),
    (("--system", "h200-4gpu", "--model", "t-nlg", "--set", "system.hbm.channels=-1"), ("system.hbm.channels",)),
])
def test_bad_input_is_one_line_and_exit_2(run_cli, tmp_path, args, fragments):
    rc, out, err = run_cli("advise", *args, "--out", str(tmp_path))
    assert_one_line_error(rc, err, *fragments)
    assert not (tmp_path / "advise").exists()  # nothing simulated, nothing half-written


#: measured column of experiments/validation/overlap_4gpu.csv -> the scheme it measured (t3sim/validation/overlap.py)
MEASURED = {"sequential_us": "sequential", "concurrent_independent_us": "concurrent",
            "chunked_decomposition_us": "chunked"}


@pytest.mark.slow
def test_h200_ranking_agrees_with_the_measured_overlap_rows(tmp_path):
    """On every measured shape (Mega-GPT-2 at TP=4 on 4 H200s: a GEMM M x K by K x N per GPU and the
    reduce-scatter of its output), advise ranks sequential, concurrent and chunked as the measurements do. Each row's
    per-GPU K is the whole operator's K / 4. About 3 minutes on 2 cores (-j 2; FC-1 reuses FC-2, the same shape)."""
    with open(REPO / "experiments/validation/overlap_4gpu.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4
    from t3sim.analysis.advise import measured_order, scheme_order

    t0 = time.monotonic()
    for r in rows:
        tp = int(r["tp"])
        op = Operation(direction="gemm_rs", tp=tp, dtype="bf16", M=int(r["M"]), N=int(r["N"]), K=int(r["K"]) * tp)
        a = advise_report("h200-4gpu", op, schemes=list(MEASURED.values()), out=tmp_path, jobs=2)
        assert (a.gemm_M, a.gemm_N, a.gemm_K) == (int(r["M"]), int(r["N"]), int(r["K"]))
        measured = measured_order({s: float(r[c]) for c, s in MEASURED.items()})
        assert scheme_order(a.rows, tuple(MEASURED.values())) == measured, (r["sublayer"], a.rows)
    print(f"acceptance: {time.monotonic() - t0:.0f} s")
