"""Caches: the shared, banked, sectored L2 -- the fast model (:class:`L2Cache`, numba-compiled: :mod:`t3sim.cache.fast`)
and its pure-Python reference (:class:`ReferenceL2`), which the tests hold it equal to."""

from typing import Optional, Sequence

from t3sim.cache.common import BYPASS, HIT, MISS, OUTCOME_NAMES, SECTOR_MISS, L2Geometry, L2Result, WriteBacks
from t3sim.cache.fast import L2Cache
from t3sim.cache.l2_reference import ReferenceL2
from t3sim.config.gpu import L2Config

__all__ = ["BYPASS", "HIT", "MISS", "OUTCOME_NAMES", "SECTOR_MISS", "L2Cache", "L2Geometry", "L2Result",
           "ReferenceL2", "WriteBacks", "make_l2"]


def make_l2(cfg: Optional[L2Config] = None, sources: Sequence[str] = ("default",), reference: bool = False):
    """An L2 model: the fast one, or the pure-Python reference (``reference=True``)."""
    cfg = cfg or L2Config()
    return ReferenceL2(cfg, sources) if reference else L2Cache(cfg, sources)
