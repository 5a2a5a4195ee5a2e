"""The L2's write queue bound (``l2.write_queue_accesses``; :mod:`t3sim.compute.memhier`'s module doc).

With a bound B > 0 the hierarchy counts its compute-stream DRAM writes outstanding (write-backs of dirty lines,
uncached stores and updates); an access that adds some while more than B are outstanding completes only once they
have drained to B, so its requester stalls: a closed-loop writer, a posted store's WG (its room event), a copy
engine's credit. Communication-stream writes are neither counted nor held. B = 0 keeps such writes posted: nothing
waits and nothing is counted. The windowed GEMM runs the same rule (tests/compute/test_gemm_window.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.compute.memhier import MemoryHierarchy
from t3sim.config.system import SystemConfig
from t3sim.dma.copy_engine import CopyEngines
from t3sim.memory.request import Stream
from t3sim.sim.engine import Engine

MiB = 1 << 20
LINE_B = 128
#: a write-back of one line is at most its four 32 B sectors' accesses (Table 1: 32 B accesses)
LINE_ACCESSES = 4


def _system(bound: int, **ce) -> SystemConfig:
    """Table 1 with an L2 of one set per bank (64 banks x 16 ways x 128 B = 128 KiB): a stream of stores evicts
    dirty lines once it passes 128 KiB."""
    return SystemConfig.model_validate({"l2": {"size_MiB": 0.125, "write_queue_accesses": bound},
                                        "copy_engine": ce})


def _writer(bound: int, lines: int, stride_B: int = LINE_B, posted: bool = False):
    """One closed-loop writer: a 64 B store to each of ``lines`` lines, the next issued when the previous one's
    event fires (``posted``: when its room event fires, or at once without one, as a posted store's WG goes on).
    Returns (end tick, DRAM bytes by kind, the most counted write accesses outstanding after any submission, the
    outstanding count when each room event fired)."""
    env = simpy.Environment()
    h = MemoryHierarchy(env, _system(bound))
    seen = {"max": 0, "at_room": []}

    def proc():
        for i in range(lines):
            a = np.array([i * stride_B], dtype=np.int64)
            if posted:
                written, room = h.posted_write(a)
                if room is not None:
                    room.callbacks.append(lambda _e: seen["at_room"].append(h.wq_out))
                    yield room
            else:
                ev = h.write(a)
                seen["max"] = max(seen["max"], h.wq_out)
                yield ev
            seen["max"] = max(seen["max"], h.wq_out)

    p = env.process(proc())
    env.run()
    assert p.processed and h.wq_out == 0 and not h._rooms
    return env.now, dict(h.traffic["gemm"]), seen["max"], seen["at_room"]


def test_unbounded_write_backs_are_posted_and_uncounted():
    end, traffic, most, rooms = _writer(0, 4096, posted=True)
    assert traffic["write"] > 0  # 512 KiB of stores through a 128 KiB L2: dirty evictions
    assert most == 0 and rooms == []


@pytest.mark.parametrize("bound", [1, 8, 64])
def test_a_closed_loop_writer_stalls_at_the_bound(bound):
    """The writer's stores evict dirty lines; with a bound, the write-backs outstanding never exceed it by more
    than one store's evictions, the DRAM traffic is the same (one writer: the same accesses in the same order),
    and the writer takes longer (it waited for the buffer to drain)."""
    free_end, free_traffic, _, _ = _writer(0, 4096)
    end, traffic, most, _ = _writer(bound, 4096)
    assert traffic == free_traffic and traffic["write"] > 0
    assert bound < most <= bound + LINE_ACCESSES
    assert end > free_end


@pytest.mark.parametrize("bound", [1, 16])
def test_a_posted_store_waits_for_room_and_room_means_drained(bound):
    """A posted store's room event fires only when the writes outstanding have drained to the bound."""
    free_end, _, _, _ = _writer(0, 4096, posted=True)
    end, _, most, at_room = _writer(bound, 4096, posted=True)
    assert at_room and all(n <= bound for n in at_room)
    assert most <= bound + LINE_ACCESSES
    assert end > free_end


@settings(max_examples=25, deadline=None)
@given(bound=st.integers(1, 48), writers=st.integers(1, 4), lines=st.integers(1100, 1600),
       read_every=st.integers(2, 9))
def test_concurrent_requesters_never_deadlock_and_stay_bounded(bound, writers, lines, read_every):
    """Several closed-loop requesters (stores, and reads whose fills evict dirty lines too) always finish, leave
    nothing counted or waiting, and keep the counted writes outstanding within the bound plus one access's evictions
    per requester."""
    env = simpy.Environment()
    h = MemoryHierarchy(env, _system(bound))
    most = [0]

    def proc(w):
        base = w * 4 * MiB
        for i in range(lines):
            a = np.array([base + i * LINE_B], dtype=np.int64)
            ev = h.read(a + 2 * MiB) if i % read_every == 0 else h.write(a)
            most[0] = max(most[0], h.wq_out)
            yield ev

    procs = [env.process(proc(w)) for w in range(writers)]
    env.run()
    assert all(p.processed for p in procs)
    assert h.wq_out == 0 and not h._rooms
    assert most[0] <= bound + writers * LINE_ACCESSES


def test_a_copy_engine_stalls_on_the_bound():
    """A device-to-device copy that allocates in the L2 (its stores evict the dirty lines of its earlier ones):
    its engine's credit comes back when the store is accepted, which the bound delays, so the copy slows; the bytes
    it moves do not change."""

    def copy(bound):
        system = _system(bound, l2_allocate=True, launch_latency_ns=0)
        eng = Engine(seed=0)
        hier = MemoryHierarchy(eng.env, system)
        ce = CopyEngines(eng, 0, hier, system.copy_engine)
        ev = ce.copy(0, 64 * MiB, 2 * MiB, "d2d")
        ev.callbacks.append(lambda _e: eng.finish())
        eng.run()
        return ev.value.duration_ticks, dict(hier.traffic[ce.category])

    free_t, free_traffic = copy(0)
    t, traffic = copy(8)
    assert traffic["write"] > 0 and t > free_t


def _uncached(bound: int, stream: Stream, n: int = 2048):
    """A posted writer of uncached updates (T3's GEMM output: each WG's stores go straight to DRAM, and it goes on
    unless they must wait for room) on ``stream``: (end tick, most counted accesses outstanding, rooms waited)."""
    env = simpy.Environment()
    h = MemoryHierarchy(env, _system(bound))
    seen = {"max": 0, "rooms": 0}

    def proc():
        for i in range(n):
            written, room = h.posted_write(np.arange(4, dtype=np.int64) * 64 + i * 256, "gemm", stream, update=True)
            seen["max"] = max(seen["max"], h.wq_out)
            if room is not None:
                seen["rooms"] += 1
                yield room
            else:
                yield env.timeout(100)  # 0.1 ns between stores: far faster than the HBM drains them

    env.process(proc())
    env.run()
    assert h.wq_out == 0 and not h._rooms
    return env.now, seen["max"], seen["rooms"]


def test_posted_uncached_compute_writes_stall_and_communication_writes_do_not():
    """Uncached compute-stream updates count against the bound and their WG waits for room (4 accesses of 64 B
    requests x 4 per store: at most one store over); the communication stream's are neither counted nor held."""
    free_end, free_most, free_rooms = _uncached(0, Stream.COMPUTE)
    end, most, rooms = _uncached(16, Stream.COMPUTE)
    assert free_most == free_rooms == 0
    assert rooms > 0 and 16 < most <= 16 + 8 and end > free_end
    assert _uncached(16, Stream.COMM) == (free_end, 0, 0)


@pytest.mark.parametrize("scheme", ["sequential", "t3", "flux_rs"])
def test_whole_runs_finish_and_stall_under_a_tight_bound(scheme):
    """A small sub-layer on 2 GPUs with an L2 of 128 KiB and a bound of one access: every scheme's posted stores
    (Sequential's cached ones, T3's and FLUX's uncached updates) meet a full queue and wait for room, the run still
    ends, and its GEMM phase is no shorter than unbounded."""
    from t3sim.config import load_experiment
    from t3sim.system import simulate
    from tests.conftest import REPO

    base = [f"scheme.kind={scheme}", "workload.sublayer=OP", "workload.tokens=256", "workload.model.hidden_size=512",
            "workload.tp=2", "system.interconnect.num_gpus=2", "system.gpu.num_cus=8", "system.l2.size_MiB=0.125"]
    runs = {bound: simulate(load_experiment(REPO / "configs/experiments/default.yaml",
                                            base + [f"system.l2.write_queue_accesses={bound}"])).stats.to_dict()
            for bound in (0, 1)}
    assert "write_queue" not in runs[0]["gpu0"]["l2"]
    assert runs[1]["gpu0"]["l2"]["write_queue"]["stalled_accesses"]["value"] > 0
    assert runs[1]["time"]["gemm_us"]["value"] >= runs[0]["time"]["gemm_us"]["value"]


def test_statistics_count_the_stalls_and_the_peak_only_where_the_bound_is_set():
    """``l2.write_queue.stalled_accesses`` counts the accesses that waited for room and
    ``l2.write_queue.peak_outstanding_accesses`` the most counted writes outstanding after a submission (at most the
    bound plus one store's writes for one writer); without a bound neither statistic exists."""

    def run(bound):
        env = simpy.Environment()
        h = MemoryHierarchy(env, _system(bound))

        def proc():
            for i in range(4096):
                yield h.write(np.array([i * LINE_B], dtype=np.int64))

        env.process(proc())
        env.run()
        return h.stats()

    st = run(8)
    assert st.value("l2.write_queue.stalled_accesses") > 0
    assert 8 < st.value("l2.write_queue.peak_outstanding_accesses") <= 8 + LINE_ACCESSES
    free = run(0).to_dict()
    assert "write_queue" not in free["l2"]
