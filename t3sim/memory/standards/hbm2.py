"""HBM2 and HBM2E (JEDEC JESD235, JESD235C/D) as t3sim schedules them.

Rules: :func:`~t3sim.memory.standards.base.hbm_rules` and the tFAW window, with the optional
bank-group splits (tRRD_L, tWTR_L, tRCDWR; unset, they equal tRRD, tWTR and tRCD, as in the paper's
ref. [11], whose Accel-Sim HBM2 timing the Table 1 preset reproduces). Ramulator 2's HBM2 table
(python/ramulator/dram/hbm2.py) has the same rules; its JESD235D values give tRRD_L = tRRD_S = 4 ns
and split tWTR (6/8 nCK at 2 Gbps) and tRCD (read 14, write 12 nCK).

HBM2E (JESD235C/D) is the same command protocol and timing-rule set at higher data rates and
densities (up to 3.6 Gbps, 16 Gb dies; Synopsys, "What designers need to know about HBM3"): the
difference is in the values, which the config gives, so it selects this rule set.
"""

from __future__ import annotations

from t3sim.memory.standards.base import BASE_TIMING, HBM_WINDOWS, SPLITS, Standard, hbm_rules
from t3sim.registry import add

MODELLED = (
    "separate row and column command buses per channel (one command each per cycle) and one data bus",
    "bank, bank-group and channel timing rules (tRCD/tRCDWR, tRAS, tRP, tRC, tRTP, tWR, tCCD_S/L, tRRD_S/L, "
    "tWTR_S/L, tRTW, tFAW)",
    "all-bank refresh (REFab) every tREFI, tRFC long",
)
NOT_MODELLED = (
    "the two pseudo-channels of a pseudo-channel-mode channel share its command buses (units are independent)",
    "single-bank refresh (REFSB), refresh postponement",
    "ACT as a two-cycle row command (Ramulator 2's HBM2: the row bus is busy 2 CK after an ACT; ref. [11] has "
    "single-cycle commands)",
    "power-down and self-refresh states",
)

HBM2 = Standard("HBM2", "JESD235", tuple(hbm_rules()), HBM_WINDOWS, BASE_TIMING, dict(SPLITS), MODELLED, NOT_MODELLED)
HBM2E = Standard("HBM2E", "JESD235C/D (HBM2 rules at up to 3.6 Gbps)", HBM2.rules, HBM2.windows, HBM2.timing,
                 dict(SPLITS), MODELLED, NOT_MODELLED)

add("dram_standard", "HBM2", HBM2)
add("dram_standard", "HBM2E", HBM2E)
