"""Integer time and clock domains.

The simulation's global time is an integer number of **ticks**; one tick is
one picosecond (:data:`TICKS_PER_NS` = 1000). simpy's ``env.now`` is in ticks.

Each component counts time in cycles of its own clock domain. A
:class:`Clock` converts exactly between cycles and ticks with integer
arithmetic: cycle ``k`` of a clock of ``f`` kHz begins at tick
``ceil(k * 10**9 / f)``. Conversions never drift (a 1.4 GHz clock is not
rounded to a 714 ps period; its edges fall at 0, 715, 1429, 2143, ... ps).

Floats are used only at the config boundary (``clock_GHz``, ``latency_ns``)
and in reported statistics, never for simulated time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba

TICKS_PER_NS = 1000
TICKS_PER_US = 1000 * TICKS_PER_NS
_PS_PER_S_OVER_KHZ = 10**9  # (1e12 ps/s) / (1e3 Hz/kHz)


def ns_to_ticks(ns: float) -> int:
    """Convert a config duration in ns to ticks (rounded to the nearest ps)."""
    return int(round(ns * TICKS_PER_NS))


def ticks_to_ns(ticks: int) -> float:
    """Ticks -> ns, for reporting only."""
    return ticks / TICKS_PER_NS


@numba.njit(cache=True, inline="always")
def cycle_start_tick(cycle, freq_kHz):  # pragma: no cover - compiled
    """:meth:`Clock.cycle_to_tick` for compiled kernels (exact integer ceil, no int64 overflow for
    any realistic cycle count): tick at which ``cycle`` of a ``freq_kHz`` clock begins."""
    q = cycle // freq_kHz
    r = cycle - q * freq_kHz
    return q * 1000000000 + (r * 1000000000 + freq_kHz - 1) // freq_kHz


@dataclass(frozen=True)
class Clock:
    """A clock domain of frequency ``freq_kHz`` (an integer)."""

    freq_kHz: int
    name: str = "clock"

    @classmethod
    def from_GHz(cls, ghz: float, name: str = "clock") -> "Clock":
        khz = int(round(ghz * 1_000_000))
        if khz <= 0:
            raise ValueError(f"{name}: clock must be positive, got {ghz} GHz")
        return cls(khz, name)

    def cycle_to_tick(self, cycle: int) -> int:
        """Tick at which ``cycle`` begins (exact; integer ceil)."""
        return -((-cycle * _PS_PER_S_OVER_KHZ) // self.freq_kHz)

    def tick_to_cycle(self, tick: int) -> int:
        """Index of the cycle in progress at ``tick`` (floor)."""
        return (tick * self.freq_kHz) // _PS_PER_S_OVER_KHZ

    def next_cycle_at_or_after(self, tick: int) -> int:
        """First cycle whose start is at or after ``tick``."""
        c = self.tick_to_cycle(tick)
        return c if self.cycle_to_tick(c) >= tick else c + 1

    def cycles_for_ns(self, ns: float) -> int:
        """Whole cycles covering ``ns`` nanoseconds (ceil)."""
        return -((-int(round(ns * 1000)) * self.freq_kHz) // _PS_PER_S_OVER_KHZ)

    @property
    def GHz(self) -> float:
        return self.freq_kHz / 1_000_000
