"""The compiled helpers of :class:`~t3sim.compute.memhier.MemoryHierarchy` (one call per read or write batch):
the DRAM accesses that cover sector masks, a read batch's plan after its L2 access (:func:`l2_read`), a write batch's
(:func:`l2_write`, :func:`write_plan`), the L2's write-backs grouped per owner (:func:`writeback_groups`) and the
fill table's slots. The GEMM window's kernel (:mod:`t3sim.window.window_kernel`) calls the same functions, so the
reference path and the window share one definition of each.

Units: addresses in bytes, ticks in ps; every array is int64.
"""

from __future__ import annotations

import numba
import numpy as np

from t3sim.cache.common import HIT
from t3sim.cache.fast import E_LINE, E_MASK, E_SRC, R_DONE_TICK, R_DW, R_FILL, R_OUT, R_READY_TICK, access_uniform
from t3sim.config.system import REQUEST_B

#: bytes per request between CUs, L2 and DMA engines (re-exported as :data:`t3sim.compute.memhier.REQ_B`)
REQ_B = REQUEST_B


@numba.njit(cache=True, inline="always")
def _fill_slot(line, mask):  # pragma: no cover - compiled
    """:class:`FillTable` slot of a 128 B line address (direct-mapped, XOR-folded)."""
    return (line ^ (line >> 20)) & mask


@numba.njit(cache=True, inline="always")
def _sector_accesses(line, m, sector_B, nsect, access_B, out, k):  # pragma: no cover - compiled
    """Append to ``out[k:]`` the DRAM accesses (addresses, ``access_B``-aligned) covering the sectors of
    sector mask ``m`` of the line at ``line``, ascending (an access wider than a sector covering several
    is written once per sector it covers: callers de-duplicate); return the new length."""
    per = sector_B // access_B if sector_B > access_B else 1
    step = access_B if sector_B > access_B else 0
    for b in range(nsect):
        if (m >> b) & 1:
            a = (line + b * sector_B) & ~np.int64(access_B - 1)
            for j in range(per):
                out[k] = a + j * step
                k += 1
    return k


@numba.njit(cache=True, _nrt=False)
def _cover(lines, masks, sector_B, nsect, access_B, out):  # pragma: no cover - compiled
    """:func:`_sector_accesses` of every line into ``out``: the length written. Compiled without the numba runtime:
    with it, the inlined helper reference-counts ``out`` at every line (as ``l2_kernel._run_uniform`` says)."""
    k = 0
    for i in range(lines.shape[0]):
        k = _sector_accesses(lines[i], masks[i], sector_B, nsect, access_B, out, k)
    return k


@numba.njit(cache=True)
def mask_accesses(lines, masks, sector_B, nsect, access_B):  # pragma: no cover - compiled
    """The sorted distinct DRAM accesses covering sector masks ``masks`` of lines ``lines`` (int64 arrays)."""
    per = nsect * (sector_B // access_B if sector_B > access_B else 1)
    out = np.empty(lines.shape[0] * per, dtype=np.int64)
    k = _cover(lines, masks, sector_B, nsect, access_B, out)
    return _sorted_unique(out[:k])


@numba.njit(cache=True)
def _read_plan(addrs, outcome, ready_tick, fill_mask, fl_line, fl_tag, mask, any_fills, line_B, sector_B,
               access_B):  # pragma: no cover - compiled
    """One cached/uncached read batch after its L2 access (its L2Result's arrays).

    Returns ``(ready, tags, req)``: the latest hit's ready tick (-1: no hit); the sorted
    distinct fill-table tags of in-flight fills that hit lines cover (only if ``any_fills``);
    the sorted distinct DRAM accesses (``access_B``) covering the sectors the reads miss
    (``fill_mask``, relative to each address's ``line_B`` line of ``sector_B`` sectors).
    """
    n = addrs.shape[0]
    nsect = line_B // sector_B
    tags = np.empty(n, dtype=np.int64)
    req = np.empty(n * nsect * (sector_B // access_B if sector_B > access_B else 1), dtype=np.int64)
    ready, nt, nr = _plan(addrs, outcome, ready_tick, fill_mask, fl_line, fl_tag, mask, any_fills, line_B, sector_B,
                          access_B, tags, req)
    return ready, _sorted_unique(tags[:nt]), _sorted_unique(req[:nr])


@numba.njit(cache=True, _nrt=False)
def _plan(addrs, outcome, ready_tick, fill_mask, fl_line, fl_tag, mask, any_fills, line_B, sector_B, access_B, tags,
          req):  # pragma: no cover - compiled
    """:func:`_read_plan`'s loop into ``tags``/``req`` (without the runtime, as :func:`_cover`):
    ``(ready, tags written, accesses written)``."""
    ready = -1
    nt = 0
    nr = 0
    nsect = line_B // sector_B
    for i in range(addrs.shape[0]):
        if outcome[i] == HIT:
            if ready_tick[i] > ready:
                ready = ready_tick[i]
            if any_fills:
                ln = addrs[i] & ~np.int64(127)
                s = _fill_slot(ln, mask)
                if fl_line[s] == ln | 1:
                    tags[nt] = fl_tag[s]
                    nt += 1
        if fill_mask[i] != 0:
            nr = _sector_accesses(addrs[i] & ~np.int64(line_B - 1), fill_mask[i], sector_B, nsect, access_B, req, nr)
    return ready, nt, nr


@numba.njit(cache=True)
def l2_read(addrs, unc, sc, now, S, G, V, occ, counts, fl_line, fl_tag, mask, any_fills, line_B, sector_B,
             access_B):  # pragma: no cover - compiled
    """A 64 B read batch through the fast L2 (:func:`~t3sim.cache.fast.l2_kernel.access_uniform`) and its
    :func:`_read_plan`, in one call: ``(ready, tags, req, E)``, ``E`` the write-back rows."""
    R, E, _cyc = access_uniform(addrs, False, unc, sc, REQ_B, now, S, G, V, occ, counts)
    ready, tags, req = _read_plan(addrs, R[R_OUT], R[R_READY_TICK], R[R_FILL], fl_line, fl_tag, mask,
                                  any_fills, line_B, sector_B, access_B)
    return ready, tags, req, E


@numba.njit(cache=True)
def write_plan(a, R, req_B, access_B):  # pragma: no cover - compiled
    """A write batch of ``req_B`` requests at ``a`` after its L2 access (its L2Result rows ``R``): ``(t, sel, acc)``,
    ``t`` the latest L2 acceptance tick, ``sel`` the indices of the requests the L2 sends to DRAM (``R_DW``: uncached
    writes, updates, write-no-allocate misses), ``acc`` their DRAM accesses, ``req_B / access_B`` per request in
    request order (:func:`t3sim.memory.port.split_requests`'s layout)."""
    n = a.shape[0]
    t = -(1 << 62)
    nd = 0
    for i in range(n):
        if R[R_DONE_TICK, i] > t:
            t = R[R_DONE_TICK, i]
        if R[R_DW, i] != 0:
            nd += 1
    per = req_B // access_B
    sel = np.empty(nd, dtype=np.int64)
    acc = np.empty(nd * per, dtype=np.int64)
    m = 0
    for i in range(n):
        if R[R_DW, i] != 0:
            sel[m] = i
            base = a[i] - a[i] % req_B
            for q in range(per):
                acc[m * per + q] = base + q * access_B
            m += 1
    return t, sel, acc


@numba.njit(cache=True)
def l2_write(addrs, unc, sc, now, S, G, V, occ, counts, access_B):  # pragma: no cover - compiled
    """A 64 B write batch through the fast L2 (:func:`~t3sim.cache.fast.l2_kernel.access_uniform`) and its
    :func:`write_plan`, in one call: ``(t, sel, acc, E)``, ``E`` the write-back rows."""
    R, E, _cyc = access_uniform(addrs, True, unc, sc, REQ_B, now, S, G, V, occ, counts)
    t, sel, acc = write_plan(addrs, R, REQ_B, access_B)
    return t, sel, acc, E


@numba.njit(cache=True)
def writeback_groups(E, sector_B, nsect, access_B):  # pragma: no cover - compiled
    """The DRAM writes of write-back rows ``E`` (L2 kernel layout), one group per owner in ascending order:
    ``(srcs, off, acc)``, group ``g`` owner ``srcs[g]`` with the sorted distinct accesses ``acc[off[g]:off[g + 1]]``
    covering its lines' dirty sectors (:func:`mask_accesses`; a group may be empty)."""
    n = E.shape[1]
    srcs = np.unique(E[E_SRC])
    off = np.zeros(srcs.shape[0] + 1, dtype=np.int64)
    per = nsect * (sector_B // access_B if sector_B > access_B else 1)
    acc = np.empty(n * per, dtype=np.int64)
    k = 0
    for g in range(srcs.shape[0]):
        s = srcs[g]
        m = 0
        for i in range(n):
            if E[E_SRC, i] == s:
                m += 1
        lines = np.empty(m, dtype=np.int64)
        masks = np.empty(m, dtype=np.int64)
        m = 0
        for i in range(n):
            if E[E_SRC, i] == s:
                lines[m] = E[E_LINE, i]
                masks[m] = E[E_MASK, i]
                m += 1
        a = mask_accesses(lines, masks, sector_B, nsect, access_B)
        acc[k:k + a.shape[0]] = a
        k += a.shape[0]
        off[g + 1] = k
    return srcs, off, acc[:k]


@numba.njit(cache=True)
def _sorted_unique(x):  # pragma: no cover - compiled
    if x.shape[0] == 0:
        return x
    y = np.sort(x)
    k = 1
    for i in range(1, y.shape[0]):
        if y[i] != y[k - 1]:
            y[k] = y[i]
            k += 1
    return y[:k]


@numba.njit(cache=True, _nrt=False)
def record_fills(req, fl_line, fl_tag, mask, tag):  # pragma: no cover - compiled
    """Point the fill-table slots of the 128 B lines of sorted requests ``req`` at ``tag``."""
    for i in range(req.shape[0]):
        ln = req[i] & ~np.int64(127)
        s = _fill_slot(ln, mask)
        fl_line[s] = ln | 1
        fl_tag[s] = tag
