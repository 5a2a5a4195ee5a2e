"""Request attributes: kind, stream class and source (small integer codes).

Every memory request is one ``hbm.access_size_B`` column access (32 B on Table 1). Codes are
stable: they index statistics arrays and the numba kernel's state.
"""

from __future__ import annotations

from enum import IntEnum

from t3sim.errors import InputError


class Kind(IntEnum):
    """What the request does at the DRAM."""

    READ = 0
    WRITE = 1
    UPDATE = 2  # near-memory op-and-store: DRAM[addr] += data (paper Sec. 4.3)


class Stream(IntEnum):
    """Arbitration class at the memory controller (paper Sec. 4.5)."""

    COMPUTE = 0
    COMM = 1


class Source(IntEnum):
    """Who issued the request (statistics only)."""

    GEMM = 0
    COLLECTIVE = 1
    DMA = 2
    OTHER = 3


def parse_enum(enum: type, value, where: str):
    """Accept an enum member, its int code or its (case-insensitive) name."""
    if type(value) is enum:  # the hot path: already a member
        return value
    if isinstance(value, enum):
        return value
    if isinstance(value, str):
        try:
            return enum[value.upper()]
        except KeyError:
            pass
    elif isinstance(value, int):
        try:
            return enum(value)
        except ValueError:
            pass
    raise InputError(where, repr(value), ", ".join(m.name.lower() for m in enum))
