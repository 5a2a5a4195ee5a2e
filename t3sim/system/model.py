"""The built system: engine, network, per-GPU memory hierarchies and buffer layout (issue 4).

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

from typing import Dict, List

import simpy

from t3sim.collectives.gpu_hook import BufferLayout
from t3sim.collectives.gpu_run import CollectiveKernel, run_collective
from t3sim.collectives.runner import plan_for_system
from t3sim.compute.gemm_kernel import CachedLocalOutput, GemmKernel, OutputSink
from t3sim.compute.memhier import MemoryHierarchy
from t3sim.config.experiment import ExperimentConfig
from t3sim.config.workload import DTYPE_BYTES
from t3sim.interconnect.network import Network
from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_US, ns_to_ticks
from t3sim.sim.engine import Engine
from t3sim.system.workmeter import WorkMeter
from t3sim.workload import workload_kernel, wg_order

ALIGN_B = 2 << 20


def _up(x: int) -> int:
    return -(-x // ALIGN_B) * ALIGN_B


class SystemModel:
    """Everything one run simulates, wired from an :class:`ExperimentConfig`."""

    def __init__(self, exp: ExperimentConfig):
        self.exp = exp
        # the overlap scheme may fix the memory-controller arbitration (paper Sec. 5.3: T3 vs T3-MCA)
        from t3sim.schemes import scheme_for

        arb = scheme_for(exp.scheme.kind).arbitration
        if arb is not None and arb != exp.system.memory_controller.arbitration.kind:
            d = exp.model_dump()
            d["system"]["memory_controller"]["arbitration"]["kind"] = arb
            exp = type(exp).model_validate(d)
            self.exp = exp
        self.system = exp.system
        sim = exp.simulation
        self.mode = sim.mode
        self.n = exp.system.interconnect.num_gpus
        self.engine = Engine(seed=sim.seed, watchdog_idle_ticks=ns_to_ticks(sim.watchdog_idle_ns))
        self.env = self.engine.env
        self.network = Network(self.engine, exp.system.interconnect)
        self.sim_gpus: List[int] = list(range(self.n)) if self.mode == "explicit" else [0]
        self.hiers: Dict[int, MemoryHierarchy] = {
            g: MemoryHierarchy(self.env, exp.system, mode=sim.memory_model, functional=sim.functional_data)
            for g in self.sim_gpus}
        self.kernel = workload_kernel(exp.workload)
        k = self.kernel
        eb = DTYPE_BYTES[k.dtype]
        self.elem_B = eb
        self.a_base = 0
        self.b_base = _up(self.a_base + k.M * k.K * eb)
        self.c_base = _up(self.b_base + k.K * k.N * eb)
        self.c_elems = k.M * k.N
        self.scratch_base = _up(self.c_base + self.c_elems * eb)
        #: record what a timeline needs (t3sim.system.timeline); set before the scheme runs
        self.trace = False
        self.gemm_kernels: List[GemmKernel] = []
        self.marks: Dict[str, int] = {}
        self.engine.work = WorkMeter(self)  # percent done for progress reports (observes counters only)

    # ------------------------------------------------------------------ kernels
    def gemm(self, name: str = "gemm", sink_for=None, order=None, num_cus=None, on_stage_done=None,
             order_for=None) -> simpy.Event:
        """Launch the workload's GEMM on every simulated GPU; event fires with {gpu: GemmRun}.

        ``order_for(gpu)`` gives a per-GPU WG order (T3's staggering); else ``order`` for all.
        """
        k = self.kernel
        events = {}
        for g in self.sim_gpus:
            h = self.hiers[g]
            sink: OutputSink = sink_for(g) if sink_for else CachedLocalOutput(h)
            gk = GemmKernel(self.engine, f"gpu{g}.{name}", h, self.system.gpu, k,
                            order_for(g) if order_for else (order or wg_order(k)),
                            self.a_base, self.b_base, self.c_base, sink, num_cus=num_cus,
                            on_stage_done=(lambda s, g=g: on_stage_done(g, s)) if on_stage_done else None)
            gk.wg_spans = [] if self.trace else None
            self.gemm_kernels.append(gk)
            events[g] = gk.start()
        return self.env.all_of(list(events.values()))

    def collective(self, collective: str, variant: str = "baseline", cus=None) -> CollectiveKernel:
        """Launch ``collective`` over the GEMM output C (as a GPU kernel, RCCL style)."""
        plan = plan_for_system(self.system, collective, self.c_elems, self.elem_B)
        layout = BufferLayout(bases={"buf": self.c_base}, recv_base_B=self.scratch_base,
                              recv_slot_B=_up(self.c_elems * self.elem_B))
        return run_collective(self.engine, self.network, plan, self.hiers, mode=self.mode, system=self.system,
                              variant=variant, layout=layout, cus=cus)

    # ------------------------------------------------------------------ stats
    def stats(self) -> Stats:
        s = Stats()
        for g, h in self.hiers.items():
            s.merge(f"gpu{g}", h.stats())
        s.merge("network", self.network.stats(self.env.now))
        t3 = getattr(self, "t3", None)  # the fused GEMM-RS context (schemes/t3.py), when a T3 scheme ran
        if t3 is not None:
            for g in self.hiers:
                s.merge(f"gpu{g}.tracker", t3.trackers[g].stats())
                s.merge(f"gpu{g}.dma", t3.dmas[g].stats())
            s.add("t3.fabric.sent_B", t3.fabric.sent_B, "B", "bytes of remote/DMA payloads sent by simulated and shadow GPUs")
            s.add("t3.fabric.landed_B", t3.fabric.landed_B, "B", "bytes of those payloads written at (or delivered to) their destination")
        s.add("sim.events", self.engine.events_processed, "count", "simpy events processed")
        s.add("sim.end_us", self.env.now / TICKS_PER_US, "us", "simulated time at the end of the run")
        return s
