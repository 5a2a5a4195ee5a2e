"""The AllGather+GEMM direction's shared layout (``workload.direction: ag_gemm``), used by the schemes that
gather A themselves (:mod:`t3sim.schemes.flux.flux_ag`, :mod:`t3sim.schemes.decomposed.chunked_dma_ag`).

GPU ``r`` holds rows ``[r M/N, (r+1) M/N)`` of the GEMM's input A at their place in the gathered buffer
(A at ``model.a_base``, the same address on every GPU). A block of rows is one contiguous copy only when A
is row-major (``trans_a``: the forward sub-layers' consumer GEMMs, IP and FC-1): :func:`check_row_sharded`.

Functional data (:class:`GatheredA`): GPU ``r``'s own shard holds :func:`a_values`, 4 B words identifying
their owner and address, so a gathered A can be checked word by word at any moment.
"""

from __future__ import annotations

import numpy as np

from t3sim.compute.memhier import REQ_B
from t3sim.errors import InputError

WORD_B = 4  # bytes per functional word (float32)


def check_row_sharded(model) -> None:
    """Raise InputError unless the workload's A is row-major, so that a block of its rows is one copy."""
    k = model.kernel
    if not k.trans_a:
        raise InputError("workload.sublayer", f"{k.sublayer} (its ag_gemm GEMM reads A column-major, so a "
                         "block of rows is not contiguous and is not one copy)",
                         "a sub-layer whose ag_gemm GEMM is a forward one (IP, FC-1)")


def a_values(n: int, a_base: int, shard_B: int, addrs: np.ndarray) -> np.ndarray:
    """Functional values of A's 64 B lines at byte addresses ``addrs``: ``(len(addrs), 16)`` float32.

    Word ``w`` (4 B, counted from ``a_base``) of owner ``r = (addr - a_base) // shard_B`` holds
    ``r + n (w mod P)``, ``P = 2**24 // n``: integers below ``2**24``, exact in float32, distinct for every
    (owner, word) of an A of up to ``P`` words (larger: they repeat every ``P`` words)."""
    off = np.asarray(addrs, dtype=np.int64) - a_base
    w = off[:, None] // WORD_B + np.arange(REQ_B // WORD_B, dtype=np.int64)[None, :]
    owner = (off // shard_B)[:, None]
    return (owner + n * (w % ((1 << 24) // n))).astype(np.float32)


def compare_lines(fs, addrs: np.ndarray, want: np.ndarray) -> tuple:
    """Read the 64 B lines at ``addrs`` from functional store ``fs`` and compare them with ``want``:
    ``(got, want, first differing line or -1, differing words)``."""
    got = np.stack([fs.read_addr(int(a)) for a in addrs])
    bad = got != want
    return got, want, (int(np.flatnonzero(bad.any(axis=1))[0]) if bad.any() else -1), int(bad.sum())


class GatheredA:
    """A's row shards on ``model``'s GPUs, with functional values (module doc). Sizes in bytes."""

    def __init__(self, model):
        k = model.kernel
        self.model, self.n = model, model.n
        self.row_B = k.K * model.elem_B
        self.shard_B = k.M // model.n * self.row_B

    def lines(self, off_B: int, nbytes: int) -> np.ndarray:
        """Addresses of the 64 B lines of ``nbytes`` of the gathered A from byte ``off_B``."""
        return self.model.a_base + off_B + REQ_B * np.arange(nbytes // REQ_B, dtype=np.int64)

    def values(self, addrs: np.ndarray) -> np.ndarray:
        """Functional values of A's lines at ``addrs`` (:func:`a_values`)."""
        return a_values(self.n, self.model.a_base, self.shard_B, addrs)

    def preload(self) -> None:
        """Write every simulated GPU's own shard's values into its functional store (no timed traffic)."""
        for g in self.model.sim_gpus:
            addrs = self.lines(self.shard_B * g, self.shard_B)
            self.model.hiers[g].mem.functional.preload(addrs, self.values(addrs))

    def check_rows(self, g: int, r0: int, r1: int, what: str) -> int:
        """Rows ``[r0, r1)`` of GPU ``g``'s gathered A hold their values now; returns the 4 B words checked,
        raises AssertionError naming ``what`` on a mismatch."""
        addrs = self.lines(r0 * self.row_B, (r1 - r0) * self.row_B)
        got, want, line, nbad = compare_lines(self.model.hiers[g].mem.functional, addrs, self.values(addrs))
        if nbad:
            raise AssertionError(f"GPU {g} {what}: {nbad} of {got.size} words of A rows [{r0}, {r1}) "
                                 f"differ at tick {self.model.env.now}; first at byte "
                                 f"{int(addrs[line]) - self.model.a_base} of A: got {got[line][:4]} want {want[line][:4]}")
        return got.size
