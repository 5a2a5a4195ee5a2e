"""An analytical (flow-level) model of a 2D torus network for scale-out studies.

Used where t3sim does not simulate every node at cycle level (the fused-collective paper's 128-node DLRM study,
which it ran in ASTRA-sim with a "2D Torus (BW: 200Gb/s, lat: 700ns)", its Table II). Written for t3sim; it
follows the idea of ASTRA-sim's analytical network backend (a transfer costs its hops' latency plus its size over
the link bandwidth) and adds the links' sharing, which an all-to-all's time on a torus depends on.

Network: ``kx x ky`` nodes, node ``(x, y)`` has id ``y kx + x``; each node has a full-duplex link to each of its 4
neighbours (wrap-around), ``link_GBps`` per direction (10**9 B/s) and ``hop_ns`` latency per hop.

* **Routing**: dimension-order (X, then Y), minimal; when the distance in a ring of even size is exactly half the
  ring, the traffic is split evenly between both directions.
* **All-to-all** (:meth:`Torus2D.all_to_all_ns`): every node sends ``bytes_per_pair`` to every other node, all at
  once. Time = the most-loaded directed link's bytes over the link bandwidth (the flows are taken to share links
  fairly and to pipeline across hops, so the bottleneck link is busy the whole time) + the longest route's hops x
  ``hop_ns`` + one message time (``message_ns``, the injecting NIC's per-message cost x its messages to one link).
  This is a lower bound of a real network's time that ignores head-of-line blocking and flow control.
* **All-reduce** (:meth:`Torus2D.all_reduce_ns`): the hierarchical ring algorithm per dimension (ASTRA-sim's
  multi-dimensional collectives run a ring per dimension): reduce-scatter along X on bidirectional rings, then
  along Y on the X-shard, then all-gather along Y, then X. A ring of ``k`` moving ``D`` bytes per node over both
  directions takes ``(k - 1)/k x D / (2 x link) + (k - 1) x hop_ns`` per phase.

All times in ns (float). Pure Python: no simulation objects.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Dict, List, Tuple

Link = Tuple[int, int]  # (from node, to node), neighbours


@dataclass(frozen=True)
class Torus2D:
    """A ``kx x ky`` torus (module doc)."""

    kx: int
    ky: int
    link_GBps: float
    hop_ns: float
    message_ns: float = 0.0

    def __post_init__(self) -> None:
        if self.kx < 1 or self.ky < 1 or self.link_GBps <= 0 or self.hop_ns < 0 or self.message_ns < 0:
            raise ValueError(f"torus needs kx, ky >= 1, link_GBps > 0, hop_ns >= 0, message_ns >= 0; got {self}")

    @classmethod
    def square_ish(cls, nodes: int, link_GBps: float, hop_ns: float, message_ns: float = 0.0) -> "Torus2D":
        """The ``kx x ky = nodes`` torus with ``kx <= ky`` as close to square as ``nodes`` allows (128: 8 x 16)."""
        kx = max(d for d in range(1, int(nodes ** 0.5) + 1) if nodes % d == 0)
        return cls(kx, nodes // kx, link_GBps, hop_ns, message_ns)

    @property
    def nodes(self) -> int:
        return self.kx * self.ky

    def node(self, x: int, y: int) -> int:
        return (y % self.ky) * self.kx + (x % self.kx)

    @staticmethod
    def _ring_paths(k: int, a: int, b: int) -> List[Tuple[float, List[int]]]:
        """Minimal paths from ``a`` to ``b`` on a ring of ``k`` (positions visited after ``a``), with weights."""
        d = (b - a) % k
        if d == 0:
            return [(1.0, [])]
        fwd = [(a + i) % k for i in range(1, d + 1)]
        bwd = [(a - i) % k for i in range(1, k - d + 1)]
        if 2 * d < k:
            return [(1.0, fwd)]
        if 2 * d > k:
            return [(1.0, bwd)]
        return [(0.5, fwd), (0.5, bwd)]

    def routes(self, src: int, dst: int) -> List[Tuple[float, List[Link]]]:
        """Weighted dimension-order routes ``src -> dst`` (weights sum to 1); each a list of directed links."""
        sx, sy, dx, dy = src % self.kx, src // self.kx, dst % self.kx, dst // self.kx
        out = []
        for wx, px in self._ring_paths(self.kx, sx, dx):
            for wy, py in self._ring_paths(self.ky, sy, dy):
                hops, cur = [], src
                for x in px:
                    nxt = self.node(x, sy)
                    hops.append((cur, nxt))
                    cur = nxt
                for y in py:
                    nxt = self.node(dx, y)
                    hops.append((cur, nxt))
                    cur = nxt
                out.append((wx * wy, hops))
        return out

    def max_hops(self) -> int:
        return self.kx // 2 + self.ky // 2

    def all_to_all_loads(self, bytes_per_pair: float) -> Dict[Link, float]:
        """Bytes each directed link carries in an all-to-all of ``bytes_per_pair`` (module doc)."""
        load: Dict[Link, float] = defaultdict(float)
        for s in range(self.nodes):
            for d in range(self.nodes):
                if s != d:
                    for w, hops in self.routes(s, d):
                        for link in hops:
                            load[link] += w * bytes_per_pair
        return dict(load)

    def all_to_all_ns(self, bytes_per_pair: float) -> float:
        """Time of an all-to-all of ``bytes_per_pair`` from every node to every other (module doc)."""
        if self.nodes < 2 or bytes_per_pair <= 0:
            return 0.0
        bottleneck = max(self.all_to_all_loads(1.0).values()) * bytes_per_pair
        return bottleneck / self.link_GBps + self.max_hops() * self.hop_ns + self.message_ns

    def all_to_all_rate_GBps(self) -> float:
        """Bytes per ns (GB/s) one node's all-to-all traffic leaves at once the bottleneck link is saturated."""
        if self.nodes < 2:
            return float("inf")
        return (self.nodes - 1) * self.link_GBps / max(self.all_to_all_loads(1.0).values())

    def _ring_ns(self, k: int, nbytes: float) -> float:
        if k < 2:
            return 0.0
        return (k - 1) / k * nbytes / (2 * self.link_GBps) + (k - 1) * self.hop_ns

    def all_reduce_ns(self, nbytes: float) -> float:
        """Hierarchical ring all-reduce of ``nbytes`` per node (module doc)."""
        if self.nodes < 2 or nbytes <= 0:
            return 0.0
        rs = self._ring_ns(self.kx, nbytes) + self._ring_ns(self.ky, nbytes / self.kx)
        return 2 * rs  # all-gather mirrors the reduce-scatter
