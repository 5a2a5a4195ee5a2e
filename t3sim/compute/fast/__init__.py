"""The memory hierarchy's compiled helpers (:mod:`~t3sim.compute.fast.memhier_kernel`, numba): one call per read
or write batch of :class:`~t3sim.compute.memhier.MemoryHierarchy` runs the L2 access, the DRAM accesses that cover
the sector masks and the fill table (``docs/fast-paths.md`` names the tests that hold them to their definition).

Other packages use only the names in ``__all__``: the GEMM window (:mod:`t3sim.window`) calls the same functions
from its compiled loop, so the hierarchy and the window share one definition of each.
"""

from t3sim.compute.fast.memhier_kernel import (REQ_B, l2_read, l2_write, mask_accesses, record_fills, write_plan,
                                               writeback_groups)

__all__ = ["REQ_B", "l2_read", "l2_write", "mask_accesses", "record_fills", "write_plan", "writeback_groups"]
