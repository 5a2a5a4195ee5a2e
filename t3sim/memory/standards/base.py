"""DRAM standard rule sets (registry category ``dram_standard``): the contract and the shared JEDEC HBM rules.

``hbm.standard`` names a registered :class:`Standard`. A standard is, Ramulator 2 style, one file
(``hbm2.py``, ``hbm3.py``) that states

* its command-timing rules (:class:`~t3sim.memory.timing.Rule`: ``prev -> nxt`` within a scope waits
  an expression over JEDEC timing names) and window rules (tFAW);
* the timing parameters it reads: ``timing`` (required config fields) and ``optional`` (config
  fields that may be None, each with the parameter it then equals, e.g. ``tRRD_L`` -> ``tRRD``);
  a timing field of ``hbm.timing`` that the standard does not read must be left unset (None), so no
  value is accepted and ignored (:meth:`Standard.check`, run by the config validator);
* ``modelled`` / ``not_modelled``: what of the JEDEC document the rules carry and what they do not.

Both schedulers and the independent checker compile the selected standard's rules
(:func:`t3sim.memory.timing.resolve`, :mod:`t3sim.memory.checker`); nothing else states a timing rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from t3sim import registry
from t3sim.memory.timing import Rule, WindowRule

_COL = ("RD", "WR", "UPD")
_WRITES = ("WR", "UPD")

#: optional timing parameters of the shared rules and what each equals when unset (ref. [11], the
#: Table 1 source, states one tRRD, one tWTR and one tRCD; JESD235/JESD238 split them)
SPLITS: Dict[str, str] = {"tRRD_L": "tRRD", "tWTR_L": "tWTR", "tRCDWR": "tRCD"}

#: timing parameters every HBM rule set reads (config fields ``<name>_nCK``)
BASE_TIMING: Tuple[str, ...] = ("tCCD_S", "tCCD_L", "tCCDWL", "tRRD", "tRCD", "tRAS", "tRP", "tRC", "tCL", "tWL",
                                "tWTR", "tWR", "tRTP", "tRTW", "tFAW", "tREFI", "tRFC")


def hbm_rules() -> List[Rule]:
    """The command-timing rules JESD235 (HBM2) and JESD238 (HBM3) share, as t3sim schedules them.

    The bank-group splits (tRRD_L for ACT -> ACT and tWTR_L for write -> read within a bank group,
    tRCDWR for ACT -> write) are the rules of Ramulator 2's HBM2 and HBM3 tables; left unset they
    equal tRRD, tWTR and tRCD, which makes them the single-value rules of ref. [11].
    """
    r: List[Rule] = []
    # --- bank
    r.append(Rule("ACT", "RD", "bank", "tRCD", "row to column delay, read (tRCDRD)"))
    for w in _WRITES:
        r.append(Rule("ACT", w, "bank", "tRCDWR", "row to column delay, write (tRCDWR; op-and-store writes)"))
    r += [
        Rule("ACT", "PRE", "bank", "tRAS", "row active time"),
        Rule("ACT", "ACT", "bank", "tRC", "row cycle"),
        Rule("PRE", "ACT", "bank", "tRP", "row precharge"),
        Rule("RD", "PRE", "bank", "tRTP", "read to precharge"),
    ]
    for w in _WRITES:
        r.append(Rule(w, "PRE", "bank", "tWL + tBL + tWR", "write recovery (op-and-store writes back like WR)"))
    # --- bank group
    r.append(Rule("ACT", "ACT", "bankgroup", "tRRD_L", "ACT to ACT, same bank group (tRRD_L)"))
    for p in ("RD", "WR"):
        for n in _COL:
            r.append(Rule(p, n, "bankgroup", "tCCD_L", "column to column, same bank group"))
    for n in _COL:
        r.append(Rule("UPD", n, "bankgroup", "tCCDWL", "column after op-and-store, same bank group (CCDWL = 2 x CCDL)"))
    for p in _WRITES:
        r.append(Rule(p, "RD", "bankgroup", "tWL + tBL + tWTR_L", "write to read turnaround, same bank group (tWTR_L)"))
    # --- channel
    r.append(Rule("ACT", "ACT", "channel", "tRRD", "ACT to ACT, any bank (tRRD_S)"))
    for p in _COL:
        for n in _COL:
            if (p == "RD") == (n == "RD"):
                r.append(Rule(p, n, "channel", "max(tCCD_S, tBL)", "column to column, any bank group; data bus busy tBL"))
    for n in _WRITES:
        r.append(Rule("RD", n, "channel", "tRTW", "read to write bus turnaround"))
    for p in _WRITES:
        r.append(Rule(p, "RD", "channel", "tWL + tBL + tWTR", "write to read turnaround (tWTR_S)"))
    r += [
        Rule("PRE", "REF", "channel", "tRP", "all banks precharged before refresh"),
        Rule("REF", "ACT", "channel", "tRFC", "refresh cycle"),
        Rule("REF", "REF", "channel", "tRFC", "refresh cycle"),
    ]
    return r


#: timing parameters the per-bank refresh rules read (``hbm.refresh: per_bank``)
PER_BANK_TIMING: Tuple[str, ...] = ("tRFCpb", "tRREFD")


def per_bank_refresh_rules() -> Tuple[Rule, ...]:
    """JESD238's per-bank refresh (REFpb) as Ramulator 2's HBM3 table states it (python/ramulator/dram/hbm3.py:
    REFpb -> ACT nRFCpb and ACT -> REFpb nRC, PREpb -> REFpb nRP per bank; REFpb -> ACT nRREFD and ACT -> REFpb
    nRRDS per pseudo-channel) and its C++ table (src/dram/impl/HBM3.cpp: REFsb -> REFsb nRREFD per
    pseudo-channel). With ``hbm.refresh: per_bank`` these replace the all-bank REF rules of :func:`hbm_rules`;
    the REF command then names its bank."""
    return (
        Rule("PRE", "REF", "bank", "tRP", "its bank precharged before a per-bank refresh"),
        Rule("ACT", "REF", "bank", "tRC", "ACT to REFpb, same bank"),
        Rule("ACT", "REF", "channel", "tRRD", "ACT to REFpb, any bank (tRRD_S)"),
        Rule("REF", "ACT", "bank", "tRFCpb", "per-bank refresh cycle"),
        Rule("REF", "ACT", "channel", "tRREFD", "REFpb to ACT, any other bank"),
        Rule("REF", "REF", "channel", "tRREFD", "REFpb to REFpb, any other bank"),
    )


HBM_WINDOWS: Tuple[WindowRule, ...] = (WindowRule("ACT", 4, "channel", "tFAW", "four-activate window"),)


@dataclass(frozen=True)
class Standard:
    """One DRAM standard's rule set (see the module docstring)."""

    name: str
    document: str
    rules: Tuple[Rule, ...]
    windows: Tuple[WindowRule, ...]
    timing: Tuple[str, ...]
    optional: Dict[str, str] = field(default_factory=dict)
    modelled: Tuple[str, ...] = ()
    not_modelled: Tuple[str, ...] = ()
    #: the REF rules of per-bank refresh (``hbm.refresh: per_bank``); empty where t3sim has none for the standard
    per_bank_refresh: Tuple[Rule, ...] = ()

    def reads(self, refresh: str = "all_bank") -> Tuple[str, ...]:
        """Every timing parameter this standard reads (required and optional) under the refresh mode ``refresh``."""
        return (*self.timing, *self.optional, *(PER_BANK_TIMING if refresh == "per_bank" else ()))

    def rules_for(self, refresh: str) -> Tuple[Rule, ...]:
        """The command-timing rules under the refresh mode ``refresh`` (``hbm.refresh``): per-bank refresh swaps
        the all-bank REF rules for :attr:`per_bank_refresh`."""
        if refresh == "all_bank":
            return self.rules
        if not self.per_bank_refresh:
            raise ValueError(f"hbm.refresh={refresh!r}: the {self.name} rule set ({self.document}) has no per-bank "
                             "refresh in t3sim; allowed: all_bank")
        return (*(r for r in self.rules if "REF" not in (r.prev, r.nxt)), *self.per_bank_refresh)

    def check(self, hbm) -> None:
        """Raise ValueError unless ``hbm.timing`` sets exactly the parameters this standard reads."""
        self.rules_for(hbm.refresh)
        fields = type(hbm.timing).model_fields
        reads = set(self.reads(hbm.refresh))
        for name in fields:
            p = name.removesuffix("_nCK")
            v = getattr(hbm.timing, name)
            if p not in reads and v is not None:
                if p in PER_BANK_TIMING and self.per_bank_refresh:
                    raise ValueError(f"hbm.timing.{name}={v}: {p} is a per-bank refresh time; with hbm.refresh="
                                     f"{hbm.refresh} leave it unset (null), or set hbm.refresh: per_bank")
                users = [s.name for s in _standards() if p in s.reads("per_bank" if s.per_bank_refresh else "all_bank")]
                raise ValueError(
                    f"hbm.timing.{name}={v}: the {self.name} rule set ({self.document}) has no {p}; "
                    f"leave it unset (null) or choose a standard that has it ({', '.join(users) or 'none'})")
            if p in self.timing and v is None:
                raise ValueError(f"hbm.timing.{name} is unset: the {self.name} rule set ({self.document}) needs {p}")
            if p in PER_BANK_TIMING and p in reads and v is None:
                raise ValueError(f"hbm.timing.{name} is unset: hbm.refresh=per_bank needs {p}")


def _standards() -> List[Standard]:
    return [registry.get("dram_standard", n) for n in registry.names("dram_standard")]
