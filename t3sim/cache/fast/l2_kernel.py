"""The numba kernel of the fast L2 model (:mod:`t3sim.cache.fast.l2`): one compiled call per batch.

State is packed so a call passes few arguments (numba's per-call dispatch cost grows with
the argument count): ``S`` is ``int64[sets, 5, ways]`` (per set: tag, LRU stamp, valid
mask, dirty mask, owner of each way; one set's state is contiguous), ``G`` the
geometry/clock integers (``G_*`` indices), ``V`` the mutable scalars and per-bank free
cycles (``V[0]`` LRU clock, ``V[1:]`` bank-free cycle per bank).
:func:`access_uniform` handles the common batch whose accesses share kind, source, size and
cacheability, computing sector masks and tick conversions inside the compiled call.
"""

from __future__ import annotations

import numba
import numpy as np
from t3sim.cache.common import HASH_SKEW, HASH_XOR  # the index function's codes (L2Geometry.hash_mode)
from t3sim.sim.clock import cycle_start_tick

# outcome codes (mirrors t3sim.cache.common)
HIT, SECTOR_MISS, MISS, BYPASS = 0, 1, 2, 3
(C_READ_HIT, C_READ_MISS, C_READ_SMISS, C_WRITE_HIT, C_WRITE_MISS, C_BYP_R, C_BYP_W, C_EVICT, C_WB, C_WB_SECT,
 C_FILL_SECT, C_WAIT) = range(12)
# state planes of S
S_TAG, S_STAMP, S_VALID, S_DIRTY, S_OWNER = range(5)
# geometry/clock integers of G
(G_LINE_SHIFT, G_BANK_BITS, G_NBANKS, G_SET_BITS, G_SPB, G_ASSOC, G_HASH, G_WALLOC, G_HIT_LAT, G_FREQ_KHZ,
 G_LINE_B, G_SECTOR_SHIFT, NG) = range(13)
# result rows of access_uniform's first output
R_OUT, R_FILL, R_DW, R_BANK, R_DONE, R_DONE_TICK, R_READY_TICK, NR = range(8)
# write-back rows of its second output
E_LINE, E_MASK, E_SRC, E_ACC, E_FLUSH, NE = range(6)


@numba.njit(cache=True, inline="always")
def _fold(x, bits, mask):
    h = 0
    if bits == 0:
        return 0
    while x:
        h ^= x & mask
        x >>= bits
    return h


@numba.njit(cache=True, inline="always")
def _popc(x):
    n = 0
    while x:
        n += x & 1
        x >>= 1
    return n


@numba.njit(cache=True, inline="always")
def _evict(S, st, w, i, is_flush, counts, E, nev, line_shift):
    """Record the write-back of (set st, way w)'s dirty sectors; returns the new eviction count."""
    d = S[st, S_DIRTY, w]
    o = S[st, S_OWNER, w]
    if d:
        E[E_LINE, nev] = S[st, S_TAG, w] << line_shift
        E[E_MASK, nev] = d
        E[E_SRC, nev] = o
        E[E_ACC, nev] = i
        E[E_FLUSH, nev] = 1 if is_flush else 0
        nev += 1
        counts[o, C_WB] += 1
        counts[o, C_WB_SECT] += _popc(d)
    return nev


@numba.njit(cache=True, inline="always")
def one_access(i, a, m, wr, unc, sc, now, S, g, V, occ, counts, R, E, nev):
    """Access ``i`` (byte address ``a``, sector mask ``m``): bank timing, lookup, fill/allocate.

    Writes row ``i`` of ``R`` (outcome, fill, dram write, bank, done cycle); returns the
    new write-back count ``nev``.
    """
    line_shift, nbanks, spb, bank_bits, set_bits, mode, assoc, walloc = g
    line = a >> line_shift
    if mode == HASH_XOR:  # t3sim.cache.common.L2Geometry.bank_and_set is the reference of each mode
        b = _fold(line, bank_bits, nbanks - 1)
        s = _fold(line >> bank_bits, set_bits, spb - 1)
    elif mode == HASH_SKEW:
        x = line // nbanks
        b = (line + _fold(x, bank_bits, (1 << bank_bits) - 1)) % nbanks
        s = (x + _fold(x // spb, set_bits, (1 << set_bits) - 1)) % spb
    else:
        b = line % nbanks
        s = (line // nbanks) % spb
    st = b * spb + s
    # bank timing
    start = V[1 + b]
    if start < now:
        start = now
    counts[sc, C_WAIT] += start - now
    done = start + occ[_popc(m)]
    V[1 + b] = done
    R[R_BANK, i] = b
    R[R_DONE, i] = done
    R[R_OUT, i] = HIT
    R[R_FILL, i] = 0
    R[R_DW, i] = 0
    w = -1
    for k in range(assoc):
        if S[st, S_TAG, k] == line and S[st, S_VALID, k] != 0:
            w = k
            break
    if unc:
        R[R_OUT, i] = BYPASS
        if w >= 0:
            nev = _evict(S, st, w, i, True, counts, E, nev, line_shift)
            S[st, S_DIRTY, w] = 0
            if wr:
                S[st, S_VALID, w] &= ~m
                if S[st, S_VALID, w] == 0:
                    S[st, S_TAG, w] = -1
        if wr:
            R[R_DW, i] = m
            counts[sc, C_BYP_W] += 1
        else:
            R[R_FILL, i] = m
            counts[sc, C_BYP_R] += 1
        return nev
    if w >= 0:
        V[0] += 1
        S[st, S_STAMP, w] = V[0]
        if wr:
            S[st, S_VALID, w] |= m
            S[st, S_DIRTY, w] |= m
            S[st, S_OWNER, w] = sc
            counts[sc, C_WRITE_HIT] += 1
        else:
            miss = m & ~S[st, S_VALID, w]
            if miss == 0:
                counts[sc, C_READ_HIT] += 1
            else:
                R[R_OUT, i] = SECTOR_MISS
                R[R_FILL, i] = miss
                S[st, S_VALID, w] |= miss
                counts[sc, C_READ_SMISS] += 1
                counts[sc, C_FILL_SECT] += _popc(miss)
        return nev
    R[R_OUT, i] = MISS
    if wr:
        counts[sc, C_WRITE_MISS] += 1
        if not walloc:
            R[R_DW, i] = m
            return nev
    else:
        counts[sc, C_READ_MISS] += 1
        counts[sc, C_FILL_SECT] += _popc(m)
        R[R_FILL, i] = m
    # allocate: invalid way first, else LRU
    v = -1
    for k in range(assoc):
        if S[st, S_VALID, k] == 0:
            v = k
            break
    if v < 0:
        v = 0
        for k in range(1, assoc):
            if S[st, S_STAMP, k] < S[st, S_STAMP, v]:
                v = k
        counts[S[st, S_OWNER, v], C_EVICT] += 1
        nev = _evict(S, st, v, i, False, counts, E, nev, line_shift)
    S[st, S_TAG, v] = line
    S[st, S_VALID, v] = m
    S[st, S_DIRTY, v] = m if wr else 0
    S[st, S_OWNER, v] = sc
    V[0] += 1
    S[st, S_STAMP, v] = V[0]
    return nev


@numba.njit(cache=True, inline="always")
def _geo(G):
    return (G[G_LINE_SHIFT], G[G_NBANKS], G[G_SPB], G[G_BANK_BITS], G[G_SET_BITS], G[G_HASH], G[G_ASSOC],
            G[G_WALLOC] != 0)


@numba.njit(cache=True, inline="always")
def _mask(a, size, G):
    """Sector mask of an access of ``size`` B at ``a``; -1 if it is empty, negative or crosses a line."""
    line_B = G[G_LINE_B]
    off = a & (line_B - 1)
    if size < 1 or off + size > line_B or a < 0:
        return -1
    sh = G[G_SECTOR_SHIFT]
    first = off >> sh
    last = (off + size - 1) >> sh
    return ((1 << (last + 1)) - 1) ^ ((1 << first) - 1)


@numba.njit(cache=True, _nrt=False)
def _run_arrays(addr, smask, is_write, uncached, src, now, S, G, V, occ, counts, R, E):  # pragma: no cover
    """:func:`access_arrays`' loop into ``R``/``E`` (the caller's): the number of write-back rows. Compiled without
    the numba runtime, as every loop here that calls helpers with array arguments: with it, numba reference-counts
    each array at each helper call (atomic updates that cost about as much as the access itself)."""
    nev = 0
    g = _geo(G)
    for i in range(addr.shape[0]):
        nev = one_access(i, addr[i], smask[i], is_write[i], uncached[i], src[i], now, S, g, V, occ, counts, R, E, nev)
    return nev


@numba.njit(cache=True)
def access_arrays(addr, smask, is_write, uncached, src, now, S, G, V, occ, counts):  # pragma: no cover - compiled
    """Per-access kinds/sources/masks (arrays); returns (R, E[:, :nev], batch cycles)."""
    n = addr.shape[0]
    R = np.empty((NR, n), dtype=np.int64)
    E = np.empty((NE, n), dtype=np.int64)
    nev = _run_arrays(addr, smask, is_write, uncached, src, now, S, G, V, occ, counts, R, E)
    return R, E[:, :nev], _ticks(R, n, G, now)


@numba.njit(cache=True, inline="always")
def _ticks(R, n, G, now):
    """Fill the tick rows; return the batch's L2 cycles (last done - arrival; 0 if empty)."""
    f = G[G_FREQ_KHZ]
    lat = G[G_HIT_LAT]
    last = now
    for i in range(n):
        d = R[R_DONE, i]
        if d > last:
            last = d
        R[R_DONE_TICK, i] = cycle_start_tick(d, f)
        R[R_READY_TICK, i] = cycle_start_tick(d + lat, f)
    return last - now


@numba.njit(cache=True, _nrt=False)
def _run_uniform(addr, wr, unc, sc, size, now, S, G, V, occ, counts, R, E):  # pragma: no cover - compiled
    """:func:`access_uniform`'s loop into ``R``/``E`` (the caller's; compiled without the runtime, as
    :func:`_run_arrays`): the number of write-back rows, or -1 (nothing touched) if an access is invalid."""
    n = addr.shape[0]
    for i in range(n):
        if _mask(addr[i], size, G) < 0:
            return -1
    nev = 0
    g = _geo(G)
    for i in range(n):
        a = addr[i]
        nev = one_access(i, a, _mask(a, size, G), wr, unc, sc, now, S, g, V, occ, counts, R, E, nev)
    return nev


@numba.njit(cache=True)
def access_uniform(addr, wr, unc, sc, size, now, S, G, V, occ, counts):  # pragma: no cover - compiled
    """A batch sharing kind (``wr``), cacheability, source and size; returns (R, E[:, :nev], batch cycles).

    Raises ValueError (before touching any state) if an access is empty or crosses a line.
    """
    n = addr.shape[0]
    R = np.empty((NR, n), dtype=np.int64)
    E = np.empty((NE, n), dtype=np.int64)
    nev = _run_uniform(addr, wr, unc, sc, size, now, S, G, V, occ, counts, R, E)
    if nev < 0:
        raise ValueError("every access needs size >= 1 B, addr >= 0 and must stay within one line")
    return R, E[:, :nev], _ticks(R, n, G, now)
