"""The multinode topology and its NIC: routes, and the NIC's bandwidth, latency and message-rate
bounds measured at component level (a source GPU, the NIC path, a sink GPU)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

from t3sim.config import InterconnectConfig, SystemConfig
from t3sim.interconnect.link import serialisation_ticks
from t3sim.interconnect.multinode import FABRIC, nic_name
from t3sim.interconnect.network import Network
from t3sim.sim.clock import ns_to_ticks
from t3sim.sim.engine import Engine


def _net(**kw):
    kw.setdefault("kind", "multinode")
    eng = Engine()
    return eng, Network(eng, InterconnectConfig(**kw))


@pytest.mark.parametrize("node_kind", ["ring", "direct", "switch"])
def test_routes_stay_inside_a_node_and_cross_one_nic_port_between_nodes(node_kind):
    _, net = _net(num_gpus=12, gpus_per_node=4, node_kind=node_kind)
    nics = {nic_name(k) for k in range(3)}
    for s in range(12):
        for d in range(12):
            if s == d:
                continue
            names = [(l.src, l.dst) for l in net.route(s, d)]
            if s // 4 == d // 4:
                assert not any(a in nics or b in nics for a, b in names), (s, d, names)
            else:
                assert names == [(s, nic_name(s // 4)), (nic_name(s // 4), FABRIC), (FABRIC, nic_name(d // 4)),
                                 (nic_name(d // 4), d)]
                assert sum(1 for l in net.route(s, d) if l.message_ticks) == 1  # one NIC send port


def test_single_gpu_nodes_and_one_node():
    _, net = _net(num_gpus=2, gpus_per_node=1)
    assert net.hops(0, 1) == 4
    _, one = _net(num_gpus=4, gpus_per_node=4, node_kind="direct")
    assert all(one.hops(a, b) == 1 for a in range(4) for b in range(4) if a != b)
    assert not any(isinstance(v, str) for v in one.graph.nodes)  # one node: no NIC, no fabric


def test_bulk_transfer_runs_at_the_nic_rate_plus_latency():
    eng, net = _net(num_gpus=2, gpus_per_node=1, nic_bandwidth_GBps=20, nic_latency_ns=700, packet_size_B=4096)
    n = 64
    ev = net.send(0, 1, n * 4096)
    eng.env.run()
    ser = serialisation_ticks(4096, 20 * 10**9)
    # n packets stream over the first link; the last one then crosses 3 more store-and-forward links and the latency
    assert ev.value.end == (n + 3) * ser + ns_to_ticks(700)
    net.check_conserved()


def test_small_message_latency():
    eng, net = _net(num_gpus=2, gpus_per_node=1, nic_bandwidth_GBps=25, nic_latency_ns=600, nic_message_rate_Mps=215)
    ev = net.send(0, 1, 64)
    eng.env.run()
    ser, msg = serialisation_ticks(64, 25 * 10**9), ns_to_ticks(1e3 / 215)
    assert ev.value.end == ser + max(ser, msg) + ns_to_ticks(600) + 2 * ser


@settings(max_examples=25, deadline=None)
@given(k=st.integers(1, 60), rate=st.floats(1.0, 400.0), bw=st.floats(5.0, 50.0), size=st.sampled_from([8, 64, 256]))
def test_message_rate_bounds_many_small_puts(k, rate, bw, size):
    """k puts of one packet each: the NIC send port starts one per max(serialisation, 1/rate); exact finish time."""
    eng, net = _net(num_gpus=2, gpus_per_node=1, nic_bandwidth_GBps=bw, nic_latency_ns=700, nic_message_rate_Mps=rate)
    evs = [net.send(0, 1, size) for _ in range(k)]
    eng.env.run()
    ser, msg = serialisation_ticks(size, round(bw * 1e9)), ns_to_ticks(1e3 / rate)
    slot = max(ser, msg)
    end = max(e.value.end for e in evs)
    # arrivals at the NIC every `ser`, service `slot` >= ser: the port is busy from `ser` on without a gap
    assert end == ser + k * slot + ns_to_ticks(700) + 2 * ser
    assert end >= k * ns_to_ticks(1e3 / rate) - 1  # never more than `rate` messages per second
    send_port = net.links[(nic_name(0), FABRIC)]
    assert send_port.messages_sent == k
    net.check_conserved()


@settings(max_examples=20, deadline=None)
@given(sizes=st.lists(st.integers(1, 40_000), min_size=1, max_size=8), per=st.sampled_from([1, 2, 4]),
       bw=st.floats(5.0, 50.0))
def test_bandwidth_and_latency_lower_bounds(sizes, per, bw):
    """Whatever the transfers from node 0 to node 1: nothing beats the NIC rate or the NIC latency; bytes conserved."""
    eng, net = _net(num_gpus=2 * per, gpus_per_node=per, node_kind="direct", nic_bandwidth_GBps=bw,
                    nic_latency_ns=700)
    evs = [net.send(i % per, per + (i % per), n) for i, n in enumerate(sizes)]
    eng.env.run()
    end = max(e.value.end for e in evs)
    assert end >= serialisation_ticks(sum(sizes), round(bw * 1e9)) + ns_to_ticks(700) - len(sizes)
    assert sum(net.bytes_delivered.values()) == sum(sizes)
    net.check_conserved()


def test_gpus_of_a_node_share_its_nic():
    """Two GPUs of node 0 sending to node 1 at once take about twice as long as one (one NIC port each way)."""
    def run(senders):
        eng, net = _net(num_gpus=4, gpus_per_node=2, node_kind="direct", nic_bandwidth_GBps=20)
        evs = [net.send(s, 2 + s, 1 << 20) for s in senders]
        eng.env.run()
        return max(e.value.end for e in evs)

    one, two = run([0]), run([0, 1])
    assert 1.9 < two / one < 2.05


def test_config_checks():
    with pytest.raises(ValidationError, match="multiple of interconnect.gpus_per_node"):
        SystemConfig(interconnect={"kind": "multinode", "num_gpus": 6, "gpus_per_node": 4})
    with pytest.raises(ValidationError, match="node_kind"):
        InterconnectConfig(kind="multinode", node_kind="multinode")
    with pytest.raises(ValidationError, match="links_per_gpu"):
        SystemConfig(interconnect={"kind": "multinode", "num_gpus": 8, "gpus_per_node": 4, "node_kind": "direct",
                                   "links_per_gpu": 2})
    ic = InterconnectConfig(kind="multinode", num_gpus=8, gpus_per_node=4, node_kind="direct")
    assert ic.num_nodes == 2 and ic.node_of(5) == 1 and ic.gpu_links == 3
    assert InterconnectConfig(kind="ring", num_gpus=8).num_nodes == 1
