"""``fused_emb_a2a`` and ``emb_a2a`` between nodes: on a multinode interconnect the fused
kernel puts each slice for another node through the NIC as one message, then a fence and the flag; every pooled
vector still arrives exactly once with its value, flags land after their slice, receivers see every flag."""

from __future__ import annotations

import pytest

from t3sim.errors import InputError
from t3sim.interconnect.multinode import FABRIC, nic_name
from tests.conftest import REPO
from tests.schemes.helpers import run_experiment

EXP2 = REPO / "configs/experiments/fused-a2a-2node.yaml"
EXP8 = REPO / "configs/experiments/fused-a2a-2x4.yaml"
# 2 tables, pooling 3, 2 CUs; slices of 32 bags
SMALL = ["sweep.grid={}", "workload.embedding_bag.tables_per_gpu=2", "workload.embedding_bag.pooling=3",
         "workload.embedding_bag.rows_per_table=1000", "system.gpu.num_cus=2"]


def run(exp, *overrides: str):
    return run_experiment(exp, SMALL, overrides)


def nic_port(m, node):
    return m.network.links[(nic_name(node), FABRIC)]


@pytest.mark.parametrize("mode", ["homogeneous", "explicit"])
def test_two_nodes_slices_go_out_as_nic_puts(mode):
    m, ph = run(EXP2, "workload.embedding_bag.global_batch=128", "simulation.functional_data=true",
                f"simulation.mode={mode}")
    c = m.context
    assert c.checks.verified and ph.total > 0
    # 64 samples per GPU = 2 slices of 32, 2 tables: each GPU puts 4 slices to the other node
    assert c.nic.puts == 2 * 4 and c.flags.puts == 2 * 4
    row = 256 * 4
    assert c.nic.put_B == 2 * 4 * 32 * row
    # every GPU's vectors of the other GPU's samples, and its local ones, exactly once; words of the simulated GPUs
    assert c.checks.vectors_once == 2 * 128 * 2 - (len(m.sim_gpus) < 2) * 64 * 2
    assert c.checks.words_checked == len(m.sim_gpus) * 64 * 2 * 2 * 256
    for node in range(2):  # one message per slice and per flag on each NIC's send port
        port = nic_port(m, node)
        assert port.messages_sent == 4 + 4
        assert port.bytes_sent == 4 * 32 * row + 4 * 64
    assert c.fences.fences == 0  # no per-thread stores crossed the NIC


def test_nic_time_bounds_the_fused_run():
    """Whatever overlaps, the fused kernel cannot end before its NIC moved the slices at the NIC rate, nor before
    every flag was put and landed (the last flag follows the last slice)."""
    m, ph = run(EXP2, "workload.embedding_bag.global_batch=256")
    c, port = m.context, nic_port(m, 0)
    assert ph.total * 1e-6 >= port.bytes_sent / (m.system.interconnect.nic_bandwidth_GBps * 1e9)
    assert port.messages_sent == 2 * 8  # 8 slice puts + 8 flags: none left unsent when the run ended
    last_flag = max(c.flags.land_tick.values())
    assert m.env.now >= last_flag and c.flags.puts == 2 * 8


def test_baseline_all_to_all_crosses_the_nic():
    m, ph = run(EXP2, "workload.embedding_bag.global_batch=128", "scheme.kind=emb_a2a")
    # the library all-to-all moves GPU 0's pooled vectors of GPU 1's 64 samples (2 tables, 1 KB each) over the NIC
    assert nic_port(m, 0).bytes_sent == 64 * 2 * 1024
    assert ph.rs > 0 and ph.gemm > 0


def test_two_nodes_of_two_gpus_mix_stores_and_puts():
    """Inside a node: zero-copy stores over the links (fenced); between nodes: slice puts. Explicit mode."""
    m, _ = run(EXP8, "workload.embedding_bag.global_batch=128", "workload.embedding_bag.tables_per_gpu=1",
               "system.interconnect.num_gpus=4", "system.interconnect.gpus_per_node=2", "workload.tp=4",
               "system.interconnect.links_per_gpu=1", "simulation.functional_data=true")
    c = m.context
    assert c.checks.verified
    # 32 samples per GPU = one slice; each GPU: one slice to its node's peer (stores), two to the other node (puts)
    assert c.nic.puts == 4 * 2 and c.fences.fences == 4
    assert c.checks.words_checked == 4 * 32 * 4 * 256


def test_homogeneous_refused_with_several_gpus_per_node():
    with pytest.raises(InputError, match="gpus_per_node"):
        run(EXP8, "workload.embedding_bag.global_batch=256", "simulation.mode=homogeneous")


def test_one_node_multinode_is_the_plain_node():
    """kind multinode with a single node of 4 fully connected GPUs: the same links, the same run as kind direct."""
    exp = REPO / "configs/experiments/fused-a2a.yaml"
    b = ["workload.embedding_bag.global_batch=128", "scheme.kind=fused_emb_a2a"]
    _, plain = run(exp, *b)
    _, one = run(exp, *b, "system.interconnect.kind=multinode", "system.interconnect.gpus_per_node=4",
                 "system.interconnect.node_kind=direct")
    assert (one.gemm, one.rs, one.total) == (plain.gemm, plain.rs, plain.total)


@pytest.mark.parametrize("aware", [True, False])
def test_per_node_kernel_times_and_skew_statistics(aware):
    """fused.kernel_us.gpu<g> is each simulated GPU's kernel time (launch to its last WG, flag polls included: never
    before its last incoming flag landed) and fused.kernel_skew their slowest / fastest - 1 (paper Sec. IV-C, Fig. 14);
    the communication-oblivious order runs only in explicit mode, where both nodes are simulated."""
    from t3sim.sim.clock import TICKS_PER_NS

    m, _ = run(EXP2, "workload.embedding_bag.global_batch=128", "simulation.mode=explicit",
                f"scheme.fused_comm_aware={str(aware).lower()}")
    c = m.context
    times = {g: (t - c.launch_tick) / TICKS_PER_NS / 1e3 for g, t in c.end_ticks.items()}
    assert sorted(times) == [0, 1] and all(t > 0 for t in times.values())
    # a GPU's kernel ends only after it saw every incoming flag
    assert all(c.end_ticks[g] >= max(c.flags.seen_tick[(g, k)] for k in c.incoming(g)) for g in (0, 1))
    st = c.stats()
    got = {g: st.value(f"fused.kernel_us.gpu{g}") for g in (0, 1)}
    assert got == pytest.approx(times, abs=1e-6)
    lo, hi = min(times.values()), max(times.values())
    assert st.value("fused.kernel_skew") == pytest.approx(hi / lo - 1, abs=1e-6)


def test_homogeneous_skew_is_zero_with_one_simulated_gpu():
    m, _ = run(EXP2, "workload.embedding_bag.global_batch=128")
    st = m.context.stats()
    assert st.value("fused.kernel_skew") == 0.0 and list(m.context.end_ticks) == [0]
