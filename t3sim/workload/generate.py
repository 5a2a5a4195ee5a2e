"""Generate GEMM traces for the sliced Transformer sub-layers that need an all-reduce.

For a model (paper Table 2) at tensor-parallel degree ``TP`` each GPU runs,
per Transformer layer, four GEMMs whose partial outputs are all-reduced
(paper Secs. 2.4, 6.1): OP and FC-2 in the forward pass, FC-1 and IP in the
backward pass (their input-gradient GEMMs). Each produces the full
activation ``T x H`` (``T = SL x B`` tokens, paper Sec. 5.2) from a
K-sliced product, so

    M = T,  N = H,  K = H * f / TP,  f = 1 (OP), 4 (FC-2), 4 (FC-1), 3 (IP)

(:data:`~t3sim.config.workload.SUBLAYER_K_FACTOR`; FC uses
``ffn_multiplier`` = 4 of the model). Forward GEMMs use transposed inputs and
backward ones non-transposed inputs (paper Sec. 5.2, as observed in MLPerf
BERT).

Kernel shape defaults (:class:`TileParams`; each a ``t3sim trace gen`` flag):

* macro tile 128 x 128 x 32, fp16, 8 WFs (warps) of 32 threads per WG: the
  Volta tensor-op tile of cuBLAS ``volta_h884gemm_128x128`` kernels and of
  CUTLASS's sm70 ``128x128_32x2`` configurations [paper refs 30, 61]; 32-thread
  warps on the Table 1 (Volta/QV100) GPU; 8 WFs is the most T3's Tracker
  supports ("wf_id is three bits for a maximum of eight WFs per WG",
  Sec. 4.2.1); each WG produces one whole tile (Sec. 5.2).
* WF grid 2 x 4 (each warp owns a 64 x 32 sub-tile; ``wf_tile_size`` = 2048
  elements) -- assumption, CUTLASS-style warp tiling (only the sub-tile size
  matters to the Tracker).
* registers per thread 128: 64 fp32 accumulators (``tile_m * tile_n /
  threads``) plus double-buffered A/B fragments, global-load staging and
  addressing; assumption consistent with cuBLAS/CUTLASS Volta 128x128 kernels,
  which run 2 WGs per SM (65536 registers / (256 threads x 128) = 2).
* LDS per WG = ``(tile_m + tile_n) * tile_k * dtype_bytes * lds_stages`` with
  2 stages (double buffering, CUTLASS ``MmaPipelined``) = 32 KiB.
* WG order row-major ("row-major scheduling", paper Fig. 9(a)); output ``C``
  column-major ("column-major allocation of arrays in BLAS libraries",
  Sec. 4.2.1).
"""

from __future__ import annotations

import dataclasses

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from t3sim.config.workload import DTYPE_BYTES, SUBLAYER_K_FACTOR, SUBLAYER_PASS, ModelConfig, check_tp
from t3sim.errors import InputError
from t3sim.workload.gemm import tile_grid
from t3sim.workload.embedding import embedding_record
from t3sim.workload.gemv import gemv_record
from t3sim.workload.record import KernelRecord
from t3sim.workload.trace import Trace, load_trace, write_trace
from t3sim.workload.wg_order import NAMED_ORDERS

#: Sub-layers in the order the paper lists them (Sec. 6.1, Figs. 15/16).
SUBLAYERS: Tuple[str, ...] = ("OP", "FC-2", "FC-1", "IP")

#: Source of each :class:`TileParams` default (written to FORMAT.md and --help).
TILE_PARAM_SOURCES: Dict[str, str] = {
    "tile_m": "cuBLAS volta_h884gemm_128x128 / CUTLASS sm70 128x128_32x2 tensor-op tile [paper refs 30, 61]",
    "tile_n": "as tile_m",
    "tile_k": "CUTLASS sm70 128x128_32x2: 32-deep K slice per main-loop step",
    "wf_grid": "assumption: 8 warps as 2x4 (64x32 warp tiles); 8 WFs = T3 Tracker max (paper Sec. 4.2.1)",
    "threads_per_wf": "32-thread warps of the Table 1 Volta GPU (V100 whitepaper)",
    "registers_per_thread": "assumption: 64 fp32 accumulators + fragments/staging/addresses; 2 WGs/SM like cuBLAS Volta 128x128 kernels",
    "lds_stages": "CUTLASS MmaPipelined double buffering (2 stages)",
    "dtype": "paper Sec. 5.2: FP16 forward/backward",
    "wg_order": "paper Fig. 9(a): row-major WG scheduling",
    "c_layout": "paper Sec. 4.2.1: column-major arrays in BLAS libraries",
}


@dataclass(frozen=True)
class TileParams:
    """Kernel implementation parameters of generated GEMMs (defaults: see module docstring)."""

    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 32
    wf_grid: Tuple[int, int] = (2, 4)
    threads_per_wf: int = 32
    registers_per_thread: int = 128
    lds_stages: int = 2
    dtype: str = "fp16"
    wg_order: str = "row_major"
    c_layout: str = "col_major"

    @property
    def wfs_per_wg(self) -> int:
        return self.wf_grid[0] * self.wf_grid[1]

    @property
    def lds_per_wg_B(self) -> int:
        """Shared-memory staging of A and B tiles: ``(tile_m + tile_n) * tile_k * bytes * stages``."""
        return (self.tile_m + self.tile_n) * self.tile_k * DTYPE_BYTES[self.dtype] * self.lds_stages

    def is_default(self) -> bool:
        return self == TileParams()

    def check(self) -> None:
        """Raise :class:`InputError` for parameters no trace could hold."""
        for name in ("tile_m", "tile_n", "tile_k", "threads_per_wf", "registers_per_thread", "lds_stages"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise InputError(f"tile parameter {name}", repr(v), "integer > 0")
        if self.dtype not in DTYPE_BYTES:
            raise InputError("tile parameter dtype", repr(self.dtype), ", ".join(DTYPE_BYTES))
        if self.wg_order not in NAMED_ORDERS:
            raise InputError("tile parameter wg_order", repr(self.wg_order), ", ".join(NAMED_ORDERS))
        wf_m, wf_n = self.wf_grid
        if wf_m < 1 or wf_n < 1 or self.tile_m % wf_m or self.tile_n % wf_n:
            raise InputError("tile parameter wf_grid", f"{wf_m}x{wf_n}",
                             f"a WF grid whose sides divide the tile {self.tile_m}x{self.tile_n}")


def kernel_for(model: ModelConfig, tp: int, sublayer: str, params: TileParams = TileParams(),
               tokens: Optional[int] = None, direction: str = "gemm_rs") -> KernelRecord:
    """The kernel record of one sliced sub-layer GEMM (``M = T``, ``N = H``, ``K = H * f / TP``).

    ``direction="ag_gemm"``: the sub-layer's *consumer* GEMM instead, ``M = T``, ``N = H * f / TP``,
    ``K = H``, whose input A (``T x H``, row-sharded over the TP GPUs) is all-gathered before it
    (``workload.direction``); its pass is the other one (IP and FC-1 forward, OP and FC-2 backward:
    Megatron sequence parallelism), with the inputs' transposition of that pass."""
    if direction not in ("gemm_rs", "ag_gemm"):
        raise InputError("workload.direction", repr(direction), "gemm_rs, ag_gemm")
    if sublayer not in SUBLAYER_K_FACTOR:
        raise InputError("sublayer", repr(sublayer), ", ".join(SUBLAYERS))
    try:
        check_tp(model.hidden_size, tp)
    except ValueError:
        raise InputError("tp (--tp)", str(tp), f"a TP degree dividing H={model.hidden_size}") from None
    params.check()
    H = model.hidden_size
    f = model.ffn_multiplier if sublayer in ("FC-1", "FC-2") else SUBLAYER_K_FACTOR[sublayer]
    if (H * f) % tp:
        raise InputError("tp (--tp)", str(tp), f"a TP degree dividing H*f = {H * f} for {sublayer}")
    M, N, K = (tokens or model.tokens), H, H * f // tp
    phase = SUBLAYER_PASS[sublayer]
    if direction == "ag_gemm":
        N, K = H * f // tp, H
        phase = "bwd" if phase == "fwd" else "fwd"
    tiles_m, tiles_n = tile_grid(M, N, params.tile_m, params.tile_n)
    return KernelRecord(
        name=f"{model.name}.tp{tp}.{sublayer}.{phase}" + (".ag" if direction == "ag_gemm" else ""),
        model=model.name, sublayer=sublayer, pass_=phase, tp=tp,
        M=M, N=N, K=K, dtype=params.dtype,
        trans_a=phase == "fwd", trans_b=phase == "fwd", c_layout=params.c_layout,
        tile_m=params.tile_m, tile_n=params.tile_n, tile_k=params.tile_k,
        tiles_m=tiles_m, tiles_n=tiles_n, num_wgs=tiles_m * tiles_n,
        wfs_per_wg=params.wfs_per_wg, wf_grid=tuple(params.wf_grid),
        threads_per_wf=params.threads_per_wf, registers_per_thread=params.registers_per_thread,
        lds_per_wg_B=params.lds_per_wg_B, wg_order={"kind": params.wg_order},
        role="producer" if direction == "gemm_rs" else "none", collective="all-reduce" if direction == "gemm_rs" else None,
    )


def generate(model_cfg: ModelConfig, tp: int, sublayers: Optional[Sequence[str]] = None,
             tokens: Optional[int] = None, **tile_params) -> Trace:
    """A trace with one kernel per requested sub-layer (default: all four, paper order).

    ``tile_params`` are :class:`TileParams` fields (``tile_m=256``, ``wf_grid=(4, 2)`` ...).
    """
    try:
        params = TileParams(**tile_params)
    except TypeError as exc:
        raise InputError("generate()", str(exc), ", ".join(TileParams.__dataclass_fields__)) from None
    subs = list(sublayers) if sublayers else list(SUBLAYERS)
    kernels = tuple(kernel_for(model_cfg, tp, s, params, tokens) for s in subs)
    what = ", ".join(subs)
    desc = (f"{model_cfg.name} (T={tokens or model_cfg.tokens}, H={model_cfg.hidden_size}) TP={tp}: {what}; "
            f"generated by `t3sim trace gen` (traces/FORMAT.md)")
    return Trace(kernels, desc)


def trace_path(out_dir: str | Path, model_name: str, tp: int, sublayer: str) -> Path:
    """Where ``t3sim trace gen`` writes one sub-layer's trace: ``<out>/<model>/tp<TP>/<sublayer>.jsonl``."""
    return Path(out_dir) / model_name / f"tp{tp}" / f"{sublayer}.jsonl"


def write_traces(model_cfg: ModelConfig, tps: Iterable[int], out_dir: str | Path,
                 sublayers: Optional[Sequence[str]] = None, params: TileParams = TileParams(),
                 tokens: Optional[int] = None) -> List[Path]:
    """Write one single-kernel trace file per (TP, sub-layer); return the paths written.

    Every trace is generated (and so validated) before the first file is written.
    """
    jobs = [(trace_path(out_dir, model_cfg.name, tp, s), generate(model_cfg, tp, [s], tokens, **_asdict(params)))
            for tp in tps for s in (sublayers or SUBLAYERS)]
    return [write_trace(path, trace) for path, trace in jobs]


def _asdict(params: TileParams) -> Dict[str, object]:
    return {f: getattr(params, f) for f in TileParams.__dataclass_fields__}


def with_params(params: TileParams, **changes) -> TileParams:
    """``params`` with some fields replaced (``None`` values are ignored)."""
    return replace(params, **{k: v for k, v in changes.items() if v is not None})


def shape_kernel(gemm, tp: int, direction: str, params: TileParams = TileParams()) -> KernelRecord:
    """One GPU's kernel of a GEMM given by its whole-operator shape (``workload.gemm``,
    :class:`~t3sim.config.workload.GemmShapeConfig`): ``M x N/tp x K`` for ``ag_gemm`` (all M gathered rows
    times the GPU's weight shard), ``M/tp x N x K`` for ``a2a_gemm`` (the GPU's expert over its routed rows) and ``gemm_a2a`` (the same, its output
    rows then combined back: C row-major), ``M x N x K/tp`` for ``gemm_rs`` (the GPU's slice of the reduction
    depth; its M x N partial output is reduced, C column-major as a model sub-layer's producer GEMM).
    A is row-major (``trans_a``), so a block of its rows is one contiguous copy, as the ag_gemm schemes need.
    M and K are the simulated ones (``gemm.scale_M``, ``gemm.scale_K``)."""
    if direction not in ("gemm_rs", "ag_gemm", "a2a_gemm", "gemm_a2a"):
        raise InputError("workload.direction", f"{direction} with workload.gemm", "gemm_rs, ag_gemm, a2a_gemm, gemm_a2a")
    if direction == "gemm_a2a":  # the combine sends row blocks of C: row-major, so each is one contiguous chunk
        params = dataclasses.replace(params, c_layout="row_major")
    params.check()
    M, N = (gemm.sim_M, gemm.N // tp) if direction == "ag_gemm" else (gemm.sim_M // tp, gemm.N)
    K = gemm.sim_K
    if direction == "gemm_rs":
        M, N, K = gemm.sim_M, gemm.N, gemm.sim_K // tp
    tiles_m, tiles_n = tile_grid(M, N, params.tile_m, params.tile_n)
    return KernelRecord(
        name=f"{gemm.name}.tp{tp}.{direction}", model=gemm.name, sublayer="GEMM", pass_="fwd", tp=tp,
        M=M, N=N, K=K, dtype=params.dtype, trans_a=True, trans_b=True, c_layout=params.c_layout,
        tile_m=params.tile_m, tile_n=params.tile_n, tile_k=params.tile_k,
        tiles_m=tiles_m, tiles_n=tiles_n, num_wgs=tiles_m * tiles_n,
        wfs_per_wg=params.wfs_per_wg, wf_grid=tuple(params.wf_grid),
        threads_per_wf=params.threads_per_wf, registers_per_thread=params.registers_per_thread,
        lds_per_wg_B=params.lds_per_wg_B, wg_order={"kind": params.wg_order},
        role="producer" if direction == "gemm_rs" else "none", collective="all-reduce" if direction == "gemm_rs" else None)


def system_kernel(workload, system) -> KernelRecord:
    """The kernel an experiment's ``workload`` runs on ``system``, before the system's library picks its GEMM kernel
    (:func:`t3sim.compute.selection.retile`): :func:`workload_kernel`, with GEMV and embedding kernels made for the
    system's wavefront size."""
    if getattr(workload, "embedding_bag", None) is not None:  # an embedding layer: its own kernel fields
        return embedding_record(workload.embedding_bag, workload.tp, workload.dtype, system.gpu.threads_per_wf)
    if getattr(workload, "gemv", None) is not None:  # a GEMV: its own kernel fields, the system's wavefront size
        return gemv_record(workload.gemv, workload.tp, workload.dtype, system.gpu.threads_per_wf)
    return workload_kernel(workload)


def workload_kernel(workload) -> KernelRecord:
    """The GEMM kernel an experiment's ``workload`` section runs.

    With ``workload.trace`` set, that file is loaded and its kernel for
    ``workload.sublayer`` (or its only kernel) is returned; otherwise the
    kernel is generated with the default :class:`TileParams`, ``workload.dtype``
    and ``workload.num_tokens`` (byte-identical to the shipped trace when
    those are the Table 2 values).
    """
    direction = getattr(workload, "direction", "gemm_rs")
    if getattr(workload, "embedding_bag", None) is not None:
        return embedding_record(workload.embedding_bag, workload.tp, workload.dtype)
    if getattr(workload, "gemv", None) is not None:
        return gemv_record(workload.gemv, workload.tp, workload.dtype)
    if getattr(workload, "gemm", None) is not None:
        return shape_kernel(workload.gemm, workload.tp, direction, TileParams(dtype=workload.dtype))
    if workload.trace and direction != "gemm_rs":
        raise InputError("workload.direction", f"{direction} with workload.trace (a trace's kernels are producer GEMMs)",
                         "workload.direction=gemm_rs with a trace, or no workload.trace")
    if workload.trace:
        trace = load_trace(workload.trace)
        if len(trace) == 1:
            return trace.kernels[0]
        try:
            return trace.kernel(workload.sublayer)
        except KeyError:
            raise InputError(f"{workload.trace}", f"no kernel for sub-layer {workload.sublayer}",
                             ", ".join(k.sublayer for k in trace)) from None
    return kernel_for(workload.model, workload.tp, workload.sublayer, TileParams(dtype=workload.dtype), workload.num_tokens,
                      direction)
