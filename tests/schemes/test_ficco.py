"""``ficco``: FiCCO's four AllGather+GEMM schedules -- functional exactness on 2, 4 and 8 GPUs,
bytes moved, GEMM counts, flags before GEMMs, bounds, modes, determinism, rejections."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t3sim.errors import InputError
from t3sim.interconnect.network import Network
from t3sim.schemes.runtime import scheme_for
from t3sim.schemes.ficco.heuristic import SCHEDULES
from t3sim.schemes.ficco.ficco import GEMMS, FiccoContext
from t3sim.schemes.runtime.program import Kernel, Program, run_program
from t3sim.system.model import SystemModel
from tests.system.helpers import exp


def _cfg(n, sched, *extra, tokens=256):
    # FC-1's consumer GEMM of a 512-wide model: A is tokens x 512, C is tokens x 2048/n; 8 CUs
    return ("workload.sublayer=FC-1", f"workload.tokens={tokens}", "workload.model.hidden_size=512",
            "system.gpu.num_cus=8", "workload.direction=ag_gemm", f"workload.tp={n}",
            f"system.interconnect.num_gpus={n}", "scheme.kind=ficco", f"scheme.ficco_schedule={sched}", *extra)


def _run(n, sched, *extra, tokens=256):
    m = SystemModel(exp(*_cfg(n, sched, *extra, tokens=tokens)))
    run = scheme_for("ficco").simulate(m)
    m.network.check_conserved()
    return m, run


def _bytes_invariants(m):
    """Sent, received, gathered and scattered bytes and GEMM counts of every simulated GPU (module doc of ficco)."""
    ctx: FiccoContext = m.context
    n, k, eb = m.n, m.kernel, m.elem_B
    a_B, c_B = k.M * k.K * eb, k.M * k.N * eb
    gathered = {"uniform_fused_1d": a_B, "hetero_fused_1d": (n - 1) * a_B // n, "hetero_unfused_1d": 0,
                "uniform_fused_2d": a_B}[ctx.schedule]
    scattered = {"uniform_fused_1d": c_B, "hetero_fused_1d": (n - 1) * c_B // n}.get(ctx.schedule, 0)
    for g in m.sim_gpus:
        assert ctx.push.received_B[g] == ctx.push.engines[g].peer_B == (n - 1) * a_B // n
        assert ctx.gathered_B[g] == gathered
        assert ctx.scattered_B[g] == scattered
        assert len(ctx.gemms[g]) == GEMMS[ctx.schedule](n)
        assert sum(gm.chunk.kernel.M for gm in ctx.gemms[g]) == (n * k.M if ctx.two_d else k.M)  # every row once
        if not ctx.sm:  # the copy engines' local writes: the pushes landing here, the gathers, the scatters
            assert m.hiers[g].traffic["ag"]["write"] == (n - 1) * a_B // n + gathered + scattered
    assert ctx.push.fabric.sent_B == ctx.push.fabric.landed_B == n * (n - 1) * a_B // n


@pytest.mark.parametrize("sched", SCHEDULES)
@pytest.mark.parametrize("n", [2, 4, 8])
def test_functional_exact(n, sched):
    """Every GEMM's A operand holds the right gathered rows when it starts; at the end every GPU's gathered A is
    complete and every row of C was computed exactly once from the right data and lies at its place."""
    m, run = _run(n, sched, "simulation.mode=explicit", "simulation.functional_data=true",
                  *(("system.interconnect.kind=switch",) if n == 8 else ()))
    d = m.context.data
    k = m.kernel
    assert d.gemms_checked == n * GEMMS[sched](n)
    assert d.c_words == n * k.M * k.N * m.elem_B // 4
    assert d.a_words == n * k.M * k.K * m.elem_B // 4
    _bytes_invariants(m)
    assert run.phases().total > 0


@pytest.fixture(scope="module")
def timing_runs():
    return {(s, mode): _run(4, s, f"simulation.mode={mode}") for s in SCHEDULES for mode in ("explicit", "homogeneous")}


@pytest.mark.parametrize("sched", SCHEDULES)
def test_gemms_after_their_flags(timing_runs, sched):
    """No GEMM (nor the gather feeding it) starts before the flags of the pieces it reads; flags are set one path
    latency after the piece landed; each step's transfers follow the previous step's on their stream."""
    m, run = timing_runs[sched, "explicit"]
    ctx = m.context
    rec = {r.name: r for r in run.records}
    for g in m.sim_gpus:
        for gm in ctx.gemms[g]:
            ready = max((ctx.push.flag_tick[g][key] for key in gm.flags), default=run.start)
            assert rec[f"gpu{g}.{gm.name}"].start >= ready
            if f"gpu{g}.gather_s{gm.step}" in rec and gm.flags:
                assert rec[f"gpu{g}.gather_s{gm.step}"].start >= ready
            for p, s in gm.flags:
                assert ctx.push.flag_tick[g][p, s] == ctx.push.landed_tick[g][p, s] + \
                    m.network.path_latency_ticks(p, g)
        if sched.startswith("hetero"):
            assert rec[f"gpu{g}.gemm_local"].start == run.start  # the local shard at once
        for d in range(1, m.n):
            for s in range(1, m.n):
                assert rec[f"gpu{g}.push_s{s}_d{d}"].start == rec[f"gpu{g}.push_s{s - 1}_d{d}"].end


@pytest.mark.parametrize("sched", SCHEDULES)
def test_bytes_and_counts(timing_runs, sched):
    for mode in ("explicit", "homogeneous"):
        _bytes_invariants(timing_runs[sched, mode][0])


@pytest.mark.parametrize("sched", SCHEDULES)
def test_homogeneous_matches_explicit(timing_runs, sched):
    """By rotation symmetry GPU 0's time is the same in both modes, within 1 %."""
    h, e = timing_runs[sched, "homogeneous"][1], timing_runs[sched, "explicit"][1]
    assert h.phases().total == pytest.approx(e.phases().total, rel=0.01)


@pytest.mark.parametrize("sched", SCHEDULES)
def test_never_faster_than_its_gemms_back_to_back(timing_runs, sched):
    """The operation takes at least its GEMMs run back to back without communication."""
    m, run = timing_runs[sched, "homogeneous"]
    alone = SystemModel(exp(*_cfg(4, sched, "simulation.mode=homogeneous")))
    ctx = FiccoContext(alone)
    gemms, _g, _s = ctx.plan(0)
    p = Program()
    for gm in gemms:
        p.add("s", Kernel(gm.name, "gemm", "gemm", lambda gm=gm: alone.gemm(gm.name, chunk=gm.chunk)))
    r = run_program(alone, p)
    ph = run.phases()
    assert ph.rs == 0 and ph.total == run.end - run.start >= r.end - r.start > 0


@pytest.mark.parametrize("sched", SCHEDULES)
@pytest.mark.parametrize("path", ["ce", "sm"])
def test_elided_shadow_sends_change_no_statistic(sched, path, monkeypatch):
    """Homogeneous mode on a full mesh: the shadows' mirrored pushes to each other are elided
    (Network.elide_image) and their links report their images' statistics; every statistic but the event count,
    and every kernel's start and end, are what simulating those sends gives."""
    extra = ("simulation.mode=homogeneous", "system.interconnect.kind=direct", f"system.copy_engine.d2d_path={path}")
    m, run = _run(4, sched, *extra)
    assert m.network._images  # shadow-to-shadow links were imaged
    monkeypatch.setattr(Network, "elide_image", lambda self, src, dst, nbytes: False)
    m2, run2 = _run(4, sched, *extra)
    assert not m2.network._images
    a, b = m.stats().to_dict(), m2.stats().to_dict()
    assert a.pop("sim")["events"]["value"] < b.pop("sim")["events"]["value"]
    assert a == b
    assert [(r.name, r.start, r.end) for r in run.records] == [(r.name, r.start, r.end) for r in run2.records]


def test_deterministic():
    a, b = (_run(2, "uniform_fused_1d", "simulation.mode=explicit") for _ in range(2))
    assert a[0].stats().to_dict() == b[0].stats().to_dict()
    assert [(r.name, r.start, r.end) for r in a[1].records] == [(r.name, r.start, r.end) for r in b[1].records]


def test_unfused_flexible_with_streams():
    """hetero_unfused_1d over 2 compute streams: same bytes and GEMMs, piece GEMMs alternate streams."""
    m, run = _run(4, "hetero_unfused_1d", "simulation.mode=homogeneous", "scheme.compute_streams=2")
    _bytes_invariants(m)
    streams = {r.stream for r in run.records if r.kind == "gemm"}
    assert streams == {"gpu0.compute0", "gpu0.compute1"}


def test_functional_check_can_fail(monkeypatch):
    """A plan whose scatter puts two row blocks in each other's place fails the check; so does a tampered C."""
    orig = FiccoContext.plan

    def swapped(self, g):
        gemms, gathers, scatters = orig(self, g)
        (s0, d0, n0), (s1, d1, n1) = scatters[1][:2]
        scatters[1][:2] = [(s0, d1, n0), (s1, d0, n1)]
        return gemms, gathers, scatters

    monkeypatch.setattr(FiccoContext, "plan", swapped)
    with pytest.raises(AssertionError, match="C row"):
        _run(2, "uniform_fused_1d", "simulation.mode=explicit", "simulation.functional_data=true")
    monkeypatch.setattr(FiccoContext, "plan", orig)
    m, _ = _run(2, "hetero_unfused_1d", "simulation.mode=explicit", "simulation.functional_data=true")
    fs = m.hiers[1].mem.functional
    line = fs.read_addr(m.c_base).copy()
    fs.preload([m.c_base], [line * 2])  # row 0 "computed twice"
    with pytest.raises(AssertionError, match="C row 0"):
        m.context.data.check_end()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.sampled_from([2, 4]), mult=st.integers(1, 3), sched=st.sampled_from(SCHEDULES))
def test_bytes_invariants_vary(n, mult, sched):
    """Over token counts and GPU counts: the bytes and GEMM counts of every schedule."""
    m, run = _run(n, sched, "simulation.mode=homogeneous", "system.interconnect.kind=switch", tokens=64 * mult)
    _bytes_invariants(m)
    assert run.phases().total > 0


@pytest.mark.parametrize("extra,field", [
    (("workload.direction=gemm_rs",), "workload.direction"),  # FiCCO excludes RS: DMA engines cannot reduce
    (("scheme.compute_streams=2",), "scheme.compute_streams"),  # uniform_fused_1d runs its steps in order
    (("workload.tokens=200",), "workload.tokens"),  # M not a multiple of N^2
    (("simulation.functional_data=true",), "simulation.functional_data"),  # homogeneous mode
    (("workload.sublayer=OP",), "workload.sublayer"),  # A column-major
    (("scheme.chunks=8",), "scheme.chunks"),  # not ficco's option
])
def test_bad_values_rejected(extra, field):
    from t3sim.exec.checks import check_experiment

    with pytest.raises(InputError) as e:
        cfg = exp(*_cfg(4, "uniform_fused_1d", "simulation.mode=homogeneous", *extra))
        check_experiment(cfg)
        scheme_for("ficco").check_options(cfg.scheme)  # as t3sim.system.core does before simulating
        scheme_for("ficco").simulate(SystemModel(cfg))
    assert e.value.where == field


@pytest.mark.parametrize("sched", ["uniform_fused_1d", "uniform_fused_2d"])
def test_sm_copy_path(sched):
    """copy_engine.d2d_path=sm: the gathers and scatters run as SM copy kernels (kind copy) on the CUs; still exact."""
    m, run = _run(2, sched, "simulation.mode=explicit", "simulation.functional_data=true",
                  "system.copy_engine.d2d_path=sm")
    assert m.context.sm and {r.kind for r in run.records if "gather" in r.name} == {"copy"}
    _bytes_invariants(m)
    assert m.context.data.c_words > 0
