"""``hbm.standard`` selects a registered rule set (t3sim/memory/standards), in tCK terms.

* HBM2/HBM2E and HBM3/HBM3E are two rule sets (one file each); HBM3's tPPD binds PRE-to-PRE spacing,
  which HBM2 leaves free;
* the bank-group splits (tRRD_L, tWTR_L, tRCDWR) bind when set and equal the single values when not
  (the Table 1 table is unchanged);
* a timing parameter the standard does not read is rejected, one it needs is required;
* both controllers and the checker use the selected rules.
"""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from t3sim import registry
from t3sim.config import HBMConfig
from t3sim.memory import MemorySystem
from t3sim.memory import timing as T
from t3sim.memory.checker import check

from .helpers import assert_clean, run, system

HBM3 = {"standard": "HBM3", "timing": {"tPPD_nCK": 6}}


def _log(ms, cmd):
    log = ms.command_log()
    return log[log[:, 2] == cmd]


def _conflicts(cfg):
    """Reads to two rows of every bank of one channel, interleaved: a PRE per access, banks precharging
    back to back."""
    g = cfg.hbm
    row_B = g.row_size_B * g.bank_groups * g.banks_per_group  # one row of every bank (no XOR hash)
    addrs = [(i % 2) * row_B * 8 + (i // 2) * g.row_size_B for i in range(2 * g.bank_groups * g.banks_per_group)]
    return [(0, np.array(addrs * 4, dtype=np.int64), "read", "compute", "gemm")]


def _one_channel(**hbm):
    return system(1, hbm={"timing": {"tREFI_nCK": 0, **hbm.pop("timing", {})}, **hbm},
                  address_map={"xor_bank_hash": False, "channel_hash": False})


def test_the_four_names_select_two_rule_sets():
    assert {"HBM2", "HBM2E", "HBM3", "HBM3E"} <= set(registry.names("dram_standard"))
    get = lambda n: registry.get("dram_standard", n)  # noqa: E731
    assert get("HBM2E").rules == get("HBM2").rules and get("HBM3E").rules == get("HBM3").rules
    assert set(get("HBM3").rules) - set(get("HBM2").rules) == {r for r in get("HBM3").rules if r.latency == "tPPD"}
    for n in ("HBM2", "HBM3"):
        assert get(n).not_modelled  # each says what of its JEDEC document it leaves out


def test_table1_hbm2_table_is_the_single_value_table():
    """The splits, unset, equal tRRD/tWTR/tRCD: Table 1 resolves to the single-value rules of ref. [11]."""
    t = T.resolve(HBMConfig())
    v = t.values
    assert (v["tRRD_L"], v["tWTR_L"], v["tRCDWR"]) == (v["tRRD"], v["tWTR"], v["tRCD"])
    assert "tPPD" not in v
    assert t.lat[T.SC_CHANNEL, T.PRE, T.PRE] == -1


def test_hbm3_tppd_spaces_precharges_and_hbm2_does_not():
    gaps = {}
    for name, hbm in (("HBM2", {}), ("HBM3", HBM3)):
        cfg = _one_channel(**hbm)
        for mode in ("fast", "reference"):
            ms = run(cfg, _conflicts(cfg), mode)
            assert_clean(ms)
            pre = _log(ms, T.PRE)[:, 0]
            gaps[name, mode] = np.diff(pre).min()
            if mode == "fast":
                fast = ms.command_log()
            else:
                assert np.array_equal(fast, ms.command_log())
    assert gaps["HBM2", "fast"] < HBM3["timing"]["tPPD_nCK"]  # the rule is what spaces them
    assert gaps["HBM3", "fast"] == HBM3["timing"]["tPPD_nCK"]


def test_checker_knows_tppd():
    """An HBM2 command stream with back-to-back precharges violates the HBM3 rule set."""
    cfg2 = _one_channel()
    log = run(cfg2, _conflicts(cfg2)).command_log()
    assert check(log, cfg2.hbm).ok
    rep = check(log, _one_channel(**HBM3).hbm)
    assert any(k.startswith("tPPD") for k in rep.by_constraint), rep


@pytest.mark.parametrize("std", [{}, HBM3])
def test_trrd_l_spaces_activates_within_a_bank_group(std):
    """Random reads: ACTs to one bank group are >= tRRD_L apart, to different groups >= tRRD (tRRD_S)."""
    trrd, trrd_l = 4, 11
    cfg = _one_channel(**{**std, "timing": {**std.get("timing", {}), "tRRD_L_nCK": trrd_l}})
    rng = np.random.default_rng(2)
    ms = run(cfg, [(0, rng.integers(0, 1 << 18, 600) * 64, "read", "compute", "gemm")])
    assert_clean(ms)
    act = _log(ms, T.ACT)
    bg = act[:, 3] // cfg.hbm.banks_per_group
    same = [act[j, 0] - act[i, 0] for i in range(len(act)) for j in range(i + 1, min(i + 8, len(act))) if bg[i] == bg[j]]
    assert min(same) == trrd_l
    assert np.diff(act[:, 0]).min() == trrd  # different groups: tRRD_S
    # and without the split, same-group ACTs are tRRD apart
    base = run(_one_channel(**std), [(0, rng.integers(0, 1 << 18, 600) * 64, "read", "compute", "gemm")])
    a0 = _log(base, T.ACT)
    g0 = a0[:, 3] // cfg.hbm.banks_per_group
    assert min(a0[j, 0] - a0[i, 0] for i in range(len(a0)) for j in range(i + 1, min(i + 8, len(a0))) if g0[i] == g0[j]) < trrd_l


def test_trcdwr_and_twtr_l_in_tck():
    """A write's column command waits tRCDWR after its ACT; a read of the same bank group waits tWTR_L after
    the write's data, one of another group tWTR (tWTR_S)."""
    cfg = _one_channel(timing={"tRCDWR_nCK": 9, "tWTR_L_nCK": 10})
    v = T.resolve(cfg.hbm).values
    g = cfg.hbm
    ms = run(cfg, [(0, [0], "write", "compute", "gemm")])
    assert _log(ms, T.WR)[0, 0] - _log(ms, T.ACT)[0, 0] == 9
    # write to bank 0 (group 0), then reads of group 0 and of group 1, all rows open first (the address map's
    # digits above the row's columns are the bank group, then the bank: one row further is the next group)
    row_B = g.row_size_B
    ms = MemorySystem(cfg, record_commands=True)
    ms.submit(0, [0, row_B], "read", "compute", "gemm")  # open group 0's and group 1's first bank
    ms.run_until_idle()
    t = ms.clock.cycle_to_tick(ms.frontier + 50)
    ms.submit(t, [64], "write", "compute", "gemm")
    ms.run_until_idle()
    t = ms.clock.cycle_to_tick(ms.frontier)
    ms.submit(t, [128], "read", "compute", "gemm")
    ms.run_until_idle()
    wr = _log(ms, T.WR)[0, 0]
    rd = _log(ms, T.RD)[-1, 0]
    assert rd - wr == v["tWL"] + v["tBL"] + v["tWTR_L"]
    # the same after a write, to group 1: tWTR_S
    t = ms.clock.cycle_to_tick(ms.frontier + 50)
    ms.submit(t, [64], "write", "compute", "gemm")
    ms.run_until_idle()
    t = ms.clock.cycle_to_tick(ms.frontier)
    ms.submit(t, [row_B + 64], "read", "compute", "gemm")
    ms.run_until_idle()
    wr = _log(ms, T.WR)[-1, 0]
    rd = _log(ms, T.RD)[-1, 0]
    assert rd - wr == v["tWL"] + v["tBL"] + v["tWTR"] < v["tWL"] + v["tBL"] + v["tWTR_L"]
    assert_clean(ms)


def test_parameters_a_standard_does_not_read_are_rejected():
    with pytest.raises(ValidationError, match="HBM2 rule set .* has no tPPD"):
        system(1, hbm={"timing": {"tPPD_nCK": 2}})
    with pytest.raises(ValidationError, match="HBM3 rule set .* needs tPPD"):
        system(1, hbm={"standard": "HBM3"})
    with pytest.raises(ValidationError, match="unknown dram_standard kind 'DDR4'"):
        system(1, hbm={"standard": "DDR4"})
    system(1, hbm=HBM3)
    system(1, hbm={"standard": "HBM2E", "timing": {"tRRD_L_nCK": 6}})
