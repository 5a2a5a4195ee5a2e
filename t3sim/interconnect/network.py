"""The inter-GPU network: one :class:`~t3sim.interconnect.link.Link` per directed topology edge.

Built from the graph of :func:`t3sim.interconnect.topology.build_topology`.
Routing is static: the shortest path (fewest hops) between two GPUs, fixed when
the network is built (networkx's deterministic BFS choice breaks ties); a graph marked
``weighted`` (multinode) routes by the least total edge ``weight`` instead. On a
switch every GPU-to-GPU route is two hops, ``gpu -> switch -> gpu``, over the
sender's and the receiver's ports (per-port bandwidth, per direction); the
switch is store-and-forward with unbounded output queues.

:meth:`Network.send` packetises a transfer at ``InterconnectConfig.packet_size_B``
(the last packet carries the remainder), injects all packets into the first
link at once (they queue FIFO behind earlier traffic) and returns a simpy
event that fires, with the :class:`Transfer` as value, when the last packet of
the transfer reached the destination. Each packet arriving at its destination
GPU is handed to that GPU's receiver callback (:meth:`Network.set_receiver`);
the GPU model turns it into communication-stream memory requests. Packets
carry :class:`PacketMeta` (``op`` store/update, ``wg_id``, ``wf_id``, a
destination byte address and a free ``tag``) for T3's tracker.

Link-protocol overhead: a transfer's packets carry ``wire`` bytes, the payload plus
``InterconnectConfig.packet_header_B`` per link-protocol packet of ``payload_B``
bytes (:meth:`Network.wire_bytes`; bulk copies use ``max_payload_B``, CU stores
``sm_store_payload_B``); links serialise wire bytes at the wire rate
(:class:`~t3sim.interconnect.link.Link`). Byte statistics count payload.

Homogeneous mode's images (:meth:`Network.elide_image`). Only GPU 0 is simulated; a shadow ``s`` that
mirrors GPU 0 sends ``s + d`` what GPU 0 sends ``d``, at the same instant (rotation symmetry). On a
rotation-invariant network (every route ``(a, b)`` rotated by one GPU is route ``(a + 1, b + 1)``, link by
link, with equal link parameters: a ring, a full mesh), such a send whose route is *pure* changes nothing
GPU 0 sees: no link of it lies on a route from or to GPU 0, nor on a route that shares a link with one of
those (to a fixed point). On a full mesh that is the direct link between two shadows; a switch port never is
(GPU 0's traffic shares it). The send is not simulated: its bytes count as injected and delivered at once, and
each link of its route (an *imaged* link) reports the statistics of its image, the link of GPU 0's route to
``d`` at the same hop, which under the symmetry carried exactly the same packets at the same ticks. A link that
has carried a simulated transfer is never imaged. A simulated transfer routed over an imaged link raises (a
component sending shadow-to-shadow traffic of its own beside the images), and :meth:`Network.check_conserved`
raises unless every imaged link carried no simulated byte and was given, in elided images, exactly the bytes
its image link sent (a mirror that is not the image). A caller never asks for a send whose landing it awaits
(:meth:`Fabric.elide_image <t3sim.dma.engine.Fabric.elide_image>`): that is simulated.

Invariant (:meth:`Network.check_conserved`): after drain, on every link bytes
sent == bytes received, and every byte sent by a GPU arrived at its destination.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import networkx as nx
import simpy

from t3sim.config.system import InterconnectConfig
from t3sim.interconnect.link import DEFAULT_BIN_TICKS, Link
from t3sim.interconnect.topology import build_topology
from t3sim.results.stats import Stats
from t3sim.sim.engine import Component, Engine

OPS = ("store", "update")


@dataclass(frozen=True)
class PacketMeta:
    """What the destination needs to know about a transfer's data.

    Attributes:
        op: ``"store"`` (plain write) or ``"update"`` (near-memory op-and-store, paper Sec. 4.3).
        wg_id, wf_id: producing workgroup/wavefront (T3 tracker key, Sec. 4.2.1); None if not tracked.
        addr: destination byte address of the transfer's first byte (None = not address-mapped).
        tag: free-form label (e.g. collective name, step, chunk) for the receiver.
        port: which receiver at the destination gets the packet (:meth:`Network.set_receiver`); None =
            the GPU's default receiver. Kernels that run at once each listen on their own port.
    """

    op: str = "store"
    wg_id: Optional[int] = None
    wf_id: Optional[int] = None
    addr: Optional[int] = None
    tag: Any = None
    port: Optional[str] = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"packet op must be one of {OPS}, got {self.op!r}")


_NO_META = PacketMeta()  # frozen: one instance serves every send without meta


class Packet:
    """One packet of a transfer. ``offset`` is its first byte within the transfer."""

    __slots__ = ("src", "dst", "nbytes", "offset", "transfer", "hop", "created", "wire", "left")

    def __init__(self, src: int, dst: int, nbytes: int, offset: int, transfer: "Transfer", created: int,
                 wire: Optional[int] = None):
        self.src, self.dst, self.nbytes, self.offset = src, dst, nbytes, offset
        self.wire = nbytes if wire is None else wire  # bytes on the wire: payload + link-protocol headers
        self.transfer = transfer
        self.hop = 0
        self.created = created
        self.left: Optional[Callable[[int], None]] = None  # told the tick its last byte leaves the first link

    @property
    def meta(self) -> PacketMeta:
        return self.transfer.meta

    @property
    def addr(self) -> Optional[int]:
        """Destination byte address of this packet (meta.addr + offset), or None."""
        a = self.transfer.meta.addr
        return None if a is None else a + self.offset

    def __repr__(self) -> str:
        return f"Packet({self.src}->{self.dst} {self.nbytes}B @{self.offset} t{self.transfer.id})"


@dataclass(eq=False)
class Transfer:
    """A send of ``nbytes`` from ``src`` to ``dst``; ``done`` fires when its last packet arrived."""

    id: int
    src: int
    dst: int
    nbytes: int
    meta: PacketMeta
    route: Tuple[Link, ...]
    done: simpy.Event
    packets: int = 0
    arrived_packets: int = 0
    arrived_bytes: int = 0
    start: int = 0
    end: Optional[int] = None


class Network(Component):
    """Links of a topology graph plus static routes and per-GPU delivery callbacks.

    Args:
        engine: the simulation engine.
        ic: interconnect configuration (topology kind, bandwidth, latency, packet size).
        graph: optional prebuilt topology (default: ``build_topology(ic)``); edge attributes
            ``bandwidth_GBps`` and ``latency_ns`` set each link.
        bin_ticks: width of the links' utilisation-over-time bins, ticks.
    """

    def __init__(self, engine: Engine, ic: InterconnectConfig, graph: Optional[nx.DiGraph] = None,
                 bin_ticks: int = DEFAULT_BIN_TICKS):
        super().__init__(engine, "network")
        self.ic = ic
        self.graph = graph if graph is not None else build_topology(ic)
        self.packet_size_B = int(ic.packet_size_B)
        self.header_B, self.max_payload_B = int(ic.packet_header_B), int(ic.max_payload_B)
        self.gpus: List[int] = sorted(v for v in self.graph.nodes if isinstance(v, int))
        self.links: Dict[Tuple[Any, Any], Link] = {}
        buffer_B = int(ic.receive_buffer_B)
        for a, b, attr in sorted(self.graph.edges(data=True), key=lambda e: (str(e[0]), str(e[1]))):
            link = Link(engine, f"{_node_name(a)}_to_{_node_name(b)}", a, b, attr["bandwidth_GBps"],
                        attr["latency_ns"], out=self._arrive, bin_ticks=bin_ticks,
                        header_B=int(ic.packet_header_B), max_payload_B=int(ic.max_payload_B),
                        message_ns=attr.get("message_ns", 0.0), credits_B=buffer_B if isinstance(b, int) else 0)
            self.links[(a, b)] = link
        if self.graph.graph.get("weighted"):  # multinode: the cheapest path by edge weight (inside a node first)
            paths = dict(nx.all_pairs_dijkstra_path(self.graph, weight="weight"))
        else:
            paths = dict(nx.all_pairs_shortest_path(self.graph))
        self.routes: Dict[Tuple[int, int], Tuple[Link, ...]] = {}
        for s in self.gpus:
            for d in self.gpus:
                if s != d:
                    p = paths[s][d]
                    self.routes[(s, d)] = tuple(self.links[(p[i], p[i + 1])] for i in range(len(p) - 1))
        self._receivers: Dict[Tuple[int, Optional[str]], Callable[[Packet], None]] = {}
        self._ports = count()
        self._ids = count()
        self.transfers_open = 0
        self.bytes_injected = {g: 0 for g in self.gpus}
        self.bytes_delivered = {g: 0 for g in self.gpus}
        self._images: Dict[Link, Link] = {}   # imaged link -> its image on a route of GPU 0 (module doc)
        self._imaged_B: Dict[Link, int] = {}  # bytes of the elided sends routed over each imaged link
        self._image_routes: Optional[Dict[Tuple[int, int], Optional[Tuple[Link, ...]]]] = None  # None: not built
        self._impure: set = set()             # links a simulated transfer may use (_impure_links)

    # ------------------------------------------------------------------ API

    def set_receiver(self, gpu: int, callback: Optional[Callable[[Packet], Optional[simpy.Event]]],
                     port: Optional[str] = None) -> None:
        """Call ``callback(packet)`` for every packet arriving at ``gpu`` addressed to ``port`` (``PacketMeta.port``;
        None = the default receiver). ``callback`` None: drop such packets silently. The callback returns the event
        of the packet's memory writes (it holds the receive buffer until then: module doc), or None."""
        if gpu not in self.bytes_injected:
            raise KeyError(f"no GPU {gpu} in the network")
        if callback is None:
            self._receivers.pop((gpu, port), None)
        else:
            self._receivers[(gpu, port)] = callback

    def new_port(self, name: str) -> str:
        """A receiver port name no other kernel of this network uses (``name#k``, in creation order)."""
        return f"{name}#{next(self._ports)}"

    def route(self, src: int, dst: int) -> Tuple[Link, ...]:
        """The links a packet from ``src`` to ``dst`` crosses, in order."""
        try:
            return self.routes[(src, dst)]
        except KeyError:
            raise ValueError(f"no route {src} -> {dst} (GPUs: {self.gpus})") from None

    def hops(self, src: int, dst: int) -> int:
        return len(self.route(src, dst))

    def path_latency_ticks(self, src: int, dst: int) -> int:
        """Sum of the link latencies from ``src`` to ``dst`` (ticks): what a tiny message (a flag) takes."""
        return sum(link.latency_ticks for link in self.route(src, dst))

    def send(self, src: int, dst: int, nbytes: int, meta: Optional[PacketMeta] = None,
             payload_B: Optional[int] = None, left: Optional[Callable[[int], None]] = None) -> simpy.Event:
        """Send ``nbytes`` from GPU ``src`` to GPU ``dst``; return the event fired when all arrived.

        The event's value is the :class:`Transfer`. ``nbytes == 0`` completes immediately.
        ``payload_B``: payload of the link-protocol packets carrying it (default
        ``InterconnectConfig.max_payload_B``, a bulk copy; CU stores pass ``sm_store_payload_B``).
        ``left``: called with the tick the transfer's last byte leaves the first link, once that is known (when
        its last packet starts serialising there: at once, or when the link has credit for it). Not called for
        ``nbytes == 0``.
        """
        return self.send_group([(src, dst, nbytes, meta)], payload_B, left)[0]

    def wire_bytes(self, nbytes: int, payload_B: Optional[int] = None) -> int:
        """Bytes ``nbytes`` of payload occupy on the wire in link-protocol packets of ``payload_B`` (module doc)."""
        h = self.header_B
        if not h or nbytes <= 0:
            return nbytes
        p = self.max_payload_B if payload_B is None else int(payload_B)
        if p <= 0:
            raise ValueError(f"link-protocol payload must be positive, got {p} B")
        return nbytes + -(-nbytes // p) * h

    def send_group(self, sends: Sequence[Tuple[int, int, int, Optional[PacketMeta]]],
                   payload_B: Optional[int] = None, left: Optional[Callable[[int], None]] = None) -> List[simpy.Event]:
        """Start several transfers at once, interleaving their packets round-robin.

        A DMA engine or a collective kernel that feeds several peers (direct
        reduce-scatter over a switch port) streams them concurrently rather
        than one after the other; interleaving models that on a shared first link.
        Returns one event per send, in order. ``payload_B`` as in :meth:`send`; ``left`` as in :meth:`send`, for the
        group's last packet (the last to start on a shared first link).
        """
        env = self.env
        now = env._now
        P = self.packet_size_B
        events: List[simpy.Event] = []
        pending: List[Tuple[Transfer, int]] = []
        for src, dst, nbytes, meta in sends:
            if src == dst:
                raise ValueError(f"send from GPU {src} to itself: local copies do not use the network")
            if nbytes < 0:
                raise ValueError(f"send of {nbytes} B")
            route = self.route(src, dst)
            if self._images and any(link in self._images for link in route):
                raise RuntimeError(f"simulated transfer {src} -> {dst} over an imaged link (homogeneous mode's "
                                   f"elided images, module doc): {[link.name for link in route]}")
            t = Transfer(next(self._ids), src, dst, int(nbytes), meta or _NO_META, route, simpy.Event(env), start=now)
            events.append(t.done)
            if nbytes == 0:
                t.end = now
                t.done.succeed(t)
                continue
            t.packets = -(-t.nbytes // P)
            self.transfers_open += 1
            self.bytes_injected[src] += t.nbytes
            pending.append((t, 0))
        # round-robin packet injection across the group's transfers
        wire_full = self.wire_bytes(P, payload_B) if pending else 0  # every packet but a transfer's last has P bytes
        while pending:
            nxt: List[Tuple[Transfer, int]] = []
            for t, off in pending:
                n = t.nbytes - off
                if n > P:
                    t.route[0].put(Packet(t.src, t.dst, P, off, t, now, wire_full))
                    nxt.append((t, off + P))
                else:
                    p = Packet(t.src, t.dst, n, off, t, now, self.wire_bytes(n, payload_B))
                    if left is not None and not nxt and t is pending[-1][0]:
                        p.left = left  # the group's last packet
                    t.route[0].put(p)
            pending = nxt
        return events

    def elide_image(self, src: int, dst: int, nbytes: int) -> bool:
        """Shadow ``src`` sends ``dst`` the rotation image of what GPU 0 sends ``(dst - src) mod N`` now (the same
        bytes in the same packets). True: the send is elided (module doc: its bytes count as injected and
        delivered now, its links report their images' statistics); False: the caller must send it."""
        images = self._image_route(src, dst)
        if images is None or nbytes <= 0:
            return False
        route = self.routes[(src, dst)]
        if any(link not in self._images and link.packets_sent for link in route):
            return False  # a link that has carried simulated traffic stays simulated
        for link, image in zip(route, images):
            self._images[link] = image
            self._imaged_B[link] = self._imaged_B.get(link, 0) + nbytes
        self.bytes_injected[src] += nbytes
        self.bytes_delivered[dst] += nbytes
        return True

    def _image_route(self, src: int, dst: int) -> Optional[Tuple[Link, ...]]:
        """GPU 0's route to ``dst - src`` if the route ``src -> dst`` may be elided (module doc), else None."""
        if self._image_routes is None:  # built at the first call; not rotation-invariant: every link impure
            n = len(self.gpus)
            ok = self.gpus == list(range(n)) and all(self._rotates(s, d) for s in self.gpus for d in self.gpus if s != d)
            self._impure = self._impure_links() if ok else set(self.links.values())
            self._image_routes = {}
        key = (src, dst)
        if key not in self._image_routes:
            pure = 0 not in key and not any(link in self._impure for link in self.routes[key])
            self._image_routes[key] = self.routes[(0, (dst - src) % len(self.gpus))] if pure else None
        return self._image_routes[key]

    def _impure_links(self) -> set:
        """The links of the routes from and to GPU 0, and of every route that shares a link with one of those
        (to a fixed point): every other link is used only by routes between shadows that avoid all of these."""
        bad = {link for (s, d), r in self.routes.items() if 0 in (s, d) for link in r}
        grew = True
        while grew:
            grew = False
            for r in self.routes.values():
                if any(link in bad for link in r) and not all(link in bad for link in r):
                    bad.update(r)
                    grew = True
        return bad

    def _rotates(self, s: int, d: int) -> bool:
        """Whether route ``(s, d)`` rotated by one GPU is route ``(s + 1, d + 1)``, hop by hop, over links with
        the same parameters (GPU nodes only)."""
        n = len(self.gpus)
        r, q = self.routes[(s, d)], self.routes[((s + 1) % n, (d + 1) % n)]
        return len(r) == len(q) and all(
            isinstance(a.src, int) and isinstance(a.dst, int) and (b.src, b.dst) == ((a.src + 1) % n, (a.dst + 1) % n)
            and (a.bandwidth_Bps, a.wire_Bps, a.latency_ticks, a.message_ticks, a.bin_ticks)
            == (b.bandwidth_Bps, b.wire_Bps, b.latency_ticks, b.message_ticks, b.bin_ticks) for a, b in zip(r, q))

    # ------------------------------------------------------------------ data path

    def _arrive(self, packet: Packet) -> None:
        t = packet.transfer
        hop = packet.hop = packet.hop + 1
        route = t.route
        link = route[hop - 1]
        if hop < len(route):
            route[hop].put(packet)
            if link.credits_B:  # forwarded: its place in this GPU's receive buffer frees as it arrives
                link.release(packet.nbytes)
            return
        nbytes = packet.nbytes
        self.bytes_delivered[packet.dst] += nbytes
        t.arrived_packets += 1
        t.arrived_bytes += nbytes
        rcv = self._receivers.get((packet.dst, t.meta.port))
        written = rcv(packet) if rcv is not None else None
        if link.credits_B:  # landed: it holds the receive buffer until its memory writes are done (module doc)
            if written is None or written.callbacks is None:
                link.release(nbytes)
            else:
                written.callbacks.append(lambda _e, link=link, n=nbytes: link.release(n))
        if t.arrived_packets == t.packets:
            t.end = self.env._now
            self.transfers_open -= 1
            self.progressed()
            t.done.succeed(t)

    # ------------------------------------------------------------------ checks & stats

    def pending(self) -> str:
        return f"{self.transfers_open} transfers in flight" if self.transfers_open else ""

    def check_conserved(self) -> None:
        """Raise ``AssertionError`` unless every link and the network as a whole conserve bytes, and every imaged
        link is its image's exact replica (module doc)."""
        for link in self.links.values():
            link.check_conserved()
        for link, image in self._images.items():
            if link.packets_sent or self._imaged_B[link] != image.bytes_sent:
                raise AssertionError(f"imaged link {link.name}: {link.bytes_sent} B simulated and "
                                     f"{self._imaged_B[link]} B elided, but its image {image.name} sent "
                                     f"{image.bytes_sent} B")
        if sum(self.bytes_injected.values()) != sum(self.bytes_delivered.values()):
            raise AssertionError(f"network injected {sum(self.bytes_injected.values())} B "
                                 f"but delivered {sum(self.bytes_delivered.values())} B")

    def stats(self, elapsed_ticks: Optional[int] = None) -> Stats:
        """``link.<name>.*`` for every link (an imaged one: its image's, module doc) plus per-GPU injected/delivered
        bytes."""
        s = Stats()
        for link in self.links.values():
            s.merge(f"link.{link.name}", self._images.get(link, link).stats(elapsed_ticks))
        for g in self.gpus:
            s.add(f"gpu{g}.bytes_injected", self.bytes_injected[g], "B", "bytes this GPU sent into the network")
            s.add(f"gpu{g}.bytes_delivered", self.bytes_delivered[g], "B", "bytes the network delivered to this GPU")
        return s


def _node_name(v: Any) -> str:
    return f"gpu{v}" if isinstance(v, int) else str(v)  # multinode: "node<k>.nic", "fabric"
