"""Physical address -> (unit, bank group, bank, row, column) mappings.

A *unit* is one independently scheduled channel (``channel * pseudo_channels
+ pseudo_channel``). Addresses are byte addresses; the map works on 64 B
lines (``access_size_B``). Mappings are mixed-radix decompositions, so counts
need not be powers of two (e.g. 96 channels); addresses beyond the device
capacity wrap around (the row index is taken modulo ``rows``).

Registered ``address_map`` plug-ins (selected by ``address_map.kind``):

* ``channel_interleave``: ``interleave_granularity_B`` contiguous bytes per
  channel, then the next channel; above the channel digit come the remaining
  column digits (so a channel's consecutive chunks stay in one open row),
  then bank group, bank and row. With ``xor_bank_hash`` the low row digits
  are XOR-ed (added modulo for non-powers of two) into bank group and bank,
  so streams whose stride is a multiple of a row spread over banks.
* ``row_bank_column_channel``: the same digits in the order named by
  ``field_order`` (least significant first), for experiments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from t3sim.registry import register

FIELDS = ("col_low", "channel", "col_high", "bankgroup", "bank", "row")


@dataclass(frozen=True)
class Mapped:
    """Decoded addresses (numpy arrays of equal length)."""

    unit: np.ndarray  # int32, 0..units-1
    bankgroup: np.ndarray  # int32
    bank: np.ndarray  # int32, index within the unit: bankgroup * banks_per_group + bank_in_group
    row: np.ndarray  # int32
    column: np.ndarray  # int32, 64 B column index within the row
    line: np.ndarray  # int64, global 64 B line index (address // access_size_B)


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
        self.cols = cols

    @property
    def capacity_B(self) -> int:
        n = 1
        for v in self.radix.values():
            n *= v
        return n * self.access_B

    def map(self, addrs) -> Mapped:
        a = np.asarray(addrs, dtype=np.int64)
        if a.size and a.min() < 0:
            raise ValueError("addresses must be non-negative")
        line = a // self.access_B
        rest = line.copy()
        d = {}
        for name in self.order:
            r = self.radix[name]
            d[name] = rest % r
            rest //= r
        # digits above the last one (``rest``) are dropped: addresses wrap at capacity
        bg, bk, row = d["bankgroup"], d["bank"], d["row"]
        if self.xor:
            bg = _hash(bg, row, self.bg)
            bk = _hash(bk, row // self.bg, self.bpg)
        col = d["col_high"] * self.radix["col_low"] + d["col_low"]
        return Mapped(
            unit=d["channel"].astype(np.int32), bankgroup=bg.astype(np.int32),
            bank=(bg * self.bpg + bk).astype(np.int32), row=row.astype(np.int32),
            column=col.astype(np.int32), line=line,
        )


def _hash(x: np.ndarray, row: np.ndarray, n: int) -> np.ndarray:
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
    from t3sim import registry

    factory = registry.get("address_map", system.address_map.kind, "address_map.kind")
    return factory(system.hbm, system.address_map)
