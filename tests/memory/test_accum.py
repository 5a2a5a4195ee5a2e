"""Statistics accumulated at retirement and request-array compaction.

The accumulators must give what the end-of-run computation over per-request arrays gave,
and compacting the request arrays (reusing slots of issued requests) must not change any
completion or statistic.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from t3sim.memory import bookkeeping as BK
from t3sim.memory.accum import percentile_from_hist
from t3sim.memory.request import Kind, Source, Stream
from t3sim.memory.system import MemorySystem
from tests.memory.helpers import system


def _drive(ms, seed=3, batches=400, step_ticks=3000):
    """Random mixed batches, advanced in steps like the simpy pump; returns the completions."""
    rng = np.random.default_rng(seed)
    out = []
    tick = 0
    for _ in range(batches):
        tick += int(rng.integers(0, step_ticks))
        ms.advance(tick)
        out += ms.pop_completed()
        n = int(rng.integers(1, 40))
        base = int(rng.integers(0, 1 << 22)) * 64
        addrs = base + 64 * rng.integers(0, 512, n)
        kind = [Kind.READ, Kind.WRITE, Kind.UPDATE][int(rng.integers(0, 3))]
        ms.submit(tick, addrs, kind, Stream(int(rng.integers(0, 2))), Source(int(rng.integers(0, 4))))
    ms.run_until_idle()
    out += ms.pop_completed()
    return out


def _stats(ms):
    return json.dumps(ms.stats("m").to_dict(), sort_keys=True, default=str)


def test_accumulated_stats_match_per_request_arrays():
    ms = MemorySystem(system(channels=4))
    _drive(ms)
    n = ms.n
    st = ms.stats("m")
    done = ms.r_done[:n] >= 0
    assert st.value("m.requests") == int(done.sum())
    for s in Stream:
        assert st.value(f"m.by_stream.{s.name.lower()}.requests") == int((ms.r_stream[:n][done] == s).sum())
    t0 = int(ms.r_arrive[:n][done].min())
    bins = (ms.r_done[:n][done] - t0) // 1000
    scale = ms.access_B / (1000 / ms.clock.GHz)
    for s in Stream:
        for k in Kind:
            sel = (ms.r_stream[:n][done] == s) & (ms.r_kind[:n][done] == k)
            if sel.any():
                ref = np.bincount(bins[sel], minlength=int(bins.max()) + 1) * scale
                got = st.value(f"m.bandwidth_over_time.{s.name.lower()}_{k.name.lower()}_GBps")
                assert np.array_equal(got, ref), (s, k)
    rd = done & (ms.r_kind[:n] == Kind.READ)
    lat_c = ms.r_done[:n][rd] - ms.r_arrive[:n][rd]
    lat = lat_c / ms.clock.GHz
    for q in (50, 95, 99):
        assert st.value(f"m.read_latency.p{q}_ns") == float(np.percentile(lat, q))
    assert st.value("m.read_latency.mean_ns") == pytest.approx(float(lat.mean()), rel=1e-12)
    assert st.value("m.read_latency.max_ns") == float(lat.max())
    assert np.array_equal(st.value("m.read_latency.histogram"), np.bincount(lat_c // 8))
    assert st.value("m.row.hits") == int((ms.r_class[:n][done] == 0).sum())


@pytest.mark.parametrize("seed", range(5))
def test_percentile_from_hist_is_numpys(seed):
    rng = np.random.default_rng(seed)
    vals = rng.integers(0, int(rng.integers(2, 400)), int(rng.integers(1, 3000)))
    h = np.bincount(vals)
    for q in (0, 1, 50, 95, 99, 100):
        assert percentile_from_hist(h, q, 1.6) == float(np.percentile(vals / 1.6, q))


def test_compaction_changes_nothing(monkeypatch):
    monkeypatch.setattr(MemorySystem, "compact_min", 0)
    plain = MemorySystem(system(channels=4))
    a = _drive(plain, seed=11, batches=600, step_ticks=60_000)
    monkeypatch.setattr(MemorySystem, "compact_min", 256)
    packed = MemorySystem(system(channels=4))
    b = _drive(packed, seed=11, batches=600, step_ticks=60_000)
    assert packed.compactions > 0 and packed._cap < plain._cap
    assert a == b
    assert _stats(plain) == _stats(packed)


def _full_store(monkeypatch):
    """A memory whose request arrays (256 rows, ``compact_min`` 256) are full: 200 requests issued, 56 not."""
    monkeypatch.setattr(MemorySystem, "compact_min", 256)
    ms = MemorySystem(system(channels=1))
    ms._cap, ms.RQ = 0, np.zeros((0, BK.NF), dtype=np.int64).T
    ms._grow(256)
    _submit(ms, 200, "read")
    ms.run_until_idle()
    _submit(ms, 56, "read")
    return ms


def _submit(ms, n: int, kind: str, base: int = 0) -> None:
    ms.submit(ms.clock.cycle_to_tick(ms.frontier), np.arange(n, dtype=np.int64) * 32 + base, kind, "compute", "gemm")


def test_full_arrays_compact_before_they_grow(monkeypatch):
    """``MemorySystem._compact_or_grow``: full arrays are compacted first; they grow (doubling) only if the live
    requests then fill more than 3/4 of them, and a grow copies only the live ones."""
    ms = _full_store(monkeypatch)
    assert (ms.n, ms.outstanding, ms._cap) == (256, 56, 256)
    _submit(ms, 100, "write")
    # 56 live + 100 new fit in 3/4 of 256: compacted, not grown
    assert (ms.compactions, ms._cap, ms.n, ms.outstanding) == (1, 256, 156, 156)
    _submit(ms, 101, "read", base=1 << 20)
    # 156 live (none issued yet) + 101 > 256: nothing to compact, the arrays double
    assert (ms.compactions, ms._cap, ms.n) == (1, 512, 257)
    ms.run_until_idle()
    assert ms.outstanding == 0 and ms.acc.requests == 457


def test_compaction_that_frees_too_little_also_grows(monkeypatch):
    ms = _full_store(monkeypatch)
    _submit(ms, 150, "write")
    # compacted to the 56 live ones, but 56 + 150 > 3/4 of 256: doubled too (copying the 56)
    assert (ms.compactions, ms._cap, ms.n, ms.outstanding) == (1, 512, 206, 206)
    ms.run_until_idle()
    assert ms.outstanding == 0 and ms.acc.requests == 406
