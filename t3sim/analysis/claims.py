"""Checked explanations: each cause of a difference from a paper is a claim with the conditions it explains
(pure; no results are read here).

A :class:`Claim` is a text template (``str.format`` fields name *facts*) and the :class:`Cond` s under which
it explains a difference. Facts are named values computed when the report is made: the row's own
(:func:`row_facts`: ``value``, ``paper``, ``diff``), every stated number's t3sim value (by its key) and
paper value (``P_<key>``), and quantities read from the results (``t3sim.reproduction.<paper>.facts``). So a claim
quotes no measured number as fixed prose, and :func:`check` refuses it -- the row is then "not yet
explained", with the condition that failed -- when the results no longer say what it says.

Conditions are of three sorts: the direction of the difference (:data:`ABOVE`, :data:`BELOW`,
:data:`DISAGREES`), a range for t3sim's value, or a bound on the mechanism's own measured quantity (an RS-alone
time, a GEMM slowdown, a traffic ratio). A fact that the results lack fails its condition ("no value").
"""

from __future__ import annotations

import math
import operator
import string
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

_OPS: Dict[str, Callable[[float, float], bool]] = {"<": operator.lt, "<=": operator.le, ">": operator.gt,
                                                   ">=": operator.ge}
NOT_EXPLAINED = "not yet explained"


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _num(v) -> str:
    return f"{v:.4g}" if _finite(v) else "no value"


@dataclass(frozen=True)
class Cond:
    """``fact op bound``: ``bound`` is a number or another fact's name; ``what`` says it in words."""

    what: str
    fact: str
    op: str
    bound: float | str

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"condition {self.what!r}: op {self.op!r} is not one of {', '.join(_OPS)}")

    def facts(self) -> Tuple[str, ...]:
        return (self.fact,) + ((self.bound,) if isinstance(self.bound, str) else ())

    def failure(self, facts: Mapping[str, object]) -> Optional[str]:
        """None when the condition holds, else why not (one line)."""
        x = facts.get(self.fact, math.nan)
        b = facts.get(self.bound, math.nan) if isinstance(self.bound, str) else self.bound
        if not (_finite(x) and _finite(b)):
            missing = self.fact if not _finite(x) else str(self.bound)
            return f"{self.what}: the results give no value for {missing}"
        if _OPS[self.op](float(x), float(b)):
            return None
        bound = f"{self.bound} = {_num(b)}" if isinstance(self.bound, str) else _num(b)
        return f"{self.what}: {self.fact} = {_num(x)}, needs {self.op} {bound}"


@dataclass(frozen=True)
class Claim:
    """A cause: its text (a template over facts) and the conditions it explains (at least one)."""

    text: str
    conds: Tuple[Cond, ...]

    def __post_init__(self) -> None:
        if not self.conds:
            raise ValueError(f"claim without a condition: {self.text[:60]!r}")

    def fields(self) -> List[str]:
        """The fact names its text quotes."""
        return [f.split(".")[0].split("[")[0] for _, f, _, _ in string.Formatter().parse(self.text) if f]


@dataclass(frozen=True)
class Verdict:
    explained: bool
    text: str  # the filled claim, or "not yet explained ..." with the failed condition
    failed: str = ""  # the condition that failed (empty when explained or when no claim exists)


def check(claim: Optional[Claim], facts: Mapping[str, object]) -> Verdict:
    """Fill ``claim`` from ``facts`` if every condition holds and every quoted fact has a value."""
    if claim is None:
        return Verdict(False, NOT_EXPLAINED)
    for c in claim.conds:
        why = c.failure(facts)
        if why:
            return Verdict(False, f"{NOT_EXPLAINED} (the recorded cause no longer holds: {why})", why)
    missing = [f for f in claim.fields() if f not in facts or (isinstance(facts[f], float) and not _finite(facts[f]))]
    if missing:
        why = f"the results give no value for {', '.join(dict.fromkeys(missing))}"
        return Verdict(False, f"{NOT_EXPLAINED} (the recorded cause cannot be stated: {why})", why)
    return Verdict(True, claim.text.format_map(facts))


# ---------------------------------------------------------------- row facts and direction conditions

def row_facts(kind: str, paper, value, diff: Optional[float]) -> Dict[str, float]:
    """The row's own facts: ``value`` (t3sim's), ``paper`` (a number; +1/-1 for a stated direction), ``diff``
    (t3sim - paper in points), ``trend_vs_paper`` (directions: t3sim's signed trend times the paper's sign, so
    negative = opposite), ``has_value`` (1 or 0)."""
    v = float(value) if _finite(value) else math.nan
    if kind == "direction":
        sign = 1.0 if paper == "higher" else -1.0
        return {"value": v, "paper": sign, "diff": math.nan, "trend_vs_paper": v * sign, "has_value": float(_finite(v))}
    return {"value": v, "paper": float(paper), "diff": diff if diff is not None else math.nan,
            "trend_vs_paper": math.nan, "has_value": float(_finite(v))}


ABOVE = Cond("t3sim's value above the paper's", "diff", ">", 0.0)
BELOW = Cond("t3sim's value below the paper's", "diff", "<", 0.0)
DISAGREES = Cond("t3sim's trend opposite to the paper's", "trend_vs_paper", "<", 0.0)
NO_VALUE = Cond("t3sim has no value for it", "has_value", "<", 1.0)


def paper_facts(numbers: Sequence) -> Dict[str, float]:
    """``P_<key>``: every numeric paper value of ``numbers`` (:class:`~t3sim.reproduction.stated.PaperNumber`)."""
    return {f"P_{n.key}": float(n.value) for n in numbers if n.kind != "direction"}
