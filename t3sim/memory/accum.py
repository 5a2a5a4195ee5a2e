"""Memory statistics accumulated as requests retire (no per-request arrays kept for stats).

When a request's column command issues, :func:`retire` (compiled) accounts it to its batch
and to :class:`Accum`: request counts by (stream, kind, source), row-buffer class, the first
arrival and last completion, the bandwidth-over-time bins by (stream, kind), and an exact
per-cycle histogram of read latency per stream (percentiles, mean, max and the 8-cycle
histogram are derived from it). Bandwidth bins are ``bin_cycles`` wide and start at the
arrival of the first request submitted (for a run whose requests have all issued, the
first arrival of any issued request, as before).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from t3sim.memory.bookkeeping import O_ARRIVE, O_BATCH, O_CLASS, O_DONE, O_KIND, O_SOURCE, O_STREAM

BIN_CYCLES = 1000
# scalars of Accum.sc
SC_FIRST_ARRIVE, SC_LAST_DONE, SC_A0, NSC = range(4)
_BIG = np.int64(1) << 62


class Accum:
    """Retired-request statistics of one MemorySystem (see module docstring)."""

    def __init__(self, n_stream: int = 2, n_kind: int = 3, n_source: int = 4, bin_cycles: int = BIN_CYCLES):
        self.bin_cycles = bin_cycles
        self.cnt = np.zeros((n_stream, n_kind, n_source), dtype=np.int64)
        self.rowcls = np.zeros(3, dtype=np.int64)
        self.sc = np.array([_BIG, -1, -1], dtype=np.int64)
        self.bw = np.zeros((n_stream, n_kind, 64), dtype=np.int64)
        self.lat = np.zeros((n_stream, 256), dtype=np.int64)

    def grow(self, bins: int, lat: int) -> None:
        """Make room for bin index ``bins - 1`` and read latency ``lat - 1`` cycles."""
        if bins > self.bw.shape[2]:
            new = np.zeros(self.bw.shape[:2] + (max(bins, 2 * self.bw.shape[2]),), dtype=np.int64)
            new[:, :, : self.bw.shape[2]] = self.bw
            self.bw = new
        if lat > self.lat.shape[1]:
            new = np.zeros((self.lat.shape[0], max(lat, 2 * self.lat.shape[1])), dtype=np.int64)
            new[:, : self.lat.shape[1]] = self.lat
            self.lat = new

    @property
    def requests(self) -> int:
        return int(self.cnt.sum())

    def read_latency_hist(self, stream=None) -> np.ndarray:
        """Reads per latency in cycles (index = cycles), of one stream or all."""
        h = self.lat.sum(0) if stream is None else self.lat[int(stream)]
        nz = np.flatnonzero(h)
        return h[: nz[-1] + 1] if nz.size else h[:0]


def percentile_from_hist(hist: np.ndarray, q: float, scale: float) -> float:
    """``np.percentile(values / scale, q)`` (method linear) of the integers whose counts are ``hist``."""
    n = int(hist.sum())
    cum = np.cumsum(hist)

    def at(k: int) -> float:
        return float(int(np.searchsorted(cum, k, side="right"))) / scale

    v = (n - 1) * (q / 100)
    prev = math.floor(v)
    t = v - prev
    prev = min(max(prev, 0), n - 1)
    nxt = min(prev + 1, n - 1)
    a, b = at(prev), at(nxt)
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


@nb.njit(cache=True)
def retire(issued, r_batch, r_done, r_arrive, r_kind, r_stream, r_source, r_class, b_done, b_remaining, cnt, rowcls,
           sc, bw, lat, bin_cycles):  # pragma: no cover - compiled
    """Account issued requests to their batches and to the statistics; return completed batches.

    Returns ``(done, need_bins, need_lat)``: if a bin or latency does not fit ``bw``/``lat``,
    nothing is changed, ``done`` is empty and ``need_*`` say the sizes to grow to (then call
    again). Completed batches are ordered by completion cycle, ties by batch id.
    """
    a0 = sc[SC_A0]
    need_b = 0
    need_l = 0
    for j in range(issued.size):
        i = issued[j]
        d = r_done[i]
        x = (d - a0) // bin_cycles + 1
        if x > need_b:
            need_b = x
        if r_kind[i] == 0:
            x = d - r_arrive[i] + 1
            if x > need_l:
                need_l = x
    if need_b > bw.shape[2] or need_l > lat.shape[1]:
        return np.empty(0, dtype=np.int64), need_b, need_l
    out = np.empty(issued.size, dtype=np.int64)
    k = 0
    for j in range(issued.size):
        i = issued[j]
        b = r_batch[i]
        d = r_done[i]
        if d > b_done[b]:
            b_done[b] = d
        b_remaining[b] -= 1
        if b_remaining[b] == 0:
            out[k] = b
            k += 1
        s = r_stream[i]
        kd = r_kind[i]
        cnt[s, kd, r_source[i]] += 1
        rowcls[r_class[i]] += 1
        if r_arrive[i] < sc[SC_FIRST_ARRIVE]:
            sc[SC_FIRST_ARRIVE] = r_arrive[i]
        if d > sc[SC_LAST_DONE]:
            sc[SC_LAST_DONE] = d
        bw[s, kd, (d - a0) // bin_cycles] += 1
        if kd == 0:
            lat[s, d - r_arrive[i]] += 1
    done = np.sort(out[:k])
    keys = np.empty(k, dtype=np.int64)
    for j in range(k):
        keys[j] = b_done[done[j]]
    return done[np.argsort(keys, kind="mergesort")], 0, 0


@nb.njit(cache=True)
def retire_records(out, n, b_done, b_remaining, cnt, rowcls, sc, bw, lat, bin_cycles):  # pragma: no cover - compiled
    """:func:`retire` of the first ``n`` issued requests of the controllers' output buffer ``out``, from their
    issue records (rows ``O_BATCH..O_CLASS`` of :mod:`~t3sim.memory.bookkeeping`: the same fields of the same
    requests, in the same order, so the same result), read in order instead of gathered from the request rows."""
    return retire(np.arange(n), out[O_BATCH], out[O_DONE], out[O_ARRIVE], out[O_KIND], out[O_STREAM], out[O_SOURCE],
                  out[O_CLASS], b_done, b_remaining, cnt, rowcls, sc, bw, lat, bin_cycles)
