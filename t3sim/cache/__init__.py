"""Caches: the shared, banked, sectored L2 (fast numba model and pure-Python reference)."""

from t3sim.cache.common import BYPASS, HIT, MISS, OUTCOME_NAMES, SECTOR_MISS, L2Geometry, L2Result, WriteBacks
from t3sim.cache.l2 import L2Cache, make_l2
from t3sim.cache.l2_reference import ReferenceL2

__all__ = ["BYPASS", "HIT", "MISS", "OUTCOME_NAMES", "SECTOR_MISS", "L2Cache", "L2Geometry", "L2Result",
           "ReferenceL2", "WriteBacks", "make_l2"]
