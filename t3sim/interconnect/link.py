"""One direction of one physical link: FIFO serialisation + fixed latency (ns.py style).

A :class:`Link` accepts packets with :meth:`Link.put` and hands each one, after
it has been serialised onto the wire and has crossed it, to ``link.out``
(a callable taking the packet; the :class:`~t3sim.interconnect.network.Network`
points it at the next hop or at the destination GPU).

Timing model (all integer ticks, 1 tick = 1 ps; see :mod:`t3sim.sim.clock`):

* serialisation of a packet of ``b`` bytes takes
  ``ser(b) = ceil(b * 10**12 / bandwidth_Bps)`` ticks, with the bandwidth held
  as an integer number of bytes/s (``round(bandwidth_GBps * 1e9)``); the ceil
  over-charges each packet by less than one tick (< 2e-5 relative at 4 KiB and
  75 GB/s), never accumulates float error;
* packets serialise one after another in arrival (``put``) order: a packet put
  at time ``t`` starts at ``max(t, busy_until)``; queueing is exact FIFO;
* credit-based flow control (``credits_B`` > 0, the receiving end's buffer): a packet starts serialising only
  when the link holds credit for its payload bytes, and takes that credit as it starts; the receiving end frees
  its buffer with :meth:`Link.release` and the credit is back at the sender ``latency`` ticks later (the credit
  travels back over the wire). Packets without credit wait, in FIFO order, behind the one at the head. The credit
  round trip is a packet's serialisation + 2 x ``latency`` + the time the receiver holds it, so a buffer smaller
  than ``bandwidth x round trip`` slows the link even when the receiver is idle (W. J. Dally and B. Towles,
  *Principles and Practices of Interconnection Networks*, Sec. 13.3: credit-based flow control).
  ``credits_B = 0`` (the default): no flow control, the receiving end accepts every packet;
* a packet is delivered ``latency`` ticks after its last byte left the sender
  (store-and-forward: a switch forwards a packet only once it fully arrived);
* link-protocol overhead (``InterconnectConfig.packet_header_B``): a packet may
  carry a ``wire`` byte count (payload + protocol headers, set by the
  :class:`~t3sim.interconnect.network.Network`); it is serialised at the wire
  rate ``bandwidth x (max_payload_B + header_B) / max_payload_B`` (the configured
  bandwidth is the payload rate of full-size protocol packets). With
  ``header_B = 0`` (the default) wire bytes are payload bytes and the wire rate is
  the configured bandwidth, exactly;
* message rate (a NIC's, ``message_ns`` > 0): the first packet of a message (a packet whose ``offset``
  attribute is 0: the first packet of a network transfer, i.e. one RDMA put) holds the wire for at least
  ``message_ns``, so ``k`` single-packet messages take at least ``k x message_ns`` and a link never starts
  more than ``1 / message_ns`` messages per ns; later packets of a message pay bandwidth only.
  ``message_ns = 0`` (the default, every GPU-to-GPU link) changes nothing.

Because the queue is FIFO and service is deterministic, the departure time is
known when the packet starts (at ``put`` when it has credit), so each packet costs exactly one simpy event (its
delivery), not a process; a packet that waits for credit starts when the credit it needs is back (one more event,
scheduled only while a packet waits: credit returns are otherwise absorbed lazily at the next ``put``). A packet
whose ``left`` attribute is a callable is told the tick its last byte leaves (its serialisation end) as it starts,
and the attribute is cleared (so only its first link tells).

Statistics (:meth:`Link.stats`): bytes/packets sent (accepted by the link) and
received (delivered at the far end), busy ticks, utilisation, peak queue depth,
mean queueing delay and, per time bin of ``bin_ticks``, the bytes that finished
serialisation and the busy ticks in that bin (utilisation over time).

Invariant: after the network drained (no packet in flight),
``bytes_sent == bytes_received`` and ``packets_sent == packets_received``, no packet waits for credit and
every credit is back or on its way back (:meth:`Link.check_conserved`; a run may end before the last credits
reach the sender). Bytes and packets sent count packets as they start.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Deque, List, Optional, Tuple

from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_NS, TICKS_PER_US, ns_to_ticks
from t3sim.sim.engine import Component, Engine, call_at

_TICKS_PER_S = 10**12

#: Default width of one utilisation-over-time bin: 1 us.
DEFAULT_BIN_TICKS = TICKS_PER_US


def bandwidth_to_Bps(bandwidth_GBps: float) -> int:
    """GB/s (10**9 B/s, config units) -> integer bytes per second (> 0)."""
    bps = int(round(bandwidth_GBps * 1e9))
    if bps <= 0:
        raise ValueError(f"link bandwidth must be positive, got {bandwidth_GBps} GB/s")
    return bps


def serialisation_ticks(nbytes: int, bandwidth_Bps: int) -> int:
    """Ticks to put ``nbytes`` on a wire of ``bandwidth_Bps`` bytes/s (exact integer ceil)."""
    return -((-nbytes * _TICKS_PER_S) // bandwidth_Bps)


class Link(Component):
    """A unidirectional link ``src -> dst`` of fixed bandwidth and latency.

    Args:
        engine: the simulation engine.
        name: statistic/diagnostic name (e.g. ``"gpu0_to_gpu1"``).
        src, dst: the graph nodes it connects (GPU ids or ``"switch"``).
        bandwidth_GBps: bandwidth of this direction, 10**9 B/s.
        latency_ns: one-way latency (propagation + fixed pipeline), ns.
        out: callable receiving each delivered packet (may be set later).
        bin_ticks: width of a utilisation-over-time bin, ticks.
        header_B, max_payload_B: link-protocol header bytes per protocol packet and the payload of a
            full-size one (module doc); ``header_B = 0`` serialises payload bytes at ``bandwidth_GBps``.
        credits_B: payload bytes the receiving end buffers (credit-based flow control, module doc); 0: none.

    A packet is any object with an integer ``nbytes`` attribute (> 0) and, optionally, an integer
    ``wire`` attribute (bytes on the wire, >= ``nbytes``; default ``nbytes``).
    """

    def __init__(self, engine: Engine, name: str, src: Any, dst: Any, bandwidth_GBps: float,
                 latency_ns: float, out: Optional[Callable[[Any], None]] = None,
                 bin_ticks: int = DEFAULT_BIN_TICKS, header_B: int = 0, max_payload_B: int = 256,
                 message_ns: float = 0.0, credits_B: int = 0):
        super().__init__(engine, name)
        if latency_ns < 0:
            raise ValueError(f"{name}: latency must be >= 0 ns, got {latency_ns}")
        if bin_ticks <= 0:
            raise ValueError(f"{name}: bin_ticks must be positive")
        if header_B < 0 or max_payload_B <= 0:
            raise ValueError(f"{name}: need header_B >= 0 and max_payload_B > 0, got {header_B}, {max_payload_B}")
        self.src, self.dst = src, dst
        self.bandwidth_GBps = float(bandwidth_GBps)
        self.bandwidth_Bps = bandwidth_to_Bps(bandwidth_GBps)
        # wire rate: the configured payload rate scaled by full-size packets' (payload + header) / payload
        self.wire_Bps = self.bandwidth_Bps * (max_payload_B + header_B) // max_payload_B
        self.wire_bytes_sent = 0
        self.latency_ticks = ns_to_ticks(latency_ns)
        if message_ns < 0:
            raise ValueError(f"{name}: message_ns must be >= 0, got {message_ns}")
        self.message_ticks = ns_to_ticks(message_ns)  # minimum wire time of a message's first packet (module doc)
        self.messages_sent = 0
        self.out: Callable[[Any], None] = out if out is not None else self._no_out
        self.bin_ticks = int(bin_ticks)
        self.busy_until = 0          # tick at which the wire frees up
        self.bytes_sent = 0
        self.bytes_received = 0
        self.packets_sent = 0
        self.packets_received = 0
        self.busy_ticks = 0
        self.queue_delay_ticks = 0   # sum over packets of (start - put time)
        self.max_queue_depth = 0     # packets accepted but not yet fully serialised
        self._departures: Deque[int] = deque()  # serialisation end ticks of queued packets (FIFO)
        self.bin_bytes: List[int] = []
        self.bin_busy: List[int] = []
        self.first_put: Optional[int] = None
        self.last_delivery = 0
        if credits_B < 0:
            raise ValueError(f"{name}: credits_B must be >= 0, got {credits_B}")
        self.credits_B = int(credits_B)   # the receiving end's buffer (0: no flow control)
        self.credits = self.credits_B     # credit the sender holds now, B
        self._returns: Deque[Tuple[int, int]] = deque()  # (tick it is back, B) of credit on its way back, in tick order
        self._wake_pending = False        # an event is scheduled at the earliest return (a packet waits for it)
        self._waiting: Deque[Tuple[Any, int]] = deque()  # (packet, put tick) waiting for credit, FIFO
        self.credit_wait_ticks = 0        # sum over packets of the time they waited for credit
        self.credit_idle_ticks = 0        # time the wire sat idle while a packet waited for credit
        self.credit_stalled_packets = 0   # packets that found too little credit at put
        self.peak_credits_used_B = 0      # most of the receiving end's buffer in use (credits out) at once

    # ------------------------------------------------------------------ data path

    def _no_out(self, packet: Any) -> None:
        raise RuntimeError(f"{self.name}: packet delivered but link.out is not connected")

    def put(self, packet: Any) -> Optional[int]:
        """Enqueue ``packet``; return the tick at which it will be delivered to ``out``, or None while it waits for
        credit (module doc).

        The delivery is one heap entry (:func:`~t3sim.sim.engine.call_at`): the key ``env.timeout(arrive - now,
        packet)`` would get, so the same event order, without the ``Timeout`` object.
        """
        nbytes = packet.nbytes
        if nbytes <= 0:
            raise ValueError(f"{self.name}: packet of {nbytes} B")
        now = self.env._now
        if self.first_put is None:
            self.first_put = now
        if self.credits_B:
            if nbytes > self.credits_B:
                raise ValueError(f"{self.name}: packet of {nbytes} B exceeds the receiving end's "
                                 f"{self.credits_B} B buffer: it could never be sent")
            if self._returns:
                self._absorb(now)
            if self._waiting or self.credits < nbytes:
                self._waiting.append((packet, now))
                self.credit_stalled_packets += 1
                self._note_depth(now)
                if not self._wake_pending and self._returns:
                    self._wake_at(self._returns[0][0])
                return None
            self._take(nbytes)
        return self._start(packet, now, now)

    def release(self, nbytes: int) -> None:
        """The receiving end freed ``nbytes`` of its buffer (a packet it held): the credit is back at the sender one
        link latency later, and packets waiting for it start then (module doc). No-op without flow control.

        Returns are absorbed lazily (:meth:`_absorb`): a credit on its way back costs an event only while a packet
        waits for it, so a link whose buffer never fills schedules nothing beyond its deliveries."""
        if not self.credits_B:
            return
        if not self.latency_ticks:
            self.credits += nbytes
            self._start_waiting(self.env._now)
            return
        self._returns.append((self.env._now + self.latency_ticks, nbytes))
        if self._waiting and not self._wake_pending:
            self._wake_at(self._returns[0][0])

    def _absorb(self, now: int) -> None:
        """Credit whose return tick has come is back at the sender."""
        returns = self._returns
        while returns and returns[0][0] <= now:
            self.credits += returns.popleft()[1]
        if self.credits > self.credits_B:
            raise AssertionError(f"{self.name}: {self.credits} B of credit, more than the {self.credits_B} B buffer")

    def _wake_at(self, tick: int) -> None:
        self._wake_pending = True
        call_at(self.env, tick, self._wake, None)

    def _wake(self, _ev) -> None:
        """The earliest credit a waiting packet needs is back: start what it allows, and wait for the next return."""
        self._wake_pending = False
        now = self.env._now
        self._absorb(now)
        self._start_waiting(now)
        if self._waiting and self._returns:
            self._wake_at(self._returns[0][0])
        self.progressed()

    def _start_waiting(self, now: int) -> None:
        """Start the waiting packets, in order, while the credit covers the one at the head."""
        waiting = self._waiting
        while waiting and self.credits >= waiting[0][0].nbytes:
            packet, put_tick = waiting.popleft()
            self._take(packet.nbytes)
            self.credit_wait_ticks += now - put_tick
            free = self.busy_until if self.busy_until > put_tick else put_tick  # when the wire could have taken it
            if now > free:
                self.credit_idle_ticks += now - free
            self._start(packet, put_tick, now)

    def _note_depth(self, now: int) -> None:
        """Queue depth = packets whose serialisation has not ended by ``now`` + those waiting for credit."""
        deps = self._departures
        while deps and deps[0] <= now:
            deps.popleft()
        depth = len(deps) + len(self._waiting)
        if depth > self.max_queue_depth:
            self.max_queue_depth = depth

    def _take(self, nbytes: int) -> None:
        self.credits -= nbytes
        used = self.credits_B - self.credits
        if used > self.peak_credits_used_B:
            self.peak_credits_used_B = used

    def _start(self, packet: Any, put_tick: int, now: int) -> int:
        """Serialise ``packet`` (put at ``put_tick``, free to start at ``now``) behind the wire's earlier packets."""
        nbytes = packet.nbytes
        start = self.busy_until if self.busy_until > now else now
        wire = getattr(packet, "wire", nbytes)
        self.wire_bytes_sent += wire
        ser = serialisation_ticks(wire, self.wire_Bps)
        if self.message_ticks and getattr(packet, "offset", 0) == 0:
            self.messages_sent += 1
            if ser < self.message_ticks:
                ser = self.message_ticks
        end = start + ser
        self.busy_until = end
        self.bytes_sent += nbytes
        self.packets_sent += 1
        self.busy_ticks += ser
        self.queue_delay_ticks += start - put_tick
        self._account_bins(start, end, nbytes)
        self._departures.append(end)
        self._note_depth(now)
        arrive = end + self.latency_ticks
        call_at(self.env, arrive, self._deliver, packet)
        left = getattr(packet, "left", None)
        if left is not None:  # the first link only: later hops see it cleared
            packet.left = None
            left(end)
        return arrive

    def _deliver(self, ev) -> None:
        packet = ev._value
        self.bytes_received += packet.nbytes
        self.packets_received += 1
        self.last_delivery = self.env._now
        self.progressed()
        self.out(packet)

    def _account_bins(self, start: int, end: int, nbytes: int) -> None:
        """Add ``nbytes`` to the bin holding tick ``end - 1`` and ``[start, end)`` to the busy bins."""
        w = self.bin_ticks
        busy = self.bin_busy
        last = (end - 1) // w
        if last >= len(busy):
            grow = last + 1 - len(busy)
            busy.extend([0] * grow)
            self.bin_bytes.extend([0] * grow)
        self.bin_bytes[last] += nbytes
        b = start // w
        if b == last:
            busy[b] += end - start
            return
        t = start
        while t < end:
            b = t // w
            nxt = min(end, (b + 1) * w)
            busy[b] += nxt - t
            t = nxt

    # ------------------------------------------------------------------ queries

    @property
    def credits_returning(self) -> int:
        """Credit the receiving end has freed that is still on its way back to the sender, B."""
        return sum(n for _, n in self._returns)

    @property
    def in_flight_packets(self) -> int:
        return self.packets_sent - self.packets_received

    def pending(self) -> str:
        n, w = self.in_flight_packets, len(self._waiting)
        parts = [f"{n} packets in flight ({self.bytes_sent - self.bytes_received} B)"] if n else []
        if w:
            parts.append(f"{w} packets waiting for credit ({self.credits} of {self.credits_B} B held by the sender)")
        return "; ".join(parts)

    def check_conserved(self) -> None:
        """Raise ``AssertionError`` unless every byte sent was received (call after drain)."""
        if self.bytes_sent != self.bytes_received or self.packets_sent != self.packets_received:
            raise AssertionError(
                f"{self.name}: sent {self.bytes_sent} B/{self.packets_sent} pkts, "
                f"received {self.bytes_received} B/{self.packets_received} pkts")
        held = self.credits_B - self.credits - self.credits_returning
        if self._waiting or held:
            raise AssertionError(f"{self.name}: {len(self._waiting)} packets wait for credit and {held} B of the "
                                 "receiving end's buffer is not freed")

    def utilisation(self, elapsed_ticks: Optional[int] = None) -> float:
        """Busy fraction over ``[0, elapsed_ticks]`` (default: up to now)."""
        t = self.env.now if elapsed_ticks is None else elapsed_ticks
        return self.busy_ticks / t if t > 0 else 0.0

    def utilisation_over_time(self) -> List[float]:
        """Busy fraction of each bin of ``bin_ticks`` (the last bin may be partial)."""
        return [b / self.bin_ticks for b in self.bin_busy]

    def stats(self, elapsed_ticks: Optional[int] = None) -> Stats:
        """Per-link statistics (names relative to the link)."""
        s = Stats()
        s.add("bytes_sent", self.bytes_sent, "B", "bytes accepted by the link for transmission")
        s.add("bytes_received", self.bytes_received, "B", "bytes delivered at the far end")
        s.add("packets_sent", self.packets_sent, "count", "packets accepted by the link")
        s.add("packets_received", self.packets_received, "count", "packets delivered at the far end")
        s.add("busy_ns", self.busy_ticks / TICKS_PER_NS, "ns", "time the wire was serialising packets")
        s.add("utilisation", self.utilisation(elapsed_ticks), "ratio", "busy time / elapsed time")
        s.add("bandwidth_GBps", self.bandwidth_GBps, "GBps", "configured bandwidth of this direction")
        s.add("max_queue_depth", self.max_queue_depth, "count", "peak packets waiting or serialising")
        if self.credits_B:
            s.add("receive_buffer_B", self.credits_B, "B", "the receiving end's buffer: credit for payload bytes the "
                  "sender may have out (credit-based flow control)")
            s.add("peak_credits_used_B", self.peak_credits_used_B, "B", "most of the receiving end's buffer in use at "
                  "once (credit taken, not yet back at the sender)")
            s.add("credit_stalled_packets", self.credit_stalled_packets, "count",
                  "packets that found too little credit when put, and waited for the receiving end to free its buffer")
            s.add("credit_wait_ns", self.credit_wait_ticks / TICKS_PER_NS, "ns",
                  "time packets waited for credit, summed over packets (the wire may have been busy meanwhile)")
            s.add("credit_idle_ns", self.credit_idle_ticks / TICKS_PER_NS, "ns",
                  "time the wire sat idle while a packet waited for credit: what the full receive buffer cost the link")
        if self.message_ticks:
            s.add("messages_sent", self.messages_sent, "count", "messages (first packets of transfers) this NIC port started")
        mean_q = self.queue_delay_ticks / self.packets_sent / TICKS_PER_NS if self.packets_sent else 0.0
        s.add("mean_queue_delay_ns", mean_q, "ns", "mean time a packet waited before serialisation")
        s.add("bin_ns", self.bin_ticks / TICKS_PER_NS, "ns", "width of one over-time bin")
        s.add("bytes_over_time", list(self.bin_bytes), "B", "bytes that finished serialisation in each bin")
        s.add("utilisation_over_time", self.utilisation_over_time(), "ratio", "busy fraction of each bin")
        return s
