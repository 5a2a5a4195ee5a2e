"""Bank-group interleaving in tCCD terms (as Ramulator 2 states its timing tests).

With Table 1's 32 B accesses (BL2 on a 16 B DDR channel: tBL = 1 = tCCD_S, tCCD_L = 2) a stream of
column commands within one bank group is tCCD_L-bound (half the channel's peak) and a stream spread over
bank groups is tCCD_S-bound (peak). With 64 B accesses (BL4: tBL = 2 = tCCD_L) both take tBL: bank-group
interleaving could not matter. The access size follows the config.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t3sim.memory import timing as T
from t3sim.memory.stats import summary

from .helpers import assert_clean, bank_group_addrs, run, steady_columns, system


def _cfg(burst_length: int = 2, bus_width_B: int = 16, **timing):
    """One channel, refresh off, no XOR hash: addresses place accesses exactly."""
    return system(1, hbm={"burst_length": burst_length, "bus_width_B": bus_width_B, "timing": {"tREFI_nCK": 0, **timing}},
                  address_map={"xor_bank_hash": False, "channel_hash": False})


def _steady(cfg, addrs, kind):
    """Column-command cycles and bank groups while every bank has its row open and columns left."""
    ms = run(cfg, [(0, addrs, kind, "compute", "gemm")])
    assert_clean(ms)
    col = steady_columns(ms)
    return col[:, 0], col[:, 3] // cfg.hbm.banks_per_group, T.resolve(cfg.hbm).values


def test_table1_access_is_32_bytes_in_one_clock():
    cfg = system(1)
    v = T.resolve(cfg.hbm).values
    assert cfg.hbm.access_size_B == 32 and v["tBL"] == 1 == v["tCCD_S"] and v["tCCD_L"] == 2


@pytest.mark.parametrize("kind", ("read", "write"))
def test_one_bank_group_is_tccd_l_bound(kind):
    cfg = _cfg()
    cyc, _, v = _steady(cfg, bank_group_addrs(cfg, [0], 48), kind)
    assert len(cyc) == 48
    assert v["tCCD_L"] == 2 and np.all(np.diff(cyc) == v["tCCD_L"])


@pytest.mark.parametrize("kind", ("read", "write"))
def test_two_bank_groups_are_tccd_s_bound(kind):
    cfg = _cfg()
    cyc, _, v = _steady(cfg, bank_group_addrs(cfg, [0, 1], 64), kind)
    assert len(cyc) >= 40
    assert max(v["tCCD_S"], v["tBL"]) == 1 and np.all(np.diff(cyc) == 1)


@pytest.mark.parametrize("kind", ("read", "write"))
def test_with_64_byte_accesses_bank_groups_do_not_matter(kind):
    """BL4: each access holds the data bus for tBL = 2 = tCCD_L cycles, in one bank group or across."""
    cfg = _cfg(burst_length=4, tRTW_nCK=16)
    one, _, v = _steady(cfg, bank_group_addrs(cfg, [0], 24), kind)
    two, _, _ = _steady(cfg, bank_group_addrs(cfg, [0, 1], 32), kind)
    assert v["tBL"] == v["tCCD_L"] == 2
    assert np.all(np.diff(one) == 2) and np.all(np.diff(two) == 2)


def test_stream_bandwidth_in_tccd_terms():
    """A channel's sustained bytes per cycle: access_B / tCCD_L within one bank group, access_B /
    max(tCCD_S, tBL) across two."""
    cfg = _cfg()
    A = cfg.hbm.access_size_B
    v = T.resolve(cfg.hbm).values
    for groups, per_cycle in (([0], A / v["tCCD_L"]), ([0, 1], A / max(v["tCCD_S"], v["tBL"]))):
        ms = run(cfg, [(0, bank_group_addrs(cfg, groups, 64), "read", "compute", "gemm")], record=False)
        s = summary(ms)
        busy = s["span_ns"] * cfg.hbm.clock_GHz - v["tRCD"] - v["tCL"] - v["tBL"]  # first ACT to last data
        assert s["bytes"] / busy == pytest.approx(per_cycle, rel=0.06), groups


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ccd_s=st.integers(1, 3), extra_l=st.integers(0, 4), bus=st.sampled_from([(16, 2), (16, 4), (8, 8), (4, 8)]),
       kind=st.sampled_from(["read", "write"]), mode=st.sampled_from(["fast", "reference"]))
def test_bank_group_pacing_for_any_timing(ccd_s, extra_l, bus, kind, mode):
    """One bank group: every gap is max(tCCD_L, tBL). Two groups: consecutive commands at least
    max(tCCD_S, tBL) apart, those of one group at least tCCD_L apart, and the stream as fast as both allow
    (mean gap max(tCCD_S, tBL, tCCD_L / 2))."""
    width, bl = bus
    cfg = _cfg(burst_length=bl, bus_width_B=width, tCCD_S_nCK=ccd_s, tCCD_L_nCK=ccd_s + extra_l, tCCDWL_nCK=2 * (ccd_s + extra_l))
    v = T.resolve(cfg.hbm).values
    n = min(48, cfg.hbm.row_size_B // cfg.hbm.access_size_B)
    ms = run(cfg, [(0, bank_group_addrs(cfg, [0], n), kind, "compute", "gemm")], mode)
    assert_clean(ms)
    log = ms.command_log()
    cyc = log[np.isin(log[:, 2], T.COLUMN_CMDS), 0]
    assert np.all(np.diff(cyc) == max(v["tCCD_L"], v["tBL"]))
    cyc, bg, _ = _steady(cfg, bank_group_addrs(cfg, [0, 1], 2 * n), kind)
    gaps = np.diff(cyc)
    assert np.all(gaps >= max(v["tCCD_S"], v["tBL"]))
    for g in (0, 1):
        assert np.all(np.diff(cyc[bg == g]) >= v["tCCD_L"])
    mean = max(v["tCCD_S"], v["tBL"], v["tCCD_L"] / 2)
    assert abs(gaps.mean() - mean) <= max(v["tCCD_L"], v["tBL"]) / len(gaps) + 1e-9
