"""Requesters stop issuing when their bound on requests in flight is full (component tests, source -> memory -> sink).

T3's DMA engines (``dma.max_outstanding_requests`` per engine, paper Sec. 4.2.2), the SM copy kernel
(``copy_engine.sm_copy_inflight_per_cu_B`` per CU) and a collective kernel's CUs (``collective.inflight_per_cu_B``
per source) each hold credits for the requests they have in flight: a request takes its credits when it issues and
returns them when it is done, and the next one waits for them. The
copy engines' own bound is held by ``tests/dma/test_copy_engine.py``, the GEMM's (its pipeline stages) by
``tests/compute/test_gemm_pipeline.py``, the L2's write queue by ``tests/compute/test_write_queue_bound.py``.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest

from t3sim.compute.dispatcher import CuDispatcher
from t3sim.compute.memhier import REQ_B, MemoryHierarchy
from t3sim.config import load_system
from t3sim.config.system import SystemConfig
from t3sim.dma.copy_kernel import SMCopyKernel
from t3sim.dma.engine import DMAEngines, DmaBlock
from t3sim.sim.engine import Engine

MiB = 1 << 20


@contextmanager
def _in_flight(method: str):
    """While in the block, count the requests each hierarchy's ``<method>`` (``read``, ``direct_read``) has in
    flight; yields the most any hierarchy had at once, as a list of one value."""
    most = [0]
    now = {}
    orig = getattr(MemoryHierarchy, method)

    def counted(self, addrs, *a, **kw):
        ev = orig(self, addrs, *a, **kw)
        n = len(addrs)
        now[id(self)] = now.get(id(self), 0) + n
        most[0] = max(most[0], now[id(self)])

        def done(_e, key=id(self), n=n):
            now[key] -= n

        ev.callbacks.insert(0, done)  # before the requester's own callback returns its credits
        return ev

    setattr(MemoryHierarchy, method, counted)
    try:
        yield most
    finally:
        setattr(MemoryHierarchy, method, orig)


class _Sink:
    """A fabric that takes every payload at once (the links are not what these tests bound)."""

    def __init__(self):
        self.sent = 0

    def send(self, src, dst, pl, payload_B=None):
        self.sent += len(pl.addrs)


def _dma(cap: int, requests: int = 8192):
    system = SystemConfig.model_validate({"dma": {"engines": 1, "max_outstanding_requests": cap,
                                                  "issue_latency_ns": 0}})
    eng = Engine(seed=0)
    hier = MemoryHierarchy(eng.env, system)
    fabric = _Sink()
    dma = DMAEngines(eng, 0, hier, fabric, system.dma)
    addrs = np.arange(requests, dtype=np.int64) * REQ_B
    ids = np.zeros(requests, dtype=np.int64)
    blocks = [DmaBlock(("b", i), 1, "update", addrs[i::4], ids[i::4], ids[i::4]) for i in range(4)]
    for b in blocks:
        dma.trigger(b, 0)
    with _in_flight("direct_read") as most:
        eng.env.run()
    assert fabric.sent == requests and all(b.done_tick >= 0 for b in blocks)
    return max(b.done_tick for b in blocks), most[0]


@pytest.mark.parametrize("cap", [16, 64, 256])
def test_dma_engine_stops_at_its_credits(cap):
    """One engine never has more reads in flight than its credits and fills them; with fewer it is slower
    (Little's law: the memory is far from saturated)."""
    end, most = _dma(cap)
    assert most == cap
    if cap > 16:
        assert _dma(cap // 4)[0] > end


def _sm_copy(inflight_B: int):
    system = load_system("configs/systems/h200-4gpu.yaml", [f"copy_engine.sm_copy_inflight_per_cu_B={inflight_B}",
                                                            "gpu.num_cus=4", "collective.cus=4"])
    eng = Engine(seed=0)
    hier = MemoryHierarchy(eng.env, system)
    k = SMCopyKernel(eng, 0, hier, CuDispatcher(system.gpu, "gpu0"), system.gpu, system.copy_engine)
    with _in_flight("read") as most:
        ev = k.copy(0, 256 * MiB, 4 * MiB)
        eng.env.run()
    assert ev.processed
    return ev.value.duration_ticks, k.max_in_flight(), most[0]


def test_sm_copy_kernel_stops_at_its_bytes_in_flight_per_cu():
    """The copy kernel's CTAs on a CU keep at most ``sm_copy_inflight_per_cu_B`` of requests in flight (a request
    counts from its load until its store is written) and reach it; with a quarter of it the copy is slower."""
    t_big, most_big, reads_big = _sm_copy(64 * 1024)
    t_small, most_small, _ = _sm_copy(16 * 1024)
    assert most_big == 64 * 1024 // REQ_B and most_small == 16 * 1024 // REQ_B
    assert reads_big <= 4 * most_big  # 4 CUs
    assert t_small > t_big


def test_collective_cus_stop_at_their_bytes_in_flight():
    """A collective kernel's CUs (``collective.inflight_per_cu_B``, NCCL Simple's loads in flight per source) have
    exactly ``cus x sources x inflight_per_cu_B`` of reads in flight at most (a reduce-scatter step reads its local
    chunk and the received one); with a quarter of it the reduce-scatter is slower (the links are not the limit at
    8 CUs)."""
    from t3sim.collectives.gpu_run import simulate_collective_on_gpus

    def rs(inflight_B: int):
        system = load_system("configs/systems/t3-table1.yaml",
                             ["interconnect.num_gpus=4", f"collective.inflight_per_cu_B={inflight_B}"])
        with _in_flight("read") as most:
            run, _ = simulate_collective_on_gpus(system, "reduce_scatter", 4 * 1024 * 1024, 2, cus=8)
        return run.duration_ns, most[0]

    t_big, most_big = rs(16384)
    t_small, most_small = rs(4096)
    for most, B in ((most_big, 16384), (most_small, 4096)):
        assert most == 8 * 2 * B // REQ_B  # 8 CUs, each with a piece of both sources (local and received) in flight
    assert t_small > t_big
