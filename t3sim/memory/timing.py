"""HBM command set, the form of timing rules, and their resolution into numbers.

The rules themselves are data, one rule set per DRAM standard
(:mod:`t3sim.memory.standards`, selected by ``hbm.standard``), in the style
Ramulator 2 uses to describe a DRAM standard: each rule says "a command ``nxt`` issued to a node of ``scope``
must wait at least ``latency`` cycles after the most recent ``prev`` issued to
the *same* node". Scopes are nested: ``channel`` (one independent channel or
pseudo-channel: its command buses, data bus and ACT window), ``bankgroup``
(one bank group of that channel) and ``bank``.

Latencies are expressions over the JEDEC names of :class:`HBMTimingConfig`
(without the ``_nCK`` suffix) plus the derived ``tBL`` (data-bus cycles of one
burst = ``burst_length / transfers_per_clock``). All values are integer HBM
command-clock cycles (nCK).

The scheduler (``controller_ref``/``controller_fast``) and the independent
checker (``checker``) both compile the selected standard's rules, each in its
own way; nothing else in t3sim states a timing constraint.

Besides the rules there are state rules the checker enforces (ACT needs a
closed bank, column commands need their row open, PRE needs an open bank,
REF needs every bank of the channel closed), a window rule (at most 4 ACTs
per channel in any ``tFAW`` window) and the two command buses of HBM (one
row command and one column command per channel per cycle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

import numpy as np

from t3sim import registry

# ----------------------------------------------------------------- commands

ACT, PRE, RD, WR, UPD, REF = range(6)
#: Command names; ``UPD`` is the near-memory op-and-store (atomic read-add-write
#: in the bank's ALU), issued like a column command (paper Sec. 4.3, 5.1.1).
CMD_NAMES = ("ACT", "PRE", "RD", "WR", "UPD", "REF")
NCMD = len(CMD_NAMES)
COLUMN_CMDS = (RD, WR, UPD)
ROW_CMDS = (ACT, PRE, REF)

SCOPES = ("channel", "bankgroup", "bank")
SC_CHANNEL, SC_BANKGROUP, SC_BANK = range(3)

# Column commands (RD/WR/UPD) by request kind (see t3sim.memory.request.Kind).
KIND_TO_CMD = (RD, WR, UPD)


@dataclass(frozen=True)
class Rule:
    """``nxt`` to a ``scope`` node waits ``latency`` nCK after ``prev`` to that node."""

    prev: str
    nxt: str
    scope: str
    latency: str  # expression over timing names
    why: str


@dataclass(frozen=True)
class WindowRule:
    """At most ``count`` ``cmd`` per ``scope`` node within any ``window`` nCK."""

    cmd: str
    count: int
    scope: str
    window: str
    why: str


def standard(hbm):
    """The rule set ``hbm.standard`` names (a :class:`~t3sim.memory.standards.base.Standard`)."""
    return registry.get("dram_standard", hbm.standard, "hbm.standard")


def timing_values(hbm) -> Dict[str, int]:
    """Named timing values (nCK) that ``hbm``'s standard reads, plus ``tBL``; an unset optional parameter
    takes the value of the one it defaults to (e.g. ``tRRD_L`` = ``tRRD``)."""
    std = standard(hbm)
    raw = {k.removesuffix("_nCK"): v for k, v in hbm.timing.model_dump().items()}
    vals = {p: int(raw[p]) for p in std.timing}
    for p in std.reads(hbm.refresh):  # the refresh mode's own (per-bank refresh: tRFCpb, tRREFD)
        if p not in vals and p not in std.optional:
            vals[p] = int(raw[p])
    for p, fallback in std.optional.items():
        vals[p] = int(raw[p]) if raw[p] is not None else vals[fallback]
    if hbm.burst_length % hbm.transfers_per_clock:
        raise ValueError("burst_length must be a multiple of transfers_per_clock")
    vals["tBL"] = hbm.burst_length // hbm.transfers_per_clock
    return vals


def evaluate(expr: str, values: Dict[str, int]) -> int:
    """Evaluate a latency expression (names, integers, ``+``, ``-``, ``max``)."""
    out = eval(compile(expr, "<timing>", "eval"), {"__builtins__": {}, "max": max}, dict(values))  # noqa: S307 (table data only)
    return int(out)


@dataclass(frozen=True)
class Timing:
    """A resolved timing table: numeric latencies for one HBM configuration.

    ``lat[scope, prev, nxt]`` is the largest latency over the table's rules for
    that triple, or -1 where no rule applies. ``faw`` / ``faw_count`` come from
    the window rule; ``read_lat``/``write_lat`` are command-to-last-data cycles.
    """

    values: Dict[str, int]
    lat: np.ndarray  # int64 [3, NCMD, NCMD]
    faw: int
    faw_count: int
    #: REF names its bank (``hbm.refresh: per_bank``): one bank is refreshed every :attr:`refresh_interval`
    per_bank_refresh: bool = False
    #: nCK from one REF to the next due (0: no refresh): tREFI, or with per-bank refresh tREFI // banks (JESD238:
    #: every bank once per tREFI on average; rounded down, so refresh is never later than that average)
    refresh_interval: int = 0

    @property
    def tBL(self) -> int:
        return self.values["tBL"]

    def data_offset(self, cmd: int) -> int:
        """Cycles from a column command to its first data beat."""
        return self.values["tCL"] if cmd == RD else self.values["tWL"]

    def done_offset(self, cmd: int) -> int:
        """Cycles from a column command to the end of its data burst (request done)."""
        return self.data_offset(cmd) + self.tBL


def resolve(hbm) -> Timing:
    """Resolve the rules of ``hbm``'s standard (``hbm.standard``) for ``hbm`` (an HBMConfig)."""
    std = standard(hbm)
    vals = timing_values(hbm)
    lat = np.full((len(SCOPES), NCMD, NCMD), -1, dtype=np.int64)
    for rule in std.rules_for(hbm.refresh):
        s, p, n = SCOPES.index(rule.scope), CMD_NAMES.index(rule.prev), CMD_NAMES.index(rule.nxt)
        lat[s, p, n] = max(lat[s, p, n], evaluate(rule.latency, vals))
    (w,) = std.windows
    if (w.cmd, w.scope) != ("ACT", "channel"):
        raise NotImplementedError("the schedulers implement window rules for ACT per channel only")
    per_bank = hbm.refresh == "per_bank"
    interval = vals["tREFI"] // (hbm.bank_groups * hbm.banks_per_group) if per_bank else vals["tREFI"]
    return Timing(vals, lat, evaluate(w.window, vals), w.count, per_bank, interval)
