"""Overlap schemes (paper Sec. 5.3), one registry entry each.

A scheme says which kernels run, how the producer's outputs are mapped,
which memory-controller arbitration applies, which simulation it needs and how
it composes its result from that simulation (schemes needing the same one
share it: :mod:`t3sim.schemes.base`). Importing this package registers the
built-in schemes.
"""

from t3sim.schemes.base import SCHEMES, Scheme, scheme_for  # noqa: F401
