"""DRAM traffic accounting of collective plans: baseline (CU) vs NMC (paper Sec. 4.3, Figs. 10, 18)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from t3sim.collectives import build_plan
from t3sim.collectives.traffic import Traffic, account


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_ring_rs_totals(n):
    """Per GPU, chunk C:
    baseline: step 0 reads the local chunk (C); steps 1..N-2 read local + received (2C each);
    the final reduction reads local + received (2C) and writes C; every step receives one
    copy written into memory ((N-1) C).  Reads (2N-1)C, writes NC.
    NMC: every step reads the (in-memory reduced) chunk it sends, (N-1)C; receipts are
    updates, (N-1)C; no final reduction."""
    C = 64
    p = build_plan("reduce_scatter", "ring", n, n * C, elem_bytes=1)
    base, nmc = account(p, "baseline"), account(p, "nmc")
    for g in range(n):
        b, m = base.per_gpu(g), nmc.per_gpu(g)
        assert (b.reads_B, b.writes_B) == ((2 * n - 1) * C, n * C)
        assert b.rs_read_received_B == (n - 1) * C and b.cu_reduce_B == (n - 1) * C
        assert (m.reads_B, m.rs_update_B, m.rs_write_B, m.rs_read_received_B) == ((n - 1) * C, (n - 1) * C, 0, 0)


def test_fig10_steady_state_step():
    """Fig. 10: a steady-state RS step reads 2 copies and writes 1 (baseline); reads 1, updates 1 (T3/NMC)."""
    C = 100
    p = build_plan("reduce_scatter", "ring", 4, 4 * C, elem_bytes=1)
    b = account(p, "baseline").per_step(1, 0)
    assert (b.rs_read_local_B, b.rs_read_received_B, b.rs_write_B) == (C, C, C)
    m = account(p, "nmc").per_step(1, 0)
    assert (m.rs_read_local_B, m.rs_read_received_B, m.rs_update_B, m.rs_write_B) == (C, 0, C, 0)
    # last step of the baseline also does the final reduction: 2 more reads and 1 more write
    last = account(p, "baseline").per_step(2, 0)
    assert (last.reads_B, last.writes_B) == (2 * C + 2 * C, C + C)


def test_direct_rs_and_ag():
    n, C = 8, 10
    rs = build_plan("reduce_scatter", "direct", n, n * C, elem_bytes=2)
    b = account(rs, "baseline").per_gpu(3)
    # sends N-1 chunks, receives N-1 copies, final: local + N-1 copies read, 1 written
    assert b == Traffic(rs_read_local_B=n * 2 * C, rs_read_received_B=(n - 1) * 2 * C,
                        rs_write_B=n * 2 * C, cu_reduce_B=(n - 1) * 2 * C)
    m = account(rs, "nmc").per_gpu(3)
    assert m == Traffic(rs_read_local_B=(n - 1) * 2 * C, rs_update_B=(n - 1) * 2 * C)
    ag = build_plan("all_gather", "direct", n, n * C, elem_bytes=2)
    for v in ("baseline", "nmc"):
        assert account(ag, v).per_gpu(0) == Traffic(ag_read_B=(n - 1) * 2 * C, ag_write_B=(n - 1) * 2 * C)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 12), num=st.integers(0, 500), bidir=st.booleans(), alg=st.sampled_from(["ring", "direct"]),
       variant=st.sampled_from(["baseline", "nmc"]))
def test_all_reduce_is_rs_plus_ag(n, num, bidir, alg, variant):
    kw = dict(elem_bytes=2, bidirectional=bidir)
    ar = account(build_plan("all_reduce", alg, n, num, **kw), variant)
    rs = account(build_plan("reduce_scatter", alg, n, num, **kw), variant)
    ag = account(build_plan("all_gather", alg, n, num, **kw), variant)
    for g in range(n):
        assert ar.per_gpu(g) == rs.per_gpu(g) + ag.per_gpu(g)
    # conservation: every network byte is read once at its sender and lands once at its receiver
    plan = build_plan("all_reduce", alg, n, num, **kw)
    tot = ar.total()
    net = plan.total_network_bytes()
    assert tot.ag_write_B == sum(x.nbytes(2) for s in plan.steps for x in s.xfers if x.op == "store")
    if variant == "nmc":
        assert tot.rs_update_B + tot.ag_write_B == net
        assert tot.rs_read_local_B + tot.ag_read_B == net


def test_all_to_all_local_copy_counted():
    p = build_plan("all_to_all", "direct", 4, 40, elem_bytes=1)
    t = account(p).per_gpu(0)
    assert (t.ag_read_B, t.ag_write_B) == (40, 40)  # 3 blocks sent + 1 local read; 3 received + 1 local write


def test_bad_variant():
    with pytest.raises(ValueError):
        account(build_plan("reduce_scatter", "ring", 4, 40), "pim")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 1 << 40), min_size=7, max_size=7), st.integers(0, 1 << 20), st.integers(0, 1 << 20))
def test_slice_share_is_each_field_scaled(vals, part, whole):
    """A slice's share of its transfer's traffic (``Traffic.scaled``, once per slice in the runner): every field
    ``* part // whole``, all zero for ``whole == 0``; sums and dict views see the same fields."""
    from dataclasses import fields

    t = Traffic(*vals)
    names = [f.name for f in fields(Traffic)]
    got = t.scaled(part, whole)
    want = {n: (getattr(t, n) * part // whole if whole else 0) for n in names}
    assert got.as_dict() == want
    assert list(t.as_dict()) == names and (t + got).as_dict() == {n: getattr(t, n) + want[n] for n in names}
