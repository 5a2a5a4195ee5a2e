"""Speed-ups of the memory path never change results.

``MemorySystem.advance`` skips controller runs that cannot issue anything; the
bookkeeping after each run and the FIFO linking in ``submit`` are compiled. A
whole small system run must give byte-identical statistics with the lazy path
on and off (the eager path is the earlier behaviour).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from t3sim.config import SystemConfig
from t3sim.memory.system import MemorySystem
from t3sim.system import simulate
from tests.system.helpers import exp


def _stats_json(monkeypatch, lazy, *overrides):
    monkeypatch.setattr(MemorySystem, "lazy", lazy)
    r = simulate(exp(*overrides))
    return json.dumps(r.stats.to_dict(), sort_keys=True, default=str)


@pytest.mark.parametrize("extra", [
    ("workload.tokens=256", "workload.tp=4", "system.interconnect.num_gpus=4"),
    ("workload.tokens=128", "system.gpu.num_cus=4", "workload.tp=4", "system.interconnect.num_gpus=4",
     "scheme.kind=t3_mca"),
])
def test_whole_run_identical_with_lazy_advance(monkeypatch, extra):
    args = ("workload.sublayer=OP",) + extra
    assert _stats_json(monkeypatch, True, *args) == _stats_json(monkeypatch, False, *args)


def test_lazy_advance_skips_and_agrees_with_eager():
    """Random batches, advanced in small random steps: same completions, same ticks, same stats."""
    rng = np.random.default_rng(7)
    subs = []
    t = 0
    for _ in range(300):
        t += int(rng.integers(0, 40_000))
        n = int(rng.integers(1, 40))
        subs.append((t, rng.integers(0, 1 << 26, n) * 64, int(rng.integers(0, 3)), int(rng.integers(0, 2))))
    out = []
    for lazy in (True, False):
        ms = MemorySystem(SystemConfig())
        ms.lazy = lazy
        runs = 0
        orig = ms._run

        def counting(until, stop, orig=orig, **kw):
            nonlocal runs
            runs += 1
            orig(until, stop, **kw)

        ms._run = counting
        done = []
        now = 0
        for tick, addrs, kind, stream in subs:
            while now + 4_000 < tick:
                now += 4_000
                ms.advance(now)
                done += [(b, d, now) for b, d in ms.pop_completed()]
            now = tick
            ms.advance(now)
            done += [(b, d, now) for b, d in ms.pop_completed()]
            ms.submit(tick, addrs, kind, stream, "gemm")
        ms.run_until_idle()
        done += [(b, d, -1) for b, d in ms.pop_completed()]
        st = json.dumps(ms.stats("m").to_dict(), sort_keys=True, default=str)
        out.append((done, st, runs))
    (d_lazy, s_lazy, r_lazy), (d_eager, s_eager, r_eager) = out
    assert d_lazy == d_eager  # same batches discovered at the same step, same completion ticks
    assert s_lazy == s_eager
    assert r_lazy < r_eager
