"""Write-drain policies (``memory_controller.write_drain``, t3sim/memory/write_drain), in tCK terms.

* ``watermark`` (Ramulator 2): a write queue with no read waiting drains at once; with reads waiting it
  drains from ``hi`` down to ``lo`` entries;
* ``drain_when_full`` (DRAMsim3): writes wait until the write queue is full, or holds more than 8 writes
  while no read waits (or the oldest write is aged, t3sim's liveness bound); a drain then issues exactly
  the writes queued when it began.

Both controllers run each policy's one ``decide`` and agree exactly, on the fused path real runs take too.
"""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from t3sim import registry
from t3sim.memory import MemorySystem
from t3sim.memory import timing as T
from t3sim.memory.write_drain import build
from t3sim.memory.write_drain.drain_when_full import IDLE_DRAIN_WRITES

from .helpers import assert_clean, fast_and_reference, mixed_batches, run, system, whole_run_stats

POLICIES = ("watermark", "drain_when_full")


def _cfg(policy: str, wq: int = 8, limit: int = 2000, **mc):
    """One channel, refresh off, no hashes: consecutive accesses lie in one row of bank 0."""
    return system(1, hbm={"timing": {"tREFI_nCK": 0}}, address_map={"xor_bank_hash": False, "channel_hash": False},
                  memory_controller={"write_drain": policy, "write_queue_entries": wq,
                                     "write_starvation_limit_cycles": limit, **mc})


def _cmds(ms, cmd):
    log = ms.command_log()
    return log[log[:, 2] == cmd]


def _writes(cfg, n: int, start: int = 0):
    A = cfg.hbm.access_size_B
    return [(0, start + np.arange(n) * A, "write", "comm", "dma")]


def test_registered_and_documented():
    assert set(POLICIES) <= set(registry.names("write_drain"))
    import sys

    for name in registry.names("write_drain"):
        cls = registry.get("write_drain", name)
        assert cls.decide is not None and cls.decide.__doc__
        assert cls.__module__.startswith("t3sim.memory.write_drain.") and sys.modules[cls.__module__].__doc__


def test_config_refuses_watermarks_the_policy_does_not_read():
    system(1, memory_controller={"write_drain": "watermark", "write_high_watermark": 0.5})
    with pytest.raises(ValidationError, match="write_high_watermark"):
        system(1, memory_controller={"write_drain": "drain_when_full", "write_high_watermark": 0.5})
    with pytest.raises(ValidationError, match="write_drain kind"):
        system(1, memory_controller={"write_drain": "nope"})


def _decide(policy, draining, nr, nw, aged=False, left=0, cap=8):
    p = build(system(1, memory_controller={"write_drain": policy, "write_queue_entries": cap}).memory_controller)
    return tuple(int(x) for x in p.decide(draining, nr, nw, aged, left, cap, np.asarray(p.params(), dtype=np.int64)))


def test_watermark_decisions():
    # hi = round(0.75 x 8) = 6, lo = round(0.25 x 8) = 2 (Ramulator 2's set_write_mode, inclusive thresholds)
    assert _decide("watermark", 0, 5, 5)[0] == 0
    assert _decide("watermark", 0, 5, 6)[0] == 1  # high watermark
    assert _decide("watermark", 0, 0, 1)[0] == 1  # no read waits
    assert _decide("watermark", 0, 5, 1, aged=True)[0] == 1
    assert _decide("watermark", 1, 5, 3)[0] == 1
    assert _decide("watermark", 1, 5, 2)[0] == 0  # low watermark, reads wait
    assert _decide("watermark", 1, 0, 2)[0] == 1  # ... but not while no read waits
    assert _decide("watermark", 1, 5, 0)[0] == 0


def test_drain_when_full_decisions():
    assert _decide("drain_when_full", 0, 5, 7) == (0, 0)
    assert _decide("drain_when_full", 0, 5, 8) == (1, 8)  # full: drain the 8 queued now
    assert _decide("drain_when_full", 0, 0, IDLE_DRAIN_WRITES, cap=16) == (0, 0)  # DRAMsim3: more than 8 when idle
    assert _decide("drain_when_full", 0, 0, IDLE_DRAIN_WRITES + 1, cap=16) == (1, IDLE_DRAIN_WRITES + 1)
    assert _decide("drain_when_full", 0, 5, 1, aged=True) == (1, 1)  # t3sim's liveness bound
    assert _decide("drain_when_full", 1, 5, 8, left=3) == (1, 3)  # new writes do not extend a drain
    assert _decide("drain_when_full", 1, 5, 7, left=0) == (0, 0)  # the snapshot is drained: back to reads
    assert _decide("drain_when_full", 1, 5, 8, left=0) == (1, 8)  # ... unless the queue is full again


@pytest.mark.parametrize("mode", ("fast", "reference"))
def test_watermark_drains_at_once_when_no_read_waits(mode):
    """Five writes and no reads: the first write's row opens at once, its WR follows tRCDWR later."""
    cfg = _cfg("watermark")
    v = T.resolve(cfg.hbm).values
    ms = run(cfg, _writes(cfg, 5), mode)
    assert_clean(ms)
    assert _cmds(ms, T.ACT)[0, 0] == 0 and _cmds(ms, T.WR)[0, 0] == v["tRCD"]


@pytest.mark.parametrize("mode", ("fast", "reference"))
def test_drain_when_full_waits_for_a_full_queue(mode):
    """With the write queue's 8 entries filled one admission per cycle, the drain starts when the 8th
    write enters (cycle 7): ACT then, WR tRCDWR later; with 16 entries and 9 writes, when the 9th enters
    (more than 8 with no read waiting, cycle 8)."""
    for wq, n, at in ((8, 8, 7), (16, IDLE_DRAIN_WRITES + 1, IDLE_DRAIN_WRITES)):
        cfg = _cfg("drain_when_full", wq=wq)
        v = T.resolve(cfg.hbm).values
        ms = run(cfg, _writes(cfg, n), mode)
        assert_clean(ms)
        assert _cmds(ms, T.ACT)[0, 0] == at, (wq, n)
        assert _cmds(ms, T.WR)[0, 0] == at + v["tRCD"]


@pytest.mark.parametrize("mode", ("fast", "reference"))
def test_drain_when_full_leaves_few_writes_until_they_age(mode):
    """Five writes, no reads, an 8-entry queue: DRAMsim3 would leave them waiting; t3sim drains once the
    oldest (admitted at cycle 0) has waited write_starvation_limit_cycles."""
    cfg = _cfg("drain_when_full", limit=50)
    v = T.resolve(cfg.hbm).values
    ms = run(cfg, _writes(cfg, 5), mode)
    assert_clean(ms)
    assert _cmds(ms, T.ACT)[0, 0] == 50 and _cmds(ms, T.WR)[0, 0] == 50 + v["tRCD"]


def _runs(ms):
    """Lengths of the runs of consecutive write commands (the drain episodes)."""
    log = ms.command_log()
    col = log[np.isin(log[:, 2], T.COLUMN_CMDS), 2]
    runs, n = [], 0
    for c in col:
        if c != T.RD:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    return runs + ([n] if n else [])


@pytest.mark.parametrize("mode", ("fast", "reference"))
def test_drain_episodes_while_reads_wait(mode):
    """200 backlogged reads (bank group 0) and 8 writes (bank groups 1 and 2), all at cycle 0, admitted
    alternately (round robin): writes enter at cycles 1, 3, .., 15 into an 8-entry write queue.

    * watermark (hi = 6, lo = 2): the drain starts when the 6th write enters (cycle 11: the first ACT of a
      write row), issues writes down to 2 queued (6 writes) and returns to the waiting reads; the last 2
      writes go once the reads are done;
    * drain_when_full: the drain starts when the queue is full (cycle 15) and issues the 8 writes it held.
    """
    out = {}
    for policy, start, runs in (("watermark", 11, [6, 2]), ("drain_when_full", 15, [8])):
        cfg = _cfg(policy, arbitration={"kind": "round_robin"})
        A = cfg.hbm.access_size_B
        cols = cfg.hbm.row_size_B // A
        # no hashes: access index = column + cols x (bank group + ...), so reads lie in rows of bank group 0
        # and the writes in row 0 of bank groups 1 and 2 (no conflicts between them, only bus turnarounds)
        reads = np.concatenate([(np.arange(cols) + k * 16 * cols) for k in range(4)])[:200] * A
        writes = np.stack([cols + np.arange(4), 2 * cols + np.arange(4)], axis=1).reshape(-1) * A
        ms = MemorySystem(cfg, mode=mode, record_commands=True)
        assert set(ms.amap.map(reads).bankgroup.tolist()) == {0}
        assert set(ms.amap.map(writes).bankgroup.tolist()) == {1, 2}
        ms.submit(0, reads, "read", "compute", "gemm")
        ms.submit(0, writes, "write", "comm", "dma")
        ms.run_until_idle()
        assert_clean(ms)
        acts = _cmds(ms, T.ACT)
        first_write_act = acts[acts[:, 3] // cfg.hbm.banks_per_group > 0, 0].min()
        out[policy] = (int(first_write_act), _runs(ms))
        assert out[policy] == (start, runs), (policy, out[policy])


@pytest.mark.parametrize("policy", POLICIES)
def test_fast_equals_reference_on_mixed_traffic(policy):
    """Reads, writes and op-and-stores of both streams, small queues, refresh, advanced in steps: the fast
    controller with a command log, without one (fused pump steps) and the reference agree."""
    cfg = system(2, hbm={"timing": {"tREFI_nCK": 700}},
                 memory_controller={"write_drain": policy, "read_queue_entries": 8, "write_queue_entries": 12,
                                    "write_starvation_limit_cycles": 300,
                                    "arbitration": {"kind": "t3_mca", "threshold_mode": "static",
                                                    "occupancy_threshold": 3, "starvation_limit_cycles": 80}})
    ref, fast, fused = fast_and_reference(cfg, mixed_batches(7, cfg.hbm.access_size_B))
    n = ref.n
    for ms in (fast, fused):
        assert np.array_equal(ms.r_done[:n], ref.r_done[:n])
        assert np.array_equal(ms.occ_hist, ref.occ_hist)
        assert np.array_equal(ms.turnarounds, ref.turnarounds)


def test_whole_run_fast_equals_reference_under_drain_when_full():
    """A whole (tiny) system run: the reference memory model gives the fast one's stats."""
    st = whole_run_stats("workload.sublayer=OP", "workload.tokens=64", "workload.model.hidden_size=256",
                         "workload.tp=2", "system.interconnect.num_gpus=2", "system.gpu.num_cus=4",
                         "system.memory_controller.write_drain=drain_when_full")
    assert st["gpu0"]["hbm"]["requests"]["value"] > 1000
