"""``flux_ag`` (issue 13 item 2): FLUX's fused AllGather+GEMM -- bytes moved, signal waits, bounds, rejections;
and the ``ag_gemm`` workload direction it runs on."""

from __future__ import annotations

import subprocess
import sys

import pytest

from t3sim.config.workload import ModelConfig
from t3sim.errors import InputError
from t3sim.schemes import scheme_for
from t3sim.schemes.program import Kernel, Program, run_program
from t3sim.system.model import SystemModel
from t3sim.workload.generate import kernel_for
from tests.conftest import REPO
from tests.system.helpers import exp

# FC-1's consumer GEMM of a 512-wide model at TP=4, 1024 tokens: A is 1024 x 512 (shards of 256 rows = two
# 128-row GEMM tile rows), C is 1024 x 512 (8 x 4 tiles); 8 CUs, so the first stage covers a few shards
SMALL = ("workload.sublayer=FC-1", "workload.tokens=1024", "workload.model.hidden_size=512", "system.gpu.num_cus=8",
         "workload.direction=ag_gemm", "simulation.mode=explicit", "workload.tp=4", "system.interconnect.num_gpus=4")


def _model(*extra):
    return SystemModel(exp(*SMALL, *extra))


def _run(*extra):
    m = _model("scheme.kind=flux_ag", *extra)
    phases = scheme_for("flux_ag").run(m)
    m.network.check_conserved()
    return m, phases


@pytest.fixture(scope="module")
def runs():
    return {mode: _run(f"scheme.flux_ag_mode={mode}") for mode in ("push", "pull")}


@pytest.fixture(scope="module")
def gemm_alone():
    m = _model()
    p = Program()
    p.add("s", Kernel("gemm", "gemm", "gemm", m.gemm))
    r = run_program(m, p)
    return r.end - r.start


def test_ag_gemm_workload_shape():
    """The consumer GEMM: M = T, N = H*f/TP, K = H, the other pass; gemm_rs unchanged."""
    mc = ModelConfig(name="x", hidden_size=512, layers=1, seq_len=1024, batch=1, tp_degrees=[4])
    rs, ag = kernel_for(mc, 4, "FC-1"), kernel_for(mc, 4, "FC-1", direction="ag_gemm")
    assert (rs.M, rs.N, rs.K, rs.pass_) == (1024, 512, 512, "bwd") and rs.collective == "all-reduce"
    assert (ag.M, ag.N, ag.K, ag.pass_) == (1024, 512, 512, "fwd") and ag.trans_a and ag.collective is None
    ip = kernel_for(mc, 4, "IP", direction="ag_gemm")
    assert (ip.N, ip.K) == (3 * 512 // 4, 512)
    with pytest.raises(InputError):
        kernel_for(mc, 4, "FC-1", direction="sideways")


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_bytes_moved_are_the_missing_shards(runs, mode):
    """Every GPU receives exactly (N-1)/N of A; push sends it over the fabric, pull reads it through p2d copies."""
    m, _ = runs[mode]
    ctx = m.context
    a_B = m.kernel.M * m.kernel.K * m.elem_B
    for g in m.sim_gpus:
        assert ctx.received_B[g] == a_B * 3 // 4
        if mode == "pull":
            assert ctx.engines[g].pulled_B == a_B * 3 // 4 and ctx.engines[g].peer_B == 0
        else:
            assert ctx.engines[g].peer_B == a_B * 3 // 4 and ctx.engines[g].pulled_B == 0
    assert ctx.fabric.sent_B == ctx.fabric.landed_B == (4 * a_B * 3 // 4 if mode == "push" else 0)
    assert ctx.copies == 4 * 3 * ctx.tiles_per_shard


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_every_wg_starts_after_its_signals(runs, mode):
    """From the records: each WG passes its prologue at or after the set tick of every signal its A rows need
    (local-shard signals are preset at the start); some WGs really waited; all signals got set."""
    m, _ = runs[mode]
    ctx = m.context
    k = m.kernel
    waited = 0
    for g in m.sim_gpus:
        assert all(t >= 0 for t in ctx.set_tick[g])
        log = ctx.waits[g]
        assert sorted(s for s, *_ in log) == list(range(k.num_wgs))  # every WG passed its prologue once
        for _seq, tile, t0, t1 in log:
            need = list(ctx.needed(tile))
            assert need and t1 >= max(ctx.set_tick[g][t] for t in need) and t1 >= t0
            local = all(t in ctx.shard_tiles(g) for t in need)
            if local:
                assert t1 == t0  # the local shard is ready at once
            waited += t1 > t0
        for t in ctx.shard_tiles(g):
            assert ctx.set_tick[g][t] == 0
    assert waited > 0


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_never_faster_than_gemm_alone(runs, gemm_alone, mode):
    m, p = runs[mode]
    assert p.total >= gemm_alone and p.rs == 0
    recs = {r.name: r for r in m.kernel_records}
    assert recs["flux_ag"].start == recs["flux_gemm"].start  # the copies are issued at the kernel's launch
    assert recs["flux_ag"].end <= recs["flux_gemm"].end  # the kernel cannot end before its inputs arrived


def test_faster_than_sequential(runs):
    """The copies overlap the GEMM: the fused kernel beats AG-then-GEMM on this shape."""
    m = _model("scheme.kind=sequential")
    seq = scheme_for("sequential").run(m)
    assert seq.ag > 0 and seq.gemm > 0 and seq.total == seq.ag + seq.gemm  # phases end in order ag -> gemm
    assert runs["push"][1].total < seq.total and runs["pull"][1].total < seq.total


def test_comm_tile_rows_changes_signals():
    """M/N = 256 rows: the default (one tile per shard) gives 4 signals, 128 rows gives 8, and twice the copies."""
    m1, _ = _run("scheme.flux_comm_tile_rows=256")
    m2, _ = _run("scheme.flux_comm_tile_rows=128")
    assert (m1.context.T, m2.context.T) == (4, 8)
    assert m2.context.copies == 2 * m1.context.copies
    for g in m2.sim_gpus:  # the same bytes either way
        assert m1.context.received_B[g] == m2.context.received_B[g]


@pytest.mark.parametrize("extra,field", [
    (("scheme.flux_comm_tile_rows=100",), "scheme.flux_comm_tile_rows"),   # not a divisor of M/N
    (("scheme.flux_comm_tile_rows=512",), "scheme.flux_comm_tile_rows"),   # above M/N
    (("scheme.flux_comm_tile_rows=64",), "scheme.flux_comm_tile_rows"),    # below the GEMM tile
    (("simulation.mode=homogeneous",), "simulation.mode"),
    (("simulation.functional_data=true",), "simulation.functional_data"),
    (("workload.sublayer=OP",), "workload.sublayer"),                      # A column-major: rows not contiguous
])
def test_bad_values_rejected(extra, field):
    with pytest.raises(InputError) as e:
        _run(*extra)
    assert e.value.where == field


def test_direction_checked_both_ways():
    """flux_ag needs ag_gemm; schemes of the gemm_rs direction reject ag_gemm; flux_ag's options only with it."""
    from t3sim.system.checks import check_experiment

    with pytest.raises(InputError, match="workload.direction"):
        check_experiment(exp("scheme.kind=flux_ag"))
    with pytest.raises(InputError, match="workload.direction"):
        check_experiment(exp(*SMALL, "scheme.kind=t3"))
    check_experiment(exp(*SMALL, "scheme.kind=sequential"))
    with pytest.raises(InputError, match="scheme.flux_ag_mode"):
        scheme_for("sequential").check_options(exp("scheme.flux_ag_mode=pull").scheme)


def test_cli_rejects_bad_tile_rows_with_exit_2():
    args = [sys.executable, "-m", "t3sim.cli", "run", str(REPO / "configs/experiments/default.yaml")]
    for s in (*SMALL, "scheme.kind=flux_ag", "scheme.flux_comm_tile_rows=100"):
        args += ["--set", s]
    r = subprocess.run(args + ["--out", "/tmp/t3sim_flux_ag_bad", "--force"], capture_output=True, text=True)
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("t3sim: error:") and "flux_comm_tile_rows" in last and "Traceback" not in r.stderr


def test_sequential_ag_gemm_homogeneous_matches_explicit():
    """The AG-then-GEMM baseline runs in both modes; by symmetry the times agree within 1 %."""
    base = tuple(s for s in SMALL if not s.startswith("simulation.mode")) + ("scheme.kind=sequential",)
    out = {}
    for mode in ("homogeneous", "explicit"):
        out[mode] = scheme_for("sequential").run(SystemModel(exp(*base, f"simulation.mode={mode}")))
    assert out["homogeneous"].ag > 0 and out["homogeneous"].total == pytest.approx(out["explicit"].total, rel=0.01)
