"""Physical address -> (unit, bank group, bank, row, column) mappings.

A *unit* is one independently scheduled channel (``channel * pseudo_channels
+ pseudo_channel``). Addresses are byte addresses; the map works on DRAM
accesses (lines of ``access_size_B``: 32 B on Table 1). Mappings are mixed-radix decompositions, so counts
need not be powers of two (e.g. 96 channels); addresses beyond the device
capacity wrap around (the row index is taken modulo ``rows``).

Registered ``address_map`` plug-ins (selected by ``address_map.kind``):

* ``channel_interleave``: ``interleave_granularity_B`` contiguous bytes per
  channel, then the next channel; above the channel digit come the remaining
  column digits (so a channel's consecutive chunks stay in one open row),
  then bank group, bank and row. With ``xor_bank_hash`` the low row digits
  are XOR-ed (added modulo for non-powers of two) into bank group and bank,
  so streams whose stride is a multiple of a row spread over banks. With
  ``channel_hash`` the digits above the channel digit (read as one number in
  base ``channels``) are summed and added to the channel digit modulo the
  channel count: for any fixed upper bits this is a rotation, so contiguous
  streams stay perfectly spread, while strides that would hit one channel
  (partition camping) rotate over all channels.
* ``row_bank_column_channel``: the same digits in the order named by
  ``field_order`` (least significant first), for experiments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numba as nb
import numpy as np

from t3sim import registry
from t3sim.config.memory import ADDRESS_FIELDS as FIELDS  # the digits; field_order is validated against them
from t3sim.registry import register



@dataclass(frozen=True)
class Mapped:
    """Decoded addresses (numpy arrays of equal length)."""

    unit: np.ndarray  # int32, 0..units-1
    bankgroup: np.ndarray  # int32
    bank: np.ndarray  # int32, index within the unit: bankgroup * banks_per_group + bank_in_group
    row: np.ndarray  # int32
    column: np.ndarray  # int32, column (access) index within the row
    line: np.ndarray  # int64, global access index (address // access_size_B)


class DigitMap:
    """Mixed-radix address map; ``order`` lists digits from least significant."""

    def __init__(self, hbm, amap, order: Tuple[str, ...] = FIELDS):
        self.access_B = hbm.access_size_B
        self.units = hbm.channels * hbm.pseudo_channels
        self.bg = hbm.bank_groups
        self.bpg = hbm.banks_per_group
        self.rows = hbm.rows
        cols = hbm.row_size_B // self.access_B
        gran = max(1, amap.interleave_granularity_B // self.access_B)
        if hbm.row_size_B % self.access_B or cols < 1:
            raise ValueError("row_size_B must be a multiple of the access size")
        if cols % gran and gran < cols:
            raise ValueError("interleave granularity must divide the row size")
        col_low = min(gran, cols)
        self.radix = {
            "col_low": col_low, "channel": self.units, "col_high": cols // col_low,
            "bankgroup": self.bg, "bank": self.bpg, "row": self.rows,
        }
        if sorted(order) != sorted(FIELDS):
            raise ValueError(f"field order must be a permutation of {FIELDS}")
        self.order = tuple(order)
        self.xor = bool(amap.xor_bank_hash)
        self.chash = bool(getattr(amap, "channel_hash", False))
        self.cols = cols
        self.radix_arr = np.array([self.radix[f] for f in self.order], dtype=np.int64)
        self.pos_arr = np.array([self.order.index(f) for f in FIELDS], dtype=np.int64)

    @property
    def capacity_B(self) -> int:
        n = 1
        for v in self.radix.values():
            n *= v
        return n * self.access_B

    def map(self, addrs) -> Mapped:
        a = np.ascontiguousarray(addrs, dtype=np.int64)
        if a.size and a.min() < 0:
            raise ValueError("addresses must be non-negative")
        unit, bg, bank, row, col, line = _map_kernel(a, self.access_B, self.radix_arr, self.pos_arr, self.bpg, self.xor,
                                                     self.chash)
        return Mapped(unit=unit, bankgroup=bg, bank=bank, row=row, column=col, line=line)


@nb.njit(cache=True)
def _map_kernel(a, access_B, radix, pos, bpg, xor, chash):  # pragma: no cover - compiled
    """Mixed-radix digits of each line (digit i has radix ``radix[i]``); ``pos[k]`` = digit of FIELDS[k]."""
    n = a.size
    nd = radix.size
    unit = np.empty(n, np.int32)
    bgs = np.empty(n, np.int32)
    bank = np.empty(n, np.int32)
    rows = np.empty(n, np.int32)
    cols = np.empty(n, np.int32)
    line = np.empty(n, np.int64)
    d = np.empty(nd, np.int64)
    for i in range(n):
        ln = a[i] // access_B
        line[i] = ln
        unit[i], bgs[i], bank[i], rows[i], cols[i] = map_line(ln, radix, pos, bpg, xor, chash, d)
    return unit, bgs, bank, rows, cols, line


@nb.njit(cache=True, inline="always")
def map_line(ln, radix, pos, bpg, xor, chash, d):  # pragma: no cover - compiled
    """(unit, bank group, bank, row, column) of access ``ln`` (address // access_size_B); ``d`` is scratch of ``radix.size``."""
    nd = radix.size
    rest = ln
    for k in range(nd):
        d[k] = rest % radix[k]
        rest //= radix[k]
    nbg = radix[pos[3]]
    bg = d[pos[3]]
    bk = d[pos[4]]
    row = d[pos[5]]
    if xor:
        bg = _hash1(bg, row, nbg)
        bk = _hash1(bk, row // nbg, bpg)
    ch = d[pos[1]]
    nch = radix[pos[1]]
    if chash and nch > 1:
        upper = 0
        for k in range(nd - 1, pos[1], -1):
            upper = upper * radix[k] + d[k]
        fold = 0
        while upper > 0:
            fold += upper % nch
            upper //= nch
        ch = (ch + fold) % nch
    return ch, bg, bg * bpg + bk, row, d[pos[2]] * radix[pos[0]] + d[pos[0]]


@nb.njit(cache=True, inline="always")
def pow2_shifts(radix, sh):
    """``sh[k] = log2(radix[k])`` when every radix is a power of two (then True), else False."""
    for k in range(radix.size):
        r = radix[k]
        if r < 1 or r & (r - 1) != 0:
            return False
        b = 0
        while (np.int64(1) << b) < r:
            b += 1
        sh[k] = b
    return True


@nb.njit(cache=True, inline="always")
def map_line_pow2(ln, sh, radix, pos, bpg, xor, chash, d):  # pragma: no cover - compiled
    """:func:`map_line` when every radix is a power of two (``sh[k] = log2(radix[k])``, :func:`pow2_shifts`):
    the same digits by shifts and masks instead of divisions (``x % 2**k == x & (2**k - 1)`` and
    ``x // 2**k == x >> k`` for ``x >= 0``), so the same result."""
    nd = radix.size
    rest = ln
    for k in range(nd):
        d[k] = rest & (radix[k] - 1)
        rest >>= sh[k]
    nbg = radix[pos[3]]
    bg = d[pos[3]]
    bk = d[pos[4]]
    row = d[pos[5]]
    if xor:
        bg = _hash1(bg, row, nbg)
        bk = _hash1(bk, row >> sh[pos[3]], bpg)
    ch = d[pos[1]]
    nch = radix[pos[1]]
    if chash and nch > 1:
        upper = 0
        for k in range(nd - 1, pos[1], -1):
            upper = (upper << sh[k]) | d[k]
        fold = 0
        cs = sh[pos[1]]
        while upper > 0:
            fold += upper & (nch - 1)
            upper >>= cs
        ch = (ch + fold) & (nch - 1)
    return ch, bg, bg * bpg + bk, row, (d[pos[2]] << sh[pos[0]]) + d[pos[0]]


@nb.njit(cache=True, inline="always")
def _hash1(x, row, n):  # pragma: no cover - compiled
    if n & (n - 1) == 0:
        return x ^ (row & (n - 1))
    return (x + row) % n


@register("address_map", "channel_interleave")
def channel_interleave(hbm, amap) -> DigitMap:
    """Channel-interleaved map (see module docstring)."""
    return DigitMap(hbm, amap, FIELDS)


@register("address_map", "row_bank_column_channel")
def ordered(hbm, amap) -> DigitMap:
    """Digits in ``amap.field_order`` (comma-separated, least significant first)."""
    order = tuple(s.strip() for s in amap.field_order.split(","))
    return DigitMap(hbm, amap, order)


def build(system) -> DigitMap:
    """The address map selected by ``system.address_map.kind``."""
    factory = registry.get("address_map", system.address_map.kind, "address_map.kind")
    return factory(system.hbm, system.address_map)
