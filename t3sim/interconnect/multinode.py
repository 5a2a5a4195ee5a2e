"""``multinode`` topology: GPUs in nodes, nodes joined through NICs (fused computation-collective paper Sec.
III-A, Table I).

``interconnect.num_gpus`` GPUs in ``num_gpus / gpus_per_node`` nodes; GPU ``g`` sits in node ``g // gpus_per_node``.

* **Inside a node**: the registered topology ``node_kind`` (ring, direct, switch) over the node's GPUs, with the
  ordinary ``link_bandwidth_GBps`` / ``link_latency_ns`` links (a switch node is named ``node<k>.switch``).
* **Between nodes**: one NIC per node (``node<k>.nic``) and a non-blocking fabric (``fabric``, store-and-forward,
  unbounded queues, like the ``switch`` topology). Edges, per direction:

  ========================  ======================  ===========================  ==========================
  edge                      bandwidth               latency                      message cost
  ========================  ======================  ===========================  ==========================
  GPU -> its NIC            ``nic_bandwidth_GBps``  0                            none
  NIC -> fabric (send port)  ``nic_bandwidth_GBps``  ``nic_latency_ns``           ``1e3 / nic_message_rate_Mps`` ns
  fabric -> NIC (receive)   ``nic_bandwidth_GBps``  0                            none
  NIC -> GPU                ``nic_bandwidth_GBps``  0                            none
  ========================  ======================  ===========================  ==========================

  So a message from a GPU to a GPU of another node crosses 4 links: its time is ``nic_latency_ns`` plus four
  store-and-forward serialisations of its first packet (pipelined for a stream) and at least one message slot of the
  sending NIC (:class:`~t3sim.interconnect.link.Link`: a transfer is one message). The node's GPUs share the NIC's
  send and receive ports (FIFO); the GPU-to-NIC attachment (PCIe / GPU-direct RDMA) is taken to be at least as fast
  as the port (assumption: no published MI210-to-NIC rate), so the NIC port is the bottleneck of a node's traffic.

Routing (``weighted`` graph, :class:`~t3sim.interconnect.network.Network`): the least total ``weight``; intra-node
links weigh 1 and NIC-path edges ``NIC_WEIGHT`` (more than any intra-node path), so GPUs of one node always use
their links and GPUs of different nodes always go GPU -> NIC -> fabric -> NIC -> GPU.

Invariant: every GPU reaches every other; the route between GPUs of different nodes holds exactly one NIC send port.
"""

from __future__ import annotations

import networkx as nx

from t3sim.config.system import InterconnectConfig
from t3sim.registry import get, register

#: routing weight of each NIC-path edge: larger than any path inside a node (at most num_gpus intra-node hops)
NIC_WEIGHT = 1 << 20


def nic_name(node: int) -> str:
    return f"node{node}.nic"


FABRIC = "fabric"


@register("topology", "multinode")
def multinode(ic: InterconnectConfig) -> nx.DiGraph:
    """Nodes of ``gpus_per_node`` GPUs (``node_kind`` links inside) joined through one NIC each (module doc)."""
    per = ic.gpus_per_node
    if ic.num_gpus % per:
        raise ValueError(f"num_gpus={ic.num_gpus} is not a multiple of gpus_per_node={per}")
    nodes = ic.num_gpus // per
    g = nx.DiGraph(kind="multinode", weighted=True)
    g.add_nodes_from(range(ic.num_gpus))
    inner_ic = ic.model_copy(update={"kind": ic.node_kind, "num_gpus": per})
    inner = get("topology", ic.node_kind, "interconnect.node_kind")(inner_ic)
    nic_bw, msg_ns = ic.nic_bandwidth_GBps, 1e3 / ic.nic_message_rate_Mps
    if nodes > 1:
        g.add_node(FABRIC)
    for k in range(nodes):
        base = k * per
        relabel = {v: (base + v if isinstance(v, int) else f"node{k}.{v}") for v in inner.nodes}
        for a, b, attr in inner.edges(data=True):
            g.add_edge(relabel[a], relabel[b], weight=1, **attr)
        if nodes == 1:
            continue
        nic = nic_name(k)
        for gpu in range(base, base + per):
            g.add_edge(gpu, nic, bandwidth_GBps=nic_bw, latency_ns=0.0, weight=NIC_WEIGHT)
            g.add_edge(nic, gpu, bandwidth_GBps=nic_bw, latency_ns=0.0, weight=NIC_WEIGHT)
        g.add_edge(nic, FABRIC, bandwidth_GBps=nic_bw, latency_ns=ic.nic_latency_ns, message_ns=msg_ns,
                   weight=NIC_WEIGHT)
        g.add_edge(FABRIC, nic, bandwidth_GBps=nic_bw, latency_ns=0.0, weight=NIC_WEIGHT)
    return g
