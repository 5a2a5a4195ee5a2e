"""Op-and-store pacing (paper Sec. 5.1.1): column commands after an op-and-store to the same bank
group wait tCCDWL (= 2 x tCCD_L); spread over bank groups they are paced by the data bus only."""

import numpy as np
import pytest

from t3sim.memory import timing as T

from .helpers import assert_clean, bank_group_addrs, column_cycles, run, steady_columns, system

N = 32  # columns (DRAM accesses) per test


def _cfg(**timing):
    # one channel, no XOR hash and no refresh, so addresses place requests exactly
    return system(1, hbm={"timing": {"tREFI_nCK": 0, **timing}}, address_map={"xor_bank_hash": False})


def _addrs(cfg, bank_groups):
    """N columns (accesses) in one row of bank 0 of each listed bank group, interleaved over the groups."""
    return bank_group_addrs(cfg, bank_groups, N)


def _gaps(cfg, addrs, kind):
    ms = run(cfg, [(0, addrs, kind, "comm", "dma")])
    assert_clean(ms)
    cyc = column_cycles(ms)
    assert len(cyc) == N
    return np.diff(cyc), T.resolve(cfg.hbm).values


def test_updates_to_one_bank_group_are_paced_by_tccdwl():
    cfg = _cfg()
    gaps, v = _gaps(cfg, _addrs(cfg, [0]), "update")
    assert np.all(gaps == v["tCCDWL"])  # N updates take (N-1) x tCCDWL after the first
    assert v["tCCDWL"] == 2 * v["tCCD_L"]


def _steady(cfg, addrs, kind):
    """Gaps between column commands while every bank has its row open and columns left: from the first
    column of the last bank opened to the last column of the first bank to run out."""
    ms = run(cfg, [(0, addrs, kind, "comm", "dma")])
    assert_clean(ms)
    cyc = steady_columns(ms)[:, 0]
    assert len(cyc) >= N // 2
    return np.diff(cyc), T.resolve(cfg.hbm).values


def test_updates_spread_over_bank_groups_are_not():
    cfg = _cfg()
    gaps, v = _gaps(cfg, _addrs(cfg, [0, 1, 2, 3]), "update")
    assert gaps.sum() < (N - 1) * v["tCCDWL"] * 0.6
    # once the four rows are open (their ACTs are tRRD apart), the data bus paces: each bank group's next
    # update comes 4 commands later, no sooner than tCCDWL
    gaps, v = _steady(cfg, _addrs(cfg, [0, 1, 2, 3]), "update")
    assert np.all(gaps == max(v["tCCD_S"], v["tBL"], -(-v["tCCDWL"] // 4)))


@pytest.mark.parametrize("kind,cmd_gap", [("read", "tCCD_L"), ("write", "tCCD_L")])
def test_plain_columns_to_one_bank_group_take_tccd_l(kind, cmd_gap):
    cfg = _cfg(tCCD_L_nCK=3)  # longer than tBL so that the rule, not the bus, paces
    gaps, v = _gaps(cfg, _addrs(cfg, [0]), kind)
    assert np.all(gaps == v[cmd_gap])
    gaps, v = _steady(cfg, _addrs(cfg, [0, 1, 2, 3]), kind)
    assert np.all(gaps == max(v["tCCD_S"], v["tBL"]))


def test_tccdwl_is_a_parameter_not_a_constant():
    cfg = _cfg(tCCDWL_nCK=7)
    gaps, _ = _gaps(cfg, _addrs(cfg, [2]), "update")
    assert np.all(gaps == 7)
