"""Checks of a resolved experiment point that need more than one config section: is it a system and
workload the simulator can run, physically and on this machine?

Each config section validates itself (:mod:`t3sim.config`); these checks combine sections with the
workload's GEMM (generated or from a trace) and run before anything is simulated -- by
:func:`t3sim.exec.runner.run_points` for every point of a sweep, by ``t3sim config check`` and by
``t3sim run --timeline`` -- so an absurd point is one line of bad input (exit 2), not a crash or a
meaningless result minutes later:

* the GEMM is at least one output tile wide (``N >= tile_n``; N is the hidden size or its shard). Fewer
  rows than one tile (``M < tile_m``: FLUX's decoding sizes, m = 64) are allowed: the kernel runs one partial
  tile row, its loads and stores clipped to M (:mod:`t3sim.compute.addresses`), as a tiled GEMM does;
* its size is one the simulator can run (:func:`t3sim.workload.trace.check_size`);
* a WG fits on a CU of the configured GPU (registers, LDS, threads);
* the footprint -- A, B, C and one receive buffer the size of C, as the system model lays them out
  (:mod:`t3sim.system.model`) -- fits the HBM capacity (``channels x pseudo_channels x bank_groups x
  banks_per_group x rows x row_size_B``); addresses beyond it would wrap onto other arrays;
* a fused GEMM-RS (T3) has at least one WG per GPU (its reduce-scatter cuts the WGs into one chunk per GPU);
* a scheme that runs collectives has at least 2 GPUs (a 1-GPU system runs one GPU's GEMM of the
  sub-layer, for schemes without collectives such as ``copy``);
* a scheme that sets the memory-controller arbitration (T3: round_robin, T3-MCA: t3_mca) is not given
  another one explicitly (it would be replaced, so the setting would do nothing).

A sampled point (``simulation.sampling.mode: waves`` or ``tables``) is checked as the detailed runs it may
simulate (:func:`t3sim.sampling.plan.detailed_configs`, :func:`t3sim.sampling.tables.detailed_configs`):
the full workload is never simulated, so its size and footprint are not limits (``sampling.full_footprint_B`` in a
waves run's results says whether it would fit HBM).

The checks read the resolved point (:func:`t3sim.exec.dispatch.resolve`): the kernel they check is the one the
point runs (:func:`t3sim.system.kernels.point_kernel`).
"""

from __future__ import annotations

from t3sim.config.experiment import ExperimentConfig
from t3sim.errors import InputError
from t3sim.exec.dispatch import resolve
from t3sim.sampling import plan as waves_plan
from t3sim.sampling import tables
from t3sim.schemes.runtime import SCHEMES
from t3sim.system import core
from t3sim.system.kernels import footprint_B, hbm_capacity_B
from t3sim.workload import occupancy
from t3sim.workload.trace import check_size


def check_experiment(exp: ExperimentConfig, where: str = "") -> core.Resolved:
    """Raise :class:`InputError` (one line; ``where`` prefixes it, e.g. the file and point label) if the
    resolved point ``exp`` cannot be simulated meaningfully (module doc); else return it resolved
    (:func:`t3sim.exec.dispatch.resolve`), as the runners hand it down."""
    try:
        r = resolve(exp)
    except InputError as exc:
        pre = f"{where}: " if where else ""
        if exp.simulation.sampling.mode != "off":
            raise InputError(f"{pre}{exc.where}", exc.found, exc.allowed) from None
        if not exp.workload.trace:
            raise
        raise InputError(f"{pre}workload.trace: {exc.where}", exc.found, exc.allowed) from None
    check_resolved(r, where)
    return r


def check_resolved(r: core.Resolved, where: str = "") -> None:
    """:func:`check_experiment` of a point already resolved."""
    exp = r.exp
    if exp.simulation.sampling.mode != "off":  # what is simulated: the detailed runs (t3sim.sampling)
        detailed = tables.detailed_configs if exp.simulation.sampling.mode == "tables" else waves_plan.detailed_configs
        try:
            runs = detailed(r)
        except InputError as exc:
            raise InputError(f"{where}: {exc.where}" if where else exc.where, exc.found, exc.allowed) from None
        for e in runs:
            check_experiment(e, where)
        return
    pre = f"{where}: " if where else ""
    w = exp.workload
    k = r.kernel
    src = f"trace {w.trace}" if w.trace else "workload"
    if k.N < k.tile_n:
        raise InputError(f"{pre}{src}", f"N = {k.N} (hidden size), below one GEMM tile of tile_n = {k.tile_n} columns",
                         f"N >= {k.tile_n}")
    check_size(k.num_wgs, k.K, k.tile_k, f"{pre}{src}")
    try:
        occupancy(k, exp.system.gpu)
    except ValueError as exc:
        raise InputError(f"{pre}{src} on system.gpu", str(exc), "a WG whose threads, registers and LDS fit one CU") from None
    need, have = footprint_B(k), hbm_capacity_B(exp.system.hbm)
    if need > have:
        raise InputError(f"{pre}system.hbm", f"{_size(have)} of HBM per GPU, less than the workload's footprint of "
                         f"{_size(need)} (A {k.M}x{k.K}, B {k.K}x{k.N}, C and a receive buffer {k.M}x{k.N}, {k.dtype})",
                         "channels x pseudo_channels x bank_groups x banks_per_group x rows x row_size_B >= the footprint")
    n = exp.system.interconnect.num_gpus
    scheme = r.scheme
    try:
        scheme.check_direction(w)
    except InputError as exc:
        raise InputError(f"{pre}{exc.where}", exc.found, exc.allowed) from None
    if n < 2 and getattr(scheme, "collectives", True):
        raise InputError(f"{pre}scheme.kind", f"{exp.scheme.kind!r}, which runs collectives, on a system of "
                         f"{n} GPU (system.interconnect.num_gpus)",
                         "a scheme without collectives (" + ", ".join(
                             s for s, v in SCHEMES.items() if not v.collectives) + ") or num_gpus = workload.tp >= 2")
    arb, mc_arb = getattr(scheme, "arbitration", None), exp.system.memory_controller.arbitration
    if arb is not None and "kind" in mc_arb.model_fields_set and mc_arb.kind != arb:
        raise InputError(f"{pre}system.memory_controller.arbitration.kind",
                         f"{mc_arb.kind!r} with scheme.kind={exp.scheme.kind!r}, which runs {arb} arbitration (the "
                         "scheme sets it, paper Sec. 5.3)", f"{arb}, or leave the arbitration kind unset")
    if getattr(scheme, "fused_rs", False) and k.num_wgs < n:
        raise InputError(f"{pre}scheme.kind", f"{exp.scheme.kind!r} with a GEMM of {k.num_wgs} WGs on {n} GPUs",
                         f"a fused GEMM-RS needs at least one WG per GPU ({n}); a larger workload or scheme.kind: sequential")


def _size(b: int) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= f:
            return f"{b / f:.4g} {unit}"
    return f"{b} B"
