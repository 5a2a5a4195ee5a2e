"""The fast (numba, skipping) controller makes the reference controller's decisions.

Randomized traces (hypothesis) over small configurations that exercise backpressure (small queues),
write drain (every write-drain policy), all-bank and per-bank refresh, same-line hazards, every arbitration policy, every page
policy, 32 B and 64 B accesses and the controller's frontend latency. The issue asks for agreement
within 1% on completion time and bandwidth; the two are in fact identical per request and per command.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from t3sim.memory.checker import check
from t3sim.memory.stats import summary

from .helpers import draw_controller, draw_refresh, run, system

KINDS = ("read", "write", "update")


@st.composite
def traces(draw):
    policy = draw(st.sampled_from(["round_robin", "compute_first", "t3_mca"]))
    cfg = system(
        draw(st.sampled_from([1, 2, 3])),
        hbm={**draw_refresh(draw, [0, 300, 3900]), "burst_length": draw(st.sampled_from([2, 4]))},
        memory_controller={
            **draw_controller(draw),
            "arbitration": {"kind": policy, "threshold_mode": "static",
                            "occupancy_threshold": draw(st.sampled_from([None, 2, 10])),
                            "starvation_limit_cycles": draw(st.sampled_from([20, 1000]))},
        },
        address_map={"xor_bank_hash": draw(st.booleans())},
    )
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    batches, tick = [], 0
    for _ in range(draw(st.integers(1, 8))):
        tick += int(rng.integers(0, 400_000))
        n = int(rng.integers(1, 80))
        span = int(rng.choice([64, 4096, 1 << 22]))  # few lines (hazards), some rows, anywhere
        start = int(rng.integers(0, 1 << 20)) * 64
        addrs = start + rng.integers(0, span, n) * 64 if rng.random() < 0.6 else start + np.arange(n) * 64
        batches.append((tick, addrs, KINDS[rng.integers(0, 3)], ["compute", "comm"][rng.integers(0, 2)], "gemm"))
    return cfg, batches


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces())
def test_fast_equals_reference_on_random_traces(trace):
    cfg, batches = trace
    fast = run(cfg, batches, "fast")
    ref = run(cfg, batches, "reference")
    n = fast.n
    assert np.array_equal(fast.r_done[:n], ref.r_done[:n])
    assert np.array_equal(fast.command_log(), ref.command_log())
    assert np.array_equal(fast.occ_hist, ref.occ_hist)
    sf, sr = summary(fast), summary(ref)
    assert abs(sf["span_ns"] / sr["span_ns"] - 1) < 0.01
    assert abs(sf["achieved_GBps"] / sr["achieved_GBps"] - 1) < 0.01
    for ms in (fast, ref):
        rep = check(ms.command_log(), cfg.hbm)
        assert rep.ok, rep
        assert np.all(ms.r_done[:n] >= ms.r_arrive[:n])


def test_advance_in_steps_equals_one_run():
    """Advancing in small steps (as the simpy pump does) changes nothing."""
    cfg = system(2, hbm={"timing": {"tREFI_nCK": 500}})
    rng = np.random.default_rng(9)
    batches = [(i * 37_000, rng.integers(0, 1 << 16, 50) * 64, KINDS[i % 3], ["compute", "comm"][i % 2], "dma") for i in range(12)]
    whole = run(cfg, batches)
    from t3sim.memory import MemorySystem

    for mode in ("fast", "reference"):
        ms = MemorySystem(cfg, mode=mode, record_commands=True)
        for tick, a, k, s, src in batches:
            while ms.now_tick + 3_000 < tick:
                ms.advance(ms.now_tick + 3_000)
            ms.submit(tick, a, k, s, src)
        ms.run_until_idle()
        assert np.array_equal(ms.r_done[: ms.n], whole.r_done[: whole.n]), mode
        assert np.array_equal(ms.command_log(), whole.command_log()), mode


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(traces())
def test_fast_equals_reference_many(trace):
    test_fast_equals_reference_on_random_traces.hypothesis.inner_test(trace)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.sampled_from([1, 5, 64]))
def test_run_in_pieces_equals_one_call(trace, cap):
    """With more requests outstanding than FastController.OUT_CAP, MemorySystem._run simulates in pieces of
    ``OUT_CAP // (units x admissions per cycle)`` cycles (the path hbm-stream takes without a command log):
    the same completions, occupancy and statistics as one call."""
    from t3sim.memory.fast.controller_fast import FastController

    cfg, batches = trace
    whole = run(cfg, batches, "fast", record=False)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(FastController, "OUT_CAP", cap)
        cut = run(cfg, batches, "fast", record=False)
        assert cut.engine.piece_cycles() == 0  # nothing outstanding any more
    n = whole.n
    assert np.array_equal(cut.r_done[:n], whole.r_done[:n])
    assert np.array_equal(cut.occ_hist, whole.occ_hist)
    assert cut.now_tick == whole.now_tick
    assert cut.stats().to_dict() == whole.stats().to_dict()


def test_hbm_stream_runs_in_pieces():
    """A stream of 300k reads submitted at once (more than OUT_CAP) is cut into pieces, and its output buffer
    stays at OUT_CAP records."""
    from t3sim.memory import MemorySystem
    from t3sim.memory.fast.controller_fast import FastController

    cfg = system(4)
    ms = MemorySystem(cfg, mode="fast")
    n = FastController.OUT_CAP + 5000
    ms.submit(0, np.arange(n, dtype=np.int64) * 32, "read", "compute", "gemm")
    assert ms.engine.piece_cycles() == FastController.OUT_CAP // (4 * cfg.memory_controller.admissions_per_cycle)
    ms.run_until_idle()
    assert ms.outstanding == 0 and int(ms.batches.remaining[0]) == 0
    assert ms.engine._out.shape[1] <= FastController.OUT_CAP



def _drained(channels, refi, rq, wq, adm, threshold, starve, seed):
    """T3-MCA with producer-kernel ends (``kernel_boundary``: the drain flag) among a compute backlog and a trickle
    of communication requests, some arriving at the same cycle as compute ones: the flag's clearing (a cycle whose
    communication head has not arrived) must happen at the same cycles in both controllers."""
    cfg = system(channels, hbm={"timing": {"tREFI_nCK": refi}},
                 memory_controller={"read_queue_entries": rq, "write_queue_entries": wq, "admissions_per_cycle": adm,
                                    "arbitration": {"kind": "t3_mca", "threshold_mode": "static",
                                                    "occupancy_threshold": threshold,
                                                    "starvation_limit_cycles": starve}})
    rng = np.random.default_rng(seed)
    events, tick = [], 0
    for _ in range(int(rng.integers(4, 41))):
        tick += int(rng.choice([0, 1000, int(rng.integers(0, 30_000))]))
        comm = rng.random() < 0.6
        n = int(rng.integers(1, 4)) if comm else int(rng.integers(8, 120))
        addrs = int(rng.integers(0, 1 << 14)) * 64 + rng.integers(0, 1 << 12, n) * 64
        events.append((tick, addrs, KINDS[rng.integers(0, 2)], "comm" if comm else "compute", "dma"))
        if rng.random() < 0.15:
            events.append((tick, None, None, None, None))  # the producer kernel ends here
    return cfg, events


drained = st.tuples(st.sampled_from([1, 2]), st.sampled_from([0, 3900]), st.sampled_from([2, 4, 16]),
                    st.sampled_from([2, 4, 16]), st.sampled_from([1, 2]), st.sampled_from([None, 1, 3]),
                    st.sampled_from([20, 100_000]), st.integers(0, 2**31 - 1))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drained)
@example((2, 0, 16, 4, 2, None, 100_000, 213314))  # the flag's clearing one cycle after an admission decides a later
# choice here (found against a trial kernel that skipped ahead from admissions, docs/performance.md)
def test_fast_equals_reference_with_producer_drains(params):
    cfg, events = _drained(*params)
    from t3sim.memory import MemorySystem

    out = {}
    for mode in ("fast", "reference"):
        ms = MemorySystem(cfg, mode=mode, record_commands=True)
        for tick, a, k, s, src in events:
            if a is None:
                ms.advance(tick)
                ms.kernel_boundary()
            else:
                ms.submit(tick, a, k, s, src)
        ms.run_until_idle()
        out[mode] = ms
    fast, ref = out["fast"], out["reference"]
    n = fast.n
    assert np.array_equal(fast.r_done[:n], ref.r_done[:n])
    assert np.array_equal(fast.command_log(), ref.command_log())
    assert np.array_equal(fast.occ_hist, ref.occ_hist)


def test_lines_equal_in_their_low_31_bits_are_different_lines():
    """Same-line hazards compare whole lines: requests to lines that differ by 2^31 (the same DRAM location, since
    addresses wrap at the capacity) are no hazard, as in the reference; reads and writes of both, interleaved, give
    the same commands and completions. (A guard for any narrowing of the queue slots' fields: docs/performance.md
    lists 32-bit slots as tried; one that compared the low 31 bits of lines hung or failed here.)"""
    cfg = system(1, memory_controller={"read_queue_entries": 8, "write_queue_entries": 8})
    far = (1 << 31) * cfg.hbm.access_size_B
    rng = np.random.default_rng(3)
    lines = rng.integers(0, 64, 24) * cfg.hbm.access_size_B
    batches = []
    for i in range(8):
        kind = ("write", "update", "read", "write")[i % 4]
        batches.append((i * 2_000, lines + (far if i % 2 else 0), kind, ("compute", "comm")[i % 2], "gemm"))
    fast, ref = run(cfg, batches, "fast"), run(cfg, batches, "reference")
    n = fast.n
    assert np.array_equal(fast.r_done[:n], ref.r_done[:n])
    assert np.array_equal(fast.command_log(), ref.command_log())
