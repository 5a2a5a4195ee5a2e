"""The engine never mistakes a deadlock or a stall for completion."""

from __future__ import annotations

import pytest
import simpy

from t3sim.errors import SimulationError
from t3sim.sim.engine import Component, Engine, call_at, succeed_later


class Worker(Component):
    def __init__(self, engine, name, store: simpy.Store, items: int):
        super().__init__(engine, name)
        self.store, self.items, self.got = store, items, 0
        engine.env.process(self.run())

    def run(self):
        while self.got < self.items:
            yield self.store.get()
            self.got += 1
            self.progressed()
        self.engine.finish()

    def pending(self):
        return f"waiting for {self.items - self.got} items" if self.got < self.items else ""


def test_completes():
    e = Engine(seed=1)
    s = simpy.Store(e.env)
    Worker(e, "w", s, 3)

    def prod():
        for i in range(3):
            yield e.env.timeout(10)
            yield s.put(i)

    e.env.process(prod())
    assert e.run() == 30


def test_deadlock_is_reported():
    e = Engine()
    s = simpy.Store(e.env)
    Worker(e, "consumer", s, 2)
    with pytest.raises(SimulationError, match=r"deadlock.*consumer: waiting for 2 items"):
        e.run()


def test_stall_is_reported():
    e = Engine(watchdog_idle_ticks=1000)
    s = simpy.Store(e.env)
    Worker(e, "consumer", s, 1)

    def spinner():  # keeps the event queue alive but never delivers
        while True:
            yield e.env.timeout(7)

    e.env.process(spinner())
    with pytest.raises(SimulationError, match=r"stall.*consumer: waiting for 1 items"):
        e.run()


def test_rng_is_seeded():
    """The same seed gives the same draws; another seed gives other draws (a seed that is ignored, or an RNG seeded
    from the clock, fails one of the two)."""
    def draws(seed):
        return Engine(seed=seed).rng.integers(1 << 30, size=8).tolist()

    assert draws(3) == draws(3)
    assert draws(3) != draws(4)
    assert draws(0) != draws(4)


def test_succeed_later_fires_once_at_its_tick_with_its_value():
    """One heap entry, same time and value as a timeout whose callback succeeds the event."""
    env = simpy.Environment()
    ev = env.event()
    seen = []
    ev.callbacks.append(lambda e: seen.append((env.now, e.value)))
    succeed_later(env, ev, "v", 7)
    assert ev.triggered and not ev.processed and len(env._queue) == 1
    with pytest.raises(RuntimeError):
        succeed_later(env, ev, "again", 3)
    env.run()
    assert seen == [(7, "v")] and ev.processed


def test_succeed_later_without_delay_succeeds_now():
    env = simpy.Environment()
    ev = env.event()
    succeed_later(env, ev, 1, 0)
    env.run()
    assert ev.processed and ev.value == 1 and env.now == 0


def test_beats_keep_a_long_unit_from_looking_stalled():
    """A unit of work longer than the window (a deep-K WG) is not a stall while it beats; beats are not progress."""
    e = Engine(watchdog_idle_ticks=1000)

    class Long(Component):
        def run(self):
            for _ in range(10):
                yield e.env.timeout(500)
                self.beat()
            self.progressed()
            e.finish()

    w = Long(e, "long")
    e.env.process(w.run())
    assert e.run() == 5000 and (w.progress, w.beats) == (1, 10)


def test_a_wg_longer_than_the_watchdog_window_completes():
    """One WG whose k-loop outlasts watchdog_idle_ns (every k-step beats the watchdog): not a stall."""
    from tests.system.helpers import exp, gemm_only

    e = exp("workload.tokens=128", "workload.model.hidden_size=4096", "workload.sublayer=FC-2", "system.gpu.num_cus=1",
            "simulation.watchdog_idle_ns=10000")
    run, m = gemm_only(e)
    wgs = m.kernel.num_wgs
    assert m.engine.env.now / wgs > 2 * 10_000 * 1000  # each WG (one at a time on the one CU) outlasts the 10 us window


def _run_once():
    """A finished run whose engine is garbage with a reference cycle (as every model is); a weakref to it."""
    import weakref

    e = Engine(seed=1)
    s = simpy.Store(e.env)
    Worker(e, "w", s, 1)
    s.put(0)
    e.run()
    e.cycle = e  # what a model's events, processes and closures are full of
    return weakref.ref(e)


def test_a_run_collects_earlier_runs_garbage_before_freezing_the_heap(monkeypatch):
    """``Engine.run`` freezes the heap (``gc.freeze``) so that the young collections skip the model; without a
    collection first it froze the garbage of earlier runs with it, run after run, and a sweep worker grew by
    ~80 MB a point (engine.collect_earlier_garbage)."""
    import gc

    from t3sim.sim import engine as E

    gc.collect()
    gc.disable()  # no automatic collection in between: only what the engine does
    try:
        monkeypatch.setattr(E, "GC_COLLECT_GROWTH_MiB", 1 << 30)  # never: the garbage survives the next run
        old = _run_once()
        _run_once()
        assert old() is not None
        monkeypatch.setattr(E, "GC_COLLECT_GROWTH_MiB", 0)  # a run collects first
        _run_once()
        assert old() is None
    finally:
        gc.enable()


def test_garbage_collection_is_triggered_by_growth_since_the_last_collection(monkeypatch):
    """``collect_earlier_garbage`` collects when the resident memory grew by ``GC_COLLECT_GROWTH_MiB`` since the
    last collection left it. A trigger on the peak (which never falls) came 256 MiB above the previous one each
    time, so a sweep worker's memory grew without bound."""
    from t3sim.sim import engine as E

    level = [0.0]
    collected = []
    monkeypatch.setattr(E, "rss_MiB", lambda: level[0])
    monkeypatch.setattr(E.gc, "collect", lambda: (collected.append(level[0]), level.__setitem__(0, level[0] - 200)))
    monkeypatch.setattr(E, "_rss_at_collect", [100.0])
    monkeypatch.setattr(E, "GC_COLLECT_GROWTH_MiB", 256)
    for rss in (300, 400, 500, 300, 400, 500, 600):  # a worker's memory across points
        level[0] = rss
        E.collect_earlier_garbage()
    # 400 is 300 above 100: collect, leaving 200; 500 is 300 above that: collect, leaving 300; 600 is 300 above it.
    # A trigger on the peak would have collected at 400 only, then waited for 656.
    assert collected == [400, 500, 600], collected
    # memory handed back by other means lowers the base: 50, then 350 is 300 above it
    for rss in (50, 350):
        level[0] = rss
        E.collect_earlier_garbage()
    assert collected == [400, 500, 600, 350], collected


@pytest.mark.parametrize("runner", ["engine", "simpy"])
def test_call_at_keeps_the_order_a_timeout_would_have(runner):
    """``call_at`` takes a ``Timeout``'s place in the heap: callbacks at one tick, mixed with timeouts and other
    events, fire in the order they were scheduled, under the engine's loop and under simpy's own ``run``."""
    def schedule(env, use_call_at, log):
        for i in range(6):
            t = 10 * (i % 3)
            if use_call_at and i % 2:
                call_at(env, env.now + t, lambda e: log.append(("call", e._value, env.now)), i)
            else:
                env.timeout(t, i).callbacks.append(lambda e: log.append(("call", e.value, env.now)))
            env.timeout(t).callbacks.append(lambda e, i=i: log.append(("other", i, env.now)))

    logs = []
    for use_call_at in (False, True):
        eng = Engine()
        env = eng.env
        log = []
        schedule(env, use_call_at, log)
        if runner == "engine":
            env.timeout(30).callbacks.append(lambda e: eng.done.succeed())
            eng.run()
        else:
            env.run()
        logs.append(log)
    assert logs[0] == logs[1]
    assert [x[1] for x in logs[0] if x[0] == "call"] == [0, 3, 1, 4, 2, 5]
