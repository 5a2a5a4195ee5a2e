"""Row-buffer policies (``memory_controller.page_policy``, t3sim/memory/page_policy.py), in tCK terms.

* ``open``: same-row accesses are tCCD apart whenever they wait together or one arrives while the
  row is still open;
* ``closed``: every access pays ACT + tRCD and its row closes at the earliest legal cycle
  (max(ACT + tRAS, RD + tRTP)), so back-to-back accesses to one bank are tRC apart even when queued
  together; a stream has no row hits;
* ``closed_adaptive``: accesses queued together share the row (tCCD apart); one that arrives after the
  row's last queued hit was served finds it closing and is tRC after the previous ACT.

Both controllers run the same policy (one definition, page_policy.closes_row) and agree exactly,
on the path real runs take (fused pump steps, no command log) as well.
"""

from __future__ import annotations

import numpy as np
import pytest

from t3sim.memory import MemorySystem
from t3sim.memory import timing as T
from t3sim.memory.memtest import simulate
from t3sim.memory.stats import summary
from t3sim.sim.clock import Clock

from .helpers import assert_clean, fast_and_reference, mixed_batches, run, system, whole_run_stats

POLICIES = ("open", "closed", "closed_adaptive")


def _one_bank(policy: str, **mc):
    """One channel, refresh off: every line below lies in bank 0's row 0 or row 1 (no XOR hash)."""
    return system(1, hbm={"timing": {"tREFI_nCK": 0}}, address_map={"xor_bank_hash": False, "channel_hash": False},
                  memory_controller={"page_policy": policy, **mc})


def _cmds(ms, cmd):
    log = ms.command_log()
    return log[log[:, 2] == cmd]


def _tick(cfg, cycle: int) -> int:
    """The tick at which HBM cycle ``cycle`` starts."""
    return Clock.from_GHz(cfg.hbm.clock_GHz, "hbm").cycle_to_tick(cycle)


@pytest.mark.parametrize("policy", POLICIES)
def test_two_reads_queued_together(policy):
    """Two reads of one row submitted together: open/closed_adaptive serve the second from the open row
    tCCD_L later; closed re-activates it: the column commands are tRC apart."""
    cfg = _one_bank(policy)
    v = T.resolve(cfg.hbm).values
    ms = run(cfg, [(0, [0, 64], "read", "compute", "gemm")])
    assert_clean(ms)
    col = _cmds(ms, T.RD)[:, 0]
    acts = _cmds(ms, T.ACT)[:, 0]
    assert col[0] == acts[0] + v["tRCD"]
    if policy == "closed":
        assert col[1] - col[0] == v["tRC"] == v["tRAS"] + v["tRP"]
        assert list(np.diff(acts)) == [v["tRC"]]
        # the row closes at its earliest legal cycle: tRAS after the ACT (later than RD + tRTP here)
        assert _cmds(ms, T.PRE)[0, 0] == max(acts[0] + v["tRAS"], col[0] + v["tRTP"])
        assert summary(ms)["row_hit_rate"] == 0
    else:
        assert col[1] - col[0] == max(v["tCCD_L"], v["tBL"])
        assert len(acts) == 1
    # closed_adaptive closes after the last queued hit; open keeps the row
    assert len(_cmds(ms, T.PRE)) == (0 if policy == "open" else 1 if policy == "closed_adaptive" else 2)


@pytest.mark.parametrize("policy", POLICIES)
def test_second_read_arrives_after_the_first_issued(policy):
    """The second read of the row arrives a few cycles after the first issued: open hits the open row;
    both closed policies closed it, so the second pays a new ACT at the first ACT + tRC."""
    cfg = _one_bank(policy)
    v = T.resolve(cfg.hbm).values
    later = v["tRCD"] + 4  # cycles: after the first RD (at tRCD), before its row could close (tRAS)
    ms = run(cfg, [(0, [0], "read", "compute", "gemm"), (_tick(cfg, later), [64], "read", "compute", "gemm")])
    assert_clean(ms)
    col = _cmds(ms, T.RD)[:, 0]
    acts = _cmds(ms, T.ACT)[:, 0]
    if policy == "open":
        assert col[1] == later and len(acts) == 1
    else:
        assert list(acts) == [0, v["tRC"]]
        assert col[1] == v["tRC"] + v["tRCD"]
        assert summary(ms)["row_hit_rate"] == 0


def test_closed_write_closes_after_write_recovery():
    """A write closes its row tWL + tBL + tWR after the WR (or tRAS after the ACT, if later)."""
    cfg = _one_bank("closed")  # a lone write drains at once (empty read queue)
    v = T.resolve(cfg.hbm).values
    ms = run(cfg, [(0, [0], "write", "compute", "gemm")])
    assert_clean(ms)
    act, wr, pre = _cmds(ms, T.ACT)[0, 0], _cmds(ms, T.WR)[0, 0], _cmds(ms, T.PRE)[0, 0]
    assert pre == max(act + v["tRAS"], wr + v["tWL"] + v["tBL"] + v["tWR"])


def test_closed_page_is_precharged_while_the_queues_are_empty():
    """The closing PRE is due whether or not requests wait: a read, then nothing for a long time."""
    cfg = _one_bank("closed")
    ms = MemorySystem(cfg, record_commands=True)
    ms.submit(0, [0], "read", "compute", "gemm")
    ms.advance(_tick(cfg, 1000))
    pre = _cmds(ms, T.PRE)
    assert len(pre) == 1 and pre[0, 0] < 100


def test_stream_has_no_row_hits_under_closed_page():
    """Each access of a stream activates its row and precharges it: ACTs = PREs = requests, no hits, and
    the stream is limited by the ACT rate and tRC, far below the open-page stream."""
    n = 8_000
    res = {}
    for policy in POLICIES:
        ms, _ = simulate(system(4, memory_controller={"page_policy": policy}), "stream-read", n, record=True)
        assert_clean(ms)
        res[policy] = (summary(ms), ms.cmd_count.sum(axis=0))
    s, cmds = res["closed"]
    assert s["row_hit_rate"] == 0
    assert cmds[T.RD] == n
    # an ACT per access (plus a few re-activations of rows a refresh closed before their access) ...
    assert n <= cmds[T.ACT] <= n + cmds[T.REF] * 16
    # ... and every activated row is closed again
    assert cmds[T.PRE] == cmds[T.ACT]
    assert s["efficiency"] < 0.5 * res["open"][0]["efficiency"]
    # closed_adaptive keeps the stream's queued hits: as many row hits as open page
    assert res["closed_adaptive"][0]["row_hit_rate"] == pytest.approx(res["open"][0]["row_hit_rate"], abs=0.01)
    assert res["open"][0]["row_hit_rate"] > 0.9


@pytest.mark.parametrize("policy", ("closed", "closed_adaptive"))
def test_closing_policies_fast_equals_reference_on_mixed_traffic(policy):
    """Reads, writes and op-and-stores of both streams, small queues, refresh, advanced in steps; the
    fast controller with a command log, without one (fused pump steps) and the reference agree."""
    cfg = system(2, hbm={"timing": {"tREFI_nCK": 700}},
                 memory_controller={"page_policy": policy, "read_queue_entries": 8, "write_queue_entries": 8,
                                    "arbitration": {"kind": "t3_mca", "threshold_mode": "static",
                                                    "occupancy_threshold": 3, "starvation_limit_cycles": 80}})
    ref, fast, fused = fast_and_reference(cfg, mixed_batches(11, 64))
    n = ref.n
    for ms in (fast, fused):
        assert np.array_equal(ms.r_done[:n], ref.r_done[:n])
        assert np.array_equal(ms.r_class[:n], ref.r_class[:n])
        assert np.array_equal(ms.occ_hist, ref.occ_hist)
        assert np.array_equal(ms.cmd_count, ref.cmd_count)
    assert np.count_nonzero(_cmds(ref, T.PRE)) > 0


def test_whole_run_fast_equals_reference_under_closed_page():
    """A whole (tiny) system run under closed page: the reference memory model gives the fast one's stats."""
    hbm = whole_run_stats("workload.sublayer=OP", "workload.tokens=64", "workload.model.hidden_size=256",
                          "workload.tp=2", "system.interconnect.num_gpus=2", "system.gpu.num_cus=4",
                          "system.memory_controller.page_policy=closed")["gpu0"]["hbm"]
    assert hbm["requests"]["value"] > 1000
    assert hbm["row"]["hit_rate"]["value"] < 0.01  # every access activated its row
