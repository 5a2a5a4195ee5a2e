"""Every registered arbitration policy is one definition that both controllers run.

:class:`TimeSlice` is defined and registered only here, as a new policy would be in its own module:
nothing else in t3sim names it, yet it runs in both modes, with its own parameter, wake-up time
and hooks. The contract tests check each policy's decision function (Python and compiled) as
:mod:`t3sim.memory.policies.base` states it.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim import registry
from t3sim.memory import MemorySystem
from t3sim.memory.policies.base import COMM, COMPUTE, NEVER, NONE, ArbState, Policy, build
from t3sim.memory.fast.specialise import inlined
from t3sim.registry import register

from .helpers import system

SLICE = 0  # TimeSlice's parameter: the slice length (memory cycles)


def slice_choose(c, e0, e1, a0, a1, occ, last_stream, last_comm, drain, threshold, pp):
    """Even slices: compute first, communication below the threshold; odd slices: communication first."""
    if (c // pp[SLICE]) % 2 == 0:
        if e0:
            return COMPUTE
        if e1 and (threshold < 0 or occ < threshold):
            return COMM
        return NONE
    if e1:
        return COMM
    if e0:
        return COMPUTE
    return NONE


def slice_wake(c, a0, a1, occ, last_stream, last_comm, drain, threshold, pp):
    """The next slice boundary."""
    return (c // pp[SLICE] + 1) * pp[SLICE]


@register("arbitration", "test_time_slice")
class TimeSlice(Policy):
    """A test-only policy: priority alternates between the streams every 37 cycles; while compute
    has priority, communication is capped at 3 queued requests during a producer kernel."""

    choose = staticmethod(slice_choose)
    wake = staticmethod(slice_wake)

    def params(self) -> tuple:
        return (37,)

    def init(self, state: ArbState) -> None:
        state.threshold[:] = 3

    def producer_start(self, state: ArbState) -> None:
        state.threshold[:] = 3

    def producer_end(self, state: ArbState) -> None:
        state.threshold[:] = -1


POLICIES = registry.names("arbitration")
ARB_CONFIGS = {
    "static": {"threshold_mode": "static", "occupancy_threshold": 2, "starvation_limit_cycles": 60},
    "dynamic": {"threshold_mode": "dynamic", "dynamic_occupancy_levels": [6.0, 1.0], "dynamic_thresholds": [2, 8],
                "starvation_limit_cycles": 300},
}


def _trace(seed: int):
    """Compute and communication batches of every kind, some to few lines (hazards), over ~5 us."""
    rng = np.random.default_rng(seed)
    batches, tick = [], 0
    for i in range(24):
        tick += int(rng.integers(0, 400_000))
        n = int(rng.integers(8, 120))
        start = int(rng.integers(0, 1 << 18)) * 64
        addrs = start + rng.integers(0, 512, n) * 64 if i % 3 == 0 else start + np.arange(n) * 64
        batches.append((tick, addrs, ("read", "write", "update")[i % 3], ("compute", "comm")[(i // 2) % 2]))
    return batches


def _run(cfg, mode: str, batches, record: bool = True):
    """Submit ``batches`` advancing in steps, with the producer kernel's events in between (``record``:
    keep the command log; without it the fast controller takes its fused pump-step path)."""
    ms = MemorySystem(cfg, mode=mode, record_commands=record)
    events = {4: ms.begin_isolated_stage, 8: ms.end_isolated_stage, 14: ms.kernel_boundary,
              18: ms.begin_isolated_stage, 21: ms.kernel_boundary}
    for i, (tick, addrs, kind, stream) in enumerate(batches):
        ms.advance(tick)
        if i in events:
            events[i]()
        ms.submit(tick, addrs, kind, stream, "gemm")
    ms.run_until_idle()
    return ms


def test_memory_code_names_no_policy():
    """Outside ``policies/``, no memory module's code (string literals, identifiers; docstrings and
    comments aside) names a policy: the controllers know policies only through the contract."""
    import ast
    import pathlib

    import t3sim.memory

    names = set(POLICIES) | {type(build(system(1, memory_controller={"arbitration": {"kind": p}})
                                        .memory_controller.arbitration)).__name__ for p in POLICIES}
    assert {"test_time_slice", "round_robin", "compute_first", "t3_mca"} <= names
    root = pathlib.Path(t3sim.memory.__file__).parent
    for path in [*root.glob("*.py"), *root.glob("fast/*.py")]:
        tree = ast.parse(path.read_text())
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        used = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
                used.add(n.value)
            elif isinstance(n, ast.Name):
                used.add(n.id)
            elif isinstance(n, ast.Attribute):
                used.add(n.attr)
        assert not used & names, (path.name, used & names)


@pytest.mark.parametrize("arb", sorted(ARB_CONFIGS))
@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_fast_equals_reference(policy, arb):
    cfg = system(2, hbm={"timing": {"tREFI_nCK": 3900}},
                 memory_controller={"read_queue_entries": 8, "write_queue_entries": 8,
                                    "arbitration": {"kind": policy, **ARB_CONFIGS[arb]}})
    batches = _trace(7)
    fast, ref = _run(cfg, "fast", batches), _run(cfg, "reference", batches)
    n = fast.n
    assert np.all(fast.r_done[:n] >= 0)
    assert np.array_equal(fast.r_done[:n], ref.r_done[:n])
    assert np.array_equal(fast.r_admit[:n], ref.r_admit[:n])
    assert np.array_equal(fast.command_log(), ref.command_log())
    assert np.array_equal(fast.occ_hist, ref.occ_hist)
    assert np.array_equal(fast.arb, ref.arb)
    fused = _run(cfg, "fast", batches, record=False)
    for name in ("r_done", "r_admit"):
        assert np.array_equal(getattr(fused, name)[:n], getattr(ref, name)[:n]), name
    assert np.array_equal(fused.occ_hist, ref.occ_hist)
    assert np.array_equal(fused.arb, ref.arb)


def test_policies_decide_differently():
    """The agreement above is not vacuous: the policies' admission orders differ on this trace."""
    orders = set()
    for policy in POLICIES:
        cfg = system(2, memory_controller={"read_queue_entries": 8, "write_queue_entries": 8,
                                           "arbitration": {"kind": policy, **ARB_CONFIGS["static"]}})
        ms = _run(cfg, "fast", _trace(7))
        orders.add(ms.r_admit[: ms.n].tobytes())
    assert len(orders) == len(POLICIES)


# ---------------------------------------------------------------- the decision contract

_COMPILED = {}


def _compiled(fn):
    """``fn`` compiled as the fast kernel compiles it (inlined there; standalone here)."""
    if fn not in _COMPILED:
        _COMPILED[fn] = inlined(fn)
    return _COMPILED[fn]


@st.composite
def views(draw):
    """A policy (built from a random arbitration config) and a random decision view."""
    policy = draw(st.sampled_from(POLICIES))
    mode = draw(st.sampled_from(["static", "dynamic"]))
    static = {"occupancy_threshold": draw(st.sampled_from([None, 1, 5, 30]))} if mode == "static" else {}
    arb = system(1, memory_controller={"arbitration": {
        "kind": policy, "threshold_mode": mode, **static,
        "starvation_limit_cycles": draw(st.integers(1, 5000))}}).memory_controller.arbitration
    c = draw(st.integers(0, 1 << 40))
    arrival = st.one_of(st.just(-1), st.integers(0, c))
    v = dict(c=c, a0=draw(arrival), a1=draw(arrival), occ=draw(st.integers(0, 128)),
             last_stream=draw(st.sampled_from([-1, 0, 1])), last_comm=draw(st.one_of(st.just(-1), st.integers(0, c))),
             drain=draw(st.sampled_from([0, 1])), threshold=draw(st.sampled_from([-1, 1, 5, 30])))
    return build(arb), v


def _decide(fn, pol, v, c, e0, e1):
    """``choose`` at cycle ``c`` with eligibility ``e0``/``e1`` (a stream without an arrived head is never eligible)."""
    pp = np.asarray(pol.params(), dtype=np.int64)
    return fn(c, e0 and v["a0"] >= 0, e1 and v["a1"] >= 0, v["a0"], v["a1"], v["occ"], v["last_stream"],
              v["last_comm"], v["drain"], v["threshold"], pp)


def _wake(fn, pol, v):
    pp = np.asarray(pol.params(), dtype=np.int64)
    return fn(v["c"], v["a0"], v["a1"], v["occ"], v["last_stream"], v["last_comm"], v["drain"], v["threshold"], pp)


@settings(max_examples=200, deadline=None)
@given(views(), st.data())
def test_decision_contract(pv, data):
    """Only an eligible stream (or none); the compiled function agrees with the Python one; the decision
    does not change before the policy's wake-up time (what the fast controller's cycle skipping relies on)."""
    pol, v = pv
    choose, wake = type(pol).choose, type(pol).wake
    c = v["c"]
    w = _wake(wake, pol, v)
    assert w == _wake(_compiled(wake), pol, v)
    later = [c + 1, c + 1000] if w >= NEVER else [x for x in {c + 1, w - 1, data.draw(st.integers(c, max(c, w - 1)))}
                                                  if c < x < w]
    for e0 in (False, True):
        for e1 in (False, True):
            d = _decide(choose, pol, v, c, e0, e1)
            assert d in (COMPUTE, COMM, NONE)
            assert d == _decide(_compiled(choose), pol, v, c, e0, e1)
            ok0, ok1 = e0 and v["a0"] >= 0, e1 and v["a1"] >= 0
            if d == COMPUTE:
                assert ok0
            if d == COMM:
                assert ok1
            if not ok0 and not ok1:
                assert d == NONE
            if w > c:
                for c2 in later:
                    assert _decide(choose, pol, v, c2, e0, e1) == d, (c2, w)


def test_hooks_change_only_the_policy_state():
    """The producer kernel's events reach the policy's hooks and nothing else (a policy without hooks
    leaves the state alone)."""
    for policy in POLICIES:
        cfg = system(2, memory_controller={"arbitration": {"kind": policy, **ARB_CONFIGS["dynamic"]}})
        ms = MemorySystem(cfg)
        before = ms.arb.copy()
        ms.begin_isolated_stage()
        ms.end_isolated_stage()
        ms.kernel_boundary()
        hooks = ("init", "producer_start", "first_stage_end", "producer_end")
        if all(getattr(type(ms.policy), h) is getattr(Policy, h) for h in hooks):
            assert np.array_equal(ms.arb, before), policy
            assert not ms.observing
