"""Progress of one running simulation: how the engine says how far it got, and who listens.

While its event loop runs, :meth:`t3sim.sim.engine.Engine.run` calls the active *reporter* with a
:class:`RunStatus` about every :data:`POLL_S` wall seconds: the simulated time, the fraction of the
workload retired (when the model provides a meter, :attr:`Engine.work_fraction`, e.g. WGs and bytes
retired over their totals: :mod:`t3sim.system.workmeter`) and a one-line description.

The reporter is set per context (:func:`reporting`): a sweep routes it into its own progress display
(:mod:`t3sim.exec.progress`), a worker process sends it back to the parent. With none set, a run that
asks for progress writes it to stderr itself (:class:`StreamReporter`): on a terminal one line redrawn
in place, elsewhere (a log, CI) one line per update and at most one every :data:`LOG_EVERY_S` seconds.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import IO, Callable, Iterator, Optional

#: wall seconds between the engine's progress reports (cheap: the reporter decides what to print)
POLL_S = 0.5
#: a terminal's progress line is redrawn at most this often (seconds)
TTY_EVERY_S = 1.0
#: without a terminal, at most one progress line per this many seconds
LOG_EVERY_S = 10.0


@dataclass(frozen=True)
class RunStatus:
    """One progress report of a running simulation.

    Attributes:
        now_ticks: simulated time (ticks, 1 tick = 1 ps).
        fraction: fraction of the workload retired, 0..1, or None when the run has no meter.
        text: what the run is doing, one line (``[default] simulated 1,234.5 us; GEMM 1024/2176 WGs``).
        wall_s: wall seconds since the run's event loop started.
    """

    now_ticks: int
    fraction: Optional[float]
    text: str
    wall_s: float

    def eta_s(self) -> Optional[float]:
        """Seconds left at the rate so far (None until some work is retired)."""
        if self.fraction is None or self.fraction <= 0:
            return None
        return self.wall_s * (1 - self.fraction) / self.fraction


Reporter = Callable[[RunStatus], None]
_current: ContextVar[Optional[Reporter]] = ContextVar("t3sim_run_reporter", default=None)


def current() -> Optional[Reporter]:
    """The reporter set by :func:`reporting` in this context, if any."""
    return _current.get()


@contextmanager
def reporting(reporter: Optional[Reporter]) -> Iterator[None]:
    """Send the progress of simulations run inside the block to ``reporter`` (None: to nobody)."""
    token = _current.set(reporter if reporter is not None else _silent)
    try:
        yield
    finally:
        _current.reset(token)


def install(reporter: Optional[Reporter]) -> None:
    """Send the progress of every later simulation in this context to ``reporter`` (None: to nobody);
    for a worker process, whose simulations must not write to the terminal it shares."""
    _current.set(reporter if reporter is not None else _silent)


def _silent(_status: RunStatus) -> None:
    pass


def fmt_duration(s: Optional[float]) -> str:
    """``1:02:03`` / ``2:03`` style; ``?`` when unknown."""
    if s is None:
        return "?"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def describe(status: RunStatus) -> str:
    """``34.5% | [default] simulated 12.3 us; ... | ETA 1:02`` (percent and ETA only when known)."""
    parts = []
    if status.fraction is not None:
        parts.append(f"{100 * status.fraction:.1f}%")
    parts.append(status.text)
    parts.append(f"elapsed {fmt_duration(status.wall_s)}")
    if status.fraction is not None:
        parts.append(f"ETA {fmt_duration(status.eta_s())}")
    return " | ".join(parts)


class StreamReporter:
    """Writes a run's progress to ``stream``: redrawn in place on a terminal, else one line per update
    at most every ``log_every_s`` seconds. :meth:`close` ends a redrawn line."""

    def __init__(self, stream: Optional[IO[str]] = None, tty: Optional[bool] = None,
                 log_every_s: Optional[float] = None, tty_every_s: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.tty = tty
        if tty:
            self.every = TTY_EVERY_S if tty_every_s is None else tty_every_s
        else:
            self.every = LOG_EVERY_S if log_every_s is None else log_every_s
        self.clock = clock
        self._last: Optional[float] = None
        self._open = False

    def __call__(self, status: RunStatus) -> None:
        now = self.clock()
        if self._last is not None and now - self._last < self.every:
            return
        if self._last is None and not self.tty and status.wall_s < self.every:
            return  # a log gets its first line after one interval, like every later one
        self._last = now
        line = describe(status)
        if self.tty:
            self.stream.write("\r\033[K" + line)
            self._open = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False
