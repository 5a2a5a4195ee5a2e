"""Tracker admission policies: who may take a free way of a tracker set (registry category ``tracker_admission``).

A region (a WF's output tile, :mod:`t3sim.dma.tracker`) takes a way of its set on its first counted
access and gives it back when its counter reaches the threshold. An access whose region holds no way
and is not *admitted* waits in its set's FIFO (its DRAM access is not delayed: the tracker is off the
critical path). A policy decides admission; ``system.tracker.admission`` names it.

``first_come`` (the original policy, kept for comparison). Any access takes a free way. It deadlocks
when the GEMM runs far ahead of the ring (paper Sec. 6.4, GPT-3 FC-1/IP at TP=32; experiments/
t3-sublayers/README.md item 7): every way of a set is held by regions that have their local stores but
wait for their neighbour's update, and that update's count waits behind a full set on the neighbour,
round the ring.

``reserve_ready`` (the default). A region is *ready* once an access from a peer (communication stream:
a remote store or a DMA update) has been counted into it, or from allocation if it expects no access
from a peer. The last free way of a set goes only to an access that leaves the set holding a ready
region: an access from a peer, an access of a region that expects none, or any access while the set
already holds a ready region. Other accesses wait for another way (or for a resident to become ready).

Why ``reserve_ready`` cannot deadlock (the argument ``tests/dma/test_tracker_deadlock.py`` checks by
randomised search over GPU counts, steps, ways and set conflicts).

*Model.* A programmed region R of GPU g is complete when its counter reaches its threshold. R's
accesses are (a) local GEMM stores, which always arrive: the GEMM never waits for the tracker; and
(b) accesses from a peer: remote stores of a peer's GEMM, which always arrive, or a DMA update of a
region R' on a peer, sent once R' completed (DMA engines, links and memory-controller admission do not
wait for any tracker, and the controller's starvation rule serves the communication stream). Define
rank(R) = 0 if R has no DMA input, else 1 + rank(R'): the ring RS is a finite acyclic chain of such
dependencies (each position is forwarded along the ring one step at a time, N - 1 steps at most), so
ranks are well defined. In the ring RS each region has at most one peer input, so *ready* means "every
access of R will arrive": its one peer source has started sending (the DMA of a block starts only when
every region of that block completed, and then sends all of it).

In homogeneous mode (GPU 0 simulated, paper Sec. 5.1.1) a shadow GPU's DMA to GPU 0 is sent when GPU 0's
own block at the same dispatch index is (:mod:`t3sim.schemes.t3.t3`): the same chain folded onto GPU 0, each
region depending on GPU 0 regions dispatched one ring step earlier. ``T3Context`` rejects a mapping in which a
region receives from more than one peer under this policy (its readiness would not mean "every access will
arrive").

*Invariant (I).* Every full set holds a ready region. A region that fills the last way leaves a ready
region in the set (that is the admission rule); readiness only ends when the region completes, which
frees its way; regions only leave sets by completing.

*Claim.* Every region completes. Suppose not, and let R be an incomplete region of least rank (over
all GPUs). Its DMA input R', if any, has smaller rank and so completed: all of R's accesses arrive,
among them its peer access, which is admitted to any set with a free way. If R holds a way every
arrival is counted and R completes; so R waits for a way in a full set. By (I) that set holds a ready
region H. H's accesses all arrive and, H holding a way, are all counted (accesses queued before H took
its way are counted when it does, see :meth:`Tracker._unstall`), so H completes and frees a way, at
which point the set's FIFO is retried and R's peer access is admitted. Contradiction.

Hardware cost over the paper's 19 KB (Sec. 4.2.1): one ready bit per way (256 sets x 8 ways = 256 B,
total 19.25 KiB); the "from a peer" bit is the memory controller's stream tag, which T3-MCA already
needs (Sec. 4.5), and "expects no access from a peer" is part of a region's programmed threshold.
The stall FIFO itself is modelled as unbounded, as before (its peak is reported:
``tracker.peak_stalled_accesses``).
"""

from __future__ import annotations

from t3sim import registry
from t3sim.registry import register


class AdmissionPolicy:
    """Base class: :meth:`admit` decides whether an access of a region holding no way may take one.

    ``ready_bits`` is the tracker storage the policy adds per way (bits).
    """

    name = ""
    ready_bits = 0

    def admit(self, used: int, ways: int, comm: bool, ready_without_peer: bool, ready_in_set: int) -> bool:
        """``used`` ways of ``ways`` in use in the set; ``comm``: the access came from a peer;
        ``ready_without_peer``: its region expects no access from a peer; ``ready_in_set``: ready
        regions holding a way of the set."""
        raise NotImplementedError

    def refuses_all(self, used: int, ways: int, ready_in_set: int) -> bool:
        """Whether :meth:`admit` refuses every access in this set state, whatever its ``comm`` and
        ``ready_without_peer``: the set is *closed* (:mod:`t3sim.dma.tracker_stall`: the compiled count queues its
        stalls, and a retry of its stalled runs asks nothing more). This default asks :meth:`admit`; a subclass may
        answer faster, and tests/dma/test_tracker_counting.py holds each registered policy's answer to this one."""
        return not any(self.admit(used, ways, c, p, ready_in_set) for c in (False, True) for p in (False, True))


@register("tracker_admission", "first_come")
class FirstCome(AdmissionPolicy):
    """Any access takes a free way (module doc); can deadlock."""

    name = "first_come"

    def admit(self, used, ways, comm, ready_without_peer, ready_in_set):
        return used < ways

    def refuses_all(self, used, ways, ready_in_set):
        return used >= ways


@register("tracker_admission", "reserve_ready")
class ReserveReady(AdmissionPolicy):
    """The last free way only for an access that leaves a ready region in the set (module doc)."""

    name = "reserve_ready"
    ready_bits = 1

    def admit(self, used, ways, comm, ready_without_peer, ready_in_set):
        if used + 1 < ways:
            return True
        if used >= ways:
            return False
        return comm or ready_without_peer or ready_in_set > 0

    def refuses_all(self, used, ways, ready_in_set):
        return used >= ways  # below that a peer's access is admitted


def build(name: str) -> AdmissionPolicy:
    """The policy registered as ``name`` (``system.tracker.admission``)."""
    return registry.get("tracker_admission", name, "system.tracker.admission")()
