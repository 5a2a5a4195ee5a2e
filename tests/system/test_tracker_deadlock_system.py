"""The tracker deadlock at TP=32, reproduced on small systems and gone under the default policy.

A 1024-wide model's OP sub-layer on 16 CUs with 512 tokens has 32 WGs, all in one GEMM stage, so the
stage spans every ring step -- as GPT-3 FC-1's 160-WG stages span 3.3 steps of 48 WGs at TP=32 -- and
a tracker of a few sets is enough for the original ``first_come`` policy to deadlock. ``reserve_ready``
(the default) completes them, with the reduce-scatter numerically exact (functional data).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.errors import SimulationError
from t3sim.schemes.runtime import scheme_for
from t3sim.schemes.t3.t3 import final_chunk_check
from t3sim.system.model import SystemModel
from tests.system.helpers import exp

SMALL = ("workload.sublayer=OP", "system.gpu.num_cus=16",
         "simulation.functional_data=true", "simulation.watchdog_idle_ns=20000")


def _run(n, mode, tokens, entries, ways, admission, bidir=True, scheme="t3", hidden=1024):
    e = exp(*SMALL, f"workload.model.hidden_size={hidden}", f"workload.tp={n}", f"system.interconnect.num_gpus={n}", f"simulation.mode={mode}",
            f"workload.tokens={tokens}", f"scheme.kind={scheme}", f"system.tracker.entries={entries}",
            f"system.tracker.ways={ways}", f"system.tracker.admission={admission}",
            f"system.collective.ring_bidirectional={str(bidir).lower()}")
    m = SystemModel(e)
    scheme_for(scheme).run(m)
    return m


DEADLOCKING = [(4, "homogeneous", 512, 1, 1), (4, "homogeneous", 512, 4, 8), (8, "homogeneous", 512, 4, 1),
               (8, "homogeneous", 512, 1, 8), pytest.param(4, "explicit", 512, 4, 8, marks=pytest.mark.slow)]


@pytest.mark.parametrize("n,mode,tokens,entries,ways", DEADLOCKING)
def test_first_come_deadlocks_and_reserve_ready_completes(n, mode, tokens, entries, ways):
    with pytest.raises(SimulationError, match=r"deadlock.*tracker: \d+ regions below threshold, \d+ accesses stalled"):
        _run(n, mode, tokens, entries, ways, "first_come")
    m = _run(n, mode, tokens, entries, ways, "reserve_ready")
    assert final_chunk_check(m) > 0
    for tr in m.context.trackers.values():
        tr.check_done()
        tr.check_invariant()
        assert tr.stalled_accesses > 0  # the sets were contended, and still nothing deadlocked


GPUS = st.sampled_from([2, 3, 4, 6, 8])


def _hidden(n):
    return 1536 if n in (3, 6) else 1024  # divisible by the TP degree; 1536 / 3 = 512 wide: 24 or 48 WGs


@settings(max_examples=4, deadline=None)
@given(n=GPUS, tokens=st.sampled_from([256, 512]), entries=st.sampled_from([1, 2, 4, 256]),
       ways=st.sampled_from([1, 2, 8]), bidir=st.booleans(), scheme=st.sampled_from(["t3", "t3_mca"]))
def test_reserve_ready_completes_small_systems(n, tokens, entries, ways, bidir, scheme):
    """GPU counts, GEMM stages (tokens), chunks equal or not (3 and 6 GPUs), set conflicts (1-256 sets of
    1-8 ways), one or both ring directions, both arbitrations: completes, reduce-scatter exact."""
    m = _run(n, "homogeneous", tokens, entries, ways, "reserve_ready", bidir, scheme, _hidden(n))
    assert final_chunk_check(m) > 0
    m.context.trackers[0].check_done()


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(n=GPUS, tokens=st.sampled_from([256, 512, 1024]), entries=st.sampled_from([1, 2, 4, 8, 256]),
       ways=st.sampled_from([1, 2, 8]), bidir=st.booleans(), mode=st.sampled_from(["homogeneous", "explicit"]))
def test_reserve_ready_completes_small_systems_many(n, tokens, entries, ways, bidir, mode):
    if mode == "explicit" and n > 4:
        n = 4
    m = _run(n, mode, tokens, entries, ways, "reserve_ready", bidir, hidden=_hidden(n))
    assert final_chunk_check(m) > 0
