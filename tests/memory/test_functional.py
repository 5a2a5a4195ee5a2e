"""Functional data mode: op-and-store really adds; reads see earlier writes and updates."""

import numpy as np

from t3sim.memory import MemorySystem

from .helpers import system


def test_updates_sum_and_reads_see_them():
    cfg = system(2, hbm={"timing": {"tREFI_nCK": 500}})
    ms = MemorySystem(cfg, functional=True, dtype=np.float32)
    A, E = ms.access_B, ms.access_B // 4  # bytes and float32 values of one DRAM access
    rng = np.random.default_rng(4)
    lines = rng.integers(0, 200, 3000)
    addrs = lines * A + rng.integers(0, A, lines.size)  # any byte in the access names the access
    vals = rng.integers(-8, 9, (lines.size, E)).astype(np.float32)
    base = rng.integers(0, 5, (200, E)).astype(np.float32)
    ms.submit(0, np.arange(200) * A, "write", "compute", "gemm", data=base)
    ms.run_until_idle()  # a write and a later update of another stream are not ordered while pending
    # three streams of updates to the same lines, as local GEMM, remote and DMA updates (paper Fig. 8)
    for k, s in enumerate(np.array_split(np.arange(lines.size), 3)):
        ms.submit(ms.now_tick + 1000 * k, addrs[s], "update", ["compute", "comm"][k % 2], "dma", data=vals[s])
    # T3's tracker triggers the DMA read once the updates are *enqueued* at the controller
    # (paper Sec. 4.2.1); requests of different streams are not ordered while still pending
    enq = []
    ms.set_enqueue_hook(lambda info: enq.append(len(info.tick)))
    while sum(enq) < lines.size:
        ms.advance(ms.now_tick + 4000)
    assert ms.outstanding > 0  # some updates are still queued, not yet performed
    r = ms.submit(ms.now_tick, np.arange(200) * A, "read", "comm", "collective")
    ms.run_until_idle()
    expect = base.copy()
    np.add.at(expect, lines, vals)
    assert np.array_equal(ms.read_data(r), expect)
    assert np.array_equal(ms.functional.value(7), expect[7])


def test_read_after_write_ordering_under_reordering_scheduler():
    """A read admitted after a write to the same line returns the written value even though FR-FCFS
    serves reads before writes (the read waits for the queued write)."""
    cfg = system(1)
    ms = MemorySystem(cfg, functional=True, dtype=np.int32)
    A = ms.access_B
    ms.submit(0, [0], "write", "compute", "gemm", data=np.full((1, A // 4), 7))
    r = ms.submit(0, [0, A], "read", "compute", "gemm")
    ms.run_until_idle()
    assert ms.read_data(r)[:, 0].tolist() == [7, 0]


def test_requests_span_accesses_in_the_store():
    """A 64 B request is 64 / access_size_B accesses: read_addr and preload speak requests, value accesses."""
    ms = MemorySystem(system(1), functional=True, dtype=np.int32)
    fs = ms.functional
    k = 64 // ms.access_B
    assert fs.elems == 16 and fs.access_elems * k == 16
    fs.preload([128], np.arange(16).reshape(1, 16))
    assert fs.read_addr(128 + 5).tolist() == list(range(16))  # any byte of the request names it
    assert fs.value(128 // ms.access_B + k - 1).tolist() == list(range(16 - fs.access_elems, 16))
