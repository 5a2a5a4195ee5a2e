"""The overlap-scheme interface and the five configurations of the T3 paper (Sec. 5.3).

A :class:`Scheme` is a declarative description consumed by the system builder:

* ``fused_rs``: the producer GEMM and its reduce-scatter are fused (T3, Sec. 4.1)
  rather than run as separate kernels;
* ``nmc``: reductions use near-memory op-and-store (Sec. 4.3);
* ``arbitration``: memory-controller arbitration policy name (Sec. 4.5), or
  ``None`` to keep the system config's;
* ``ideal``: not simulated as one run but composed from isolated kernel times
  (``max(GEMM, RS) + AG``, Sec. 5.3); ``rs_nmc`` picks the RS variant.

Schemes from other papers (FLUX, FiCCO, fused GPU-initiated kernels) register
beside these with their own flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional

from t3sim.errors import InputError
from t3sim.registry import add, get


@dataclass(frozen=True)
class Scheme:
    """How one configuration runs the GEMM -> RS -> AG sub-layer."""

    name: str
    description: str
    fused_rs: bool = False
    nmc: bool = False
    arbitration: Optional[str] = None
    ideal: bool = False
    paper_section: str = "5.3"
    #: runs the scheme on a built :class:`~t3sim.system.model.SystemModel` and returns its
    #: :class:`~t3sim.schemes.sequential.Phases`; None while the mechanism it needs is not built.
    execute: Optional[Callable] = None
    missing: str = ""

    def run(self, model):
        if self.execute is None:
            raise InputError("scheme.kind", f"{self.name!r}, which cannot run yet ({self.missing})",
                             ", ".join(n for n, s in SCHEMES.items() if s.execute is not None))
        return self.execute(model)


from t3sim.schemes.sequential import run_ideal, run_sequential_scheme  # noqa: E402

SCHEMES: Dict[str, Scheme] = {}


def _reg(s: Scheme) -> None:
    add("scheme", s.name, s)
    SCHEMES[s.name] = s


from t3sim.schemes.t3 import run_t3  # noqa: E402

_reg(Scheme("sequential", "GEMM, then RS, then AG, each a separate kernel with all CUs (the baseline)",
            execute=run_sequential_scheme))
_reg(Scheme("t3", "fused GEMM-RS with tracker-triggered DMA and NMC reductions, round-robin MC arbitration; then AG",
            fused_rs=True, nmc=True, arbitration="round_robin", paper_section="4.1-4.4, 5.3", execute=run_t3))
_reg(Scheme("t3_mca", "T3 plus communication-aware MC arbitration (Sec. 4.5); then AG",
            fused_rs=True, nmc=True, arbitration="t3_mca", paper_section="4.5, 5.3", execute=run_t3))
_reg(Scheme("ideal_gemm_rs_overlap", "max(isolated GEMM, isolated RS) + AG: perfect software overlap, no contention",
            ideal=True, execute=lambda m: run_ideal(m, "baseline")))
_reg(Scheme("ideal_rs_nmc", "max(isolated GEMM, isolated RS using NMC) + AG", ideal=True, nmc=True,
            execute=lambda m: run_ideal(m, "nmc")))


def scheme_for(name: str) -> Scheme:
    """The registered scheme ``name`` (raises InputError listing the known ones)."""
    return get("scheme", name, "scheme.kind")
