"""Synthetic patterns on the Table 1 HBM2: zero violations, near-peak streams, random reads at the
ACT-rate bound, the turnaround cost of mixed traffic."""

import numpy as np
import pytest

from t3sim.config import SystemConfig
from t3sim.memory import timing as T
from t3sim.memory.memtest import PATTERNS, simulate
from t3sim.memory.stats import summary

from .helpers import assert_clean, system


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_pattern_is_violation_free(pattern):
    ms, _ = simulate(system(4), pattern, 12_000, record=True, seed=5)
    assert_clean(ms)
    assert summary(ms)["requests"] == 12_000


@pytest.mark.parametrize("pattern", ["stream-read", "stream-write", "nmc-update"])
def test_streams_reach_90_percent_of_peak_on_table1(pattern):
    cfg = SystemConfig()  # paper Table 1: 32 channels, 1 TB/s
    ms, _ = simulate(cfg, pattern, 200_000)
    s = summary(ms)
    assert s["peak_GBps"] == pytest.approx(1024.0)
    assert s["efficiency"] >= 0.90, s
    # the gap is refresh (tRFC per tREFI per channel) plus row switches and the pipeline fill
    v = T.resolve(cfg.hbm).values
    assert s["efficiency"] <= 1 - v["tRFC"] / v["tREFI"] + 0.01


@pytest.mark.parametrize("trrd", [4, 8])
def test_random_reads_land_at_the_activate_rate_bound(trrd):
    """Random lines miss the row buffer: each request needs an ACT. A channel can activate at most
    once per tRRD, 4 per tFAW, and each bank once per tRC; refresh takes tRFC of every tREFI."""
    cfg = system(8, hbm={"timing": {"tRRD_nCK": trrd, "tFAW_nCK": 4 * trrd}})
    ms, _ = simulate(cfg, "random-read", 40_000, seed=1)
    v = T.resolve(cfg.hbm).values
    acts_per_cycle = min(1 / v["tRRD"], 4 / v["tFAW"], cfg.hbm.bank_groups * cfg.hbm.banks_per_group / v["tRC"])
    bound = acts_per_cycle * 64 * cfg.hbm.clock_GHz * cfg.hbm.channels * (1 - v["tRFC"] / v["tREFI"])
    s = summary(ms)
    assert s["row_hit_rate"] < 0.01
    assert 0.90 * bound <= s["achieved_GBps"] <= 1.001 * bound, (s["achieved_GBps"], bound)


def test_mixed_traffic_pays_the_bus_turnarounds():
    cfg = system(4)
    v = T.resolve(cfg.hbm).values
    mixed, _ = simulate(cfg, "mixed", 40_000, record=True)
    stream, _ = simulate(cfg, "stream-read", 40_000)
    log = mixed.command_log()
    col = log[np.isin(log[:, 2], T.COLUMN_CMDS)]
    rw, wr = [], []
    for u in range(cfg.hbm.channels):
        c = col[col[:, 1] == u]
        gap, a, b = np.diff(c[:, 0]), c[:-1, 2], c[1:, 2]
        rw += list(gap[(a == T.RD) & (b != T.RD)])
        wr += list(gap[(a != T.RD) & (b == T.RD)])
    assert len(rw) > 50 and len(wr) > 50
    # the saturated scheduler pays exactly the turnaround the timing names
    assert np.median(rw) == v["tRTW"]
    assert np.median(wr) == v["tWL"] + v["tBL"] + v["tWTR"]
    cost = (np.sum(np.array(rw) - v["tBL"]) + np.sum(np.array(wr) - v["tBL"])) / cfg.hbm.channels  # cycles per channel
    extra = (summary(mixed)["span_ns"] - summary(stream)["span_ns"]) * cfg.hbm.clock_GHz
    assert summary(mixed)["efficiency"] < summary(stream)["efficiency"] - 0.05
    assert 0.75 * cost <= extra <= 1.25 * cost, (extra, cost)
