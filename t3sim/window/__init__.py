"""The GEMM window: a GEMM kernel's WGs, its GPU's L2 and fill table, and its memory controllers advanced
together in one compiled (numba) event loop, the fast twin of the simpy path of
:class:`~t3sim.compute.gemm_kernel.GemmKernel` over :class:`~t3sim.compute.memhier.MemoryHierarchy` and
:class:`~t3sim.memory.port.MemoryPort`, with identical statistics except ``sim.events`` (``docs/fast-paths.md``).

A layer of its own, above compute, cache and memory: it fuses all three, reaching them only through their
declared entry points (:mod:`t3sim.compute.fast`, :mod:`t3sim.cache.fast`, :mod:`t3sim.memory.fast`, and their
public modules), and none of them imports it. The system model hands :func:`run_windowed` to each GEMM kernel
(``GemmKernel.window``) where ``simulation.gemm_window`` is on; the kernel calls it at its start.

Modules: :mod:`~t3sim.window.gemm_window` (setup, the bridge to simpy, the hand-back at the end),
:mod:`~t3sim.window.window_kernel` (the compiled event loop), :mod:`~t3sim.window.window_joins` (its state layout,
its joins and the write-back room FIFO) and :mod:`~t3sim.window.window_heap` (its heaps).
"""

from t3sim.window.gemm_window import GemmWindow, eligible, run_windowed

__all__ = ["GemmWindow", "eligible", "run_windowed"]
