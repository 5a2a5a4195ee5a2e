"""Analytic collective times: the bounds simulated runs are compared against.

All times in **ns** (floats: these are estimates for reporting, never simulated
time). Bandwidths in GB/s = 10**9 B/s, so ``bytes / GBps`` is ns.

Ring reduce-scatter / all-gather (paper Sec. 2.3). The array of ``S`` bytes is
split into ``N`` chunks of ``S/N``; in each of the ``N-1`` steps every GPU
sends one chunk to its neighbour over its own link while receiving one from
the other neighbour, and a step ends when the chunk has fully arrived: the
chunk's serialisation ``(S/N)/B`` plus one link latency ``L``. Steps are
sequential (a GPU forwards in step ``s+1`` what it received in step ``s``), so::

    T_ring = (N-1) * ((S/N) / (B * D) + L) + T_launch
           = (N-1)/N * S / (B * D)  +  (N-1) * L  +  T_launch

where ``D`` is the number of ring directions used (1, or 2 when each chunk is
split in halves sent around the ring both ways at once over a bi-directional
ring: each direction has its own ``B``; with ``N = 2`` both halves share the
one link of each direction, so ``D`` is 1). All-reduce = RS + AG: ``2(N-1)``
steps, one launch. With uneven chunks the step is set by the largest chunk,
``ceil(S_elems/N)`` elements (the closed form uses ``S/N``; they differ by at
most one element per step). Packetisation adds < 1 ps per packet (integer ceil
of each packet's serialisation) and, on multi-hop routes, one store-and-forward
packet time per extra hop.

Direct (fully connected, dedicated link per pair, paper Sec. 7.1): one step in
which each GPU sends ``S/N`` to each of its ``N-1`` peers over ``N-1``
different links in parallel: ``T = (S/N)/B + L + T_launch`` (AR: twice the step).
Switch (one port per GPU, per-port bandwidth ``B``): the port carries all
``N-1`` blocks: ``T = (N-1)/N * S / B + 2L + one packet time + T_launch``.

:func:`plan_lower_bound` gives, for any plan on any topology, the sum over
steps of (most-loaded link's bytes / its bandwidth + the longest route's
latency), a lower bound on the step-synchronous execution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import networkx as nx

from t3sim.collectives.plan import Plan

_STEPS_FACTOR = {"reduce_scatter": 1, "all_gather": 1, "all_reduce": 2}


@dataclass(frozen=True)
class Estimate:
    """An analytic time split into its terms (ns)."""

    bandwidth_ns: float
    latency_ns: float
    overhead_ns: float
    steps: int

    @property
    def total_ns(self) -> float:
        return self.bandwidth_ns + self.latency_ns + self.overhead_ns


def ring_time(collective: str, size_B: float, n: int, link_GBps: float, latency_ns: float,
              directions: int = 1, launch_overhead_ns: float = 0.0) -> Estimate:
    """Ring RS / AG / AR time (module doc): ``k(N-1)/N * S/(B D) + k(N-1) L + T_launch``, k = 1 or 2 (AR)."""
    if collective not in _STEPS_FACTOR:
        raise ValueError(f"ring_time: no ring estimate for {collective!r}")
    if n < 2 or directions not in (1, 2):
        raise ValueError(f"ring_time: need n >= 2 and 1 or 2 directions (got n={n}, D={directions})")
    if n == 2:
        directions = 1  # two GPUs: "both ways round the ring" is the same single link pair
    steps = _STEPS_FACTOR[collective] * (n - 1)
    return Estimate(steps * size_B / n / (link_GBps * directions), steps * latency_ns, launch_overhead_ns, steps)


def direct_time(collective: str, size_B: float, n: int, link_GBps: float, latency_ns: float,
                switch: bool = False, packet_size_B: int = 0, launch_overhead_ns: float = 0.0) -> Estimate:
    """Direct RS / AG / AR / all-to-all on a fully connected topology, or through a switch (module doc)."""
    k = _STEPS_FACTOR.get(collective, 1 if collective == "all_to_all" else None)
    if k is None:
        raise ValueError(f"direct_time: unknown collective {collective!r}")
    if switch:
        per_step_bw = (n - 1) * size_B / n / link_GBps
        per_step_lat = 2 * latency_ns + min(packet_size_B, size_B / n) / link_GBps
    else:
        per_step_bw = size_B / n / link_GBps
        per_step_lat = latency_ns
    return Estimate(k * per_step_bw, k * per_step_lat, launch_overhead_ns, k)


def plan_lower_bound(plan: Plan, graph: nx.DiGraph, launch_overhead_ns: float = 0.0,
                     routes: Optional[Dict[Tuple[int, int], list]] = None) -> Estimate:
    """Step-synchronous lower bound of ``plan`` on ``graph`` (shortest-path routes; module doc).

    ``routes`` maps (src, dst) to the node path (default: networkx shortest paths, the
    same choice :class:`~t3sim.interconnect.network.Network` makes).
    """
    if routes is None:
        routes = {k: v for k, v in _all_paths(graph).items()}
    bw_total, lat_total = 0.0, 0.0
    for step in plan.steps:
        load: Dict[Tuple, float] = {}
        lat = 0.0
        for x in step.xfers:
            if x.is_local:
                continue
            path = routes[(x.src, x.dst)]
            lat = max(lat, sum(graph.edges[a, b]["latency_ns"] for a, b in zip(path, path[1:])))
            for a, b in zip(path, path[1:]):
                load[(a, b)] = load.get((a, b), 0.0) + x.nbytes(plan.elem_bytes)
        bw_total += max((v / graph.edges[e]["bandwidth_GBps"] for e, v in load.items()), default=0.0)
        lat_total += lat
    return Estimate(bw_total, lat_total, launch_overhead_ns, plan.num_steps)


def _all_paths(graph: nx.DiGraph) -> Dict[Tuple[int, int], list]:
    paths = dict(nx.all_pairs_shortest_path(graph))
    gpus = [v for v in graph.nodes if isinstance(v, int)]
    return {(s, d): paths[s][d] for s in gpus for d in gpus if s != d}
