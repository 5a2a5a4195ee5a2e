"""The engine never mistakes a deadlock or a stall for completion."""

from __future__ import annotations

import pytest
import simpy

from t3sim.errors import SimulationError
from t3sim.sim.engine import Component, Engine


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
    assert Engine(seed=3).rng.integers(1 << 30) == Engine(seed=3).rng.integers(1 << 30)
