"""``t3sim advise --chakra`` and ``t3sim trace export --chakra --scheme advise``: every scheme ranked on each distinct
GEMM+collective pair of per-rank traces of a TP=4 transformer (128 tokens, 512 wide: each scheme about 0.1 s), the
traces written back under each operation's winner, and bad input as one line with exit 2."""

from __future__ import annotations

import json

import pytest

from t3sim.commands.advise_chakra import advise_operation, advise_traces, scheme_spec
from t3sim.commands.advise_cmd import Operation, advise
from t3sim.commands.chakra_cmd import pair_times
from t3sim.errors import InputError
from t3sim.workload.chakra_export import whole_us
from t3sim.workload.chakra_pairs import find_pairs, operations
from t3sim.workload.chakra_trace import attrs, read_trace
from tests.conftest import REPO, assert_one_line_error
from tests.workload.chakra_builders import transformer_rank, write_ranks
from tests.workload.test_chakra_pairs import _decode

SYSTEM = "systems/t3-table1.yaml"
#: the gemm_rs schemes the ranking test runs (every scheme: the export test)
SOME = "sequential,concurrent,t3,flux_rs,ideal_gemm_rs_overlap"


def _stats_time(result_dir):
    with open(f"{result_dir}/stats.json") as f:
        return {k: v["value"] for k, v in json.load(f)["time"].items()}


def test_advise_ranks_each_distinct_pair_of_a_two_layer_trace_once(tmp_path, run_cli):
    ranks = write_ranks(tmp_path, "tf", layers=2)
    rc, out, err = run_cli("advise", "--chakra", *map(str, ranks), "--system", SYSTEM, "--schemes", SOME,
                           "--out", str(tmp_path / "r"), "--json", cwd=tmp_path)
    assert rc == 0, err
    a = json.loads(out)
    pairs, unmapped = find_pairs([read_trace(r) for r in ranks])
    ops = operations(pairs)
    # two layers of four ranks: 16 pairs of 2 operations, each advised on once, in first-seen order
    assert len(pairs) == 16 and [o["name"] for o in a["operations"]] == [op.name for op in ops]
    assert err.count("advise: ") == 2  # one run of the runner per operation
    for op, o in zip(ops, a["operations"]):
        assert o["pairs"] == 8 and (o["gemm_M"], o["gemm_N"], o["gemm_K"]) == (op.M, op.N, op.K)
        assert o["operation"]["collective"] == "all_reduce" and o["operation"]["tp"] == 4
        ranked = [r for r in o["rows"] if r["rank"] is not None]
        assert [r["rank"] for r in ranked] == list(range(1, len(ranked) + 1)) and len(ranked) >= 5
        assert [r["total_us"] for r in ranked] == sorted(r["total_us"] for r in ranked)
        assert {r["scheme"] for r in ranked} == {"sequential", "concurrent", "t3", "flux_rs"}
    # one record per pair: its operation's winner, the runner-up and the margin between them
    best = {o["name"]: [r for r in o["rows"] if r["rank"] is not None] for o in a["operations"]}
    assert [(r["trace"], r["gemm"], r["comm"]) for r in a["pairs"]] == [(f"tf.{k}.et", p.gemm, p.comm) for k in range(4)
                                                                        for p in pairs if p.trace == str(ranks[k])]
    for r in a["pairs"]:
        first, second = best[r["operation"]][:2]
        assert r["winner"] == scheme_spec(first) and r["total_us"] == first["total_us"]
        assert r["runner_up"] == scheme_spec(second)
        assert r["margin_us"] == pytest.approx(second["total_us"] - first["total_us"]) and r["margin_us"] >= 0
        assert r["binding_resource"] == first["binding_resource"]
    assert len(a["unmapped"]) == len(unmapped) == 4 * (len(transformer_rank().nodes) - 8)
    # the table: each operation's ranking, then one line per pair, then the unmapped nodes (all reused now)
    rc, text, err = run_cli("advise", "--chakra", *map(str, ranks), "--system", SYSTEM, "--schemes", SOME,
                            "--out", str(tmp_path / "r"), cwd=tmp_path)
    assert rc == 0 and err.count("0 simulated") == 2, err
    assert text.count("per GPU 128x512x") == 2 and "pairs (16):" in text and f"unmapped nodes ({len(unmapped)}):" in text
    assert "tf.3.et  node 26 (aten::linear)  node 27 (ALL_REDUCE)  chakra-gemm-ar-128x512x512-bf16-tp4" in text


def test_export_with_advise_applies_each_operations_winner(tmp_path, run_cli):
    ranks = write_ranks(tmp_path, "sp", layers=1, sequence_parallel=True)
    results, out_dir = tmp_path / "r", tmp_path / "o"
    rc, out, err = run_cli("trace", "export", "--chakra", *map(str, ranks), "--scheme", "advise", "--out", str(out_dir),
                           "--results", str(results), cwd=tmp_path)
    assert rc == 0, err
    assert "pairs (16):" in out and "scheme: the one t3sim advise ranks first" in out
    # advise on the same traces and results simulates nothing: export ran exactly advise's runs
    advice = advise_traces([str(r) for r in ranks], SYSTEM, out=str(results))
    assert all(r["reused"] for a in advice.advice.values() for r in a.rows if r["status"] == "ok")
    assert {op.direction for op in advice.advice} == {"gemm_rs", "ag_gemm"}
    for rank in ranks:
        _, nodes = _decode(out_dir / rank.name)
        by_id = {n.id: n for n in nodes}
        for p in (p for p in advice.pairs if p.trace == str(rank)):
            win = advice.advice[p.op].rows[0]
            assert win["rank"] == 1
            t = _stats_time(win["result_dir"])
            first = t["ag_us"] if p.op.direction == "ag_gemm" else t["gemm_us"]
            a, b = by_id[p.first], by_id[p.second]
            assert attrs(a)["t3sim_scheme"] == attrs(b)["t3sim_scheme"] == scheme_spec(win)
            assert attrs(a)["t3sim_total_us"] == win["total_us"] == t["total_us"]
            assert attrs(a)["t3sim_time_us"] == first
            assert a.duration_micros == whole_us(first)
            assert a.duration_micros + b.duration_micros == whole_us(win["total_us"])
            assert scheme_spec(win) in out
    # the conversion builds the workload trace export builds: Sequential's run there is advise's Sequential row
    gemm_rs = [p for p in advice.pairs if p.op.direction == "gemm_rs"]
    seq, _ = pair_times(gemm_rs, lambda p: "sequential", SYSTEM, str(tmp_path / "seq"))
    for p, t in seq.items():
        row = next(r for r in advice.advice[p.op].rows if r["scheme"] == "sequential")
        assert t.total_us == row["total_us"]


def test_the_conversion_keeps_the_per_gpu_gemm_and_the_collective(tmp_path):
    (p, *_), _ = find_pairs([read_trace(r) for r in write_ranks(tmp_path, "tf", layers=1)])
    op = advise_operation(p.op)
    assert (op.direction, op.collective, op.tp, op.dtype) == ("gemm_rs", "all_reduce", 4, "bf16")
    assert (op.M, op.N, op.K) == (p.op.M, p.op.N, p.op.K * 4)  # gemm_rs: K over all GPUs
    with pytest.raises(InputError, match="Operation.collective: found 'all_reduce' with direction ag_gemm"):
        advise(SYSTEM, Operation(direction="ag_gemm", collective="all_reduce", M=128, N=512, K=512), out=tmp_path)


def test_bad_input_is_one_line_with_exit_2(tmp_path, run_cli):
    ranks = [str(r) for r in write_ranks(tmp_path, "tf", layers=1)]
    out, res = tmp_path / "o", tmp_path / "r"
    adv = ("advise", "--chakra")
    bad = [
        ((*adv, *ranks, "--system", SYSTEM, "--m", "128"), "--m", "beside --chakra"),
        ((*adv, *ranks, "--system", SYSTEM, "--direction", "ag-gemm"), "--direction", "beside --chakra"),
        ((*adv, str(tmp_path / "missing.et"), "--system", SYSTEM), "missing.et", "no such file"),
        ((*adv, ranks[0], "--system", SYSTEM), "--tp", "in 1 of the given traces"),
        ((*adv, *ranks, "--system", "nowhere"), "--system", "'nowhere'"),
        ((*adv, *ranks, "--system", str(REPO / "configs/experiments/default.yaml")), "--system", "kind experiment"),
        ((*adv, *ranks, "--system", SYSTEM, "--tp", "1"), "--tp", "found 1"),
        ((*adv, *ranks, "--system", SYSTEM, "-j", "-1"), "-j/--jobs", "-1"),
        ((*adv, *ranks, "--system", SYSTEM, "--schemes", "warp_drive"), "--schemes", "warp_drive"),
        ((*adv, *ranks, "--system", SYSTEM, "--set", "workload.nonsense=1"), "workload.nonsense"),
        (("trace", "import", "--chakra", *ranks, "--scheme", "advise"), "--scheme", "advise with trace import"),
        (("trace", "export", "--chakra", *ranks, "--scheme", "advise", "--out", str(out), "--system", "nowhere.yaml"),
         "--system", "nowhere.yaml"),
    ]
    where = {"advise": ("--out", str(res)), "import": ("--out", str(out)), "export": ("--results", str(res))}
    for argv, *fragments in bad:
        rc, _, err = run_cli(*argv, *where[argv[0] if argv[0] == "advise" else argv[1]], cwd=tmp_path)
        assert_one_line_error(rc, err, *fragments)
        assert not res.exists() and not out.exists(), argv
