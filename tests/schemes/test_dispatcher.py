"""The WG dispatcher: footprints fit, launch order, most-room placement (compute/dispatcher.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from t3sim.compute.dispatcher import CuDispatcher, Footprint, cu_capacity
from t3sim.config.gpu import GPUConfig

GPU = GPUConfig(num_cus=4)


class Fake:
    """A kernel with ``n`` WGs that records where the dispatcher puts them."""

    def __init__(self, disp, name, fp, n):
        self.disp, self.left, self.placed = disp, n, []
        self.h = disp.register(name, fp, lambda: self.left, self.on_cu)

    def on_cu(self, cu):
        self.left -= 1
        self.placed.append(cu)

    def grab(self):
        while self.left:
            cu = self.disp.acquire(self.h)
            if cu is None:
                return
            self.on_cu(cu)


def test_lone_kernel_places_slot_j_on_cu_j_mod_cus():
    d = CuDispatcher(GPU)
    fp = Footprint.of(GPU, 256, 128, 16384)  # 2 per CU (registers: 2 x 32768 = 65536)
    k = Fake(d, "gemm", fp, 20)
    k.grab()
    assert k.placed == [j % 4 for j in range(8)]  # 8 slots, then full
    assert k.left == 12


def test_later_kernel_waits_for_earlier_kernels_wgs_then_gets_released_cus():
    d = CuDispatcher(GPU)
    big = Fake(d, "gemm", Footprint.of(GPU, 256, 255, 0), 6)  # 64 K registers: one per CU, exclusive
    big.grab()
    assert big.placed == [0, 1, 2, 3] and big.left == 2
    small = Fake(d, "rs", Footprint.of(GPU, 256, 32, 0), 2)
    small.grab()
    assert small.placed == []  # no room, and the earlier kernel still waits anyway
    # a GEMM WG retires on CU 2: an earlier kernel (itself) is first in line -> no yield to the later one
    assert not d.should_yield(big.h, 2)
    d.release(big.h, 2)
    assert big.placed[-1] == 2 and small.placed == []
    big.left = 0  # all of the GEMM's WGs are dispatched: the left-over resources go to the RS
    d.release(big.h, 1)
    assert small.placed == [1, 1]  # both of the small CTAs fit on the freed CU


def test_should_yield_hands_cu_to_earlier_waiting_kernel():
    d = CuDispatcher(GPU)
    rs = Fake(d, "rs", Footprint.of(GPU, 512, 96, 0), 8)  # launched first; 1 fits beside nothing else... see below
    gemm = Fake(d, "gemm", Footprint.of(GPU, 256, 240, 0), 4)
    # rs took every CU with room for it (1 per CU: 49152 registers)
    rs.grab()
    assert rs.placed == [0, 1, 2, 3] and rs.left == 4
    gemm.grab()
    assert gemm.placed == []
    d.release(rs.h, 0)  # an RS CTA leaves CU 0: the RS (earlier) is served first
    assert rs.placed[-1] == 0 and gemm.placed == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(32, 1024), st.integers(16, 255), st.integers(0, 64 * 1024), st.integers(1, 12)),
                min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_capacity_never_exceeded_and_everything_placed(kernels, rnd):
    """Random kernels, random retire order: summed footprints fit every CU; every WG is eventually placed,
    and kernels get their WGs placed in launch order (no later kernel's WG while an earlier one waits)."""
    d = CuDispatcher(GPU)
    cap = cu_capacity(GPU)
    fakes = []
    resident = []
    for i, (thr, regs, lds, n) in enumerate(kernels):
        fp = Footprint.of(GPU, thr, regs, lds)
        if np.any(fp.vector() > cap):
            continue
        f = Fake(d, f"k{i}", fp, n)
        before = len(f.placed)
        f.grab()
        resident += [(f, cu) for cu in f.placed[before:]]
        fakes.append(f)
    placed_log = []
    while resident:
        assert np.all(d.free >= 0) and np.all(d.free <= cap)
        f, cu = resident.pop(rnd.randrange(len(resident)))
        counts = [len(x.placed) for x in fakes]
        d.release(f.h, cu)
        for x, c in zip(fakes, counts):
            for cu2 in x.placed[c:]:
                resident.append((x, cu2))
                placed_log.append(fakes.index(x))
    assert all(f.left == 0 for f in fakes)
    assert np.array_equal(d.free, np.tile(cap, (GPU.num_cus, 1)))


def test_confined_kernel_only_gets_its_reserved_cus_and_shares_the_launch_order():
    """A CU reservation (paper Sec. 3.2.1's 72-8 split): a kernel registered through ``confined(cus)`` is placed
    only on those CUs; it still waits behind earlier kernels there (one launch order, one set of resources)."""
    d = CuDispatcher(GPU)
    fp = Footprint.of(GPU, 1024, 32, 0)  # 2 per CU (threads)
    gemm = Fake(d, "gemm", Footprint.of(GPU, 256, 255, 0), 3)  # one exclusive WG per CU
    gemm.grab()
    assert gemm.placed == [0, 1, 2]
    rs = Fake(d.confined([2, 3]), "rs", fp, 4)
    rs.grab()
    assert rs.placed == [3, 3] and rs.left == 2  # CU 2 is the GEMM's; CUs 0 and 1 are outside the mask
    gemm.left = 0
    d.release(gemm.h, 0)  # a GEMM WG leaves CU 0: outside the RS's mask, so the RS still waits
    assert rs.left == 2
    d.release(gemm.h, 2)  # the one on CU 2 leaves: the RS takes it
    assert rs.placed == [3, 3, 2, 2] and rs.left == 0


def test_confined_rejects_cus_outside_the_gpu():
    import pytest

    with pytest.raises(ValueError, match="CU reservation"):
        CuDispatcher(GPU).confined([3, 4])
