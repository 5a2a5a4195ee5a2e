"""Sequential (the baseline) and the two ideal configurations (paper Sec. 5.3).

Sequential: the sliced GEMM, then the reduce-scatter, then the all-gather,
each a separate kernel using all CUs (collectives as RCCL-style GPU kernels):
:func:`run_sequential`, the simulation ``sequential/baseline``.

Ideal-GEMM-RS-Overlap: ``max(GEMM, RS) + AG`` from the isolated kernel times
(:func:`compose_ideal`). The kernels of a Sequential run execute one at a
time, so its phase times are the isolated times, and the ideal scheme needs no
simulation of its own: it composes the phases of the very same
``sequential/baseline`` simulation that Sequential reports, which a sweep runs
once for both (:mod:`t3sim.schemes.base`). Ideal-RS+NMC: the same composition
of a Sequential run whose RS reductions use near-memory op-and-store (Fig.
10(b)), the simulation ``sequential/nmc``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_US


@dataclass
class Phases:
    """Phase times of one run, in ticks. ``total`` is the sub-layer time the scheme reports."""

    gemm: int
    rs: int
    ag: int
    total: int

    def stats(self) -> Stats:
        s = Stats()
        for name, desc in (("gemm", "sliced GEMM kernel time"), ("rs", "reduce-scatter time"),
                           ("ag", "all-gather time"), ("total", "sub-layer time under this scheme")):
            s.add(f"time.{name}_us", getattr(self, name) / TICKS_PER_US, "us", desc)
        return s

    def summary(self) -> Dict[str, float]:
        return {f"{k}_us": round(getattr(self, k) / TICKS_PER_US, 6) for k in ("gemm", "rs", "ag", "total")}


def run_phases(model, body) -> Phases:
    """Run ``body(mark)``, a simpy generator, to completion on ``model`` and return its phase times.

    ``body`` calls ``mark("gemm")``, ``mark("rs")`` and ``mark("ag")`` when each phase ends; the phases
    are measured from the start of the run (the run's explicit done event fires after ``body``).
    """
    env, eng = model.env, model.engine
    marks: Dict[str, int] = {"start": env.now}

    def mark(name: str) -> None:
        marks[name] = env.now

    def proc():
        yield from body(mark)
        eng.finish()

    model.marks = marks  # phase boundaries (ticks), for timelines
    env.process(proc())
    eng.run(progress=lambda t: f"[{model.exp.name}] simulated {t / TICKS_PER_US:,.1f} us", progress_every_s=5.0)
    g = marks["gemm"] - marks["start"]
    rs = marks["rs"] - marks["gemm"]
    ag = marks["ag"] - marks["rs"]
    return Phases(g, rs, ag, g + rs + ag)


def run_sequential(model, rs_variant: str = "baseline") -> Phases:
    """Run GEMM -> RS -> AG back to back on ``model``; returns the phase times."""

    def body(mark):
        yield model.gemm()
        for h in model.hiers.values():  # the GEMM kernel ends: the MC sees the kernel boundary
            h.port.kernel_boundary()
        mark("gemm")
        yield model.collective("reduce_scatter", variant=rs_variant).done
        mark("rs")
        yield model.collective("all_gather").done
        mark("ag")

    return run_phases(model, body)


def compose_ideal(p: Phases) -> Phases:
    """The ideal schemes' result from a Sequential run's (isolated) phase times: ``max(GEMM, RS) + AG``."""
    return Phases(p.gemm, p.rs, p.ag, max(p.gemm, p.rs) + p.ag)
