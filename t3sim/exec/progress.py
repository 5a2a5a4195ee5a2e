"""Sweep progress on stderr: a redrawn bar on a terminal, plain lines elsewhere (CI, logs).

Every finished point gets one line (label, outcome, result directory). The progress itself -- the
percent of the sweep's workload done, the running simulations and the ETA -- is, on a terminal, a bar
below those lines redrawn every ``interval`` seconds by a background thread (so it keeps ticking
during long points); when the stream is not a terminal it is a plain line at most every
``log_every_s`` seconds (10 s), and each point line carries the elapsed time and ETA.

**Percent.** Each point has a weight, the bytes its workload moves
(:func:`t3sim.system.workmeter.workload_bytes`; points that share a simulation share its weight), so
the percent is workload retired over total, not points over points: finished and reused points count
whole, running ones by the fraction their simulation reports (:mod:`t3sim.sim.report`, from this
process or sent back by worker processes).

**ETA.** The remaining weight divided by the rate at which this run has retired weight (reused
points are free and do not count), so it accounts for however many workers run in parallel.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from typing import IO, Dict, Optional, Sequence, Tuple

from t3sim.sim import report
from t3sim.sim.report import RunStatus, fmt_duration  # noqa: F401  (fmt_duration: re-exported)

BAR_WIDTH = 20


class Progress:
    """Reports a sweep's progress to ``stream`` (stderr by default).

    Args:
        stream: where to write.
        tty: draw a live bar (default: ``stream.isatty()``).
        interval: seconds between bar redraws on a terminal (default :data:`t3sim.sim.report.POLL_S`).
        log_every_s: without a terminal, at most one progress line per this many seconds
            (default :data:`t3sim.sim.report.LOG_EVERY_S`, 10 s).
        unit: what the sweep's items are called (``points``, ``rows``).
        resumable: whether an interrupted run resumes when run again (finished items are saved).
    """

    def __init__(self, stream: Optional[IO[str]] = None, tty: Optional[bool] = None, interval: Optional[float] = None,
                 log_every_s: Optional[float] = None, unit: str = "points", resumable: bool = True):
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.tty = tty
        self.interval = max(0.01, report.POLL_S) if interval is None else interval
        self.log_every_s = report.LOG_EVERY_S if log_every_s is None else log_every_s
        self.unit = unit
        self.resumable = resumable
        self.total = self.done = self.reused = self.to_run = self.simulated = self.failed = 0
        self.weight_total = self.weight_done = self.weight_run = 0.0
        self.running: Dict[object, Tuple[float, RunStatus, str]] = {}  # task -> (weight, status, label)
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._bar_shown = False
        self._last_log = time.monotonic()
        self.quiet = False

    # -- called by the runner -------------------------------------------------
    def begin(self, experiment: str, total: int, reused: int, where: str,
              weights: Optional[Sequence[float]] = None, reused_weight: Optional[float] = None) -> None:
        """The sweep starts: ``total`` items, ``reused`` of them already done.

        ``weights``: every item's weight (default 1 each); ``reused_weight``: the reused items' share of it
        (default ``reused`` x the mean weight).
        """
        self.total, self.done, self.reused, self.to_run = total, reused, reused, total - reused
        self.weight_total = float(sum(weights)) if weights is not None else float(total)
        if reused_weight is None:
            reused_weight = reused * (self.weight_total / total if total else 0.0)
        self.weight_done = float(reused_weight)
        self.t0 = time.monotonic()
        parts = [f"{total} {self._unit(total)}"]
        if reused:
            parts.append(f"{reused} already simulated (reused; --force recomputes)")
        if self.to_run:
            parts.append(f"{self.to_run} to simulate on {where}")
        self._line(f"{experiment}: " + ", ".join(parts))
        if self.to_run and not self.quiet:
            self._thread = threading.Thread(target=self._ticker, name="t3sim-progress", daemon=True)
            self._thread.start()

    def note(self, text: str) -> None:
        """A one-line remark about the run (e.g. reused results from older code)."""
        self._line(text)

    def update(self, task: object, status: RunStatus, weight: float = 1.0, label: str = "") -> None:
        """A running simulation (``task``, worth ``weight``) reported how far it got."""
        with self._lock:
            self.running[task] = (weight, status, label)

    def point_done(self, label: str, text: str, failed: bool = False, weight: float = 1.0,
                   task: object = None) -> None:
        """One item finished (simulated or failed); ``text`` says how. ``task``: the simulation it came from, whose
        partial progress is dropped in the same step, so the percent never dips between the two."""
        with self._lock:
            if task is not None:
                self.running.pop(task, None)
            self.done += 1
            self.weight_done += weight
            self.weight_run += weight
            if failed:
                self.failed += 1
            else:
                self.simulated += 1
        line = f"[{self.done}/{self.total}] {label}: {text}"
        if not self.tty:
            line += f" ({self.percent():.1f}% done, elapsed {fmt_duration(self.elapsed())}, ETA {fmt_duration(self.eta())})"
        self._line(line)

    def end(self, how: str = "done") -> None:
        """The sweep ended: ``done``, ``interrupted`` (Ctrl-C, SIGTERM) or ``stopped`` (an error)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.interval + 1)
        took = fmt_duration(self.elapsed())
        saved = self.done - self.failed
        counts = f"{self.reused} reused, {self.simulated} simulated, {self.failed} failed"
        if how == "done":
            msg = f"done in {took}: {self.total} {self._unit(self.total)} ({counts})"
        elif self.resumable:
            msg = (f"{how} after {took}: {saved} of {self.total} {self.unit} have results ({counts}); "
                   f"run the same command again to resume")
        else:
            msg = f"{how} after {took}: {saved} of {self.total} {self.unit} simulated ({counts})"
        self._line(msg, bar=False)

    # -- numbers --------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def _partial(self) -> float:
        return sum(w * (s.fraction or 0.0) for w, s, _ in self.running.values())

    def fraction(self) -> float:
        """Workload done, 0..1 (finished and reused items whole, running ones by their reported fraction)."""
        if self.weight_total <= 0:
            return 1.0
        return min(1.0, (self.weight_done + self._partial()) / self.weight_total)

    def percent(self) -> float:
        return 100.0 * self.fraction()

    def eta(self) -> Optional[float]:
        """Seconds left: remaining weight at the rate this run retired weight so far (None: no rate yet)."""
        if self.done == self.total:
            return 0.0
        retired = self.weight_run + self._partial()
        if retired <= 0:
            return None
        remaining = max(0.0, self.weight_total - self.weight_done - self._partial())
        return remaining * self.elapsed() / retired

    def status_line(self) -> str:
        """``34.5% | 3/10 points | running: base 45.0% (GEMM 120/272 WGs ...) | elapsed 0:12 | ETA 0:40``."""
        parts = [f"{self.percent():.1f}%"]
        running = list(self.running.values())
        if self.total == 1 and len(running) == 1:  # a single run: its own status is the whole story
            parts.append(running[0][1].text)
            running = []
        else:
            parts.append(f"{self.done}/{self.total} {self.unit}")
        if len(running) == 1:
            w, s, label = running[0]
            frac = f" {100 * s.fraction:.1f}%" if s.fraction is not None else ""
            parts.append(f"running {label}{frac}: {s.text}" if label else f"running{frac}: {s.text}")
        elif running:
            parts.append(f"{len(running)} running")
        parts += [f"elapsed {fmt_duration(self.elapsed())}", f"ETA {fmt_duration(self.eta())}"]
        return " | ".join(parts)

    def bar(self) -> str:
        frac = self.fraction()
        fill = int(round(frac * BAR_WIDTH))
        line = f"[{'#' * fill}{'.' * (BAR_WIDTH - fill)}] {self.status_line()}"
        width = shutil.get_terminal_size((120, 20)).columns - 1
        return line if len(line) <= width else line[: max(10, width - 3)] + "..."

    # -- output ---------------------------------------------------------------
    def _unit(self, n: int) -> str:
        return self.unit if n != 1 else self.unit.rstrip("s")

    def _line(self, text: str, bar: bool = True) -> None:
        with self._lock:
            if self._bar_shown:
                self.stream.write("\r\033[K")
                self._bar_shown = False
            self.stream.write(text + "\n")
            self._last_log = time.monotonic()
            if self.tty and bar and self.to_run and not self._stop.is_set():
                self.stream.write(self.bar())
                self._bar_shown = True
            self._flush()

    def _flush(self) -> None:
        flush = getattr(self.stream, "flush", None)
        if flush is not None:
            flush()

    def _ticker(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if self.total and self.done >= self.total:
                    continue  # every item has its line; only end()'s summary is left
                if self.tty:
                    self.stream.write("\r\033[K" + self.bar())
                    self._bar_shown = True
                elif time.monotonic() - self._last_log >= self.log_every_s:
                    self.stream.write(self.status_line() + "\n")
                    self._last_log = time.monotonic()
                else:
                    continue
                self._flush()


class Silent(Progress):
    """Reports nothing (the Python API's default)."""

    def __init__(self) -> None:
        super().__init__(stream=_Null(), tty=False)
        self.quiet = True


class _Null:
    def write(self, _s: str) -> int:
        return 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False
