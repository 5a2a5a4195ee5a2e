"""Functional data that the schemes store and check (``simulation.functional_data``; t3sim.memory.functional).

Every GPU's partial output at a 4 B word is a small integer (exact in float32), so sums of partials are exact and a
reduction's result can be checked word by word. Shared by the schemes that reduce or move GEMM outputs (T3, FLUX,
chunked DMA, FiCCO, the fused GPU-initiated kernels).
"""

from __future__ import annotations

import numpy as np

from t3sim.compute.memhier import REQ_B

WORD_B = 4  # functional data: one value per 4 B word (float32 store, t3sim.memory.functional)


def partial_value(gpu: int, word: np.ndarray) -> np.ndarray:
    """GPU ``gpu``'s partial output at 4 B word index ``word`` (functional mode): small integers, exact in float32."""
    w = np.asarray(word, dtype=np.int64)
    return ((gpu + 1) + 32 * ((w * 7 + gpu * 13) % 61)).astype(np.float32)


def word_mask(mask: np.ndarray) -> np.ndarray:
    """``(n, 16)`` bool: which 4 B words of each 64 B request its byte ``mask`` covers (by first byte)."""
    k = np.arange(REQ_B // WORD_B, dtype=np.uint64)
    return ((mask.astype(np.uint64)[:, None] >> (k * np.uint64(WORD_B))) & np.uint64(1)) != 0


def store_data(gpu: int, reqs_addr: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Functional data of store requests: ``(n, 16)`` float32, words whose first byte is in ``mask``."""
    words = reqs_addr[:, None] // WORD_B + np.arange(REQ_B // WORD_B, dtype=np.int64)[None, :]
    return np.where(word_mask(mask), partial_value(gpu, words), np.float32(0))


def check_summed(fs, addrs: np.ndarray, mask: np.ndarray, n: int, where: str) -> int:
    """Check that functional memory ``fs`` holds, at store requests ``addrs``, the sum of all ``n`` GPUs' partials
    (:func:`store_data`) in the words ``mask`` covers (other words: other tiles'). Returns the 4 B words checked;
    raises AssertionError (message starting with ``where``) on a mismatch."""
    want = sum(store_data(src, addrs, mask) for src in range(n))
    got = np.stack([fs.read_addr(int(a)) for a in addrs])
    mine = word_mask(mask)
    bad = mine & (got != want)
    assert not bad.any(), f"{where}: {int(bad.sum())} words differ, e.g. got {got[bad][:4]} want {want[bad][:4]}"
    return int(mine.sum())
