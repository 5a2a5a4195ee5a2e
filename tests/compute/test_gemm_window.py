"""The windowed GEMM (t3sim.window.gemm_window) against the reference simpy path.

Both paths must give identical results: the same kernel times, stage ends, DRAM traffic, L2 and HBM
statistics, and -- since the compiled events interleave with simpy's by the shared (tick, priority, eid)
order -- the same view for every simpy process running beside the window.
"""

from __future__ import annotations

import dataclasses
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.window import gemm_window
from t3sim.compute.gemm_kernel import GemmKernel
from t3sim.compute.sinks import AccumulatingOutput, CachedLocalOutput
from t3sim.compute.memhier import MemoryHierarchy
from t3sim.config import load_experiment, load_system
from t3sim.memory.system import MemorySystem
from t3sim.sim.engine import Engine
from tests.conftest import LARGE, with_kernel
from t3sim.system.kernels import gemm_kernel_record
from t3sim.workload.generate import system_kernel
from t3sim.workload.wg_order import row_major

H200 = "configs/systems/h200-4gpu.yaml"
TABLE1 = "configs/experiments/default.yaml"


def _counting_init(seen: list):
    """``GemmWindow.__init__`` that also appends the name of each kernel it takes to ``seen``."""
    orig = gemm_window.GemmWindow.__init__

    def init(self, gk, *a):
        seen.append(gk.name)
        orig(self, gk, *a)

    return init


@pytest.fixture
def windows(monkeypatch):
    """Count the kernels that ran windowed."""
    seen = []
    monkeypatch.setattr(gemm_window.GemmWindow, "__init__", _counting_init(seen))
    return seen


def _run_windowed(*args, **kw):
    """``_run_gemm(..., window=True)`` and the kernels that ran windowed (for tests that cannot take the ``windows``
    fixture: hypothesis runs many examples per test)."""
    seen = []
    with mock.patch.object(gemm_window.GemmWindow, "__init__", _counting_init(seen)):
        return seen, _run_gemm(*args, window=True, **kw)


def _run_gemm(system, M, N, K, window, k_group=1, noise_ps=0, stages=None, touch_at=None, first_wg=0, acc=False,
             lookahead=True, pumps=None, mma_rate=1.0, split_k=1):
    """One GEMM alone on a GPU (exclusive), optionally with a simpy process beside it that wakes every
    ``noise_ps`` and records what it sees (time, WGs done, beats, kernel's next WG). ``acc``: C += the tile
    (:class:`_CountingAcc`, whose count of C lines read is returned too). ``lookahead``: the memory pump's
    (``simulation.memory_lookahead``); ``pumps``: a list that gets the run's count of pump steps. ``mma_rate``,
    ``split_k``: the kernel record's (a split kernel's workspace at 3 GiB)."""
    if system.gemm_library.kernels:  # H200: no clusters (a clustered kernel takes the reference path)
        upd = {"cluster_m": 1, "cluster_n": 1, **({"lds_stages": stages} if stages else {})}
        system = with_kernel(system, LARGE, **upd)
        k = gemm_kernel_record(system, M, N, K, "bf16")
    else:  # Table 1: the workload's own kernel (T-NLG FC-2 at TP=8) at M tokens
        exp = load_experiment(TABLE1, [f"workload.tokens={M}"])
        k = system_kernel(exp.workload, exp.system)
    k = dataclasses.replace(k, mma_rate=mma_rate, split_k=split_k)
    eng = Engine(seed=0, watchdog_idle_ticks=8_000_000)  # 8 us: longer than a launch, far shorter than these kernels
    hier = MemoryHierarchy(eng.env, system)
    hier.port.lookahead = lookahead
    gk = GemmKernel(eng, "gpu0.gemm", hier, system.gpu, k, row_major(k.tiles_m, k.tiles_n), 0, 1 << 30, 1 << 31,
                    _CountingAcc(hier) if acc else CachedLocalOutput(hier), k_group=k_group,
                    workspace_B=3 << 30 if split_k > 1 else None)
    gk.window, gk.exclusive = (gemm_window.run_windowed if window else None), True
    seen = []
    env = eng.env

    def noise():
        while True:
            yield env.timeout(noise_ps)
            seen.append((env.now, gk.progress, gk.beats))

    def toucher():
        yield env.timeout(touch_at)
        hier.read(np.array([0], dtype=np.int64))

    if noise_ps:
        env.process(noise())
    if touch_at is not None:
        env.process(toucher())
    done = gk.start(first_wg)
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    run = done.value
    if pumps is not None:
        pumps.append(hier.port.pump_steps)
    # the controllers' statistics up to the end (MemoryHierarchy.stats advances to now)
    return (run.start_tick, run.end_tick, run.stage_end_ticks, run.load_requests, hier.stats().to_dict(),
            dict(hier.traffic), gk.progress, gk.beats, getattr(gk.sink, "lines", None), seen, eng.events_processed)


class _CountingAcc(AccumulatingOutput):
    """An accumulating sink that counts the C lines it reads (as ficco_char's does)."""

    lines = 0

    def count_reads(self, lines: int) -> None:
        self.lines += lines


@pytest.fixture(scope="module", params=["h200", "table1"])
def system(request):
    return load_system(H200) if request.param == "h200" else load_experiment(TABLE1).system

# Table 1 runs the workload's kernel at M tokens (N, K are the workload's): keep M small


@pytest.mark.parametrize("shape,k_group,stages", [((256, 1024, 512), 1, None), ((128, 1280, 640), 2, 4),
                                                  ((192, 2048, 1024), 1, 2)])
def test_kernel_alone_matches_reference(system, windows, shape, k_group, stages):
    """(The 8 us watchdog also checks that a window's progress reaches the watchdog.)"""
    ref = _run_gemm(system, *shape, window=False, k_group=k_group, stages=stages)
    assert not windows
    win = _run_gemm(system, *shape, window=True, k_group=k_group, stages=stages)
    assert windows == ["gpu0.gemm"]
    assert win[:-1] == ref[:-1]
    assert win[-1] < ref[-1] / 10  # simpy events: a handful instead of ~10 per k-group


@pytest.mark.parametrize("acc", [False, True], ids=["cached", "accumulate"])
def test_window_lookahead_equals_the_reference_cadence(system, windows, acc):
    """The window's pump looks ahead as the port's does (``MemorySystem.advance(now, now + frontend)``, a unit
    with only write-backs left stopping at ``now``): the same results as the reference path at the reference
    cadence (no lookahead), in far fewer pump steps than the window without it."""
    shape, pumps = (256, 1024, 512), []
    ref = _run_gemm(system, *shape, window=False, acc=acc, lookahead=False)
    off = _run_gemm(system, *shape, window=True, acc=acc, lookahead=False, pumps=pumps)
    on = _run_gemm(system, *shape, window=True, acc=acc, pumps=pumps)
    assert windows == ["gpu0.gemm"] * 2
    assert on[:-1] == off[:-1] == ref[:-1]
    assert pumps[1] < pumps[0] / 2, pumps


@pytest.mark.parametrize("shape,k_group", [((256, 1024, 512), 1), ((128, 1280, 640), 2)])
def test_accumulating_output_matches_reference(system, windows, shape, k_group):
    """C += the tile (FiCCO's K-sharded GEMMs, AccumulatingOutput): each WG reads its C lines, retires when they
    are back, then writes them; windowed as on the reference path, with a process beside it (every 1499 ps) seeing
    the same progress, and the same count of C lines read."""
    ref = _run_gemm(system, *shape, window=False, k_group=k_group, noise_ps=1499, acc=True)
    assert not windows
    win = _run_gemm(system, *shape, window=True, k_group=k_group, noise_ps=1499, acc=True)
    assert windows == ["gpu0.gemm"]
    assert ref[8] > 0 and win[:-1] == ref[:-1]
    plain = _run_gemm(system, *shape, window=True, k_group=k_group)
    assert plain[1] < ref[1]  # the reads of C cost time


@pytest.mark.parametrize("mma_rate", [0.5, 0.37])
def test_mma_rate_matches_reference(system, windows, mma_rate):
    """A kernel below the SM's tensor rate (``mma_rate``): the window's math cycles are the simpy slots' (one
    function, ``GemmKernel.math_cycles``), so the results are identical, and slower than at the full rate."""
    ref = _run_gemm(system, 128, 1280, 640, window=False, k_group=2, mma_rate=mma_rate, noise_ps=1499)
    assert not windows
    win = _run_gemm(system, 128, 1280, 640, window=True, k_group=2, mma_rate=mma_rate, noise_ps=1499)
    assert windows == ["gpu0.gemm"]
    assert win[:-1] == ref[:-1]
    full = _run_gemm(system, 128, 1280, 640, window=True, k_group=2)
    assert full[1] < ref[1]


def test_split_k_kernels_take_the_reference_path(system, windows):
    """A split kernel is never windowed (its slices write a workspace, a reduction kernel follows): with windows
    on it runs the simpy path, with the same results as with windows off."""
    ref = _run_gemm(system, 128, 1024, 512, window=False, split_k=2)
    win = _run_gemm(system, 128, 1024, 512, window=True, split_k=2)
    assert not windows
    assert win == ref


def test_simpy_processes_beside_the_window_see_the_reference_order(system, windows):
    """A process waking every 997 ps (so at many of the window's own ticks) sees the same progress at each
    wake-up: compiled and simpy events interleave exactly."""
    ref = _run_gemm(system, 256, 1024, 512, window=False, noise_ps=997)
    win = _run_gemm(system, 256, 1024, 512, window=True, noise_ps=997)
    assert windows == ["gpu0.gemm"]
    assert len(ref[-2]) > 1000
    assert win[:-1] == ref[:-1]


def test_growth_and_compaction_paths_match(system, windows, monkeypatch):
    """Request-array compaction during a window (tiny threshold) changes nothing. (The window makes room before
    an event rather than inside a submission, so it compacts at other moments: the request slots in use differ,
    nothing simulated does.)"""
    monkeypatch.setattr(MemorySystem, "compact_min", 1 << 10)
    ref = _run_gemm(system, 256, 1024, 1024, window=False)
    win = _run_gemm(system, 256, 1024, 1024, window=True)
    assert windows and win[:-1] == ref[:-1]


def test_short_windows_and_a_late_first_wg_match(system, windows, monkeypatch):
    """Windows of at most 50 compiled events (the bridge re-armed ~thousands of times) and a kernel started
    at WG 5 (``start(first_wg)``, as a steady-state simulation does): as the reference."""
    monkeypatch.setattr(gemm_window, "EVENTS_PER_CALL", 50)
    ref = _run_gemm(system, 256, 1024, 512, window=False, first_wg=5, noise_ps=1499)
    win = _run_gemm(system, 256, 1024, 512, window=True, first_wg=5, noise_ps=1499)
    assert windows and win[:-1] == ref[:-1]


def test_a_broken_exclusive_promise_fails_loudly(system):
    with pytest.raises(RuntimeError, match="windowed GEMM"):
        _run_gemm(system, 256, 1024, 512, window=True, touch_at=5000)


@pytest.mark.parametrize("scheme", ["sequential", "ideal_rs_nmc"])
def test_sub_layer_statistics_identical_to_reference(scheme, windows):
    """A whole small sub-layer (the path real runs take: run_program marks the one-stream GEMM exclusive):
    stats.json identical except the simpy event count."""
    from t3sim.system import simulate

    base = ["workload.model.hidden_size=1024", "workload.tokens=256", "workload.tp=2", "system.interconnect.num_gpus=2",
            f"scheme.kind={scheme}"]
    a = simulate(load_experiment(TABLE1, base + ["simulation.gemm_window=false"])).stats.to_dict()
    assert not windows
    b = simulate(load_experiment(TABLE1, base)).stats.to_dict()
    assert windows == ["gpu0.gemm"]
    ea, eb = a["sim"].pop("events"), b["sim"].pop("events")
    assert eb["value"] < ea["value"]
    assert a == b


@pytest.mark.parametrize("sublayer", ["FC-2", "OP"])
def test_explicit_mode_runs_every_gpu_windowed(windows, sublayer):
    """Explicit mode: every GPU's GEMM of the exclusive phase runs in its own window behind one bridge
    (``gemm_window._Group``), one window after another over the same stretch of time; ``stats.json`` equal to the
    reference path's (windows off) but for the count of simpy events."""
    import json

    from t3sim.system import simulate

    out = []
    for on in ("true", "false"):
        cfg = load_experiment(TABLE1, ["workload.model.hidden_size=1024", "workload.tokens=256", "workload.tp=4",
                                       "system.interconnect.num_gpus=4", "simulation.mode=explicit",
                                       f"workload.sublayer={sublayer}", f"simulation.gemm_window={on}"])
        st = simulate(cfg).stats.to_dict()
        st["sim"].pop("events")
        out.append(json.dumps(st, sort_keys=True, default=str))
    assert windows == [f"gpu{g}.gemm" for g in range(4)]
    assert out[0] == out[1]


def test_progress_reports_arrive_while_a_windowed_gemm_runs(monkeypatch):
    """A windowed GEMM hands control back to simpy at least every EVENTS_PER_CALL compiled events, also when its
    arrays grow, so the progress display sees the GEMM part-way (without it, a whole full-size GEMM ran inside one
    simpy event and the display showed nothing for its 12 s)."""
    from t3sim.config import load_experiment
    from t3sim.sim import report
    from t3sim.system.core import simulate
    from tests.conftest import REPO

    monkeypatch.setattr(report, "POLL_S", 0.0)
    seen = []
    exp = load_experiment(REPO / "configs/experiments/default.yaml", ["workload.tokens=512"])
    with report.reporting(lambda st: seen.append(st.text)):
        simulate(exp)
    part = [t for t in seen if "GEMM " in t and not t.split("GEMM ")[1].startswith(("0/", "1088/"))]
    assert any(t.split("GEMM ")[1].split("/")[0] != t.split("GEMM ")[1].split("/")[1].split(" ")[0] for t in part), seen[:5]


def _run_two(window: bool, noise_ps, wq_bound: int = 0):
    """Two GPUs' GEMMs of different sizes in one environment (GPU 1's is shorter and ends first, with write-backs
    of its small L2 still in flight), and a process waking every ``noise_ps`` (if any) that records both kernels'
    progress. ``wq_bound``: the L2's write queue bound (``l2.write_queue_accesses``)."""
    from simpy.events import AllOf

    base = load_experiment(TABLE1).system
    system = base.model_copy(update={"l2": base.l2.model_copy(update={"size_MiB": 0.125,
                                                                      "write_queue_accesses": wq_bound})})
    eng = Engine(seed=0, watchdog_idle_ticks=8_000_000)
    env = eng.env
    gks, hiers = [], []
    for g, tokens in enumerate((256, 128)):
        exp = load_experiment(TABLE1, [f"workload.tokens={tokens}"])
        k = system_kernel(exp.workload, exp.system)
        hier = MemoryHierarchy(env, system)
        gk = GemmKernel(eng, f"gpu{g}.gemm", hier, system.gpu, k, row_major(k.tiles_m, k.tiles_n), 0, 1 << 30,
                        1 << 31, CachedLocalOutput(hier))
        gk.window, gk.exclusive = (gemm_window.run_windowed if window else None), True
        gks.append(gk)
        hiers.append(hier)
    seen = []

    def noise():
        while True:
            yield env.timeout(noise_ps)
            seen.append((env.now, *(gk.progress for gk in gks)))

    if noise_ps:
        env.process(noise())
    AllOf(env, [gk.start() for gk in gks]).callbacks.append(lambda _e: eng.finish())
    eng.run()
    ends = [(gk.run.start_tick, gk.run.end_tick, gk.run.stage_end_ticks, gk.run.load_requests) for gk in gks]
    return ends, [h.stats().to_dict() for h in hiers], [dict(h.traffic) for h in hiers], seen, [h.wq_out for h in hiers]


@pytest.mark.parametrize("noise_ps", [None, 1499])
def test_windows_of_two_gpus_match_the_reference(windows, monkeypatch, noise_ps):
    """Two GPUs' windows behind one bridge (``gemm_window._Group``): each runs to the simpy heap's first event in
    turn; one that ends hands its GPU back at its own end tick, also when the other already ran further. Without
    a process beside them, and each window run on until it reaches the heap's first event (not only one budget
    or array growth's worth), GPU 0 runs to its end first, and GPU 1, which ends earlier, then ends behind the
    simulated time GPU 0 reached (``ahead``). Every kernel time, statistic and the process's view as on the
    reference path."""
    ahead = []
    W = gemm_window.GemmWindow
    finish, window = W._finish, W._window

    def fin(self):
        ahead.append(bool(self.env._now > self.W[gemm_window.WK.W_END]))
        finish(self)

    def greedy(self):
        while not window(self):
            q = self.env._queue
            if q and self.key() >= q[0][:3]:
                return False
        return True

    monkeypatch.setattr(W, "_finish", fin)
    if noise_ps is None:
        monkeypatch.setattr(W, "_window", greedy)
    ref = _run_two(False, noise_ps)
    assert not windows
    win = _run_two(True, noise_ps)
    assert windows == ["gpu0.gemm", "gpu1.gemm"]
    assert ref[0][1][1] < ref[0][0][1]  # GPU 1 ends first
    assert ahead == ([False, True] if noise_ps is None else [False, False])
    assert win == ref


def _with_wq_bound(system, bound: int, l2_MiB: float):
    return system.model_copy(update={"l2": system.l2.model_copy(update={"size_MiB": l2_MiB,
                                                                        "write_queue_accesses": bound})})


@pytest.mark.parametrize("acc", [False, True], ids=["cached", "accumulate"])
@pytest.mark.parametrize("bound,allocate", [(1, True), (512, True), (64, False)])
def test_write_queue_bound_matches_reference(system, windows, acc, bound, allocate):
    """The L2's write queue bound (``l2.write_queue_accesses``, MemoryHierarchy's module doc) in the window: a
    store-heavy GEMM (K = 128) through an L2 of one or two sets per bank, so its stores and the C reads evict dirty
    lines (or, without write allocation, its stores go to DRAM as they come); accesses that find the queue over the
    bound wait for it to drain (a posted store's WG too), as on the reference path (``l2.write_queue.*``, both
    paths' statistics); a process beside it sees the same progress."""
    small = system.gemm_library.kernels
    system = system.model_copy(update={"l2": system.l2.model_copy(update={"write_allocate": allocate})})
    s = _with_wq_bound(system, bound, 0.375 if small else 0.125)
    shape = (1024, 2048, 128) if small else (256, 0, 0)
    ref = _run_gemm(s, *shape, window=False, acc=acc, noise_ps=1499)
    assert not windows and ref[4]["l2"]["write_queue"]["stalled_accesses"]["value"] > 0
    free = _run_gemm(_with_wq_bound(system, 0, 0.375 if small else 0.125), *shape, window=False, acc=acc)
    assert free[:-1] != ref[:-1] and free[1] <= ref[1]  # the stalls moved the run
    win = _run_gemm(s, *shape, window=True, acc=acc, noise_ps=1499)
    assert windows == ["gpu0.gemm"]
    assert win[:-1] == ref[:-1]


def test_windows_of_two_gpus_hand_back_write_backs_counted_against_the_bound(windows, monkeypatch):
    """A window that ends with write-backs in flight hands them back to its hierarchy still counted against the
    bound (``MemoryHierarchy.count_write``), where they drain; everything as on the reference path."""
    left = []
    W = gemm_window.GemmWindow
    finish = W._finish

    def fin(self):
        left.append(int(self.W[gemm_window.WK.W_WQOUT]))
        finish(self)

    monkeypatch.setattr(W, "_finish", fin)
    ref = _run_two(False, 1499, wq_bound=4096)
    win = _run_two(True, 1499, wq_bound=4096)
    assert windows == ["gpu0.gemm", "gpu1.gemm"]
    assert any(left), left  # a window ended with counted write-backs in flight
    assert win == ref
    assert ref[0] != _run_two(False, 1499)[0]  # the bound moved the kernels


@settings(max_examples=8, deadline=None)
@given(bound=st.integers(1, 3000), m=st.sampled_from([256, 512, 1024]), k=st.sampled_from([64, 128, 256]),
       acc=st.booleans(), allocate=st.booleans())
def test_write_queue_bound_matches_reference_over_shapes_and_bounds(bound, m, k, acc, allocate):
    """Hypothesis over the bound, the GEMM's M and K, the sink and the L2's write allocation (H200, an L2 of two
    sets per bank): the window and the reference path agree whatever stalls the bound causes."""
    base = load_system(H200)
    base = base.model_copy(update={"l2": base.l2.model_copy(update={"write_allocate": allocate})})
    s = _with_wq_bound(base, bound, 0.375)
    ref = _run_gemm(s, m, 2048, k, window=False, acc=acc)
    seen, win = _run_windowed(s, m, 2048, k, acc=acc)
    assert seen == ["gpu0.gemm"]
    assert win[:-1] == ref[:-1]


def _with_port(system, B_per_cycle: int):
    return system.model_copy(update={"gpu": system.gpu.model_copy(update={"l2_to_cu_B_per_cycle": B_per_cycle})})


@pytest.mark.parametrize("acc", [False, True], ids=["cached", "accumulate"])
@pytest.mark.parametrize("port", [8, 64])
def test_cu_port_matches_reference(system, windows, acc, port):
    """Each CU's port from the L2 (``gpu.l2_to_cu_B_per_cycle``, MemoryHierarchy's module doc) in the window: a WG's
    load batch is back no sooner than its CU's port has passed it after the batches before it, as on the reference
    path; at 8 B per cycle the port binds (the run is slower than without it); a process beside it sees the same
    progress."""
    s = _with_port(system, port)
    shape = (512, 2048, 512) if system.gemm_library.kernels else (256, 0, 0)
    ref = _run_gemm(s, *shape, window=False, acc=acc, noise_ps=1499)
    assert not windows
    free = _run_gemm(system, *shape, window=False, acc=acc)
    if port == 8:
        assert free[1] < ref[1]  # the port moved the kernel's end
    win = _run_gemm(s, *shape, window=True, acc=acc, noise_ps=1499)
    assert windows == ["gpu0.gemm"]
    assert win[:-1] == ref[:-1]


@settings(max_examples=8, deadline=None)
@given(port=st.integers(16, 256), m=st.sampled_from([128, 256, 512]), k=st.sampled_from([128, 512, 1024]),
       acc=st.booleans(), k_group=st.sampled_from([1, 2]))
def test_cu_port_matches_reference_over_shapes_and_rates(port, m, k, acc, k_group):
    """Hypothesis over the port's rate, the GEMM's M and K, the sink and the k-group (H200): the window and the
    reference path agree. (Below 16 B per cycle a load batch of the large kernel takes longer than the test
    engine's 8 us stall watchdog.)"""
    s = _with_port(load_system(H200), port)
    ref = _run_gemm(s, m, 2048, k, window=False, acc=acc, k_group=k_group)
    seen, win = _run_windowed(s, m, 2048, k, acc=acc, k_group=k_group)
    assert seen == ["gpu0.gemm"]
    assert win[:-1] == ref[:-1]
