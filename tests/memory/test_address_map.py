"""Address maps spread GPU-like streams over channels and banks."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from t3sim.memory import MemorySystem

from .helpers import system


def _map(cfg, addrs):
    return MemorySystem(cfg).amap.map(addrs)


def test_channel_interleave_granularity():
    cfg = system(8, address_map={"interleave_granularity_B": 256})
    m = _map(cfg, np.arange(0, 8 * 256 * 3, 64))
    assert m.unit.tolist()[:12] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert np.bincount(m.unit).tolist() == [12] * 8
    cfg2 = system(8, address_map={"interleave_granularity_B": 1024})
    assert _map(cfg2, np.arange(0, 2048, 64)).unit.tolist() == [0] * 16 + [1] * 16


def test_consecutive_chunks_of_a_channel_share_a_row():
    cfg = system(4, address_map={"xor_bank_hash": False})
    A = cfg.hbm.access_size_B  # the column (one DRAM access)
    m = _map(cfg, np.arange(0, 4 * 2048, A))
    sel = m.unit == 0
    assert len(set(m.row[sel].tolist())) == 1 and len(set(m.bank[sel].tolist())) == 1
    assert sorted(m.column[sel].tolist()) == list(range(2048 // A))


def test_xor_hash_spreads_row_strided_streams():
    # a stride of one row per channel x all banks lands on one bank without the hash
    stride = 4 * 2048 * 16
    addrs = np.arange(64) * stride
    plain = _map(system(4, address_map={"xor_bank_hash": False}), addrs)
    hashed = _map(system(4, address_map={"xor_bank_hash": True}), addrs)
    assert len(set(plain.bank.tolist())) == 1
    assert len(set(hashed.bank.tolist())) == 16


def test_non_power_of_two_channels_and_wrap():
    cfg = system(96, hbm={"bus_width_B": 8, "burst_length": 8})
    ms = MemorySystem(cfg)
    m = ms.amap.map(np.arange(0, 96 * 1024, 64))
    assert set(m.unit.tolist()) == set(range(96))
    cap = ms.amap.capacity_B
    a = np.array([5 * 64, cap + 5 * 64])
    m2 = ms.amap.map(a)
    assert m2.unit[0] == m2.unit[1] and m2.bank[0] == m2.bank[1] and m2.row[0] == m2.row[1]


def test_field_order_map():
    cfg = system(4, address_map={"kind": "row_bank_column_channel", "field_order": "channel,col_low,col_high,bankgroup,bank,row",
                                 "xor_bank_hash": False, "channel_hash": False})
    m = _map(cfg, np.arange(8) * cfg.hbm.access_size_B)
    assert m.unit.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    with pytest.raises(ValueError):
        _map(system(4, address_map={"kind": "row_bank_column_channel", "field_order": "row,bank"}), [0])


def test_channel_hash_spreads_column_major_strides():
    """A column-major tile's columns are M*elem_B apart; with 32 channels x 256 B = 8 KiB per rotation a
    16 KiB stride lands every column on one channel unless the channel index is hashed (partition camping)."""
    stride = 8192 * 2  # T-NLG OP: M = 8192 fp16 rows per column
    addrs = np.arange(128) * stride
    plain = _map(system(32, address_map={"channel_hash": False}), addrs)
    hashed = _map(system(32, address_map={"channel_hash": True}), addrs)
    assert len(set(plain.unit.tolist())) == 1
    assert len(set(hashed.unit.tolist())) == 32


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 1 << 30))
def test_channel_hash_keeps_contiguous_streams_balanced(base):
    """For fixed upper bits the hash is a rotation: any aligned channels x granularity window covers every channel once."""
    cfg = system(32, address_map={"channel_hash": True})
    window = 32 * 256
    start = (base // window) * window
    m = _map(cfg, start + np.arange(window // 64) * 64)
    counts = np.bincount(m.unit, minlength=32)
    assert (counts == 256 // 64).all()


_POW2_MAPS = [
    dict(channels=32, amap={}),
    dict(channels=32, amap={"channel_hash": True}),
    dict(channels=16, amap={"xor_bank_hash": False}),
    dict(channels=8, amap={"kind": "row_bank_column_channel", "field_order": "col_low,channel,bankgroup,col_high,bank,row"}),
    dict(channels=32, amap={"kind": "row_bank_column_channel", "field_order": "channel,col_low,col_high,bank,bankgroup,row",
                            "channel_hash": True}),
]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_POW2_MAPS), st.lists(st.integers(0, (1 << 45) - 1), min_size=1, max_size=50))
def test_power_of_two_map_equals_general_map(case, lines):
    """The shift-and-mask map that submissions use when every radix is a power of two
    (``map_line_pow2``) gives the digits of the division-based ``map_line``."""
    from t3sim.memory.address_map import map_line, map_line_pow2, pow2_shifts

    am = MemorySystem(system(case["channels"], address_map=case["amap"])).amap
    sh = np.empty(am.radix_arr.size, np.int64)
    assert pow2_shifts.py_func(am.radix_arr, sh)
    d = np.empty(am.radix_arr.size, np.int64)
    for ln in lines:
        ln = np.int64(ln)
        assert (map_line_pow2.py_func(ln, sh, am.radix_arr, am.pos_arr, am.bpg, am.xor, am.chash, d)
                == map_line.py_func(ln, am.radix_arr, am.pos_arr, am.bpg, am.xor, am.chash, d))


@pytest.mark.parametrize("channels", [96, 32])
def test_submission_maps_as_the_address_map(channels):
    """A submission's compiled map (shifts and masks for 32 channels, divisions for 96, where
    ``pow2_shifts`` declines) gives the digits of ``DigitMap.map``."""
    from t3sim.memory.address_map import pow2_shifts

    ms = MemorySystem(system(channels, address_map={"channel_hash": True}))
    assert pow2_shifts.py_func(ms.amap.radix_arr, np.empty(ms.amap.radix_arr.size, np.int64)) == (channels == 32)
    addrs = np.arange(0, 96 * 4096, 7, dtype=np.int64) * 32
    ms.submit(0, addrs, "read", "compute", "gemm")
    m = ms.amap.map(addrs)
    assert (ms.r_unit[: addrs.size] == m.unit).all() and (ms.r_bank[: addrs.size] == m.bank).all()
    assert (ms.r_row[: addrs.size] == m.row).all()
