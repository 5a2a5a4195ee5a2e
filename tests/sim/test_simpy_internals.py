"""The simpy internals t3sim's engine relies on: fail loudly when an installed simpy changes them.

``t3sim/sim/engine.py`` steps simpy's event heap itself (``Environment._queue``, ``_now``, ``schedule``;
``Event._ok``, ``_value``, ``_defused``) for speed, and ``pyproject.toml`` pins the simpy versions whose
internals were checked (4.0.0, 4.0.2, 4.1.0 and 4.1.2 have the same ``Environment.step``). If one of
these tests fails after a simpy upgrade, review ``Engine._loop``, ``succeed_later`` and ``Dispatcher``
against the new ``simpy.core.Environment.step`` before widening the pin.
"""

from __future__ import annotations

import inspect
import re

import pytest
import simpy

from t3sim.sim.engine import SIMPY_VERSIONS, Engine, check_simpy, succeed_later
from tests.conftest import REPO

REVIEW = "simpy changed an internal t3sim's engine uses: review t3sim/sim/engine.py before widening the pin"


def _version_tuple(v: str):
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def test_pin_in_pyproject_matches_engine_and_installed_simpy():
    text = (REPO / "pyproject.toml").read_text()
    pins = re.findall(r'"simpy([^"]*)"', text)
    assert pins == [SIMPY_VERSIONS], f"pyproject pins simpy{pins}, the engine was checked for simpy{SIMPY_VERSIONS}"
    lo, hi = re.fullmatch(r">=([\d.]+),<([\d.]+)", SIMPY_VERSIONS).groups()
    v = _version_tuple(simpy.__version__)
    assert _version_tuple(lo) <= v < _version_tuple(hi), f"installed simpy {simpy.__version__} outside {SIMPY_VERSIONS}"


def test_step_does_what_the_engine_inlines():
    src = inspect.getsource(simpy.core.Environment.step)
    for line in ("self._now, _, _, event = heappop(self._queue)",
                 "callbacks, event.callbacks = event.callbacks, None",
                 "if not event._ok and not hasattr(event, '_defused'):",
                 "exc = type(event._value)(*event._value.args)"):
        assert line in src, f"{REVIEW}: Environment.step no longer has {line!r}"
    sched = inspect.getsource(simpy.core.Environment.schedule)
    assert "heappush" in sched and "self._queue" in sched and "self._now + delay" in sched, REVIEW


def test_heap_entries_and_event_fields():
    env = simpy.Environment()
    ev = env.timeout(7, value="x")
    assert len(env._queue) == 1
    t, prio, eid, queued = env._queue[0]
    assert (t, prio, queued) == (7, simpy.events.NORMAL, ev) and isinstance(eid, int), REVIEW
    assert ev._ok is True and ev._value == "x", REVIEW
    pending = env.event()
    assert pending._value is simpy.events.PENDING and not pending.triggered, REVIEW
    env.schedule(pending, simpy.events.URGENT, 3)
    assert sorted(env._queue)[0][:2] == (3, simpy.events.URGENT), REVIEW
    failed = env.event()
    failed.fail(ValueError("boom"))
    assert failed._ok is False and isinstance(failed._value, ValueError) and not hasattr(failed, "_defused"), REVIEW
    failed.defused = True
    assert hasattr(failed, "_defused"), REVIEW
    env._now = 5
    assert env.now == 5, REVIEW
    check_simpy()  # the import-time guard agrees


def _scenario(env, log):
    """Processes, timeouts, callbacks, an all_of, a defused failure and a succeed_later: their order is the trace."""

    def worker(name, delays):
        for d in delays:
            yield env.timeout(d)
            log.append((env.now, name))

    def waiter():
        a, b = env.timeout(4, "a"), env.timeout(4, "b")
        got = yield env.all_of([a, b])
        log.append((env.now, "all_of", tuple(sorted(got.values()))))
        bad = env.event()
        bad.fail(RuntimeError("handled"))
        bad.defused = True
        later = env.event()
        succeed_later(env, later, "late", 6)
        v = yield later
        log.append((env.now, v))

    env.process(worker("w1", [1, 2, 3]))
    env.process(worker("w2", [2, 2, 2]))
    env.process(waiter())
    cb = env.timeout(5)
    cb.callbacks.append(lambda e: log.append((env.now, "callback")))


def test_engine_loop_matches_simpy_run():
    ref_log: list = []
    env = simpy.Environment()
    _scenario(env, ref_log)
    env.run()

    eng = Engine(seed=0)
    log: list = []
    _scenario(eng.env, log)
    eng.env.timeout(20).callbacks.append(lambda e: eng.finish())
    end = eng.run()
    assert log == ref_log and end == 20
    assert ref_log[-1] == (10, "late") and (4, "all_of", ("a", "b")) in ref_log


def test_unhandled_failure_is_raised_like_simpy():
    eng = Engine(seed=0)
    ev = eng.env.event()
    ev.fail(KeyError("lost"))
    with pytest.raises(KeyError) as info:
        eng.run()
    assert isinstance(info.value.__cause__, KeyError)
