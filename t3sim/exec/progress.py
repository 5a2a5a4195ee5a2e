"""Sweep progress on stderr: a redrawn bar on a terminal, plain lines elsewhere (CI, logs).

Every finished point gets one line (label, outcome, result directory). On a
terminal a bar below those lines shows points done/total, elapsed time and
the ETA, redrawn every ``interval`` seconds by a background thread so it
keeps ticking during long points; when the stream is not a TTY there is no
bar and each point line carries the elapsed time and ETA instead.

The ETA is the remaining points to simulate divided by the rate at which
this run has finished simulated points (reused points are free and do not
count), so it accounts for however many workers run in parallel.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Optional

BAR_WIDTH = 24


def fmt_duration(s: Optional[float]) -> str:
    """``1:02:03`` / ``2:03`` style; ``?`` when unknown."""
    if s is None:
        return "?"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


class Progress:
    """Reports a sweep's progress to ``stream`` (stderr by default).

    Args:
        stream: where to write.
        tty: draw a live bar (default: ``stream.isatty()``).
        interval: seconds between bar redraws on a terminal.
    """

    def __init__(self, stream: Optional[IO[str]] = None, tty: Optional[bool] = None, interval: float = 0.5):
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.tty = tty
        self.interval = interval
        self.total = self.done = self.reused = self.to_run = self.simulated = self.failed = 0
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._bar_shown = False

    # -- called by the runner -------------------------------------------------
    def begin(self, experiment: str, total: int, reused: int, where: str) -> None:
        self.total, self.done, self.reused, self.to_run = total, reused, reused, total - reused
        self.t0 = time.monotonic()
        parts = [f"{total} point{'s' if total != 1 else ''}"]
        if reused:
            parts.append(f"{reused} already simulated (reused; --force recomputes)")
        if self.to_run:
            parts.append(f"{self.to_run} to simulate on {where}")
        self._line(f"{experiment}: " + ", ".join(parts))
        if self.tty and self.to_run:
            self._thread = threading.Thread(target=self._ticker, name="t3sim-progress", daemon=True)
            self._thread.start()

    def note(self, text: str) -> None:
        """A one-line remark about the run (e.g. reused results from older code)."""
        self._line(text)

    def point_done(self, label: str, text: str, failed: bool = False) -> None:
        """One point finished (simulated or failed); ``text`` says how."""
        self.done += 1
        if failed:
            self.failed += 1
        else:
            self.simulated += 1
        line = f"[{self.done}/{self.total}] {label}: {text}"
        if not self.tty:
            line += f" (elapsed {fmt_duration(self.elapsed())}, ETA {fmt_duration(self.eta())})"
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
            msg = f"done in {took}: {self.total} points ({counts})"
        else:
            msg = (f"{how} after {took}: {saved} of {self.total} points have results ({counts}); "
                   f"run the same command again to resume")
        self._line(msg, bar=False)

    # -- numbers --------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def eta(self) -> Optional[float]:
        finished = self.simulated + self.failed
        remaining = self.total - self.done
        if remaining == 0:
            return 0.0
        if finished == 0:
            return None
        return remaining * self.elapsed() / finished

    def bar(self) -> str:
        frac = self.done / self.total if self.total else 1.0
        fill = int(round(frac * BAR_WIDTH))
        return (f"[{'#' * fill}{'.' * (BAR_WIDTH - fill)}] {self.done}/{self.total} points"
                f" | elapsed {fmt_duration(self.elapsed())} | ETA {fmt_duration(self.eta())}")

    # -- output ---------------------------------------------------------------
    def _line(self, text: str, bar: bool = True) -> None:
        with self._lock:
            if self._bar_shown:
                self.stream.write("\r\033[K")
                self._bar_shown = False
            self.stream.write(text + "\n")
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
                self.stream.write("\r\033[K" + self.bar())
                self._bar_shown = True
                self._flush()


class Silent(Progress):
    """Reports nothing (the Python API's default)."""

    def __init__(self) -> None:
        super().__init__(stream=_Null(), tty=False)


class _Null:
    def write(self, _s: str) -> int:
        return 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False
