"""Collectives as plans: steps of element-range transfers on a logical topology (ASTRA-sim style).

A :class:`Plan` is what a collective library (RCCL/NCCL) executes, stripped of
timing: an ordered list of :class:`Step` s; in a step every GPU sends the
listed element ranges to its peers concurrently and, before it starts the next
step, waits until everything addressed to it in this step has arrived and was
handled. Each :class:`Xfer` says

* what the sender reads locally: ``src_buf[src_lo : src_lo + count]``;
* to whom it goes and where it lands: ``dst``'s ``dst_buf[dst_lo : dst_lo + count]``;
* what the receiver does with it (``op``): ``"store"`` (overwrite) or
  ``"reduce"`` (read local + add + write: element-wise sum into the range).

Ranges are in **elements** of ``elem_bytes`` bytes each; ``Xfer.nbytes(plan.elem_bytes)``
gives byte counts. Buffers are named per GPU (``"buf"`` for the in-place
reduce-scatter/all-gather/all-reduce, ``"in"``/``"out"`` for all-to-all) with
sizes in ``Plan.buffer_elems[name][gpu]``. A transfer with ``src == dst`` is a
local copy (no network).

Semantics (what :mod:`t3sim.collectives.verify` executes): all sends of a step
read the state *before* the step; then every receipt is applied (reductions
commute; :meth:`Plan.validate` rejects steps whose reads and writes on one GPU
overlap, or whose stores overlap, so the order inside a step never matters).

Chunking: an array of ``S`` elements is split into ``N`` chunks like
``numpy.array_split``: the first ``S mod N`` chunks have ``ceil(S/N)``
elements, the rest ``floor(S/N)``; chunk ``i`` is *owned* by GPU ``i`` (it
holds the reduced chunk after a reduce-scatter). Zero-element transfers are
omitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Literal, Optional, Sequence, Tuple

Op = Literal["store", "reduce"]
COLLECTIVES = ("reduce_scatter", "all_gather", "all_reduce", "all_to_all")


def split_ranges(num_elems: int, parts: int, base: int = 0) -> List[Tuple[int, int]]:
    """``parts`` contiguous ``(lo, hi)`` ranges covering ``[base, base+num_elems)`` (array_split sizes)."""
    if parts <= 0 or num_elems < 0:
        raise ValueError(f"cannot split {num_elems} elements into {parts} parts")
    q, r = divmod(num_elems, parts)
    out, lo = [], base
    for i in range(parts):
        hi = lo + q + (1 if i < r else 0)
        out.append((lo, hi))
        lo = hi
    return out


@dataclass(frozen=True)
class Xfer:
    """One transfer of ``count`` elements (see module doc). ``chunk`` labels the logical chunk."""

    src: int
    dst: int
    src_buf: str
    src_lo: int
    dst_buf: str
    dst_lo: int
    count: int
    op: Op
    chunk: int = -1

    @property
    def src_range(self) -> Tuple[int, int]:
        return (self.src_lo, self.src_lo + self.count)

    @property
    def dst_range(self) -> Tuple[int, int]:
        return (self.dst_lo, self.dst_lo + self.count)

    def nbytes(self, elem_bytes: int) -> int:
        return self.count * elem_bytes

    @property
    def is_local(self) -> bool:
        return self.src == self.dst


#: DRAM-traffic category (paper Fig. 18 split, :data:`t3sim.compute.memhier.CATEGORY_SOURCE`) of each phase:
#: all-to-all is pure data movement outside the RS/AG split, so it is counted as "other".
PHASE_CATEGORY = {"rs": "rs", "ag": "ag", "a2a": "other"}


@dataclass(frozen=True)
class Step:
    """Concurrent transfers; ``phase`` names the sub-collective ("rs", "ag", "a2a")."""

    xfers: Tuple[Xfer, ...]
    phase: str

    @property
    def category(self) -> str:
        """DRAM-traffic category of this step's memory accesses (:data:`PHASE_CATEGORY`)."""
        return PHASE_CATEGORY.get(self.phase, "other")

    def sends_of(self, gpu: int) -> List[Xfer]:
        return [x for x in self.xfers if x.src == gpu]

    def recvs_of(self, gpu: int) -> List[Xfer]:
        return [x for x in self.xfers if x.dst == gpu]


@dataclass(frozen=True)
class Plan:
    """A collective as a list of steps.

    Attributes:
        name: registry name of the algorithm (``"ring_reduce_scatter"`` ...).
        collective: one of :data:`COLLECTIVES` (what the plan must compute).
        n: number of GPUs.
        num_elems: elements of the collective's array per GPU (all-to-all: per ``in`` buffer).
        elem_bytes: bytes per element (2 = fp16).
        steps: the steps, in order.
        chunks: ``chunks[i] = (lo, hi)``: the element range owned by GPU ``i``.
        buffer_elems: buffer name -> per-GPU size in elements.
        bidirectional: ring plans: both ring directions carry half of every chunk.
    """

    name: str
    collective: str
    n: int
    num_elems: int
    elem_bytes: int
    steps: Tuple[Step, ...]
    chunks: Tuple[Tuple[int, int], ...]
    buffer_elems: Dict[str, Tuple[int, ...]] = field(hash=False)
    bidirectional: bool = False

    @property
    def size_B(self) -> int:
        """Bytes of the collective's array on one GPU."""
        return self.num_elems * self.elem_bytes

    @property
    def num_steps(self) -> int:
        return len(self.steps)

    def step_bytes(self, step: int, gpu: int, direction: str = "send") -> int:
        """Network bytes ``gpu`` sends (``"send"``) or receives (``"recv"``) in ``step`` (local copies excluded)."""
        s = self.steps[step]
        xs = s.sends_of(gpu) if direction == "send" else s.recvs_of(gpu)
        return sum(x.nbytes(self.elem_bytes) for x in xs if not x.is_local)

    def total_network_bytes(self) -> int:
        return sum(x.nbytes(self.elem_bytes) for s in self.steps for x in s.xfers if not x.is_local)

    def logical_edges(self) -> List[Tuple[int, int]]:
        """Distinct (src, dst) GPU pairs the plan sends between (its logical topology)."""
        return sorted({(x.src, x.dst) for s in self.steps for x in s.xfers if not x.is_local})

    def validate(self) -> "Plan":
        """Check ranges, GPU ids and intra-step hazards; raise ``ValueError``; return self."""
        if self.collective not in COLLECTIVES:
            raise ValueError(f"unknown collective {self.collective!r}")
        if len(self.chunks) != self.n:
            raise ValueError(f"{self.name}: {len(self.chunks)} chunks for {self.n} GPUs")
        for si, st in enumerate(self.steps):
            reads: Dict[Tuple[int, str], List[Tuple[int, int]]] = {}
            writes: Dict[Tuple[int, str], List[Tuple[int, int, str]]] = {}
            for x in st.xfers:
                where = f"{self.name} step {si} {x}"
                if not (0 <= x.src < self.n and 0 <= x.dst < self.n):
                    raise ValueError(f"{where}: GPU out of range")
                if x.count <= 0:
                    raise ValueError(f"{where}: empty transfer")
                if x.op not in ("store", "reduce"):
                    raise ValueError(f"{where}: op must be store or reduce")
                for buf, gpu, (lo, hi) in ((x.src_buf, x.src, x.src_range), (x.dst_buf, x.dst, x.dst_range)):
                    size = self.buffer_elems.get(buf, ())
                    if gpu >= len(size) or lo < 0 or hi > size[gpu]:
                        raise ValueError(f"{where}: range [{lo},{hi}) outside {buf} of GPU {gpu}")
                reads.setdefault((x.src, x.src_buf), []).append(x.src_range)
                writes.setdefault((x.dst, x.dst_buf), []).append((*x.dst_range, x.op))
            for key, ws in writes.items():
                for lo, hi in reads.get(key, []):
                    if any(_overlap((lo, hi), (a, b)) for a, b, _ in ws):
                        raise ValueError(f"{self.name} step {si}: GPU {key[0]} reads and writes {key[1]}[{lo},{hi}) in one step")
                ws_sorted = sorted(ws)
                for (a0, b0, op0), (a1, b1, op1) in zip(ws_sorted, ws_sorted[1:]):
                    if _overlap((a0, b0), (a1, b1)) and not (op0 == op1 == "reduce"):
                        raise ValueError(f"{self.name} step {si}: GPU {key[0]} has overlapping stores to {key[1]}")
        return self


def _overlap(a: Tuple[int, int], b: Tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def make_plan(name: str, collective: str, n: int, num_elems: int, elem_bytes: int,
              steps: Sequence[Tuple[Sequence[Xfer], str]], chunks: Sequence[Tuple[int, int]],
              buffer_elems: Dict[str, Tuple[int, ...]], bidirectional: bool = False) -> Plan:
    """Build and validate a plan, dropping empty transfers and steps left empty."""
    if n < 2:
        raise ValueError(f"a collective needs at least 2 GPUs, got {n}")
    if num_elems < 0 or elem_bytes <= 0:
        raise ValueError(f"bad array: {num_elems} elements of {elem_bytes} B")
    kept = []
    for xs, phase in steps:
        xs = tuple(x for x in xs if x.count > 0)
        if xs:
            kept.append(Step(xs, phase))
    return Plan(name, collective, n, num_elems, elem_bytes, tuple(kept), tuple(chunks),
                dict(buffer_elems), bidirectional).validate()


def merge_plans(name: str, collective: str, parts: Sequence[Plan]) -> Plan:
    """Concatenate plans over the same GPUs, array and buffers (all-reduce = RS then AG)."""
    first = parts[0]
    for p in parts[1:]:
        if (p.n, p.num_elems, p.elem_bytes, p.chunks) != (first.n, first.num_elems, first.elem_bytes, first.chunks):
            raise ValueError("merged plans must share GPUs, array and chunking")
    steps = tuple(s for p in parts for s in p.steps)
    return Plan(name, collective, first.n, first.num_elems, first.elem_bytes, steps, first.chunks,
                dict(first.buffer_elems), first.bidirectional).validate()


def owner_of(plan: Plan, elem: int) -> Optional[int]:
    """GPU owning element ``elem`` of the array (None if out of range)."""
    for g, (lo, hi) in enumerate(plan.chunks):
        if lo <= elem < hi:
            return g
    return None
