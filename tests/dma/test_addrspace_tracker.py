"""Address-space configurations (Sec. 4.4, 7.1) and the tracker (Sec. 4.2.1): semantics, storage, stalls."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from t3sim.config.system import TrackerConfig
from t3sim.dma import addrspace as A
from t3sim.dma.tracker import Tracker


@pytest.mark.parametrize("N", [2, 3, 4, 8, 16])
@pytest.mark.parametrize("W", [16, 37, 101])
def test_ring_rs_every_position_fully_reduced_at_its_owner(N, W):
    if W < N:
        pytest.skip("fewer WGs than GPUs")
    spaces = A.ring_reduce_scatter(N, W)
    got = A.deliveries(spaces)
    b = A.chunk_bounds(W, N)
    for p in range(W):
        c = int(np.searchsorted(b, p, side="right") - 1)
        owner = (c + 1) % N  # GPU g ends with chunk g-1, i.e. chunk c is reduced at GPU c+1
        assert spaces[owner].final[p]
        assert sorted(o for o, _ in got[(owner, p)]) == list(range(N))  # every GPU's partial, exactly once
        assert all(op == "update" for _, op in got[(owner, p)])
        assert sum(s.final[p] for s in spaces) == 1
    for s in spaces:  # staggering: GPU g starts with chunk g, which it remote-maps to g-1
        assert s.start == b[s.gpu]
        assert s.remote[int(b[s.gpu])] == [((s.gpu - 1) % N, "update")]
        assert not s.local_op[int(b[s.gpu])]


@pytest.mark.parametrize("N", [2, 3, 4, 8, 16])
@pytest.mark.parametrize("W", [16, 37, 101])
def test_bidirectional_ring_rs_halves_meet_at_the_same_owner(N, W):
    """Both halves of chunk c end fully reduced at GPU c+1, one half having gone each way round (Table 1 ring)."""
    if W < N:
        pytest.skip("fewer WGs than GPUs")
    spaces = A.ring_reduce_scatter(N, W, bidirectional=True)
    got = A.deliveries(spaces)
    b = A.chunk_bounds(W, N)
    for p in range(W):
        c = int(np.searchsorted(b, p, side="right") - 1)
        owner = (c + 1) % N
        assert spaces[owner].final[p] and sum(s.final[p] for s in spaces) == 1
        assert sorted(o for o, _ in got[(owner, p)]) == list(range(N))
    for s in spaces:
        order = s.positions().tolist()
        assert sorted(order) == list(range(W))  # a permutation: every WG dispatched once
        if W < 2 * N:
            continue  # one-WG chunks have an empty half A: not every GPU sends both ways
        peers = {peer for r in s.remote for peer, _ in r} | {s.dma[p].peer for p in s.dma_positions()}
        assert peers == {(s.gpu - 1) % N, (s.gpu + 1) % N}  # both neighbours, i.e. both link directions
        # staggering: the first dispatched WGs are step 0's, remote-mapped (never written locally)
        first = order[: max(1, W // (2 * N))]
        assert all(s.remote[p] and not s.local_op[p] for p in first)


@pytest.mark.parametrize("nx,ny", [(0, 3), (3, 3), (5, 2), (1, 7)])
def test_interleave_spreads_both_lists_evenly(nx, ny):
    x, y = list(range(nx)), list(range(100, 100 + ny))
    m = A.interleave(x, y)
    assert sorted(m) == sorted(x + y)
    assert [v for v in m if v < 100] == x and [v for v in m if v >= 100] == y  # each keeps its order
    if nx and ny:  # no run of one list longer than ceil(ratio) + 1
        longest = max(len(list(r)) for _, r in itertools.groupby(v < 100 for v in m))
        assert longest <= -(-max(nx, ny) // min(nx, ny)) + 1


@pytest.mark.parametrize("N", [2, 4, 7, 16])
def test_direct_rs_needs_no_dma_and_reduces_at_slice_owner(N):
    W, S = 50, 12
    spaces = A.direct_reduce_scatter(N, W, S)
    got = A.deliveries(spaces)
    d = A.stage_slices(W, S, N)
    for p in range(W):
        assert sorted(o for o, _ in got[(int(d[p]), p)]) == list(range(N))
    assert all(not s.dma_positions() for s in spaces)


@pytest.mark.parametrize("N", [2, 3, 8])
def test_all_gather_and_all_to_all(N):
    W = 8 * N + 3
    for cfg in (A.ring_all_gather, A.direct_all_gather):
        got = A.deliveries(cfg(N, W))
        b = A.chunk_bounds(W, N)
        for g in range(N):
            for p in range(W):
                c = int(np.searchsorted(b, p, side="right") - 1)
                assert [o for o, _ in got[(g, p)]] == [c], (cfg.__name__, g, p)  # exactly one copy, from its producer
                assert all(op == "store" for _, op in got[(g, p)])
    got = A.deliveries(A.all_to_all(N, W))
    b = A.chunk_bounds(W, N)
    for g in range(N):
        for p in range(int(b[g]), int(b[g + 1])):
            assert sorted(o for o, _ in got[(g, p)]) == list(range(N))
        # remote-mapped slices are not written locally
        for p in range(W):
            if not b[g] <= p < b[g + 1]:
                assert (g, "store") not in got[(g, p)]


def test_api_rejects_bad_calls():
    a = A.AddressSpace(0, 4, 10)
    with pytest.raises(ValueError):
        a.remote_map(0, 2, 0)  # self
    with pytest.raises(ValueError):
        a.dma_map(0, 11, 1)
    a.dma_map(0, 2, 1)
    with pytest.raises(ValueError):
        a.dma_map(1, 3, 2)  # overlapping dma_map
    with pytest.raises(ValueError):
        A.chunk_bounds(3, 4)


def test_tracker_storage_is_the_papers_19KB():
    """Sec. 4.2.1: 256 entries, wf_id 3 bits, 19 KB. 256 x 8 x (8+3+1+48+16) bits = 19,456 B (first_come); the
    deadlock-free default adds a ready bit per way: 19,712 B (19.25 KiB)."""
    t = Tracker(TrackerConfig(admission="first_come"))
    b = t.storage_bits()
    assert (b["wg_lsb"], b["wg_msb"], b["wf_id"], b["ready"]) == (8, 8, 3, 0)
    assert b["per_way"] == 76
    assert b["total"] == 256 * 8 * 76 == 155_648
    assert t.storage_bytes() == 19_456 == 19 * 1024
    d = Tracker(TrackerConfig())
    assert d.policy.name == "reserve_ready" and d.storage_bits()["per_way"] == 77
    assert d.storage_bytes() == 19_712 == 19_456 + 256 * 8 // 8


def _program(t, regions, thr, fired):
    for r in regions:
        t.program(r, thr, lambda reg, tick: fired.append((reg, tick)))


def test_tracker_fires_once_at_threshold_and_never_early():
    t = Tracker(TrackerConfig())
    fired = []
    _program(t, [(w, f) for w in range(4) for f in range(8)], 6, fired)
    for k in range(5):
        t.observe([k] * 32, np.repeat(np.arange(4), 8), np.tile(np.arange(8), 4))
        assert not fired
    t.observe([9] * 32, np.repeat(np.arange(4), 8), np.tile(np.arange(8), 4))
    assert len(fired) == 32 and all(tick == 9 for _, tick in fired)
    t.check_done()
    t.program((9, 0), 1, lambda reg, tick: None)
    rid = t._rid[(9, 0)]
    t._cnt[rid] = 1  # a counter already at its threshold must not be bumped past it
    with pytest.raises(AssertionError):
        t._bump(rid, 10, 1)


def test_tracker_granularity_wg_and_multiple():
    t = Tracker(TrackerConfig(granularity="wg", granularity_multiple=2))
    assert t.region(5, 7) == (2, 0)
    t2 = Tracker(TrackerConfig(granularity="wf", granularity_multiple=4))
    assert t2.region(5, 7) == (5, 1)


@pytest.mark.parametrize("seed", range(5))
def test_tracker_small_sets_stall_but_every_entry_triggers_exactly_once(seed):
    """A 2-set, 2-way tracker with 24 regions in random interleaving: sets fill, accesses stall, all fire once."""
    rng = random.Random(seed)
    t = Tracker(TrackerConfig(entries=2, ways=2))
    fired = []
    regions = [(w, f) for w in range(6) for f in range(4)]
    thr = 3
    _program(t, regions, thr, fired)
    accesses = [r for r in regions for _ in range(thr)]
    rng.shuffle(accesses)
    for i, (w, f) in enumerate(accesses):
        t.observe([i], [w], [f])
        assert t.max_set_use <= 2
    t.check_done()
    assert sorted(r for r, _ in fired) == sorted(regions)
    assert t.stalled_accesses > 0 and t.stall_ticks > 0
    t.observe([999], [77], [0])
    assert t.untracked == 1


def test_tracker_reports_what_it_waits_for():
    """``waiting()`` (the watchdog's report): regions below threshold, stalled accesses, full sets."""
    t = Tracker(TrackerConfig(entries=1, ways=1, admission="first_come"))
    fired = []
    _program(t, [(0, 0), (1, 0)], 2, fired)
    assert t.waiting() == (2, 0, 0)
    t.observe([0, 1], [0, 1], [0, 0])  # (0, 0) takes the only way; (1, 0) stalls
    assert t.waiting() == (2, 1, 1)
    t.observe([2], [0], [0])  # (0, 0) fires, the stalled access proceeds
    assert fired and t.waiting() == (1, 0, 0)
