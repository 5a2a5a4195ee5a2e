"""The pcie topology (PCIe switch trees under CPU sockets): its routes and their bottlenecks, the shapes it refuses,
and the time a transfer takes over it from the datasheet numbers of configs/systems/a100-pcie-8gpu.yaml."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

from t3sim.config import InterconnectConfig, SystemConfig, load_system
from t3sim.interconnect.link import serialisation_ticks
from t3sim.interconnect.network import Network
from t3sim.interconnect.pcie import root_name, socket_of, switch_name, switch_of
from t3sim.interconnect.topology import build_topology
from t3sim.sim.clock import ns_to_ticks
from tests.conftest import REPO
from t3sim.sim.engine import Engine

PRESET = REPO / "configs/systems/a100-pcie-8gpu.yaml"


def _net(**kw):
    kw.setdefault("kind", "pcie")
    eng = Engine()
    return eng, Network(eng, InterconnectConfig(**kw))


def _nodes(net, s, d):
    r = net.route(s, d)
    return [r[0].src] + [link.dst for link in r]


# ---------------------------------------------------------------- routes (unit)

def test_the_three_kinds_of_route():
    """8 GPUs, 2 sockets, 2 GPUs per switch: same switch, same socket through the root complex, across sockets."""
    _, net = _net(num_gpus=8, sockets=2, gpus_per_switch=2)
    assert _nodes(net, 0, 1) == [0, switch_name(0, 0), 1]
    assert _nodes(net, 0, 3) == [0, switch_name(0, 0), root_name(0), switch_name(0, 1), 3]
    assert _nodes(net, 1, 6) == [1, switch_name(0, 0), root_name(0), root_name(1), switch_name(1, 1), 6]
    assert _nodes(net, 7, 2) == [7, switch_name(1, 1), root_name(1), root_name(0), switch_name(0, 1), 2]


def test_gpus_on_root_ports_and_one_socket():
    _, net = _net(num_gpus=4, sockets=2, gpus_per_switch=1)
    assert _nodes(net, 0, 1) == [0, root_name(0), 1]  # no switch: GPU -> root complex -> GPU
    assert _nodes(net, 0, 2) == [0, root_name(0), root_name(1), 2]
    _, one = _net(num_gpus=4, sockets=1, gpus_per_switch=4)  # one switch: the switch topology's routes
    assert all(_nodes(one, a, b) == [a, switch_name(0, 0), b] for a in range(4) for b in range(4) if a != b)


@settings(max_examples=40, deadline=None)
@given(sockets=st.integers(1, 3), switches=st.integers(1, 3), per=st.integers(1, 4),
       bw=st.floats(5.0, 100.0), sbw=st.floats(5.0, 100.0), lat=st.floats(0, 1000), slat=st.floats(0, 1000))
def test_every_route_by_shape(sockets, switches, per, bw, sbw, lat, slat):
    """Any shape: each route's links, latency and bottleneck follow from where its two GPUs sit."""
    n = sockets * switches * per
    _, net = _net(num_gpus=n, sockets=sockets, gpus_per_switch=per, link_bandwidth_GBps=bw,
                  socket_link_bandwidth_GBps=sbw, link_latency_ns=lat, socket_link_latency_ns=slat)
    ic = net.ic
    tree = 1 if per == 1 else 2  # PCIe links from a GPU up to its root complex
    for s in range(n):
        assert net.graph.out_degree(s) == net.graph.in_degree(s) == ic.gpu_links == 1
        for d in range(n):
            if s == d:
                continue
            route = net.route(s, d)
            same_socket = socket_of(ic, s) == socket_of(ic, d)
            same_switch = same_socket and switch_of(ic, s) == switch_of(ic, d) and per > 1
            pcie_links = 2 if same_switch else 2 * tree
            socket_links = 0 if same_socket else 1
            assert len(route) == pcie_links + socket_links
            assert sum(1 for link in route if isinstance(link.src, str) and isinstance(link.dst, str)
                       and "switch" not in link.src + link.dst) == socket_links
            assert net.path_latency_ticks(s, d) == pcie_links * ns_to_ticks(lat) + socket_links * ns_to_ticks(slat)
            bottleneck = min(link.bandwidth_GBps for link in route)
            assert bottleneck == (bw if same_socket else min(bw, sbw))


# ---------------------------------------------------------------- bad shapes (unit)

@pytest.mark.parametrize("kw, match", [
    ({"num_gpus": 6, "sockets": 4}, "num_gpus=6 is not a multiple of sockets=4"),
    ({"num_gpus": 8, "sockets": 2, "gpus_per_switch": 3}, "the 4 GPUs of a socket .* gpus_per_switch=3"),
    ({"num_gpus": 8, "sockets": 1, "gpus_per_switch": 8, "switch_ports": 4}, "gpus_per_switch=8 exceeds switch_ports=4"),
])
def test_impossible_shapes_are_refused_in_one_line(kw, match):
    with pytest.raises(ValidationError, match=match) as e:
        InterconnectConfig(kind="pcie", **kw)
    assert "\n" not in str(e.value.errors()[0]["msg"])
    with pytest.raises(ValidationError, match=match):  # and from a whole system, as a preset override gives it
        SystemConfig(interconnect={"kind": "pcie", **kw})


def test_other_kinds_ignore_the_socket_fields():
    InterconnectConfig(kind="switch", num_gpus=3, sockets=2, gpus_per_switch=4)  # no error: kind is not pcie


def test_the_preset_builds_two_sockets_of_one_switch():
    ic = load_system(PRESET).interconnect
    g = build_topology(ic)
    assert sorted(v for v in g.nodes if isinstance(v, str)) == sorted(
        [root_name(0), root_name(1), switch_name(0, 0), switch_name(1, 0)])
    assert [socket_of(ic, v) for v in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]


# ---------------------------------------------------------------- transfer times (component)

def _datasheet():
    """PCIe 4.0 x16 per direction (16 GT/s x 16 lanes x 128b/130b) and 3 UPI links at 11.2 GT/s x 2 B, GB/s."""
    return 16 * 16 * 128 / 130 / 8, 3 * 11.2 * 2


def test_the_preset_is_the_datasheet():
    ic = load_system(PRESET).interconnect
    pcie_GBps, upi_GBps = _datasheet()
    # link_bandwidth_GBps is the payload rate of 256 B TLPs with 24 B of overhead: the wire runs at the PCIe rate
    wire = ic.link_bandwidth_GBps * (ic.max_payload_B + ic.packet_header_B) / ic.max_payload_B
    assert wire == pytest.approx(pcie_GBps, rel=1e-3)
    assert ic.socket_link_bandwidth_GBps == pytest.approx(upi_GBps)


@pytest.mark.parametrize("n", [1, 16, 64])
def test_a_cross_socket_transfer_takes_the_datasheet_time(n):
    """n 4 KiB packets from GPU 0 to GPU 4 on the preset: they stream over GPU 0's port at the PCIe wire rate, the
    last one then crosses the switch's upstream port, the UPI links and two more PCIe links store-and-forward, and
    the five hops' latencies are paid once."""
    ic = load_system(PRESET).interconnect
    eng = Engine()
    net = Network(eng, ic)
    ev = net.send(0, 4, n * 4096)
    eng.env.run()
    pcie_GBps, upi_GBps = _datasheet()
    wire_B = 4096 + 4096 // ic.max_payload_B * ic.packet_header_B  # 16 TLPs of 256 B, 24 B overhead each
    # the socket link's rate is a payload rate (its own protocol's overhead is not modelled): 4 KiB at 67.2 GB/s
    pcie_ns, upi_ns = wire_B / pcie_GBps, 4096 / upi_GBps
    expect_ns = (n + 3) * pcie_ns + upi_ns + 4 * ic.link_latency_ns + ic.socket_link_latency_ns
    assert ev.value.end / 1e3 == pytest.approx(expect_ns, rel=1e-3)
    # and exactly, tick for tick, from the links' integer rates
    pcie_link, upi_link = net.links[(0, switch_name(0, 0))], net.links[(root_name(0), root_name(1))]
    s, u = serialisation_ticks(wire_B, pcie_link.wire_Bps), serialisation_ticks(wire_B, upi_link.wire_Bps)
    assert ev.value.end == (n + 3) * s + u + 4 * ns_to_ticks(ic.link_latency_ns) + ns_to_ticks(ic.socket_link_latency_ns)
    net.check_conserved()


def _finish(ic, sends):
    eng = Engine()
    net = Network(eng, ic)
    evs = [net.send(s, d, nbytes) for s, d, nbytes in sends]
    eng.env.run()
    net.check_conserved()
    return max(e.value.end for e in evs), net


def test_gpus_of_a_switch_share_its_upstream_port():
    """Two GPUs of one switch sending to the other socket take twice as long as one (one x16 upstream port), while
    two sending inside the switch do not slow each other."""
    ic = load_system(PRESET).interconnect
    size = 8 << 20
    one, _ = _finish(ic, [(0, 4, size)])
    two, net = _finish(ic, [(0, 4, size), (1, 5, size)])
    assert 1.95 < two / one < 2.05
    assert net.links[(switch_name(0, 0), root_name(0))].bytes_sent == 2 * size
    inside, _ = _finish(ic, [(0, 1, size), (2, 3, size)])
    alone, _ = _finish(ic, [(0, 1, size)])
    assert inside == alone


def test_a_slow_socket_link_is_the_bottleneck():
    """Below the PCIe rate, the socket link sets a cross-socket transfer's time; above it, it changes only its
    latency."""
    base = load_system(PRESET).interconnect
    size = 8 << 20
    fast, _ = _finish(base, [(0, 4, size)])
    slow, _ = _finish(base.model_copy(update={"socket_link_bandwidth_GBps": base.link_bandwidth_GBps / 4}),
                      [(0, 4, size)])
    assert 3.9 < slow / fast < 4.05
    later, _ = _finish(base.model_copy(update={"socket_link_latency_ns": 10_500.0}), [(0, 4, size)])
    assert later - fast == ns_to_ticks(10_000)
