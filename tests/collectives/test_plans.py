"""Collective plans: structure, ownership, registry, and symbolic proof of correctness."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

from t3sim import registry
from t3sim.collectives import build_plan, split_ranges
from t3sim.collectives.plan import Plan, Step, Xfer
from t3sim.collectives.verify import execute, verify

NAMES = ["ring_reduce_scatter", "ring_all_gather", "ring_all_reduce", "direct_reduce_scatter",
         "direct_all_gather", "direct_all_reduce", "all_to_all"]


def test_all_registered():
    assert set(NAMES) <= set(registry.names("collective"))


def test_split_ranges_array_split_sizes():
    assert split_ranges(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert split_ranges(2, 4) == [(0, 1), (1, 2), (2, 2), (2, 2)]
    assert split_ranges(5, 2, base=10) == [(10, 13), (13, 15)]
    with pytest.raises(ValueError):
        split_ranges(3, 0)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(NAMES), n=st.integers(2, 16), num=st.integers(0, 300), bidir=st.booleans(),
       seed=st.integers(0, 2**16))
def test_every_plan_computes_its_collective(name, n, num, bidir, seed):
    plan = registry.get("collective", name)(n, num, elem_bytes=2, bidirectional=bidir)
    verify(plan, seed)


@pytest.mark.parametrize("n", range(2, 17))
@pytest.mark.parametrize("bidir", [False, True])
def test_ring_rs_structure(n, bidir):
    num = 1000 * n + 7  # uneven chunks
    p = build_plan("reduce_scatter", "ring", n, num, bidirectional=bidir)
    verify(p)
    assert p.num_steps == n - 1
    dirs = (1, -1) if bidir else (1,)
    for s, step in enumerate(p.steps):
        for i in range(n):
            sends = step.sends_of(i)
            assert len(sends) == len(dirs)
            assert all(x.op == "reduce" for x in sends)
            for d in dirs:
                assert any(x.dst == (i + d) % n and x.chunk == (i - d * (s + 1)) % n for x in sends)
    # ownership rule: chunk i is last received (fully reduced) by GPU i
    last = p.steps[-1]
    assert all(x.chunk == x.dst for x in last.xfers)
    # every GPU sends (N-1)/N of the array in total
    for i in range(n):
        sent = sum(p.step_bytes(s, i) for s in range(p.num_steps))
        assert abs(sent - (n - 1) * num * 2 / n) <= (n - 1) * 2 * 2


def test_ring_logical_edges_are_neighbours():
    uni = build_plan("all_reduce", "ring", 8, 800)
    assert uni.logical_edges() == sorted((i, (i + 1) % 8) for i in range(8))
    bi = build_plan("all_reduce", "ring", 8, 800, bidirectional=True)
    assert set(bi.logical_edges()) == {(i, (i + 1) % 8) for i in range(8)} | {(i, (i - 1) % 8) for i in range(8)}
    assert build_plan("reduce_scatter", "direct", 4, 40).num_steps == 1
    assert build_plan("all_reduce", "direct", 4, 40).num_steps == 2


def test_bidirectional_halves_per_direction_bytes():
    uni = build_plan("reduce_scatter", "ring", 8, 8 * 1024)
    bi = build_plan("reduce_scatter", "ring", 8, 8 * 1024, bidirectional=True)
    assert uni.total_network_bytes() == bi.total_network_bytes()
    fwd = [x for x in bi.steps[0].xfers if x.dst == (x.src + 1) % 8]
    assert all(x.count == 512 for x in fwd)


def _mutate(plan: Plan, step: int, k: int, **changes) -> Plan:
    steps = list(plan.steps)
    xs = list(steps[step].xfers)
    xs[k] = dataclasses.replace(xs[k], **changes)
    steps[step] = Step(tuple(xs), steps[step].phase)
    return dataclasses.replace(plan, steps=tuple(steps))


def test_verifier_catches_broken_plans():
    p = build_plan("reduce_scatter", "ring", 4, 40)
    with pytest.raises(AssertionError):
        verify(dataclasses.replace(p, steps=p.steps[:-1]))  # one step short
    with pytest.raises(AssertionError):
        verify(_mutate(p, 1, 0, op="store"))  # a reduction overwrites
    with pytest.raises(AssertionError):  # double-counting: an extra reduce of GPU 0's data into chunk 1
        extra = Xfer(0, 1, "buf", 10, "buf", 10, 10, "reduce", 1)
        verify(dataclasses.replace(p, steps=p.steps + (Step((extra,), "rs"),)))
    ag = build_plan("all_gather", "ring", 4, 40)
    with pytest.raises(AssertionError):
        verify(dataclasses.replace(ag, steps=ag.steps[1:]))
    a2a = build_plan("all_to_all", "direct", 4, 40)
    with pytest.raises(AssertionError):
        verify(_mutate(a2a, 0, 1, dst_lo=20))


def test_validate_rejects_hazards_and_bad_ranges():
    p = build_plan("reduce_scatter", "ring", 4, 40)
    with pytest.raises(ValueError, match="reads and writes"):
        # GPU 1 receives chunk 3 in step 0; make it also send chunk 3 in the same step
        x = p.steps[0].sends_of(1)[0]
        dataclasses.replace(p, steps=(Step(p.steps[0].xfers + (dataclasses.replace(x, src_lo=30, dst_lo=30, count=10),), "rs"),)).validate()
    with pytest.raises(ValueError, match="outside"):
        _mutate(p, 0, 0, dst_lo=35).validate()
    with pytest.raises(ValueError, match="overlapping stores"):
        ag = build_plan("all_gather", "direct", 3, 30)
        x = ag.steps[0].xfers[0]
        dataclasses.replace(ag, steps=(Step(ag.steps[0].xfers + (dataclasses.replace(x, src=2, src_lo=20),), "ag"),)).validate()
    with pytest.raises(ValueError):
        build_plan("reduce_scatter", "ring", 1, 10)
    with pytest.raises(ValueError, match="no ring plan"):
        build_plan("broadcast", "ring", 4, 10)


def test_execute_all_reduce_floats():
    import numpy as np

    p = build_plan("all_reduce", "ring", 5, 103, bidirectional=True)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(103) for _ in range(5)]
    out = execute(p, {"buf": [x.copy() for x in xs]})
    for g in range(5):
        np.testing.assert_allclose(out["buf"][g], sum(xs), rtol=1e-12)
