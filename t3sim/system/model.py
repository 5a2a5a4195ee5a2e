"""The built system: engine, network, per-GPU memory hierarchies and buffer layout.

Simulation modes (paper Sec. 5.1.1, Fig. 13):

* ``homogeneous``: GPU 0 is simulated in full (CUs, L2, memory controllers,
  HBM); the other GPUs are shadows whose actions take exactly as long as GPU
  0's corresponding ones (rotation symmetry), and whose traffic still crosses
  the simulated links into GPU 0's memory controllers.
* ``explicit``: every GPU has its own memory hierarchy and runs every kernel.

Address layout of every GPU (bytes, 2 MiB aligned): A, B, C (the GEMM output,
which is the array the collective reduces), then the collective's receive
slots. Identical on all GPUs.
"""

from __future__ import annotations

from typing import Callable, Dict, List

import simpy

from t3sim.collectives.gpu_hook import BufferLayout
from t3sim.collectives.gpu_run import CollectiveKernel, run_collective
from t3sim.collectives.runner import plan_for_system
from t3sim.compute.dispatcher import CuDispatcher
from t3sim.compute.gemm_kernel import GemmKernel
from t3sim.compute.selection import check_selected, retile
from t3sim.compute.splitk import workspace_size_B
from t3sim.compute.sinks import CachedLocalOutput, OutputSink
from t3sim.compute.memhier import MemoryHierarchy
from t3sim.config.experiment import ExperimentConfig
from t3sim.config.workload import DTYPE_BYTES
from t3sim.interconnect.network import Network
from t3sim.results.stats import Stats
from t3sim.schemes.runtime import scheme_for
from t3sim.sim.clock import TICKS_PER_US, ns_to_ticks
from t3sim.sim.engine import Engine
from t3sim.system.kernels import point_kernel
from t3sim.system.workmeter import WorkMeter
from t3sim.window import run_windowed
from t3sim.workload import wg_order

ALIGN_B = 2 << 20


def _up(x: int) -> int:
    return -(-x // ALIGN_B) * ALIGN_B


class SystemModel:
    """Everything one run simulates, wired from an :class:`ExperimentConfig`."""

    def __init__(self, exp: ExperimentConfig, kernel=None):
        """``kernel``: the GEMM it runs (a KernelRecord: the resolved point's, or a measured shape); default
        :func:`~t3sim.system.kernels.point_kernel` of ``exp``."""
        self.exp = exp
        # the overlap scheme may fix the memory-controller arbitration (paper Sec. 5.3: T3 vs T3-MCA)
        self.scheme = scheme_for(exp.scheme.kind)
        arb = self.scheme.arbitration
        if arb is not None and arb != exp.system.memory_controller.arbitration.kind:
            # only the fields the user set (a full dump would mark every default as given, and validators that
            # refuse options unused in a mode, e.g. the dynamic mapping under a static threshold, would fire)
            d = exp.model_dump(exclude_unset=True)
            d.setdefault("system", {}).setdefault("memory_controller", {}).setdefault("arbitration", {})["kind"] = arb
            exp = type(exp).model_validate(d)
            self.exp = exp
        self.kernel = kernel if kernel is not None else point_kernel(exp)
        self.system = exp.system
        sim = exp.simulation
        self.mode = sim.mode
        #: GEMM kernels may run in compiled windows (simulation.gemm_window) when they have the GPU to themselves:
        #: ``exclusive`` says they do (the scheme's program runs one kernel at a time; schemes.runtime.program sets it)
        self.windowed = run_windowed if sim.gemm_window else None
        self.exclusive = False
        self.n = exp.system.interconnect.num_gpus
        self.engine = Engine(seed=sim.seed, watchdog_idle_ticks=ns_to_ticks(sim.watchdog_idle_ns))
        self.env = self.engine.env
        self.network = Network(self.engine, exp.system.interconnect)
        self.sim_gpus: List[int] = list(range(self.n)) if self.mode == "explicit" else [0]
        self.hiers: Dict[int, MemoryHierarchy] = {
            g: MemoryHierarchy(self.env, exp.system, mode=sim.memory_model, functional=sim.functional_data)
            for g in self.sim_gpus}
        for h in self.hiers.values():
            h.port.lookahead = sim.memory_lookahead
        #: each simulated GPU's WG dispatcher, shared by every kernel launched on it (CUs of concurrent kernels)
        self.dispatchers: Dict[int, CuDispatcher] = {g: CuDispatcher(exp.system.gpu, f"gpu{g}") for g in self.sim_gpus}
        k = self.kernel
        eb = DTYPE_BYTES[k.dtype]
        self.elem_B = eb
        self.a_base = 0
        self.b_base = _up(self.a_base + k.M * k.K * eb)
        self.c_base = _up(self.b_base + k.K * k.N * eb)
        self.c_elems = k.M * k.N
        w = exp.workload
        #: gemm_rs programs end with the all-gather that completes the all-reduce (``workload.collective``)
        self.with_ag = w.direction == "gemm_rs" and w.collective == "all_reduce"
        self.scratch_base = _up(self.c_base + self.c_elems * eb)
        # further buffers (independent arrays, per-kernel receive slots) are bump-allocated past the default
        # collective's receive slots (at most N-1 of them: direct RS)
        self._heap = self.scratch_base + max(1, self.n - 1) * _up(self.c_elems * eb)
        #: record what a timeline needs (t3sim.system.timeline); set before the scheme runs
        self.trace = False
        #: record every GEMM WG's span (``GemmKernel.wg_spans``) without a timeline (sampled simulation's waves)
        self.record_wg_spans = False
        self.gemm_kernels: List[GemmKernel] = []
        self.marks: Dict[str, int] = {}
        #: the scheme program's kernel records (schemes.runtime.program.Record: name, kind, stream, start, end), for timelines
        self.kernel_records: list = []
        #: the running scheme's own state (opaque here; e.g. the fused GEMM-RS context of schemes/t3.py)
        self.context = None
        self._stats_sources: List[Callable[[], Stats]] = []
        #: scheme-provided timeline tracks: ``fn(gpu, pid) -> [trace events]`` (t3sim.system.timeline)
        self.timeline_sources: List[Callable[[int, int], list]] = []
        self.engine.work = WorkMeter(self)  # percent done for progress reports (observes counters only)

    # ------------------------------------------------------------------ kernels
    def retile(self, rec):
        """``rec`` (a GEMM's kernel record, e.g. a chunk's) with the kernel the system's library picks for its shape
        and this run's scheme (:func:`t3sim.compute.selection.retile`): how schemes give a GEMM its kernel."""
        s = self.scheme
        return retile(rec, self.system, fused_epilogue=s.fused_epilogue, autotune=s.autotune)

    def alloc(self, nbytes: int) -> int:
        """Base address of a fresh ``nbytes`` buffer on every GPU (2 MiB aligned, never reused)."""
        base = self._heap
        self._heap = _up(base + int(nbytes))
        return base

    def gemm(self, name: str = "gemm", sink_for=None, order=None, num_cus=None, on_stage_done=None,
             order_for=None, chunk=None, prologue_for=None, gpus=None, kernel=None) -> simpy.Event:
        """Launch the workload's GEMM on every simulated GPU (``gpus``: on those only, e.g. one GPU's own
        stream of chunk GEMMs); event fires with {gpu: GemmRun}.

        ``order_for(gpu)`` gives a per-GPU WG order (T3's staggering); else ``order`` for all.
        ``chunk``: a :class:`~t3sim.workload.chunks.Chunk` -- run only that part of the GEMM (software
        decomposition), on its own slices of A (or B) and C. ``prologue_for(gpu)``: the WGs' prologue wait
        on that GPU (:class:`~t3sim.compute.gemm_kernel.GemmKernel`'s ``prologue``). ``kernel``: the record to run
        instead of the workload's (the same GEMM with other resources, e.g. a fused kernel's registers).
        """
        k = self.kernel if kernel is None else kernel
        a, b, c = self.a_base, self.b_base, self.c_base
        if chunk is not None:
            k = chunk.kernel
            s = self.scheme
            check_selected(k, self.system, fused_epilogue=s.fused_epilogue, autotune=s.autotune)
            a, b, c = a + chunk.a_offset_B, b + chunk.b_offset_B, c + chunk.c_offset_B
        events = {}
        ws = self.alloc(workspace_size_B(k)) if k.split_k > 1 else None  # split-K partials (same address on every GPU)
        for g in (self.sim_gpus if gpus is None else gpus):
            h = self.hiers[g]
            sink: OutputSink = sink_for(g) if sink_for else CachedLocalOutput(h)
            gk = GemmKernel(self.engine, f"gpu{g}.{name}", h, self.system.gpu, k,
                            order_for(g) if order_for else (order or wg_order(k)),
                            a, b, c, sink, num_cus=num_cus, workspace_B=ws,
                            on_stage_done=(lambda s, g=g: on_stage_done(g, s)) if on_stage_done else None,
                            dispatcher=self.dispatchers[g], prologue=prologue_for(g) if prologue_for else None)
            gk.wg_spans = [] if (self.trace or self.record_wg_spans) else None
            gk.window, gk.exclusive = self.windowed, self.exclusive
            self.gemm_kernels.append(gk)
            events[g] = gk.start()
        return self.env.all_of(list(events.values()))

    def collective(self, collective: str, variant: str = "baseline", cus=None, base_B=None,
                   elems=None, cu_mask=None, out_B=None) -> CollectiveKernel:
        """Launch ``collective`` (as a GPU kernel, RCCL style) over the GEMM output C, or over the ``elems``
        elements at ``base_B`` (a chunk of C, an independent array) with receive slots of its own. Its CTAs
        take CUs through the GPUs' dispatchers, beside whatever else runs; ``cu_mask`` (CU indices) confines
        them to those CUs (a CU reservation). ``out_B``: the plan's output buffer where it has one apart from
        its input (an all-to-all's ``out``; default: a fresh one)."""
        if base_B is None:
            base_B, elems = self.c_base, self.c_elems
            recv = self.scratch_base
        else:
            recv = self.alloc(max(1, self.n - 1) * _up(elems * self.elem_B))
        plan = plan_for_system(self.system, collective, elems, self.elem_B)
        # the plan names its buffers (collectives.plan): the first is the array given (in place for RS/AG/AR, an
        # all-to-all's "in"); any other (an all-to-all's "out") is out_B or a fresh buffer of its size
        first, *others = plan.buffer_elems
        bases = {first: base_B}
        for name in others:
            bases[name] = out_B if out_B is not None else self.alloc(max(plan.buffer_elems[name]) * self.elem_B)
        layout = BufferLayout(bases=bases, recv_base_B=recv, recv_slot_B=_up(elems * self.elem_B))
        return run_collective(self.engine, self.network, plan, self.hiers, mode=self.mode, system=self.system,
                              variant=variant, layout=layout, cus=cus,
                              dispatchers=self.dispatchers if cu_mask is None else
                              {g: d.confined(cu_mask) for g, d in self.dispatchers.items()})

    # ------------------------------------------------------------------ stats
    def attach(self, context):
        """Make ``context`` (a scheme's components: trackers, DMA engines, copy engines...) the run's
        :attr:`context` and have :meth:`stats` include ``context.stats()``; returns it."""
        self.context = context
        self.add_stats(context.stats)
        return context

    def add_stats(self, source: Callable[[], Stats]) -> None:
        """Have :meth:`stats` include ``source()`` (a scheme's own components: trackers, DMA engines...)."""
        self._stats_sources.append(source)

    def add_timeline(self, source: Callable[[int, int], list]) -> None:
        """Have timelines include ``source(gpu, pid)``'s trace events (:mod:`t3sim.system.timeline`)."""
        self.timeline_sources.append(source)

    def stats(self) -> Stats:
        s = Stats()
        for g, h in self.hiers.items():
            s.merge(f"gpu{g}", h.stats())
        s.merge("network", self.network.stats(self.env.now))
        for source in self._stats_sources:
            s.merge("", source())
        seen = set()
        for gk in self.gemm_kernels:
            k, key = getattr(gk, "kernel", None), gk.name.replace(".", "_")
            if k is None or not hasattr(k, "tile_m") or key in seen:
                continue
            seen.add(key)
            s.add(f"gemm_kernel.{key}", f"{k.kernel or 'workload'} ({k.tile_m}x{k.tile_n}x{k.tile_k}"
                  f"{f', split-K {k.split_k}' if k.split_k > 1 else ''})", "name",
                  "the kernel this GEMM ran (the system's gemm_library pick for its shape, or the workload's own) and "
                  "its tile M x N x K")
        s.add("sim.events", self.engine.events_processed, "count", "simpy events processed")
        s.add("sim.end_us", self.env.now / TICKS_PER_US, "us", "simulated time at the end of the run")
        return s
