"""What NCCL's ring kernels do with the Simple protocol, as data (pure; no simulation).

Sources: NCCL 2.28.9 (github.com/NVIDIA/nccl, tag v2.28.9-1). The executor that
times this schedule on simulated GPUs is :mod:`t3sim.collectives.nccl`.

Channels (``src/enqueue.cc`` scheduleCollTasksToPlan, ``src/include/device.h``
ncclCollCbdPart). The kernel has one CTA per channel. Each channel runs its own
ring over a contiguous share of the data: reduce-scatter and all-gather split
every rank's block (``count`` elements, the per-rank output of RS, the per-rank
input of AG) across the channels; all-reduce splits the whole array. Shares are
equal to within one element here (NCCL cuts them in 16 KiB-traffic cells, a
difference below 0.1 % of a share at the sizes of interest).

Chunks (``calcCollChunking``; ``runRing`` in ``reduce_scatter.h``,
``all_gather.h``, ``all_reduce.h``). A channel loops over its share in chunks of
``chunk_elems = buffer_B / steps * chunk_steps / elem_bytes`` elements (ring +
Simple: no size-dependent reduction). RS/AG: one chunk of ``min(chunk_elems,
left)`` elements of each block per iteration. AR: one *loop* of ``N`` chunks of
``chunk_elems`` per iteration; the last, short loop uses chunks of
``ceil(left / N)`` rounded up to 16 bytes (later chunks of it may be short or empty).

Ops (the ``prims`` calls of one chunk on one GPU; ring order ``g -> g+1``):

* RS: ``send`` (block g-1 from the input), ``recvReduceSend`` x (N-2) (block g-1-j),
  ``recvReduceCopy`` (own block g into the output);
* AG (out of place): ``copySend`` (own block: input -> output and next), ``recvCopySend`` x (N-2)
  (block g-j), ``recv`` (block g+1 into the output);
* AR: ``send``, ``recvReduceSend`` x (N-2), ``recvReduceCopySend`` (own block: reduced into the
  output and sent), ``recvCopySend`` x (N-2), ``recv``.

Slices (``prims_simple.h`` genericOp). An op of ``nelem`` elements runs
``chunk_steps / slice_steps`` slices of ``max(ceil(nelem / (16 * slices)) * 16,
slice_steps * step_elems / 32)`` elements, the last ones possibly short or empty;
an empty slice still waits for and posts its flags (the FIFO step counters advance
by ``slice_steps`` per slice whatever its size).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

from t3sim.collectives.plan import split_ranges

#: genericOp: a slice holds at least 1/32 of its FIFO steps (``sliceSize/32``).
SLICE_MIN_DIVISOR = 32
#: genericOp: slice sizes are multiples of 16 elements (``divUp(nelem, 16*SlicePerChunk)*16``).
SLICE_ALIGN_ELEMS = 16
#: all_reduce.h: the last loop's chunks are aligned to 16 bytes (``alignUp(divUp(rem, nranks), 16/sizeof(T))``).
PACK_B = 16

NCCL_COLLECTIVES = ("reduce_scatter", "all_gather", "all_reduce")


@dataclass(frozen=True)
class RingOp:
    """One NCCL primitive of a chunk on one GPU (module doc).

    Attributes:
        prim: NCCL's name for it.
        recv: consumes the previous GPU's slice from this GPU's FIFO (waits for its flag).
        send: stores its result into the next GPU's FIFO (waits for a free slot, then flags it).
        reads_input: also reads the user input (the local contribution / the own block).
        writes_output: stores its result into the user output (local).
        phase: ``"rs"`` or ``"ag"``: the DRAM-traffic category of its accesses.
    """

    prim: str
    recv: bool
    send: bool
    reads_input: bool
    writes_output: bool
    phase: str

    @property
    def sources(self) -> int:
        return int(self.recv) + int(self.reads_input)


def ring_ops(collective: str, n: int) -> Tuple[RingOp, ...]:
    """The ops of one chunk (module doc) for ``n >= 2`` GPUs."""
    if n < 2:
        raise ValueError(f"a ring needs at least 2 GPUs, got {n}")
    send = RingOp("send", False, True, True, False, "rs")
    rrs = RingOp("recvReduceSend", True, True, True, False, "rs")
    rcs = RingOp("recvCopySend", True, True, False, True, "ag")
    recv = RingOp("recv", True, False, False, True, "ag")
    if collective == "reduce_scatter":
        return (send,) + (rrs,) * (n - 2) + (RingOp("recvReduceCopy", True, False, True, True, "rs"),)
    if collective == "all_gather":
        return (RingOp("copySend", False, True, True, True, "ag"),) + (rcs,) * (n - 2) + (recv,)
    if collective == "all_reduce":
        return ((send,) + (rrs,) * (n - 2) + (RingOp("recvReduceCopySend", True, True, True, True, "rs"),)
                + (rcs,) * (n - 2) + (recv,))
    raise ValueError(f"NCCL ring schedule for {collective!r}: one of {NCCL_COLLECTIVES}")


def block_of(collective: str, n: int, gpu: int, op: int) -> int:
    """The rank block (RS/AG) or loop chunk (AR) that op ``op`` of ``gpu`` works on (ring ``g -> g+1``)."""
    if collective == "all_gather":
        return (gpu - op) % n
    if collective == "reduce_scatter" or op < n:
        return (gpu - 1 - op) % n
    return (gpu - (op - n + 1)) % n  # all-reduce, all-gather half


@dataclass(frozen=True)
class OpSpan:
    """Where one op of one chunk works: ``nelem`` elements at element ``in_elem`` of the input and ``out_elem`` of the output."""

    nelem: int
    in_elem: int
    out_elem: int


@dataclass(frozen=True)
class Chunk:
    """One iteration of a channel's loop: for every GPU, the span of every op."""

    spans: Tuple[Tuple[OpSpan, ...], ...]  # [gpu][op]


def slices(nelem: int, n_slices: int, step_elems: int, slice_steps: int) -> List[Tuple[int, int]]:
    """``(first element, elements)`` of each of the ``n_slices`` slices of an op of ``nelem`` (module doc)."""
    nelem = max(0, nelem)
    size = max(-(-nelem // (SLICE_ALIGN_ELEMS * n_slices)) * SLICE_ALIGN_ELEMS, slice_steps * step_elems // SLICE_MIN_DIVISOR)
    size = max(size, 1)
    out, off = [], 0
    for _ in range(n_slices):
        k = max(0, min(size, nelem - off))
        out.append((off, k))
        off += k
    return out


@dataclass(frozen=True)
class Schedule:
    """NCCL's ring schedule of one collective (module doc).

    Attributes:
        collective, n, num_elems, elem_bytes: the collective (``num_elems``: the collective's array per GPU:
            RS input, AG output, AR input = output).
        channels: channels (CTAs).
        ops: the ops of every chunk.
        chunks: ``chunks[c]``: channel ``c``'s loop iterations.
        step_B: FIFO step bytes (``buffer_B / steps``); ``slots``: slices the FIFO holds (``steps / slice_steps``).
        n_slices, slice_steps: slices per op and FIFO steps per slice.
        in_elems, out_elems: user input / output sizes per GPU, elements.
    """

    collective: str
    n: int
    num_elems: int
    elem_bytes: int
    channels: int
    ops: Tuple[RingOp, ...]
    chunks: Tuple[Tuple[Chunk, ...], ...]
    step_B: int
    slots: int
    n_slices: int
    slice_steps: int
    in_elems: int
    out_elems: int

    def op_slices(self, nelem: int) -> List[Tuple[int, int]]:
        return slices(nelem, self.n_slices, self.step_B // self.elem_bytes, self.slice_steps)

    def slot_offset_B(self, slice_no: int) -> int:
        """Byte offset in a connection's FIFO buffer of the ``slice_no``-th slice sent on it."""
        return (slice_no * self.slice_steps) % (self.slots * self.slice_steps) * self.step_B

    def slices_per_connection(self) -> int:
        """Slices each GPU sends on each of its channels' connections (= receives)."""
        per_chunk = sum(1 for o in self.ops if o.send) * self.n_slices
        return per_chunk * max(len(ch) for ch in self.chunks)


def build_schedule(collective: str, n: int, num_elems: int, elem_bytes: int, channels: int, *,
                   buffer_B: int, steps: int, chunk_steps: int, slice_steps: int) -> Schedule:
    """NCCL's ring Simple schedule (module doc) of ``collective`` on ``n`` GPUs over ``channels`` channels."""
    if collective not in NCCL_COLLECTIVES:
        raise ValueError(f"NCCL ring schedule for {collective!r}: one of {NCCL_COLLECTIVES}")
    if channels < 1 or num_elems < 1 or elem_bytes < 1:
        raise ValueError(f"need channels, num_elems, elem_bytes >= 1 (got {channels}, {num_elems}, {elem_bytes})")
    if (buffer_B // steps) % elem_bytes:
        raise ValueError(f"FIFO step of {buffer_B // steps} B is not a whole number of {elem_bytes} B elements")
    ops = ring_ops(collective, n)
    chunk_elems = buffer_B // steps * chunk_steps // elem_bytes
    all_chunks = []
    if collective in ("reduce_scatter", "all_gather"):
        if num_elems % n:
            raise ValueError(f"NCCL {collective} moves equal blocks: {num_elems} elements is not a multiple of {n} GPUs")
        count = num_elems // n
        for lo, hi in split_ranges(count, channels):
            chunks = []
            for off in range(lo, hi, chunk_elems):
                k = min(chunk_elems, hi - off)
                spans = []
                for g in range(n):
                    row = []
                    for j in range(len(ops)):
                        b = block_of(collective, n, g, j)
                        if collective == "reduce_scatter":
                            row.append(OpSpan(k, b * count + off, off))
                        else:
                            row.append(OpSpan(k, off, b * count + off))
                    spans.append(tuple(row))
                chunks.append(Chunk(tuple(spans)))
            all_chunks.append(tuple(chunks))
        in_elems, out_elems = (num_elems, count) if collective == "reduce_scatter" else (count, num_elems)
    else:
        loop = n * chunk_elems
        pack = max(1, PACK_B // elem_bytes)
        for lo, hi in split_ranges(num_elems, channels):
            chunks = []
            part = hi - lo
            for eo in range(0, part, loop):
                rem = part - eo
                cc = chunk_elems if rem >= loop else -(-(-(-rem // n)) // pack) * pack
                spans = []
                for g in range(n):
                    row = []
                    for j in range(len(ops)):
                        co = block_of(collective, n, g, j) * cc
                        e = lo + eo + co
                        row.append(OpSpan(max(0, min(cc, rem - co)), e, e))
                    spans.append(tuple(row))
                chunks.append(Chunk(tuple(spans)))
            all_chunks.append(tuple(chunks))
        in_elems = out_elems = num_elems
    return Schedule(collective, n, num_elems, elem_bytes, channels, ops, tuple(all_chunks), buffer_B // steps,
                    steps // slice_steps, chunk_steps // slice_steps, slice_steps, in_elems, out_elems)
