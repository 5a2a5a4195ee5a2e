"""8-GPU reduce-scatters on configs/systems/a100-pcie-8gpu.yaml (two PCIe switch trees under two CPU sockets) against
the same preset with its 8 GPUs under one PCIe switch (``interconnect.kind: switch``), each against the analytical
bound of :func:`~t3sim.collectives.analytic.plan_lower_bound` on the topology's graph.

* All-to-all traffic (the direct algorithm: every GPU sends a block to each peer, as FLUX's and Transformer Engine's
  peer copies do): each switch's one upstream port carries the 4 x 4 blocks its GPUs send to the other socket,
  against the 7 blocks of a GPU's own port, so the two-socket node takes 16/7 as long.
* NCCL's ring (the preset's collective): one ring direction, so no link carries more than a GPU's port does (the
  same bandwidth bound on both graphs); the socket crossings add latency only, which shows at small sizes.
"""

from __future__ import annotations

import pytest

from t3sim.collectives.analytic import plan_lower_bound
from t3sim.collectives.gpu_run import simulate_collective_on_gpus
from t3sim.collectives.runner import plan_for_system
from t3sim.config import load_system
from t3sim.interconnect.topology import build_topology
from tests.conftest import REPO

PRESET = REPO / "configs/systems/a100-pcie-8gpu.yaml"
ONE_SWITCH = ("interconnect.kind=switch",)


def _rs(overrides, size_B, mode="homogeneous"):
    system = load_system(PRESET, overrides)
    n = size_B // 2
    run, _ = simulate_collective_on_gpus(system, "reduce_scatter", n, 2, mode=mode)
    bound = plan_lower_bound(plan_for_system(system, "reduce_scatter", n, 2), build_topology(system.interconnect),
                             system.collective.latency.startup_ns("reduce_scatter"))
    return run.duration_ns, bound, system


def test_all_to_all_reduce_scatter_is_bound_by_the_switch_upstream_ports():
    direct = ("collective.protocol=steps", "collective.algorithm=direct", "collective.cus=24")
    size = 16 << 20
    t_pcie, b_pcie, system = _rs(direct, size)
    t_one, b_one, _ = _rs(direct + ONE_SWITCH, size)
    bw = system.interconnect.link_bandwidth_GBps
    # the bounds' bandwidth terms: 16 blocks of S/8 through an upstream port, 7 through a GPU's port
    assert b_pcie.bandwidth_ns == pytest.approx(16 * size / 8 / bw)
    assert b_one.bandwidth_ns == pytest.approx(7 * size / 8 / bw)
    assert b_pcie.total_ns <= t_pcie <= 1.05 * b_pcie.total_ns
    assert b_one.total_ns <= t_one <= 1.05 * b_one.total_ns
    launch = system.collective.latency.startup_ns("reduce_scatter")
    assert (t_pcie - launch) / (t_one - launch) == pytest.approx(16 / 7, rel=0.03)


def test_nccl_ring_reduce_scatter_pays_the_socket_crossings_in_latency_only():
    # large: bandwidth-bound, the same bandwidth bound on both graphs and the same time
    big = 32 << 20
    t_pcie, b_pcie, system = _rs((), big)
    t_one, b_one, _ = _rs(ONE_SWITCH, big)
    assert system.collective.protocol == "nccl_simple" and system.collective.cus == 2
    assert b_pcie.bandwidth_ns == pytest.approx(b_one.bandwidth_ns)
    assert t_pcie >= b_pcie.total_ns and t_one >= b_one.total_ns
    assert t_pcie == pytest.approx(t_one, rel=0.01)
    # small: latency-bound (every GPU simulated: the GPUs are not alike, t3sim/interconnect/pcie.py). The ring
    # crosses the sockets twice (GPU 3 -> 4, 7 -> 0); the longest chain of a channel's slices passes both, and at each
    # at least the data takes the longer route, 2.5 us against 1.0 us through one switch (the flag's may hide under
    # the hop's fence, collective.latency's hwLat[PCI] hop)
    small = 1 << 20
    t_pcie, _, _ = _rs((), small, "explicit")
    t_one, _, _ = _rs(ONE_SWITCH, small, "explicit")
    ic = system.interconnect
    extra_ns = 2 * ic.link_latency_ns + ic.socket_link_latency_ns  # a cross-socket route's 3 hops more
    assert t_pcie - t_one >= 2 * extra_ns
    # and at most three longer routes (data, acknowledgement, flag), each with its 3 extra store-and-forward
    # packets, for every slice op of a channel (the N ops of one slice each here)
    pkt_ns = (ic.packet_size_B + ic.packet_size_B // ic.max_payload_B * ic.packet_header_B) / (
        ic.link_bandwidth_GBps * (ic.max_payload_B + ic.packet_header_B) / ic.max_payload_B)
    assert t_pcie - t_one <= 8 * 3 * (extra_ns + 3 * pkt_ns)
