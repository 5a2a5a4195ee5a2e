"""Arbitration policy contract: one definition per policy, run by both controllers.

Each memory cycle, per channel (unit), the controller asks the policy which stream (0 = compute,
1 = communication) has its oldest pending request enter the read/write queue now, or -1 for none
(``memory_controller.admissions_per_cycle`` decisions per cycle). A stream is *eligible* when its
oldest pending request has arrived and the queue it needs (read queue for reads, write queue for
writes and updates) has a free entry and holds no request to the same line in the other queue.

A policy is a :class:`Policy` subclass registered under ``arbitration``; it defines

* :attr:`Policy.choose`, the decision, a plain function over scalars that numba can compile::

      choose(c, e0, e1, a0, a1, occ, last_stream, last_comm, drain, threshold, pp) -> 0, 1 or -1

  ``c`` the cycle; ``e0``/``e1`` whether the compute/communication stream is eligible; ``a0``/``a1``
  the arrival cycle of the stream's oldest pending request if it has arrived, else -1; ``occ`` the
  requests in the read + write queues; ``last_stream`` .. ``threshold`` the channel's arbitration
  state (below); ``pp`` the policy's parameters (int64 array, :meth:`Policy.params`). It must return
  an eligible stream or -1, and depend on nothing but its arguments (and module constants). A
  function it calls must be numba-compiled and live in the same module: the compiled kernels are
  cached on disk per policy and recompiled when the policy's module changes, not other modules.
* :attr:`Policy.wake`, the decision's time dependence (same arguments less ``e0``/``e1``): the
  earliest cycle after ``c`` at which ``choose`` could answer differently with every other argument
  unchanged, for any eligibility; :data:`NEVER` if none; a value ``<= c`` promises nothing. The fast
  controller skips cycles in which nothing happens up to the earliest cycle anything could, and
  calls ``wake`` (after the cycle's admissions) for the policy's part of that bound.
* hooks for the producer kernel's events (:meth:`Policy.init`, :meth:`Policy.producer_start`,
  :meth:`Policy.first_stage_end`, :meth:`Policy.producer_end`), which may change the per-channel
  state through an :class:`ArbState`.

The reference controller (:mod:`t3sim.memory.controller_ref`) calls ``choose`` as Python; the fast
controller compiles a cycle loop specialised on ``choose`` and ``wake`` (inlined) per policy class
(:func:`t3sim.memory.fast.controller_fast.kernels`). Nothing else names a policy: registering a class is
all a new policy needs. ``tests/memory/test_policies.py`` holds every registered policy's two modes
equal and checks the contract above.

Per-channel arbitration state (columns of ``MemorySystem.arb``; cycles are memory cycles):

* ``LAST_STREAM``: the stream admitted last (-1 before any); kept by the controllers;
* ``LAST_COMM``: cycle of the last communication admission (-1 none); kept by the controllers;
* ``DRAIN``: set by a hook; the controllers clear it whenever no communication request has arrived
  and waits;
* ``THRESHOLD``: set by hooks (-1 = unlimited, the initial value).
"""

from __future__ import annotations

import numpy as np

from t3sim import registry

COMPUTE, COMM, NONE = 0, 1, -1

#: a wake-up time meaning "never" (the fast kernel's "no event" cycle)
NEVER = 1 << 60

#: columns of the per-channel arbitration state
LAST_STREAM, LAST_COMM, DRAIN, THRESHOLD, NARB = range(5)


def never(c, a0, a1, occ, last_stream, last_comm, drain, threshold, pp):
    """The wake-up of a policy whose decision does not depend on the cycle."""
    return NEVER


class ArbState:
    """What a policy's hooks may change: the per-channel arbitration state (``drain`` and ``threshold``
    are views of columns of ``arb``, one entry per unit) and the occupancy observation.

    While ``observing``, the controllers add each cycle's queue occupancy to ``obs[u, 0]`` and one to
    ``obs[u, 1]`` (occupancy-cycles, cycles).
    """

    def __init__(self, arb: np.ndarray, obs: np.ndarray) -> None:
        self.arb = arb
        self.obs = obs
        self.drain = arb[:, DRAIN]
        self.threshold = arb[:, THRESHOLD]
        self.observing = False

    def observe(self) -> None:
        """Start (restart) observing queue occupancy."""
        self.obs[:] = 0
        self.observing = True

    def end_observation(self) -> np.ndarray:
        """Stop observing; return each unit's mean queue occupancy over the observation (entries)."""
        self.observing = False
        return self.obs[:, 0] / np.maximum(self.obs[:, 1], 1)


class Policy:
    """Base class; subclasses register under ``arbitration`` and set :attr:`choose` (and
    :attr:`wake` when the decision depends on the cycle). See the module docstring."""

    choose = None  # staticmethod(plain function), see the module docstring
    wake = staticmethod(never)

    def __init__(self, arb_cfg, system=None) -> None:
        self.cfg = arb_cfg
        #: the :class:`~t3sim.config.system.SystemConfig` the controllers belong to (None: the default system)
        self.system = system

    def params(self) -> tuple:
        """The integer parameters the decision reads (``pp``), from the config."""
        return ()

    # hooks: the producer kernel's events (called with the controllers brought up to the event's cycle)
    def init(self, state: ArbState) -> None:
        """Before the first cycle."""

    def producer_start(self, state: ArbState) -> None:
        """A producer kernel (whose output communication consumes) starts."""

    def first_stage_end(self, state: ArbState) -> None:
        """The producer's first stage, before communication starts, ended."""

    def producer_end(self, state: ArbState) -> None:
        """The producer kernel ended."""


def build(arb_cfg, system=None) -> Policy:
    """Instantiate the policy named by ``arb_cfg.kind`` for the controllers of ``system`` (a policy may derive
    parameters from it; None = the default system)."""
    cls = registry.get("arbitration", arb_cfg.kind, "memory_controller.arbitration.kind")
    return cls(arb_cfg, system)
