"""Timing-only execution of a collective plan on the simulated :class:`~t3sim.interconnect.network.Network`.

Each GPU runs the plan's steps in order (one simpy process per GPU):

1. after the collective's start-up (``collective.latency``: software plus the library's base latency),
2. for every step, the transfers it sends are cut into ``slices`` slices
   (NCCL-style pipelining); for slice ``j`` the GPU asks the cost hook for the
   sender-side cost of slice ``j`` of each of its transfers (DRAM reads, CU
   reductions), waits for those, then injects slice ``j`` of all its
   transfers together (packets interleaved round-robin, :meth:`Network.send_group`);
3. every slice arriving at its destination is handed to the hook's
   receiver-side cost (DRAM writes / NMC updates); a GPU starts its next step
   only once every slice addressed to it in this step has arrived and its
   receive cost was paid; after the last step of a phase it pays the final
   reduction (baseline variant) through the hook.

The collective ends when every GPU finished its last step. The per-action DRAM
traffic given to the hook comes from :func:`t3sim.collectives.traffic.account`
(split across slices exactly in proportion to their bytes).

With the default :class:`CostHook` (everything free) a ring RS takes
``(N-1) * (chunk serialisation + L)`` plus the launch overhead: the analytic
estimate of :mod:`t3sim.collectives.analytic` (tests check this).

Packets carry :class:`~t3sim.interconnect.network.PacketMeta`: ``op="update"``
for reduce transfers in the ``"nmc"`` variant, ``"store"`` otherwise;
``addr`` = the destination byte offset within the destination buffer (the GPU
model adds the buffer's base address); ``tag`` = :class:`XferTag`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Tuple

import simpy

from t3sim.collectives.algorithms import build_plan
from t3sim.collectives.plan import Plan, Xfer, split_ranges
from t3sim.collectives.traffic import Traffic, account
from t3sim.config.system import InterconnectConfig
from t3sim.errors import InputError
from t3sim.interconnect.network import Network, PacketMeta
from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_NS, ns_to_ticks
from t3sim.sim.engine import Component, Engine


class XferTag(NamedTuple):
    """``PacketMeta.tag`` of collective traffic."""

    plan: str
    step: int
    xfer: int
    slice: int
    buf: str


class CostHook:
    """Per-GPU memory/compute cost of a collective's actions. Default: everything free.

    Each method returns ``None`` (no cost: continue at once) or a simpy event
    that fires when the cost has been paid (``on_send`` may also return a
    :class:`StreamedSend`: the slice is injected part by part) (e.g. when the GPU model's memory
    controller completed the reads). ``traffic`` is this action's DRAM traffic
    (bytes, :class:`~t3sim.collectives.traffic.Traffic`); ``nbytes`` the slice's payload.
    """

    def on_send(self, gpu: int, step: int, xfer: Xfer, slice_idx: int, nbytes: int,
                traffic: Traffic) -> Optional[simpy.Event]:
        """Before slice ``slice_idx`` of ``xfer`` is injected at ``gpu`` (reads, CU reduction)."""
        return None

    def on_receive(self, gpu: int, step: int, xfer: Xfer, slice_idx: int, nbytes: int,
                   traffic: Traffic) -> Optional[simpy.Event]:
        """After the slice's last packet arrived at ``gpu`` (writes / NMC updates)."""
        return None

    def on_finalize(self, gpu: int, step: int, traffic: Traffic) -> Optional[simpy.Event]:
        """After ``step``, the last of its phase: final reduction (baseline) at ``gpu``."""
        return None


class StreamedSend:
    """What :meth:`CostHook.on_send` may return instead of one event: the slice leaves in parts.

    ``parts`` = ``[(event, nbytes), ...]`` in address order, covering the slice
    exactly; the runner injects each part into the network as soon as its event
    fires (a CU storing each reduced piece straight to the peer, as RCCL/NCCL
    kernels do), and the slice counts as arrived when its last part arrived.
    ``done`` fires when every part's event fired (the sender may go on to its
    next slice).
    """

    def __init__(self, env: simpy.Environment, parts: List[Tuple[simpy.Event, int]]):
        if not parts:
            raise ValueError("a streamed send needs at least one part")
        self.parts = list(parts)
        self.done = simpy.AllOf(env, [ev for ev, _ in self.parts])


@dataclass
class CollectiveRun:
    """Timing of one run (ticks; 1 tick = 1 ps)."""

    plan: Plan
    start: int
    end: int
    step_end: List[List[int]]  # [gpu][step] tick at which the GPU finished the step
    gpu_end: List[int]

    @property
    def duration_ticks(self) -> int:
        return self.end - self.start

    @property
    def duration_ns(self) -> float:
        return self.duration_ticks / TICKS_PER_NS


class CollectiveRunner(Component):
    """Runs ``plan`` on ``network``; :attr:`done` fires with a :class:`CollectiveRun`.

    Args:
        engine, network: the simulation and its network (GPU ids 0..plan.n-1).
        plan: the collective plan.
        hook: cost hook (default :class:`CostHook`: free).
        variant: ``"baseline"`` (CU reductions) or ``"nmc"`` (near-memory updates).
        launch_overhead_ns: the collective's start-up, ns: every GPU waits it before its first step
            (a system's is ``collective.latency.startup_ns(collective)``).
        slices: slices per transfer (>= 1).
    """

    def __init__(self, engine: Engine, network: Network, plan: Plan, hook: Optional[CostHook] = None,
                 variant: str = "baseline", launch_overhead_ns: float = 0.0, slices: int = 1,
                 port: Optional[str] = None):
        super().__init__(engine, f"collective:{plan.name}")
        if plan.n > len(network.gpus):
            raise ValueError(f"plan for {plan.n} GPUs on a network of {len(network.gpus)}")
        if slices < 1:
            raise ValueError("slices must be >= 1")
        self.net, self.plan, self.hook = network, plan, hook or CostHook()
        self.variant, self.slices = variant, slices
        self.port = port  # the receivers' network port (PacketMeta.port): this kernel's own when others run too
        self.traffic = account(plan, variant)
        self.launch_ticks = ns_to_ticks(launch_overhead_ns)
        n, S = plan.n, plan.num_steps
        env = self.env
        # outstanding receive slices per (gpu, step)
        self._recv_left = [[0] * S for _ in range(n)]
        self._recv_done = [[env.event() for _ in range(S)] for _ in range(n)]
        for si, step in enumerate(plan.steps):
            for x in step.xfers:
                self._recv_left[x.dst][si] += len(self._slices(x))
        self.step_end = [[-1] * S for _ in range(n)]
        self.gpu_end = [-1] * n
        self.start = env.now
        self._finished = 0
        self.done = env.event()
        for g in range(n):
            env.process(self._gpu(g))

    def _slices(self, x: Xfer):
        return [(lo, hi) for lo, hi in split_ranges(x.count, self.slices) if hi > lo]

    # ------------------------------------------------------------------ processes

    def _gpu(self, g: int):
        env, plan, eb = self.env, self.plan, self.plan.elem_bytes
        if self.launch_ticks:
            yield env.timeout(self.launch_ticks)
        for si, step in enumerate(plan.steps):
            sends = [(k, x, self._slices(x)) for k, x in enumerate(step.xfers) if x.src == g]
            for j in range(max((len(sl) for _, _, sl in sends), default=0)):
                batch, waits = [], []
                for k, x, sl in sends:
                    if j >= len(sl):
                        continue
                    lo, hi = sl[j]
                    nb = (hi - lo) * eb
                    ev = self.hook.on_send(g, si, x, j, nb, self.traffic.send[si][k].scaled(hi - lo, x.count))
                    if isinstance(ev, StreamedSend):
                        waits.append(ev.done)
                        self._stream(si, k, x, j, lo, hi, ev)
                        continue
                    if ev is not None:
                        waits.append(ev)
                    batch.append((k, x, j, lo, hi))
                if waits:
                    yield simpy.AllOf(env, waits)
                net_batch = []
                for k, x, j, lo, hi in batch:
                    if x.is_local:
                        self._arrived(si, k, x, j, lo, hi)
                        continue
                    op = "update" if (x.op == "reduce" and self.variant == "nmc") else "store"
                    meta = PacketMeta(op=op, addr=(x.dst_lo + lo) * eb, tag=XferTag(plan.name, si, k, j, x.dst_buf),
                                      port=self.port)
                    net_batch.append(((x.src, x.dst, (hi - lo) * eb, meta), (si, k, x, j, lo, hi)))
                if net_batch:
                    evs = self.net.send_group([s for s, _ in net_batch])
                    for ev, (_, args) in zip(evs, net_batch):
                        ev.callbacks.append(lambda _e, a=args: self._arrived(*a))
            if self._recv_left[g][si]:
                yield self._recv_done[g][si]
            fin = self.traffic.finalize[si][g]
            if fin.reads_B or fin.writes_B:
                ev = self.hook.on_finalize(g, si, fin)
                if ev is not None:
                    yield ev
            self.step_end[g][si] = env.now
            self.progressed()
        self.gpu_end[g] = env.now
        self._finished += 1
        if self._finished == plan.n:
            self.done.succeed(CollectiveRun(plan, self.start, env.now, self.step_end, self.gpu_end))

    def _stream(self, si: int, k: int, x: Xfer, j: int, lo: int, hi: int, st: "StreamedSend") -> None:
        """Inject each part of a streamed slice when its event fires; the slice arrives with its last part."""
        eb = self.plan.elem_bytes
        if sum(nb for _, nb in st.parts) != (hi - lo) * eb:
            raise ValueError(f"{self.name}: streamed parts of step {si} xfer {k} slice {j} do not cover the slice")
        left = [len(st.parts)]

        def part_arrived(_e=None):
            left[0] -= 1
            if left[0] == 0:
                self._arrived(si, k, x, j, lo, hi)

        if x.is_local:
            st.done.callbacks.append(lambda _e: self._arrived(si, k, x, j, lo, hi))
            return
        op = "update" if (x.op == "reduce" and self.variant == "nmc") else "store"
        off = (x.dst_lo + lo) * eb
        for ev, nb in st.parts:
            meta = PacketMeta(op=op, addr=off, tag=XferTag(self.plan.name, si, k, j, x.dst_buf),
                              port=self.port)
            off += nb

            def inject(_e, meta=meta, nb=nb):
                self.net.send(x.src, x.dst, nb, meta).callbacks.append(part_arrived)

            if ev.processed:
                inject(ev)
            else:
                ev.callbacks.append(inject)

    def _arrived(self, si: int, k: int, x: Xfer, j: int, lo: int, hi: int) -> None:
        tr = self.traffic.recv[si][k].scaled(hi - lo, x.count)
        ev = self.hook.on_receive(x.dst, si, x, j, (hi - lo) * self.plan.elem_bytes, tr)
        if ev is None:
            self._recv_one(x.dst, si)
        else:
            ev.callbacks.append(lambda _e: self._recv_one(x.dst, si))

    def _recv_one(self, g: int, si: int) -> None:
        self._recv_left[g][si] -= 1
        self.progressed()
        if self._recv_left[g][si] == 0:
            self._recv_done[g][si].succeed()

    def pending(self) -> str:
        if self.done.triggered:
            return ""
        waiting = [f"gpu{g}@step{next((s for s, t in enumerate(row) if t < 0), '?')}"
                   for g, row in enumerate(self.step_end) if self.gpu_end[g] < 0]
        return "waiting: " + ", ".join(waiting)


def simulate(plan: Plan, ic: InterconnectConfig, *, hook: Optional[CostHook] = None, variant: str = "baseline",
             launch_overhead_ns: float = 0.0, slices: int = 1, seed: int = 0) -> tuple[CollectiveRun, Network, Stats]:
    """Build an engine and a network for ``ic``, run ``plan`` to completion.

    Returns the run, the network (for link inspection) and the network statistics.
    Raises :class:`~t3sim.errors.SimulationError` on deadlock/stall; checks byte conservation
    on every link at the end (``AssertionError`` if violated).
    """
    eng = Engine(seed=seed)
    net = Network(eng, ic)
    runner = CollectiveRunner(eng, net, plan, hook, variant, launch_overhead_ns, slices)
    runner.done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    # every GPU waited for all its receives, so nothing is in flight: links must balance now
    # (no drain run: a hook may own perpetual processes, e.g. a clocked memory model)
    net.check_conserved()
    run = runner.done.value
    return run, net, net.stats(run.end)


def plan_for_system(system, collective: str, num_elems: int, elem_bytes: int = 2) -> Plan:
    """The plan a :class:`~t3sim.config.system.SystemConfig` runs for ``collective``.

    Uses ``collective.algorithm`` (ring/direct) and, for ring plans,
    ``collective.ring_bidirectional`` when the interconnect links run both ways
    (protocol ``steps``; NCCL's ring, protocol ``nccl_simple``, runs one direction).
    """
    cc, ic = system.collective, system.interconnect
    if ic.num_gpus < 2:
        raise InputError("system.interconnect.num_gpus", f"{ic.num_gpus} GPU for a {collective}",
                         ">= 2 GPUs for a collective (a 1-GPU system runs only GEMMs and copies)")
    bidir = cc.algorithm == "ring" and cc.ring_bidirectional and ic.bidirectional and cc.protocol == "steps"
    return build_plan(collective, cc.algorithm, ic.num_gpus, num_elems, elem_bytes=elem_bytes, bidirectional=bidir)


def simulate_system(system, collective: str, num_elems: int, elem_bytes: int = 2, *,
                    hook: Optional[CostHook] = None, variant: str = "baseline",
                    seed: int = 0) -> tuple[CollectiveRun, Network, Stats]:
    """Run ``collective`` as configured by ``system`` (plan, slices, start-up latency); see :func:`simulate`."""
    cc = system.collective
    return simulate(plan_for_system(system, collective, num_elems, elem_bytes), system.interconnect, hook=hook,
                    variant=variant, launch_overhead_ns=cc.latency.startup_ns(collective), slices=cc.pipeline_slices,
                    seed=seed)
