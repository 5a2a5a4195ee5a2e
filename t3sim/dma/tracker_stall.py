"""The tracker's stall FIFOs (:class:`~t3sim.dma.tracker.Tracker`, module doc "Full sets").

An access whose region holds no way and that its set does not admit waits in the set's FIFO, as part of a *run*:
consecutive stalled accesses of one region from one stream, ``[region id, from a peer, their arrival ticks]``
(re-scanning a FIFO costs a step per run, not per access; processing a run is processing its accesses one after
another, as nothing else happens between them). When the set changes (a way freed, a region ready) its runs are
retried in arrival order (:meth:`StallFIFOs._unstall`).

Two shortcuts, each equal to the definition (tests/dma/test_tracker_counting.py holds them to it with hypothesis):

* *Closed sets.* A set is closed while the admission policy refuses every access in its state
  (:meth:`~t3sim.dma.tracker_policy.AdmissionPolicy.refuses_all`; ``_closed``, kept by :meth:`StallFIFOs._reclose`).
  The compiled count (:func:`~t3sim.dma.fast.tracker_kernel.count_common`) buffers the accesses that stall in a closed
  set (``stall_buffer`` of them at most) and the tracker queues them (:meth:`StallFIFOs._stall`) before anything
  else happens, instead of handing each to the general path.
* *Retries* (``unstall``): ``"skip"`` (default) asks the policy nothing while the set is closed, and ends a pass
  there if no run left belongs to a region holding a way (``_live`` counts the queued
  runs that do, ``_qruns`` a region's queued runs); ``"scan"`` asks about every run, the definition. Nothing a
  pass skips could change state. At full size a T3-MCA run re-asked the policy about ~2.8M refused runs, 99.8 % of
  them in a full set, and handed ~600k stalls to the general path one by one (CHANGELOG.md).
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Deque, Dict, List

import numpy as np

#: a run of stalled accesses (module doc)
Waiting = List


class StallFIFOs:
    """The stall FIFOs of a :class:`~t3sim.dma.tracker.Tracker` (a mixin: it uses the tracker's set and region
    state, ``_set_use``, ``_ready_in_set``, ``_cnt``, ``_rdy``... and its ``_admit``, ``_allocate``, ``_bump`` and
    ``_make_ready``; the tracker calls :meth:`_way_held` when a region takes or frees a way, and :meth:`_reclose`
    when a set's occupancy or readiness changes)."""

    unstall = "skip"
    #: stalls the compiled count buffers before it hands them back (any size >= 1 gives the same results: the
    #: tests run with 1)
    stall_buffer = 4096

    def _init_stalls(self) -> None:
        self._stalled: Dict[int, Deque[Waiting]] = defaultdict(deque)
        self.stalled_accesses = 0
        self.stall_ticks = 0
        self.refusals = 0  # accesses the policy kept from a free way
        self.stalled_now = self.peak_stalled = 0
        self._pending: Dict[int, int] = {}  # stalled accesses per region id (a coalescing stall buffer's entries)
        self.peak_pending_regions = 0
        self._qruns: List[int] = []  # per region id: its runs in its set's FIFO
        self._live: List[int] = [0] * self.sets  # per set: runs in its FIFO whose region holds a way
        self._closed = np.zeros(self.sets, dtype=np.int64)  # per set: 1 while closed (module doc)
        for s in range(self.sets):
            self._reclose(s)
        self._sbuf = np.zeros((3, self.stall_buffer), dtype=np.int64)  # buffered stalls: rid, from a peer, tick

    def _stall(self, r: int, s: int, tick: int, comm: bool) -> None:
        """An access of region id ``r`` (holding no way) that set ``s`` did not admit waits in the set's FIFO."""
        if self._set_use[s] < self.ways:
            self.refusals += 1  # a free way was refused
        q = self._stalled[s]
        if q and q[-1][0] == r and q[-1][1] == comm:
            q[-1][2].append(tick)
        else:
            q.append([r, comm, [tick]])
            self._qruns[r] += 1  # r holds no way: not live
        self.stalled_accesses += 1
        self.stalled_now += 1
        if self.stalled_now > self.peak_stalled:
            self.peak_stalled = self.stalled_now
        k = self._pending.get(r, 0)
        self._pending[r] = k + 1
        if not k and len(self._pending) > self.peak_pending_regions:
            self.peak_pending_regions = len(self._pending)

    def _way_held(self, r: int, s: int, sign: int) -> None:
        """Region id ``r`` of set ``s`` took (``sign`` +1) or gave back (-1) a way: its queued runs are live or no
        longer."""
        self._live[s] += sign * self._qruns[r]

    def _reclose(self, s: int) -> None:
        """Set ``s`` changed (a way taken or freed, a region ready or no longer): whether it is closed now."""
        self._closed[s] = self.policy.refuses_all(int(self._set_use[s]), self.ways, int(self._ready_in_set[s]))

    def _unstall(self, s: int, tick: int) -> None:
        """Set ``s`` changed at ``tick`` (a way freed, or a ready region arrived): retry its stalled
        accesses in arrival order.

        An access proceeds if its region holds a way (taken meanwhile) or the policy admits it; the
        others keep waiting. Passes repeat while one frees a way or makes a region ready, so no
        access of a region holding a way is left waiting (the deadlock argument relies on it).
        With ``unstall == "skip"``, while the set is closed a pass asks the policy nothing, and it ends there if
        no run left belongs to a region holding a way (module doc).
        """
        skip = self.unstall == "skip"
        live, closed = self._live, self._closed  # closed[s]: kept by _reclose at every change of the set's state
        while True:
            q = self._stalled.get(s)
            if not q:
                return
            if skip and closed[s] and not live[s]:
                return
            keep: Deque[Waiting] = deque()
            again = False
            while q:
                run = q.popleft()
                r, cm, t0s = run
                if self._cnt[r] < 0:
                    if (skip and closed[s]) or not self._admit(r, s, cm):
                        keep.append(run)
                        if skip and closed[s] and not live[s]:
                            keep.extend(q)  # nothing left can proceed, nor change what the pass did
                            q.clear()
                        continue
                    self._allocate(r, s, tick, cm)
                    again |= bool(self._rdy[r])
                self._qruns[r] -= 1
                live[s] -= 1
                n = len(t0s)
                self.stall_ticks += sum(max(0, tick - t0) for t0 in t0s)
                self.stalled_now -= n
                left = self._pending[r] - n
                if left:
                    self._pending[r] = left
                else:
                    del self._pending[r]
                before = len(self._fired)
                self._bump(r, tick, n, retry=False)
                if len(self._fired) > before:
                    again = True
                elif cm and self.uses_ready and not self._rdy[r]:
                    self._make_ready(r)
                    again = True
            self._stalled[s] = keep
            if not (again and keep):
                return

    def _check_stall_counts(self) -> None:
        """The run counts (``_qruns``, ``_live``) match the FIFOs (for tests)."""
        qruns = [0] * len(self._qruns)
        live = [0] * self.sets
        for s, q in self._stalled.items():
            for r, _cm, _t in q:
                qruns[r] += 1
                live[s] += int(self._cnt[r] >= 0)
        assert qruns == self._qruns and live == self._live, f"{self.name}: stall FIFO run counts out of step"
