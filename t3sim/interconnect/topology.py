"""Physical topologies as directed networkx graphs (registered by name).

Nodes are GPU ids ``0..n-1`` (ints) and, for a switch, the node ``"switch"``.
Every directed edge is one direction of one physical link and carries
``bandwidth_GBps`` (that direction's bandwidth) and ``latency_ns``.
A ring with ``bidirectional=False`` has only the edges ``i -> i+1``.

Invariant: every GPU can reach every other GPU (checked by :func:`build_topology`).
"""

from __future__ import annotations

from typing import Callable

import networkx as nx

from t3sim.config.system import InterconnectConfig
from t3sim.registry import get, register

TopologyBuilder = Callable[[InterconnectConfig], nx.DiGraph]


def _link(g: nx.DiGraph, a, b, ic: InterconnectConfig, both: bool) -> None:
    g.add_edge(a, b, bandwidth_GBps=ic.link_bandwidth_GBps, latency_ns=ic.link_latency_ns)
    if both:
        g.add_edge(b, a, bandwidth_GBps=ic.link_bandwidth_GBps, latency_ns=ic.link_latency_ns)


@register("topology", "ring")
def ring(ic: InterconnectConfig) -> nx.DiGraph:
    """GPU i links to GPU (i+1) mod n (and back, if bidirectional). Paper Table 1, Fig. 3."""
    g = nx.DiGraph(kind="ring")
    n = ic.num_gpus
    g.add_nodes_from(range(n))
    for i in range(n if n > 1 else 0):  # one GPU: no link
        j = (i + 1) % n
        if n == 2 and i == 1 and ic.bidirectional:
            break  # two GPUs: one physical link, already added both ways
        _link(g, i, j, ic, ic.bidirectional)
    return g


@register("topology", "direct")
def direct(ic: InterconnectConfig) -> nx.DiGraph:
    """Fully connected: a dedicated link between every pair (paper Sec. 7.1, direct RS)."""
    g = nx.DiGraph(kind="direct")
    n = ic.num_gpus
    g.add_nodes_from(range(n))
    for i in range(n):
        for j in range(i + 1, n):
            _link(g, i, j, ic, True)
    return g


@register("topology", "switch")
def switch(ic: InterconnectConfig) -> nx.DiGraph:
    """Every GPU owns one port on a central switch; per-port bandwidth per direction."""
    g = nx.DiGraph(kind="switch")
    n = ic.num_gpus
    g.add_nodes_from(range(n))
    g.add_node("switch")
    for i in range(n):
        _link(g, i, "switch", ic, True)
    return g


def build_topology(ic: InterconnectConfig) -> nx.DiGraph:
    """Build the registered topology ``ic.kind`` and check it connects all GPUs."""
    g = get("topology", ic.kind, "interconnect.kind")(ic)
    gpus = [v for v in g.nodes if isinstance(v, int)]
    if len(gpus) != ic.num_gpus or not nx.is_strongly_connected(g):
        raise ValueError(f"topology {ic.kind!r} with {ic.num_gpus} GPUs does not connect every GPU to every other")
    return g
