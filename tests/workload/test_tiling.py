"""Tile/WF rectangles partition the output; WG orders are permutations; staggering shifts by one stage per GPU."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.config.workload import ModelConfig
from t3sim.workload import (generate, kernel_for, staggered_order, tile_bytes, tile_rect, tile_rect_of, wf_rect,
                            wf_tile_size, wg_order)
from t3sim.workload.generate import TileParams

MODEL = ModelConfig(name="m", hidden_size=4256, layers=1, seq_len=1024, batch=8, tp_degrees=[8])


def _kernel(M, N, tile_m, tile_n, wf_grid=(2, 4), order="row_major"):
    model = ModelConfig(name="m", hidden_size=N, layers=1, seq_len=M, batch=1, tp_degrees=[1])
    return kernel_for(model, 1, "OP", TileParams(tile_m=tile_m, tile_n=tile_n, wf_grid=wf_grid, wg_order=order))


shapes = st.tuples(st.integers(1, 300), st.integers(1, 300), st.sampled_from([8, 16, 32, 48, 64]),
                   st.sampled_from([8, 16, 32, 64, 128]), st.sampled_from(["row_major", "column_major"]))


@settings(max_examples=60, deadline=None)
@given(shapes)
def test_tiles_cover_every_element_once(shape):
    M, N, tm, tn, order = shape
    k = _kernel(M, N, tm, tn, order=order)
    cover = np.zeros((M, N), dtype=np.int32)
    total = 0
    for w in range(k.num_wgs):
        r0, c0, rows, cols = tile_rect(k, w)
        assert rows >= 1 and cols >= 1
        cover[r0:r0 + rows, c0:c0 + cols] += 1
        total += rows * cols
    assert total == M * N and (cover == 1).all()


@settings(max_examples=40, deadline=None)
@given(shapes, st.sampled_from([(1, 1), (2, 4), (4, 2), (1, 8), (8, 1), (2, 2)]))
def test_wf_rects_partition_each_tile(shape, grid):
    M, N, tm, tn, order = shape
    k = _kernel(M, N, tm, tn, wf_grid=grid, order=order)
    cover = np.zeros((M, N), dtype=np.int32)
    for w in range(k.num_wgs):
        r0, c0, rows, cols = tile_rect(k, w)
        n = 0
        for wf in range(k.wfs_per_wg):
            fr0, fc0, frows, fcols = wf_rect(k, w, wf)
            assert frows * fcols <= wf_tile_size(k) == tm * tn // k.wfs_per_wg
            if frows and fcols:
                assert r0 <= fr0 and fr0 + frows <= r0 + rows and c0 <= fc0 and fc0 + fcols <= c0 + cols
            cover[fr0:fr0 + frows, fc0:fc0 + fcols] += 1
            n += frows * fcols
        assert n == rows * cols
    assert (cover == 1).all()


def test_tnlg_partial_edge_tiles():
    k = generate(MODEL, 8, ["FC-2"]).kernels[0]
    assert (k.tiles_m, k.tiles_n) == (64, 34)
    last = k.tiles_n - 1  # tile (0, 33): 128 rows x 32 cols
    assert tile_rect_of(k, last) == (0, 33 * 128, 128, 32)
    assert tile_bytes(k, last) == 128 * 32 * 2 and tile_bytes(k, 0) == 128 * 128 * 2
    # WFs 0,1 (n-index 0) hold the 32 columns; WFs 2..7 are empty there
    sizes = [wf_rect(k, last, wf)[2] * wf_rect(k, last, wf)[3] for wf in range(8)]
    assert sizes == [64 * 32, 64 * 32, 0, 0, 0, 0, 0, 0]
    assert sum(tile_bytes(k, t) for t in range(k.num_wgs)) == k.M * k.N * 2


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.sampled_from(["row_major", "column_major"]),
       st.integers(1, 16), st.integers(1, 100))
def test_orders_are_permutations_and_stagger_by_stages(tiles_m, tiles_n, order, num_gpus, stage_wgs):
    k = _kernel(tiles_m * 16, tiles_n * 16, 16, 16, wf_grid=(1, 1), order=order)
    base = wg_order(k)
    assert sorted(base) == list(range(k.num_wgs))
    stages = -(-k.num_wgs // stage_wgs)
    for g in range(num_gpus):
        o = wg_order(k, gpu=g, num_gpus=num_gpus, stage_wgs=stage_wgs)
        assert sorted(o) == list(range(k.num_wgs))
        if num_gpus > 1:
            shift = (g % stages) * stage_wgs  # GPU g starts g stages later, wrapping
            assert o == base[shift:] + base[:shift]
            assert o[0] == base[shift]


def test_stagger_one_stage_per_gpu_example():
    base = list(range(10))
    assert staggered_order(base, 0, 4, 3) == base
    assert staggered_order(base, 1, 4, 3) == [3, 4, 5, 6, 7, 8, 9, 0, 1, 2]
    assert staggered_order(base, 3, 4, 3) == [9, 0, 1, 2, 3, 4, 5, 6, 7, 8]
    with pytest.raises(ValueError):
        staggered_order(base, 4, 4, 3)


def test_column_major_order():
    k = _kernel(48, 32, 16, 16, wf_grid=(1, 1), order="column_major")  # 3 x 2 tiles
    assert wg_order(k) == [0, 2, 4, 1, 3, 5]
    assert tile_rect(k, 1) == (16, 0, 16, 16)


@pytest.mark.parametrize("order", ["row_major", "column_major"])
def test_base_tile_matches_materialised_order(order):
    from t3sim.workload.wg_order import base_tile

    k = _kernel(70, 50, 16, 16, order=order)
    assert [base_tile(k, w) for w in range(k.num_wgs)] == wg_order(k)
    with pytest.raises(IndexError):
        base_tile(k, k.num_wgs)


