"""The tracker's common increment compiled with numba (:mod:`~t3sim.dma.fast.tracker_kernel`):
:func:`count_common` counts a run of accesses that only raise counters below their thresholds, the work of
:meth:`Tracker._access <t3sim.dma.tracker.Tracker._access>` for those accesses; :func:`count_common_py` is the same
function as plain Python (``docs/fast-paths.md`` names the tests that hold the compiled count, the Python one and
the tracker's general path equal). :class:`~t3sim.dma.tracker.Tracker` is its only user; ``__all__`` lists what
other packages may use.
"""

from t3sim.dma.fast.tracker_kernel import CNT, RDY, THR, count_common, count_common_py, first_counted

__all__ = ["count_common", "count_common_py", "first_counted", "THR", "CNT", "RDY"]
