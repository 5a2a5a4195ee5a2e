"""HBM command set and timing constraints as one declarative table.

The table is pure data, in the style Ramulator 2 uses to describe a DRAM
standard: each rule says "a command ``nxt`` issued to a node of ``scope``
must wait at least ``latency`` cycles after the most recent ``prev`` issued to
the *same* node". Scopes are nested: ``channel`` (one independent channel or
pseudo-channel: its command buses, data bus and ACT window), ``bankgroup``
(one bank group of that channel) and ``bank``.

Latencies are expressions over the JEDEC names of :class:`HBMTimingConfig`
(without the ``_nCK`` suffix) plus the derived ``tBL`` (data-bus cycles of one
burst = ``burst_length / transfers_per_clock``). All values are integer HBM
command-clock cycles (nCK).

The scheduler (``controller_ref``/``controller_fast``) and the independent
checker (``checker``) both compile this table, each in its own way; nothing
else in t3sim states a timing constraint.

Besides the rules there are state rules the checker enforces (ACT needs a
closed bank, column commands need their row open, PRE needs an open bank,
REF needs every bank of the channel closed), a window rule (at most 4 ACTs
per channel in any ``tFAW`` window) and the two command buses of HBM (one
row command and one column command per channel per cycle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np

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


_COL = ("RD", "WR", "UPD")
_WRITES = ("WR", "UPD")


def _rules() -> List[Rule]:
    r: List[Rule] = []
    # --- bank
    for c in _COL:
        r.append(Rule("ACT", c, "bank", "tRCD", "row to column delay"))
    r += [
        Rule("ACT", "PRE", "bank", "tRAS", "row active time"),
        Rule("ACT", "ACT", "bank", "tRC", "row cycle"),
        Rule("PRE", "ACT", "bank", "tRP", "row precharge"),
        Rule("RD", "PRE", "bank", "tRTP", "read to precharge"),
    ]
    for w in _WRITES:
        r.append(Rule(w, "PRE", "bank", "tWL + tBL + tWR", "write recovery (op-and-store writes back like WR)"))
    # --- bank group
    r.append(Rule("ACT", "ACT", "bankgroup", "tRRD", "ACT to ACT (one tRRD in ref. [11])"))
    for p in ("RD", "WR"):
        for n in _COL:
            r.append(Rule(p, n, "bankgroup", "tCCD_L", "column to column, same bank group"))
    for n in _COL:
        r.append(Rule("UPD", n, "bankgroup", "tCCDWL", "column after op-and-store, same bank group (CCDWL = 2 x CCDL)"))
    # --- channel
    r.append(Rule("ACT", "ACT", "channel", "tRRD", "ACT to ACT, any bank"))
    for p in _COL:
        for n in _COL:
            same_dir = (p == "RD") == (n == "RD")
            if same_dir:
                r.append(Rule(p, n, "channel", "max(tCCD_S, tBL)", "column to column, any bank group; data bus busy tBL"))
    for n in _WRITES:
        r.append(Rule("RD", n, "channel", "tRTW", "read to write bus turnaround"))
    for p in _WRITES:
        r.append(Rule(p, "RD", "channel", "tWL + tBL + tWTR", "write to read turnaround"))
    r += [
        Rule("PRE", "REF", "channel", "tRP", "all banks precharged before refresh"),
        Rule("REF", "ACT", "channel", "tRFC", "refresh cycle"),
        Rule("REF", "REF", "channel", "tRFC", "refresh cycle"),
    ]
    return r


#: The HBM2 timing table (JESD235 organisation, Ramulator-2 style).
TIMING_TABLE: Tuple[Rule, ...] = tuple(_rules())


@dataclass(frozen=True)
class WindowRule:
    """At most ``count`` ``cmd`` per ``scope`` node within any ``window`` nCK."""

    cmd: str
    count: int
    scope: str
    window: str
    why: str


WINDOW_TABLE: Tuple[WindowRule, ...] = (WindowRule("ACT", 4, "channel", "tFAW", "four-activate window"),)


def timing_values(hbm) -> Dict[str, int]:
    """Named timing values (nCK) of an :class:`~t3sim.config.memory.HBMConfig`, plus ``tBL``."""
    vals = {k.removesuffix("_nCK"): int(v) for k, v in hbm.timing.model_dump().items()}
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
    """Resolve :data:`TIMING_TABLE` for ``hbm`` (an HBMConfig)."""
    vals = timing_values(hbm)
    lat = np.full((len(SCOPES), NCMD, NCMD), -1, dtype=np.int64)
    for rule in TIMING_TABLE:
        s, p, n = SCOPES.index(rule.scope), CMD_NAMES.index(rule.prev), CMD_NAMES.index(rule.nxt)
        lat[s, p, n] = max(lat[s, p, n], evaluate(rule.latency, vals))
    (w,) = WINDOW_TABLE
    if (w.cmd, w.scope) != ("ACT", "channel"):
        raise NotImplementedError("the schedulers implement window rules for ACT per channel only")
    return Timing(vals, lat, evaluate(w.window, vals), w.count)
