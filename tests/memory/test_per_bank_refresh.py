"""Per-bank refresh (``hbm.refresh: per_bank``, JESD238 REFpb; rules from Ramulator 2's HBM3 table).

Every tREFI / banks one bank, round robin, is precharged and refreshed for tRFCpb while the unit's other banks go
on serving requests; all-bank refresh (REFab) stops the whole unit for tRFC every tREFI. Timing is checked in the
rule set's own terms (tRFCpb, tRREFD, tRP); the fast controller is held to the reference one by the hypothesis
tests of test_fast_vs_reference.py and test_port_vs_reference.py, which draw both refresh modes.
"""

import numpy as np
import pytest
from pydantic import ValidationError

from t3sim.memory import timing as T
from t3sim.memory.checker import check
from t3sim.memory.stats import summary

from .helpers import run, system

#: one HBM3 unit's timing (nCK): short enough that a test sees many refreshes
TIMING = {"tREFI_nCK": 1600, "tRFC_nCK": 160, "tPPD_nCK": 2, "tRFCpb_nCK": 120, "tRREFD_nCK": 8}


def _cfg(refresh="per_bank", channels=1, **timing):
    t = {**TIMING, **timing}
    if refresh == "all_bank":
        t.pop("tRFCpb_nCK"), t.pop("tRREFD_nCK")
    return system(channels, hbm={"standard": "HBM3", "refresh": refresh, "timing": t})


def _stream(n, kind="read"):
    return [(0, np.arange(n, dtype=np.int64) * 64, kind, "compute", "gemm")]


def test_rules_swap_the_all_bank_ref_rules():
    hbm = _cfg().hbm
    t = T.resolve(hbm)
    assert t.per_bank_refresh and t.refresh_interval == 1600 // 16
    lat = t.lat
    assert lat[T.SC_BANK, T.REF, T.ACT] == 120  # tRFCpb: the refreshed bank
    assert lat[T.SC_CHANNEL, T.REF, T.ACT] == 8  # tRREFD: any other bank
    assert lat[T.SC_CHANNEL, T.REF, T.REF] == 8
    assert lat[T.SC_BANK, T.PRE, T.REF] == t.values["tRP"]
    assert lat[T.SC_CHANNEL, T.PRE, T.REF] == -1  # no longer every bank's PRE
    ab = T.resolve(_cfg("all_bank").hbm)
    assert not ab.per_bank_refresh and ab.refresh_interval == 1600
    assert ab.lat[T.SC_CHANNEL, T.REF, T.ACT] == 160 and ab.lat[T.SC_BANK, T.REF, T.ACT] == -1


@pytest.mark.parametrize("hbm, words", [
    ({"refresh": "per_bank"}, "has no per-bank refresh"),  # HBM2's rule set
    ({"standard": "HBM3", "timing": {"tPPD_nCK": 2, "tRFCpb_nCK": 120}}, "per-bank refresh time"),
    ({"standard": "HBM3", "refresh": "per_bank", "timing": {"tPPD_nCK": 2, "tRFCpb_nCK": 120}}, "needs tRREFD"),
    ({"standard": "HBM3", "refresh": "per_bank", "timing": {"tREFI_nCK": 10, "tPPD_nCK": 2, "tRFCpb_nCK": 120,
                                                            "tRREFD_nCK": 8}}, "tREFI must be 0"),
    ({"standard": "HBM3", "refresh": "some_bank", "timing": {"tPPD_nCK": 2}}, "all_bank"),
])
def test_bad_refresh_configs_are_rejected(hbm, words):
    with pytest.raises(ValidationError, match=words):
        system(1, hbm=hbm)


def test_banks_are_refreshed_round_robin_at_the_per_bank_interval():
    cfg = _cfg()
    ms = run(cfg, _stream(60_000))
    log = ms.command_log()
    refs = log[log[:, 2] == T.REF]
    span = int(log[-1, 0])
    assert len(refs) >= 16 * 3
    assert list(refs[:, 3]) == [i % 16 for i in range(len(refs))]  # each REF names its bank, in turn
    # due every tREFI / 16 = 100 nCK (the first one interval in); issued late by at most a bank's PRE and tRP
    assert abs(len(refs) - span // 100) <= 2
    gaps = np.diff(refs[:, 0])
    assert gaps.min() >= 8  # tRREFD
    assert check(log, cfg.hbm).ok


def test_the_other_banks_serve_while_one_refreshes():
    cfg = _cfg()
    ms = run(cfg, _stream(60_000))
    log = ms.command_log()
    refs = log[log[:, 2] == T.REF]
    cols = log[np.isin(log[:, 2], T.COLUMN_CMDS)]
    served_elsewhere = 0
    for c, _, _, b, _ in refs:
        inside = cols[(cols[:, 0] > c) & (cols[:, 0] < c + 120)]
        assert not np.any(inside[:, 3] == b)  # its bank: no row open, so no column command, for tRFCpb
        served_elsewhere += len(inside)
        acts = log[(log[:, 2] == T.ACT) & (log[:, 3] == b) & (log[:, 0] > c)]
        if len(acts):
            assert acts[0, 0] >= c + 120  # tRFCpb
    # the data bus keeps moving: most of each refresh window carries other banks' accesses (tBL per access)
    assert served_elsewhere * T.resolve(cfg.hbm).tBL > 0.5 * 120 * len(refs)


def test_a_stream_loses_less_to_per_bank_refresh():
    """All-bank refresh stops the unit tRFC in every tREFI (10 % here); per-bank refresh hides most of that."""
    eff = {}
    for mode in ("all_bank", "per_bank"):
        cfg = _cfg(mode, channels=2)
        eff[mode] = summary(run(cfg, _stream(80_000), record=False))["efficiency"]
    none = summary(run(_cfg("all_bank", channels=2, tREFI_nCK=0), _stream(80_000), record=False))["efficiency"]
    assert eff["all_bank"] < none - 0.05  # tRFC / tREFI = 10 %
    assert eff["all_bank"] + 0.03 < eff["per_bank"] <= none


def test_checker_holds_a_per_bank_refresh_to_its_rules():
    hbm = _cfg().hbm
    v = T.timing_values(hbm)
    # REF of bank 1 while bank 0 is open: legal (only its own bank must be closed)
    ok = np.array([[0, 0, T.ACT, 0, 3], [v["tRRD"], 0, T.REF, 1, -1]], dtype=np.int64)
    assert check(ok, hbm).ok
    open_bank = np.array([[0, 0, T.ACT, 1, 3], [v["tRC"], 0, T.REF, 1, -1]], dtype=np.int64)
    assert "state: REF with a bank open" in check(open_bank, hbm).by_constraint
    # ACT to the refreshed bank inside tRFCpb, and to another bank inside tRREFD
    early = np.array([[0, 0, T.REF, 1, -1], [119, 0, T.ACT, 1, 3]], dtype=np.int64)
    assert any(k.startswith("tRFCpb") for k in check(early, hbm).by_constraint)
    other = np.array([[0, 0, T.REF, 1, -1], [7, 0, T.ACT, 2, 3]], dtype=np.int64)
    assert any(k.startswith("tRREFD") for k in check(other, hbm).by_constraint)
    other[1, 0] = 8
    assert check(other, hbm).ok
