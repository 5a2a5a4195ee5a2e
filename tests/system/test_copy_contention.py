"""A GEMM beside copies: SM copy kernels, copy engines, host copies.

A scaled-down H200 (the h200-1gpu preset with 16 CUs, 16 HBM channels and a 10 MiB L2) and small shapes
keep each run to seconds; what matters is
the mechanism: an SM copy kernel and a GEMM on one launch-order dispatcher nearly serialise (the
measured H200 behaviour), copy-engine copies only share the memory, host copies barely touch it.
The full-size H200 rows are checked by the slow test at the end.
"""

from __future__ import annotations

import pytest

from t3sim.config import load_system
from t3sim.config.system import SystemConfig
from t3sim.dma.copy_kernel import SMCopyKernel
from t3sim.compute.dispatcher import CuDispatcher, Footprint
from t3sim.compute.memhier import MemoryHierarchy
from t3sim.sim.engine import Engine
from t3sim.validation.contention import simulate_contention, simulate_copies_alone

MiB = 1 << 20
M, N, K = 1024, 3072, 64  # 8 x 12 = 96 tiles of 128 x 256: six full stages on 16 CUs
COPY = (("d2d", 4 * MiB),)


SMALL = ["gpu.num_cus=16", "collective.cus=16", "hbm.channels=16", "l2.banks=16", "l2.size_MiB=10"]


def _system(path: str, **ce) -> SystemConfig:
    return load_system("configs/systems/h200-1gpu.yaml", SMALL + [f"copy_engine.{k}={v}" for k, v in ce.items()])


@pytest.fixture(scope="module")
def alone():
    return simulate_contention(_system("sm", d2d_path="sm"), M, N, K, None, "bf16").gemm_us


def test_sm_copy_kernel_slows_gemm_in_lockstep(alone):
    """Lockstep: the copy kernel is queued behind the previous GEMM's last stage and the GEMM behind the copy.
    The last stage fills every CU, so the copy starts as its CTAs retire, and the GEMM's interval grows by a good part of
    the copy, never by more than all of it."""
    system = _system("sm", d2d_path="sm")
    copy_us = simulate_copies_alone(system, COPY)["copy_us"]
    o = simulate_contention(system, M, N, K, COPY, "bf16")
    assert alone + 0.15 * copy_us < o.gemm_us < alone + copy_us
    assert o.copy_us == o.gemm_us  # a copy's CUDA-event interval is the lockstep period


def test_copy_engine_copies_only_share_memory(alone):
    """On copy engines the same copies run beside the GEMM: slower than alone, far from serialised."""
    system = _system("ce", d2d_path="ce", max_outstanding_requests=8192)
    copy_us = simulate_copies_alone(system, COPY)["copy_us"]
    o = simulate_contention(system, M, N, K, COPY, "bf16")
    assert alone < o.gemm_us < alone + 0.5 * copy_us
    assert o.copy_us > copy_us  # the copies slow down too


def test_host_copies_barely_slow_the_gemm(alone):
    system = _system("ce")
    o = simulate_contention(system, M, N, K, (("h2d", 4 * MiB), ("d2h", 4 * MiB)), "bf16")
    assert o.gemm_us == pytest.approx(alone, rel=0.1)  # a 6 us GEMM; full size: the validation rows


def _sm_copy_gpu():
    """A GPU of the small preset whose D2D copies are SM copy kernels on its dispatcher: (system, engine,
    dispatcher, SMCopyKernel of GPU 0)."""
    system = _system("sm", d2d_path="sm")
    eng = Engine(seed=0)
    hier = MemoryHierarchy(eng.env, system)
    disp = CuDispatcher(system.gpu)
    sm = SMCopyKernel(eng, 0, hier, disp, system.gpu, system.copy_engine)
    return system, eng, disp, sm


def test_sm_copy_kernel_waits_for_full_cus():
    """The measured probe: a D2D copy issued while a kernel holds every CU's thread slots makes no progress
    until that kernel ends (experiments/validation/copy_contention/probe_memcpy_kind.json)."""
    system, eng, disp, sm = _sm_copy_gpu()
    env = eng.env
    ncu = system.gpu.num_cus
    left = [ncu]
    h = disp.register("spin", Footprint(system.gpu.max_threads_per_cu, 1, 0), lambda: left[0], lambda cu: None)
    hog_end = env.event()

    def spin(cu):
        yield env.timeout(50_000_000)  # 50 us
        disp.release(h, cu)
        if not disp.resident(h):
            hog_end.succeed(env.now)

    for _ in range(ncu):
        cu = disp.acquire(h)
        left[0] -= 1
        env.process(spin(cu))
    ev = sm.copy(0, 512 * MiB, 1 * MiB)
    done = env.all_of([hog_end, ev])
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    c = ev.value
    assert sm.launches[0].first_dispatch_tick >= hog_end.value
    assert c.end_tick > hog_end.value
    assert (sm.read_B, sm.written_B) == (1 * MiB, 1 * MiB)
    assert sm.max_in_flight() <= sm.credits
    assert sm.launches[0].next_cta == sm.launches[0].n_ctas == sm.n_ctas and sm.launches[0].running == 0
    assert (disp.free == disp.cap).all()  # every CTA handed its CU back


def test_sm_copy_ctas_share_cus_by_room_and_launch_order():
    """Two copy kernels on an idle GPU: the first one's CTAs spread one per CU, then a second per CU (the CU with
    the most room); the second kernel's CTAs only take what the first leaves (launch order), and a CU never
    holds more copy CTAs than its threads, registers and slots allow."""
    system, eng, disp, sm = _sm_copy_gpu()
    env = eng.env
    placed = []
    real = sm._place

    def spy(k, c, cu):
        placed.append((k.name, cu, env.now))
        real(k, c, cu)

    sm._place = spy
    evs = [sm.copy(0, 512 * MiB, 4 * MiB), sm.copy(64 * MiB, 576 * MiB, 4 * MiB)]
    done = env.all_of(evs)
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    ncu = system.gpu.num_cus
    first = [cu for name, cu, _t in placed if name == sm.launches[0].name]
    assert first == [j % ncu for j in range(2 * ncu)]  # sm_copy_ctas_per_cu = 2
    per_cu = disp.cap[0] // sm.footprint.threads  # 2048 / 512 = 4 CTAs of the copy kernel fit on a CU
    t_first = max(t for name, _cu, t in placed if name == sm.launches[0].name)
    second = [(cu, t) for name, cu, t in placed if name == sm.launches[1].name]
    assert len(second) == 2 * ncu and all(t >= t_first for _cu, t in second)
    assert [cu for cu, t in second if t == second[0][1]][:ncu * (per_cu - 2)] == [j % ncu for j in range(ncu * (per_cu - 2))]
    assert all(e.value.read_B == e.value.written_B == 4 * MiB for e in evs)


@pytest.mark.slow
def test_h200_row_k192_d2d1_full_size():
    """Full size (about 2 min): OP at TP=16 (K=192) beside one stream of 256 MiB copies on the H200
    preset, against the re-measured GEMM interval (168.0 us, experiments/validation/copy_contention)."""
    system = load_system("configs/systems/h200-4gpu.yaml", [])
    o = simulate_contention(system, 16384, 3072, 192, "d2d1")
    assert o.gemm_us == pytest.approx(168.0, rel=0.15)


def test_gemm_first_wg_runs_only_the_last_stage():
    """GemmKernel.start(first_wg): only WGs first_wg.. run (a steady-state simulation starts from a kernel's last
    stages); alone on a dispatcher it takes as long as on a private one."""
    from t3sim.compute.gemm_kernel import GemmKernel
    from t3sim.compute.sinks import CachedLocalOutput
    from t3sim.system.kernels import gemm_kernel_record
    from t3sim.workload.wg_order import row_major

    system = _system("sm")
    k = gemm_kernel_record(system, M, N, K, "bf16")
    times, runs = {}, {}
    for mode in ("own", "dispatch", "tail"):
        eng = Engine(seed=0)
        hier = MemoryHierarchy(eng.env, system)
        g = GemmKernel(eng, "g", hier, system.gpu, k, row_major(k.tiles_m, k.tiles_n), 0, 1 << 26, 1 << 27,
                       CachedLocalOutput(hier), dispatcher=None if mode == "own" else CuDispatcher(system.gpu))
        g.wg_spans = []
        done = g.start(first_wg=0 if mode != "tail" else k.num_wgs - 16)
        done.callbacks.append(lambda _e, eng=eng: eng.finish())
        eng.run()
        times[mode] = done.value.duration_ticks
        runs[mode] = (done.value, g.wg_spans)
    r, spans = runs["tail"]
    assert r.wgs == 16 and sorted(seq for _cu, seq, _t0, _t1 in spans) == list(range(k.num_wgs - 16, k.num_wgs))
    assert 0 < r.stage_end_ticks[-1] <= r.end_tick  # only the last stage ran
    assert r.stage_end_ticks[:-1] == [-1] * (len(r.stage_end_ticks) - 1)
    assert times["dispatch"] == times["own"]
    assert times["tail"] < times["own"] / 2  # one stage of six, plus the launch overhead
    with pytest.raises(ValueError, match="first_wg"):
        GemmKernel(Engine(seed=0), "g", MemoryHierarchy(Engine(seed=0).env, system), system.gpu, k,
                   row_major(k.tiles_m, k.tiles_n), 0, 1 << 26, 1 << 27, None).start(first_wg=k.num_wgs)
