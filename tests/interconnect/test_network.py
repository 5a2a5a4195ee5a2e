"""Network: routing, packetisation, per-packet delivery with metadata, contention, conservation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from t3sim.config import InterconnectConfig
from t3sim.interconnect.link import serialisation_ticks
from t3sim.interconnect.network import Network, PacketMeta
from t3sim.sim.engine import Engine

BPS = 75 * 10**9
LAT = 500_000  # ticks


def _net(**kw):
    eng = Engine()
    return eng, Network(eng, InterconnectConfig(**kw))


def test_ring_routes_are_shortest():
    _, net = _net(kind="ring", num_gpus=8, bidirectional=True)
    assert net.hops(0, 1) == 1 and net.hops(0, 7) == 1 and net.hops(0, 4) == 4 and net.hops(0, 3) == 3
    _, uni = _net(kind="ring", num_gpus=8, bidirectional=False)
    assert uni.hops(0, 7) == 7 and [l.name for l in uni.route(6, 0)] == ["gpu6_to_gpu7", "gpu7_to_gpu0"]
    _, sw = _net(kind="switch", num_gpus=4)
    assert all(sw.hops(a, b) == 2 for a in range(4) for b in range(4) if a != b)
    _, d = _net(kind="direct", num_gpus=4)
    assert all(d.hops(a, b) == 1 for a in range(4) for b in range(4) if a != b)
    assert len(d.links) == 12


def test_send_packetises_and_delivers_with_metadata():
    eng, net = _net(kind="ring", num_gpus=4, packet_size_B=4096)
    got = []
    net.set_receiver(1, got.append)
    meta = PacketMeta(op="update", wg_id=17, wf_id=3, addr=0x1000, tag="rs")
    ev = net.send(0, 1, 10_000, meta)
    eng.env.run()
    assert ev.triggered and ev.value.end == eng.env.now
    assert [p.nbytes for p in got] == [4096, 4096, 1808]
    assert [p.addr for p in got] == [0x1000, 0x1000 + 4096, 0x1000 + 8192]
    assert all(p.meta.op == "update" and p.meta.wg_id == 17 and p.meta.wf_id == 3 for p in got)
    # last packet: three serialisations back to back, then one latency
    assert eng.env.now == 2 * serialisation_ticks(4096, BPS) + serialisation_ticks(1808, BPS) + LAT
    net.check_conserved()
    with pytest.raises(ValueError):
        PacketMeta(op="add")


def test_switch_is_store_and_forward_two_hops():
    eng, net = _net(kind="switch", num_gpus=4, packet_size_B=4096)
    net.send(0, 2, 4096)
    eng.env.run()
    assert eng.env.now == 2 * (serialisation_ticks(4096, BPS) + LAT)


def test_shared_link_contention_serialises_transfers():
    """Two transfers sharing a switch output port take twice as long as one."""
    eng, net = _net(kind="switch", num_gpus=4, packet_size_B=4096)
    size = 4096 * 100
    a = net.send(0, 3, size)
    b = net.send(1, 3, size)
    eng.env.run()
    one_port = serialisation_ticks(4096, BPS) * 100
    # port switch->gpu3 carries both: 200 packets back to back after the first arrives
    assert max(a.value.end, b.value.end) == pytest.approx(LAT + serialisation_ticks(4096, BPS) + 2 * one_port + LAT, abs=10)
    assert net.links[("switch", 3)].bytes_received == 2 * size
    net.check_conserved()


def test_send_group_interleaves_on_shared_port():
    eng, net = _net(kind="switch", num_gpus=4, packet_size_B=1000)
    evs = net.send_group([(0, d, 10_000, None) for d in (1, 2, 3)])
    eng.env.run()
    ends = [e.value.end for e in evs]
    # interleaved: all three finish within one packet time of each other
    assert max(ends) - min(ends) <= 2 * serialisation_ticks(1000, BPS)


def test_zero_and_self_sends():
    eng, net = _net(kind="ring", num_gpus=4)
    ev = net.send(0, 1, 0)
    assert ev.triggered
    with pytest.raises(ValueError):
        net.send(2, 2, 10)
    with pytest.raises(ValueError):
        net.send(0, 9, 10)


def test_stats_names_units():
    eng, net = _net(kind="ring", num_gpus=2)
    net.send(0, 1, 5000)
    eng.env.run()
    s = net.stats(eng.env.now)
    assert s.value("link.gpu0_to_gpu1.bytes_sent") == 5000
    assert s.value("link.gpu1_to_gpu0.bytes_sent") == 0
    assert s["gpu1.bytes_delivered"].unit == "B" and s.value("gpu1.bytes_delivered") == 5000


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(["ring", "direct", "switch"]), n=st.integers(2, 8), bidir=st.booleans(),
       sends=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(0, 50_000)), max_size=25),
       pkt=st.sampled_from([256, 4096]))
def test_conservation_random_traffic(kind, n, bidir, sends, pkt):
    eng, net = _net(kind=kind, num_gpus=n, bidirectional=bidir, packet_size_B=pkt)
    recv = {g: 0 for g in range(n)}
    for g in range(n):
        net.set_receiver(g, lambda p, g=g: recv.__setitem__(g, recv[g] + p.nbytes) or (p.dst == g) or pytest.fail())
    evs = [net.send(s % n, d % n, b) for s, d, b in sends if s % n != d % n]
    eng.env.run()
    assert all(e.triggered for e in evs)
    net.check_conserved()
    for g in range(n):
        assert recv[g] == sum(b for s, d, b in sends if d % n == g and s % n != g)
    # bytes on each link = sum of transfers routed over it
    per_link = {k: 0 for k in net.links}
    for s, d, b in sends:
        if s % n != d % n:
            for l in net.route(s % n, d % n):
                per_link[(l.src, l.dst)] += b
    assert {k: l.bytes_received for k, l in net.links.items()} == per_link
