"""Running a collective as GPU kernels on simulated GPUs, in the two simulation modes.

``explicit``: every GPU has its own :class:`~t3sim.compute.memhier.MemoryHierarchy`
and is charged real costs by :class:`~t3sim.collectives.gpu_hook.GpuCollectiveHook`;
this is what lets a user study a slow GPU or a slow link.

``homogeneous`` (paper Sec. 5.1.1, Fig. 13): only the reference GPU (0) has a
memory model; the others mirror its action timings
(:class:`~t3sim.collectives.mirror.MirrorHook`). Every link is still simulated
and the traffic the other GPUs send to GPU 0 is written into its memory.

On a symmetric system the two modes agree within 3 % (tests: 4, 8 and 16 GPUs).

``collective.protocol`` picks the kernel: ``steps`` runs the plan step by step
(:class:`~t3sim.collectives.runner.CollectiveRunner` with the cost hooks above);
``nccl_simple`` runs NCCL's ring Simple protocol (:class:`~t3sim.collectives.nccl.NcclRing`:
channels, chunks, slices and flags) in the same two modes -- for the baseline variant only: NCCL has no
near-memory reductions, so the ``nmc`` variant (T3's Fig. 10(b), e.g. ``ideal_rs_nmc``) runs ``steps`` on
every system (on a one-way ring under ``nccl_simple``, where ``ring_bidirectional`` does not apply).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import simpy

from t3sim.collectives.gpu_hook import BufferLayout, GpuCollectiveHook
from t3sim.collectives.mirror import MirrorHook
from t3sim.collectives.nccl import NcclLayout, NcclRing
from t3sim.collectives.nccl_schedule import NCCL_COLLECTIVES, build_schedule
from t3sim.collectives.plan import Plan
from t3sim.collectives.runner import CollectiveRun, CollectiveRunner, CostHook, plan_for_system
from t3sim.compute.dispatcher import Footprint
from t3sim.compute.memhier import MemoryHierarchy
from t3sim.errors import InputError
from t3sim.interconnect.network import Network
from t3sim.memory.request import Stream
from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_NS, ns_to_ticks
from t3sim.sim.engine import Engine

MODES = ("homogeneous", "explicit")


@dataclass
class CollectiveKernel:
    """A launched collective: ``done`` fires with the :class:`CollectiveRun`.

    Protocol ``nccl_simple``: ``runner`` and ``hook`` are the same :class:`~t3sim.collectives.nccl.NcclRing`
    and ``cost_hook`` is None.
    """

    done: simpy.Event
    runner: object   # CollectiveRunner or NcclRing
    hook: object     # GpuCollectiveHook or NcclRing: ``cus``, ``pieces_done()``, ``math_ns()``
    cost_hook: Optional[CostHook]  # what a CollectiveRunner calls: ``hook`` (explicit) or a MirrorHook around it
    mode: str


def _run_nccl(engine: Engine, network: Network, plan: Plan, hiers: Dict[int, MemoryHierarchy], *, mode: str, system,
              variant: str, layout: Optional[BufferLayout], ref_gpu: int, cus: Optional[int],
              stream: Stream, port: Optional[str] = None, dispatchers=None, footprint=None) -> CollectiveKernel:
    """Protocol ``nccl_simple``: NCCL's ring Simple kernel (:mod:`t3sim.collectives.nccl`)."""
    cc = system.collective
    if variant != "baseline":
        raise ValueError(f"collective.protocol=nccl_simple runs NCCL's kernels: variant {variant!r} is not one of them "
                         "(use protocol 'steps' for near-memory reductions)")
    if plan.collective not in NCCL_COLLECTIVES:
        raise InputError("system.collective.protocol", f"nccl_simple with a {plan.collective} (NCCL's ring Simple "
                         f"kernel runs {', '.join(NCCL_COLLECTIVES)}; its all-to-all is p2p send/recv, not modelled)",
                         "protocol steps for an all-to-all")
    nc = cc.nccl
    channels = cus if cus is not None else (cc.cus if cc.cus is not None else system.gpu.num_cus)
    sched = build_schedule(plan.collective, plan.n, plan.num_elems, plan.elem_bytes, channels, buffer_B=nc.buffer_B,
                           steps=nc.steps, chunk_steps=nc.chunk_steps, slice_steps=nc.slice_steps)
    layouts = None
    if layout is not None:
        if "buf" not in layout.bases:
            raise ValueError(f"protocol nccl_simple needs the collective's array in buffer 'buf'; layout has {sorted(layout.bases)}")
        layouts = {g: NcclLayout.in_place(sched, layout.bases["buf"], layout.recv_base_B, nc.buffer_B, gpu_block=g)
                   for g in range(plan.n)}
    ring = NcclRing(engine, network, sched, plan, hiers, system.gpu, inflight_per_cu_B=cc.inflight_per_cu_B,
                    sm_store_payload_B=system.interconnect.sm_store_payload_B,
                    launch_overhead_ns=cc.latency.startup_ns(plan.collective),
                    layouts=layouts, buffer_B=nc.buffer_B, mirror=(mode == "homogeneous"), ref=ref_gpu, stream=stream,
                    port=port, dispatchers=dispatchers, footprint=footprint, hop_latency_ns=cc.latency.hop_latency_ns,
                    cu_bandwidth_GBps=cc.cu_bandwidth_GBps)
    return CollectiveKernel(ring.done, ring, ring, None, mode)


def run_collective(engine: Engine, network: Network, plan: Plan, hiers: Dict[int, MemoryHierarchy], *,
                   mode: str, system, variant: str = "baseline", layout: Optional[BufferLayout] = None,
                   ref_gpu: int = 0, cus: Optional[int] = None, stream: Stream = Stream.COMM,
                   dispatchers=None, port: Optional[str] = None) -> CollectiveKernel:
    """Launch ``plan`` now as a GPU collective kernel on ``network`` (module doc).

    Args:
        engine, network: the simulation and its network (GPU ids 0..plan.n-1).
        plan: the collective plan (e.g. :func:`~t3sim.collectives.runner.plan_for_system`).
        hiers: GPU id -> memory hierarchy; ``explicit`` needs all GPUs, ``homogeneous`` ``ref_gpu``.
        mode: ``"explicit"`` or ``"homogeneous"``.
        system: the :class:`~t3sim.config.system.SystemConfig` (``gpu`` and ``collective`` sections:
            CUs, in-flight bytes per CU, pipeline slices, start-up latency).
        variant: ``"baseline"`` (CU reductions, Fig. 10(a)) or ``"nmc"`` (near-memory updates, Fig. 10(b)).
        layout: buffer addresses (default :meth:`BufferLayout.for_plan`: the reduced array at 0).
        ref_gpu: the fully simulated GPU in homogeneous mode.
        cus: CUs for the kernel (default ``system.collective.cus``; None = all).
        dispatchers: GPU id -> WG dispatcher, when other kernels may run beside this one: the kernel's CTAs
            then take CUs through it (``system.collective.cta_*`` footprint) and leave them when it ends.
        port: the receivers' network port (default: a fresh one of ``network``, so concurrent kernels'
            packets never mix).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    cc = system.collective
    port = port or network.new_port(plan.name)
    footprint = None
    if dispatchers is not None:
        footprint = Footprint.of(system.gpu, cc.cta_threads, cc.cta_registers_per_thread, cc.cta_lds_B)
    if cc.protocol == "nccl_simple" and variant == "baseline":  # NCCL has no near-memory reductions: nmc runs steps
        k = _run_nccl(engine, network, plan, hiers, mode=mode, system=system, variant=variant, layout=layout,
                      ref_gpu=ref_gpu, cus=cus, stream=stream, port=port, dispatchers=dispatchers, footprint=footprint)
        pools = [p for ps in k.runner.pools.values() for p in ps]
    else:
        k = _run_steps(engine, network, plan, hiers, mode=mode, system=system, variant=variant, layout=layout,
                       ref_gpu=ref_gpu, cus=cus, stream=stream, port=port, dispatchers=dispatchers, footprint=footprint)
        pools = list(k.hook.pools.values())
    if dispatchers is not None:
        # the GPU starts the kernel after its launch latency: then its CTAs take CUs (and hold them, waiting
        # for peers, through the rest of the collective's start-up, collective.latency)
        engine.env.timeout(ns_to_ticks(system.gpu.kernel_launch_overhead_ns)).callbacks.append(
            lambda _e: [p.place() for p in pools])
        k.done.callbacks.append(lambda _e: [p.close() for p in pools])
    return k


def _run_steps(engine: Engine, network: Network, plan: Plan, hiers: Dict[int, MemoryHierarchy], *, mode: str, system,
               variant: str, layout: Optional[BufferLayout], ref_gpu: int, cus: Optional[int], stream: Stream,
               port: str, dispatchers, footprint) -> CollectiveKernel:
    """Protocol ``steps``: the plan's steps, sliced (:class:`~t3sim.collectives.runner.CollectiveRunner`)."""
    cc = system.collective
    if mode == "explicit":
        missing = [g for g in range(plan.n) if g not in hiers]
        if missing:
            raise ValueError(f"explicit mode needs a memory hierarchy for every GPU; missing {missing}")
        real = hiers
    else:
        if ref_gpu not in hiers:
            raise ValueError(f"homogeneous mode needs the reference GPU {ref_gpu}'s memory hierarchy")
        real = {ref_gpu: hiers[ref_gpu]}
    hook = GpuCollectiveHook(engine, network, plan, real, system.gpu, cus=cc.cus if cus is None else cus,
                             inflight_per_cu_B=cc.inflight_per_cu_B, slices=cc.pipeline_slices,
                             variant=variant, layout=layout, stream=stream, port=port,
                             dispatchers=dispatchers, footprint=footprint, cu_bandwidth_GBps=cc.cu_bandwidth_GBps)
    cost: CostHook = hook if mode == "explicit" else MirrorHook(engine, plan, hook, ref_gpu)
    runner = CollectiveRunner(engine, network, plan, cost, variant, cc.latency.startup_ns(plan.collective),
                              cc.pipeline_slices,
                              port=port)
    return CollectiveKernel(runner.done, runner, hook, cost, mode)


def simulate_collective_on_gpus(system, collective: str, num_elems: int, elem_bytes: int = 2, *,
                                mode: str = "homogeneous", variant: str = "baseline", seed: int = 0,
                                memory_mode: str = "fast", cus: Optional[int] = None) -> Tuple[CollectiveRun, Stats]:
    """Standalone run of ``collective`` (``reduce_scatter``, ``all_gather``, ``all_reduce``, ``all_to_all``).

    Builds an :class:`Engine`, the :class:`Network` of ``system.interconnect`` and
    one :class:`MemoryHierarchy` per simulated GPU (all in ``explicit`` mode, GPU 0 in
    ``homogeneous``, the default: the paper's method), runs to
    completion and checks byte conservation on every link.

    Returns the run and statistics: ``collective.*`` (duration, CUs), ``network.*``
    (per link) and ``gpu<g>.*`` (DRAM traffic per category, L2, HBM) for each simulated GPU.
    Raises :class:`~t3sim.errors.SimulationError` on deadlock or stall, naming the stuck components.
    """
    eng = Engine(seed=seed)
    net = Network(eng, system.interconnect)
    plan = plan_for_system(system, collective, num_elems, elem_bytes)
    gpus = range(plan.n) if mode == "explicit" else [0]
    hiers = {g: MemoryHierarchy(eng.env, system, mode=memory_mode) for g in gpus}
    k = run_collective(eng, net, plan, hiers, mode=mode, system=system, variant=variant, cus=cus)
    k.done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    net.check_conserved()
    run: CollectiveRun = k.done.value
    s = Stats()
    s.add("collective.duration_ns", run.duration_ns, "ns", "launch to last GPU's last step")
    s.add("collective.size_B", plan.size_B, "B", "array bytes per GPU")
    s.add("collective.steps", plan.num_steps, "count", "plan steps")
    s.add("collective.cus", k.hook.cus, "count", "CUs the collective kernel used")
    s.add("collective.cu_pieces", k.hook.pieces_done(), "count", "CU work pieces executed on the simulated GPUs")
    s.add("collective.cu_math_ns", k.hook.math_ns(), "ns", "reduction math time summed over pieces, per simulated GPU")
    if isinstance(k.hook, NcclRing):
        s.add("collective.nccl.slices", k.hook.slices_done, "count", "slice ops run by all channels of all GPUs")
        s.add("collective.nccl.recv_wait_ns", k.hook.recv_wait_ticks / TICKS_PER_NS, "ns",
              "time the reference GPU's channels waited for the previous GPU's slice flags, summed over channels")
        s.add("collective.nccl.send_wait_ns", k.hook.send_wait_ticks / TICKS_PER_NS, "ns",
              "time the reference GPU's channels waited for a free FIFO slot at the next GPU, summed over channels")
    s.merge("network", net.stats(run.end))
    for g, h in hiers.items():
        s.merge(f"gpu{g}", h.stats())
    return run, s
