"""Ring, direct and all-to-all collective plans (registered under ``"collective"``).

Every builder has the signature
``build(n, num_elems, *, elem_bytes=2, bidirectional=False) -> Plan``
(``bidirectional`` only matters for ring plans; direct plans and all-to-all
ignore it). Chunk ``i`` (see :func:`~t3sim.collectives.plan.split_ranges`) is
owned by GPU ``i``.

Ring reduce-scatter (paper Sec. 2.3, Fig. 3), direction ``d`` (+1: GPU i sends
to i+1; -1: to i-1), steps ``s = 0 .. N-2``: GPU ``i`` sends chunk
``(i - d*(s+1)) mod N`` to ``i+d``, which reduces it into its own copy. At
step ``s`` the chunk sent carries ``s+1`` contributions; the receiver of the
last step (``s = N-2``) gets chunk ``(i - d*(N-1)) = i + d``, its own: chunk
``j`` ends fully reduced on GPU ``j``.

Ring all-gather, direction ``d``, steps ``s = 0 .. N-2``: GPU ``i`` sends chunk
``(i - d*s) mod N`` (its own at step 0, then what it received the step before)
to ``i+d``, which stores it.

Bidirectional ring (``bidirectional=True``): every chunk is split in two halves
(array_split); the first halves run the ring in direction +1, the second halves
in direction -1, in the same steps. Each direction carries half the data, so
with both directions of every link available the bandwidth term halves.

Direct (fully connected, paper Sec. 7.1): one step. Reduce-scatter: every GPU
sends chunk ``j`` to GPU ``j`` for all ``j != i``; all-gather: every GPU sends
its chunk to every peer. Peers are listed in staggered order ``i+1, i+2, ...``
so that round-robin streaming through a switch spreads over the output ports.

All-to-all (paper Sec. 7.1, 2.2): ``in`` of each GPU is split into ``N``
blocks; block ``j`` of GPU ``i`` goes to GPU ``j`` and lands at block position
``i`` of ``out`` (``out`` of GPU ``j`` has ``N * |chunk j|`` elements, as
alltoallv with these counts). One step: all peers at once (the network routes
multi-hop pairs), plus the local block copied ``in -> out`` on each GPU.
"""

from __future__ import annotations

from typing import List, Tuple

from t3sim.collectives.plan import Plan, Xfer, make_plan, merge_plans, split_ranges
from t3sim.registry import get, register

Range = Tuple[int, int]


def _ring_subranges(n: int, num_elems: int, bidirectional: bool) -> Tuple[List[Range], List[Tuple[int, List[Range]]]]:
    """Owner chunks, and per ring direction the sub-range of every chunk it carries."""
    chunks = split_ranges(num_elems, n)
    if not bidirectional:
        return chunks, [(+1, chunks)]
    halves = [split_ranges(hi - lo, 2, lo) for lo, hi in chunks]
    return chunks, [(+1, [h[0] for h in halves]), (-1, [h[1] for h in halves])]


def _rs_steps(n: int, rings) -> list:
    steps = []
    for s in range(n - 1):
        xs = []
        for d, sub in rings:
            for i in range(n):
                c = (i - d * (s + 1)) % n
                lo, hi = sub[c]
                xs.append(Xfer(i, (i + d) % n, "buf", lo, "buf", lo, hi - lo, "reduce", c))
        steps.append((xs, "rs"))
    return steps


def _ag_steps(n: int, rings) -> list:
    steps = []
    for s in range(n - 1):
        xs = []
        for d, sub in rings:
            for i in range(n):
                c = (i - d * s) % n
                lo, hi = sub[c]
                xs.append(Xfer(i, (i + d) % n, "buf", lo, "buf", lo, hi - lo, "store", c))
        steps.append((xs, "ag"))
    return steps


def _peers(i: int, n: int) -> List[int]:
    """Peers of GPU i in staggered order i+1, i+2, ... (mod n): when every GPU streams to its
    peers round-robin, no two GPUs target the same peer in the same slot (no switch-port hotspot)."""
    return [(i + k) % n for k in range(1, n)]


def _bufs(n: int, num_elems: int):
    return {"buf": (num_elems,) * n}


@register("collective", "ring_reduce_scatter")
def ring_reduce_scatter(n: int, num_elems: int, *, elem_bytes: int = 2, bidirectional: bool = False) -> Plan:
    """Ring RS: N-1 steps; chunk i ends reduced on GPU i (module doc)."""
    chunks, rings = _ring_subranges(n, num_elems, bidirectional)
    return make_plan("ring_reduce_scatter", "reduce_scatter", n, num_elems, elem_bytes, _rs_steps(n, rings),
                     chunks, _bufs(n, num_elems), bidirectional)


@register("collective", "ring_all_gather")
def ring_all_gather(n: int, num_elems: int, *, elem_bytes: int = 2, bidirectional: bool = False) -> Plan:
    """Ring AG: N-1 steps; GPU i starts with chunk i valid and ends with all chunks."""
    chunks, rings = _ring_subranges(n, num_elems, bidirectional)
    return make_plan("ring_all_gather", "all_gather", n, num_elems, elem_bytes, _ag_steps(n, rings),
                     chunks, _bufs(n, num_elems), bidirectional)


@register("collective", "ring_all_reduce")
def ring_all_reduce(n: int, num_elems: int, *, elem_bytes: int = 2, bidirectional: bool = False) -> Plan:
    """Ring AR = ring RS followed by ring AG on the same chunks (2(N-1) steps)."""
    return merge_plans("ring_all_reduce", "all_reduce", [
        ring_reduce_scatter(n, num_elems, elem_bytes=elem_bytes, bidirectional=bidirectional),
        ring_all_gather(n, num_elems, elem_bytes=elem_bytes, bidirectional=bidirectional)])


@register("collective", "direct_reduce_scatter")
def direct_reduce_scatter(n: int, num_elems: int, *, elem_bytes: int = 2, bidirectional: bool = False) -> Plan:
    """Direct RS: one step, GPU i sends chunk j to GPU j (j != i), reduced at the destination."""
    chunks = split_ranges(num_elems, n)
    xs = [Xfer(i, j, "buf", chunks[j][0], "buf", chunks[j][0], chunks[j][1] - chunks[j][0], "reduce", j)
          for i in range(n) for j in _peers(i, n)]
    return make_plan("direct_reduce_scatter", "reduce_scatter", n, num_elems, elem_bytes, [(xs, "rs")],
                     chunks, _bufs(n, num_elems))


@register("collective", "direct_all_gather")
def direct_all_gather(n: int, num_elems: int, *, elem_bytes: int = 2, bidirectional: bool = False) -> Plan:
    """Direct AG: one step, GPU i sends its chunk i to every peer."""
    chunks = split_ranges(num_elems, n)
    xs = [Xfer(i, j, "buf", chunks[i][0], "buf", chunks[i][0], chunks[i][1] - chunks[i][0], "store", i)
          for i in range(n) for j in _peers(i, n)]
    return make_plan("direct_all_gather", "all_gather", n, num_elems, elem_bytes, [(xs, "ag")],
                     chunks, _bufs(n, num_elems))


@register("collective", "direct_all_reduce")
def direct_all_reduce(n: int, num_elems: int, *, elem_bytes: int = 2, bidirectional: bool = False) -> Plan:
    """Direct AR = direct RS followed by direct AG (two steps)."""
    return merge_plans("direct_all_reduce", "all_reduce", [
        direct_reduce_scatter(n, num_elems, elem_bytes=elem_bytes),
        direct_all_gather(n, num_elems, elem_bytes=elem_bytes)])


@register("collective", "all_to_all")
def all_to_all(n: int, num_elems: int, *, elem_bytes: int = 2, bidirectional: bool = False) -> Plan:
    """All-to-all: block j of GPU i -> block position i of GPU j's ``out`` (module doc)."""
    chunks = split_ranges(num_elems, n)
    sizes = [hi - lo for lo, hi in chunks]
    xs = [Xfer(i, j, "in", chunks[j][0], "out", i * sizes[j], sizes[j], "store", j)
          for i in range(n) for j in [i] + _peers(i, n)]
    return make_plan("all_to_all", "all_to_all", n, num_elems, elem_bytes, [(xs, "a2a")], chunks,
                     {"in": (num_elems,) * n, "out": tuple(n * s for s in sizes)})


#: (collective, algorithm) -> registry name, for ``CollectiveConfig.algorithm``.
PLAN_NAMES = {
    ("reduce_scatter", "ring"): "ring_reduce_scatter",
    ("all_gather", "ring"): "ring_all_gather",
    ("all_reduce", "ring"): "ring_all_reduce",
    ("reduce_scatter", "direct"): "direct_reduce_scatter",
    ("all_gather", "direct"): "direct_all_gather",
    ("all_reduce", "direct"): "direct_all_reduce",
    ("all_to_all", "ring"): "all_to_all",
    ("all_to_all", "direct"): "all_to_all",
}


def build_plan(collective: str, algorithm: str, n: int, num_elems: int, *, elem_bytes: int = 2,
               bidirectional: bool = False) -> Plan:
    """Build the registered plan for ``collective`` (e.g. ``"reduce_scatter"``) and ``algorithm`` (ring/direct)."""
    key = (collective.replace("-", "_"), algorithm)
    if key not in PLAN_NAMES:
        raise ValueError(f"no {algorithm} plan for collective {collective!r}; known: {sorted(PLAN_NAMES)}")
    return get("collective", PLAN_NAMES[key], "collective")(n, num_elems, elem_bytes=elem_bytes,
                                                            bidirectional=bidirectional)
