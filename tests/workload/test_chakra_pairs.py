"""The Chakra bridge's trace logic, without simulating: reading and checking traces, finding the GEMM+collective
pairs, the experiment of each, and writing simulated times back (t3sim/workload/chakra_*.py). The traces are
built with the mlc-chakra package's own schema and encoder (tests/workload/chakra_builders.py)."""

from __future__ import annotations

import gzip

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from chakra.schema.protobuf.et_def_pb2 import (ALL_REDUCE, COMM_COLL_NODE, COMP_NODE, AttributeProto, GlobalMetadata,
                                               Node)
from chakra.src.third_party.utils.protolib import decodeMessage, encodeMessage

from t3sim.config.sweep import expand
from t3sim.errors import InputError
from t3sim.workload.chakra_export import PairTime, apply_times, whole_us
from t3sim.workload.chakra_pairs import Operation, find_pairs, operations
from t3sim.workload.chakra_trace import attrs, read_trace, write_trace
from t3sim.workload.generate import workload_kernel
from tests.conftest import REPO
from tests.test_fuzz_bad_input import clean_or_ok, cli
from tests.workload.chakra_builders import (TraceBuilder, pytorch_style_rank, transformer_rank, unmappable_trace,
                                            write_ranks)


def _found(pairs):
    return sorted((p.gemm, p.comm, p.op.collective, p.op.M, p.op.N, p.op.K) for p in pairs)


@pytest.mark.parametrize("sp", [False, True], ids=["all-reduce", "sequence-parallel"])
def test_a_tp4_transformer_has_exactly_its_pairs(tmp_path, sp):
    paths = write_ranks(tmp_path, "tf", sequence_parallel=sp)
    pairs, unmapped = find_pairs([read_trace(p) for p in paths])
    expected = sorted(transformer_rank(sequence_parallel=sp).expected)
    assert len(expected) == (8 if sp else 4)
    for path in paths:
        assert _found(p for p in pairs if p.trace == str(path)) == expected
    assert {p.op.tp for p in pairs} == {4} and {p.op.dtype for p in pairs} == {"bf16"}
    # every other node is reported once, with a reason
    n_nodes = len(transformer_rank(sequence_parallel=sp).nodes)
    assert len(unmapped) == 4 * (n_nodes - 2 * len(expected))
    assert {u.reason for u in unmapped if "softmax" in u.label} == {"compute node with no collective consumer"}
    # two layers of one shape: one operation per distinct GEMM+collective
    assert len(operations(pairs)) == (4 if sp else 2)


def test_the_experiment_of_a_pair_is_the_pairs_gemm(tmp_path):
    ops = {(p.op.collective, p.op.K): p.op for p in
           find_pairs([read_trace(p) for p in write_ranks(tmp_path, "sp", sequence_parallel=True)])[0]}
    for (coll, K), op in ops.items():
        f = tmp_path / f"{op.name}.yaml"
        f.write_text(yaml.safe_dump(op.experiment("systems/t3-table1.yaml", "sequential")))
        (point,) = expand(f)
        w = point.config.workload
        k = workload_kernel(w)
        assert (k.M, k.N, k.K, k.dtype, w.tp) == (op.M, op.N, op.K, "bf16", 4), (coll, K)
        assert point.config.system.interconnect.num_gpus == 4
        assert w.direction == ("ag_gemm" if coll == "all_gather" else "gemm_rs")
        assert w.kind == "gemm" and (w.gemm.M, w.gemm.N, w.gemm.K) == op.operator_shape
        if coll != "all_gather":
            assert w.collective == coll and op.operator_shape == (op.M, op.N, op.K * 4)


def test_unmappable_nodes_are_each_reported_with_their_reason(tmp_path):
    t, why = unmappable_trace()
    tr = read_trace(t.write(tmp_path / "bad.et"))
    pairs, unmapped = find_pairs([tr], tp=4)
    assert _found(pairs) == sorted(t.expected)
    got = {u.node: u.reason for u in unmapped}
    assert set(got) == set(why)
    for node, fragment in why.items():
        assert fragment in got[node], (node, got[node])
    assert unmapped[0].text() == "bad.et: node 0 (aten::softmax): compute node with no collective consumer"


def test_a_converted_pytorch_trace_pairs_by_the_tensor_the_gemm_writes(tmp_path):
    t = pytorch_style_rank()
    tr = read_trace(t.write(tmp_path / "rank0.et"))
    pairs, unmapped = find_pairs([tr], tp=4)
    assert _found(pairs) == sorted(t.expected)
    assert pairs[0].gemm_label == "node 101 (aten::linear)"  # the kernel's op from its op_schema
    assert {u.node: u.reason for u in unmapped} == {100: "host (CPU) op: t3sim maps the GPU nodes",
                                                    102: "host (CPU) op: t3sim maps the GPU nodes"}


def test_tp_comes_from_the_process_group_or_the_flag(tmp_path):
    paths = write_ranks(tmp_path, "tf", tp=2, H=256)
    assert {p.op.tp for p in find_pairs([read_trace(p) for p in paths])[0]} == {2}
    one = [read_trace(paths[0])]
    with pytest.raises(InputError, match="--tp.*process group 'tp'.*in 1 of the given traces"):
        find_pairs(one)
    assert {p.op.tp for p in find_pairs(one, tp=2)[0]} == {2}


def test_dtype_comes_from_the_flag_where_the_trace_has_no_types(tmp_path):
    t = TraceBuilder()
    g = t.comp("aten::mm", [[128, 64], [64, 256]], [[128, 256]], types=[])
    t.coll(ALL_REDUCE, 128 * 256 * 4, [g])
    tr = read_trace(t.write(tmp_path / "t.et"))
    pairs, unmapped = find_pairs([tr], tp=4)
    assert not pairs and "give --dtype" in unmapped[0].reason
    (p,), _ = find_pairs([tr], tp=4, dtype_flag="fp32")
    assert (p.op.M, p.op.N, p.op.K, p.op.dtype) == (128, 256, 64, "fp32")


# --------------------------------------------------------------------------- bad traces


def _good(tmp_path):
    return transformer_rank(layers=1).write(tmp_path / "good.et")


def _bad(tmp_path, data: bytes, name="bad.et"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("make, fragment", [
    (lambda tp: _bad(tp, b""), "an empty file"),
    (lambda tp: tp / "missing.et", "no such file"),
    (lambda tp: REPO / "configs/experiments/default.yaml", "not a Chakra execution trace"),
    (lambda tp: _bad(tp, b'{"schema": "1.0.3-chakra.0.0.4", "nodes": []}'), "a JSON file, not a Chakra trace"),
    (lambda tp: _bad(tp, bytes(range(7, 200))), "not a Chakra execution trace"),
    (lambda tp: _bad(tp, _good(tp).read_bytes()[:-9]), "a truncated stream"),
    (lambda tp: _bad(tp, gzip.compress(_good(tp).read_bytes())[:-12]), "a broken gzip stream"),
])
def test_a_file_that_is_no_whole_chakra_trace_is_one_line_of_bad_input(tmp_path, make, fragment):
    with pytest.raises(InputError) as exc:
        read_trace(make(tmp_path))
    assert fragment in exc.value.one_line() and "\n" not in exc.value.one_line()


def _trace_of(tmp_path, *nodes):
    path = tmp_path / "t.et"
    with open(path, "wb") as f:
        encodeMessage(f, GlobalMetadata(version="0.0.4"))
        for n in nodes:
            encodeMessage(f, n)
    return path


@pytest.mark.parametrize("nodes, fragment", [
    ([Node(id=1, type=COMM_COLL_NODE, attr=[AttributeProto(name="comm_type", int64_val=ALL_REDUCE)])],
     "a COMM_COLL_NODE without attribute comm_size"),
    ([Node(id=1, type=COMM_COLL_NODE, attr=[AttributeProto(name="comm_size", int64_val=8)])],
     "a COMM_COLL_NODE without attribute comm_type"),
    ([Node(id=1, type=COMM_COLL_NODE, attr=[AttributeProto(name="comm_type", int64_val=42),
                                            AttributeProto(name="comm_size", int64_val=8)])], "comm_type: found 42"),
    ([Node(id=1, type=COMP_NODE, data_deps=[7])], "data_deps: found node 7, which the trace lacks"),
    ([Node(id=1, type=COMP_NODE), Node(id=1, type=COMP_NODE)], "a second node with id 1"),
    ([Node(id=1, type=COMP_NODE, name="aten::mm", inputs={"shapes": "[[8, 8], [8"})], "inputs.shapes"),
])
def test_a_node_missing_what_the_schema_requires_is_bad_input(tmp_path, nodes, fragment):
    with pytest.raises(InputError) as exc:
        find_pairs([read_trace(_trace_of(tmp_path, *nodes))], tp=2)
    assert fragment in exc.value.one_line()


def test_a_gzipped_trace_reads_as_the_plain_one(tmp_path):
    plain = _good(tmp_path)
    zipped = _bad(tmp_path, gzip.compress(plain.read_bytes()), "good.et.gz")
    a, b = read_trace(plain), read_trace(zipped)
    assert [n.SerializeToString() for n in a.nodes] == [n.SerializeToString() for n in b.nodes]


# --------------------------------------------------------------------------- writing times back


def _decode(path):
    """Every message of ``path`` through chakra's own decoder: (metadata, nodes)."""
    with open(path, "rb") as f:
        meta = GlobalMetadata()
        assert decodeMessage(f, meta)
        nodes = []
        while True:
            n = Node()
            if not decodeMessage(f, n):
                return meta, nodes
            nodes.append(n)


@pytest.mark.parametrize("sp", [False, True], ids=["all-reduce", "sequence-parallel"])
def test_times_written_back_decode_with_chakra(tmp_path, sp):
    tr = read_trace(write_ranks(tmp_path, "tf", sequence_parallel=sp)[0])
    pairs, _ = find_pairs([tr], tp=4)
    times = {op: PairTime("t3_mca", 10.4 + i, 25.51 + 2 * i) for i, op in enumerate(operations(pairs))}
    out = write_trace(apply_times(tr, pairs, lambda p: times[p.op], note="test"), tmp_path / "out.et")
    meta, nodes = _decode(out)
    assert attrs(meta)["t3sim_export"] == "test"
    before = {n.id: n for n in tr.nodes}
    after = {n.id: n for n in nodes}
    assert list(after) == [n.id for n in tr.nodes]
    paired = set()
    for p in pairs:
        t = times[p.op]
        first, second = after[p.first], after[p.second]
        assert first.duration_micros == whole_us(t.first_us) == round(t.first_us)
        assert first.duration_micros + second.duration_micros == round(t.total_us)
        assert p.first in second.data_deps and list(before[p.first].data_deps) == list(first.data_deps)
        assert attrs(first)["t3sim_time_us"] == t.first_us
        assert attrs(second)["t3sim_time_us"] == pytest.approx(t.total_us - t.first_us)
        for n in (first, second):
            a = attrs(n)
            assert (a["t3sim_scheme"], a["t3sim_operation"], a["t3sim_total_us"]) == ("t3_mca", p.op.name, t.total_us)
        comm = after[p.comm]
        assert comm.type == COMP_NODE and attrs(comm)["t3sim_original_type"] == "COMM_COLL_NODE"
        assert attrs(comm)["comm_size"] == attrs(before[p.comm])["comm_size"]
        assert attrs(after[p.gemm])["t3sim_phase"] == "gemm"
        assert attrs(comm)["t3sim_phase"] == ("ag" if sp and p.op.collective == "all_gather" else "rs" if sp else "rs+ag")
        paired |= {p.gemm, p.comm}
    # every other node is as it was
    for i, n in before.items():
        if i not in paired:
            assert after[i].SerializeToString() == n.SerializeToString()


def test_a_pair_linked_only_by_a_tensor_gets_a_data_dependency(tmp_path):
    t = pytorch_style_rank()
    tr = read_trace(t.write(tmp_path / "rank0.et"))
    (p,), _ = find_pairs([tr], tp=4)
    assert p.gemm not in tr.by_id()[p.comm].data_deps
    out = apply_times(tr, [p], lambda _: PairTime("sequential", 3.5, 9.0))
    comm = out.by_id()[p.comm]
    assert list(comm.data_deps) == list(tr.by_id()[p.comm].data_deps) + [p.gemm]
    assert (out.by_id()[p.gemm].duration_micros, comm.duration_micros) == (4, 5)  # 3.5 rounds up, 9 - 4


def test_the_times_of_a_result_are_its_first_phase_and_total():
    rs = Operation("gemm_rs", "reduce_scatter", 128, 512, 128, "bf16", 4)
    ag = Operation("ag_gemm", "all_gather", 128, 512, 128, "bf16", 4)
    summary = {"gemm_us": 6.0, "rs_us": 3.0, "ag_us": 2.0, "total_us": 11.0}
    assert PairTime.from_summary(rs, "s", summary).first_us == 6.0
    assert PairTime.from_summary(ag, "s", summary).first_us == 2.0
    assert PairTime.from_summary(ag, "s", summary).second_us == 9.0


# --------------------------------------------------------------------------- any bytes


_VALID = transformer_rank(layers=1, sequence_parallel=True)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.one_of(
    st.binary(max_size=300),
    st.tuples(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=6),
              st.integers(0, 10**6))))
def test_any_bytes_are_a_trace_or_one_clean_line(data, tmp_path_factory):
    """Random bytes, and a valid trace with bytes changed and cut short: import maps it or says one line (exit 2)."""
    tmp = tmp_path_factory.mktemp("fz")
    if isinstance(data, tuple):  # mutate the valid trace
        raw = bytearray(_VALID.write(tmp / "v.et").read_bytes())
        for pos, byte in data[0]:
            raw[pos % len(raw)] = byte
        data = bytes(raw[:max(1, data[1] % (len(raw) + 1))])
    path = tmp / "f.et"
    path.write_bytes(data)
    rc, _, err = cli("trace", "import", "--chakra", str(path), "--tp", "4", "--out", str(tmp / "exp"))
    clean_or_ok(rc, err)
