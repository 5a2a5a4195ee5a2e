"""Cycle-level HBM and memory controllers. See README.md in this package."""

from t3sim.memory.request import Kind, Source, Stream
from t3sim.memory.interface import EnqueueInfo, Geometry
from t3sim.memory.system import MemorySystem

__all__ = ["Kind", "Source", "Stream", "MemorySystem", "EnqueueInfo", "Geometry"]
