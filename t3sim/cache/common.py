"""L2 cache geometry, index hashing, result types and statistics shared by the
fast (numba) and the reference (pure Python) L2 models.

Geometry (Table 1 defaults): 16 MiB / 128 B lines = 131072 lines, 16 ways ->
8192 sets = 64 banks x 128 sets per bank; 4 sectors of 32 B per line.

Index function (``L2Config.index_hash``), on the line number ``line = addr >> log2(line_size_B)``:

* ``"xor"`` (default): ``bank`` = XOR of all ``log2(banks)``-bit chunks of
  ``line``; ``set`` (within the bank) = XOR of all ``log2(sets_per_bank)``-bit
  chunks of ``line >> log2(banks)``. For any fixed upper bits the low bits
  are permuted, so every aligned block of ``banks * sets_per_bank`` lines
  maps one line to each (bank, set): a contiguous working set of size ``C``
  uses capacity ``C`` exactly, while power-of-two strides (column-major
  GEMM operands) are spread over banks and sets.
* ``"skew"``: the modulo index skewed by the xor-fold of the bits above it, for any bank and set counts:
  with ``x = line // banks``, ``bank = (line + fold(x)) % banks`` and ``set = (x + fold(x // sets_per_bank)) %
  sets_per_bank`` (``fold``: XOR of the ``bit_length(n - 1)``-bit chunks). The skew is constant over each aligned
  block of ``banks`` lines (and of ``banks * sets_per_bank`` lines for the set), so as with ``xor`` every aligned
  block of ``banks * sets_per_bank`` lines maps one line to each (bank, set), while a stride of a multiple of
  ``banks`` lines (a row-major operand whose row is a multiple of the slice count in lines: 192 lines on 96
  slices) moves to other banks instead of camping on one.
* ``"linear"``: ``bank = line % banks``, ``set = (line // banks) % sets_per_bank``.

Each (bank, set) is one LRU set of ``associativity`` ways; tags are full line
numbers, so the hash need not be invertible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np

from t3sim.config.gpu import L2Config
from t3sim.results.stats import Stats
from t3sim.sim.clock import Clock

# per-access outcome codes
HIT = 0          #: line present and (reads) every requested sector valid; writes: line present
SECTOR_MISS = 1  #: read: line present, some requested sectors not valid -> those are filled
MISS = 2         #: line absent (read: allocate + fill; write: allocate, or write-around when not write-allocate)
BYPASS = 3       #: uncached access: never allocates, goes to DRAM (paper Sec. 4.3)
OUTCOME_NAMES = ("hit", "sector_miss", "miss", "bypass")

#: per-source counters, in this column order
COUNTERS = (
    ("read_hits", "count", "cached reads that found every requested sector valid"),
    ("read_misses", "count", "cached reads whose line was absent (line allocated, sectors filled from DRAM)"),
    ("read_sector_misses", "count", "cached reads whose line was present but missing some requested sectors"),
    ("write_hits", "count", "cached writes to a present line"),
    ("write_misses", "count", "cached writes to an absent line (allocated if write_allocate, else written around to DRAM)"),
    ("bypass_reads", "count", "uncached reads sent to DRAM without allocating"),
    ("bypass_writes", "count", "uncached writes sent to DRAM without allocating (e.g. T3 NMC updates)"),
    ("evictions", "count", "valid lines evicted by a replacement, by the source that last wrote/allocated the line"),
    ("writebacks", "count", "dirty lines written back to DRAM (dirty evictions + uncached-access flushes), by owning source"),
    ("writeback_sectors", "count", "dirty sectors written back to DRAM, by owning source"),
    ("fill_sectors", "count", "sectors requested from DRAM by misses (cached reads only), by requesting source"),
    ("bank_wait_cycles", "cycles", "L2 cycles accesses waited for a busy bank (bank conflicts), by source"),
)
C_READ_HIT, C_READ_MISS, C_READ_SMISS, C_WRITE_HIT, C_WRITE_MISS, C_BYP_R, C_BYP_W, C_EVICT, C_WB, C_WB_SECT, C_FILL_SECT, C_WAIT = range(len(COUNTERS))


#: ``L2Config.index_hash`` names, in the order of their codes (``L2Geometry.hash_mode``; the compiled kernel's)
HASH_MODES = ("linear", "xor", "skew")
HASH_LINEAR, HASH_XOR, HASH_SKEW = range(3)


def _log2(x: int) -> int:
    return x.bit_length() - 1


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


@dataclass(frozen=True)
class L2Geometry:
    """Derived L2 geometry (all integers).

    Attributes: ``line_B``, ``sector_B``, ``sectors_per_line`` (<= 8),
    ``banks``, ``sets_per_bank``, ``assoc``, ``hash_mode`` (:data:`HASH_MODES`: 0 linear, 1 xor, 2 skew),
    ``bank_B_per_cycle``, ``hit_latency_cycles``, ``write_allocate``.
    """

    line_B: int
    sector_B: int
    sectors_per_line: int
    banks: int
    sets_per_bank: int
    assoc: int
    hash_mode: int
    bank_B_per_cycle: int
    hit_latency_cycles: int
    write_allocate: bool

    @classmethod
    def from_config(cls, cfg: L2Config) -> "L2Geometry":
        size_B = int(round(cfg.size_MiB * 2**20))
        line_B, sector_B = cfg.line_size_B, cfg.sector_size_B
        if not (_pow2(line_B) and _pow2(sector_B) and line_B % sector_B == 0 and line_B // sector_B <= 8):
            raise ValueError(f"line {line_B} B / sector {sector_B} B must be powers of two with <= 8 sectors per line")
        lines = size_B // line_B
        if lines * line_B != size_B or lines % (cfg.associativity * cfg.banks):
            raise ValueError(f"L2 of {size_B} B does not split into {cfg.banks} banks x {cfg.associativity} ways of {line_B} B lines")
        spb = lines // (cfg.associativity * cfg.banks)
        mode = HASH_MODES.index(cfg.index_hash)
        if mode == HASH_XOR and not (_pow2(cfg.banks) and _pow2(spb)):
            raise ValueError(f"index_hash 'xor' needs power-of-two banks ({cfg.banks}) and sets per bank ({spb}); use 'skew'")
        return cls(line_B, sector_B, line_B // sector_B, cfg.banks, spb, cfg.associativity, mode,
                   cfg.bank_bandwidth_B_per_cycle, cfg.hit_latency_cycles, cfg.write_allocate)

    @property
    def bank_bits(self) -> int:
        """Bits of one fold chunk of the bank index (0 for linear)."""
        return (self.banks - 1).bit_length() if self.hash_mode != HASH_LINEAR else 0

    @property
    def set_bits(self) -> int:
        """Bits of one fold chunk of the set index (0 for linear)."""
        return (self.sets_per_bank - 1).bit_length() if self.hash_mode != HASH_LINEAR else 0

    @property
    def line_shift(self) -> int:
        return _log2(self.line_B)

    @property
    def sector_shift(self) -> int:
        return _log2(self.sector_B)

    @property
    def num_sets(self) -> int:
        return self.banks * self.sets_per_bank

    @property
    def capacity_B(self) -> int:
        return self.num_sets * self.assoc * self.line_B

    def occupancy_table(self) -> np.ndarray:
        """Bank cycles an access of ``n`` sectors occupies its bank: ``max(1, ceil(n*sector_B / bank_B_per_cycle))``."""
        n = np.arange(self.sectors_per_line + 1, dtype=np.int64)
        return np.maximum(1, -(-(n * self.sector_B) // self.bank_B_per_cycle))

    def bank_and_set(self, line: int) -> tuple:
        """Scalar reference index function: ``(bank, global set index)`` of line number ``line``."""
        bb, sb = self.bank_bits, self.set_bits
        if self.hash_mode == HASH_XOR:
            b = _fold(line, bb)
            s = _fold(line >> bb, sb)
        elif self.hash_mode == HASH_SKEW:
            x = line // self.banks
            b = (line + _fold(x, bb)) % self.banks
            s = (x + _fold(x // self.sets_per_bank, sb)) % self.sets_per_bank
        else:
            b = line % self.banks
            s = (line // self.banks) % self.sets_per_bank
        return b, b * self.sets_per_bank + s


def _fold(x: int, bits: int) -> int:
    if bits == 0:
        return 0
    m, h = (1 << bits) - 1, 0
    while x:
        h ^= x & m
        x >>= bits
    return h


def sector_masks(geo: L2Geometry, addr: np.ndarray, size_B: np.ndarray) -> np.ndarray:
    """Sector mask (bit ``i`` = sector ``i`` of the line) of each access; raises if one crosses a line or is empty."""
    off = addr & (geo.line_B - 1)
    if np.any(size_B < 1) or np.any(off + size_B > geo.line_B) or np.any(addr < 0):
        raise ValueError(f"every access needs size >= 1 B, addr >= 0 and must stay within one {geo.line_B} B line")
    first = off >> geo.sector_shift
    last = (off + size_B - 1) >> geo.sector_shift
    return (((1 << (last + 1)) - 1) ^ ((1 << first) - 1)).astype(np.uint8)


def sectors_to_addrs(line_addr: np.ndarray, mask: np.ndarray, sector_B: int, sectors_per_line: int):
    """Expand (line address, sector mask) pairs into sector addresses (B) and the pair index of each."""
    line_addr, mask = np.asarray(line_addr, dtype=np.int64), np.asarray(mask, dtype=np.int64)
    bits = ((mask[:, None] >> np.arange(sectors_per_line)[None, :]) & 1).astype(bool)
    addr = line_addr[:, None] + sector_B * np.arange(sectors_per_line, dtype=np.int64)[None, :]
    idx = np.broadcast_to(np.arange(len(mask))[:, None], bits.shape)
    return addr[bits], idx[bits]


class WriteBacks(NamedTuple):
    """Dirty data the L2 sends to DRAM: ``line_addr`` (int64, B), ``sector_mask`` (uint8),
    ``src`` (int32, the line's owning source), ``access`` (int64, index of the access that
    caused it; -1 for :meth:`flush`), ``is_flush`` (bool: flushed by an uncached access or flush())."""

    line_addr: np.ndarray
    sector_mask: np.ndarray
    src: np.ndarray
    access: np.ndarray
    is_flush: np.ndarray


class L2Result(NamedTuple):
    """Outcome of a batch of accesses (parallel arrays of the batch length unless noted).

    * ``outcome`` (int8): :data:`HIT`, :data:`SECTOR_MISS`, :data:`MISS`, :data:`BYPASS`.
    * ``fill_mask`` (uint8): sectors of the access's line to read from DRAM
      (cached read misses; uncached reads: the sectors read through).
    * ``dram_write_mask`` (uint8): sectors to write to DRAM directly (uncached
      writes; write misses without write-allocate).
    * ``bank`` (int32): bank of each access.
    * ``done_cycle`` (int64, L2 cycles): the bank finishes the access (bank
      conflicts serialise accesses of one bank); ``done_tick`` the same in ps.
    * ``ready_tick`` (int64, ps): ``done_cycle + hit_latency_cycles``: when a
      hit's data reaches the CU. Misses instead send their fill at ``done_tick``.
    * ``batch_cycles`` (int): L2 cycles from the batch's arrival cycle until
      its last access leaves its bank (0 for an empty batch).
    * ``writebacks``: :class:`WriteBacks` caused by this batch.
    """

    outcome: np.ndarray
    fill_mask: np.ndarray
    dram_write_mask: np.ndarray
    bank: np.ndarray
    done_cycle: np.ndarray
    done_tick: np.ndarray
    ready_tick: np.ndarray
    batch_cycles: int
    writebacks: WriteBacks


def cycles_to_ticks(clock: Clock, cycles: np.ndarray) -> np.ndarray:
    """Vectorized, exact :meth:`Clock.cycle_to_tick` (no int64 overflow for any realistic cycle count)."""
    c = np.asarray(cycles, dtype=np.int64)
    f = clock.freq_kHz
    q, r = np.divmod(c, f)
    return q * 10**9 + (-((-r * 10**9) // f))


def counters_to_stats(counts: np.ndarray, sources: Sequence[str], geo: L2Geometry) -> Stats:
    """Per-source and total counters as :class:`Stats` (``<counter>`` totals, ``by_source.<src>.<counter>``)."""
    st = Stats()
    tot = counts.sum(axis=0)
    for j, (name, unit, desc) in enumerate(COUNTERS):
        st.add(name, int(tot[j]), unit, f"{desc} (all sources)")
    reads = tot[C_READ_HIT] + tot[C_READ_MISS] + tot[C_READ_SMISS]
    st.add("read_hit_rate", float(tot[C_READ_HIT] / reads) if reads else float("nan"), "ratio",
           "read_hits / cached reads (all sources)")
    st.add("capacity_B", geo.capacity_B, "B", "L2 capacity")
    for i, s in enumerate(sources):
        for j, (name, unit, desc) in enumerate(COUNTERS):
            st.add(f"by_source.{s}.{name}", int(counts[i, j]), unit, desc)
    return st


class L2Base:
    """What the fast and the reference L2 share: configuration, geometry, source names, clock and the
    per-source counters' statistics. Subclasses set ``self.counts`` (sources x :data:`COUNTERS`)."""

    def __init__(self, cfg: L2Config, sources: Sequence[str] = ("default",)) -> None:
        if not sources or len(set(sources)) != len(sources):
            raise ValueError("sources must be a non-empty list of distinct names")
        self.cfg = cfg
        self.geo = L2Geometry.from_config(cfg)
        self.sources = tuple(sources)
        self.clock = Clock.from_GHz(cfg.clock_GHz, "l2")

    def stats(self) -> Stats:
        """Counters (totals and ``by_source.<name>``) with units and descriptions."""
        return counters_to_stats(self.counts, self.sources, self.geo)
