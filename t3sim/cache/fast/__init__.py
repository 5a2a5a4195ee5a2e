"""The fast L2 model: :class:`L2Cache` (:mod:`~t3sim.cache.fast.l2`), the same semantics as the pure-Python
:class:`~t3sim.cache.l2_reference.ReferenceL2`, with its per-access loop compiled with numba
(:mod:`~t3sim.cache.fast.l2_kernel`: one compiled call per batch; ``docs/fast-paths.md`` names the tests that hold
the two equal).

Other packages use only the names in ``__all__``: the model, and for compiled code that runs a batch through the
L2 inside its own loop (the memory hierarchy's helpers, :mod:`t3sim.compute.fast.memhier_kernel`, and the GEMM window,
:mod:`t3sim.window`), :func:`~t3sim.cache.fast.l2_kernel.access_uniform` and the rows of its two outputs
(``R_*``: per access; ``E_*``: per write-back).
"""

from t3sim.cache.fast.l2 import L2Cache
from t3sim.cache.fast.l2_kernel import (E_ACC, E_FLUSH, E_LINE, E_MASK, E_SRC, NE, NR, R_BANK, R_DONE, R_DONE_TICK,
                                        R_DW, R_FILL, R_OUT, R_READY_TICK, access_uniform)

__all__ = ["L2Cache", "access_uniform", "R_OUT", "R_FILL", "R_DW", "R_BANK", "R_DONE", "R_DONE_TICK",
           "R_READY_TICK", "NR", "E_LINE", "E_MASK", "E_SRC", "E_ACC", "E_FLUSH", "NE"]
