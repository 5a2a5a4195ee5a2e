"""GEMM address generation: loads cover exactly the tile's K-slice, every output byte is stored exactly once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.compute.addresses import (
    GemmGeometry, a_requests, b_requests, default_wf_grid, slice_requests, wg_load_requests, wg_store_requests,
)


# -- independent element-offset formulas (the module docstring's table) -------------------------
def a_off(g, i, j):  # op(A)[i, j], i < M, j < K
    return i * g.K + j if g.trans_a else j * g.M + i


def b_off(g, i, j):  # op(B)[i, j], i < K, j < N
    return i * g.N + j if g.trans_b else j * g.K + i


def c_off(g, i, j):
    return j * g.M + i if g.c_col_major else i * g.N + j


def expected_requests(off, base, elem_B, req_B):
    """Requests touched by any byte of the elements at ``off``."""
    lo = base + off.ravel() * elem_B
    return np.unique(np.concatenate([lo // req_B, (lo + elem_B - 1) // req_B])) * req_B


@st.composite
def geometries(draw):
    wf_m, wf_n = draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([1, 2, 4]))
    tile_m = wf_m * draw(st.integers(1, 24))
    tile_n = wf_n * draw(st.integers(1, 24))
    elem_B = draw(st.sampled_from([1, 2, 4]))
    return GemmGeometry(
        M=draw(st.integers(1, 200)), N=draw(st.integers(1, 200)), K=draw(st.integers(1, 150)),
        tile_m=tile_m, tile_n=tile_n, tile_k=draw(st.integers(1, 40)), elem_B=elem_B,
        trans_a=draw(st.booleans()), trans_b=draw(st.booleans()), c_col_major=draw(st.booleans()),
        a_base_B=elem_B * draw(st.integers(0, 1000)), b_base_B=(1 << 20) + elem_B * draw(st.integers(0, 1000)),
        c_base_B=(1 << 22) + elem_B * draw(st.integers(0, 1000)),
        wfs_per_wg=wf_m * wf_n, wf_grid=(wf_m, wf_n))


@settings(max_examples=150, deadline=None)
@given(g=geometries(), data=st.data(), req_B=st.sampled_from([32, 64, 128]))
def test_loads_cover_exactly_the_k_slice(g, data, req_B):
    tm = data.draw(st.integers(0, g.tiles_m - 1))
    tn = data.draw(st.integers(0, g.tiles_n - 1))
    s = data.draw(st.integers(0, g.k_steps - 1))
    rows = np.arange(tm * g.tile_m, min((tm + 1) * g.tile_m, g.M))
    cols = np.arange(tn * g.tile_n, min((tn + 1) * g.tile_n, g.N))
    ks = np.arange(s * g.tile_k, min((s + 1) * g.tile_k, g.K))
    exp_a = expected_requests(a_off(g, rows[:, None], ks[None, :]), g.a_base_B, g.elem_B, req_B)
    exp_b = expected_requests(b_off(g, ks[:, None], cols[None, :]), g.b_base_B, g.elem_B, req_B)
    got_a, got_b = a_requests(g, tm, s, req_B), b_requests(g, tn, s, req_B)
    np.testing.assert_array_equal(got_a, exp_a)
    np.testing.assert_array_equal(got_b, exp_b)
    assert np.all(got_a % req_B == 0) and np.all(np.diff(got_a) > 0)
    # the batch API gives the same per WG
    r = wg_load_requests(g, [tm, tm], [tn, tn], s, req_B)
    for w in (0, 1):
        np.testing.assert_array_equal(r.addr[(r.wg == w) & (r.operand == 0)], exp_a)
        np.testing.assert_array_equal(r.addr[(r.wg == w) & (r.operand == 1)], exp_b)


@settings(max_examples=100, deadline=None)
@given(g=geometries(), data=st.data(), req_B=st.sampled_from([32, 64, 128]))
def test_slice_requests_are_the_per_step_requests_in_step_order(g, data, req_B):
    """The vectorised k-step range (what the GEMM kernel and its compiled window load) equals the per-step
    functions concatenated in step order, with each request's step."""
    t_a = data.draw(st.integers(0, g.tiles_m - 1))
    t_b = data.draw(st.integers(0, g.tiles_n - 1))
    s0 = data.draw(st.integers(0, g.k_steps - 1))
    s1 = data.draw(st.integers(s0 + 1, g.k_steps))
    for op, t, fn in (("a", t_a, a_requests), ("b", t_b, b_requests)):
        per = [fn(g, t, s, req_B) for s in range(s0, s1)]
        addr, step = slice_requests(g, op, t, s0, s1, req_B)
        np.testing.assert_array_equal(addr, np.concatenate(per))
        np.testing.assert_array_equal(step, np.repeat(np.arange(s0, s1), [len(p) for p in per]))
    with pytest.raises(IndexError):
        slice_requests(g, "a", g.tiles_m, 0, 1)
    with pytest.raises(ValueError):
        slice_requests(g, "c", 0, 0, 1)


@settings(max_examples=120, deadline=None)
@given(g=geometries(), req_B=st.sampled_from([16, 32, 64]))
def test_every_output_byte_stored_exactly_once_by_its_wf(g, req_B):
    tm, tn = np.meshgrid(np.arange(g.tiles_m), np.arange(g.tiles_n), indexing="ij")
    sr = wg_store_requests(g, tm.ravel(), tn.ravel(), req_B=req_B)
    assert np.all(sr.addr % req_B == 0)
    assert np.all(sr.nbytes > 0) and np.all(sr.nbytes <= req_B)
    if req_B < 64:
        assert np.all(sr.mask >> np.uint64(req_B) == 0)
    # expand masks to byte addresses
    bits = ((sr.mask[:, None] >> np.arange(64, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(bool)
    byte = (sr.addr[:, None] + np.arange(64)[None, :])[bits]
    owner_wg = np.broadcast_to(sr.wg_id[:, None], bits.shape)[bits]
    owner_wf = np.broadcast_to(sr.wf_id[:, None], bits.shape)[bits]
    assert len(byte) == g.M * g.N * g.elem_B
    assert len(np.unique(byte)) == len(byte)  # exactly once
    # each byte belongs to the element whose WF owns it
    elem = (byte - g.c_base_B) // g.elem_B
    if g.c_col_major:
        i, j = elem % g.M, elem // g.M
    else:
        i, j = elem // g.N, elem % g.N
    assert np.all((elem >= 0) & (i < g.M) & (j < g.N))
    t_m, t_n = i // g.tile_m, j // g.tile_n
    np.testing.assert_array_equal(owner_wg, t_m * g.tiles_n + t_n)
    sub_r, sub_c = g.wf_tile_shape
    wf_m = g.wf_grid[0]
    np.testing.assert_array_equal(owner_wf, ((i % g.tile_m) // sub_r) + wf_m * ((j % g.tile_n) // sub_c))
    # unique (wg, wf, addr) and sorted
    key = np.stack([sr.wg_id, sr.wf_id, sr.addr])
    assert len({tuple(c) for c in key.T}) == len(sr.addr)


def test_full_tile_wf_sizes_and_requests():
    # 128x128 fp16 tile, 8 WFs as 2x4: wf_tile = 64x32 = 2048 elements = 4096 B, col-major M aligned
    g = GemmGeometry(M=1024, N=1024, K=256, tile_m=128, tile_n=128, tile_k=32, elem_B=2,
                     trans_a=True, trans_b=True, a_base_B=0, b_base_B=1 << 24, c_base_B=1 << 26)
    assert g.wf_grid == (2, 4) and g.wf_tile_shape == (64, 32)
    sr = wg_store_requests(g, 3, 5, wg_id=42)
    assert set(sr.wg_id.tolist()) == {42}
    for w in range(8):
        sel = sr.wf_id == w
        assert sr.nbytes[sel].sum() == 64 * 32 * 2
        assert sel.sum() == 64 * 32 * 2 // 64  # every request full (64 rows x 2 B = 128 B per column)
    assert np.all(sr.mask == np.uint64(0xFFFF_FFFF_FFFF_FFFF))
    # A^T slice of a 128-row tile at one k-step: 128 rows x 32 k x 2 B = 64 B per row -> 128 requests
    assert len(a_requests(g, 0, 0)) == 128
    assert len(a_requests(g, 0, 0, req_B=128)) == 128  # rows are K*2 = 512 B apart: one line each


def test_col_major_stage_output_not_contiguous():
    # paper Sec. 4.2.1: with column-major C a row of tiles (row-major WG scheduling) is not contiguous
    kw = dict(M=512, N=512, K=64, tile_m=128, tile_n=128, tile_k=32, elem_B=2, trans_a=False, trans_b=False,
              a_base_B=0, b_base_B=1 << 20, c_base_B=1 << 22)
    tn = np.arange(4)
    for col_major, contiguous in ((True, False), (False, True)):
        g = GemmGeometry(c_col_major=col_major, **kw)
        a = np.unique(wg_store_requests(g, np.zeros(4, int), tn).addr)
        assert bool(a[-1] - a[0] + 64 == 128 * 512 * 2) == contiguous


def test_transposed_changes_layout_but_not_amount():
    kw = dict(M=256, N=256, K=256, tile_m=128, tile_n=128, tile_k=32, elem_B=2, a_base_B=0, b_base_B=1 << 20, c_base_B=1 << 22)
    n_t = GemmGeometry(trans_a=True, trans_b=True, **kw)
    n_n = GemmGeometry(trans_a=False, trans_b=False, **kw)
    # A non-transposed: 32 columns of 128 contiguous elements (256 B) -> 4 requests each
    assert len(a_requests(n_n, 1, 2)) == 32 * 4 and len(a_requests(n_t, 1, 2)) == 128
    assert not np.array_equal(a_requests(n_n, 1, 2), a_requests(n_t, 1, 2))


def test_bad_inputs():
    kw = dict(M=100, N=100, K=100, tile_m=64, tile_n=64, tile_k=32, elem_B=2, trans_a=False, trans_b=False,
              a_base_B=0, b_base_B=0, c_base_B=0)
    with pytest.raises(ValueError):
        GemmGeometry(wfs_per_wg=8, wf_grid=(3, 3), **kw)
    with pytest.raises(ValueError):
        GemmGeometry(**{**kw, "M": 0})
    g = GemmGeometry(**kw)
    with pytest.raises(IndexError):
        a_requests(g, 2, 0)
    with pytest.raises(IndexError):
        b_requests(g, 0, 4)
    with pytest.raises(ValueError):
        wg_store_requests(g, 0, 0, req_B=128)
    assert default_wf_grid(8) == (2, 4) and default_wf_grid(4) == (2, 2) and default_wf_grid(7) == (1, 7)
