"""The GEMM kernel record, the lowest module of :mod:`t3sim.workload`: :class:`KernelRecord` (one kernel of a
trace, ``traces/FORMAT.md``), the field list a trace file holds (:func:`trace_fields`, :func:`json_key`) and
:func:`ceil_div`. The trace reader and writer (:mod:`t3sim.workload.trace`), the tiling math
(:mod:`t3sim.workload.gemm`) and the WG orders (:mod:`t3sim.workload.wg_order`) build on it; it imports none of
them. Matrix sizes and tile shapes are in elements; ``lds_per_wg_B`` in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, Optional, Tuple


def ceil_div(a: int, b: int) -> int:
    """``ceil(a / b)`` for positive integers."""
    return -(-a // b)


@dataclass(frozen=True)
class KernelRecord:
    """One GEMM kernel of a trace (see ``traces/FORMAT.md`` for every field).

    ``pass_`` is written as ``"pass"`` in the file (``pass`` is a Python keyword).
    """

    name: str
    model: str
    sublayer: str
    pass_: str
    tp: int
    M: int
    N: int
    K: int
    dtype: str
    trans_a: bool
    trans_b: bool
    c_layout: str
    tile_m: int
    tile_n: int
    tile_k: int
    tiles_m: int
    tiles_n: int
    num_wgs: int
    wfs_per_wg: int
    wf_grid: Tuple[int, int]
    threads_per_wf: int
    registers_per_thread: int
    lds_per_wg_B: int
    wg_order: Dict[str, Any]
    role: str
    collective: Optional[str]
    #: thread-block cluster of the system's BLAS kernel (``gemm_library.kernels[i].cluster_m`` / ``cluster_n``): CTAs of
    #: ``cluster_m`` consecutive tile rows share each k-step's B slice, of ``cluster_n`` tile columns the A slice
    #: (TMA multicast, :mod:`t3sim.compute.gemm_kernel`). Not part of the trace format (traces hold the GEMM, the
    #: system the kernel that runs it): never written, 1 when read.
    cluster_m: int = field(default=1, metadata={"trace": False})
    cluster_n: int = field(default=1, metadata={"trace": False})
    #: the library kernel that runs this GEMM (``system.gemm_kernels[i].name``, chosen by ``system.gemm_selection``
    #: for this shape: :func:`t3sim.compute.selection.retile`); "" for a workload's own kernel. Not in traces.
    kernel: str = field(default="", metadata={"trace": False})
    #: split-K slices: the K loop is cut into ``split_k`` slices run by separate WGs, each writing its fp32 partial
    #: tile to a workspace that a reduction then sums into C (cuBLAS ``splitK`` kernels and ``splitKreduce_kernel``);
    #: 1 = no split. Not in traces.
    split_k: int = field(default=1, metadata={"trace": False})
    #: fraction of the SM's tensor FLOP rate (``gpu.fp16_flops_per_cycle``) this kernel's MMA instructions reach
    #: (1.0: the kernel of the GPU's own generation; below 1 e.g. an sm80 ``mma.sync`` kernel on sm90). Not in traces.
    mma_rate: float = field(default=1.0, metadata={"trace": False})

    @property
    def threads_per_wg(self) -> int:
        return self.wfs_per_wg * self.threads_per_wf

    def to_json(self) -> Dict[str, Any]:
        """The record as a JSON-ready mapping, keys in :data:`~t3sim.workload.trace.KERNEL_FIELDS` order."""
        out: Dict[str, Any] = {}
        for f in trace_fields():
            v = getattr(self, f.name)
            if isinstance(v, tuple):
                v = list(v)
            elif isinstance(v, dict):
                v = {k: (list(x) if isinstance(x, tuple) else x) for k, x in v.items()}
            out[json_key(f.name)] = v
        return out


def trace_fields():
    """The :class:`KernelRecord` fields a trace file holds (all but the system-kernel ones), in file order."""
    return [f for f in fields(KernelRecord) if f.metadata.get("trace", True)]


def json_key(attr: str) -> str:
    """The trace file's key of :class:`KernelRecord` attribute ``attr`` (``pass_`` is written ``pass``)."""
    return "pass" if attr == "pass_" else attr
