"""The fast memory controller: the reference controller's algorithm (:mod:`t3sim.memory.controller_ref`) compiled
with numba, making the same decisions (``docs/fast-paths.md`` names the tests that hold it to them).

Modules: :mod:`~t3sim.memory.fast.controller_fast` (the Python wrapper, :class:`FastController`, and
:func:`kernels`, which compiles the templates per arbitration and write-drain policy),
:mod:`~t3sim.memory.fast.fast_kernel` (the cycle loop), :mod:`~t3sim.memory.fast.command_kernel` (unit state
layout and command rules), :mod:`~t3sim.memory.fast.queue_lists` (the queues as linked slots),
:mod:`~t3sim.memory.fast.step_kernel` (one compiled call per pump step) and
:mod:`~t3sim.memory.fast.specialise` (compiling a template with functions bound per use).

Other packages use only the names in ``__all__``: the controller for :class:`~t3sim.memory.system.MemorySystem`,
and what compiled code that runs the memory's pump step inside its own loop needs (the GEMM window,
:mod:`t3sim.window`): the pump-step template and its specialisations, the stop modes and parameter slots it sets,
the digest dependencies, and the request-store helpers it calls (``fill_requests``, ``SC_A0``, ``NOUT``: those live
in :mod:`t3sim.memory.bookkeeping` and :mod:`t3sim.memory.accum`, shared with the reference controller's path).
"""

from t3sim.memory.accum import SC_A0
from t3sim.memory.bookkeeping import NOUT, fill_requests
from t3sim.memory.fast.command_kernel import P_HARD, P_STOP_IDLE, STOP_NO_REQUESTS
from t3sim.memory.fast.controller_fast import PUMP_DEPENDS, RUN_DEPENDS, FastController, kernels
from t3sim.memory.fast.specialise import inlined, specialise
from t3sim.memory.fast.step_kernel import pump_step

__all__ = ["FastController", "kernels", "pump_step", "specialise", "inlined", "PUMP_DEPENDS", "RUN_DEPENDS", "P_HARD",
           "P_STOP_IDLE", "STOP_NO_REQUESTS", "fill_requests", "SC_A0", "NOUT"]
