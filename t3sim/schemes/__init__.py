"""Overlap schemes (paper Sec. 5.3), one registry entry each.

A scheme says which kernels run, how the producer's outputs are mapped, and
which memory-controller arbitration applies. Importing this package registers
the built-in schemes.
"""

from t3sim.schemes.base import SCHEMES, Scheme, scheme_for  # noqa: F401
