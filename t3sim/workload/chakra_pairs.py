"""Tensor-parallel GEMM+collective pairs in Chakra traces (:mod:`t3sim.workload.chakra_trace`), and the t3sim
experiment of each.

A *pair* is two GPU nodes of one rank's trace that t3sim simulates as one operation:

* ``gemm_rs``: a GEMM whose output feeds a ``REDUCE_SCATTER`` (or ``REDUCE_SCATTER_BLOCK``) or an ``ALL_REDUCE``
  (a row-parallel linear layer: Megatron's attention output projection and second MLP GEMM);
* ``ag_gemm``: an ``ALL_GATHER`` whose output feeds a GEMM (sequence parallelism's column-parallel layers).

"Feeds" is the trace's dataflow (:func:`~t3sim.workload.chakra_trace.feeds`: a data dependency, or a tensor the
one writes and the other reads). A collective pairs with exactly one GEMM; a GEMM with at most one collective.

The GEMM's per-rank shape ``M x N x K`` (A is M x K, B K x N, C M x N) comes from the node's input shapes, by its
operator: ``aten::mm``/``aten::matmul`` (A, B), ``aten::addmm`` (bias, A, B), ``aten::linear`` (A, W as N x K;
A may have leading batch dimensions, M is their product), or any compute node whose two inputs are ``[M, K]`` and
``[K, N]``; the element type from its input types (``--dtype`` where the trace has none). The collective's
``comm_size`` (bytes) must be the GEMM's output (``gemm_rs``) or gathered input A (``ag_gemm``) as traces write it:
the whole tensor, one rank's shard (1/tp of it), or PyTorch's sum of its c10d op's tensors (``_reduce_scatter_base``,
``_allgather_base``: the whole plus the shard). The tensor-parallel degree is the size of the collective's process
group: the number of the given traces holding collectives of its ``pg_name`` (no ``pg_name``: the default group),
or ``--tp``.

How a pair is a t3sim experiment (:meth:`Operation.experiment`): ``workload.gemm``, the whole operator's shape
(:attr:`Operation.operator_shape`), with the pair's direction: ``gemm_rs`` (every GPU multiplies all ``M`` rows by
its ``K``-slice: the whole operator's ``K`` is the rank's times ``tp``) with ``workload.collective``
``reduce_scatter`` or ``all_reduce``; ``ag_gemm`` (every GPU multiplies the gathered ``M`` rows by its ``N``-slice:
the whole operator's ``N`` is the rank's times ``tp``). ``t3sim advise`` builds the same workload from the same shape
(:func:`t3sim.commands.advise_chakra.advise_operation`).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from chakra.schema.protobuf import et_def_pb2 as pb

from t3sim.config.workload import DTYPE_BYTES
from t3sim.errors import InputError
from t3sim.workload.chakra_trace import (COMM_TYPES, NODE_TYPES, ChakraTrace, attrs, dtype, feeds, label, on_device,
                                         op_name, shapes)

#: collective kinds that reduce a GEMM's output, and the t3sim ``workload.collective`` each is
REDUCING = {"REDUCE_SCATTER": "reduce_scatter", "REDUCE_SCATTER_BLOCK": "reduce_scatter", "ALL_REDUCE": "all_reduce"}
#: operators that are batched GEMMs (a product per batch entry), which t3sim does not simulate as one GEMM
BATCHED = ("aten::bmm", "aten::baddbmm")
#: where each operator keeps A and B among its inputs, and whether B is stored N x K (a linear layer's weight)
GEMM_OPS = {"aten::mm": (0, 1, False), "aten::matmul": (0, 1, False), "aten::addmm": (1, 2, False),
            "aten::linear": (0, 1, True)}


@dataclass(frozen=True)
class Operation:
    """One GEMM+collective operation as t3sim simulates it: the per-rank GEMM (A ``M x K``, B ``K x N``, C
    ``M x N``, elements of ``dtype``) and its collective over ``tp`` ranks."""

    direction: str  # gemm_rs | ag_gemm
    collective: str  # reduce_scatter | all_reduce (gemm_rs) | all_gather (ag_gemm)
    M: int
    N: int
    K: int
    dtype: str
    tp: int

    @property
    def name(self) -> str:
        """The experiment's name, the same for every pair of this operation (so they share results)."""
        kind = {"reduce_scatter": "gemm-rs", "all_reduce": "gemm-ar", "all_gather": "ag-gemm"}[self.collective]
        return f"chakra-{kind}-{self.M}x{self.N}x{self.K}-{self.dtype}-tp{self.tp}"

    @property
    def first_phase(self) -> str:
        """The phase (``stats.json`` ``time.<phase>_us``) that ends first: ``gemm`` (gemm_rs) or ``ag``."""
        return "gemm" if self.direction == "gemm_rs" else "ag"

    @property
    def operator_shape(self) -> Tuple[int, int, int]:
        """The whole operator's ``(M, N, K)`` as ``workload.gemm`` takes it: ``K`` over all ranks (``gemm_rs``: each
        rank holds ``K/tp`` of the reduction depth), or ``N`` over all ranks (``ag_gemm``: each holds ``N/tp``
        columns of B)."""
        if self.direction == "gemm_rs":
            return self.M, self.N, self.K * self.tp
        return self.M, self.N * self.tp, self.K

    def experiment(self, system: str, scheme: str, description: str = "") -> Dict[str, Any]:
        """The experiment config (a mapping, as its YAML reads) that simulates the operation under ``scheme`` on
        ``system`` (a ``base:`` reference) with ``tp`` GPUs (module doc)."""
        M, N, K = self.operator_shape
        workload: Dict[str, Any] = {"gemm": {"name": self.name, "M": M, "N": N, "K": K}, "tp": self.tp,
                                    "dtype": self.dtype, "direction": self.direction}
        if self.direction == "gemm_rs":
            workload["collective"] = self.collective
        return {"name": self.name, "description": description or f"{self.name} from a Chakra trace",
                "system": {"base": system, "interconnect": {"num_gpus": self.tp}}, "workload": workload,
                "scheme": {"kind": scheme}}


@dataclass(frozen=True)
class Pair:
    """A GEMM node and a collective node of one trace that t3sim simulates as ``op``."""

    trace: str  # the trace's path
    gemm: int  # node ids
    comm: int
    gemm_label: str  # "node 12 (aten::linear)"
    comm_label: str
    op: Operation

    @property
    def first(self) -> int:
        """The node that runs first: the GEMM (gemm_rs) or the all-gather (ag_gemm)."""
        return self.gemm if self.op.direction == "gemm_rs" else self.comm

    @property
    def second(self) -> int:
        return self.comm if self.op.direction == "gemm_rs" else self.gemm

    def text(self) -> str:
        a, b = (self.gemm_label, self.comm_label) if self.op.direction == "gemm_rs" else (self.comm_label, self.gemm_label)
        return f"{Path(self.trace).name}: {a} -> {b}"


@dataclass(frozen=True)
class Unmapped:
    """A node no pair holds, and why."""

    trace: str
    node: int
    label: str
    reason: str

    def text(self) -> str:
        return f"{Path(self.trace).name}: {self.label}: {self.reason}"


def _dims(shape: Any) -> Optional[List[int]]:
    if isinstance(shape, list) and shape and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
        return shape
    return None


def gemm_shape(node, by_id: Dict[int, Any], path: str) -> Tuple[Optional[Tuple[int, int, int]], Optional[str]]:
    """``((M, N, K), None)`` for a GEMM node t3sim can run, ``(None, reason)`` for a GEMM it cannot, and
    ``(None, None)`` for a node that is no GEMM (module doc)."""
    op = op_name(node, by_id)
    if op in BATCHED:
        return None, f"batched GEMM ({op}): t3sim's GEMM is one M x N x K product"
    ins, outs = shapes(node, path, "inputs"), shapes(node, path, "outputs")
    if op in GEMM_OPS:
        ia, ib, b_is_nk = GEMM_OPS[op]
    elif ins and len(ins) == 2 and _dims(ins[0]) and _dims(ins[1]) and len(ins[0]) == len(ins[1]) == 2 \
            and ins[0][1] == ins[1][0]:
        ia, ib, b_is_nk = 0, 1, False  # any compute node whose inputs are [M, K] and [K, N]
    else:
        return None, None
    if not ins or not outs:
        return None, f"GEMM ({op}) without input/output shapes (num_ops and tensor_size alone do not give M, N and K)"
    a = _dims(ins[ia]) if len(ins) > ia else None
    b = _dims(ins[ib]) if len(ins) > ib else None
    c = _dims(outs[0])
    if a is None or b is None or c is None or len(a) < 2 or len(b) != 2:
        return None, f"GEMM ({op}) with input shapes {ins} and output shapes {outs}: no M x K by K x N product"
    M, K = prod(a[:-1]), a[-1]
    kb, N = (b[1], b[0]) if b_is_nk else (b[0], b[1])
    if kb != K or prod(c[:-1]) != M or c[-1] != N:
        return None, f"GEMM ({op}) with input shapes {ins} and output shapes {outs}: the dimensions disagree"
    return (M, N, K), None


def group_sizes(traces: Sequence[ChakraTrace]) -> Dict[str, int]:
    """Process group (``pg_name``; ``""``: the default group) -> how many of ``traces`` hold a collective of it."""
    count: Dict[str, int] = {}
    for tr in traces:
        for pg in {attrs(n).get("pg_name", "") for n in tr.nodes if n.type == pb.COMM_COLL_NODE and on_device(n)}:
            count[pg] = count.get(pg, 0) + 1
    return count


def _operation(tr: ChakraTrace, g, c, shape, kind: str, groups: Dict[str, int], tp: Optional[int],
               dtype_flag: Optional[str], by_id) -> Operation | str:
    """The pair's :class:`Operation`, or why it has none."""
    M, N, K = shape
    dt = dtype(g, tr.path) or dtype_flag
    if dt is None:
        return "the GEMM's tensor types are not in the trace (inputs.types): give --dtype"
    if dt not in DTYPE_BYTES:
        return f"element type {dt}: t3sim simulates {', '.join(DTYPE_BYTES)}"
    if tp is None:
        pg = attrs(c).get("pg_name", "")
        n = groups.get(pg, 0)
        if n < 2:
            raise InputError("--tp", f"not given, and the process group {pg!r} of {tr.name} {label(c, by_id)} has "
                                     f"collectives in {n} of the given traces", "--tp N, or the traces of every rank of the group")
        tp = n
    b = DTYPE_BYTES[dt]
    reducing = kind in REDUCING
    whole = M * (N if reducing else K) * b
    size = attrs(c)["comm_size"]
    ok = (whole, whole // tp, whole + whole // tp)
    if size not in ok:
        what = f"output C ({M} x {N}" if reducing else f"input A ({M} x {K}"
        return (f"comm_size {size} B is not the GEMM's {what} x {b} B = {whole} B), its 1/{tp} shard or both "
                f"({', '.join(str(v) for v in ok)} B)")
    if reducing:
        if N % tp:
            return f"N = {N} is not a multiple of tp = {tp} (the reduce-scatter cuts the output into tp shards)"
        return Operation("gemm_rs", REDUCING[kind], M, N, K, dt, tp)
    if M % tp:
        return f"M = {M} is not a multiple of tp = {tp} (each rank holds M / tp rows of A before the all-gather)"
    return Operation("ag_gemm", "all_gather", M, N, K, dt, tp)


def _default_reason(n, gemm: Optional[Tuple], consumers: List[int], by_id) -> str:
    """Why a node that is in no pair and was given no other reason is not mapped."""
    if n.type == pb.COMP_NODE:
        if not on_device(n):
            return "host (CPU) op: t3sim maps the GPU nodes"
        if gemm is not None:
            return gemm[1] or "GEMM with no reduce-scatter or all-reduce consumer and no all-gather producer"
        coll = [by_id[i] for i in consumers if by_id[i].type == pb.COMM_COLL_NODE]
        if coll:
            return f"compute node feeding {label(coll[0], by_id)} is not a GEMM"
        return "compute node with no collective consumer"
    if n.type == pb.COMM_COLL_NODE:
        return "host-side collective (is_cpu_op): t3sim maps the GPU nodes"
    return f"{NODE_TYPES[n.type]}: t3sim maps GEMM+collective pairs only"


def trace_pairs(tr: ChakraTrace, groups: Dict[str, int], tp: Optional[int] = None,
                dtype_flag: Optional[str] = None) -> Tuple[List[Pair], List[Unmapped]]:
    """The pairs of one trace and every node they leave out, with the reason (module doc)."""
    by_id = tr.by_id()
    producers, consumers = feeds(tr)
    shape: Dict[int, Tuple] = {}  # GPU GEMM node id -> (shape or None, reason or None)
    for n in tr.nodes:
        if n.type == pb.COMP_NODE and on_device(n):
            s = gemm_shape(n, by_id, tr.path)
            if s != (None, None):
                shape[n.id] = s
    pairs: List[Pair] = []
    partner: Dict[int, int] = {}
    why: Dict[int, str] = {}
    for c in tr.nodes:
        if c.type != pb.COMM_COLL_NODE or not on_device(c):
            continue
        kind = COMM_TYPES[attrs(c)["comm_type"]]
        if kind not in REDUCING and kind != "ALL_GATHER":
            why[c.id] = f"{kind}: t3sim pairs GEMMs with REDUCE_SCATTER, ALL_REDUCE and ALL_GATHER"
            continue
        reducing = kind in REDUCING
        cands = [i for i in (producers if reducing else consumers)[c.id] if i in shape]
        if len(cands) != 1:
            role = "fed by" if reducing else "feeding"
            why[c.id] = (f"{kind} {role} no GEMM" if not cands else
                         f"{kind} {role} {len(cands)} GEMMs (nodes {', '.join(map(str, cands))}): t3sim's operation has one")
            continue
        g = cands[0]
        if g in partner:
            why[c.id] = f"its GEMM node {g} is already paired with node {partner[g]}"
            continue
        s, reason = shape[g]
        op = _operation(tr, by_id[g], c, s, kind, groups, tp, dtype_flag, by_id) if s is not None else reason
        if isinstance(op, str):
            why[c.id] = f"its GEMM {label(by_id[g], by_id)}: {op}"
            why.setdefault(g, op)
            continue
        partner[g], partner[c.id] = c.id, g
        pairs.append(Pair(tr.path, g, c.id, label(by_id[g], by_id), label(c, by_id), op))
    unmapped = [Unmapped(tr.path, n.id, label(n, by_id),
                         why.get(n.id) or _default_reason(n, shape.get(n.id), consumers[n.id], by_id))
                for n in tr.nodes if n.id not in partner]
    return pairs, unmapped


def find_pairs(traces: Sequence[ChakraTrace], tp: Optional[int] = None,
               dtype_flag: Optional[str] = None) -> Tuple[List[Pair], List[Unmapped]]:
    """Every pair of every trace (trace order, then collective order) and every node left out, with the reason.

    ``tp``: the tensor-parallel degree of every collective (default: its process group's size among ``traces``);
    ``dtype_flag``: the element type of GEMMs whose tensor types the trace lacks. Raises :class:`InputError`
    where a pair's tensor-parallel degree can be found neither way."""
    groups = group_sizes(traces)
    pairs: List[Pair] = []
    unmapped: List[Unmapped] = []
    for tr in traces:
        p, u = trace_pairs(tr, groups, tp, dtype_flag)
        pairs += p
        unmapped += u
    return pairs, unmapped


def operations(pairs: Sequence[Pair]) -> List[Operation]:
    """The distinct operations of ``pairs``, in first-seen order."""
    return list(dict.fromkeys(p.op for p in pairs))
