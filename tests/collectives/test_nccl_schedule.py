"""NCCL ring Simple schedule (t3sim.collectives.nccl_schedule): ops, blocks, slices, chunks cover the data exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.collectives.nccl_schedule import block_of, build_schedule, ring_ops, slices

NCCL = dict(buffer_B=4 << 20, steps=8, chunk_steps=4, slice_steps=2)  # NCCL 2.28 defaults


def test_ring_ops_match_nccl_prims_calls():
    assert [o.prim for o in ring_ops("reduce_scatter", 4)] == ["send", "recvReduceSend", "recvReduceSend", "recvReduceCopy"]
    assert [o.prim for o in ring_ops("all_gather", 4)] == ["copySend", "recvCopySend", "recvCopySend", "recv"]
    assert [o.prim for o in ring_ops("all_reduce", 3)] == ["send", "recvReduceSend", "recvReduceCopySend", "recvCopySend", "recv"]
    assert [o.prim for o in ring_ops("reduce_scatter", 2)] == ["send", "recvReduceCopy"]
    for coll in ("reduce_scatter", "all_gather", "all_reduce"):
        ops = ring_ops(coll, 5)
        assert not ops[0].recv and ops[0].send and not ops[-1].send and ops[-1].recv
        assert all(o.recv and o.send for o in ops[1:-1])
    with pytest.raises(ValueError):
        ring_ops("all_to_all", 4)


@pytest.mark.parametrize("coll", ["reduce_scatter", "all_gather", "all_reduce"])
@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_each_gpu_ends_with_its_own_block_and_a_ring_visits_every_block(coll, n):
    ops = ring_ops(coll, n)
    for g in range(n):
        blocks = [block_of(coll, n, g, j) for j in range(len(ops))]
        # what g receives at op j is what g-1 sent at op j-1: the same block
        for j in range(1, len(ops)):
            assert blocks[j] == block_of(coll, n, (g - 1) % n, j - 1)
        if coll == "reduce_scatter":
            assert blocks[-1] == g and sorted(blocks) == list(range(n))
        elif coll == "all_gather":
            assert blocks[0] == g and sorted(blocks) == list(range(n))
        else:
            assert blocks[n - 1] == g and sorted(blocks[:n]) == list(range(n)) and sorted(blocks[n - 1:]) == list(range(n))


def test_slices_follow_generic_op():
    step = (4 << 20) // 8 // 2  # bf16 elements in one 512 KiB FIFO step
    # a full 2 MiB chunk: two slices of 1 MiB (= 2 steps each)
    assert slices(4 * step, 2, step, 2) == [(0, 2 * step), (2 * step, 2 * step)]
    # small op: the slice floor is 1/32 of the 2 steps (32 KiB); the second slice is empty but still exists
    assert slices(1000, 2, step, 2) == [(0, 1000), (1000, 0)]
    assert slices(0, 2, step, 2) == [(0, 0), (0, 0)]
    assert slices(40000, 2, step, 2) == [(0, 20000), (20000, 20000)]


@settings(max_examples=60, deadline=None)
@given(coll=st.sampled_from(["reduce_scatter", "all_gather", "all_reduce"]), n=st.integers(2, 6),
       blocks=st.integers(1, 3_000_000), channels=st.integers(1, 24), eb=st.sampled_from([2, 4]))
def test_schedule_touches_every_element_exactly_as_nccl(coll, n, blocks, channels, eb):
    """Every GPU's final outputs cover its output exactly once; every op of every GPU moves the same bytes per chunk."""
    num = blocks * n if coll != "all_reduce" else blocks
    s = build_schedule(coll, n, num, eb, channels, **NCCL)
    count = num // n
    for g in range(n):
        for ch in s.chunks:
            for chunk in ch:
                spans = chunk.spans[g]
                assert len({sp.nelem for sp in spans}) == 1 or coll == "all_reduce"
                for op, sp in zip(s.ops, spans):
                    assert sp.nelem <= NCCL["buffer_B"] // NCCL["steps"] * NCCL["chunk_steps"] // eb
                    if op.reads_input and sp.nelem:
                        assert 0 <= sp.in_elem and sp.in_elem + sp.nelem <= s.in_elems
                    if op.writes_output and sp.nelem:
                        assert 0 <= sp.out_elem and sp.out_elem + sp.nelem <= s.out_elems
        # exact coverage, checked through the output intervals
        intervals = sorted((sp.out_elem, sp.out_elem + sp.nelem) for ch in s.chunks for chunk in ch
                           for op, sp in zip(s.ops, chunk.spans[g]) if op.writes_output and sp.nelem)
        pos = 0
        for lo, hi in intervals:
            assert lo == pos, (coll, g, lo, pos)
            pos = hi
        assert pos == s.out_elems
    assert s.out_elems == (count if coll == "reduce_scatter" else num)


def test_chunks_per_channel_and_fifo_slots():
    # 192 MiB RS over 4 GPUs, 24 channels: one 2 MiB chunk per channel, 6 slices sent per connection
    s = build_schedule("reduce_scatter", 4, 192 << 19, 2, 24, **NCCL)
    assert {len(ch) for ch in s.chunks} == {1}
    assert {chunk.spans[0][0].nelem for ch in s.chunks for chunk in ch} == {1 << 20}
    assert s.slices_per_connection() == 6 and s.slots == 4
    assert [s.slot_offset_B(k) for k in range(6)] == [0, 1 << 20, 2 << 20, 3 << 20, 0, 1 << 20]
    # 4x the data: four chunks per channel
    assert {len(ch) for ch in build_schedule("reduce_scatter", 4, 768 << 19, 2, 24, **NCCL).chunks} == {4}


def test_bad_schedules_are_refused():
    with pytest.raises(ValueError, match="multiple of 4"):
        build_schedule("reduce_scatter", 4, 1001, 2, 2, **NCCL)
    with pytest.raises(ValueError):
        build_schedule("reduce_scatter", 4, 1000, 2, 0, **NCCL)
