"""T3's track & trigger hardware and its programming (paper Secs. 4.2-4.4).

* :mod:`t3sim.dma.addrspace` -- the address-space configuration API
  (``remote_map``, ``dma_map``) and predefined collective configurations.
* :mod:`t3sim.dma.tracker` -- the set-associative, WF-granular tracker at the memory controller.
* :mod:`t3sim.dma.engine` -- DMA engines, the remote-write data path and completion counting.
"""

from t3sim.dma.addrspace import CONFIGS, AddressSpace, chunk_bounds  # noqa: F401
from t3sim.dma.engine import Completion, DMAEngines, DmaBlock, Fabric, Payload  # noqa: F401
from t3sim.dma.tracker import Tracker  # noqa: F401
