"""Write-drain policies (registry category ``write_drain``): when a channel serves its write queue.

Importing this package registers ``watermark`` (:mod:`.watermark`, Ramulator 2's) and
``drain_when_full`` (:mod:`.drain_when_full`, DRAMsim3's). See :mod:`.base` for the contract.
"""

from t3sim.memory.write_drain import drain_when_full, watermark  # noqa: F401  (registration)
from t3sim.memory.write_drain.base import WriteDrain, build

__all__ = ["WriteDrain", "build"]
