"""``copy``: the GEMM beside background copies on other streams, for contention studies.

What a program does when it moves data with ``cudaMemcpyAsync`` on side streams while a GEMM runs
(experiments/validation/README.md, ``gemm_copy_contention``): stream ``compute`` runs the sub-layer's
GEMM; each of ``scheme.copy_streams`` streams ``copy<i>`` issues copies of ``scheme.copy_size_MiB``
back to back -- the next when the previous ends -- from the program's start until the GEMM has ended;
then it stops issuing, and the copy in flight completes. ``scheme.launch_first`` says whether the
copies (``comm``) or the GEMM (``gemm``) reach the GPU first (the measured protocol enqueues the copies
first).

What executes a copy (``scheme.copy_direction``; :mod:`t3sim.dma`):

* ``d2d``: an SM copy kernel (:class:`~t3sim.dma.copy_kernel.SMCopyKernel`) when
  ``system.copy_engine.d2d_path`` is ``sm`` (the measured H200): its CTAs take CUs through the GPU's
  WG dispatcher in launch order with the GEMM's, so the two share CUs as well as L2 and HBM; else a
  copy engine (:class:`~t3sim.dma.copy_engine.CopyEngines`), which shares only the memory;
* ``h2d`` / ``d2h``: copy engines over the host link (PCIe); only the device side touches HBM;
* ``h2d+d2h``: even streams copy host to device, odd streams device to host (the measured ``pcie``
  background with two streams).

Every stream copies between buffers of its own (``model.alloc``), on every simulated GPU.

Phases (:class:`~t3sim.schemes.runtime.program.ProgramRun`): ``gemm`` = the GEMM's end, from the program's
start, which is launch to end for the GEMM, including any wait for CUs behind copy kernels launched
before it: the GEMM's time beside the copies, the scheme's result (``total``). There is no
reduce-scatter or all-gather (``rs`` = ``ag`` = 0): the copies are background traffic, not the
sub-layer's communication, so they are recorded per kernel (phase ``copy``, ``copy<i>.<j>``: one record
per copy) and not counted as communication. Statistics ``copy.*`` count the copies and their bytes.

Invariants (tests): the bytes the copies read and write are copies x size (d2d reads and writes them
locally, h2d only writes, d2h only reads); the GEMM beside copies is never faster than alone.
"""

from __future__ import annotations

from typing import Dict, List

from t3sim.compute.memhier import REQ_B
from t3sim.dma.copy_engine import CopyEngines, CopyPath
from t3sim.dma.copy_kernel import SMCopyKernel
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, boundary, run_program
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation

MiB = 1 << 20


def stream_direction(direction: str, i: int) -> str:
    """The direction stream ``i`` copies in under ``scheme.copy_direction`` = ``direction``."""
    if direction == "h2d+d2h":
        return "h2d" if i % 2 == 0 else "d2h"
    return direction


class Copiers:
    """Each simulated GPU's copy engines and (``d2d_path: sm``) SM copy kernel, and what they copied."""

    def __init__(self, model):
        cfg = model.system.copy_engine
        self.engines: Dict[int, CopyEngines] = {}
        self.sm: Dict[int, SMCopyKernel] = {}
        for g in model.sim_gpus:
            self.engines[g] = CopyEngines(model.engine, g, model.hiers[g], cfg)
            if cfg.d2d_path == "sm":
                self.sm[g] = SMCopyKernel(model.engine, g, model.hiers[g], model.dispatchers[g], model.system.gpu, cfg)
        self.issued = 0

    def path(self, g: int, direction: str) -> CopyPath:
        return self.sm[g] if direction == "d2d" and g in self.sm else self.engines[g]

    def stats(self) -> Stats:
        s = Stats()
        s.add("copy.copies_issued", self.issued, "count", "background copies issued (every simulated GPU)")
        for g in self.engines:
            s.merge(f"gpu{g}.copy_engines", self.engines[g].stats())
            if g in self.sm:
                s.merge(f"gpu{g}.sm_copy", self.sm[g].stats())
        return s


def copy_program(model, copiers: Copiers) -> Program:
    """The GEMM on ``compute`` and ``copy_streams`` repeating copies on ``copy<i>`` (module doc)."""
    sc = model.exp.scheme
    nbytes = int(sc.copy_size_MiB * MiB) // REQ_B * REQ_B
    if nbytes <= 0:
        raise InputError("scheme.copy_size_MiB", f"{sc.copy_size_MiB:g} MiB ({int(sc.copy_size_MiB * MiB)} B)",
                         f"at least {REQ_B} B (one 64 B memory request)")
    streams: List[tuple] = []
    for i in range(sc.copy_streams):
        direction = stream_direction(sc.copy_direction, i)
        # source and destination on the device (host buffers are not simulated: only their link is)
        src = model.alloc(nbytes) if direction in ("d2d", "d2h") else 0
        dst = model.alloc(nbytes) if direction in ("d2d", "h2d") else 0
        streams.append((i, direction, src, dst))
    top = max([b + nbytes for _i, _d, src, dst in streams for b in (src, dst) if b], default=0)
    cap = min(h.mem.amap.capacity_B for h in model.hiers.values())
    if top > cap:
        raise InputError("scheme.copy_size_MiB", f"{sc.copy_streams} copy streams of {sc.copy_size_MiB:g} MiB: the "
                         f"GEMM's arrays and the copy buffers need {top / 2**30:.3g} GiB of the "
                         f"{cap / 2**30:.3g} GiB of HBM per GPU", "copy buffers that fit the system's HBM")

    def launch_copy(direction: str, src: int, dst: int):
        def launch():
            evs = [copiers.path(g, direction).copy(src, dst, nbytes, direction) for g in model.sim_gpus]
            copiers.issued += len(evs)
            return evs[0] if len(evs) == 1 else model.env.all_of(evs)
        return launch

    gemm = Kernel("gemm", "gemm", "gemm", model.gemm, on_end=boundary(model))
    # an SM copy kernel is a kernel on the CUs ("copy"); a copy engine's copy is DMA ("dma")
    copies = [(f"copy{i}", Kernel(f"copy{i}", "copy" if d == "d2d" and copiers.sm else "dma", "copy",
                                  launch_copy(d, src, dst), repeat_until="gemm"))
              for i, d, src, dst in streams]
    p = Program()
    p.add_in_launch_order(sc.launch_first, [("compute", gemm)], copies)
    return p


def run_copy(model) -> ProgramRun:
    """Run the GEMM beside the background copies on ``model`` (module doc)."""
    copiers = Copiers(model)
    model.attach(copiers)
    return run_program(model, copy_program(model, copiers))


register_simulation("copy", run_copy)
register_scheme(Scheme("copy", "the GEMM beside background copies issued back to back on copy streams until it ends "
                       "(SM copy kernels or copy engines; contention studies, no RS/AG)", label="GEMM + copies",
                       color="#e377c2", paper_section="T3 Sec. 3.2 (resource contention)", simulation="copy",
                       collectives=False,
                       study="a contention study (the GEMM beside background copies, no collective), not a way to run "
                             "the operation"))
