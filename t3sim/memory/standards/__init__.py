"""DRAM standards (registry category ``dram_standard``): one file per standard, selected by ``hbm.standard``.

Importing this package registers HBM2, HBM2E (:mod:`.hbm2`), HBM3 and HBM3E (:mod:`.hbm3`). See
:mod:`.base` for the contract.
"""

from t3sim.memory.standards import hbm2, hbm3  # noqa: F401  (registration)
from t3sim.memory.standards.base import Standard

__all__ = ["Standard"]
