"""The memory hierarchy issues whole DRAM accesses of ``hbm.access_size_B``.

The CUs, L2 and DMA engines speak 64 B requests; the DRAM moves 32 B per column command on Table 1. A
read miss fetches the accesses covering the *missing sectors* only (a sector miss of one 32 B sector is
one access), a write-back the accesses covering the dirty sectors, an uncached write or op-and-store
update of a request 64 / access_size_B accesses carrying its WG/WF ids. Bytes are conserved: the
per-category traffic counters equal the bytes the memory served.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t3sim.cache.common import C_WB
from t3sim.compute.memhier import CATEGORY_SOURCE, REQ_B, MemoryHierarchy
from t3sim.compute.fast.memhier_kernel import mask_accesses
from t3sim.config import SystemConfig
from t3sim.memory.request import Kind, Source, Stream

#: (bus width, burst length) -> access size: Table 1 (32 B), BL4 (64 B), a 16 B access
BUSES = {32: (16, 2), 64: (16, 4), 16: (8, 2)}


def _hier(access_B: int = 32, functional: bool = False):
    width, bl = BUSES[access_B]
    cfg = SystemConfig.model_validate({"hbm": {"channels": 4, "bus_width_B": width, "burst_length": bl},
                                       "memory_controller": {"frontend_latency_gpu_cycles": 0}})
    env = simpy.Environment()
    return env, MemoryHierarchy(env, cfg, functional=functional)


def _dram(h):
    """The DRAM accesses issued so far: (byte address, kind) in submission order."""
    ms = h.mem
    return ms.r_line[: ms.n] * ms.access_B, ms.r_kind[: ms.n].copy()


def _hbm_bytes(h):
    st = h.stats()
    if not st.value("hbm.requests"):
        return 0  # nothing reached DRAM (e.g. only cached writes): no per-kind statistics
    return sum(st.value(f"hbm.by_kind.{k}.bytes") for k in ("read", "write", "update"))


def _traffic(h):
    return sum(sum(v.values()) for v in h.traffic.values())


@pytest.mark.parametrize("access_B", sorted(BUSES))
def test_cold_read_fetches_the_request_in_accesses(access_B):
    env, h = _hier(access_B)
    h.read([4096 + 64])
    env.run()
    addrs, kinds = _dram(h)
    assert addrs.tolist() == list(range(4096 + 64, 4096 + 128, access_B)) and np.all(kinds == Kind.READ)
    assert _traffic(h) == _hbm_bytes(h) == REQ_B


@pytest.mark.parametrize("access_B", sorted(BUSES))
def test_sector_miss_fetches_only_the_missing_sector(access_B):
    """Sector 0 of a line was written (32 B, valid and dirty); a 64 B read of sectors 0-1 misses sector 1
    only: the accesses covering bytes 32-63 (one 32 B access; a 64 B access covers the pair)."""
    env, h = _hier(access_B)
    h.l2.access(0, [8192], True, 0, size_B=32)
    h.read([8192])
    env.run()
    addrs, _ = _dram(h)
    lo = 8192 + 32 - (32 % access_B if access_B <= 32 else 32)
    assert addrs.tolist() == list(range(lo, 8192 + 64, access_B))
    assert h.l2.stats().value("read_sector_misses") == 1
    assert _traffic(h) == _hbm_bytes(h) == max(32, access_B)


@pytest.mark.parametrize("access_B", sorted(BUSES))
def test_writeback_of_dirty_sectors_and_uncached_write(access_B):
    """A resident line with only sector 2 dirty meets an uncached 64 B write of sectors 0-1: the L2 first
    writes back the dirty sector (its accesses), then the write goes to DRAM as 64 / access_B accesses."""
    env, h = _hier(access_B)
    line = 1 << 16
    h.l2.access(0, [line + 64], True, 0, size_B=32)  # sector 2 valid and dirty
    h.write([line], uncached=True, wg_id=7, wf_id=3)
    env.run()
    addrs, kinds = _dram(h)
    wb = list(range(line + 64 - (64 % access_B), line + 64 + max(32, access_B), access_B)) if access_B <= 32 else [line + 64]
    assert addrs.tolist() == wb + list(range(line, line + 64, access_B))
    assert np.all(kinds == Kind.WRITE)
    assert _traffic(h) == _hbm_bytes(h)


@pytest.mark.parametrize("access_B", sorted(BUSES))
def test_updates_carry_their_ids_on_every_access(access_B):
    env, h = _hier(access_B)
    seen = []
    h.mem.set_enqueue_hook(lambda info: seen.append(info), writes_only=True)
    h.write(np.array([0, 64, 4096]), update=True, wg_id=np.array([5, 6, 7]), wf_id=np.array([1, 2, 3]))
    env.run()
    k = REQ_B // access_B
    wg = np.concatenate([i.wg_id for i in seen])
    wf = np.concatenate([i.wf_id for i in seen])
    assert sorted(wg.tolist()) == sorted([5] * k + [6] * k + [7] * k)
    assert sorted(zip(wg.tolist(), wf.tolist())) == sorted([(5, 1)] * k + [(6, 2)] * k + [(7, 3)] * k)
    assert all(i.bytes == access_B for i in seen)
    assert h.traffic["gemm"]["update"] == _hbm_bytes(h) == 3 * REQ_B


@pytest.mark.parametrize("access_B", sorted(BUSES))
def test_functional_values_survive_the_split(access_B):
    """Uncached writes of 64 B requests (16 float32 values each) and an update, then uncached reads with
    data and a DMA-style direct read: every request reads back its 16 values in order."""
    env, h = _hier(access_B, functional=True)
    addrs = np.array([0, 128, 64 * 1000], dtype=np.int64)
    vals = np.arange(48, dtype=np.float32).reshape(3, 16)
    got = {}

    def proc():
        yield h.write(addrs, uncached=True, data=vals)
        yield h.write(addrs[:1], update=True, data=np.ones((1, 16), np.float32))
        got["read"] = yield h.read(addrs[::-1], uncached=True, with_data=True)
        got["direct"] = (yield h.direct_read(addrs, "rs", Stream.COMM, Source.DMA)).data

    env.process(proc())
    env.run()
    want = vals.copy()
    want[0] += 1
    assert np.array_equal(got["read"], want[::-1])
    assert np.array_equal(got["direct"], want)
    assert np.array_equal(h.mem.functional.read_addr(128), want[1])


OPS = st.sampled_from(["read", "read_unc", "write", "write_unc", "update", "sector_write"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(access_B=st.sampled_from(sorted(BUSES)), ops=st.lists(st.tuples(OPS, st.integers(0, 63)), min_size=1, max_size=25))
def test_bytes_are_conserved(access_B, ops):
    """Any mix of cached/uncached reads and writes, updates and 32 B sector writes on a few lines: every
    DRAM access is aligned, a batch's accesses are distinct, and the traffic counters add up to the bytes
    the memory served."""
    env, h = _hier(access_B)

    def proc():
        for op, x in ops:
            a = np.array([(x % 16) * 64 + (x // 16) * (1 << 14)], dtype=np.int64)
            if op == "sector_write":
                h.l2.access(env.now, a + 32 * (x % 2), True, 0, size_B=32)
                continue
            if op.startswith("read"):
                yield h.read(a, uncached=op == "read_unc")
            else:
                yield h.write(a, uncached=op == "write_unc", update=op == "update", wg_id=1, wf_id=0)

    env.process(proc())
    env.run()
    drained = h.drained()
    env.run()
    assert drained.processed
    addrs, _ = _dram(h)
    assert np.all(addrs % access_B == 0)
    for b in range(len(h.mem.batches.first)):
        s, n = h.mem.batches.first[b], h.mem.batches.count[b]
        assert len(np.unique(addrs[s:s + n])) == n
    assert _traffic(h) == _hbm_bytes(h)


WRITE_OPS = st.sampled_from(["write", "write_unc", "update", "sector_write", "read"])


def _reference_write(h, addrs, category, uncached=False, update=False, wg_id=None, wf_id=None):
    """The definition of ``MemoryHierarchy.write`` (its form before the compiled write path), stream COMPUTE:
    ``L2Cache.access``, the dirty lines' write-backs owner by owner (``np.unique`` and ``mask_accesses``), and the
    requests the L2 sends to DRAM split by ``MemoryPort.access(request_B=64)``."""
    uncached = uncached or update
    r = h.l2.access(h.env.now, addrs, True, h._cat(category), uncached=uncached)
    wb = r.writebacks
    line_B, sector_B, access_B = h._geo
    for src in np.unique(wb.src):
        sel = wb.src == src
        acc = mask_accesses(wb.line_addr[sel].astype(np.int64), wb.sector_mask[sel].astype(np.int64), sector_B,
                            line_B // sector_B, access_B)
        if len(acc):
            cat = h.categories[int(src)]
            h.traffic[cat]["write"] += access_B * len(acc)
            h.track_write(h.port.access(acc, Kind.WRITE, Stream.COMPUTE, CATEGORY_SOURCE[cat], awaited=False))
    waits = []
    direct = r.dram_write_mask != 0
    if direct.any():
        sel = np.flatnonzero(direct)
        pick = (lambda x: x if x is None or np.isscalar(x) else np.asarray(x)[sel])
        kind = Kind.UPDATE if update else Kind.WRITE
        h.traffic[category][kind.name.lower()] += REQ_B * len(sel)
        waits.append(h.track_write(h.port.access(addrs[sel], kind, Stream.COMPUTE, CATEGORY_SOURCE[category],
                                                 wg_id=pick(wg_id), wf_id=pick(wf_id), request_B=REQ_B)))
    return h._join(waits, int(r.done_tick.max()), 0)


def _write_runs(access_B, ops):
    """Run ``ops`` (op, line indices, id kind) on a hierarchy with the compiled write path and on one with its
    definition (:func:`_reference_write`); return each run's completions, enqueue reports, request rows, batches, L2
    lines, L2 counters, traffic."""
    runs = []
    width, bl = BUSES[access_B]
    # a 16 KiB L2 of 2 ways: the four 16 KiB-apart regions below share its sets, so dirty lines are evicted
    cfg = SystemConfig.model_validate({"hbm": {"channels": 4, "bus_width_B": width, "burst_length": bl},
                                       "l2": {"size_MiB": 1 / 64, "banks": 1, "associativity": 2}})
    for fast in (True, False):
        env = simpy.Environment()
        h = MemoryHierarchy(env, cfg)
        done = []
        seen = []
        h.mem.set_enqueue_hook(lambda info: seen.append((info.tick.tolist(), info.kind.tolist(), info.wg_id.tolist(),
                                                          info.wf_id.tolist())))

        def proc():
            for j, (op, xs, idk) in enumerate(ops):
                a = np.array([(x % 24) * 64 + (x // 24) * (1 << 14) for x in xs], dtype=np.int64)
                cat = ("gemm", "rs", "dma")[j % 3]
                if op == "sector_write":
                    h.l2.access(env.now, a + 32 * (j % 2), True, j % 3, size_B=32)
                    continue
                if op == "read":
                    ev = h.read(a, cat)
                else:
                    ids = {"none": (None, None), "scalar": (j, 1),
                           "array": (np.arange(len(a)) + 10 * j, np.arange(len(a)))}[idk]
                    write = h.write if fast else functools.partial(_reference_write, h)
                    ev = write(a, cat, uncached=op == "write_unc", update=op == "update", wg_id=ids[0], wf_id=ids[1])
                ev.callbacks.append(lambda _e, j=j: done.append((j, env.now)))
                if j % 2:
                    yield ev

        env.process(proc())
        env.run()
        ms = h.mem
        runs.append((done, seen, ms.RQ[:, : ms.n].copy(), list(ms.batches.count), h.l2.snapshot(),
                     h.l2.counts.copy(), {c: dict(v) for c, v in h.traffic.items()}))
    return runs


def _same(runs):
    for a, b in zip(*runs):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b)
        else:
            assert a == b


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(access_B=st.sampled_from(sorted(BUSES)),
       ops=st.lists(st.tuples(WRITE_OPS, st.lists(st.integers(0, 95), min_size=1, max_size=6, unique=True),
                              st.sampled_from(["none", "scalar", "array"])), min_size=1, max_size=20))
def test_compiled_write_path_is_the_general_one(access_B, ops):
    """``MemoryHierarchy.write``'s compiled path (:func:`~t3sim.compute.fast.l2_write`: the L2 access, the
    write plan and the accesses' split in one call; :func:`~t3sim.compute.fast.writeback_groups`) against its
    definition (:func:`_reference_write`: ``L2Cache.access`` and ``MemoryPort.access(request_B=64)``'s split): the
    same DRAM accesses in the same batches with the same ids, the same completion ticks, enqueue reports, L2 state
    and traffic."""
    _same(_write_runs(access_B, ops))


@pytest.mark.parametrize("access_B", sorted(BUSES))
def test_compiled_write_path_with_evictions_of_several_owners(access_B):
    """The same comparison on a fixed sequence whose cached writes of three owners evict each other's dirty lines
    (2 ways, four regions on the same sets) and whose uncached writes and updates flush them."""
    ops = [("write", [0, 1, 2, 3], "none"), ("write", [24, 25, 26], "scalar"), ("write", [48, 49, 50], "array"),
           ("write", [72, 73, 0], "none"), ("update", [1, 25, 49], "array"), ("write_unc", [2, 26, 50], "scalar"),
           ("read", [3, 27], "none"), ("write", [4, 28, 52, 76], "array")]
    runs = _write_runs(access_B, ops)
    counts = runs[0][5]
    assert counts[:, C_WB].sum() > 0 and np.count_nonzero(counts[:, C_WB]) >= 2  # write-backs of several owners
    _same(runs)


@settings(max_examples=50, deadline=None)
@given(access_B=st.sampled_from(sorted(BUSES)),
       rows=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 15), st.integers(0, 4)), max_size=30))
def test_writeback_groups_are_per_owner_in_ascending_order(access_B, rows):
    """:func:`~t3sim.compute.fast.writeback_groups` (the L2's write-backs as DRAM writes, one batch per owner)
    is, owner by owner in ascending order, :func:`~t3sim.compute.fast.mask_accesses` of that owner's lines."""
    from t3sim.cache.fast import l2_kernel as L2K
    from t3sim.compute.fast.memhier_kernel import writeback_groups

    line_B, sector_B = 128, 32
    E = np.zeros((L2K.NE, len(rows)), dtype=np.int64)
    for i, (ln, m, s) in enumerate(rows):
        E[L2K.E_LINE, i], E[L2K.E_MASK, i], E[L2K.E_SRC, i] = ln * line_B, m, s
    srcs, off, acc = writeback_groups(E, sector_B, line_B // sector_B, access_B)
    want = sorted({s for _l, _m, s in rows})
    assert srcs.tolist() == want
    for g, s in enumerate(want):
        sel = E[L2K.E_SRC] == s
        ref = mask_accesses(E[L2K.E_LINE][sel], E[L2K.E_MASK][sel], sector_B, line_B // sector_B, access_B)
        assert acc[off[g]:off[g + 1]].tolist() == ref.tolist()
    assert off[-1] == len(acc)
