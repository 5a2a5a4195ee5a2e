"""Write-drain policy contract: one definition per policy, run by both controllers.

A channel (unit) has a read queue and a write queue (writes and near-memory updates) and, each
memory cycle, serves one of them: the *active* queue, from which its column command and its row
commands (ACT, conflict PRE) come. The write-drain policy decides which: *draining* (write queue)
or not (read queue). It is asked once per cycle, after the cycle's admissions and before its
commands (step 4 of :mod:`t3sim.memory.controller_ref`'s order).

A policy is a :class:`WriteDrain` subclass registered under ``write_drain``
(``memory_controller.write_drain``); it defines :attr:`WriteDrain.decide`, a plain function over
scalars that numba can compile::

    decide(draining, nr, nw, aged, left, cap, dp) -> (draining, left)

``draining`` (0/1) the current mode; ``nr``/``nw`` the requests in the read and write queues;
``aged`` whether the oldest queued write has waited ``write_starvation_limit_cycles`` (every
policy must drain then: the liveness bound of t3sim's controllers, whatever the policy);
``left`` the policy's drain counter: the controllers decrement it by one for every column command
issued while draining (each a write or an update), and keep whatever ``decide`` returns;
``cap`` the write queue's capacity; ``dp`` the policy's parameters (int64 array,
:meth:`WriteDrain.params`). It returns the new mode and counter, and depends on nothing else (no
cycle: the fast controller's cycle skipping relies on the decision changing only when the queues
or ``aged`` do, and the write-age wake-up is the controllers' own).

A function the decision calls must be numba-compiled and live in the same module (the compiled
kernels are cached per policy and recompiled when its module changes). The reference controller
calls ``decide`` as Python; the fast controller compiles its cycle loop with ``decide`` inlined
(:func:`t3sim.memory.fast.controller_fast.kernels`). ``reads`` names the ``memory_controller`` fields a
policy reads; the config refuses the watermarks for a policy that does not read them.
``tests/memory/test_write_drain.py`` holds every registered policy's two controllers equal.
"""

from __future__ import annotations

from typing import Tuple

from t3sim import registry


class WriteDrain:
    """Base class; subclasses register under ``write_drain`` and set :attr:`decide` (a staticmethod)."""

    decide = None  # staticmethod(plain function), see the module docstring
    #: memory_controller fields the policy reads (besides write_queue_entries and write_starvation_limit_cycles)
    reads: Tuple[str, ...] = ()

    def __init__(self, mc) -> None:
        self.mc = mc

    def params(self) -> tuple:
        """The integer parameters the decision reads (``dp``), from the memory-controller config."""
        return ()


def build(mc) -> WriteDrain:
    """Instantiate the write-drain policy named by ``mc.write_drain`` (a MemoryControllerConfig)."""
    cls = registry.get("write_drain", mc.write_drain, "memory_controller.write_drain")
    return cls(mc)
