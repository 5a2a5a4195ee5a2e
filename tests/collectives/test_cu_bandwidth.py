"""A collective CU's memory-pipe rate (``collective.cu_bandwidth_GBps``, :class:`t3sim.collectives.gpu_hook.CuPool`).

A piece takes at least its loads and stores at the CU's rate; the limit runs beside the loads' latency, so a
CU's time is between bytes / rate and bytes / rate plus its time without the limit.
"""

from __future__ import annotations

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.collectives.gpu_hook import CuPool, _Group, _Piece, line_addrs
from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.config import load_system
from t3sim.memory.request import Stream
from t3sim.sim.clock import TICKS_PER_NS, Clock
from t3sim.sim.engine import Engine

H200 = "configs/systems/h200-4gpu.yaml"


def _run(system, nsrc, pieces, piece_B, gbps, send=False):
    """One CU reduce-copying ``pieces`` pieces from ``nsrc`` cold sources (local stores, or held sends)."""
    eng = Engine(seed=0)
    env = eng.env
    hier = MemoryHierarchy(env, system)
    pool = CuPool(env, hier, 1, Clock.from_GHz(system.gpu.clock_GHz, "cu"), 256, Stream.COMM, lambda: None,
                  cu_bandwidth_GBps=gbps)
    g = _Group(env, "g", pieces)
    ps = []
    for i in range(pieces):
        a = i * piece_B
        hold = (lambda _p: None) if send else None
        ps.append(_Piece([line_addrs(a + k * (64 << 20), piece_B) for k in range(nsrc)], (nsrc - 1) * piece_B // 2,
                         None if send else line_addrs(a + (128 << 20), piece_B), g, env.event(), hold))
    pool.submit(ps, "rs")
    done = simpy.AllOf(env, [p.event for p in ps])
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    return env.now / TICKS_PER_NS, ps, pool


@settings(max_examples=6, deadline=None)
@given(nsrc=st.integers(1, 2), pieces=st.integers(1, 4), kib=st.sampled_from([4, 16, 64]),
       gbps=st.sampled_from([20.0, 88.0, 400.0]), send=st.booleans())
def test_piece_takes_its_bytes_at_the_cu_rate(nsrc, pieces, kib, gbps, send):
    system = load_system(H200)
    piece_B = kib << 10
    free_ns, ps, pool = _run(system, nsrc, pieces, piece_B, None, send)
    capped_ns, _, _ = _run(system, nsrc, pieces, piece_B, gbps, send)
    # loads of every source, the output once to its one destination (local stores or the next GPU)
    per_piece = pool._pipe_bytes(ps[0])
    assert per_piece == (nsrc + 1) * piece_B
    pipe_ns = pieces * per_piece / gbps  # 1 GB/s = 1 B/ns
    assert capped_ns >= pipe_ns - 1e-3
    assert capped_ns <= pipe_ns + free_ns + 1e-3
    assert capped_ns >= free_ns - 1e-3


def test_no_limit_is_the_default_and_changes_nothing():
    system = load_system(H200, ["collective.cu_bandwidth_GBps=null"])
    assert system.collective.cu_bandwidth_GBps is None
    a, _, _ = _run(system, 2, 3, 64 << 10, None)
    b, _, _ = _run(system, 2, 3, 64 << 10, 1e9)
    assert a == pytest.approx(b, abs=1e-3)


def test_pipe_bytes_count_every_destination():
    """A piece that stores locally and sends (NCCL's recvCopySend) moves its output twice."""
    env = simpy.Environment()
    pool = CuPool.__new__(CuPool)
    g = _Group(env, "g", 1)
    both = _Piece([line_addrs(0, 4096)], 0, line_addrs(1 << 20, 4096), g, None, lambda _p: None)
    assert pool._pipe_bytes(both) == 3 * 4096
    assert REQ_B == 64
