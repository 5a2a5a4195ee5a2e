"""The simulation engine: one simpy environment, one seeded RNG, an explicit done event and a watchdog.

Contract (developers' guide, "never mistake a deadlock for completion"):

* A run ends only when its explicit ``done`` event fires.
* If the event queue drains before that, the run is a **deadlock**; if
  simulated time advances by more than ``watchdog_idle_ticks`` without any
  component reporting progress, it is a **livelock/stall** (checked every
  1024 events and whenever the next event lies beyond the window). Both raise
  :class:`~t3sim.errors.SimulationError` naming every component that still
  holds work (``Component.pending()``).
* Randomness comes only from ``Engine.rng`` (``numpy.random.Generator``
  seeded from the config), never from module globals.

Time is integer ticks (1 tick = 1 ps; see :mod:`t3sim.sim.clock`).
"""

from __future__ import annotations

import gc
import heapq
import os
import sys
import time
from typing import Callable, List, Optional, Tuple

import numpy as np
import simpy

from t3sim.errors import SimulationError
from t3sim.sim import report

#: simulated time (ticks: 1 us) after which the event loop reads the wall clock for a progress report even
#: between its every-1024-events checks (a compiled window advances far within one simpy event)
REPORT_CHECK_TICKS = 1_000_000
import ctypes
import resource

from t3sim.sim.clock import TICKS_PER_US

#: the cyclic GC's young-generation threshold while a run's event loop runs (Python's default: 700)
GC_YOUNG_THRESHOLD = 100_000
#: a run first collects the garbage of earlier runs in this process (their models: cycles of events, processes
#: and closures) once the process's resident memory has grown by this many MiB since the last such collection; else
#: ``gc.freeze`` would freeze that garbage with the new model, and a process that simulates point after point
#: (a sweep's worker, ``-j 1``) grew by ~80 MB a point (its full collections never came: ``gc.unfreeze`` does not
#: count the unfrozen objects towards the next one)
GC_COLLECT_GROWTH_MiB = 256
_rss_at_collect = [0.0]


def peak_rss_MiB() -> float:
    """This process's peak resident memory so far, MiB (``ru_maxrss``: bytes on macOS, KiB elsewhere)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / (1 << 20) if sys.platform == "darwin" else r / 1024


def rss_MiB() -> float:
    """This process's resident memory now, MiB (``/proc/self/statm``); where there is none, the peak so far."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return peak_rss_MiB()
    return pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def collect_earlier_garbage() -> bool:
    """Collect earlier runs' garbage if the resident memory grew by :data:`GC_COLLECT_GROWTH_MiB` since the last
    collection left it (called before a model is built and before a run freezes the heap); returns whether it
    collected. Measured from what the collection left, not from the peak: a peak-based trigger came each time 256
    MiB above the last one, so a worker's memory grew without bound over a long sweep. Measured on a T3-MCA run at
    1024 tokens repeated 24 times in one process: peak-based, 320 -> 1183 MiB and rising; from the collection's
    level, the level after each collection still crept 406 -> 580 MiB; with the heap trimmed too, 368-543 MiB
    throughout, the level after a collection 360-374 MiB (tests/sim/test_engine.py)."""
    rss = rss_MiB()
    _rss_at_collect[0] = base = min(_rss_at_collect[0], rss)  # memory handed back since also lowers the base
    if rss - base < GC_COLLECT_GROWTH_MiB:
        return False
    gc.collect()
    _trim_heap()
    _rss_at_collect[0] = rss_MiB()
    return True


_libc: List = [None]  # glibc's malloc_trim once looked up (False: none)


def _trim_heap() -> None:
    """Hand the C heap's free memory back to the system (glibc ``malloc_trim``; elsewhere nothing): without it the
    freed garbage of earlier runs stayed resident and each collection left the process larger."""
    if _libc[0] is None:
        try:
            _libc[0] = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _libc[0] = False
    if _libc[0]:
        _libc[0](0)

#: simpy versions whose internals the engine uses (``Environment._queue``/``_now``/``schedule``, ``Event._ok``/
#: ``_value``/``_defused``, the 4-tuple heap entries): pyproject.toml pins ``simpy>=4.0,<4.2`` and
#: tests/sim/test_simpy_internals.py fails loudly when an installed simpy no longer matches.
SIMPY_VERSIONS = ">=4.0,<4.2"


def check_simpy() -> None:
    """Raise RuntimeError, naming the installed simpy, if it lacks the internals the engine relies on."""
    try:
        env = simpy.Environment()
        ev = env.timeout(3, value="v")
        t, prio, _eid, queued = env._queue[0]
        ok = (queued is ev and t == 3 and prio == simpy.events.NORMAL and ev._ok is True and ev._value == "v"
              and env._now == 0 and not hasattr(ev, "_defused"))
    except (AttributeError, ValueError, TypeError, IndexError):
        ok = False
    if not ok:
        raise RuntimeError(f"t3sim's engine needs simpy{SIMPY_VERSIONS} (it steps simpy's event heap itself); "
                           f"installed: simpy {getattr(simpy, '__version__', '?')}. pip install 'simpy{SIMPY_VERSIONS}'")


check_simpy()


class _Call:
    """A callback on the event heap (:func:`call_at`): what the engine's loop and simpy's ``Environment.step`` read of
    an event -- ``callbacks``, ``_ok``, ``_value`` -- and no more. Nothing can wait on it."""

    __slots__ = ("callbacks", "_ok", "_value")

    def __init__(self, callback: Callable, value) -> None:
        self.callbacks = [callback]
        self._ok = True
        self._value = value


def call_at(env: simpy.Environment, tick: int, callback: Callable, value) -> None:
    """Call ``callback(entry)`` at ``tick`` (>= now) with ``entry._value`` = ``value``, as one heap entry: the same key
    ``(tick, NORMAL, eid)`` that ``env.timeout(tick - now, value)`` would get, so the event order is the same, but
    without the ``Timeout`` (nothing waits on it; a link's packet delivery,
    :meth:`t3sim.interconnect.link.Link.put`)."""
    heapq.heappush(env._queue, (tick, simpy.events.NORMAL, next(env._eid), _Call(callback, value)))


def succeed_later(env: simpy.Environment, event: simpy.Event, value, delay: int) -> simpy.Event:
    """Trigger ``event`` with ``value`` ``delay`` ticks from now, as one heap entry.

    Equivalent to ``env.timeout(delay)`` whose callback calls ``event.succeed(value)``, minus the
    extra event: ``event`` takes the timeout's place in the schedule (simpy's own ``Timeout``
    sets ``_ok``/``_value`` and schedules itself the same way). ``event.triggered`` is true from
    now on, ``event.processed`` only once it has fired; callers wait on it as on any event.
    """
    if delay <= 0:
        return event.succeed(value)
    if event.triggered:
        raise RuntimeError(f"{event} has already been triggered")
    event._ok = True
    event._value = value
    env.schedule(event, simpy.events.NORMAL, int(delay))
    return event


class Dispatcher:
    """Fires events due at a tick in a canonical order, before any normal-priority event of that tick.

    ``at(tick, key, event, value)`` makes ``event`` succeed with ``value`` at ``tick``. All events due
    at one tick are fired together by one URGENT-priority heap entry, in ascending ``key`` order, and
    before every NORMAL-priority event of that tick. So the order in which their callbacks run
    depends on the keys alone, not on when (or in which order) they were scheduled -- the memory
    port uses this to make results independent of how often it polls the memory (its pump cadence).
    One per environment: :func:`dispatcher`.
    """

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self._due: dict = {}

    def at(self, tick: int, key, event: simpy.Event, value) -> None:
        env = self.env
        if tick < env.now:
            raise RuntimeError(f"dispatcher: event due at tick {tick}, before now ({env.now})")
        due = self._due.get(tick)
        if due is None:
            due = self._due[tick] = []
            d = simpy.Event(env)
            d._ok = True
            d._value = tick
            d.callbacks.append(self._fire)
            env.schedule(d, simpy.events.URGENT, tick - env.now)
        due.append((key, event, value))

    def _fire(self, d: simpy.Event) -> None:
        items = self._due.pop(d._value)
        items.sort(key=_first)
        for _key, ev, value in items:  # as simpy's step would process each event, in key order
            ev._ok = True
            ev._value = value
            callbacks, ev.callbacks = ev.callbacks, None
            for callback in callbacks:
                callback(ev)


def _first(item):
    return item[0]


def dispatcher(env: simpy.Environment) -> Dispatcher:
    """The environment's :class:`Dispatcher` (created on first use)."""
    d = getattr(env, "_t3sim_dispatcher", None)
    if d is None:
        d = env._t3sim_dispatcher = Dispatcher(env)
    return d


class Component:
    """Base for simulated components: a name, a progress counter and a pending-work report.

    Subclasses call :meth:`progressed` whenever they complete a unit of work
    and override :meth:`pending` to describe outstanding work (empty string
    when idle). A component whose unit of work can outlast the watchdog's window
    (a WG's k-loop over a deep K) also calls :meth:`beat` on finer steps: the
    watchdog counts beats, progress displays count only units.
    """

    def __init__(self, engine: "Engine", name: str):
        self.engine = engine
        self.env = engine.env
        self.name = name
        self.progress = 0
        self.beats = 0
        engine.components.append(self)

    def progressed(self, n: int = 1) -> None:
        self.progress += n

    def beat(self) -> None:
        """Tell the watchdog that work inside a unit advanced (not counted as progress)."""
        self.beats += 1

    def pending(self) -> str:
        """Human-readable outstanding work ('' = nothing outstanding)."""
        return ""


class Engine:
    """Owns the simpy environment, the RNG, the component list and the run loop."""

    def __init__(self, seed: int = 0, watchdog_idle_ticks: int = 1_000 * TICKS_PER_US):
        if watchdog_idle_ticks <= 0:
            raise ValueError("watchdog_idle_ticks must be positive")
        self.env = simpy.Environment()
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.components: List[Component] = []
        self.watchdog_idle_ticks = int(watchdog_idle_ticks)
        self.done = self.env.event()
        self.events_processed = 0
        #: the workload meter: () -> (fraction of the workload retired, 0..1; a short description), set by
        #: the model that knows the workload (t3sim.system.workmeter); None: progress shows simulated time only
        self.work: Optional[Callable[[], Tuple[Optional[float], str]]] = None  # (fraction or None, detail)

    # ------------------------------------------------------------------ run

    def stuck_report(self) -> str:
        busy = [f"{c.name}: {p}" for c in self.components if (p := c.pending())]
        return "; ".join(busy) if busy else "no component reports pending work"

    def run(self, progress: Optional[Callable[[int], str]] = None, progress_every_s: Optional[float] = None,
            stream=sys.stderr) -> int:
        """Run until ``done`` fires; return the final time in ticks.

        Progress (:mod:`t3sim.sim.report`): about every :data:`~t3sim.sim.report.POLL_S` wall seconds the
        reporter set by :func:`~t3sim.sim.report.reporting` gets a :class:`~t3sim.sim.report.RunStatus`
        (simulated time, the fraction of the workload retired from :attr:`work`, and a description). With
        no reporter set, a run given ``progress`` writes to ``stream`` itself (a terminal line redrawn at
        most every ``progress_every_s`` seconds; elsewhere one line at most every 10 s).

        Args:
            progress: optional callable(now_ticks) -> what the run is doing (``[exp] simulated 12.3 us``).
        """
        reporter = report.current()
        own = None
        if reporter is None and progress is not None:
            own = reporter = report.StreamReporter(stream, tty_every_s=progress_every_s)
        # The run allocates millions of short-lived objects (events, callbacks) on top of a large,
        # long-lived model: freeze the model out of the cyclic GC's scans and collect the young
        # generation less often (the GC took ~7 % of a T3 run's CPU time; results are unaffected).
        gc_threshold = gc.get_threshold()
        collect_earlier_garbage()
        gc.freeze()
        gc.set_threshold(max(gc_threshold[0], GC_YOUNG_THRESHOLD), *gc_threshold[1:])
        try:
            self._loop(reporter, progress)
        finally:
            gc.set_threshold(*gc_threshold)
            gc.unfreeze()
            if own is not None:
                own.close()
        return int(self.done.value) if isinstance(self.done.value, int) else self.env.now

    def status(self, now: int, label: Optional[Callable[[int], str]], wall_s: float) -> report.RunStatus:
        """This run's :class:`~t3sim.sim.report.RunStatus` at simulated time ``now``."""
        text = label(now) if label is not None else f"simulated {now / TICKS_PER_US:,.1f} us"
        fraction = None
        if self.work is not None:
            fraction, detail = self.work()
            fraction = None if fraction is None else min(1.0, max(0.0, fraction))
            if detail:
                text += f"; {detail}"
        return report.RunStatus(now, fraction, text, wall_s)

    def _loop(self, reporter, label) -> None:
        """The event loop of :meth:`run` (simpy's ``Environment.step`` inlined, plus the watchdog)."""
        env = self.env
        queue = env._queue  # simpy's event heap
        pop = heapq.heappop
        done = self.done
        window = self.watchdog_idle_ticks
        t_start = last_report = time.monotonic()
        poll_s = report.POLL_S
        last_progress, last_progress_t = -1, env.now
        last_report_tick = env.now
        n = self.events_processed
        try:
            while not done.triggered:
                if not queue:
                    raise SimulationError(
                        f"deadlock: no events left at t={env.now / TICKS_PER_US:.3f} us but the run is not done; "
                        f"stuck: {self.stuck_report()}")
                now, _, _, event = pop(queue)
                env._now = now
                callbacks, event.callbacks = event.callbacks, None
                n += 1
                for callback in callbacks:
                    callback(event)
                if not event._ok and not hasattr(event, "_defused"):
                    # a failed event nobody handled: re-raise its exception, as simpy's step does
                    exc = type(event._value)(*event._value.args)
                    exc.__cause__ = event._value
                    raise exc
                if (n & 0x3FF) == 0 or (queue and queue[0][0] - last_progress_t > window):
                    total = sum(c.progress + c.beats for c in self.components)
                    if total != last_progress:
                        # env._now, not now: a callback may have advanced it (a compiled window that ran
                        # ahead of this event: t3sim.window.gemm_window); otherwise the two are equal
                        last_progress, last_progress_t = total, env._now
                    elif now - last_progress_t > window:
                        raise SimulationError(
                            f"stall: no progress for {(now - last_progress_t) / TICKS_PER_US:g} us of simulated time "
                            f"(the watchdog, simulation.watchdog_idle_ns) at t={now / TICKS_PER_US:.3f} us; stuck: "
                            f"{self.stuck_report()}")
                if reporter is not None and ((n & 0x3FF) == 0 or env._now - last_report_tick > REPORT_CHECK_TICKS):
                    # every 1024 events, or whenever simulated time moved by REPORT_CHECK_TICKS (a compiled window
                    # runs up to 2^16 of its own events inside one simpy event: t3sim.window.gemm_window)
                    last_report_tick = env._now
                    wall = time.monotonic()
                    if wall - last_report >= poll_s:
                        reporter(self.status(env._now, label, wall - t_start))
                        last_report = wall
        finally:
            self.events_processed = n

    def finish(self) -> None:
        """Fire the done event at the current time."""
        if not self.done.triggered:
            self.done.succeed(self.env.now)
