"""Overlap schemes (paper Sec. 5.3, and the other papers' schemes), one registry entry each.

A scheme says which kernels run, on which streams, with which dependencies and which
memory-controller arbitration, and how it composes its result from its simulation
(:mod:`t3sim.schemes.base`). Each scheme's module defines and registers it; importing this
package imports every module in it -- the paper's configurations first (``sequential``,
``t3``), then the rest in name order, which is the order listings show -- so adding a scheme
is adding its module.
"""

import importlib
import pkgutil

from t3sim.schemes.base import SCHEMES, Scheme, scheme_for  # noqa: F401

#: modules registered first (the T3 paper's Sec. 5.3 configurations), then every other module by name
_FIRST = ("sequential", "t3")
for _name in (*_FIRST, *sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in _FIRST)):
    importlib.import_module(f"{__name__}.{_name}")
