"""Chakra traces built with the ``mlc-chakra`` package's own schema and encoder, for the Chakra bridge's tests."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence

from chakra.schema.protobuf.et_def_pb2 import (ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, COMM_COLL_NODE, COMP_NODE,
                                               MEM_LOAD_NODE, REDUCE_SCATTER, AttributeProto, GlobalMetadata, Node)
from chakra.src.third_party.utils.protolib import encodeMessage

BF16 = "Tensor(c10::BFloat16)"


class TraceBuilder:
    """One rank's nodes, numbered from ``first_id``; :meth:`write` encodes them after a GlobalMetadata."""

    def __init__(self, first_id: int = 0):
        self.nodes: List[Node] = []
        self.next_id = first_id
        #: the pairs the builder meant: (GEMM id, collective id, workload.collective, M, N, K)
        self.expected: List[tuple] = []

    def node(self, name: str, kind: int, deps: Sequence[int] = (), attrs: Sequence[AttributeProto] = (),
             ins: Optional[list] = None, outs: Optional[list] = None, types: Optional[list] = None,
             values: Optional[tuple] = None, ctrl: Sequence[int] = (), duration_us: int = 7) -> int:
        n = Node(id=self.next_id, name=name, type=kind, duration_micros=duration_us)
        n.data_deps.extend(deps)
        n.ctrl_deps.extend(ctrl)
        n.attr.extend(attrs or ())
        if ins is not None:
            n.inputs.shapes = str(ins)
            n.inputs.types = str(types if types is not None else [BF16] * len(ins))
        if outs is not None:
            n.outputs.shapes = str(outs)
            n.outputs.types = str([BF16] * len(outs))
        if values is not None:
            n.inputs.values, n.outputs.values = str(values[0]), str(values[1])
        self.nodes.append(n)
        self.next_id += 1
        return n.id

    def comp(self, name: str, ins: Optional[list], outs: Optional[list], deps: Sequence[int] = (), **kw) -> int:
        return self.node(name, COMP_NODE, deps, ins=ins, outs=outs, **kw)

    def coll(self, comm_type: int, comm_size: int, deps: Sequence[int] = (), pg: Optional[str] = "tp",
             extra: Sequence[AttributeProto] = (), **kw) -> int:
        attrs = [AttributeProto(name="comm_type", int64_val=comm_type),
                 AttributeProto(name="comm_size", int64_val=comm_size), *extra]
        if pg is not None:
            attrs.append(AttributeProto(name="pg_name", string_val=pg))
        return self.node(f"ncclDevKernel_{comm_type}", COMM_COLL_NODE, deps, attrs=attrs, **kw)

    def write(self, path: Path) -> Path:
        with open(path, "wb") as f:
            encodeMessage(f, GlobalMetadata(version="0.0.4"))
            for n in self.nodes:
                encodeMessage(f, n)
        return path


def transformer_rank(T: int = 128, H: int = 512, tp: int = 4, layers: int = 2, sequence_parallel: bool = False,
                     b: int = 2) -> TraceBuilder:
    """One rank of a Megatron-style tensor-parallel transformer forward: per layer the QKV GEMM, attention (batched
    GEMMs and a softmax), the output projection, the MLP's two GEMMs and a GELU, layer norms and residual adds.
    Without sequence parallelism the output projection and the second MLP GEMM each feed an all-reduce of their
    T x H output; with it, the layer norms' T/tp x H shards are all-gathered into the QKV and first MLP GEMMs, and
    the row-parallel GEMMs' outputs are reduce-scattered (comm_size: the c10d op's input, PyTorch's convention)."""
    t = TraceBuilder()
    hd = H // tp  # this rank's heads' width
    prev = t.comp("aten::embedding", [[T], [1000, H]], [[T // tp if sequence_parallel else T, H]])
    for _ in range(layers):
        rows = T // tp if sequence_parallel else T
        ln = t.comp("aten::layer_norm", [[rows, H]], [[rows, H]], [prev])
        x = t.coll(ALL_GATHER, rows * H * b, [ln]) if sequence_parallel else ln
        qkv = t.comp("aten::linear", [[T, H], [3 * hd, H], [3 * hd]], [[T, 3 * hd]], [x])
        s = t.comp("aten::bmm", [[tp, T, hd // tp], [tp, hd // tp, T]], [[tp, T, T]], [qkv])
        p = t.comp("aten::softmax", [[tp, T, T]], [[tp, T, T]], [s])
        ctx = t.comp("aten::bmm", [[tp, T, T], [tp, T, hd // tp]], [[tp, T, hd // tp]], [p])
        proj = t.comp("aten::linear", [[T, hd], [H, hd], [H]], [[T, H]], [ctx])
        red = t.coll(REDUCE_SCATTER if sequence_parallel else ALL_REDUCE, T * H * b, [proj])
        coll = "reduce_scatter" if sequence_parallel else "all_reduce"
        t.expected.append((proj, red, coll, T, H, hd))
        if sequence_parallel:
            t.expected.append((qkv, x, "all_gather", T, 3 * hd, H))
        add = t.comp("aten::add", [[rows, H], [rows, H]], [[rows, H]], [red])
        ln2 = t.comp("aten::layer_norm", [[rows, H]], [[rows, H]], [add])
        x2 = t.coll(ALL_GATHER, rows * H * b, [ln2]) if sequence_parallel else ln2
        fc1 = t.comp("aten::linear", [[T, H], [4 * hd, H], [4 * hd]], [[T, 4 * hd]], [x2])
        act = t.comp("aten::gelu", [[T, 4 * hd]], [[T, 4 * hd]], [fc1])
        fc2 = t.comp("aten::linear", [[T, 4 * hd], [H, 4 * hd], [H]], [[T, H]], [act])
        red2 = t.coll(REDUCE_SCATTER if sequence_parallel else ALL_REDUCE, T * H * b, [fc2])
        t.expected.append((fc2, red2, coll, T, H, 4 * hd))
        if sequence_parallel:
            t.expected.append((fc1, x2, "all_gather", T, 4 * hd, H))
        prev = t.comp("aten::add", [[rows, H], [rows, H]], [[rows, H]], [red2])
    return t


def write_ranks(folder: Path, stem: str, tp: int = 4, **kw) -> List[Path]:
    """``tp`` per-rank traces of :func:`transformer_rank` (``stem.0.et`` ...), as Chakra names per-rank files."""
    return [transformer_rank(tp=tp, **kw).write(folder / f"{stem}.{r}.et") for r in range(tp)]


def _tensor(tid: int, numel: int) -> list:
    """A tensor as PyTorch's execution trace records it: [tensor id, storage id, offset, numel, itemsize, device]."""
    return [tid, tid, 0, numel, 2, "cuda:0"]


def pytorch_style_rank(T: int = 128, H: int = 512, tp: int = 4) -> TraceBuilder:
    """A row-parallel linear layer and its all-reduce as chakra_converter writes a PyTorch trace: host ops
    (``is_cpu_op``) and the GPU kernels they launch (a control dependency on their host op, which they copy their
    ``op_schema``, shapes and tensors from); the kernels' data dependencies follow the host's issue order, so only
    the tensor the GEMM writes and the all-reduce reads links them. ``expected``: that pair."""
    t = TraceBuilder(first_id=100)
    k = H // tp
    a, w, bias, out = _tensor(1, T * k), _tensor(2, H * k), _tensor(3, H), _tensor(4, T * H)
    schema = AttributeProto(name="op_schema", string_val="aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor")
    host = [AttributeProto(name="is_cpu_op", bool_val=True)]
    gpu = [AttributeProto(name="is_cpu_op", bool_val=False)]
    lin = t.comp("aten::linear", [[T, k], [H, k], [H]], [[T, H]], attrs=host + [schema], values=([a, w, bias], [out]))
    gemm = t.comp("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", [[T, k], [H, k], [H]], [[T, H]],
                  [lin], ctrl=[lin], attrs=gpu + [schema], values=([a, w, bias], [out]))
    call = t.comp("c10d::allreduce_", [[[T, H]]], [[[T, H]]], [lin], attrs=host, values=([[out]], [[out]]))
    nccl = t.coll(ALL_REDUCE, T * H * 2, [call], pg="0", extra=gpu, ctrl=[call], values=([[out]], [[out]]))
    t.expected.append((gemm, nccl, "all_reduce", T, H, k))
    return t


def unmappable_trace(T: int = 128, H: int = 512, tp: int = 4) -> tuple:
    """A trace of nodes t3sim cannot map, each beside the reason it should be given, and one pair that maps
    (a GEMM feeding two reduce collectives pairs with the first). Returns (builder, {node id: reason fragment})."""
    t, why, b = TraceBuilder(), {}, 2
    k = H // tp
    lin = lambda K, deps=(), **kw: t.comp("aten::linear", [[T, K], [H, K], [H]], [[T, H]], deps, **kw)  # noqa: E731
    why[t.comp("aten::softmax", [[T, H]], [[T, H]])] = "compute node with no collective consumer"
    why[t.coll(ALL_TO_ALL, T * H * b)] = "ALL_TO_ALL: t3sim pairs GEMMs with REDUCE_SCATTER, ALL_REDUCE and ALL_GATHER"
    add = t.comp("aten::add", [[T, H], [T, H]], [[T, H]])
    why[add] = "compute node feeding node 3 (ALL_REDUCE) is not a GEMM"
    why[t.coll(ALL_REDUCE, T * H * b, [add])] = "ALL_REDUCE fed by no GEMM"
    g = lin(k)
    why[g] = "comm_size 123 B is not the GEMM's output C (128 x 512 x 2 B = 131072 B)"
    why[t.coll(REDUCE_SCATTER, 123, [g])] = f"its GEMM node {g} (aten::linear): comm_size 123 B"
    g = t.comp("aten::linear", [[T, k], [H - 2, k], [H - 2]], [[T, H - 2]])  # an output no reduce-scatter divides
    why[g] = f"N = {H - 2} is not a multiple of tp = {tp}"
    why[t.coll(ALL_REDUCE, T * (H - 2) * b, [g])] = f"N = {H - 2} is not a multiple"
    g = t.comp("aten::mm", None, None, attrs=[AttributeProto(name="num_ops", int64_val=2 * T * H * k)])
    why[g] = "GEMM (aten::mm) without input/output shapes"
    why[t.coll(ALL_REDUCE, T * H * b, [g])] = "without input/output shapes"
    g = t.comp("aten::bmm", [[2, T, k], [2, k, H]], [[2, T, H]])
    why[g] = "batched GEMM (aten::bmm)"
    why[t.coll(ALL_REDUCE, T * H * b, [g])] = "batched GEMM"
    g = lin(k, types=["Tensor(double)"] * 3)
    why[g] = "element type float64: t3sim simulates fp16, bf16, fp32, fp8"
    why[t.coll(ALL_REDUCE, T * H * b, [g])] = "element type float64"
    g = lin(k)
    ar = t.coll(ALL_REDUCE, T * H * b, [g])
    t.expected.append((g, ar, "all_reduce", T, H, k))
    why[t.coll(REDUCE_SCATTER, T * H * b, [g])] = f"its GEMM node {g} is already paired with node {ar}"
    ag = t.coll(ALL_GATHER, T * H * b // tp)
    why[ag] = "ALL_GATHER feeding 2 GEMMs"
    for _ in range(2):
        why[t.comp("aten::linear", [[T, H], [k, H], [k]], [[T, k]], [ag])] = "GEMM with no reduce-scatter or all-reduce consumer"
    why[t.node("load", MEM_LOAD_NODE)] = "MEM_LOAD_NODE: t3sim maps GEMM+collective pairs only"
    why[lin(k, attrs=[AttributeProto(name="is_cpu_op", bool_val=True)])] = "host (CPU) op: t3sim maps the GPU nodes"
    return t, why
