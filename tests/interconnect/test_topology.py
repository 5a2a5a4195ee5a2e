"""Topologies: link counts, directions, attributes, connectivity."""

from __future__ import annotations

import networkx as nx
import pytest

from t3sim.config import InterconnectConfig
from t3sim.interconnect.topology import build_topology


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_ring(n):
    g = build_topology(InterconnectConfig(kind="ring", num_gpus=n, bidirectional=True))
    assert g.number_of_edges() == (2 if n == 2 else 2 * n)
    for i in range(n):
        assert g.has_edge(i, (i + 1) % n) and g.has_edge((i + 1) % n, i)
    uni = build_topology(InterconnectConfig(kind="ring", num_gpus=n, bidirectional=False))
    assert uni.number_of_edges() == n and all(uni.has_edge(i, (i + 1) % n) for i in range(n))


@pytest.mark.parametrize("n", [2, 4, 8])
def test_direct_and_switch(n):
    d = build_topology(InterconnectConfig(kind="direct", num_gpus=n))
    assert d.number_of_edges() == n * (n - 1)
    s = build_topology(InterconnectConfig(kind="switch", num_gpus=n))
    assert s.number_of_edges() == 2 * n and nx.shortest_path_length(s, 0, n - 1) == 2


def test_edge_attributes():
    g = build_topology(InterconnectConfig(kind="ring", num_gpus=4, link_bandwidth_GBps=75, link_latency_ns=500))
    for _, _, a in g.edges(data=True):
        assert a == {"bandwidth_GBps": 75, "latency_ns": 500}


@pytest.mark.parametrize("kind", ["ring", "direct", "switch"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("bidir", [True, False])
def test_config_gpu_links_is_the_topologys_degree(kind, n, bidir):
    """``InterconnectConfig.gpu_links`` (read by the T3-MCA link-rate starvation limit, which the memory layer
    derives from the config) is every GPU's out- and in-degree in the built topology."""
    from t3sim.config.system import InterconnectConfig

    ic = InterconnectConfig(kind=kind, num_gpus=n, bidirectional=bidir)
    g = build_topology(ic)
    for v in range(n):
        assert g.out_degree(v) == g.in_degree(v) == ic.gpu_links
    assert ic.gpu_link_GBps == ic.gpu_links * ic.link_bandwidth_GBps
