"""Symbolic executor: run a :class:`~t3sim.collectives.plan.Plan` on numpy arrays (no timing).

:func:`execute` applies a plan's steps with the plan semantics (all sends of a
step read the pre-step state, then receipts are applied: ``store`` copies,
``reduce`` adds). Arrays may carry trailing dimensions, which :func:`verify`
uses for a *contribution count* run: GPU ``g``'s input is the one-hot vector
``e_g`` at every element, so after a reduction every element must hold the
all-ones vector: each GPU's input counted exactly once (a random-value run can
miss a double count cancelled by an omission; this cannot).

:func:`verify` proves a plan computes its collective:

* reduce-scatter: GPU ``i``'s chunk ``i`` = exact sum of all GPUs' inputs
  over that chunk, every contributor exactly once;
* all-gather: starting from GPU ``i`` holding only chunk ``i`` (the rest
  garbage), every GPU ends with every chunk;
* all-reduce: every GPU ends with the full sum, every contributor once per element;
* all-to-all: ``out`` block ``i`` of GPU ``j`` = block ``j`` of GPU ``i``'s ``in``.
"""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from t3sim.collectives.plan import Plan

Buffers = Dict[str, list]  # name -> list (per GPU) of numpy arrays


def execute(plan: Plan, bufs: Buffers) -> Buffers:
    """Run ``plan`` on ``bufs`` (modified in place and returned)."""
    for step in plan.steps:
        payloads = [bufs[x.src_buf][x.src][x.src_lo:x.src_lo + x.count].copy() for x in step.xfers]
        for x, data in zip(step.xfers, payloads):
            dst = bufs[x.dst_buf][x.dst]
            if x.op == "store":
                dst[x.dst_lo:x.dst_lo + x.count] = data
            else:
                dst[x.dst_lo:x.dst_lo + x.count] += data
    return bufs


def _inputs(plan: Plan, rng: np.random.Generator, onehot: bool) -> Buffers:
    n = plan.n
    bufs: Buffers = {}
    for name, sizes in plan.buffer_elems.items():
        if onehot:
            arrs = []
            for g in range(n):
                a = np.zeros((sizes[g], n), dtype=np.int64)
                a[:, g] = 1
                arrs.append(a)
        else:
            arrs = [rng.integers(-2**40, 2**40, size=sizes[g], dtype=np.int64) for g in range(n)]
        bufs[name] = arrs
    return bufs


def verify(plan: Plan, seed: int = 0) -> None:
    """Raise ``AssertionError`` unless ``plan`` computes ``plan.collective`` (module doc)."""
    rng = np.random.default_rng(seed)
    for onehot in (False, True):
        bufs = _inputs(plan, rng, onehot)
        before = {k: [a.copy() for a in v] for k, v in bufs.items()}
        {"reduce_scatter": _check_rs, "all_reduce": _check_ar, "all_gather": _check_ag,
         "all_to_all": _check_a2a}[plan.collective](plan, bufs, before, onehot)


def _check_rs(plan: Plan, bufs: Buffers, before: Buffers, onehot: bool) -> None:
    execute(plan, bufs)
    total = sum(before["buf"])
    for g, (lo, hi) in enumerate(plan.chunks):
        got = bufs["buf"][g][lo:hi]
        if not np.array_equal(got, total[lo:hi]):
            bad = _first_bad(got, total[lo:hi])
            raise AssertionError(f"{plan.name}: GPU {g} chunk [{lo},{hi}) not the full sum at element {lo + bad}"
                                 + (f" (contributions {got[bad].tolist()})" if onehot else ""))


def _check_ar(plan: Plan, bufs: Buffers, before: Buffers, onehot: bool) -> None:
    execute(plan, bufs)
    total = sum(before["buf"])
    for g in range(plan.n):
        if not np.array_equal(bufs["buf"][g], total):
            bad = _first_bad(bufs["buf"][g], total)
            raise AssertionError(f"{plan.name}: GPU {g} element {bad} is not the full sum")


def _check_ag(plan: Plan, bufs: Buffers, before: Buffers, onehot: bool) -> None:
    # GPU i starts with only chunk i meaningful: poison everything else
    expect = np.concatenate([before["buf"][g][lo:hi] for g, (lo, hi) in enumerate(plan.chunks)]) \
        if plan.num_elems else before["buf"][0][:0]
    for g in range(plan.n):
        lo, hi = plan.chunks[g]
        poison = np.full_like(bufs["buf"][g], -7)
        poison[lo:hi] = bufs["buf"][g][lo:hi]
        bufs["buf"][g] = poison
    execute(plan, bufs)
    for g in range(plan.n):
        if not np.array_equal(bufs["buf"][g], expect):
            bad = _first_bad(bufs["buf"][g], expect)
            raise AssertionError(f"{plan.name}: GPU {g} misses element {bad} (owner {_owner(plan, bad)})")


def _check_a2a(plan: Plan, bufs: Buffers, before: Buffers, onehot: bool) -> None:
    for g in range(plan.n):
        bufs["out"][g][...] = -7
    execute(plan, bufs)
    for j in range(plan.n):
        lo, hi = plan.chunks[j]
        size = hi - lo
        for i in range(plan.n):
            got = bufs["out"][j][i * size:(i + 1) * size]
            if not np.array_equal(got, before["in"][i][lo:hi]):
                raise AssertionError(f"{plan.name}: GPU {j} out block {i} is not GPU {i}'s in block {j}")


def _first_bad(a: np.ndarray, b: np.ndarray) -> int:
    diff = a != b
    if diff.ndim > 1:
        diff = diff.any(axis=tuple(range(1, diff.ndim)))
    return int(np.argmax(diff))


def _owner(plan: Plan, elem: int) -> Optional[int]:
    for g, (lo, hi) in enumerate(plan.chunks):
        if lo <= elem < hi:
            return g
    return None
