"""Shared L2: capacity/reuse behaviour, LRU, write-back, uncached bypass, bank-conflict timing, fast == reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.cache import BYPASS, HIT, MISS, SECTOR_MISS, L2Cache, ReferenceL2
from t3sim.cache.common import L2Geometry, sectors_to_addrs
from t3sim.compute.addresses import GemmGeometry, wg_load_requests
from t3sim.config.gpu import L2Config

TABLE1 = L2Config()
MODELS = [L2Cache, ReferenceL2]


def tiny(banks=1, assoc=4, spb=1, **kw) -> L2Config:
    """A small L2: banks x spb sets of ``assoc`` 128 B lines."""
    return L2Config(size_MiB=banks * spb * assoc * 128 / 2**20, banks=banks, associativity=assoc, **kw)


def test_table1_geometry():
    g = L2Geometry.from_config(TABLE1)
    assert (g.banks, g.sets_per_bank, g.assoc, g.sectors_per_line) == (64, 128, 16, 4)
    assert g.capacity_B == 16 * 2**20
    assert list(g.occupancy_table()) == [1, 1, 1, 2, 2]  # 64 B/cycle/bank: 1-2 sectors 1 cycle, 3-4 sectors 2


@pytest.mark.parametrize("hash_", ["xor", "skew", "linear"])
def test_working_set_that_fits_hits_on_second_pass(hash_):
    c = L2Cache(TABLE1.model_copy(update={"index_hash": hash_}))
    ws = np.arange(0, 12 * 2**20, 128) + (1 << 33)  # 12 MiB of 128 B reads
    first = c.access(0, ws, False, size_B=128)
    assert np.all(first.outcome == MISS)
    second = c.access(10**9, ws, False, size_B=128)
    assert np.mean(second.outcome == HIT) == 1.0
    s = c.stats()
    assert s.value("read_hits") == len(ws) and s.value("read_misses") == len(ws)
    assert s.value("evictions") == 0


def test_streaming_larger_than_capacity_gets_no_hits():
    c = L2Cache(TABLE1)
    ws = np.arange(0, 32 * 2**20, 128)  # 2x capacity, LRU: every line is evicted before reuse
    c.access(0, ws, False, size_B=128)
    second = c.access(10**9, ws, False, size_B=128)
    assert np.mean(second.outcome == HIT) == 0.0
    assert c.stats().value("evictions") == 2 * len(ws) - TABLE1.size_MiB * 2**20 // 128


def test_strided_gemm_operand_fits_and_is_reused():
    # column-major A (M=4096, K=1024 fp16 = 8 MiB): a tile row's K-slices reused by the next WG of the row
    g = GemmGeometry(M=4096, N=1024, K=1024, tile_m=128, tile_n=128, tile_k=32, elem_B=2, trans_a=False,
                     trans_b=False, a_base_B=0, b_base_B=1 << 30, c_base_B=1 << 31)
    c = L2Cache(TABLE1, ("gemm",))
    for s in range(g.k_steps):
        r0 = wg_load_requests(g, 5, 0, s)
        c.access(0, r0.addr, False)
        r1 = wg_load_requests(g, 5, 1, s)  # same tm -> same A requests
        res = c.access(0, r1.addr, False)
        assert np.all(res.outcome[r1.operand == 0] == HIT)
        assert np.all(res.outcome[r1.operand == 1] != HIT)  # different B columns


@pytest.mark.parametrize("model", MODELS)
def test_lru_order_and_victim(model):
    c = model(tiny(assoc=4))
    lines = [i * 128 for i in range(5)]
    for a in lines[:4]:
        c.access(0, a, False)
    assert c.lru_order(0) == lines[:4]
    c.access(0, lines[0], False)  # A becomes MRU
    assert c.lru_order(0) == [lines[1], lines[2], lines[3], lines[0]]
    r = c.access(0, lines[4], False)  # evicts B (LRU)
    assert r.outcome[0] == MISS
    assert c.lru_order(0) == [lines[2], lines[3], lines[0], lines[4]]
    assert c.access(0, lines[1], False).outcome[0] == MISS
    # uncached accesses do not touch LRU state
    before = c.lru_order(0)
    c.access(0, before[0], False, uncached=True)
    assert c.lru_order(0) == before


@pytest.mark.parametrize("model", MODELS)
def test_writebacks_equal_dirty_evictions(model):
    c = model(tiny(assoc=4), ("gemm", "rs"))
    dirty_lines = [i * 128 for i in range(4)]
    r = c.access(0, dirty_lines, True, src=1, size_B=32)  # write sector 0 of 4 lines (write-allocate)
    assert np.all(r.outcome == MISS) and not r.fill_mask.any()  # write-validate: no fill
    r = c.access(0, [(10 + i) * 128 for i in range(4)], False, src=0)  # 4 clean reads evict the 4 dirty lines
    assert sorted(r.writebacks.line_addr.tolist()) == dirty_lines
    assert np.all(r.writebacks.sector_mask == 1) and np.all(r.writebacks.src == 1) and not r.writebacks.is_flush.any()
    r = c.access(0, [(20 + i) * 128 for i in range(4)], False, src=0)  # evicts 4 clean lines: no write-back
    assert len(r.writebacks.line_addr) == 0
    s = c.stats()
    assert s.value("evictions") == 8 and s.value("writebacks") == 4 and s.value("writeback_sectors") == 4
    assert s.value("by_source.rs.writebacks") == 4 and s.value("by_source.gemm.writebacks") == 0
    assert s.value("by_source.rs.evictions") == 4 and s.value("by_source.gemm.evictions") == 4


@pytest.mark.parametrize("model", MODELS)
def test_write_no_allocate(model):
    c = model(tiny(assoc=4, write_allocate=False))
    r = c.access(0, [0, 128], True)
    assert np.all(r.outcome == MISS) and np.all(r.dram_write_mask == 0b11) and c.snapshot() == []
    c.access(0, 0, False)  # now resident (clean)
    r = c.access(0, 0, True, size_B=32)
    assert r.outcome[0] == HIT and r.dram_write_mask[0] == 0
    assert c.snapshot() == [(0, 0b11, 0b01, 0)]


@pytest.mark.parametrize("model", MODELS)
def test_uncached_never_allocates(model):
    c = model(TABLE1 if model is L2Cache else tiny(banks=4, spb=4), ("gemm", "nmc"))
    addrs = np.arange(0, 1 << 16, 64)
    r = c.access(0, addrs, np.arange(len(addrs)) % 2 == 0, src=1, uncached=True)
    assert np.all(r.outcome == BYPASS) and c.snapshot() == []
    assert np.all(r.dram_write_mask[::2] == 0b11) and np.all(r.fill_mask[1::2] == 0b1100)
    s = c.stats()
    assert s.value("by_source.nmc.bypass_writes") == len(addrs) // 2 and s.value("bypass_reads") == len(addrs) // 2
    # an uncached write to a resident dirty line: write the dirty sectors back, then invalidate the written ones
    c.access(0, 0, True, src=0, size_B=128)
    r = c.access(0, 0, True, src=1, uncached=True)
    assert r.writebacks.line_addr.tolist() == [0] and r.writebacks.sector_mask.tolist() == [0b1111]
    assert r.writebacks.is_flush.tolist() == [True]
    assert c.snapshot() == [(0, 0b1100, 0, 0)]


@pytest.mark.parametrize("model", MODELS)
def test_sector_miss_fills_only_missing_sectors(model):
    c = model(tiny())
    assert c.access(0, 32, False, size_B=32).fill_mask[0] == 0b0010
    r = c.access(0, 0, False, size_B=128)
    assert r.outcome[0] == SECTOR_MISS and r.fill_mask[0] == 0b1101
    assert c.access(0, 64, False).outcome[0] == HIT


@pytest.mark.parametrize("model", MODELS)
def test_bank_conflicts_serialise(model):
    cfg = TABLE1 if model is L2Cache else tiny(banks=64, spb=128, assoc=2)
    c = model(cfg)
    g = c.geo
    lines = np.arange(200000)
    banks = np.array([g.bank_and_set(int(x))[0] for x in lines])
    n = 16
    same = lines[banks == 7][:n] * 128
    r = c.access(0, same, False)  # 64 B each: 1 bank cycle
    assert r.batch_cycles == n and np.all(r.bank == 7)
    assert sorted(r.done_cycle.tolist()) == list(range(1, n + 1))
    spread = np.array([lines[banks == b][100] for b in range(n)]) * 128
    t = c.clock.cycle_to_tick(10_000)
    r = c.access(t, spread, False)
    assert r.batch_cycles == 1 and len(set(r.bank.tolist())) == n
    # 128 B accesses occupy a bank 2 cycles; a batch arriving while the bank is busy waits for it
    t = c.clock.cycle_to_tick(20_000)
    r = c.access(t, same[:4], False, size_B=128)
    assert r.batch_cycles == 8
    r2 = c.access(t, same[4:5], False)
    assert r2.batch_cycles == 9 and r2.done_tick[0] == c.clock.cycle_to_tick(20_009)
    assert r2.ready_tick[0] == c.clock.cycle_to_tick(20_009 + g.hit_latency_cycles)
    assert c.stats().value("bank_wait_cycles") > 0


def test_stats_have_units_and_descriptions():
    c = L2Cache(tiny(), ("gemm", "rs"))
    c.access(0, [0, 0, 128], [False, False, True], [0, 0, 1])
    d = c.stats().to_dict()
    assert d["read_hits"]["value"] == 1 and d["read_misses"]["value"] == 1 and d["write_misses"]["value"] == 1
    assert d["by_source"]["rs"]["write_misses"]["value"] == 1 and d["by_source"]["gemm"]["write_misses"]["value"] == 0
    assert d["read_hit_rate"]["value"] == 0.5 and d["bank_wait_cycles"]["unit"] == "cycles"
    for name, stat in c.stats().items():
        assert stat.unit and stat.description


def test_bad_inputs():
    c = L2Cache(tiny())
    with pytest.raises(ValueError):
        c.access(0, 100, False, size_B=64)  # crosses a line
    with pytest.raises(ValueError):
        c.access(0, 0, False, src=1)
    with pytest.raises(ValueError):
        L2Cache(L2Config(size_MiB=1.0, banks=3))  # xor needs powers of two
    with pytest.raises(ValueError):
        L2Cache(tiny(), ("a", "a"))


def test_sectors_to_addrs():
    a, i = sectors_to_addrs(np.array([0, 1280]), np.array([0b1010, 0b0001]), 32, 4)
    assert a.tolist() == [32, 96, 1280] and i.tolist() == [0, 0, 1]


# ------------------------------------------------------------------ fast == reference

@st.composite
def traces(draw):
    hash_ = draw(st.sampled_from(["xor", "skew", "linear"]))
    banks = draw(st.sampled_from([1, 2, 4] if hash_ == "xor" else [1, 2, 3, 4, 6]))
    spb = draw(st.sampled_from([1, 2, 8] if hash_ == "xor" else [1, 2, 3, 8]))
    cfg = tiny(banks=banks, spb=spb, assoc=draw(st.sampled_from([1, 2, 4])),
               write_allocate=draw(st.booleans()), index_hash=hash_,
               bank_bandwidth_B_per_cycle=draw(st.sampled_from([32, 64, 128])))
    pool = draw(st.integers(1, 64))
    batches = []
    tick = 0
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(0, 60))
        line = draw(st.lists(st.integers(0, pool - 1), min_size=n, max_size=n))
        sec = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        nsec = [draw(st.integers(1, 4 - s)) for s in sec]
        addr = np.array([l * 997 * 128 + s * 32 for l, s in zip(line, sec)], dtype=np.int64)  # spread lines
        flags = draw(st.lists(st.tuples(st.booleans(), st.integers(0, 9), st.integers(0, 2)), min_size=n, max_size=n))
        batches.append((tick, addr, np.array([f[0] for f in flags], bool), np.array([f[2] for f in flags]),
                        np.array(nsec) * 32, np.array([f[1] == 0 for f in flags], bool)))
        tick += draw(st.integers(0, 20_000))
    return cfg, batches


def _assert_same(rf, rr):
    for name in ("outcome", "fill_mask", "dram_write_mask", "bank", "done_cycle", "done_tick", "ready_tick"):
        np.testing.assert_array_equal(getattr(rf, name), getattr(rr, name), err_msg=name)
    assert rf.batch_cycles == rr.batch_cycles
    for a, b in zip(rf.writebacks, rr.writebacks):
        np.testing.assert_array_equal(a, b)


def _check_fast_equals_reference(t):
    cfg, batches = t
    fast, ref = L2Cache(cfg, ("a", "b", "c")), ReferenceL2(cfg, ("a", "b", "c"))
    for tick, addr, wr, src, size, unc in batches:
        _assert_same(fast.access(tick, addr, wr, src, size_B=size, uncached=unc),
                     ref.access(tick, addr, wr, src, size_B=size, uncached=unc))
        assert fast.snapshot() == ref.snapshot()
        for s in range(fast.geo.num_sets):
            assert fast.lru_order(s) == ref.lru_order(s)
    np.testing.assert_array_equal(fast.counts, ref.counts)
    ff, rf = fast.flush(), ref.flush()
    assert sorted(zip(ff.line_addr.tolist(), ff.sector_mask.tolist(), ff.src.tolist())) == \
        sorted(zip(rf.line_addr.tolist(), rf.sector_mask.tolist(), rf.src.tolist()))
    np.testing.assert_array_equal(fast.counts, ref.counts)
    # invariants: dirty sectors are always valid; after flush() nothing is dirty
    assert all(d & ~v == 0 for _, v, d, _ in fast.snapshot())
    assert all(d == 0 for _, _, d, _ in fast.snapshot())


@settings(max_examples=120, deadline=None)
@given(t=traces())
def test_fast_equals_reference(t):
    _check_fast_equals_reference(t)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(t=traces())
def test_fast_equals_reference_many(t):
    _check_fast_equals_reference(t)


# ------------------------------------------------------------------ the skew index (slice counts not powers of two)

H200_L2 = dict(banks=96, spb=320, assoc=16)  # 60 MiB of 128 B lines in 16 ways over 96 slices: 320 sets per slice


@pytest.mark.parametrize("block", [0, 7, 123457])
def test_skew_maps_an_aligned_block_one_line_per_bank_and_set(block):
    """Every aligned block of banks x sets lines fills each (bank, set) once, as the xor hash does for powers of two:
    a contiguous working set uses the capacity it occupies (t3sim/cache/common.py)."""
    g = L2Geometry.from_config(tiny(index_hash="skew", **H200_L2))
    n = g.banks * g.sets_per_bank
    sets = {g.bank_and_set(block * n + i)[1] for i in range(n)}
    assert len(sets) == n


def test_skew_spreads_a_row_stride_that_linear_camps_on_one_bank():
    """A row-major operand whose rows are 192 lines apart (12288 bf16: 24 KiB) on 96 slices: the plain modulo puts
    every row's first line in one slice; the skew spreads them over at least a third of the slices."""
    banks = {}
    for hash_ in ("linear", "skew"):
        g = L2Geometry.from_config(tiny(index_hash=hash_, **H200_L2))
        banks[hash_] = {g.bank_and_set(192 * r)[0] for r in range(1024)}
    assert len(banks["linear"]) == 1
    assert len(banks["skew"]) >= 32


def test_xor_refuses_counts_that_are_not_powers_of_two():
    with pytest.raises(ValueError, match="use 'skew'"):
        L2Geometry.from_config(tiny(index_hash="linear", **H200_L2).model_copy(update={"index_hash": "xor"}))
