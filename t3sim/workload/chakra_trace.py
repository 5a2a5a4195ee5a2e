"""MLCommons Chakra execution traces (``pip install 't3sim[chakra]'``, package ``mlc-chakra``): read, write, and
what one node says about itself.

A Chakra trace (``.et``) is one rank's program: a stream of length-delimited protobuf messages (each a varint
byte count, then the message; chakra's ``protolib``), a ``GlobalMetadata`` first, then ``Node`` messages
(``chakra/schema/protobuf/et_def.proto``), the whole stream optionally gzipped. A node has an id, a name, a type
(``COMP_NODE``, ``COMM_COLL_NODE``, ...), data and control dependencies (ids of other nodes), a duration in whole
microseconds (``duration_micros``), inputs and outputs (``IOInfo``: values, shapes and types as text, as PyTorch's
execution trace writes them) and named attributes (``comm_type``, ``comm_size`` in bytes, ``pg_name``,
``op_schema``, ``is_cpu_op``, ``num_ops``, ``tensor_size``, ...).

:func:`read_trace` checks the stream (one line per problem, :class:`~t3sim.errors.InputError`): a file that is
not a Chakra trace, a truncated stream, a message that does not decode, duplicate node ids, a data dependency on
a node the trace lacks, a collective without ``comm_type`` or ``comm_size``. :func:`write_trace` writes one back
(atomically). The node helpers below read what the pairing (:mod:`t3sim.workload.chakra_pairs`) needs: the
operator a node runs, its shapes, its element type and the tensors it reads and writes.
"""

from __future__ import annotations

import ast
import gzip
import os
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from chakra.schema.protobuf import et_def_pb2 as pb
from chakra.src.third_party.utils.protolib import encodeMessage
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from t3sim.errors import InputError

#: what a Chakra trace is, for error messages
CHAKRA_FILE = "a Chakra execution trace (.et: a GlobalMetadata message, then Node messages, each length-delimited)"

#: collective kinds (et_def.proto ``CollectiveCommType``) by number, e.g. ``7 -> "REDUCE_SCATTER"``
COMM_TYPES: Dict[int, str] = {v: k for k, v in pb.CollectiveCommType.items()}
NODE_TYPES: Dict[int, str] = {v: k for k, v in pb.NodeType.items()}

#: t3sim element type of a PyTorch tensor type (``Tensor(c10::BFloat16)``), by a lower-case fragment, first match
_DTYPES: Tuple[Tuple[str, str], ...] = (("bfloat16", "bf16"), ("float8", "fp8"), ("half", "fp16"), ("float16", "fp16"),
                                        ("float64", "float64"), ("double", "float64"), ("float32", "fp32"),
                                        ("float", "fp32"))


@dataclass
class ChakraTrace:
    """One rank's trace: where it came from, its metadata and its nodes in file order."""

    path: str
    metadata: Any  # pb.GlobalMetadata
    nodes: List[Any]  # pb.Node

    def by_id(self) -> Dict[int, Any]:
        return {n.id: n for n in self.nodes}

    @property
    def name(self) -> str:
        return Path(self.path).name


def _varint(data: bytes, pos: int) -> Tuple[Optional[int], int]:
    """(value, next position) of the varint at ``pos``; value None where the data ends inside it."""
    value = shift = 0
    while pos < len(data) and shift < 64:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    return None, pos


def _messages(data: bytes, path: str) -> Iterator[Tuple[int, bytes]]:
    """The stream's messages in order: (byte offset, message bytes) each; a truncated stream is bad input."""
    pos = count = 0
    while pos < len(data):
        size, end = _varint(data, pos)
        if size is None or end + size > len(data):
            if not count:
                raise InputError(path, "not " + CHAKRA_FILE + " (its first length prefix runs past the end)", None)
            left = len(data) - end if size is not None else 0
            raise InputError(f"{path}: message {count} at byte {pos}",
                             f"a truncated stream ({size if size is not None else 'a cut-off'} B announced, {left} B left)",
                             "a complete trace")
        yield pos, data[end:end + size]
        pos, count = end + size, count + 1


def read_trace(path: str | os.PathLike) -> ChakraTrace:
    """Read and check one Chakra trace (module doc); raise :class:`InputError` naming the file, message or node."""
    path = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(path, "no such file", CHAKRA_FILE) from None
    except IsADirectoryError:
        raise InputError(path, "a directory", CHAKRA_FILE) from None
    except OSError as exc:
        raise InputError(path, f"an unreadable file ({exc.strerror})", CHAKRA_FILE) from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(path, f"a broken gzip stream ({exc})", "a complete gzipped " + CHAKRA_FILE) from None
    if not data:
        raise InputError(path, "an empty file", CHAKRA_FILE)
    if data.lstrip()[:1] in (b"{", b"["):
        raise InputError(path, "a JSON file, not a Chakra trace (a PyTorch execution trace? convert it with "
                               "chakra_trace_link and chakra_converter)", CHAKRA_FILE)
    messages = _messages(data, path)
    meta = pb.GlobalMetadata()
    try:
        meta.ParseFromString(next(messages)[1])
        bad_meta = len(UnknownFieldSet(meta)) > 0
    except DecodeError:
        bad_meta = True
    if bad_meta:
        raise InputError(path, "not " + CHAKRA_FILE + " (its first message is no GlobalMetadata)", None)
    nodes, seen = [], set()
    for i, (offset, raw) in enumerate(messages, 1):
        node = pb.Node()
        try:
            node.ParseFromString(raw)
        except DecodeError:
            raise InputError(f"{path}: message {i} at byte {offset}", "bytes that do not decode as a Chakra Node",
                             CHAKRA_FILE) from None
        if node.type not in NODE_TYPES:
            raise InputError(f"{path}: node {node.id}", f"node type {node.type}", ", ".join(NODE_TYPES.values()))
        if node.id in seen:
            raise InputError(f"{path}: message {i}", f"a second node with id {node.id}", "unique node ids")
        seen.add(node.id)
        nodes.append(node)
    for node in nodes:
        for dep in node.data_deps:
            if dep not in seen:
                raise InputError(f"{path}: node {node.id} ({node.name}) data_deps",
                                 f"node {dep}, which the trace lacks", "ids of the trace's nodes")
        if node.type == pb.COMM_COLL_NODE:
            a = attrs(node)
            for key in ("comm_type", "comm_size"):
                if key not in a:
                    raise InputError(f"{path}: node {node.id} ({node.name})", f"a COMM_COLL_NODE without attribute {key}",
                                     "collective nodes with comm_type and comm_size (et_def.proto)")
            if a["comm_type"] not in COMM_TYPES:
                raise InputError(f"{path}: node {node.id} ({node.name}) comm_type", repr(a["comm_type"]),
                                 ", ".join(f"{k} ({v})" for k, v in COMM_TYPES.items()))
    return ChakraTrace(path, meta, nodes)


def write_trace(trace: ChakraTrace, path: str | os.PathLike) -> Path:
    """Write ``trace`` (metadata, then its nodes in order) to ``path`` atomically; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            encodeMessage(f, trace.metadata)
            for node in trace.nodes:
                encodeMessage(f, node)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# --------------------------------------------------------------------------- what a node says


def attr_value(a) -> Any:
    """The value of one ``AttributeProto``: a scalar, or a list for the ``*_list`` kinds; None when unset."""
    kind = a.WhichOneof("value")
    if kind is None:
        return None
    v = getattr(a, kind)
    return list(v.values) if kind.endswith("_list") else v


def attrs(node) -> Dict[str, Any]:
    """A node's attributes by name (the last one wins where a name repeats)."""
    return {a.name: attr_value(a) for a in node.attr}


def set_attr(node, name: str, **value) -> None:
    """Set attribute ``name`` of ``node`` to ``value`` (one ``AttributeProto`` field, e.g. ``string_val="x"``),
    replacing any of that name."""
    keep = [a for a in node.attr if a.name != name]
    del node.attr[:]
    node.attr.extend(keep + [pb.AttributeProto(name=name, **value)])


def on_device(node) -> bool:
    """Whether the node runs on the GPU: ``is_cpu_op`` false or absent (a PyTorch host op has it true)."""
    return not attrs(node).get("is_cpu_op", False)


def op_name(node, by_id: Dict[int, Any]) -> str:
    """The operator a node runs: its name if that is an operator (``aten::mm``), else its ``op_schema`` attribute's
    (a GPU kernel node of a converted PyTorch trace keeps its host op's schema), else its host parent's (its first
    control dependency) name if that is an operator, else the node's name."""
    if "::" in node.name:
        return node.name.split("(")[0]
    schema = attrs(node).get("op_schema") or ""
    if "::" in schema:
        return schema.split("(")[0].strip()
    for parent in node.ctrl_deps:
        p = by_id.get(parent)
        if p is not None and "::" in p.name:
            return p.name.split("(")[0]
    return node.name


def _literal(node, trace_path: str, field: str, text: str) -> Any:
    if not text.strip():
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        short = text if len(text) <= 60 else text[:57] + "..."
        raise InputError(f"{trace_path}: node {node.id} ({node.name}) {field}", repr(short),
                         "a Python list as PyTorch's execution trace writes it, e.g. [[8192, 4096], [4096, 1024]]") from None


def shapes(node, trace_path: str, which: str) -> Optional[List[Any]]:
    """The node's ``inputs`` or ``outputs`` shapes (``which``) as a list, one entry per value; None if absent."""
    value = _literal(node, trace_path, f"{which}.shapes", getattr(node, which).shapes)
    if value is not None and not isinstance(value, list):
        raise InputError(f"{trace_path}: node {node.id} ({node.name}) {which}.shapes", repr(value), "a list of shapes")
    return value


def dtype(node, trace_path: str) -> Optional[str]:
    """t3sim's element type of the node's first tensor input (``fp16``, ``bf16``, ``fp32``, ``fp8``; another name
    for a type t3sim does not simulate), or None where the node states no tensor types."""
    types = _literal(node, trace_path, "inputs.types", node.inputs.types) or []
    for t in types if isinstance(types, list) else []:
        if isinstance(t, str) and t.startswith("Tensor"):
            low = t.lower()
            return next((d for frag, d in _DTYPES if frag in low), t)
    return None


def _tensor_keys(value: Any, out: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    # a PyTorch execution-trace tensor: [tensor_id, storage_id, offset, numel, itemsize, device]
    if isinstance(value, (list, tuple)):
        if len(value) == 6 and all(isinstance(v, int) for v in value[:5]) and isinstance(value[5], str):
            out.append((value[0], value[1]))
        else:
            for v in value:
                _tensor_keys(v, out)
    return out


def tensors(node, trace_path: str, which: str) -> List[Tuple[int, int]]:
    """The (tensor id, storage id) of every tensor among the node's ``inputs`` or ``outputs`` values (PyTorch's
    execution-trace encoding); empty where the node records none."""
    return _tensor_keys(_literal(node, trace_path, f"{which}.values", getattr(node, which).values), [])


def label(node, by_id: Dict[int, Any]) -> str:
    """``node 17 (aten::softmax)``: how reports name a node (a collective by its kind)."""
    if node.type == pb.COMM_COLL_NODE:
        what = COMM_TYPES.get(attrs(node).get("comm_type"), "collective")
    else:
        what = op_name(node, by_id) or NODE_TYPES.get(node.type, "node")
    return f"node {node.id} ({what})"


def feeds(trace: ChakraTrace) -> Tuple[Dict[int, List[int]], Dict[int, List[int]]]:
    """The dataflow between the trace's GPU nodes: ``(producers, consumers)``, each node id -> the ids of the nodes
    it reads from (writes to). A node reads from another if it has a data dependency on it, or if it reads a tensor
    whose last writer before it (in node-id order, the execution order of PyTorch's trace) is that node (tensors are
    identified by tensor and storage id, :func:`tensors`)."""
    producers: Dict[int, List[int]] = {n.id: [] for n in trace.nodes}
    consumers: Dict[int, List[int]] = {n.id: [] for n in trace.nodes}

    def edge(src: int, dst: int) -> None:
        if src != dst and src not in producers[dst]:
            producers[dst].append(src)
            consumers[src].append(dst)

    for n in trace.nodes:
        for dep in n.data_deps:
            edge(dep, n.id)
    last_writer: Dict[Tuple[int, int], int] = {}
    for n in sorted((n for n in trace.nodes if on_device(n)), key=lambda n: n.id):
        for t in tensors(n, trace.path, "inputs"):
            if t in last_writer:
                edge(last_writer[t], n.id)
        for t in tensors(n, trace.path, "outputs"):
            last_writer[t] = n.id
    return producers, consumers


def depends_on(trace_nodes: Dict[int, Any], node_id: int, ancestor: int) -> bool:
    """Whether ``node_id`` reaches ``ancestor`` through data dependencies (itself included)."""
    stack, seen = [node_id], set()
    while stack:
        i = stack.pop()
        if i == ancestor:
            return True
        if i in seen or i not in trace_nodes:
            continue
        seen.add(i)
        stack.extend(trace_nodes[i].data_deps)
    return False


def traces_in(paths: Sequence[str]) -> List[ChakraTrace]:
    """Every trace of ``paths``, each read and checked; a path named twice is bad input."""
    seen = set()
    for p in paths:
        key = os.path.realpath(p)
        if key in seen:
            raise InputError(f"--chakra {p}", "the same trace twice", "each rank's trace once")
        seen.add(key)
    return [read_trace(p) for p in paths]
