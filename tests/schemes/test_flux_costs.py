"""FLUX's own costs at tile granularity (:mod:`t3sim.schemes.flux.costs`): the formulas, each cost field moving a
FLUX run the expected way, and every cost at 0 taking the cost-free paths."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.compute.gemm_kernel import gemm_occupancy
from t3sim.config.gpu import GPUConfig
from t3sim.errors import InputError
from t3sim.schemes.flux.costs import EpilogueCosts, fused_kernel, part_boxes, poll_pass, tile_parts
from t3sim.schemes.runtime import scheme_for
from t3sim.system.model import SystemModel
from t3sim.workload.record import KernelRecord
from tests.system.helpers import exp

# flux_rs: OP of a 1024-wide model, 256 tokens on 4 GPUs of 2 CUs (C 256 x 1024: 2 x 8 tiles of 128 x 128)
RS = ("workload.sublayer=OP", "workload.tokens=256", "workload.model.hidden_size=1024", "system.gpu.num_cus=2",
      "workload.tp=4", "system.interconnect.num_gpus=4", "simulation.mode=explicit", "scheme.kind=flux_rs")
# flux_ag: FC-1 of a 512-wide model at TP=4, 1024 tokens (A shards of 256 rows), 8 CUs
AG = ("workload.sublayer=FC-1", "workload.tokens=1024", "workload.model.hidden_size=512", "system.gpu.num_cus=8",
      "workload.direction=ag_gemm", "simulation.mode=explicit", "workload.tp=4", "system.interconnect.num_gpus=4",
      "scheme.kind=flux_ag")
RS_FREE = ("scheme.flux_store_box_issue_ns=0", "scheme.flux_tile_fence_ns=0", "scheme.flux_tile_flag_ns=0")
AG_FREE = ("scheme.flux_signal_poll_ns=0",)


def _run(*overrides):
    m = SystemModel(exp(*overrides))
    p = scheme_for(m.exp.scheme.kind).run(m)
    return m, p, m.stats()


# ---------------------------------------------------------------- formulas

def test_part_boxes():
    """Boxes of min(tile_m, rows) rows by box_cols columns: FLUX Sec. 6's m = 64 at TP = 8 (8-row shards) stores a
    128 x 256 tile's 8-row part as 8 boxes, as many as a full 128-row part."""
    assert part_boxes(8, 256, 128, 32) == part_boxes(128, 256, 128, 32) == 8
    assert part_boxes(64, 33, 128, 32) == 2 and part_boxes(0, 256, 128, 32) == part_boxes(8, 0, 128, 32) == 0


@given(rows=st.integers(1, 256), cols=st.integers(1, 512), tile_m=st.sampled_from([64, 128, 256]),
       box=st.sampled_from([16, 32, 64]))
def test_part_boxes_cover_the_part(rows, cols, tile_m, box):
    rows = min(rows, tile_m)  # a part of one tile
    n = part_boxes(rows, cols, tile_m, box)
    assert n == -(-cols // box)  # one box row (rows <= tile_m), ceil(cols / box) columns
    assert n * min(tile_m, rows) * box >= rows * cols  # the boxes cover the part


def test_tile_parts_row_and_column_shards():
    """A row-major C's shards split a tile's rows, a column-major one's its columns."""
    # 64 x 1024 C over 8 GPUs: row-major shards are 8 rows each; a 128 x 256 tile (64 rows present) has 8 parts
    parts = tile_parts(64, 1024, 128, 256, 0, 1, 64 * 1024 // 8, col_major=False)
    assert parts == [(o, 8, 256) for o in range(8)]
    # column-major: shards of 128 columns; tile column 1 (columns 256..511) has owners 2 and 3, all 64 rows
    assert tile_parts(64, 1024, 128, 256, 0, 1, 64 * 1024 // 8, col_major=True) == [(2, 64, 128), (3, 64, 128)]


@settings(max_examples=60, deadline=None)
@given(M=st.sampled_from([8, 64, 200, 512]), N=st.sampled_from([256, 384, 1024]), n=st.sampled_from([1, 2, 4, 8]),
       col=st.booleans(), tm=st.integers(0, 3), tn=st.integers(0, 7))
def test_tile_parts_partition_the_tile(M, N, n, col, tm, tn):
    """Where shards are whole lines (rows of a row-major C, columns of a column-major one) the parts are
    rectangles that partition the tile's elements in the matrix."""
    lines, lead = (N, M) if col else (M, N)
    if lines % n:
        return
    tile_m, tile_n = 128, 128
    tm, tn = tm % -(-M // tile_m), tn % -(-N // tile_n)
    parts = tile_parts(M, N, tile_m, tile_n, tm, tn, M * N // n, col)
    rows = min(M, (tm + 1) * tile_m) - tm * tile_m
    cols = min(N, (tn + 1) * tile_n) - tn * tile_n
    assert sum(r * c for _o, r, c in parts) == rows * cols
    assert [o for o, _r, _c in parts] == sorted({o for o, _r, _c in parts})


@given(start=st.integers(0, 10**6), dt=st.integers(-10**6, 10**6), poll=st.integers(0, 10**5),
       interval=st.integers(0, 10**5))
def test_poll_pass(start, dt, poll, interval):
    """The WG passes when the first poll that read the signal set returns: no earlier poll read it set, and it
    costs at least one poll."""
    s = start + dt
    end, n = poll_pass(start, s, poll, interval)
    period = poll + interval
    assert n >= 1 and end >= max(start + poll, s)
    if period:
        issue = end - poll
        assert issue == start + (n - 1) * period and issue + poll // 2 >= s  # this poll read it set
        assert n == 1 or issue - period + poll // 2 < s  # the one before did not
    else:
        assert end == max(start, s)


def test_poll_pass_cases():
    assert poll_pass(100, 40, 0, 0) == (100, 1)  # no cost: passes at once
    assert poll_pass(100, 40, 30, 0) == (130, 1)  # preset: one poll
    assert poll_pass(100, 200, 30, 0) == (220, 4)  # polls issued at 100, 130, 160, 190; 190 reads at 205 >= 200
    assert poll_pass(100, 200, 30, 70) == (230, 2)  # issued at 100, 200: 200 reads at 215


def _kernel(regs=128, lds=32768):
    return KernelRecord(name="k", model="m", sublayer="OP", pass_="fwd", tp=1, M=256, N=256, K=256, dtype="fp16",
                        trans_a=False, trans_b=False, c_layout="col_major", tile_m=128, tile_n=128, tile_k=32,
                        tiles_m=2, tiles_n=2, num_wgs=4, wfs_per_wg=8, wf_grid=(2, 4), threads_per_wf=32,
                        registers_per_thread=regs, lds_per_wg_B=lds, wg_order={"kind": "row_major"},
                        role="standalone", collective=None)


def test_fused_kernel_registers_and_occupancy():
    """Extra registers go into the fused kernel's record; the GEMM's occupancy rule then lowers its WGs per CU
    where registers limit it; past the per-thread maximum they are rejected."""
    gpu, k = GPUConfig(), _kernel(regs=64, lds=0)
    assert fused_kernel(k, gpu, 0) is k
    f = fused_kernel(k, gpu, 64)
    assert f.registers_per_thread == 128 and dataclasses.replace(f, registers_per_thread=64) == k
    assert gemm_occupancy(gpu, f).wgs_per_cu < gemm_occupancy(gpu, k).wgs_per_cu
    with pytest.raises(InputError, match="flux_extra_registers_per_thread"):
        fused_kernel(k, gpu, gpu.max_registers_per_thread)


def test_fence_ticks_local_and_remote():
    """The derived fence: one L2 round trip for a tile all of whose parts are this GPU's, else twice the path
    latency to the farthest peer owner; a set value is used as is."""
    m = SystemModel(exp(*RS))
    c = EpilogueCosts.of(m)
    assert c.fence is None and c.flag == c.l2 == m.hiers[0].l2_latency > 0
    assert c.fence_ticks(m, 0, [0]) == c.l2
    far = max(m.network.path_latency_ticks(0, o) for o in (1, 2))
    assert c.fence_ticks(m, 0, [0, 1, 2]) == 2 * far > c.l2
    assert dataclasses.replace(c, fence=7).fence_ticks(m, 0, [1]) == 7


# ---------------------------------------------------------------- each field moves a run

@pytest.fixture(scope="module")
def rs_runs():
    return {"free": _run(*RS, *RS_FREE), "default": _run(*RS)}


@pytest.fixture(scope="module")
def ag_runs():
    return {"free": _run(*AG, *AG_FREE), "default": _run(*AG)}


def test_zero_costs_take_the_cost_free_paths(rs_runs, ag_runs):
    """Every cost at 0: no epilogue hold, no polls, the workload's own kernel record (the cost-free model, which
    the defaults only lengthen)."""
    m, p, s = rs_runs["free"]
    assert m.context.costs.free and m.context.fused is m.kernel
    assert all(m.context.epilogue(0, t) is None for t in range(m.kernel.num_wgs))
    assert s.value("flux.epilogue.store_boxes") == 0 and s.value("flux.epilogue.hold_us") == 0
    md, pd, sd = rs_runs["default"]
    assert pd.gemm > p.gemm and sd.value("flux.epilogue.hold_us") > 0
    assert sd.value("flux.epilogue.store_boxes") == 4 * m.kernel.num_wgs * 4  # 4 GPUs, 128-column tiles: 4 boxes
    assert sd.value("flux.epilogue.box_mean_B") == 128 * 32 * m.elem_B
    a, pa, sa = ag_runs["free"]
    assert a.context.poll.free and a.context.fused is a.kernel
    assert all(sa.value(f"gpu{g}.flux_ag.polls") == 0 for g in range(4))
    ad, pad, sad = ag_runs["default"]
    assert pad.gemm > pa.gemm and all(sad.value(f"gpu{g}.flux_ag.polls") >= ad.kernel.num_wgs for g in range(4))


@pytest.mark.parametrize("field,value", [("flux_store_box_issue_ns", 400), ("flux_tile_fence_ns", 5000),
                                         ("flux_tile_flag_ns", 3000), ("flux_store_box_cols", 8)])
def test_epilogue_fields_lengthen_the_fused_kernel(rs_runs, field, value):
    """A larger box issue cost, fence, flag, or a narrower box keeps each WG longer in its epilogue: the fused
    kernel (GEMM phase) and the WGs' summed epilogue time grow."""
    _, p0, s0 = rs_runs["default"]
    _, p1, s1 = _run(*RS, f"scheme.{field}={value}")
    assert s1.value("flux.epilogue.hold_us") > s0.value("flux.epilogue.hold_us")
    assert p1.gemm > p0.gemm
    if field == "flux_store_box_cols":
        assert s1.value("flux.epilogue.store_boxes") == 4 * s0.value("flux.epilogue.store_boxes")


def test_pull_flags_wait_for_the_epilogue():
    """flux_reduce=pull: an owner sees a partial's flag only once the WG set it, so a long flag store delays the
    reduction's end, not only the GEMM's."""
    _, p0, _ = _run(*RS, *RS_FREE, "scheme.flux_reduce=pull")
    _, p1, _ = _run(*RS, *RS_FREE, "scheme.flux_reduce=pull", "scheme.flux_tile_flag_ns=20000")
    assert p1.gemm + p1.rs > p0.gemm + p0.rs + 15_000_000  # at least most of one 20 us flag on the last tiles


def test_extra_registers_lower_occupancy():
    """flux_extra_registers_per_thread: the fused kernel's WGs per CU drop (register-limited) and it runs longer;
    too many are rejected."""
    _, p0, s0 = _run(*RS, *RS_FREE)
    _, p1, s1 = _run(*RS, *RS_FREE, "scheme.flux_extra_registers_per_thread=100")
    assert s1.value("flux.fused_registers_per_thread") == s0.value("flux.fused_registers_per_thread") + 100
    assert s1.value("flux.fused_wgs_per_cu") < s0.value("flux.fused_wgs_per_cu")
    assert p1.gemm > p0.gemm
    with pytest.raises(InputError, match="flux_extra_registers_per_thread"):
        _run(*AG, "scheme.flux_extra_registers_per_thread=200")


def test_poll_fields_lengthen_the_waits(ag_runs):
    """A longer poll round trip lengthens every prologue (even a preset signal costs one poll); a back-off
    between polls issues fewer polls and passes no earlier."""
    _, p0, s0 = ag_runs["default"]
    _, p1, s1 = _run(*AG, "scheme.flux_signal_poll_ns=2000")
    assert p1.gemm > p0.gemm
    assert s1.value("gpu0.flux_ag.wait_us_total") > s0.value("gpu0.flux_ag.wait_us_total")
    _, p2, s2 = _run(*AG, "scheme.flux_signal_poll_interval_ns=2000")
    assert s2.value("gpu0.flux_ag.polls") < s0.value("gpu0.flux_ag.polls")
    assert s2.value("gpu0.flux_ag.wait_us_total") > s0.value("gpu0.flux_ag.wait_us_total")


@pytest.mark.parametrize("reduce", ["pull", "a2a_local"])
def test_epilogue_hold_per_tile(reduce):
    """One tile's epilogue time is its boxes x the issue cost + the fence + the flag; the fence of a pull tile
    (all its stores local) is one L2 round trip, of an a2a_local tile the round trip to its farthest owner."""
    from t3sim.schemes.flux.flux_rs import FluxContext
    m = SystemModel(exp(*RS, f"scheme.flux_reduce={reduce}"))
    ctx = FluxContext(m)
    c = ctx.costs
    for t in range(m.kernel.num_wgs):
        before = ctx.epi["hold"]
        ctx.epilogue(0, t)
        owners = [o for o, _ in ctx.parts[t]]
        fence = c.l2 if reduce == "pull" else c.fence_ticks(m, 0, owners)
        assert ctx.epi["hold"] - before == int(ctx.boxes[t]) * c.box_issue + fence + c.flag
        if reduce == "a2a_local" and owners != [0]:
            assert fence > c.l2
