"""``t3sim memtest`` and the statistics it reports."""

import json

import numpy as np
import pytest

from t3sim.memory.memtest import simulate

from ..conftest import assert_one_line_error
from .helpers import system


def test_memtest_json(run_cli):
    rc, out, err = run_cli("memtest", "--pattern", "stream-read", "--requests", "20000", "--set", "hbm.channels=4",
                           "--compare-requests", "300", "--json")
    assert rc == 0, err
    r = json.loads(out)
    assert r["timing_violations"] == 0 and r["requests"] == 20000
    assert r["peak_GBps"] == 128.0 and 0.8 < r["efficiency"] <= 1
    assert r["fast_vs_reference_identical"] is True
    for k in ("achieved_GBps", "row_hit_rate", "read_latency_mean_ns", "requests_per_s", "fast_vs_reference_completion_diff"):
        assert k in r


def test_memtest_text(run_cli):
    rc, out, _ = run_cli("memtest", "--pattern", "nmc-update", "--requests", "3000", "--set", "hbm.channels=2",
                         "--compare-requests", "0")
    assert rc == 0
    assert "timing violations  0" in out and "efficiency" in out and "requests/s" in out


def test_memtest_bad_input(run_cli):
    rc, _, err = run_cli("memtest", "--pattern", "stream-read", "--requests", "0")
    assert_one_line_error(rc, err, "--requests")
    rc, _, err = run_cli("memtest", "--pattern", "stream-read", "--set", "hbm.channels=0")
    assert_one_line_error(rc, err, "hbm.channels")
    rc, _, err = run_cli("memtest", "--pattern", "stream-read", "--set", "memory_controller.arbitration.kind=fifo")
    assert_one_line_error(rc, err, "fifo")


def test_stats_have_units_and_add_up():
    cfg = system(4)
    ms, _ = simulate(cfg, "mixed", 5000)
    st = ms.stats("gpu0.hbm")
    d = st.to_dict()["gpu0"]["hbm"]
    assert d["requests"]["value"] == 5000
    A = cfg.hbm.access_size_B
    assert d["by_kind"]["read"]["bytes"]["value"] + d["by_kind"]["write"]["bytes"]["value"] == 5000 * A
    assert d["row"]["hits"]["value"] + d["row"]["misses"]["value"] + d["row"]["conflicts"]["value"] == 5000
    hist = np.array(d["queue"]["occupancy_histogram"]["value"])
    assert d["queue"]["occupancy_histogram"]["unit"] == "cycles"
    # each channel's every cycle up to its last command falls in one bin: at most channels x the span
    span_cycles = d["span_ns"]["value"] * cfg.hbm.clock_GHz
    assert 0.95 * 4 * span_cycles <= hist.sum() <= 4 * span_cycles
    # the reported time-weighted mean occupancy is the histogram's mean
    assert d["queue"]["occupancy_mean"]["value"] == pytest.approx((hist * np.arange(len(hist))).sum() / hist.sum())
    bw = d["bandwidth_over_time"]
    series = np.array(bw["compute_read_GBps"]["value"]) + np.array(bw["compute_write_GBps"]["value"])
    assert series.sum() * bw["bin_ns"]["value"] == pytest.approx(5000 * A)  # GB/s x ns = bytes
    assert all(0 <= u <= 1 for u in d["channel_utilisation"]["value"])
    for name, stat in st.items():
        assert stat.unit and stat.description, name


def test_one_read_occupies_the_queue_for_trcd():
    """One read on one channel: one cycle in the pending FIFO, then queued from its ACT until its RD can
    issue, tRCD cycles later (timing from the config, not from the statistics code)."""
    cfg = system(1)
    ms, _ = simulate(cfg, "stream-read", 1)
    d = ms.stats("gpu0.hbm").to_dict()["gpu0"]["hbm"]
    hist = d["queue"]["occupancy_histogram"]["value"]
    assert hist[:2] == [1, cfg.hbm.timing.tRCD_nCK] and not any(hist[2:])
    assert d["row"]["misses"]["value"] == 1
    assert (d["commands"]["ACT"]["value"], d["commands"]["RD"]["value"], d["commands"]["PRE"]["value"]) == (1, 1, 0)


@pytest.mark.parametrize("mix,reads", [((1, 1), 1536), ((2, 1), 2048), ((3, 1), 2304), ((1, 0), 3072)])
def test_mixed_pattern_read_write_ratio(mix, reads):
    """--mix R:W: R chunks of 256 reads, then W chunks of 256 writes, repeated; 3072 requests = 12 chunks."""
    ms, _ = simulate(system(2), "mixed", 3072, mix=mix)
    kinds = ms.stats("g").to_dict()["g"]["by_kind"]
    got_w = kinds["write"]["requests"]["value"] if "write" in kinds else 0
    assert (kinds["read"]["requests"]["value"], got_w) == (reads, 3072 - reads)


def test_memtest_mix_flag(run_cli):
    rc, out, err = run_cli("memtest", "--pattern", "mixed", "--mix", "2:1", "--requests", "768", "--set", "hbm.channels=2",
                           "--compare-requests", "0", "--no-check", "--json")
    assert rc == 0, err
    assert json.loads(out)["mix"] == "2:1"
    rc, out, _ = run_cli("memtest", "--pattern", "mixed", "--requests", "768", "--set", "hbm.channels=2",
                         "--compare-requests", "0", "--no-check")
    assert rc == 0 and out.startswith("pattern            mixed 1:1 (768 requests")
