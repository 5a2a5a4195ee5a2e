"""``flux_rs``: FLUX's fused GEMM+RS -- exact reductions, conservation, bounds, swizzle, rejections."""

from __future__ import annotations

import subprocess
import sys

import pytest

from t3sim.errors import InputError
from t3sim.schemes.runtime import scheme_for
from t3sim.schemes.flux.flux_rs import FluxContext, final_shard_check, swizzled_order
from t3sim.schemes.runtime.program import Kernel, Program, run_program
from t3sim.system.model import SystemModel
from tests.conftest import REPO
from tests.system.helpers import MEM64, exp

# OP of a 1024-wide model, 256 tokens: C is 256 x 1024 (2 x 8 tiles of 128 x 128), 2 CUs = 4 WGs a stage,
# so a stage covers half a tile row (a few shards) and the swizzle changes which owners a stage writes to
SMALL = ("workload.sublayer=OP", "workload.tokens=256", "workload.model.hidden_size=1024", "system.gpu.num_cus=2")


def _model(n, mode="explicit", *extra):
    return SystemModel(exp(*SMALL, f"workload.tp={n}", f"system.interconnect.num_gpus={n}", f"simulation.mode={mode}",
                           "scheme.kind=flux_rs", *extra))


def _run(n, mode="explicit", *extra):
    m = _model(n, mode, *extra)
    phases = scheme_for("flux_rs").run(m)
    m.network.check_conserved()
    return m, phases


@pytest.mark.parametrize("reduce,n,swizzle", [
    ("atomic", 2, "true"), ("atomic", 4, "true"), ("atomic", 4, "false"), ("atomic", 8, "true"),
    ("pull", 2, "true"), ("pull", 4, "true"), ("pull", 4, "false"), ("pull", 8, "true"),
    ("a2a_local", 2, "true"), ("a2a_local", 4, "false"), ("a2a_local", 8, "true")])
def test_functional_exact_and_bytes_conserved(reduce, n, swizzle):
    """Every GPU's shard is exactly the sum of all GPUs' partials; every remote byte landed, and each GPU moved
    exactly the (n-1)/n of C that other GPUs own (tiles are request-aligned here)."""
    m, p = _run(n, "explicit", "simulation.functional_data=true", f"scheme.flux_reduce={reduce}",
                f"scheme.flux_swizzle={swizzle}")
    ctx = m.context
    c_B = m.c_elems * m.elem_B
    assert ctx.words_checked == final_shard_check(m) == c_B // 4  # every word of C, on its owner
    remote = n * (n - 1) * ctx.shard_B
    if reduce != "pull":
        assert ctx.fabric.sent_B == ctx.fabric.landed_B == ctx.remote_store_B == remote
        assert ctx.local_store_B == n * ctx.shard_B
        assert ctx.pull is None  # no pull CTAs, no pulled bytes
    else:
        assert ctx.pull.pulled_B == remote and ctx.fabric.sent_B == 0
        assert ctx.local_store_B == n * c_B and ctx.reduced_B == c_B
    assert sum(m.network.bytes_delivered.values()) >= remote
    assert p.ag == 0 and p.total == p.gemm + p.rs  # a functional run stops after the reduce-scatter
    recs = {r.name: r for r in m.kernel_records}
    assert recs["flux_rs"].start == recs["flux_gemm"].start  # the communication is issued within the kernel
    if reduce == "a2a_local":  # the local reduction kernel ran after every store landed, over every shard
        assert ctx.reduced_B == c_B and recs["flux_reduce"].start >= recs["flux_rs"].end


@pytest.mark.parametrize("reduce", ["atomic", "a2a_local"])
def test_homogeneous_exact_and_close_to_explicit(reduce):
    """Homogeneous mode (GPU 0 simulated, shadows mirror it): GPU 0's shard exact; time within 5 % of explicit."""
    h, ph = _run(4, "homogeneous", "simulation.functional_data=true", f"scheme.flux_reduce={reduce}")
    assert h.context.words_checked == h.c_elems * h.elem_B // 4 // 4
    assert h.context.fabric.sent_B == h.context.fabric.landed_B == 4 * 3 * h.context.shard_B
    _, px = _run(4, "explicit", "simulation.functional_data=true", f"scheme.flux_reduce={reduce}")
    assert ph.total == pytest.approx(px.total, rel=0.05)


@pytest.mark.parametrize("n,swizzle", [(2, "true"), (2, "false"), (4, "true"), (4, "false"), (8, "true"),
                                       (8, "false")])
def test_homogeneous_pull_matches_explicit(n, swizzle):
    """Homogeneous pull (GPU 0 simulated, shadows mirrored by rotation, module doc) against explicit, the RS's end.

    GPU 0's DRAM bytes by category are the explicit run's exactly (its own pulls' local reads plus the N - 1 owners'
    reads of its partial, which homogeneous mode mirrors). Times, measured on this ring: the GEMM phase within 0.91 %
    and the RS's end (gemm + rs) within 1.97 % of explicit's (tolerances 1.5 % and 2.5 %); N=2, 4 with the swizzle
    agree to 0.2 %. Causes: on an 8-GPU ring the explicit run is not rotation-symmetric itself (shortest-path ties
    between opposite GPUs are broken one way for 0 -> 4, the other for 1 -> 5), its GPUs end their pulls over a
    ~3 % spread and GPU 0 stands for all; without the swizzle the other owners pull during the GEMM, which
    homogeneous mode mirrors at GPU 0's own pulls, so its GEMM phase is short by up to ~0.9 % (rs longer). Measured
    on MEM64 (tests/system/helpers.py); under the current defaults (32 B accesses, frontend latency) that GEMM
    contention costs more and the N=8 unswizzled gap grows: GEMM -7.1 % (30.23 vs 32.53 us), end -2.5 %.
    FLUX's per-tile epilogue costs (t3sim.schemes.flux.costs) are held at 0 here: the mirroring does not involve
    them, and at their defaults the N=8 unswizzled explicit GEMM phase grows more than the homogeneous one (33.86
    vs 31.44 us, -7.2 %; swizzled: 31.44 vs 31.44 us)."""
    cfg = ("scheme.flux_reduce=pull", f"scheme.flux_swizzle={swizzle}", "workload.collective=reduce_scatter", *MEM64,
           "scheme.flux_store_box_issue_ns=0", "scheme.flux_tile_fence_ns=0", "scheme.flux_tile_flag_ns=0")
    x, px = _run(n, "explicit", *cfg)
    h, ph = _run(n, "homogeneous", *cfg)  # _run checks every link's conservation
    assert ph.gemm == pytest.approx(px.gemm, rel=0.015)
    assert ph.gemm + ph.rs == pytest.approx(px.gemm + px.rs, rel=0.025)
    assert h.hiers[0].traffic == x.hiers[0].traffic  # GPU 0's DRAM bytes, category by category
    c, shard = h.context, h.context.shard_B
    assert c.completion.done.triggered and c.completion.n == 0 and c.pull.taken[0] == c.pull.items[0]
    assert c.local_store_B == h.c_elems * h.elem_B and c.reduced_B == shard
    assert c.pull.pulled_B == (n - 1) * shard and x.context.pull.pulled_B == n * c.pull.pulled_B
    net, xnet = h.network, x.network
    assert net.bytes_injected[0] == xnet.bytes_injected[0] and net.bytes_delivered[0] == xnet.bytes_delivered[0]
    # the mirrored transfers: GPU 0's egress (N - 1 owners' reads of its partial) and, with the swizzle, every
    # shadow-to-shadow read, so every link carries the explicit run's bytes
    assert c.pull.mirror_B == (n - 1) * shard * ((n - 1) if swizzle == "true" else 1)
    assert h.stats().value("flux.pull.mirrored_B") == c.pull.mirror_B and "flux.pull.mirrored_B" not in x.stats().names()
    if swizzle == "false":  # one order on every GPU, relabelled so that GPU 0's shard is written last
        assert all(c.orders[g] == c.orders[0] for g in range(n)) and c.parts[c.orders[0][-1]][-1][0] == 0
    else:
        assert net.bytes_injected == xnet.bytes_injected
        assert {k: v.bytes_sent for k, v in net.links.items()} == {k: v.bytes_sent for k, v in xnet.links.items()}


def test_homogeneous_pull_exact():
    """Functional homogeneous pull: GPU 0's shard is exactly the sum of its partial and the shadows' (computed)."""
    h, p = _run(4, "homogeneous", "simulation.functional_data=true", "scheme.flux_reduce=pull")
    assert h.context.words_checked == h.c_elems * h.elem_B // 4 // 4
    assert p.ag == 0 and p.total == p.gemm + p.rs


@pytest.fixture(scope="module")
def gemm_alone():
    m = _model(4)
    p = Program()
    p.add("s", Kernel("gemm", "gemm", "gemm", m.gemm))
    r = run_program(m, p)
    return r.end - r.start


@pytest.mark.parametrize("reduce", ["atomic", "pull", "a2a_local"])
def test_never_faster_than_the_gemm_alone(gemm_alone, reduce):
    """The fused kernel computes the same tiles as the GEMM alone and adds communication: never faster (to 0.1 %:
    a cycle-level memory system is not monotone)."""
    m, p = _run(4, "explicit", f"scheme.flux_reduce={reduce}")
    assert p.gemm >= gemm_alone * 0.999
    assert p.gemm + p.rs >= gemm_alone
    assert p.ag > 0  # the all-gather follows in a timing run


def test_swizzle_spreads_each_step_over_owners():
    """Swizzle on: at every dispatch position the N GPUs' tiles belong to N different owners (Sec. 4.1, Fig. 7);
    off: all GPUs write to the same owner. Each GPU's last tile is its own shard's (local store, no tail)."""
    ctx_on = FluxContext(_model(4))
    ctx_off = FluxContext(_model(4, "explicit", "scheme.flux_swizzle=false"))
    for ctx, distinct in ((ctx_on, 4), (ctx_off, 1)):
        for seq in range(ctx.W):
            owners = {ctx.parts[ctx.orders[g][seq]][0][0] for g in range(4)}
            assert len(owners) == distinct
    for g in range(4):
        assert ctx_on.parts[ctx_on.orders[g][-1]][0][0] == g
        assert sorted(ctx_on.orders[g]) == list(range(ctx_on.W))


def test_swizzled_order_is_a_permutation_shifted_along_the_shard_axis():
    base = list(range(12))  # 3 x 4 tiles, row-major
    for col in (True, False):
        for g in range(4):
            o = swizzled_order(base, g, 4, 3, 4, col)
            assert sorted(o) == base
    assert swizzled_order(base, 0, 4, 3, 4, True)[:4] == [1, 2, 3, 0]  # columns shifted by (0 + 1) * 4 // 4
    assert swizzled_order(base, 3, 4, 3, 4, True) == base  # shifted by a whole row: back to the base


@pytest.mark.parametrize("extra,field", [
    (("workload.dtype=bf16",), "scheme.flux_reduce"),  # no bf16 atomic add on the Table 1 GPU (V100)
    (("scheme.flux_pull_ctas=3",), "scheme.flux_pull_ctas"),
])
def test_bad_combinations_rejected(extra, field):
    with pytest.raises(InputError) as e:
        FluxContext(_model(4, "explicit", *extra))
    assert e.value.where == field


def test_bf16_atomics_need_support():
    """Atomic reduction of bf16 needs bf16 in the GPU's atomic_add_dtypes (FLUX footnote 5); pull never needs it."""
    for listed in ("[fp16,fp32]", "[fp16,fp32,fp8]", "[]"):  # refused, naming the field, the dtype and the fix
        with pytest.raises(InputError) as e:
            FluxContext(_model(4, "explicit", "workload.dtype=bf16", f"system.gpu.atomic_add_dtypes={listed}"))
        assert e.value.where == "scheme.flux_reduce"
        assert "workload.dtype=bf16" in str(e.value) and "scheme.flux_reduce=pull" in str(e.value)
    ok = FluxContext(_model(4, "explicit", "workload.dtype=bf16", "system.gpu.atomic_add_dtypes=[fp16,bf16,fp32]"))
    assert (ok.variant, ok.model.kernel.dtype) == ("atomic", "bf16")
    pull = FluxContext(_model(4, "explicit", "workload.dtype=bf16", "scheme.flux_reduce=pull",
                              "system.gpu.atomic_add_dtypes=[]"))
    assert pull.variant == "pull"


def test_cli_rejects_bf16_atomic_with_exit_2():
    r = subprocess.run([sys.executable, "-m", "t3sim.cli", "run", str(REPO / "configs/experiments/default.yaml"),
                        "--set", "scheme.kind=flux_rs", "--set", "workload.dtype=bf16", "--out", "/tmp/t3sim_flux_bad",
                        "--force"], capture_output=True, text=True)
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("t3sim: error:") and "atomic_add_dtypes" in last and "Traceback" not in r.stderr


def test_flux_options_rejected_with_other_schemes():
    with pytest.raises(InputError, match="flux_swizzle"):
        scheme_for("t3").check_options(exp("scheme.kind=t3", "scheme.flux_swizzle=false").scheme)


def test_stats_carry_units_and_descriptions():
    m, _ = _run(2, "explicit")
    st = m.stats()
    keys = [k for k in st.names() if k.startswith("flux.")]
    assert {"flux.local_store_B", "flux.remote_store_B", "flux.fabric.sent_B", "flux.fabric.landed_B",
            "flux.pull.remote_read_B", "flux.reduced_B"} <= set(keys)
    for k in keys:
        assert st[k].description and (st[k].unit == "B") == k.endswith("_B"), k
    assert st.value("flux.fabric.sent_B") == st.value("flux.fabric.landed_B") > 0


@pytest.mark.parametrize("name,hbm_GBps,tflops,boost_GHz,atomic_bf16", [
    ("a100-sxm4-8gpu", 2039, 312, 1.41, False), ("a100-pcie-8gpu", 1935, 312, 1.41, False),
    ("h800-8gpu", 3352, 989, 1.83, False)])
def test_flux_presets_match_their_datasheets(name, hbm_GBps, tflops, boost_GHz, atomic_bf16):
    """FLUX's three 8-GPU nodes: datasheet HBM bandwidth and dense bf16 TFLOPS at the datasheet
    boost clock; the simulated SM clock is the boost clock (A100) or the H200's measured sustained clock under GEMM
    load (H800: same GH100 die and 700 W limit); no bf16 atomics (FLUX footnote 5)."""
    from t3sim.config import load_system
    s = load_system(REPO / f"configs/systems/{name}.yaml")
    assert s.interconnect.num_gpus == 8
    assert s.hbm.peak_bandwidth_GBps == pytest.approx(hbm_GBps, rel=0.002)
    assert s.gpu.num_cus * s.gpu.fp16_flops_per_cycle * boost_GHz / 1e3 == pytest.approx(tflops, rel=0.002)
    h200 = load_system(REPO / "configs/systems/h200-4gpu.yaml")
    assert s.gpu.clock_GHz == (h200.gpu.clock_GHz if name.startswith("h800") else boost_GHz)
    assert ("bf16" in s.gpu.atomic_add_dtypes) == atomic_bf16
