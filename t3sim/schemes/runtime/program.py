"""Kernels on streams: what a scheme runs, the way a CUDA/HIP program does.

A scheme builds a :class:`Program`: named *streams*, each an ordered list of
:class:`Kernel` s. A kernel is launched when the kernel before it on its stream
has ended and every kernel named in its ``after`` (on any stream: an event
recorded after that kernel, waited on by this stream) has ended. A
*companion* (``start_with``) is launched at the same instant as the kernel it
names and runs beside it without a stream slot of its own (T3's fused
reduce-scatter starts with its GEMM: the DMA commands are pre-programmed).
A *repeating* kernel (``repeat_until``) is launched again on its stream each
time it ends, until the kernel it names has ended (background traffic issued
back to back for as long as the kernel it contends with runs: the ``copy``
scheme); each instance ``i`` is its own kernel ``<name>.<i>`` in the records.

:func:`run_program` runs a program on a built :class:`~t3sim.system.model.SystemModel`
and returns a :class:`ProgramRun`: every kernel's launch and end tick, the
critical path, the communication that no compute kernel hides, and the
sub-layer phase times (:class:`Phases`), all computed the same way for every
scheme:

* ``gemm`` = from the program's start to the end of the last kernel of phase
  ``gemm``; ``rs`` = from there to the end of the last ``rs`` kernel (0 if
  they ended earlier: the *exposed* reduce-scatter); ``ag`` likewise;
  ``total`` = their sum = the program's span when the phases end in that order.
* ``exposed_comm`` = time during which some communication kernel runs and no
  compute kernel does.

Kernels launch in stream order at equal ticks (stream 0's first), which is
the order the GPU sees them (:mod:`t3sim.compute.dispatcher`). Times are
integer ticks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Tuple

import simpy

from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_US

#: the sub-layer phases every scheme reports, in order (paper Sec. 5.3 breakdown)
PHASES = ("gemm", "rs", "ag")


@dataclass
class Kernel:
    """One kernel of a program.

    ``launch()`` starts it now and returns the event that fires when it has ended (``None``: it takes no
    time). ``phase`` is its part of the sub-layer breakdown (:data:`PHASES`, or another label that is
    reported per kernel only); ``comm`` marks communication (for exposed communication); ``kind`` says
    what runs it (``gemm``, ``collective``, ``copy``, ``dma``, ``fused``...). ``on_end()`` runs when it
    ends, before anything waiting on it (e.g. the memory controller's kernel-boundary signal).
    ``repeat_until``: launch it again each time it ends until the kernel of that name has ended (module
    doc); no kernel may depend on a repeating one.
    """

    name: str
    kind: str
    phase: str
    launch: Callable[[], Optional[simpy.Event]]
    comm: bool = False
    after: Tuple[str, ...] = ()
    start_with: Optional[str] = None
    on_end: Optional[Callable[[], None]] = None
    repeat_until: Optional[str] = None


@dataclass
class Program:
    """Streams of kernels (stream order = launch priority at equal ticks)."""

    streams: Dict[str, List[Kernel]] = field(default_factory=dict)
    companions: List[Kernel] = field(default_factory=list)

    def add(self, stream: str, kernel: Kernel) -> Kernel:
        if kernel.start_with is not None:
            self.companions.append(kernel)
        else:
            self.streams.setdefault(stream, []).append(kernel)
        return kernel

    def add_in_launch_order(self, launch_first: str, gemm_side, comm_side) -> None:
        """Add ``(stream, kernel)`` pairs: the GEMM's before the communication's, or after them when
        ``launch_first`` (``scheme.launch_first``) is ``"comm"`` -- which the GPU sees first at equal ticks."""
        for stream, kernel in (list(comm_side) + list(gemm_side) if launch_first == "comm"
                               else list(gemm_side) + list(comm_side)):
            self.add(stream, kernel)

    def kernels(self) -> List[Kernel]:
        return [k for ks in self.streams.values() for k in ks] + list(self.companions)

    def check(self) -> None:
        """Names unique; every ``after``/``start_with`` names a kernel; no kernel waits on itself."""
        names = [k.name for k in self.kernels()]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"program has duplicate kernel names {sorted(dup)}")
        known = set(names)
        repeating = {k.name for k in self.kernels() if k.repeat_until is not None}
        for k in self.kernels():
            for d in k.after + ((k.start_with,) if k.start_with else ()):
                if d not in known or d == k.name:
                    raise ValueError(f"kernel {k.name!r} depends on {d!r}, which is not another kernel of the program")
                if d in repeating:
                    raise ValueError(f"kernel {k.name!r} depends on {d!r}, which repeats (it has no single end)")
            if k.repeat_until is not None and (k.repeat_until not in known or k.repeat_until in repeating
                                               or k.start_with is not None):
                raise ValueError(f"kernel {k.name!r} repeats until {k.repeat_until!r}, which is not another "
                                 "non-repeating kernel of the program (or it is a companion)")


@dataclass
class Record:
    """When one kernel ran (ticks)."""

    name: str
    kind: str
    phase: str
    comm: bool
    stream: str
    start: int = -1
    end: int = -1


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


@dataclass
class ProgramRun:
    """A finished program: its kernels' records (launch order) and the derived breakdown (module doc)."""

    start: int
    records: List[Record]
    #: the order in which the phases end (an AG+GEMM program: ``("ag", "rs", "gemm")``)
    phase_order: Tuple[str, ...] = PHASES

    @property
    def end(self) -> int:
        return max((r.end for r in self.records), default=self.start)

    def phase_marks(self) -> Dict[str, int]:
        """Tick at which each of :data:`PHASES` ends (never before the previous phase's end, in :attr:`phase_order`)."""
        marks, t = {}, self.start
        for ph in self.phase_order:
            ends = [r.end for r in self.records if r.phase == ph]
            t = max([t] + ends)
            marks[ph] = t
        return marks

    def phases(self) -> Phases:
        m = self.phase_marks()
        d, prev = {}, self.start
        for ph in self.phase_order:
            d[ph], prev = m[ph] - prev, m[ph]
        return Phases(d["gemm"], d["rs"], d["ag"], d["gemm"] + d["rs"] + d["ag"])

    def exposed_comm(self) -> int:
        """Ticks during which a communication kernel runs and no compute kernel does."""
        pts = []
        for r in self.records:
            if r.end > r.start:
                pts += [(r.start, 1, r.comm), (r.end, -1, r.comm)]
        pts.sort(key=lambda p: (p[0], p[1]))
        comm = comp = 0
        last, out = self.start, 0
        for t, d, is_comm in pts:
            if comm > 0 and comp == 0:
                out += t - last
            last = t
            if is_comm:
                comm += d
            else:
                comp += d
        return out

    def critical_path(self) -> List[str]:
        """The chain of kernels that set the end: from the last to end, repeatedly the kernel whose end
        released it (its stream predecessor or an ``after`` dependency ending at its launch), first first."""
        if not self.records:
            return []
        cur = max(self.records, key=lambda r: (r.end, r.start))
        path = [cur.name]
        while True:
            prev = [r for r in self.records if r.name not in path and r.end == cur.start]
            if not prev:
                break
            cur = max(prev, key=lambda r: (r.end - r.start, r.name))
            path.append(cur.name)
        return path[::-1]

    def stats(self) -> Stats:
        s = Stats()
        for r in self.records:
            p = f"kernels.{r.name}"
            s.add(f"{p}.start_us", (r.start - self.start) / TICKS_PER_US, "us",
                  f"{r.kind} kernel ({r.phase}, stream {r.stream}) launch, from the program start")
            s.add(f"{p}.end_us", (r.end - self.start) / TICKS_PER_US, "us", "its end, from the program start")
        s.add("kernels.exposed_comm_us", self.exposed_comm() / TICKS_PER_US, "us",
              "time during which a communication kernel runs and no compute kernel does")
        s.add("kernels.critical_path", " -> ".join(self.critical_path()), "text",
              "kernels whose ends set the program's end, first to last")
        return s


def cu_split(model) -> Tuple[Optional[int], Optional[range]]:
    """``scheme.comm_cus``'s CU reservation: ``(gemm_cus, comm_mask)`` -- the GEMM on the first
    ``num_cus - comm_cus`` CUs, communication kernels confined to the last ``comm_cus`` -- or ``(None, None)``
    when nothing is reserved (paper Sec. 3.2.1, Fig. 6: the 72-8 and 64-16 splits of an 80-CU GPU)."""
    reserved = model.exp.scheme.comm_cus
    if not reserved:
        return None, None
    total = model.system.gpu.num_cus
    if reserved >= total:
        raise InputError("scheme.comm_cus", f"{reserved} CUs reserved for communication on a GPU of {total} CUs",
                         f"0 (no reservation) .. {total - 1}, leaving the GEMM at least one CU")
    return total - reserved, range(total - reserved, total)


def boundary(model):
    """``on_end`` of a producer kernel: the memory controllers see the kernel boundary (Sec. 4.5)."""

    def on_end():
        for h in model.hiers.values():
            h.port.kernel_boundary()

    return on_end


def _repeats(k: Kernel):
    """Instances ``<name>.0``, ``<name>.1``, ... of a repeating kernel (as many as its stream asks for)."""
    i = 0
    while True:
        yield replace(k, name=f"{k.name}.{i}", repeat_until=None)
        i += 1


def run_program(model, program: Program, phase_order: Tuple[str, ...] = PHASES) -> ProgramRun:
    """Run ``program`` to completion on ``model`` (module doc); returns the :class:`ProgramRun`.
    ``phase_order``: the order in which its phases end (:attr:`ProgramRun.phase_order`)."""
    if sorted(phase_order) != sorted(PHASES):
        raise ValueError(f"phase order {phase_order} is not an order of {PHASES}")
    program.check()
    env, eng = model.env, model.engine
    # one stream and no companions: its kernels run one at a time, each with the GPUs to itself
    # (a GEMM may then run in compiled windows: t3sim.window.gemm_window)
    model.exclusive = len(program.streams) == 1 and not program.companions
    start = env.now
    recs: Dict[str, Record] = {}
    order: List[Record] = []
    done_ev: Dict[str, Optional[simpy.Event]] = {}  # launched kernels' end events
    proxies: Dict[str, simpy.Event] = {}  # ends waited on before the kernel was launched
    companions: Dict[str, List[Kernel]] = {}
    for c in program.companions:
        companions.setdefault(c.start_with, []).append(c)

    def ended(k: Kernel) -> None:
        recs[k.name].end = env.now
        if k.on_end is not None:
            k.on_end()
        p = proxies.pop(k.name, None)
        if p is not None:
            p.succeed()

    def launch(k: Kernel, stream: str) -> Optional[simpy.Event]:
        r = Record(k.name, k.kind, k.phase, k.comm, stream, start=env.now)
        recs[k.name] = r
        order.append(r)
        ev = k.launch()
        done_ev[k.name] = ev
        for c in companions.get(k.name, []):
            cev = launch(c, f"{stream}+{c.name}")
            if cev is None:
                ended(c)
            else:
                cev.callbacks.append(lambda _e, c=c: ended(c))
        return ev

    def wait_for(name: str):
        if name in recs and recs[name].end >= 0:
            return None
        ev = done_ev.get(name)
        if ev is not None:  # launched: its own end event (its record is updated by an earlier callback)
            return ev
        p = proxies.get(name)
        if p is None:
            p = proxies[name] = env.event()
        return p

    def has_ended(name: str) -> bool:
        return name in recs and recs[name].end >= 0

    def stream_body(name: str):
        for k in program.streams[name]:
            for d in k.after:
                ev = wait_for(d)
                if ev is not None:
                    yield ev
            for inst in ([k] if k.repeat_until is None else _repeats(k)):
                if k.repeat_until is not None and has_ended(k.repeat_until):
                    break
                ev = launch(inst, name)
                if ev is not None:
                    yield ev
                ended(inst)

    def main():
        names = list(program.streams)
        others = [env.process(stream_body(n)) for n in names[1:]]
        if names:
            yield from stream_body(names[0])
        if others:
            yield env.all_of(others)
        pending = [r.name for r in order if r.end < 0]
        while pending:  # companions still running
            yield done_ev[pending[0]]
            pending = [r.name for r in order if r.end < 0]
        eng.finish()

    env.process(main())
    eng.run(progress=lambda t: f"[{model.exp.name}] simulated {t / TICKS_PER_US:,.1f} us", progress_every_s=5.0)
    run = ProgramRun(start, order, tuple(phase_order))
    model.marks = {"start": start, **run.phase_marks()}  # phase boundaries (ticks), for timelines
    model.kernel_records = order
    return run
