"""``t3sim trace import --chakra`` and ``t3sim trace export --chakra`` end to end: per-rank traces of a TP=4
transformer built with mlc-chakra's API, the experiments import writes, export's simulations (a 128-token,
512-wide model: about a second for its four operations) and the traces it writes, read back with chakra's own
decoder; bad input as one line with exit 2; and the example traces of chakra's own generator."""

from __future__ import annotations

import json
import sys

import pytest
from chakra.schema.protobuf.et_def_pb2 import COMP_NODE
from chakra.src.generator import generator

from t3sim.commands.chakra_cmd import pair_times
from t3sim.config.sweep import expand
from t3sim.workload.chakra_pairs import find_pairs
from t3sim.workload.chakra_trace import attrs, read_trace
from tests.conftest import REPO, assert_one_line_error
from tests.workload.chakra_builders import transformer_rank, unmappable_trace, write_ranks
from tests.workload.test_chakra_pairs import _decode


def test_import_writes_one_experiment_per_operation(tmp_path, run_cli):
    ranks = write_ranks(tmp_path, "tf")
    rc, out, err = run_cli("trace", "import", "--chakra", *map(str, ranks), "--out", str(tmp_path / "exp"), cwd=tmp_path)
    assert rc == 0, err
    files = sorted((tmp_path / "exp").glob("*.yaml"))
    assert [f.name for f in files] == ["chakra-gemm-ar-128x512x128-bf16-tp4-sequential.yaml",
                                       "chakra-gemm-ar-128x512x512-bf16-tp4-sequential.yaml"]
    assert "pairs (16):" in out and out.count("ALL_REDUCE") == 16
    n_nodes = len(transformer_rank().nodes)
    assert f"unmapped nodes ({4 * (n_nodes - 8)}):" in out
    assert "tf.0.et: node 4 (aten::softmax): compute node with no collective consumer" in out
    for f in files:
        (point,) = expand(f)
        assert point.config.name == f.name.rsplit("-", 1)[0] and point.config.scheme.kind == "sequential"


def _stats(results, op_name):
    (path,) = (results / op_name).glob("*/stats.json")
    return {k: v["value"] for k, v in json.loads(path.read_text())["time"].items()}


def test_export_writes_the_simulated_times_and_reuses_results(tmp_path, run_cli):
    ranks = write_ranks(tmp_path, "sp", sequence_parallel=True)
    results, out_dir = tmp_path / "results", tmp_path / "out"
    argv = ("trace", "export", "--chakra", *map(str, ranks), "--out", str(out_dir), "--results", str(results))
    rc, out, err = run_cli(*argv, cwd=tmp_path)
    assert rc == 0, err
    assert "4 simulated" in err and "pairs (32):" in out
    pairs, _ = find_pairs([read_trace(r) for r in ranks])
    for rank in ranks:
        meta, nodes = _decode(out_dir / rank.name)
        by_id = {n.id: n for n in nodes}
        before = {n.id: n for n in read_trace(rank).nodes}
        assert list(by_id) == list(before)
        for p in (p for p in pairs if p.trace == str(rank)):
            t = _stats(results, p.op.name)
            first = t["ag_us"] if p.op.direction == "ag_gemm" else t["gemm_us"]
            a, b = by_id[p.first], by_id[p.second]
            assert a.duration_micros == int(first + 0.5)
            assert a.duration_micros + b.duration_micros == int(t["total_us"] + 0.5)
            assert list(b.data_deps) == list(before[p.second].data_deps)  # the pairs' nodes were linked already
            assert attrs(a)["t3sim_scheme"] == attrs(b)["t3sim_scheme"] == "sequential"
            assert by_id[p.comm].type == COMP_NODE
    first_bytes = {r.name: (out_dir / r.name).read_bytes() for r in ranks}
    # imported experiments are the same points: t3sim run reuses export's results
    rc, _, _ = run_cli("trace", "import", "--chakra", *map(str, ranks), "--out", str(tmp_path / "exp"), cwd=tmp_path)
    exp = next((tmp_path / "exp").glob("chakra-ag-gemm-*.yaml"))
    rc, out, err = run_cli("run", str(exp), "--out", str(results), cwd=tmp_path)
    assert rc == 0 and "1 reused" in err
    # a second export simulates nothing and writes the same bytes
    rc, out, err = run_cli(*argv, cwd=tmp_path)
    assert rc == 0 and "4 reused, 0 simulated" in err
    assert {r.name: (out_dir / r.name).read_bytes() for r in ranks} == first_bytes


def test_a_scheme_per_pair(tmp_path):
    """The hook a scheme advisor uses: ``choose`` picks each pair's scheme; the ideal overlap composes Sequential's
    simulation, so the two schemes share one run per operation."""
    ranks = write_ranks(tmp_path, "sp", sequence_parallel=True, layers=1)
    pairs, _ = find_pairs([read_trace(r) for r in ranks])
    choose = {"gemm_rs": "ideal_gemm_rs_overlap", "ag_gemm": "sequential"}
    times, refused = pair_times(pairs, lambda p: choose[p.op.direction], "systems/t3-table1.yaml", str(tmp_path / "r"))
    seq, _ = pair_times([p for p in pairs if p.op.direction == "gemm_rs"], lambda p: "sequential",
                        "systems/t3-table1.yaml", str(tmp_path / "r"))
    assert not refused and set(times) == set(pairs)
    for p, t in times.items():
        assert t.scheme == choose[p.op.direction]
        if p in seq:
            s = seq[p]
            gemm, rs = s.first_us, s.total_us - s.first_us  # reduce_scatter only: no all-gather
            assert t.total_us == pytest.approx(max(gemm, rs)) and t.total_us < s.total_us


def test_exported_traces_of_mixed_pairs_and_unmappable_nodes(tmp_path, run_cli):
    t, why = unmappable_trace()
    path = t.write(tmp_path / "bad.et")
    rc, out, err = run_cli("trace", "export", "--chakra", str(path), "--tp", "4", "--out", str(tmp_path / "o.et"),
                           "--results", str(tmp_path / "r"), cwd=tmp_path)
    assert rc == 0, err
    assert f"unmapped nodes ({len(why)}):" in out and "pairs (1):" in out
    _, nodes = _decode(tmp_path / "o.et")
    before = read_trace(path).nodes
    changed = [n.id for n, b in zip(nodes, before) if n.SerializeToString() != b.SerializeToString()]
    assert changed == sorted(t.expected[0][:2])


def _cli_bad(run_cli, tmp_path, *argv):
    return run_cli("trace", *argv, cwd=tmp_path)


def test_bad_traces_and_flags_are_one_line_with_exit_2(tmp_path, run_cli):
    ranks = [str(p) for p in write_ranks(tmp_path, "tf", layers=1)]
    good = open(ranks[0], "rb").read()
    (tmp_path / "cut.et").write_bytes(good[:-5])
    (tmp_path / "text.et").write_text("name: not a trace\n" * 20)
    bad = [
        (("import", "--chakra", str(tmp_path / "text.et")), "text.et", "not a Chakra execution trace"),
        (("import", "--chakra", str(tmp_path / "cut.et"), "--tp", "4"), "cut.et: message", "a truncated stream"),
        (("import", "--chakra", ranks[0]), "--tp", "in 1 of the given traces"),
        (("import", "--chakra", ranks[0], ranks[0]), "--chakra", "the same trace twice"),
        (("import", "--chakra", *ranks, "--scheme", "t3_mca", "--tp", "4", "--system", "nowhere.yaml"), "--system",
         "nowhere.yaml"),
        (("import", "--chakra", *ranks, "--scheme", "warp_drive"), "--scheme", "warp_drive"),
        (("import", "--chakra", *ranks, "--scheme", "gemv_ar"), "--scheme", "gemv_ar, which runs gemv workloads"),
        (("import", "--chakra", *ranks, "--system", str(REPO / "configs/experiments/default.yaml")), "--system",
         "a config of kind experiment"),
        (("import", "--chakra", *ranks, "--tp", "1"), "--tp", "found 1"),
        (("export", "--chakra", str(tmp_path / "missing.et"), "--out", str(tmp_path / "o")), "missing.et", "no such file"),
        (("export", "--chakra", ranks[0], "--tp", "4", "--out", ranks[0]), "--out", "the input trace"),
        (("export", "--chakra", ranks[0], ranks[1], "--out", str(tmp_path / "o"), "-j", "-1"), "-j/--jobs", "-1"),
    ]
    sp = [str(p) for p in write_ranks(tmp_path, "sp", sequence_parallel=True, layers=1)]
    bad.append((("export", "--chakra", *sp, "--scheme", "t3_mca", "--out", str(tmp_path / "o")), "--scheme",
                "t3_mca, which runs gemm_rs"))
    short = tmp_path / "short.et"
    transformer_rank(layers=2).write(short)
    bad.append((("export", "--chakra", ranks[0], str(short), "--tp", "4", "--out", str(tmp_path / "o")), "--chakra",
                "different numbers of pairs"))
    for argv, *fragments in bad:
        rc, out, err = _cli_bad(run_cli, tmp_path, *argv)
        assert_one_line_error(rc, err, *fragments)
        assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir()), argv


def test_the_chakra_generators_example_traces_import_with_every_node_unmapped(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["chakra_generator", "--num_npus", "2"])
    generator.main()
    files = sorted(str(p) for p in tmp_path.glob("*.et"))
    assert len(files) == 28
    rc, out, err = run_cli("trace", "import", "--chakra", *files, "--out", str(tmp_path / "exp"), cwd=tmp_path)
    assert rc == 0, err
    assert "pairs (0):" in out and not list((tmp_path / "exp").glob("*.yaml"))
    lines = [line.strip() for line in out.splitlines() if ".et: node " in line]
    n_nodes = sum(len(read_trace(f).nodes) for f in files)
    assert len(lines) == n_nodes
    expect = {"ALL_REDUCE.0.et": "ALL_REDUCE fed by no GEMM", "ALL_GATHER.0.et": "ALL_GATHER feeding no GEMM",
              "BARRIER.0.et": "BARRIER: t3sim pairs GEMMs", "one_comm_send_node.0.et": "COMM_SEND_NODE: t3sim maps",
              "one_metadata_node_all_types.0.et": "METADATA_NODE: t3sim maps",
              "two_comp_nodes_dependent.1.et": "compute node with no collective consumer"}
    for name, reason in expect.items():
        assert any(line.startswith(name) and reason in line for line in lines), name


def test_an_operation_the_system_cannot_run_leaves_its_pair_unmapped(tmp_path, run_cli):
    path = transformer_rank(T=2**24, layers=1).write(tmp_path / "huge.et")
    rc, out, err = run_cli("trace", "import", "--chakra", str(path), "--tp", "4", "--out", str(tmp_path / "exp"),
                           cwd=tmp_path)
    assert rc == 0, err
    assert "pairs (0):" in out and not list((tmp_path / "exp").glob("*.yaml"))
    lines = [line.strip() for line in out.splitlines() if "t3sim cannot run it under sequential" in line]
    assert [line.split(": ")[1] for line in lines] == ["node 6 (aten::linear)", "node 7 (ALL_REDUCE)",
                                                              "node 12 (aten::linear)", "node 13 (ALL_REDUCE)"]
    assert all("less than the workload's footprint" in line for line in lines)
