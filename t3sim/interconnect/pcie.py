"""``pcie`` topology: PCIe switch trees under CPU sockets, the sockets joined by their CPU-to-CPU link (FLUX Sec. 5,
the A100 PCIe node: 8 GPUs, 4 per CPU socket, peer-to-peer over PCIe).

``interconnect.num_gpus`` GPUs under ``sockets`` sockets of ``P = num_gpus / sockets`` GPUs each: GPU ``g`` sits under
socket ``g // P`` (node ``socket<k>``, its root complex), behind switch ``(g % P) // gpus_per_switch`` of that socket
(node ``socket<k>.switch<j>``). Edges, per direction:

==============================  ===============================  ============================
edge                            bandwidth                        latency
==============================  ===============================  ============================
GPU <-> its switch              ``link_bandwidth_GBps``          ``link_latency_ns``
switch <-> its root complex     ``link_bandwidth_GBps``          ``link_latency_ns``
root complex <-> root complex   ``socket_link_bandwidth_GBps``   ``socket_link_latency_ns``
==============================  ===============================  ============================

Every PCIe link of the tree is one ``link_bandwidth_GBps`` link (a GPU's x16 port and a switch's x16 upstream port
alike); every two sockets are joined by one socket link (a 2-socket board's UPI / xGMI links taken together). With
``gpus_per_switch = 1`` there is no switch: each GPU hangs on a root port of its own (GPU <-> root complex).

Routes (the graph is a tree, plus the socket links: every shortest path is the only one, which
:class:`~t3sim.interconnect.network.Network` and :func:`~t3sim.collectives.analytic.plan_lower_bound` both take):

* same switch: GPU -> switch -> GPU (2 links; peer-to-peer through the switch, NVML's ``PIX``);
* same socket, another switch: GPU -> switch -> root complex -> switch -> GPU (4 links, ``PHB``);
* another socket: GPU -> switch -> root complex -> socket link -> root complex -> switch -> GPU (5 links, ``SYS``).

So a switch's upstream port carries, each way, all the traffic between its GPUs and every GPU outside the switch,
and the socket link all the traffic between the two sockets. Switches and root complexes are store-and-forward
with unbounded queues, as the ``switch`` topology's switch.

Not modelled: NCCL moves a ring hop between GPUs under different root complexes through host memory (its P2P level
defaults to ``PATH_PXB``: NCCL 2.28.9 src/graph/paths.cc ``ncclTopoCheckP2p``), which crosses the same links with a
host-memory write and read in between; Intel root complexes forward peer writes in 64 B TLPs (NCCL's
``INTEL_P2P_OVERHEAD``, src/graph/topo.h); the socket link's protocol overhead and the traffic CPUs put on it; the
NICs under the switches.

Homogeneous mode: the GPUs are not alike under rotation (GPU 0's peers behind the other socket are not GPU 1's), so
the network is not rotation-invariant and no send is elided as an image (every transfer is simulated); the GPUs'
compute still mirrors GPU 0's, and a mirrored action never ends before GPU 0's did
(:mod:`t3sim.collectives.mirror`). GPU 0 receives NCCL's ring across the sockets, so in a latency-bound ring every
GPU waits as if it did: an 8-GPU 1 MiB reduce-scatter on configs/systems/a100-pcie-8gpu.yaml takes 108 us
homogeneous and 93 us explicit (one switch: 77 us either way); from 4 MiB on, bandwidth-bound, the two modes agree.
``simulation.mode: explicit`` simulates every GPU as it sits.

Invariant: every GPU reaches every other; a route between GPUs of different sockets crosses exactly one socket link.
"""

from __future__ import annotations

import networkx as nx

from t3sim.config.system import InterconnectConfig
from t3sim.registry import register


def root_name(socket: int) -> str:
    """The node of socket ``socket``'s root complex."""
    return f"socket{socket}"


def switch_name(socket: int, switch: int) -> str:
    """The node of switch ``switch`` of socket ``socket``."""
    return f"socket{socket}.switch{switch}"


def socket_of(ic: InterconnectConfig, gpu: int) -> int:
    """The socket GPU ``gpu`` sits under (kind pcie)."""
    return gpu // (ic.num_gpus // ic.sockets)


def switch_of(ic: InterconnectConfig, gpu: int) -> int:
    """The switch of its socket GPU ``gpu`` sits behind (kind pcie)."""
    return (gpu % (ic.num_gpus // ic.sockets)) // ic.gpus_per_switch


def _both(g: nx.DiGraph, a, b, bw: float, lat: float) -> None:
    g.add_edge(a, b, bandwidth_GBps=bw, latency_ns=lat)
    g.add_edge(b, a, bandwidth_GBps=bw, latency_ns=lat)


@register("topology", "pcie")
def pcie(ic: InterconnectConfig) -> nx.DiGraph:
    """PCIe switch trees under ``sockets`` CPU sockets joined pairwise by a socket link (module doc)."""
    n, k, per = ic.num_gpus, ic.sockets, ic.gpus_per_switch
    if n % k or (n // k) % per:  # InterconnectConfig refuses these shapes; a graph built by hand is checked again
        raise ValueError(f"kind pcie: num_gpus={n} does not split into sockets={k} of whole switches of "
                         f"gpus_per_switch={per} GPUs")
    bw, lat = ic.link_bandwidth_GBps, ic.link_latency_ns
    g = nx.DiGraph(kind="pcie")
    g.add_nodes_from(range(n))
    for s in range(k):
        g.add_node(root_name(s))
    for gpu in range(n):
        s = socket_of(ic, gpu)
        if per == 1:
            _both(g, gpu, root_name(s), bw, lat)
            continue
        sw = switch_name(s, switch_of(ic, gpu))
        if sw not in g:
            _both(g, sw, root_name(s), bw, lat)
        _both(g, gpu, sw, bw, lat)
    for a in range(k):
        for b in range(a + 1, k):
            _both(g, root_name(a), root_name(b), ic.socket_link_bandwidth_GBps, ic.socket_link_latency_ns)
    return g
