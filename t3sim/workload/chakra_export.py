"""Write simulated times into a Chakra trace: each GEMM+collective pair (:mod:`t3sim.workload.chakra_pairs`) gets
the times t3sim simulated for its operation under a scheme.

Attribution (overlap-aware, so that a simulator replaying the trace's durations along its dependencies sees the
operation take exactly the scheme's time): the node that runs first -- the GEMM of a ``gemm_rs`` pair, the
all-gather of an ``ag_gemm`` pair -- gets the scheme's first phase (``time.gemm_us``, resp. ``time.ag_us`` of
``stats.json``: the time to that phase's end, which under an overlap scheme includes the slowdown the concurrent
collective causes); the second node gets the rest, ``time.total_us`` minus that: the communication (resp. GEMM)
time the scheme leaves exposed. The second node depends on the first (a data dependency is added where only a
tensor linked them), so the pair takes ``total_us``. A scheme that overlaps the all-gather with its GEMM (FLUX's
fused AllGather+GEMM, the chunked schemes) reports no all-gather phase of its own (``time.ag_us`` 0): its ``ag_gemm`` pair's all-gather node gets 0 us and the
GEMM node the whole operation, which is still the scheme's time for the pair.

The collective node becomes a ``COMP_NODE`` of that duration (its ``comm_type``, ``comm_size`` and ``pg_name``
kept, its type recorded in ``t3sim_original_type``): a simulator that simulates every ``COMM_COLL_NODE`` on its
own network model (ASTRA-sim) would otherwise count the collective a second time, whole. Every rank's trace is
rewritten the same way, so no rank is left waiting in a collective the others no longer issue.

``duration_micros`` holds whole microseconds: the first node gets ``round(first)``, the second
``round(total) - round(first)``, so the two add up to the rounded total; the exact times (double, us) are in the
attributes ``t3sim_time_us`` and ``t3sim_total_us``. Each node also gets ``t3sim_scheme`` (the scheme applied),
``t3sim_operation`` (the experiment's name), ``t3sim_phase`` (``gemm``, ``ag``, ``rs`` or ``rs+ag``) and
``t3sim_pair_node`` (the other node's id). Export reads the original traces: in an exported one the pairs'
collectives are compute nodes and pair no more.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Sequence

from chakra.schema.protobuf import et_def_pb2 as pb

from t3sim.errors import InputError
from t3sim.workload.chakra_pairs import Operation, Pair
from t3sim.workload.chakra_trace import NODE_TYPES, ChakraTrace, depends_on, set_attr


@dataclass(frozen=True)
class PairTime:
    """What a scheme simulated for one operation: the first phase's time and the whole, in us (``stats.json``
    ``time.<first phase>_us`` and ``time.total_us``); ``source``: the result it came from."""

    scheme: str
    first_us: float
    total_us: float
    source: str = ""

    @classmethod
    def from_summary(cls, op: Operation, scheme: str, summary: Mapping[str, float], source: str = "") -> "PairTime":
        """The times of a run's ``summary`` (``gemm_us``, ``ag_us``, ``total_us``) for ``op``."""
        return cls(scheme, float(summary[f"{op.first_phase}_us"]), float(summary["total_us"]), source)

    @property
    def second_us(self) -> float:
        return self.total_us - self.first_us


def whole_us(us: float) -> int:
    """``us`` rounded to whole microseconds, halves up (``duration_micros``)."""
    return max(0, int(math.floor(us + 0.5)))


def _phase(op: Operation, first: bool) -> str:
    if op.direction == "ag_gemm":
        return "ag" if first else "gemm"
    return "gemm" if first else ("rs+ag" if op.collective == "all_reduce" else "rs")


def apply_times(trace: ChakraTrace, pairs: Sequence[Pair], time_of: Callable[[Pair], PairTime],
                note: str = "") -> ChakraTrace:
    """A copy of ``trace`` whose pairs (those of ``pairs`` in this trace) carry ``time_of(pair)`` (module doc).

    ``note``: text for the metadata attribute ``t3sim_export``. Raises :class:`InputError` where the second node
    of a pair cannot depend on the first (the first already depends on it)."""
    out = ChakraTrace(trace.path, copy.deepcopy(trace.metadata), [copy.deepcopy(n) for n in trace.nodes])
    nodes: Dict[int, object] = out.by_id()
    for p in (p for p in pairs if p.trace == trace.path):
        t = time_of(p)
        first, second = nodes[p.first], nodes[p.second]
        if p.first not in second.data_deps:
            if depends_on(nodes, p.first, p.second):
                raise InputError(f"{trace.path}: node {p.second}", f"a dependency of node {p.first}, which feeds it",
                                 "a trace without dependency cycles")
            second.data_deps.append(p.first)
        d_first = whole_us(t.first_us)
        durations = ((first, d_first, t.first_us, True), (second, whole_us(t.total_us) - d_first, t.second_us, False))
        for node, d, exact, is_first in durations:
            node.duration_micros = d
            set_attr(node, "t3sim_scheme", string_val=t.scheme)
            set_attr(node, "t3sim_operation", string_val=p.op.name)
            set_attr(node, "t3sim_phase", string_val=_phase(p.op, is_first))
            set_attr(node, "t3sim_time_us", double_val=exact)
            set_attr(node, "t3sim_total_us", double_val=t.total_us)
            set_attr(node, "t3sim_pair_node", uint64_val=(p.second if is_first else p.first))
        comm = nodes[p.comm]
        if comm.type == pb.COMM_COLL_NODE:
            set_attr(comm, "t3sim_original_type", string_val=NODE_TYPES[comm.type])
            comm.type = pb.COMP_NODE
    if note:
        set_attr(out.metadata, "t3sim_export", string_val=note)
    return out
