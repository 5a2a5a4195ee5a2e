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
  :class:`~t3sim.schemes.runtime.program.Program` -- kernels on streams -- and returns
  the :class:`~t3sim.schemes.runtime.program.ProgramRun`);
* ``compose``: how the scheme turns that run's :class:`~t3sim.schemes.runtime.program.Phases`
  into its result (identity for a scheme that reports the run as it is);
* ``label``, ``color``: how analysis and plots show the scheme (results carry
  them, so :mod:`t3sim.analysis` needs no list of schemes);
* ``collectives``: the scheme runs collectives over the tensor-parallel group
  (so it needs ``interconnect.num_gpus`` = ``workload.tp`` >= 2; ``copy`` runs
  none and also runs on one GPU).

Schemes with the same ``simulation`` key and otherwise identical configs run
the identical simulation (the system model depends on the scheme only through
``arbitration``, the same for every scheme of a key; :func:`register_scheme` checks it): Sequential and Ideal-GEMM-RS-Overlap both need ``sequential/baseline``
and differ only in ``compose``. :func:`t3sim.system.core.simulate_shared` runs
such a simulation once for all of them, and a sweep
(:func:`t3sim.exec.runner.run_points`) simulates it once per group of points.

============================  ======================  =========================
scheme                        simulation              compose
============================  ======================  =========================
``sequential``                ``sequential/baseline``  identity
``ideal_gemm_rs_overlap``     ``sequential/baseline``  ``max(GEMM, RS) + AG``
``ideal_rs_nmc``              ``sequential/nmc``       ``max(GEMM, RS) + AG``
``t3``                        ``t3``                   identity
``t3_mca``                    ``t3_mca``               identity
============================  ======================  =========================

(``t3`` and ``t3_mca`` run the same code, :func:`~t3sim.schemes.t3.t3.run_t3`, on
systems whose arbitration differs, so they are different simulations.)

Schemes come in families, one folder each under :mod:`t3sim.schemes` (``baseline``, ``t3``,
``decomposed``, ``flux``, ``ficco``, ``fused``). A family's ``options.py`` is pure config: an options
model per scheme (:mod:`t3sim.config.scheme`) and the registration of each scheme *by module*
(:func:`t3sim.config.scheme.scheme_kind`), so configs validate without simulation code; the module that
defines a scheme registers it (:func:`register_scheme`) and its simulation (:func:`register_simulation`)
and is imported when a run first asks for it (:func:`scheme_for`). Helpers used by several families live
in :mod:`t3sim.schemes.common`, the kernels-on-streams runtime here. So adding a scheme touches only its
family folder (its module, its options model and registration), its tests and its row in the docs
(``docs/adding-a-scheme.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, Optional, Tuple

from t3sim import registry
from t3sim.config.scheme import check_options
from t3sim.errors import InputError
from t3sim.schemes.runtime.program import Phases, ProgramRun


def identity(phases: Phases) -> Phases:
    """The scheme reports its simulation's phase times as they are."""
    return phases


def no_operation_options(_direction: str, _tp: int) -> Dict:
    """An operation needs no options beyond the scheme's defaults. (A module-level function, not a lambda: a
    scheme travels to worker processes by pickle.)"""
    return {}


def no_heuristic_pick(direction: str, M: int, N: int, K: int, tp: int, peak_TFLOPS: float, elem_B: int) -> Dict:
    """A scheme without a heuristic of its own for choosing among its variants. (Module-level, as
    :func:`no_operation_options`, so that a scheme pickles.)"""
    return {}


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
    #: runs collectives over the tensor-parallel group (needs at least 2 GPUs)
    collectives: bool = True
    #: the ``workload.direction`` s it runs (gemm_rs: GEMM -> RS -> AG; ag_gemm: AG of the input -> GEMM)
    directions: Tuple[str, ...] = ("gemm_rs",)
    #: the workload kinds it runs (``WorkloadConfig.kind``: ``model`` and ``gemm`` run the GEMM kernel; ``gemv``
    #: only the schemes built on the GEMV kernel)
    workloads: Tuple[str, ...] = ("model", "gemm")
    #: for a scheme that runs an embedding-bag layer: "" if its work repeats table by table, so a sampled run by
    #: tables (t3sim/sampling/tables.py) may extrapolate it; otherwise why not (such a layer is simulated
    #: whole, and its ``sampling.note`` says why)
    table_sampling: str = "its time per table was not shown to be steady as the layer grows"
    #: its GEMM's epilogue carries the communication (stores each output tile to its destination once: T3, FLUX,
    #: the fused kernels), so its GEMM takes no split-K kernel (:mod:`t3sim.compute.selection`)
    fused_epilogue: bool = False
    #: its GEMM kernel is tuned per shape over the system's library (the fastest estimate) rather than the
    #: library's own selection (FLUX Sec. 4: FLUX autotunes its tile)
    autotune: bool = False
    #: the option each of whose values is a way of its own to run the operation (``t3sim advise`` tries every one;
    #: "": its defaults are the one way)
    variants: str = ""
    #: non-empty: the scheme studies a mechanism rather than carrying out the operation, and why (``t3sim advise``
    #: lists it with this reason and never runs it)
    study: str = ""
    #: the options an operation of ``(direction, tp)`` needs beyond the scheme's defaults (``t3sim advise`` sets them)
    operation_options: Callable[[str, int], Dict] = no_operation_options
    #: the options its own heuristic picks for an operation ``(direction, M, N, K, tp, peak_TFLOPS, elem_B)``: the
    #: whole operator's GEMM, TP degree, one GPU's peak and the element size ({}: no heuristic; ``t3sim advise``
    #: marks the variant it picks)
    heuristic_pick: Callable[[str, int, int, int, int, float, int], Dict] = no_heuristic_pick

    @property
    def runnable(self) -> bool:
        return self.simulation in SIMULATIONS

    def check_runnable(self) -> None:
        """Raise InputError (listing the schemes that can run) unless this scheme's simulation exists."""
        if not self.runnable:
            raise InputError("scheme.kind", f"{self.name!r}, which cannot run yet ({self.missing})",
                             ", ".join(n for n, s in SCHEMES.items() if s.runnable))

    def check_options(self, cfg) -> None:
        """Raise InputError if ``cfg`` (a scheme config) sets an option this scheme does not take. A validated
        config never does (its options are the kind's options model, :mod:`t3sim.config.scheme`); this catches
        one changed without validation."""
        check_options(self.name, cfg)

    def check_direction(self, workload) -> None:
        """Raise InputError unless this scheme runs ``workload``'s kind and ``workload.direction``."""
        kind = getattr(workload, "kind", "model")
        if kind not in self.workloads:
            raise InputError(f"workload.{kind}", f"a {kind} workload with scheme.kind={self.name}, which runs "
                             f"{', '.join(self.workloads)} workloads", "a scheme that runs it (" + ", ".join(
                                 n for n, s in SCHEMES.items() if kind in s.workloads) + ")")
        d = getattr(workload, "direction", "gemm_rs")
        if d not in self.directions:
            raise InputError("workload.direction", f"{d} with scheme.kind={self.name}, which runs "
                             f"{', '.join(self.directions)}", "a scheme of that direction (" + ", ".join(
                                 n for n, s in SCHEMES.items() if d in s.directions) + ")")

    def simulate(self, model) -> ProgramRun:
        """Run this scheme's simulation on ``model``: its kernels' records, before :attr:`compose`."""
        self.check_runnable()
        return SIMULATIONS[self.simulation](model)

    def run(self, model) -> Phases:
        """Run the scheme on ``model``: its simulation, then its composition of the phase times."""
        return self.compose(self.simulate(model).phases())


#: the schemes whose modules have been imported, by name (what :func:`register_scheme` checks against)
_LOADED: Dict[str, Scheme] = {}


def register_scheme(s: Scheme) -> Scheme:
    """Register ``s`` by name in the one registry (raises on a duplicate name). The module that defines a scheme
    registers it (and its simulation, :func:`register_simulation`) when :func:`scheme_for` first imports it."""
    for other in _LOADED.values():
        if other.simulation == s.simulation and s.simulation and other.arbitration != s.arbitration:
            raise ValueError(f"schemes {other.name!r} and {s.name!r} share simulation {s.simulation!r} "
                             "but build different systems (arbitration)")
    registry.add("scheme", s.name, s)
    _LOADED[s.name] = s
    return s


def scheme_for(name: str) -> Scheme:
    """The registered scheme ``name``, its module imported if need be (raises InputError listing the known ones)."""
    return registry.get("scheme", name, "scheme.kind")


class _Schemes(Mapping):
    """Every registered scheme by name, in registration order (families as :mod:`t3sim.schemes` loads them);
    looking one up imports its module, iterating over the values imports them all."""

    def __getitem__(self, name: str) -> Scheme:
        if name not in self:
            raise KeyError(name)
        return scheme_for(name)

    def __contains__(self, name: object) -> bool:
        return name in registry.names("scheme")

    def __iter__(self) -> Iterator[str]:
        return iter(registry.names("scheme", sort=False))

    def __len__(self) -> int:
        return len(registry.names("scheme"))


#: every scheme by name (:class:`_Schemes`: read-only, lazy)
SCHEMES: Mapping = _Schemes()
