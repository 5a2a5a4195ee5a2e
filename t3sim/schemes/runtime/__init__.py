"""The kernels-on-streams runtime every scheme builds on: programs of kernels on streams (:mod:`.program`) and
the :class:`~t3sim.schemes.runtime.base.Scheme` interface with its registry (:mod:`.base`)."""

from t3sim.schemes.runtime.base import SCHEMES, Scheme, register_scheme, register_simulation, scheme_for

__all__ = ["SCHEMES", "Scheme", "register_scheme", "register_simulation", "scheme_for"]
