"""The overlap-scheme interface and the five configurations of the T3 paper (Sec. 5.3).

A :class:`Scheme` is a declarative description consumed by the system builder:

* ``fused_rs``: the producer GEMM and its reduce-scatter are fused (T3, Sec. 4.1)
  rather than run as separate kernels;
* ``nmc``: reductions use near-memory op-and-store (Sec. 4.3);
* ``arbitration``: memory-controller arbitration policy name (Sec. 4.5), or
  ``None`` to keep the system config's;
* ``ideal``: not measured as one overlapped run but composed from isolated
  kernel times (``max(GEMM, RS) + AG``, Sec. 5.3);
* ``simulation``: the key of the simulation the scheme needs (an entry of
  :data:`SIMULATIONS`, the function that runs it on a built
  :class:`~t3sim.system.model.SystemModel`: it builds the scheme's
  :class:`~t3sim.schemes.program.Program` -- kernels on streams -- and returns
  the :class:`~t3sim.schemes.program.ProgramRun`);
* ``compose``: how the scheme turns that run's :class:`~t3sim.schemes.program.Phases`
  into its result (identity for a scheme that reports the run as it is);
* ``label``, ``color``: how analysis and plots show the scheme (results carry
  them, so :mod:`t3sim.analysis` needs no list of schemes);
* ``collectives``: the scheme runs collectives over the tensor-parallel group
  (so it needs ``interconnect.num_gpus`` = ``workload.tp`` >= 2; ``copy`` runs
  none and also runs on one GPU).

Schemes with the same ``simulation`` key and otherwise identical configs run
the identical simulation (the system model depends on the scheme only through
``arbitration``, which :func:`_reg` checks is the same for every scheme of a
key): Sequential and Ideal-GEMM-RS-Overlap both need ``sequential/baseline``
and differ only in ``compose``. :func:`t3sim.system.run.simulate_shared` runs
such a simulation once for all of them, and a sweep
(:func:`t3sim.exec.run_points`) simulates it once per group of points.

============================  ======================  =========================
scheme                        simulation              compose
============================  ======================  =========================
``sequential``                ``sequential/baseline``  identity
``ideal_gemm_rs_overlap``     ``sequential/baseline``  ``max(GEMM, RS) + AG``
``ideal_rs_nmc``              ``sequential/nmc``       ``max(GEMM, RS) + AG``
``t3``                        ``t3``                   identity
``t3_mca``                    ``t3_mca``               identity
============================  ======================  =========================

(``t3`` and ``t3_mca`` run the same code, :func:`~t3sim.schemes.t3.run_t3`, on
systems whose arbitration differs, so they are different simulations.)

Schemes from other papers (FLUX, FiCCO, fused GPU-initiated kernels) register
beside these with their own flags, simulation (:func:`register_simulation`)
and composition.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Dict, Optional, Tuple

from t3sim.errors import InputError
from t3sim.registry import add, get
from t3sim.schemes.sequential import compose_ideal, run_sequential
from t3sim.schemes.program import Phases, ProgramRun


def identity(phases: Phases) -> Phases:
    """The scheme reports its simulation's phase times as they are."""
    return phases


#: simulation key -> the function that runs that simulation on a built SystemModel and returns its ProgramRun
SIMULATIONS: Dict[str, Callable] = {}


def register_simulation(key: str, run: Callable) -> None:
    """Make ``run(model) -> ProgramRun`` the simulation named ``key`` (schemes refer to it by ``simulation=key``)."""
    if key in SIMULATIONS and SIMULATIONS[key] is not run:
        raise ValueError(f"simulation {key!r} registered twice")
    SIMULATIONS[key] = run


@dataclass(frozen=True)
class Scheme:
    """How one configuration runs the GEMM -> RS -> AG sub-layer.

    ``simulation`` names the simulation the scheme needs (:data:`SIMULATIONS`);
    schemes with the same key and otherwise identical configs run the
    identical simulation, so it is run once for all of them. ``compose`` turns
    that simulation's phase times into the scheme's result. A scheme whose
    simulation is not registered (``""``: its mechanism is not built) cannot
    run; ``missing`` says why.
    """

    name: str
    description: str
    label: str = ""
    color: str = "#7f7f7f"
    fused_rs: bool = False
    nmc: bool = False
    arbitration: Optional[str] = None
    ideal: bool = False
    paper_section: str = "5.3"
    simulation: str = ""
    compose: Callable[[Phases], Phases] = identity
    missing: str = ""
    #: the ``scheme.*`` config fields (besides ``kind``) this scheme reads; any other set to a non-default
    #: value is rejected (:meth:`check_options`), so no option silently does nothing
    options: Tuple[str, ...] = ()
    #: runs collectives over the tensor-parallel group (needs at least 2 GPUs)
    collectives: bool = True

    @property
    def runnable(self) -> bool:
        return self.simulation in SIMULATIONS

    def check_runnable(self) -> None:
        """Raise InputError (listing the schemes that can run) unless this scheme's simulation exists."""
        if not self.runnable:
            raise InputError("scheme.kind", f"{self.name!r}, which cannot run yet ({self.missing})",
                             ", ".join(n for n, s in SCHEMES.items() if s.runnable))

    def check_options(self, cfg) -> None:
        """Raise InputError if ``cfg`` (a SchemeConfig) sets an option this scheme does not use."""
        for name, field in type(cfg).model_fields.items():
            if name != "kind" and name not in self.options and getattr(cfg, name) != field.default:
                raise InputError(f"scheme.{name}", f"{getattr(cfg, name)!r} with scheme.kind={self.name}, which does not use it",
                                 f"scheme.{name} only with " + (", ".join(
                                     n for n, s in SCHEMES.items() if name in s.options) or "no scheme"))

    def simulate(self, model) -> ProgramRun:
        """Run this scheme's simulation on ``model``: its kernels' records, before :attr:`compose`."""
        self.check_runnable()
        return SIMULATIONS[self.simulation](model)

    def run(self, model) -> Phases:
        """Run the scheme on ``model``: its simulation, then its composition of the phase times."""
        return self.compose(self.simulate(model).phases())


SCHEMES: Dict[str, Scheme] = {}


def _reg(s: Scheme) -> None:
    for other in SCHEMES.values():
        if other.simulation == s.simulation and s.simulation and other.arbitration != s.arbitration:
            raise ValueError(f"schemes {other.name!r} and {s.name!r} share simulation {s.simulation!r} "
                             "but build different systems (arbitration)")
    add("scheme", s.name, s)
    SCHEMES[s.name] = s


from t3sim.schemes.chunked import run_chunked  # noqa: E402
from t3sim.schemes.concurrent import run_concurrent  # noqa: E402
from t3sim.schemes.copy import run_copy  # noqa: E402
from t3sim.schemes.flux import run_flux  # noqa: E402
from t3sim.schemes.t3 import run_t3  # noqa: E402

register_simulation("sequential/baseline", run_sequential)
register_simulation("sequential/nmc", partial(run_sequential, rs_variant="nmc"))
register_simulation("t3", run_t3)
register_simulation("t3_mca", run_t3)
register_simulation("concurrent", run_concurrent)
register_simulation("chunked", run_chunked)
register_simulation("copy", run_copy)
register_simulation("flux_rs", run_flux)

_reg(Scheme("sequential", "GEMM, then RS, then AG, each a separate kernel with all CUs (the baseline)",
            label="Sequential", color="#7f7f7f", simulation="sequential/baseline"))
_reg(Scheme("t3", "fused GEMM-RS with tracker-triggered DMA and NMC reductions, round-robin MC arbitration; then AG",
            label="T3", color="#e6b800", fused_rs=True, nmc=True, arbitration="round_robin",
            paper_section="4.1-4.4, 5.3", simulation="t3"))
_reg(Scheme("t3_mca", "T3 plus communication-aware MC arbitration (Sec. 4.5); then AG",
            label="T3-MCA", color="#2ca02c", fused_rs=True, nmc=True, arbitration="t3_mca",
            paper_section="4.5, 5.3", simulation="t3_mca"))
_reg(Scheme("ideal_gemm_rs_overlap", "max(isolated GEMM, isolated RS) + AG: perfect software overlap, no contention",
            label="Ideal-GEMM-RS-Overlap", color="#1f77b4", ideal=True, simulation="sequential/baseline",
            compose=compose_ideal))
_reg(Scheme("ideal_rs_nmc", "max(isolated GEMM, isolated RS using NMC) + AG", label="Ideal-RS+NMC",
            color="#9467bd", ideal=True, nmc=True, simulation="sequential/nmc", compose=compose_ideal))
_reg(Scheme("concurrent", "the GEMM and an independent RS on two streams sharing CUs, L2, HBM and links; then AG",
            label="Concurrent", color="#8c564b", paper_section="issue 12", simulation="concurrent",
            options=("launch_first", "comm_cus")))
_reg(Scheme("chunked", "GEMM in C chunks, each chunk's RS issued on a second stream when it ends (CoCoNet/TE style; "
            "scheme.chunk_comm: a CU-driven collective, or copy-engine scatters plus a local reduction, AsyncTP style); then AG",
            label="Chunked", color="#17becf", paper_section="issue 12", simulation="chunked",
            options=("chunks", "chunk_axis", "chunk_comm")))
_reg(Scheme("copy", "the GEMM beside background copies issued back to back on copy streams until it ends "
            "(SM copy kernels or copy engines; contention studies, no RS/AG)", label="GEMM + copies",
            color="#e377c2", paper_section="issue 12", simulation="copy",
            options=("copy_streams", "copy_size_MiB", "copy_direction", "launch_first"), collectives=False))
_reg(Scheme("flux_rs", "FLUX: one fused kernel whose WG epilogues store each output tile into its owner GPU (CU stores "
            "over the links), reduced by atomic adds or by pull CTAs on the owner, tile coordinates swizzled by rank; then AG",
            label="FLUX", color="#d62728", paper_section="FLUX Alg. 1, Secs. 3.1, 4.1, 4.2", simulation="flux_rs",
            options=("flux_reduce", "flux_swizzle", "flux_pull_ctas")))


def scheme_for(name: str) -> Scheme:
    """The registered scheme ``name`` (raises InputError listing the known ones)."""
    return get("scheme", name, "scheme.kind")
