"""A number a paper states in its text, and how t3sim's value is compared with it (pure data).

Each paper's numbers module (:mod:`t3sim.reproduction.t3.numbers`, ``flux.numbers``, ``ficco.numbers``,
``fused.numbers``) lists :class:`PaperNumber` s: the section, a verbatim quote, the paper's value, how it compares
with t3sim's (``kind``) and the key of t3sim's value. ``kind``:

* ``pct``: a percentage; difference = t3sim - paper in percentage points;
* ``speedup_x``: a speedup ratio (1.67x); difference = 100 x (t3sim - paper), in points of speedup;
* ``reduction_x``: a reduction ratio (2.4x fewer reads); both turned into ``100 (1 - 1/x)`` first
  (:func:`metric_points`), so the difference is in points of traffic removed;
* ``range_pct``: a stated range ``lo-hi`` %; difference = distance from the range (0 inside);
* ``direction``: a stated direction (``higher``/``lower``); compared by sign, no difference in points.

A difference of more than :data:`FLAG_PTS` points is flagged in the report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

#: points above which a t3sim value is flagged as differing from the paper's
FLAG_PTS = 5.0


@dataclass(frozen=True)
class PaperNumber:
    key: str
    section: str
    quote: str
    value: float | str
    kind: str
    figure: str
    hi: Optional[float] = None  # range_pct upper bound (value is the lower)

    def paper_text(self) -> str:
        if self.kind == "range_pct":
            return f"{self.value:g}-{self.hi:g} %"
        if self.kind == "pct":
            return f"{self.value:g} %"
        if self.kind.endswith("_x"):
            return f"{self.value:g}x"
        return str(self.value)


def lo_hi(vals) -> tuple:
    """(smallest, largest) of the finite floats among ``vals``; (NaN, NaN) if none (a stated range's ends)."""
    v = [x for x in vals if isinstance(x, float) and math.isfinite(x)]
    return (min(v), max(v)) if v else (math.nan, math.nan)


def metric_points(metric: str, v: float) -> float:
    """A metric value in points (ratios, ``*_x`` -> reduction percent ``100 (1 - 1/x)``) for differences."""
    return 100.0 * (1.0 - 1.0 / v) if metric.endswith("_x") else v
