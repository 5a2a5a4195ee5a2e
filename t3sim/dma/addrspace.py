"""Configuring the producer's output address space (paper Sec. 4.4, Figs. 11-12; Sec. 7.1).

A collective library calls this API once, before the producer GEMM runs, to
say what happens to every piece of the GEMM output. Pieces are named by
*WG position* ``p``: the index of the WG (equivalently, its output tile) in
the kernel's unstaggered base order, ``0 <= p < W``. All GPUs use the same
position numbering and the same buffer layout, so a position names the same
tile, and the same bytes, on every GPU.

Three calls (Fig. 12):

* :meth:`AddressSpace.local` -- the GEMM's stores of these WGs go to local
  memory, as plain stores or near-memory updates (``op``).
* :meth:`AddressSpace.remote_map` -- fine-grained remote stores/updates: the
  GEMM's own stores of these WGs are sent to ``peer`` (peer-to-peer stores,
  ref. [57]); with ``local_write`` they are written locally too.
* :meth:`AddressSpace.dma_map` -- coarse-grained DMA: once the tracker has
  seen ``updates_per_element`` accesses per element of a region (local
  stores plus incoming remote/DMA accesses), a pre-queued DMA command
  copies the region to ``peer`` as a store or an update. ``wf_tiles_per_block``
  groups that many consecutive tracker regions into one DMA block (Sec.
  4.2.2: "if DMA blocks are a multiple of wf_tile, an additional counter per
  DMA entry can track their completion").

Positions absent from every call are not produced by this GPU (e.g. in an
all-gather, the chunks of other GPUs) -- they may still be the target of
incoming traffic and be ``dma_map``-ped onward.

Predefined configurations (functions returning one :class:`AddressSpace`
per GPU, for any ``N >= 2``):

* :func:`ring_reduce_scatter` (Figs. 7, 11, 12): the output is cut into N
  chunks of WG positions; GPU ``g`` runs its WGs starting at chunk ``g``
  (staggered); ring step ``t`` on GPU ``g`` handles chunk ``(g + t) mod N``:
  step 0 is ``remote_map``-ped as updates to GPU ``g - 1`` (not written
  locally); steps ``1..N-2`` are written locally as updates and
  ``dma_map``-ped as updates to ``g - 1`` with 2 updates per element (the
  local one and the one from ``g + 1``); step ``N - 1`` (chunk ``g - 1``) is
  written locally once and is GPU ``g``'s fully reduced chunk.
  With ``bidirectional=True`` (the ring links run both ways, paper Table 1:
  "150 GB/s bi-directional") every chunk is cut in two halves that travel
  the ring in opposite directions at once, as the baseline RS kernel's
  channels do (``collective.ring_bidirectional``): half A of chunk
  ``(g + t) mod N`` goes to ``g - 1`` and half B of chunk ``(g - 2 - t) mod
  N`` goes to ``g + 1`` at step ``t``, so both halves of chunk ``g - 1`` end
  at GPU ``g`` and each step still produces one chunk's worth of WGs; the
  dispatch order interleaves the two halves of each step evenly
  (:attr:`AddressSpace.seq`), so both directions carry traffic throughout.
* :func:`direct_reduce_scatter` (Sec. 7.1): every stage's WGs are sliced N
  ways; slice ``d`` goes to GPU ``d`` by ``remote_map`` updates (slice ``g``
  is written locally); no DMA.
* :func:`ring_all_gather` / :func:`direct_all_gather` (Sec. 7.1): GPU ``g``
  produces chunk ``g`` only; stores, no updates; the ring forwards received
  chunks with ``dma_map`` stores (1 access per element).
* :func:`all_to_all` (Sec. 7.1): slice ``d`` of GPU ``g``'s output goes to
  GPU ``d``; the remote-mapped slices are not written locally.

Invariant (tests): for a reduce-scatter, following every GPU's mapping from
each producer, every position's contributions from all N GPUs end up in
exactly one GPU's memory, the owner of its chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

OPS = ("store", "update")


def chunk_bounds(W: int, N: int) -> np.ndarray:
    """Chunk ``c`` is WG positions ``[b[c], b[c+1])`` with ``b[c] = c*W // N`` (sizes differ by <= 1)."""
    if W < N:
        raise ValueError(f"{W} WGs cannot be cut into {N} non-empty chunks")
    return np.array([c * W // N for c in range(N + 1)], dtype=np.int64)


@dataclass(frozen=True)
class DmaRule:
    """One ``dma_map`` call."""

    lo: int
    hi: int
    peer: int
    op: str
    updates_per_element: int
    wf_tiles_per_block: int = 1


@dataclass
class AddressSpace:
    """One GPU's output address-space configuration (module doc).

    Attributes:
        gpu, num_gpus, num_wgs: who and how big.
        start: base-order WG position this GPU dispatches first (staggering, Sec. 4.4).
        seq: explicit dispatch order (positions, a permutation of ``range(W)``) when the order is not
            a rotation of the base order (bidirectional ring); overrides :attr:`start`.
        local_op: per position, ``""`` (no local store), ``"store"`` or ``"update"``.
        remote: per position, list of ``(peer, op)`` remote-mapped targets.
        dma: per position, the :class:`DmaRule` covering it or None.
        produces: per position, whether this GPU's GEMM computes it.
        final: per position, whether it belongs to this GPU's result chunk.
    """

    gpu: int
    num_gpus: int
    num_wgs: int
    start: int = 0
    seq: Optional[np.ndarray] = None
    local_op: List[str] = field(default_factory=list)
    remote: List[List[Tuple[int, str]]] = field(default_factory=list)
    dma: List[Optional[DmaRule]] = field(default_factory=list)
    produces: Optional[np.ndarray] = None
    final: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        W = self.num_wgs
        self.local_op = [""] * W
        self.remote = [[] for _ in range(W)]
        self.dma = [None] * W
        self.produces = np.zeros(W, dtype=bool)
        self.final = np.zeros(W, dtype=bool)

    # ---------------------------------------------------------------- the API (Fig. 12)
    def _range(self, lo: int, hi: int) -> range:
        if not 0 <= lo <= hi <= self.num_wgs:
            raise ValueError(f"WG range [{lo}, {hi}) outside [0, {self.num_wgs})")
        return range(lo, hi)

    def _peer(self, peer: int) -> int:
        if not 0 <= peer < self.num_gpus or peer == self.gpu:
            raise ValueError(f"GPU {self.gpu}: bad peer {peer} (of {self.num_gpus})")
        return peer

    @staticmethod
    def _op(op: str) -> str:
        if op not in OPS:
            raise ValueError(f"op must be one of {OPS}, got {op!r}")
        return op

    def local(self, lo: int, hi: int, op: str = "update") -> "AddressSpace":
        """This GPU's GEMM writes WGs ``[lo, hi)`` to local memory as ``op``."""
        self._op(op)
        for p in self._range(lo, hi):
            self.local_op[p] = op
            self.produces[p] = True
        return self

    def remote_map(self, lo: int, hi: int, peer: int, op: str = "update", local_write: bool = False) -> "AddressSpace":
        """The GEMM's stores of WGs ``[lo, hi)`` go to ``peer`` as ``op`` (fine-grained, Sec. 4.4)."""
        self._op(op)
        self._peer(peer)
        for p in self._range(lo, hi):
            self.remote[p].append((peer, op))
            self.produces[p] = True
            if local_write:
                self.local_op[p] = op
        return self

    def dma_map(self, lo: int, hi: int, peer: int, op: str = "update", updates_per_element: int = 2,
                wf_tiles_per_block: int = 1) -> "AddressSpace":
        """DMA WGs ``[lo, hi)`` to ``peer`` as ``op`` once each element saw ``updates_per_element`` accesses."""
        self._op(op)
        self._peer(peer)
        if updates_per_element < 1 or wf_tiles_per_block < 1:
            raise ValueError("updates_per_element and wf_tiles_per_block must be >= 1")
        rule = DmaRule(lo, hi, peer, op, int(updates_per_element), int(wf_tiles_per_block))
        for p in self._range(lo, hi):
            if self.dma[p] is not None:
                raise ValueError(f"GPU {self.gpu}: WG {p} dma_map-ped twice")
            self.dma[p] = rule
        return self

    # ---------------------------------------------------------------- queries
    def order(self, base: Sequence[int]) -> List[int]:
        """This GPU's WG -> tile dispatch order: ``base`` in the order of :meth:`positions`."""
        return [base[p] for p in self.positions().tolist()]

    def positions(self) -> np.ndarray:
        """Base positions in this GPU's dispatch order (``positions()[seq]`` = position of WG ``seq``):
        :attr:`seq` if set, else the base order rotated to start at :attr:`start`."""
        if self.seq is not None:
            return np.asarray(self.seq, dtype=np.int64)
        return np.roll(np.arange(self.num_wgs, dtype=np.int64), -self.start)

    def dma_positions(self) -> List[int]:
        return [p for p in range(self.num_wgs) if self.dma[p] is not None]


# ------------------------------------------------------------------ predefined configurations

def _ring_step(a: AddressSpace, t: int, lo: int, hi: int, peer: int) -> None:
    """Ring RS step ``t`` (of N) on WGs ``[lo, hi)``, sending toward ``peer`` (module doc)."""
    if hi <= lo:
        return
    if t == 0:
        a.remote_map(lo, hi, peer, "update")
    elif t < a.num_gpus - 1:
        a.local(lo, hi, "update").dma_map(lo, hi, peer, "update", updates_per_element=2)
    else:
        a.local(lo, hi, "update")
        a.final[lo:hi] = True


def interleave(x: Sequence[int], y: Sequence[int]) -> List[int]:
    """``x`` and ``y`` merged so each is spread evenly (element ``i`` of a list of ``n`` at ``(i + 1/2) / n``)."""
    keyed = [((2 * i + 1) * len(y), 0, v) for i, v in enumerate(x)] + [((2 * j + 1) * len(x), 1, v) for j, v in enumerate(y)]
    return [v for *_, v in sorted(keyed)]


def ring_reduce_scatter(N: int, W: int, bidirectional: bool = False) -> List[AddressSpace]:
    """Fused GEMM + ring reduce-scatter (Figs. 7, 11, 12). GPU ``g`` ends with chunk ``(g - 1) mod N``.

    ``bidirectional``: each chunk's halves travel opposite ways round the ring (module doc).
    """
    b = chunk_bounds(W, N)
    mid = (b[:-1] + b[1:]) // 2
    out = []
    for g in range(N):
        a = AddressSpace(g, N, W, start=int(b[g]))
        seq: List[int] = []
        for t in range(N):
            c = (g + t) % N
            if not bidirectional:
                _ring_step(a, t, int(b[c]), int(b[c + 1]), (g - 1) % N)
                continue
            cb = (g - 2 - t) % N
            _ring_step(a, t, int(b[c]), int(mid[c]), (g - 1) % N)
            _ring_step(a, t, int(mid[cb]), int(b[cb + 1]), (g + 1) % N)
            seq += interleave(range(int(b[c]), int(mid[c])), range(int(mid[cb]), int(b[cb + 1])))
        if bidirectional:
            a.seq = np.asarray(seq, dtype=np.int64)
        out.append(a)
    return out


def stage_slices(W: int, stage_wgs: int, N: int) -> np.ndarray:
    """Per WG position, the slice ``d`` it falls in when each stage's WGs are cut N ways (Sec. 7.1)."""
    d = np.empty(W, dtype=np.int64)
    for s0 in range(0, W, stage_wgs):
        n = min(stage_wgs, W - s0)
        d[s0:s0 + n] = (np.arange(n) * N) // n
    return d


def direct_reduce_scatter(N: int, W: int, stage_wgs: int) -> List[AddressSpace]:
    """Fused GEMM + direct reduce-scatter (Sec. 7.1): slice ``d`` of every stage is remote-updated into GPU ``d``."""
    d = stage_slices(W, stage_wgs, N)
    out = []
    for g in range(N):
        a = AddressSpace(g, N, W)
        for p in range(W):
            if d[p] == g:
                a.local(p, p + 1, "update")
                a.final[p] = True
            else:
                a.remote_map(p, p + 1, int(d[p]), "update")
        out.append(a)
    return out


def ring_all_gather(N: int, W: int) -> List[AddressSpace]:
    """Fused producer + ring all-gather (Sec. 7.1): chunk ``g`` is GPU ``g``'s; stores travel ``g -> g-1 -> ...``."""
    b = chunk_bounds(W, N)
    out = []
    for g in range(N):
        a = AddressSpace(g, N, W, start=int(b[g]))
        nxt = (g - 1) % N
        a.remote_map(int(b[g]), int(b[g + 1]), nxt, "store", local_write=True)
        for c in range(N):
            if c != g and c != (g - 1) % N:  # chunk c travels c -> c-1 -> ... -> c+1, its last hop
                a.dma_map(int(b[c]), int(b[c + 1]), nxt, "store", updates_per_element=1)
        a.final[:] = True
        out.append(a)
    return out


def direct_all_gather(N: int, W: int) -> List[AddressSpace]:
    """Fused producer + direct all-gather: chunk ``g`` is stored locally and remote-stored to every peer."""
    b = chunk_bounds(W, N)
    out = []
    for g in range(N):
        a = AddressSpace(g, N, W)
        lo, hi = int(b[g]), int(b[g + 1])
        a.local(lo, hi, "store")
        for peer in range(N):
            if peer != g:
                a.remote_map(lo, hi, peer, "store")
        a.final[:] = True
        out.append(a)
    return out


def all_to_all(N: int, W: int) -> List[AddressSpace]:
    """Fused producer + all-to-all (Sec. 7.1): slice ``d`` goes to GPU ``d``; remote slices are not written locally."""
    b = chunk_bounds(W, N)
    out = []
    for g in range(N):
        a = AddressSpace(g, N, W)
        for d in range(N):
            lo, hi = int(b[d]), int(b[d + 1])
            if d == g:
                a.local(lo, hi, "store")
            else:
                a.remote_map(lo, hi, d, "store")
        out.append(a)
    return out


CONFIGS = {"ring_reduce_scatter": ring_reduce_scatter, "direct_reduce_scatter": direct_reduce_scatter,
           "ring_all_gather": ring_all_gather, "direct_all_gather": direct_all_gather, "all_to_all": all_to_all}


def deliveries(spaces: Sequence[AddressSpace]) -> Dict[Tuple[int, int], List[Tuple[int, str]]]:
    """Follow every GPU's mapping: ``{(gpu, pos): [(origin_gpu, op), ...]}`` accesses each GPU's memory
    receives for each position (local stores, remote stores, and DMA forwards of what had arrived).

    A DMA forward carries everything its region accumulated; this walks the data-flow graph and so
    checks a configuration's semantics independently of timing (used by tests).
    """
    N, W = spaces[0].num_gpus, spaces[0].num_wgs
    got: Dict[Tuple[int, int], List[Tuple[int, str]]] = {(g, p): [] for g in range(N) for p in range(W)}
    for a in spaces:
        for p in range(W):
            if a.local_op[p]:
                got[(a.gpu, p)].append((a.gpu, a.local_op[p]))
            for peer, op in a.remote[p]:
                got[(peer, p)].append((a.gpu, op))
    # DMA forwards, repeated until a fixed point (a ring forward chain is at most N-1 long)
    sent = set()
    for _ in range(N):
        for a in spaces:
            for p in a.dma_positions():
                r = a.dma[p]
                have = got[(a.gpu, p)]
                if (a.gpu, p) in sent or len(have) < r.updates_per_element:
                    continue
                sent.add((a.gpu, p))
                got[(r.peer, p)].extend((o, r.op) for o, _ in have)
    return got
