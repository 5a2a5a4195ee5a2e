"""The controller's frontend latency (``memory_controller.frontend_latency_gpu_cycles``, Accel-Sim's
``-dram_latency``): every request reaches the controller that many GPU core cycles after it is submitted;
replies take none. Table 1: 100 cycles at 1.4 GHz = 71.43 ns, so a read to a closed bank returns at
HBM cycle ceil(71.43) + tRCD + tCL + tBL = 72 + 14 + 14 + 1 = 101.
"""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from t3sim.memory import MemorySystem
from t3sim.memory import timing as T
from t3sim.memory.port import MemoryPort
from t3sim.sim.clock import Clock

from .helpers import system


def _one(cfg, kind="read", tick=0):
    ms = MemorySystem(cfg)
    bid = ms.submit(tick, [0], kind, "compute", "gemm")
    ms.run_until_idle()
    return ms, ms.batch_done_tick(bid)


def test_table1_unloaded_read():
    cfg = system(1, memory_controller={"frontend_latency_gpu_cycles": 100})
    assert cfg.gpu.clock_GHz == 1.4
    v = T.resolve(cfg.hbm).values
    ms, done = _one(cfg)
    arrive = Clock.from_GHz(1.0).next_cycle_at_or_after(Clock.from_GHz(1.4).cycle_to_tick(100))
    assert arrive == 72 and ms.r_arrive[0] == arrive
    assert done == Clock.from_GHz(1.0).cycle_to_tick(arrive + v["tRCD"] + v["tCL"] + v["tBL"]) == 101_000


@pytest.mark.parametrize("kind", ("read", "write", "update"))
@pytest.mark.parametrize("cycles,gpu_GHz", [(0, 1.4), (100, 1.4), (37, 2.0), (100, 1.0)])
def test_latency_is_gpu_cycles_on_the_request_path_only(kind, cycles, gpu_GHz):
    """Completion moves by exactly the frontend delay (rounded up to the HBM clock); the controller's own
    latency, arrival to completion, does not change."""
    base, t0 = _one(system(1, gpu={"clock_GHz": gpu_GHz}, memory_controller={"frontend_latency_gpu_cycles": 0}), kind)
    cfg = system(1, gpu={"clock_GHz": gpu_GHz}, memory_controller={"frontend_latency_gpu_cycles": cycles})
    ms, t1 = _one(cfg, kind, tick=333)
    hbm = Clock.from_GHz(cfg.hbm.clock_GHz)
    arrive = hbm.next_cycle_at_or_after(333 + Clock.from_GHz(gpu_GHz).cycle_to_tick(cycles))
    assert ms.r_arrive[0] == arrive
    assert ms.r_done[0] - ms.r_arrive[0] == base.r_done[0] - base.r_arrive[0]
    assert t1 - t0 == hbm.cycle_to_tick(arrive)


def test_port_fires_at_the_delayed_completion():
    """The simpy port arms its pump for the delayed arrival: the event fires exactly at completion, for a
    write submitted while only reads are outstanding too (discovery_tick includes the latency)."""
    cfg = system(2, memory_controller={"frontend_latency_gpu_cycles": 100})
    env = simpy.Environment()
    ms = MemorySystem(cfg)
    port = MemoryPort(env, ms)
    seen = []

    def proc(delay, kind, addrs):
        yield env.timeout(delay)
        res = yield port.access(addrs, kind, "compute", "gemm")
        seen.append((env.now, res.done_tick))

    env.process(proc(0, "read", np.arange(64) * 32))
    env.process(proc(5_000, "write", 1 << 20))
    env.run()
    assert len(seen) == 2 and all(now == done for now, done in seen)


@pytest.mark.parametrize("latency", [0, 100, 137])
def test_last_discovery_tick_is_the_discovery_tick_of_the_last_submission(latency):
    """``MemoryPort.access`` arms its pump from the arrival cycle ``submit`` computed
    (:meth:`MemorySystem.last_discovery_tick`): the same tick as :meth:`MemorySystem.discovery_tick` of the
    submission's tick, for reads and writes, at ticks on and between memory and GPU cycle boundaries."""
    ms = MemorySystem(system(2, memory_controller={"frontend_latency_gpu_cycles": latency}))
    for i, tick in enumerate([0, 1, 357, 714, 1000, 1001, 99_999, 100_000]):
        ms.submit(tick, [i * 64], "write" if i % 2 else "read", "compute", "gemm")
        for write in (False, True):
            assert ms.last_discovery_tick(write) == ms.discovery_tick(tick, write)
