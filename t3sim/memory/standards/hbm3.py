"""HBM3 and HBM3E (JEDEC JESD238, JESD238A) as t3sim schedules them.

What differs from HBM2 at t3sim's level, from the JEDEC-derived HBM3 table of Ramulator 2
(python/ramulator/dram/hbm3.py, which cites JESD238's tables):

* **tPPD**, a minimum PRE-to-PRE delay between any two banks of a pseudo-channel ("new in HBM3";
  Ramulator 2's HBM3 6400 Mbps preset: nPPD = 2 CK of 625 ps = 1.25 ns). Modelled: the rule
  ``PRE -> PRE, channel, tPPD`` (``hbm.timing.tPPD_nCK``, required by this rule set).
* the bank-group splits tRRD_L/tRRD_S, tWTR_L/tWTR_S and tRCDRD/tRCDWR, which HBM2 has too
  (:mod:`~t3sim.memory.standards.hbm2`); Ramulator 2's HBM3 preset splits all three (4/5, 7/10, 31/15 CK).

The pseudo-channel organisation (JESD238 has only pseudo-channel mode: two 32-bit pseudo-channels
per 64-bit channel, BL8 = 32 B per access) is the config's: the HBM3 presets set ``pseudo_channels: 2``,
``bus_width_B: 4``, ``burst_length: 8``, each pseudo-channel an independent unit.

Not modelled (each listed in :data:`NOT_MODELLED`): the pseudo-channels' shared command buses, half-cycle row
commands (ACT 1.5 CK, PRE/REF 0.5 CK on the row bus), the 1:4 CK-to-data ratio (t3sim counts the
clock the config gives), stack IDs and tCCDR, refresh postponement, and refresh management (RFM).

Refresh is all-bank (REFab, the shared rules) or, with ``hbm.refresh: per_bank``, per bank (REFpb: the rules of
:func:`~t3sim.memory.standards.base.per_bank_refresh_rules`, tRFCpb and tRREFD): a REFpb closes and refreshes one
bank while the others go on serving requests.

HBM3E is the same protocol at higher data rates (vendors' 8-9.6 Gbps parts; SkyeChip's HBM3 memory
controller IP, for one, runs HBM3 and HBM3E stacks under JESD238A at up to 9.6 Gbps): it selects this
rule set.
"""

from __future__ import annotations

from t3sim.memory.standards.base import BASE_TIMING, HBM_WINDOWS, SPLITS, Standard, hbm_rules, per_bank_refresh_rules
from t3sim.memory.timing import Rule
from t3sim.registry import add

RULES = (*hbm_rules(), Rule("PRE", "PRE", "channel", "tPPD", "PRE to PRE, any bank of the pseudo-channel (JESD238 tPPD)"))

MODELLED = (
    "separate row and column command buses per channel (one command each per cycle) and one data bus",
    "bank, bank-group and channel timing rules (tRCD/tRCDWR, tRAS, tRP, tRC, tRTP, tWR, tCCD_S/L, tRRD_S/L, "
    "tWTR_S/L, tRTW, tFAW) and the PRE-to-PRE delay tPPD",
    "all-bank refresh (REFab) every tREFI, tRFC long; or (hbm.refresh: per_bank) per-bank refresh (REFpb) of one "
    "bank every tREFI / banks, round robin, tRFCpb long, tRREFD apart",
)
NOT_MODELLED = (
    "the two pseudo-channels of a channel share its command buses (the presets' pseudo-channels are independent units)",
    "half-cycle row commands (ACT 1.5 CK, PRE and REF 0.5 CK) and the 1:4 CK-to-data ratio",
    "stack IDs (SID) and tCCDR",
    "refresh postponement and pulling in, refresh management (RFM)",
    "power-down and self-refresh states",
)

HBM3 = Standard("HBM3", "JESD238", RULES, HBM_WINDOWS, (*BASE_TIMING, "tPPD"), dict(SPLITS), MODELLED, NOT_MODELLED,
                per_bank_refresh_rules())
HBM3E = Standard("HBM3E", "JESD238A (HBM3 rules at higher data rates)", RULES, HBM_WINDOWS, HBM3.timing, dict(SPLITS),
                 MODELLED, NOT_MODELLED, HBM3.per_bank_refresh)

add("dram_standard", "HBM3", HBM3)
add("dram_standard", "HBM3E", HBM3E)
