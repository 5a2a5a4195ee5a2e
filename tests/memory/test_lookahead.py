"""The pump's lookahead: the memory runs up to one frontend latency ahead of now, with the same results.

A request submitted at tick ``t`` or later reaches the controllers at the first memory cycle starting at or after
``t + frontend`` (``memory_controller.frontend_latency_gpu_cycles``), so at ``t`` the cycles before it are already
determined. ``MemoryPort`` lets each pump step simulate them (``MemorySystem.advance(now, now + frontend)``, units
with requests only, each stopping when it runs out: ``STOP_NO_REQUESTS``) wherever nothing could observe the
difference: an enqueue hook (T3's tracker) sees the admissions in the same order either way, held back to the
horizon (:mod:`t3sim.memory.enqueue_feed`), and a producer-kernel arbitration event (T3-MCA's) reaches the
controllers a frontend latency after it happens, past any lookahead (``MemoryPort._producer_event``). With Table 1's 100-cycle (71 ns) frontend and a pump cadence of 4 cycles
while a write is outstanding, most pump steps go. Held here: the port's workloads of ``test_port_vs_reference``
with and without it (every batch, request, hook report and statistic equal, fewer pump steps), whole runs of
several schemes (``stats.json`` equal but for ``sim.events``), and the refusals that keep it exact.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import simpy
from hypothesis import HealthCheck, given, settings

from t3sim.memory import MemorySystem
from t3sim.memory.port import MemoryPort

from .helpers import system
from .test_port_vs_reference import _assert_same, _run, workloads


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_lookahead_equals_pumping_to_now(w):
    """The fast model's port with and without the lookahead: everything observable equal (the enqueue hook's rows
    in the same order, delivered in other reports), never more pump steps; with a hook, no row delivered later
    than a pump step (4 or 16 cycles) after its tick, nor earlier than one frontend latency (rounded to the memory
    cycle) before it: how far a lookahead, or a T3-MCA producer event (``MemoryPort._producer_event``), runs ahead."""
    cfg, procs, events, hook = w
    ahead, p1 = _run(cfg, procs, events, hook, "fast", lookahead=True)
    now, p0 = _run(cfg, procs, events, hook, "fast", lookahead=False)
    _assert_same(ahead, now)
    assert p1.pump_steps <= p0.pump_steps
    cycle = math.ceil(1000 / cfg.hbm.clock_GHz)  # ticks per memory cycle, rounded up
    early = p1.mem.frontend_ticks + cycle
    for run in (ahead, now):
        ticks = [r[0] for r in run["reports"]]
        k = 0
        for t, n in run["report_times"]:
            assert max(ticks[k:k + n]) < t + early, (t, ticks[k:k + n])
            assert t <= min(ticks[k:k + n]) + 17 * cycle, (t, ticks[k:k + n])
            k += n


def _writes(lookahead: bool, frontend: int = 100):
    """Bursts of writes, each submitted once the previous one completed (a WG storing tiles)."""
    cfg = system(2, memory_controller={"frontend_latency_gpu_cycles": frontend})
    env = simpy.Environment()
    ms = MemorySystem(cfg)
    port = MemoryPort(env, ms)
    port.lookahead = lookahead
    done = []

    def proc():
        for i in range(20):
            ev = port.access(np.arange(64, dtype=np.int64) * 32 + i * 4096, "write", "compute", "gemm")
            yield ev
            done.append(ev.value.done_tick)

    env.process(proc())
    env.run()
    stats = json.dumps(ms.stats("m", at_tick=done[-1]).to_dict(), sort_keys=True)
    return done, stats, port.pump_steps, ms


def test_lookahead_saves_pump_steps_and_changes_nothing():
    d1, s1, n1, ms = _writes(True)
    d0, s0, n0, _ = _writes(False)
    assert ms.may_run_ahead()
    assert (d1, s1) == (d0, s0)
    assert n1 * 3 < n0, (n1, n0)  # 71 ns of lookahead against a 4-cycle cadence while writes are outstanding
    # without a frontend latency there is nothing to look ahead over
    d1, s1, n1, ms = _writes(True, frontend=0)
    d0, s0, n0, _ = _writes(False, frontend=0)
    assert not ms.may_run_ahead() and (d1, s1, n1) == (d0, s0, n0)


def _with_write_backs(lookahead: bool):
    """Bursts of awaited writes, each with a batch of write-backs beside it that nobody waits for (an L2 evicting
    dirty lines while a WG stores): the awaited ones' and the write-backs' completion ticks, the statistics at the
    last awaited completion (write-backs still in flight then), and the pump steps."""
    cfg = system(2, memory_controller={"frontend_latency_gpu_cycles": 100})
    env = simpy.Environment()
    ms = MemorySystem(cfg)
    port = MemoryPort(env, ms)
    port.lookahead = lookahead
    done, wb, end = [], [], []

    def write_back(i, n):
        back = port.access(np.arange(n, dtype=np.int64) * 32 + (i + 64) * 32768, "write", "compute", "gemm",
                           awaited=False)
        back.callbacks.append(lambda e: wb.append(e.value.done_tick))

    def proc():
        for i in range(12):
            ev = port.access(np.arange(32, dtype=np.int64) * 32 + i * 4096, "write", "compute", "gemm")
            write_back(i, 512)
            yield ev
            done.append(ev.value.done_tick)
        # a run ends here, with write-backs in flight: its statistics now (as MemoryHierarchy.stats takes them)
        end.append(json.dumps(ms.stats("m", at_tick=env.now).to_dict(), sort_keys=True))

    def evictions():  # small write-backs every 20 ns until the end: some still on their way to the controllers then
        i = 100
        while not end:
            write_back(i, 4)
            i += 1
            yield env.timeout(20_000)

    env.process(proc())
    env.process(evictions())
    env.run()
    assert max(wb) > done[-1]  # the write-backs outlive the last awaited write
    return done, sorted(wb), end[0], port.pump_steps


def test_write_backs_do_not_hold_the_lookahead_back():
    """Requests submitted unawaited (write-backs) stop no lookahead: a unit left with only them stops at the tick
    the lookahead is called at, so the statistics at the last awaited completion are the reference cadence's (no
    LookaheadPastEnd), every completion -- the write-backs' too -- fires at the same tick, and the pump takes
    fewer steps."""
    d1, w1, s1, n1 = _with_write_backs(True)
    d0, w0, s0, n0 = _with_write_backs(False)
    assert (d1, w1, s1) == (d0, w0, s0)
    assert n1 * 2 < n0, (n1, n0)


def test_a_unit_with_only_write_backs_skips_no_idle_cycles_past_now():
    """The end of a run at ``T``: a lookahead called at ``t < T`` must not carry a unit that is behind ``t`` and
    whose only request is a write-back still on its way (arriving after ``T``) through its idle cycles to that
    arrival: the statistics at ``T`` would count idle cycles past it (``LookaheadPastEnd``; 13 of 56 FiCCO study
    points met it before the fix). It stops at ``t`` instead."""
    cfg = system(2, memory_controller={"frontend_latency_gpu_cycles": 100})
    probe = MemorySystem(cfg)
    probe.submit(0, [0], "write", "compute", "gemm")
    end = probe.run_until_idle()  # T: the awaited write's completion
    units = MemorySystem(cfg)
    units.submit(0, np.arange(4096, dtype=np.int64) * 32, "read", "compute", "gemm")
    other = 32 * int(np.argmax(units.r_unit[:4096] != units.r_unit[0]))  # an address on another unit than 0's
    assert other
    for lookahead in (True, False):
        ms = MemorySystem(cfg)
        ms.submit(0, [0], "write", "compute", "gemm")
        t = end - ms.frontend_ticks // 2  # (the other unit is behind t: idle, never advanced)
        ms.submit(t, [other], "write", "compute", "gemm", awaited=False)  # arrives after T
        if lookahead:
            ms.advance(t, t + ms.frontend_ticks)
        ms.settle(end)  # refuses if any unit was simulated past T


def test_lookahead_needs_the_fused_path_and_a_frontend_latency():
    """Nothing observes a lookahead (module doc): not T3-MCA's producer events (they reach the controllers a
    frontend latency late), not an enqueue hook (canonical order); only the span to look over and the fused
    path bound it."""
    fe = {"frontend_latency_gpu_cycles": 100}
    assert MemorySystem(system(1, memory_controller=fe)).may_run_ahead()
    assert MemorySystem(system(1, memory_controller={**fe, "arbitration": {"kind": "t3_mca"}})).may_run_ahead()
    hooked = MemorySystem(system(1, memory_controller=fe))
    hooked.set_enqueue_hook(lambda info: None)
    assert hooked.may_run_ahead()
    # no frontend latency: nothing to look over (with a policy's hooks or an enqueue hook as without)
    mca = MemorySystem(system(1, memory_controller={"arbitration": {"kind": "t3_mca"}}))
    assert not mca.may_run_ahead()
    ms = MemorySystem(system(1))
    ms.set_enqueue_hook(lambda info: None)
    assert not ms.may_run_ahead()
    assert not MemorySystem(system(1, memory_controller=fe), mode="reference").may_run_ahead()
    assert not MemorySystem(system(1), mode="reference").may_run_ahead()


def test_hook_set_while_ahead_and_stats_past_lookahead_are_refused():
    cfg = system(1, memory_controller={"frontend_latency_gpu_cycles": 100, "write_queue_entries": 4})
    env = simpy.Environment()
    ms = MemorySystem(cfg)
    port = MemoryPort(env, ms)
    port.access(np.arange(512, dtype=np.int64) * 32, "write", "compute", "gemm")  # a backlog: work past any pump step
    env.run(until=300_000)  # some pump steps (the first at the arrival), each running ahead of its now
    assert ms.outstanding and ms.frontier > ms.clock.next_cycle_at_or_after(env.now)
    with pytest.raises(RuntimeError, match="run ahead"):
        port.set_enqueue_hook(lambda info: None)
    port.set_enqueue_hook(None)  # removing one is always fine
    with pytest.raises(RuntimeError, match="lookahead simulated requests past it"):
        ms.stats("m", at_tick=env.now)


TINY = ("workload.tokens=64", "workload.model.hidden_size=256", "workload.tp=2", "system.interconnect.num_gpus=2",
        "system.gpu.num_cus=4")


@pytest.mark.parametrize("extra", [
    ("workload.sublayer=OP", "scheme.kind=sequential"),
    ("workload.sublayer=OP", "scheme.kind=sequential", "simulation.mode=explicit"),
    ("workload.sublayer=OP", "scheme.kind=sequential", "system.memory_controller.page_policy=closed"),
    ("workload.sublayer=OP", "scheme.kind=t3"),  # the tracker's hook: no lookahead until the RS ends
    ("workload.sublayer=OP", "scheme.kind=t3_mca"),  # producer hooks: never
    ("workload.sublayer=OP", "scheme.kind=chunked_dma"),
    ("workload.sublayer=OP", "scheme.kind=flux_rs"),
    ("workload.sublayer=FC-1", "workload.direction=ag_gemm", "scheme.kind=ficco",
     "scheme.ficco_schedule=uniform_fused_2d"),
    # the last GEMM's kernel boundary is the run's end: its posted event falls after it and never applies
    ("workload.sublayer=FC-1", "workload.direction=ag_gemm", "scheme.kind=chunked_dma",
     "system.memory_controller.arbitration.kind=t3_mca"),
], ids=lambda x: "-".join(v.split("=")[1] for v in x[1:]))
def test_whole_runs_identical_with_lookahead(extra):
    """Whole (tiny) runs with ``simulation.memory_lookahead`` on and off: ``stats.json`` equal but for the
    count of simpy events (fewer pump steps)."""
    from t3sim.system import simulate as simulate_run
    from tests.system.helpers import exp

    out, events = [], []
    for la in ("true", "false"):
        st = simulate_run(exp(*TINY, *extra, f"simulation.memory_lookahead={la}")).stats.to_dict()
        events.append(st["sim"].pop("events")["value"])
        out.append(json.dumps(st, sort_keys=True, default=str))
    assert out[0] == out[1]
    assert events[0] <= events[1]


# A GEMM alone on a small L2 ends with thousands of its write-backs in flight (the kernel waits for its own stores,
# not for evicted lines).
WB = ("workload.tokens=256", "workload.model.hidden_size=1024", "workload.tp=2", "system.interconnect.num_gpus=2",
      "system.gpu.num_cus=4", "workload.sublayer=FC-1", "workload.direction=ag_gemm", "scheme.kind=ficco_char",
      "scheme.char_part=gemm", "scheme.chunks=1", "system.l2.size_MiB=0.125")


def _wb_run(lookahead: str):
    from t3sim.system import simulate as simulate_run
    from tests.system.helpers import exp

    r = simulate_run(exp(*WB, f"simulation.memory_lookahead={lookahead}"))
    st = r.stats.to_dict()
    st["sim"].pop("events")
    return json.dumps(st, sort_keys=True, default=str), r.meta


def test_write_backs_in_flight_at_the_end_need_no_rerun():
    """A run may end with write-backs in flight, which a lookahead would have simulated past its end: they are
    submitted unawaited and a lookahead stops a unit that has no awaited request left at the tick it is called
    at (``STOP_NO_REQUESTS`` from ``P_HARD``), so the run needs no re-run and its statistics are the reference
    cadence's."""
    on, meta = _wb_run("true")
    off, _ = _wb_run("false")
    assert on == off and "memory_lookahead" not in meta
    assert json.loads(on)["gpu0"]["hbm"]["requests"]["value"] > 0


def test_stats_past_a_lookahead_rerun_the_point_without_it(monkeypatch, tmp_path):
    """With no unit stopped for want of awaited requests (``P_HARD`` never reached) the same run ends with
    write-backs a lookahead simulated past its end: the statistics refuse (LookaheadPastEnd) and ``simulate``
    re-runs the point at the reference cadence, saying so in ``meta`` and in a sweep's progress line."""
    from t3sim.memory.fast.controller_fast import FastController
    from t3sim.memory.policies.base import NEVER

    off, _ = _wb_run("false")
    step = FastController.step
    monkeypatch.setattr(FastController, "step", lambda self, *a, hard=0, **k: step(self, *a, hard=NEVER, **k))
    on, meta = _wb_run("true")
    assert on == off
    assert meta["memory_lookahead"].startswith("re-run without: memory statistics asked for t=")

    # a sweep says so in the point's progress line (the point cost two simulations)
    import io

    from t3sim.config.sweep import Point
    from t3sim.exec.progress import Progress
    from t3sim.exec.runner import run_points
    from tests.system.helpers import exp

    log = io.StringIO()
    (out,) = run_points([Point("wb", exp(*WB))], out=tmp_path, jobs=1, progress=Progress(log, tty=False))
    assert out.ok and "(run twice: the second without the memory lookahead; meta.json says why)" in log.getvalue()


def test_advance_refuses_a_lookahead_it_cannot_keep_exact():
    ms = MemorySystem(system(1, memory_controller={"frontend_latency_gpu_cycles": 100}))
    with pytest.raises(ValueError, match="at most the frontend latency"):
        ms.advance(0, ms.frontend_ticks + 1)
    ms.advance(0, ms.frontend_ticks)
    mca = MemorySystem(system(1, memory_controller={"arbitration": {"kind": "t3_mca"}}))
    with pytest.raises(ValueError, match="needs may_run_ahead"):
        mca.advance(0, 1)


def _producer_event_run(how: str):
    """A T3-MCA memory: compute writes, a kernel boundary at tick ``T`` and, with ``how`` != "end", a
    communication stream behind it. ``how``: "port" posts it through the port (a frontend latency late), "direct"
    applies it at that tick by hand, as the port did before it posted events (advance, then the hook), "end" posts
    it and the run ends at ``T``, "none" never sends it and ends at ``T``."""
    cfg = system(2, memory_controller={"frontend_latency_gpu_cycles": 100, "arbitration": {"kind": "t3_mca"}})
    env = simpy.Environment()
    ms = MemorySystem(cfg)
    port = MemoryPort(env, ms)
    done = []

    def proc():
        for i in range(6):
            ev = port.access(np.arange(64, dtype=np.int64) * 32 + i * 4096, "write", "compute", "gemm")
            comm = port.access(np.arange(32, dtype=np.int64) * 32 + (1 << 24) + i * 4096, "write", "comm", "dma")
            yield ev & comm
        done.append(env.now)
        if how == "port" or how == "end":
            port.kernel_boundary()
        elif how == "direct":
            t = env.now + ms.policy_event_delay_ticks
            ms.advance(t)
            ms.kernel_boundary(t)
        if how in ("end", "none"):
            return
        for i in range(6):
            ev = port.access(np.arange(64, dtype=np.int64) * 32 + (1 << 25) + i * 4096, "write", "comm", "dma")
            yield ev
            done.append(ev.value.done_tick)

    env.process(proc())
    env.run()
    return done, json.dumps(ms.stats("m", at_tick=done[-1]).to_dict(), sort_keys=True), ms


def test_posted_producer_event_applies_at_its_tick_and_never_after_the_end():
    """``MemoryPort.kernel_boundary`` posts the T3-MCA event for a frontend latency later
    (``MemorySystem.post_policy_event``): the pump's lookahead stops at it and it applies at its cycle, the same
    as advancing to that tick and applying it there at once; posted within a frontend latency of the run's end, it
    never applies, and the statistics at the end are those of a run without it (advancing at once simulated
    cycles past the end: ``LookaheadPastEnd``, also at the reference cadence)."""
    ended, s_end, ms = _producer_event_run("end")
    none, s_none, _ = _producer_event_run("none")
    assert (ended, s_end) == (none, s_none)
    assert ms.posted_policy_events == 1  # posted past the end: never applied
    posted, s_posted, ms = _producer_event_run("port")
    direct, s_direct, _ = _producer_event_run("direct")
    assert (posted, s_posted) == (direct, s_direct)
    assert ms.posted_policy_events == 0


@pytest.mark.parametrize("kind", ["t3", "t3_mca"])
def test_t3_ending_with_its_reduce_scatter_needs_no_rerun(kind):
    """A T3 run that ends with its reduce-scatter (GEMM+RS, as FLUX's operation-level study runs it) removes the
    tracker's enqueue hook at its last landing; the hook change takes effect at that tick (admissions a lookahead
    made later are dropped, as at the reference cadence, where they have not happened), so no controller runs past
    the end and the run needs no re-run without the lookahead (before, removing the hook ran every unit to the
    lookahead's frontier: all 36 of flux-op's T3 points ran twice). Statistics equal the reference cadence's."""
    from t3sim.system import simulate as simulate_run
    from tests.system.helpers import exp

    out = []
    for la in ("true", "false"):
        r = simulate_run(exp(*TINY, "workload.sublayer=OP", f"scheme.kind={kind}", "workload.collective=reduce_scatter",
                             f"simulation.memory_lookahead={la}"))
        assert "memory_lookahead" not in r.meta, r.meta
        st = r.stats.to_dict()
        st["sim"].pop("events")
        out.append(json.dumps(st, sort_keys=True, default=str))
    assert out[0] == out[1]
