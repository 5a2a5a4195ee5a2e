"""One compiled call per pump step of the fast memory model.

:func:`pump_step` runs the controllers (:func:`~t3sim.memory.fast.fast_kernel.run_kernel`), then
accounts the issued requests to their batches and the statistics
(:func:`~t3sim.memory.accum.retire_records`, from the kernel's issue records), builds the enqueue hook's rows
(:func:`~t3sim.memory.bookkeeping.admission_rows`) and converts the completed batches'
cycles to ticks -- the work ``MemorySystem._run`` used to do in four compiled calls and a
Python loop after each kernel call. Same functions, same order, so the results are identical;
it only saves the per-call dispatch and the Python glue (about 10 us per pump step).

Used when the run keeps no functional data and no command log (both need the issued
request indices in Python); ``MemorySystem._run`` takes the general path otherwise.

Like ``run_kernel``, :func:`pump_step` is a template, compiled per arbitration policy with
``run_kernel`` bound to that policy's specialisation (:func:`t3sim.memory.fast.controller_fast.kernels`).
"""

from __future__ import annotations

import numpy as np

from t3sim.memory.accum import retire_records
from t3sim.memory.bookkeeping import NAR, O_KIND, admission_rows
from t3sim.memory.fast.fast_kernel import run_kernel
from t3sim.sim.clock import cycle_start_tick


def pump_step(until, P, LAT, RQ, f_head, f_tail, arb, obs, US, ready, open_row, act_hist, Q, hits, qcnt, closing,
              occ_hist, bus_busy, turnarounds, cmd_count, out, out_log, counts, b_done, b_remaining, cnt, rowcls, sc,
              bw, lat, bin_cycles, hook, writes_only, freq_kHz, pseudo_channels):  # pragma: no cover - compiled
    """Simulate every unit up to cycle ``until`` and retire what issued.

    Returns ``(done, done_tick, rows, need_bins, need_lat, writes)``: the completed batches in
    :func:`retire`'s order and their completion ticks; the enqueue hook's rows of the
    admitted requests (only if ``hook``; else empty); and, if the statistics arrays were
    too small, the sizes to grow them to -- then nothing was retired (``done`` is empty) and
    the caller grows them and calls :func:`retire` on ``out[0, :counts[0]]`` itself; and how many
    of the issued requests were writes or updates.
    ``counts`` and ``out`` are as for :func:`run_kernel`.
    """
    run_kernel(until, P, LAT, RQ, f_head, f_tail, arb, obs, US, ready, open_row, act_hist, Q, hits, qcnt, closing,
               occ_hist, bus_busy, turnarounds, cmd_count, out, out_log, counts)
    if hook and counts[1] > 0:
        rows = admission_rows(out[1, : counts[1]], RQ, writes_only, freq_kHz, pseudo_channels)
    else:
        rows = np.empty((NAR, 0), dtype=np.int64)
    if counts[0] == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), rows, 0, 0, 0
    nw = 0  # writes and updates among the issued requests
    for j in range(counts[0]):
        if out[O_KIND, j] != 0:
            nw += 1
    done, need_b, need_l = retire_records(out, counts[0], b_done, b_remaining, cnt, rowcls, sc, bw, lat, bin_cycles)
    ticks = np.empty(done.size, dtype=np.int64)
    for j in range(done.size):
        ticks[j] = cycle_start_tick(b_done[done[j]], freq_kHz)
    return done, ticks, rows, need_b, need_l, nw
