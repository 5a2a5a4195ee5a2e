"""The path real runs take, held against the Python reference controller.

Real runs drive the memory through :class:`~t3sim.memory.port.MemoryPort`: a callback pump armed at
:meth:`~t3sim.memory.system.MemorySystem.next_event_tick` (4 or 16 memory cycles), lazy advances,
and with the fast controller one compiled call per pump step
(:func:`t3sim.memory.fast.step_kernel.pump_step`: controllers, enqueue-hook rows, retire, completion
ticks), with request-array compaction once the arrays are full. The other memory tests compare the
fast and reference controllers through ``MemorySystem.submit``/``run_until_idle`` or the unfused
kernel call; here the *same* simpy workload runs on a port over the fast model and on a port over the
reference model (``mode="reference"``: plain Python, one cycle at a time), and everything observable
must be identical:

* every batch's completion tick and the tick its event fired at;
* every request's completion cycle;
* the enqueue hook's reports (T3's tracker hook, ``writes_only``, and the all-requests hook): their rows, in
  order, and the tick each report was delivered at;
* the memory statistics (``MemorySystem.stats``, as JSON).

Inputs vary (hypothesis): reads, writes and near-memory updates (op-and-store) of both streams,
64 B GPU requests split into accesses, both write-drain policies, every page policy, every
arbitration policy (t3_mca with static and dynamic thresholds, driven by the producer-kernel events
the schemes send: ``begin_isolated_stage``, ``end_isolated_stage``, ``kernel_boundary``), refresh,
small queues (backpressure), and the controller frontend latency.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t3sim.memory import MemorySystem
from t3sim.memory import bookkeeping as BK
from t3sim.memory.port import MemoryPort

from .helpers import draw_controller, draw_refresh, system, whole_run_stats

KINDS = ("read", "write", "update")
STREAMS = ("compute", "comm")
SOURCES = ("gemm", "collective", "dma", "other")


def _config(draw):
    policy = draw(st.sampled_from(["round_robin", "compute_first", "t3_mca"]))
    arb = {"kind": policy}
    if policy == "t3_mca":
        arb.update(threshold_mode=draw(st.sampled_from(["static", "dynamic"])),
                   starvation_limit_cycles=draw(st.sampled_from([None, 3, 40, 1000])))
        if arb["threshold_mode"] == "static":
            arb["occupancy_threshold"] = draw(st.sampled_from([None, 2, 10]))
    return system(
        draw(st.sampled_from([1, 2, 3])),
        hbm={**draw_refresh(draw, [0, 400, 3900]), "burst_length": draw(st.sampled_from([2, 4]))},
        memory_controller={**draw_controller(draw), "arbitration": arb},
        address_map={"xor_bank_hash": draw(st.booleans())},
    )


@st.composite
def workloads(draw):
    """``(config, processes, policy events, hook)``: each process is a list of ``(delay_ticks, batch)``
    it submits one after another, waiting for each batch's completion (a WG, a DMA engine) or not
    (``wait`` False: stores fired and forgotten); policy events are ``(tick, name)``."""
    cfg = _config(draw)
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    A = cfg.hbm.access_size_B
    procs = []
    for p in range(draw(st.integers(1, 4))):
        ops = []
        for _ in range(draw(st.integers(1, 6))):
            n = int(rng.integers(1, 48))
            span = int(rng.choice([4, 128, 1 << 16]))  # few lines (same-line hazards), some rows, anywhere
            start = int(rng.integers(0, 1 << 14)) * 256
            idx = rng.integers(0, span, n) if rng.random() < 0.6 else np.arange(n)
            request_B = A if rng.random() < 0.5 else 64  # DRAM accesses, or the GPU's 64 B requests
            ops.append((int(rng.integers(0, 120_000)), dict(
                addrs=start + idx * request_B, kind=KINDS[int(rng.integers(0, 3))],
                stream=STREAMS[int(rng.integers(0, 2))], source=SOURCES[int(rng.integers(0, 4))],
                wg_id=int(rng.integers(0, 8)) if rng.random() < 0.5 else rng.integers(0, 8, n),
                wf_id=int(rng.integers(0, 4)), request_B=request_B), bool(rng.random() < 0.7)))
        procs.append(ops)
    events, t = [], 0
    if cfg.memory_controller.arbitration.kind == "t3_mca":
        for name in ("begin_isolated_stage", "end_isolated_stage", "kernel_boundary"):
            t += int(rng.integers(1, 150_000))
            events.append((t, name))
    hook = draw(st.sampled_from([None, "writes_only", "all"]))
    return cfg, procs, events, hook


def _run(cfg, procs, events, hook, mode, capacity=None, lookahead=True):
    """Run the workload on a port over a ``mode`` memory; return everything observable. ``capacity``:
    start the request arrays that small and compact them from there on (as full-size runs do once
    ``MemorySystem.compact_min`` requests are held); ``lookahead``: ``MemoryPort.lookahead``."""
    env = simpy.Environment()
    ms = MemorySystem(cfg, mode=mode)
    if capacity is not None:
        ms._cap = 0
        ms.RQ = np.zeros((0, BK.NF), dtype=np.int64).T
        ms._grow(capacity)
        ms.compact_min = capacity
    port = MemoryPort(env, ms)
    port.lookahead = lookahead
    reports, report_times = [], []
    if hook is not None:
        def on_enqueue(info):
            assert len(info.tick) > 0  # no empty report
            report_times.append((env.now, len(info.tick)))
            reports.extend(zip(info.tick.tolist(), info.channel.tolist(), info.kind.tolist(), info.stream.tolist(),
                               info.source.tolist(), info.wg_id.tolist(), info.wf_id.tolist(), info.batch.tolist(),
                               [info.bytes] * len(info.tick)))

        ms.set_enqueue_hook(on_enqueue, writes_only=hook == "writes_only")
    batches = []

    def record(ev, t0, p, i):
        res = ev.value
        batches.append((p, i, t0, res.batch_id, res.done_tick, env.now))

    def proc(p, ops):
        for i, (delay, b, wait) in enumerate(ops):
            yield env.timeout(delay)
            t0 = env.now
            ev = port.access(**b)
            if wait:
                yield ev
                record(ev, t0, p, i)
            else:
                ev.callbacks.append(lambda e, t0=t0, i=i: record(e, t0, p, i))

    def policy_events():
        for t, name in events:
            yield env.timeout(t - env.now)
            getattr(port, name)()

    for p, ops in enumerate(procs):
        env.process(proc(p, ops))
    if events:
        env.process(policy_events())
    env.run()
    assert ms.outstanding == 0
    per_request = None
    if not ms.compactions:
        per_request = [ms.request_done_ticks(b[3]).tolist() for b in sorted(batches, key=lambda x: x[3])]
    # at a tick the pump cadence does not move (env.now is the last pump step's: cadence-dependent)
    # a producer-kernel event of a policy with hooks reaches the controllers a frontend latency later
    late = ms.policy_event_delay_ticks
    end = max([b[4] for b in batches] + [t + late for t, _ in events] + [0])
    stats = json.dumps(ms.stats("m", at_tick=end).to_dict(), sort_keys=True, default=str)
    return dict(batches=sorted(batches), reports=reports, report_times=report_times, per_request=per_request, stats=stats,
                ahead=bool(port.lookahead and ms.may_run_ahead()),
                cycles=ms.r_done[: ms.n].copy() if not ms.compactions else None, env_now=env.now), port


def _assert_same(fast, ref):
    """Where one run looked ahead and the other did not, the hook's rows must still come in the same order
    (:mod:`t3sim.memory.enqueue_feed`), but in other reports at other times."""
    assert fast["batches"] == ref["batches"]
    for p, i, t0, bid, done, fired in fast["batches"]:
        assert fired == done > t0
    if fast["per_request"] is not None:
        assert fast["per_request"] == ref["per_request"]
        assert np.array_equal(fast["cycles"], ref["cycles"])
    assert fast["reports"] == ref["reports"]
    assert [r[0] for r in fast["reports"]] == sorted(r[0] for r in fast["reports"])  # by admission tick
    if fast["ahead"] == ref["ahead"]:
        assert fast["report_times"] == ref["report_times"]
    assert fast["stats"] == ref["stats"]
    assert fast["env_now"] == ref["env_now"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_port_pump_fast_equals_reference(w):
    """The fused single-call pump step, at the port's real cadence, against the reference controller."""
    cfg, procs, events, hook = w
    fast, port = _run(cfg, procs, events, hook, "fast")
    assert port.mem._fused  # the path real runs take
    ref, _ = _run(cfg, procs, events, hook, "reference")
    _assert_same(fast, ref)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_port_pump_with_compaction_equals_reference(w):
    """Full-size runs compact the request arrays (``MemorySystem.compact_min``); forced here on the fast
    side at a capacity of 128 requests, the batches, hook reports and statistics still match the reference."""
    cfg, procs, events, hook = w
    fast, _ = _run(cfg, procs, events, hook, "fast", capacity=128)
    ref, _ = _run(cfg, procs, events, hook, "reference")
    fast["per_request"] = fast["cycles"] = None
    _assert_same(fast, ref)


def test_port_pump_compacts_and_equals_reference():
    """A stream long enough to fill the request arrays several times: the fast side compacts (from a
    capacity of 256 requests) and the port's results equal the reference's."""
    cfg = system(2, hbm={"timing": {"tREFI_nCK": 700}},
                 memory_controller={"read_queue_entries": 8, "write_queue_entries": 8,
                                    "arbitration": {"kind": "t3_mca", "threshold_mode": "static",
                                                    "occupancy_threshold": 4, "starvation_limit_cycles": 20}})
    rng = np.random.default_rng(3)
    procs = [[(int(rng.integers(0, 20_000)), dict(addrs=rng.integers(0, 1 << 14, 40) * 64, kind=KINDS[(p + i) % 3],
                                                 stream=STREAMS[p % 2], source="gemm", wg_id=p, wf_id=i % 4,
                                                 request_B=64), True) for i in range(30)] for p in range(3)]
    events = [(30_000, "begin_isolated_stage"), (200_000, "end_isolated_stage"), (900_000, "kernel_boundary")]
    fast, port = _run(cfg, procs, events, "writes_only", "fast", capacity=256)
    assert port.mem.compactions > 0
    ref, _ = _run(cfg, procs, events, "writes_only", "reference")
    fast["per_request"] = fast["cycles"] = None
    _assert_same(fast, ref)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_port_pump_fast_equals_reference_many(w):
    test_port_pump_fast_equals_reference.hypothesis.inner_test(w)


@pytest.mark.slow  # ~15-30 s each: the reference controller simulates every memory cycle in Python
@pytest.mark.parametrize("scheme", ["t3", "t3_mca"])
def test_whole_t3_run_fast_equals_reference(scheme):
    """A whole (tiny) T3 / T3-MCA run -- GEMM stores as near-memory updates, the tracker's enqueue hook, DMA
    updates arriving from peers, the producer-kernel events of t3_mca -- gives byte-identical statistics with
    the reference memory model (``simulation.memory_model=reference``) and the fast one, but for the count of simpy
    events (T3's all-gather after the RS looks ahead on the fast path only: ``MemorySystem.may_run_ahead``)."""
    st = whole_run_stats("workload.sublayer=OP", "workload.tokens=32", "workload.model.hidden_size=512",
                         "workload.tp=4", "system.interconnect.num_gpus=4", "system.gpu.num_cus=4",
                         f"scheme.kind={scheme}")
    assert st["gpu0"]["tracker"]["fired"]["value"] > 0  # DMA blocks were triggered by the tracker
