"""Credit-based flow control on links into a GPU: the receive buffer bounds the landed writes a GPU's memory has not
taken (``interconnect.receive_buffer_B``; :mod:`t3sim.interconnect.link`, :mod:`t3sim.interconnect.network`).

Unit: a link's credit loop in exact ticks (serialisation + 2 x latency + the receiver's hold), against an independent
recurrence. Component: a network whose receiver holds packets (source -> link -> sink), a ring's forwarding hop,
and a fabric writing into a GPU's memory, whose landed-but-unwritten bytes never exceed the buffer. Integration: a
whole run with a one-packet buffer finishes, slower, with the stalls in its statistics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import simpy
from hypothesis import given, settings, strategies as st

from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.config import load_system
from t3sim.config.system import InterconnectConfig
from t3sim.dma.engine import Fabric, Payload
from t3sim.interconnect.link import Link, serialisation_ticks
from t3sim.interconnect.network import Network
from t3sim.sim.engine import Engine
from tests.conftest import REPO


@dataclass
class P:
    nbytes: int
    id: int = 0


def _link(credits_B, bw=100.0, lat=10.0):
    eng = Engine()
    got = []
    link = Link(eng, "l", 0, 1, bw, lat, out=lambda p: got.append((eng.env.now, p)), credits_B=credits_B)
    return eng, link, got


def test_full_buffer_holds_the_next_packet_until_credit_returns():
    """100 GB/s, 10 ns: a 1000 B packet serialises in 10 ns. Two packets of buffer: the third starts when the first's
    credit is back, one latency after the receiver freed it."""
    eng, link, got = _link(2000)
    for i in range(3):
        link.put(P(1000, i))
    assert link.credits == 0 and link.pending().endswith("(0 of 2000 B held by the sender)")
    eng.env.run()
    assert [t for t, _ in got] == [20_000, 30_000]  # the third waits: nothing freed
    with pytest.raises(AssertionError, match="wait for credit"):
        link.check_conserved()
    link.release(1000)  # the receiver frees the first packet's space now (t = 30 ns)
    eng.env.run()
    # credit back at 40 ns; the third serialises 40-50 ns, arrives at 60 ns
    assert [t for t, _ in got] == [20_000, 30_000, 60_000]
    link.release(1000)
    link.release(1000)
    eng.env.run()
    link.check_conserved()
    s = link.stats()
    assert s.value("credit_stalled_packets") == 1
    assert s.value("credit_wait_ns") == pytest.approx(40.0)
    assert s.value("credit_idle_ns") == pytest.approx(20.0)  # the wire was free from 20 ns, the credit came at 40
    assert s.value("max_queue_depth") == 3
    assert s.value("peak_credits_used_B") == 2000
    assert s.value("mean_queue_delay_ns") == pytest.approx((0 + 10 + 40) / 3)


def test_packet_larger_than_the_buffer_is_refused():
    _eng, link, _got = _link(512)
    with pytest.raises(ValueError, match="exceeds the receiving end's 512 B buffer"):
        link.put(P(1000))


def test_no_credits_is_the_unbounded_link():
    eng, link, got = _link(0)
    for i in range(50):
        link.put(P(1000, i))
    link.release(1000)  # no-op without flow control
    eng.env.run()
    assert got[-1][0] == 50 * 10_000 + 10_000
    assert "receive_buffer_B" not in link.stats()


def _recurrence(n, k, ser, lat, hold):
    """Independent model: packet i starts once the wire is free and (i >= k) packet i-k's credit is back, which is
    its arrival + ``hold`` + one latency; it arrives ``ser + lat`` after it starts."""
    arrive, busy = [], 0
    for i in range(n):
        ready = 0 if i < k else arrive[i - k] + hold + lat
        start = max(busy, ready)
        busy = start + ser
        arrive.append(busy + lat)
    return arrive


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), k=st.integers(1, 6), lat_ns=st.integers(0, 300), hold_ns=st.integers(0, 500))
def test_credit_loop_matches_recurrence(n, k, lat_ns, hold_ns):
    """The receiver frees each packet ``hold`` after it arrives: arrivals follow the credit-loop recurrence exactly."""
    eng = Engine()
    got = []
    link = None

    def out(p):
        got.append(eng.env.now)
        eng.env.timeout(hold_ns * 1000).callbacks.append(lambda _e: link.release(p.nbytes))

    link = Link(eng, "l", 0, 1, 100.0, lat_ns, out=out, credits_B=k * 1000)
    for i in range(n):
        link.put(P(1000, i))
    eng.env.run()
    assert got == _recurrence(n, k, serialisation_ticks(1000, 100 * 10**9), lat_ns * 1000, hold_ns * 1000)
    link.check_conserved()


def test_left_reports_the_serialisation_end_once_the_packet_starts():
    eng, link, _got = _link(1000)
    ends = []
    a, b = P(1000, 0), P(1000, 1)
    b.left = ends.append
    link.put(a)
    link.put(b)
    assert ends == []  # b waits for credit
    eng.env.run()
    link.release(1000)
    eng.env.run()
    assert ends == [20_000 + 10_000 + 10_000]  # a arrives at 20 ns, its credit is back at 30, b serialises 30-40 ns
    assert b.left is None


# ---------------------------------------------------------------------------------------------------- network

def _net(**kw):
    eng = Engine()
    return eng, Network(eng, InterconnectConfig(**kw))


def test_links_into_gpus_only_carry_credits():
    _eng, net = _net(kind="switch", num_gpus=4, receive_buffer_B=8192)
    for (a, b), link in net.links.items():
        assert link.credits_B == (8192 if isinstance(b, int) else 0), link.name


def test_receiver_holds_the_buffer_until_its_writes_are_done():
    """The receiver returns an event per packet: the link sends on only as the events fire (source -> link -> sink)."""
    eng, net = _net(kind="ring", num_gpus=2, link_bandwidth_GBps=100.0, link_latency_ns=10.0, packet_size_B=1000,
                    receive_buffer_B=2000)
    env = eng.env
    writes = []

    def rcv(packet):
        ev = env.event()
        writes.append((env.now, ev))
        return ev

    net.set_receiver(1, rcv)
    done = net.send(0, 1, 5000)
    env.run()
    assert len(writes) == 2 and not done.triggered  # two packets landed, three wait at the sender
    assert "waiting for credit" in net.links[(0, 1)].pending()
    writes[0][1].succeed()  # the first packet's writes are done at t = 30 ns
    env.run()
    assert len(writes) == 3 and writes[2][0] == 30_000 + 10_000 + 10_000 + 10_000
    for _t, ev in writes:
        if not ev.triggered:
            ev.succeed()
    while not done.triggered:
        env.run()
        for _t, ev in writes:
            if not ev.triggered:
                ev.succeed()
    env.run()
    net.check_conserved()


def test_send_left_tells_when_the_last_packet_left_the_first_link():
    """``Network.send(left=)`` is told once, with the serialisation end of the transfer's last packet on its first
    link: at once when the link has credit, or when the credit for it is back."""
    eng, net = _net(kind="ring", num_gpus=2, link_bandwidth_GBps=100.0, link_latency_ns=10.0, packet_size_B=1000,
                    receive_buffer_B=2000)
    held = []
    net.set_receiver(1, lambda p: held.append(eng.env.event()) or held[-1])
    ends = []
    net.send(0, 1, 2000, left=ends.append)
    assert ends == [20_000]  # two packets, both with credit: the second's last byte leaves at 20 ns
    net.send(0, 1, 1000, left=ends.append)
    eng.env.run()
    assert ends == [20_000]  # the third waits: GPU 1 holds both earlier packets
    held[0].succeed()        # at 30 ns; the credit is back at 40 ns, the packet leaves at 50 ns
    eng.env.run()
    assert ends == [20_000, 50_000]


def test_forwarding_hop_frees_the_buffer_on_arrival():
    """A ring's intermediate GPU forwards: its incoming link's credit returns as the packet arrives, while the last
    hop's waits for the destination's writes."""
    eng, net = _net(kind="ring", num_gpus=4, bidirectional=False, link_bandwidth_GBps=100.0, link_latency_ns=10.0,
                    packet_size_B=1000, receive_buffer_B=1000)
    held = []
    net.set_receiver(2, lambda p: held.append(eng.env.event()) or held[-1])
    net.send(0, 2, 3000)
    eng.env.run()
    first, last = net.links[(0, 1)], net.links[(1, 2)]
    assert len(held) == 1
    assert first.credits + first.credits_returning == 1000 and first.packets_sent == 3  # each freed on arrival at GPU 1
    assert last.credits + last.credits_returning == 0 and last.packets_sent == 1  # GPU 2 holds the first; two wait
    assert last.pending().startswith("2 packets waiting for credit")


def _hier_fabric(buffer_B):
    system = load_system(REPO / "configs/systems/h200-4gpu.yaml",
                         [f"interconnect.receive_buffer_B={buffer_B}", "interconnect.num_gpus=2",
                          # a link faster than one GPU's HBM takes writes, with no latency: only the buffer holds it
                          "interconnect.link_bandwidth_GBps=8000", "interconnect.link_latency_ns=0"])
    eng = Engine()
    net = Network(eng, system.interconnect)
    hiers = {g: MemoryHierarchy(eng.env, system) for g in (0, 1)}
    return eng, net, hiers, Fabric(eng, net, hiers)


def test_landed_but_unwritten_bytes_never_exceed_the_buffer():
    """Four GPU 0 -> GPU 1 payloads of 1 MiB at once over a link faster than the HBM: the bytes GPU 1's memory has
    been given and not yet written stay within one receive buffer, and every payload lands (component: fabric ->
    link -> memory). Freeing the buffer on arrival instead lets them pile up past it."""
    buffer_B = 64 * 1024
    eng, net, hiers, fab = _hier_fabric(buffer_B)
    h1 = hiers[1]
    out, most = [0], [0]
    orig = h1.write

    def counted(addrs, *a, **kw):
        ev = orig(addrs, *a, **kw)
        out[0] += REQ_B * len(addrs)
        most[0] = max(most[0], out[0])
        ev.callbacks.insert(0, lambda _e, n=REQ_B * len(addrs): out.__setitem__(0, out[0] - n))
        return ev

    h1.write = counted
    n = (1 << 20) // REQ_B
    landed = []
    for j in range(4):
        pl = Payload(np.arange(j * n, (j + 1) * n, dtype=np.int64) * REQ_B, None, None, "store")
        pl.then = landed.append
        fab.send(0, 1, pl)
    eng.env.run()
    assert len(landed) == 4 and fab.landed_B == 4 << 20
    assert 0 < most[0] <= buffer_B
    link = net.route(0, 1)[-1]
    assert link.peak_credits_used_B == buffer_B and link.credit_stalled_packets > 0
    net.check_conserved()


def test_bad_buffer_is_refused_with_the_field_named():
    from t3sim.errors import InputError
    with pytest.raises(InputError, match="receive_buffer_B=1024 is smaller than one packet"):
        load_system(REPO / "configs/systems/h200-4gpu.yaml", ["interconnect.receive_buffer_B=1024"])


# ---------------------------------------------------------------------------------------------------- whole runs

def _run(*extra, base=("scheme.kind=t3",)):
    from t3sim.config import load_experiment
    from t3sim.exec.dispatch import simulate
    from tests.config.field_recipes import TINY
    exp = load_experiment(REPO / "configs/experiments/default.yaml", list(TINY) + list(base) + list(extra))
    return simulate(exp)


def test_whole_run_with_a_one_packet_buffer_finishes_slower_and_reports_its_stalls():
    """T3 on the tiny OP sub-layer (2 GPUs, Table 1 links of 500 ns): a one-packet buffer costs each packet a credit
    round trip, so the fused reduce-scatter's link sits idle, and the run still finishes (no deadlock taken for
    completion: the run checks every link's conservation, credits included)."""
    wide, narrow = _run(), _run("system.interconnect.receive_buffer_B=4096")
    t_wide, t_narrow = wide.summary["total_us"], narrow.summary["total_us"]
    assert t_narrow > t_wide
    s = narrow.stats
    link = "network.link.gpu0_to_gpu1"
    assert s.value(f"{link}.receive_buffer_B") == 4096
    assert s.value(f"{link}.peak_credits_used_B") == 4096
    assert s.value(f"{link}.credit_idle_ns") > 0
    assert wide.stats.value(f"{link}.credit_idle_ns") == 0  # the preset's buffer never holds this link back


def test_nccl_ctas_wait_for_their_stores_to_leave_a_link_without_credit():
    """NCCL's kernel moves a CTA on once its stores have left the GPU's link (``Network.send(left=)``): with a
    one-packet buffer they leave a credit round trip apart, so its reduce-scatter and all-gather take longer, and the
    run still finishes with every credit accounted for."""
    nccl = ("scheme.kind=sequential", "system.collective.protocol=nccl_simple", "system.collective.cus=2")
    wide, narrow = _run(base=nccl), _run("system.interconnect.receive_buffer_B=4096", base=nccl)
    assert narrow.summary["rs_us"] > wide.summary["rs_us"] and narrow.summary["ag_us"] > wide.summary["ag_us"]
    assert narrow.stats.value("network.link.gpu0_to_gpu1.credit_idle_ns") > 0
