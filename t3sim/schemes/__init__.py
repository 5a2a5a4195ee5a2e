"""Overlap schemes (paper Sec. 5.3, and the other papers' schemes), by family.

A scheme says which kernels run, on which streams, with which dependencies and which
memory-controller arbitration, and how it composes its result from its simulation
(:mod:`t3sim.schemes.runtime`). Each family is a folder: ``baseline`` (software schedules),
``t3``, ``decomposed`` (DMA decomposition), ``flux``, ``ficco``, ``fused`` (GPU-initiated
kernels); :mod:`t3sim.schemes.common` holds the helpers several families use.

Importing this package registers every family's schemes by name through its ``options.py``
(pure config: :mod:`t3sim.config.scheme`), the paper's families first, then the others by name,
which is the order listings show; no simulation code is imported until a run asks for a scheme.
A family is a folder with an ``options.py``: adding one touches nothing here.
"""

import importlib
from pathlib import Path

#: families registered first (the T3 paper's Sec. 5.3 configurations), then every other family by name
_FIRST = ("baseline", "t3")
_HERE = Path(__file__).parent
FAMILIES = (*_FIRST, *sorted(d.name for d in _HERE.iterdir()
                             if (d / "options.py").is_file() and d.name not in _FIRST))
for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}.options")
