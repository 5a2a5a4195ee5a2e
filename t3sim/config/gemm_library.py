"""The GEMM kernels a system's BLAS library has, and how it picks one per GEMM shape.

A GEMM's speed depends on the kernel the library picks for its shape: cuBLAS, hipBLASLt and CUTLASS pick other
tiles, pipeline stages, clusters and split-K for a 64-row GEMM than for a 16384-row one, and fall back to older
kernels when an operand's stride is not 16-byte aligned (TMA's requirement). :class:`GemmLibraryConfig` holds the
library's kernels (:class:`GemmKernelConfig`) and the registered selection policy that picks one per shape
(``t3sim.compute.selection``: the one place a GEMM gets its kernel).
"""

from __future__ import annotations

from typing import List, Literal

from pydantic import field_validator, model_validator

from t3sim.config.base import F, Model, check_kind


class GemmKernelConfig(Model):
    """One GEMM kernel of the library: tile, warps, registers, shared-memory stages, cluster, split-K."""

    name: str = F("gemm", unit="name", desc="the kernel's name (the vendor library's, e.g. a cuBLAS nvjet kernel): "
                                            "names it in stats.json, timelines and selection tables",
                  source="the BLAS kernel's name",
                  descriptive="names the kernel in results and selection tables; the fields below are what runs")
    tile_m: int = F(128, unit="count", desc="output tile rows (of the M x N output) per WG", source="the BLAS kernel's name/config", gt=0)
    tile_n: int = F(128, unit="count", desc="output tile columns per WG", source="the BLAS kernel's name/config", gt=0)
    tile_k: int = F(32, unit="count", desc="K slice per main-loop step", source="the BLAS kernel's name/config", gt=0)
    wf_grid: List[int] = F([2, 4], unit="list", desc="math WFs per WG as [rows, cols] of the output tile", source="the BLAS kernel's config", min_length=2, max_length=2)
    registers_per_thread: int = F(128, unit="count", desc="32-bit registers per thread", source="the BLAS kernel's config", gt=0)
    lds_stages: int = F(2, unit="count", desc="shared-memory pipeline stages of A and B tiles; the main loop keeps lds_stages - 1 k-steps of loads in flight (CUTLASS multistage; 2 = double buffering)", source="the BLAS kernel's config", gt=0)
    cluster_m: int = F(1, unit="count", desc="thread-block cluster size along M: CTAs of this many consecutive tile rows run together and share each k-step's B slice by TMA multicast, each issuing 1/cluster_m of it", source="the BLAS kernel's name/config (sm90 cluster shape)", gt=0)
    cluster_n: int = F(1, unit="count", desc="thread-block cluster size along N: CTAs of this many consecutive tile columns share each k-step's A slice by TMA multicast, each issuing 1/cluster_n of it", source="the BLAS kernel's name/config (sm90 cluster shape)", gt=0)
    split_k: int = F(1, unit="count", desc="split-K slices: the K loop is cut into this many slices run by separate WGs, each writing an fp32 partial tile to a workspace that a reduction kernel sums into C (1: no split)",
                     source="the BLAS kernel's name (cuBLAS 'splitK' kernels followed by cublasLt::splitKreduce_kernel) and grid", gt=0)
    operand_alignment_B: int = F(16, unit="B", desc="the kernel runs only GEMMs whose K and N rows (the operands' and output's leading dimensions) are a multiple of this many bytes; others go to a kernel of smaller alignment",
                                 source="CUDA driver API cuTensorMapEncodeTiled: TMA global strides must be multiples of 16 B (sm90 kernels); CUTLASS kernel names' alignN: N elements", gt=0)
    raster: Literal["along_n", "along_m", "heuristic"] = F(
        "along_n", unit="enum",
        desc="the order the kernel's WGs take the output tiles when the GEMM's own order is row-major: along_n (consecutive WGs "
             "walk a tile row), along_m (they walk a tile column), heuristic (along_m when there are more tile columns than "
             "rows, counted in whole clusters, else along_n)",
        source="CUTLASS include/cutlass/gemm/kernel/tile_scheduler_params.h get_rasterization_order (the sm90 persistent "
               "scheduler's RasterOrderOptions::Heuristic); CUTLASS 2.x GemmIdentityThreadblockSwizzle (sm80: grid x along M)")
    mma_rate: float = F(1.0, unit="ratio", desc="fraction of the SM's tensor FLOP rate (gpu.fp16_flops_per_cycle) the kernel's MMA instructions reach (1: the GPU's own generation of MMA instructions)",
                        source="1 for a GPU's own kernels; below 1 for an older generation's kernels on a newer GPU, with its source in the preset", gt=0, le=1)


class GemmLibraryConfig(Model):
    """A system's GEMM library: its kernels and the selection that picks one per GEMM (module doc)."""

    name: str = F("", unit="name", desc="the library and version the kernels and choices come from (e.g. cuBLAS 13.0 on an H200)",
                  source="the preset", descriptive="names the library in results; the kernels and selection below are what runs")
    kernels: List[GemmKernelConfig] = F(
        [], unit="list", desc="the library's kernels; empty: every GEMM runs the workload's own kernel (its trace's tile or the generator's default tile)",
        source="per preset: the vendor library's kernels, measured (profiler kernel names) or from its sources")
    selection: str = F("first_fit", unit="name",
                       desc="registered policy that picks a kernel per GEMM shape (t3sim/compute/selection.py): first_fit "
                            "(the first kernel whose operand alignment fits), measured (the kernel the library ran for the "
                            "nearest measured shape, `choices`), fastest (among the kernels of the most specialised alignment "
                            "the shape admits, the least estimated time: an autotuner's choice)",
                       source="measured: experiments/validation/gemm_kernels/ (profiler kernel names per shape); fastest models an autotuner (FLUX Sec. 4)")
    choices: List[List[object]] = F(
        [], unit="list", desc="selection measured: [M, N, K, kernel name] rows, the kernel the library ran for that shape (row-major A and B, torch.matmul)",
        source="measured: experiments/validation/gemm_kernels/ (written by its library.py)")

    @field_validator("selection")
    @classmethod
    def _selection(cls, v: str) -> str:
        return check_kind("gemm_selection", v)

    @model_validator(mode="after")
    def _consistent(self) -> "GemmLibraryConfig":
        names = [k.name for k in self.kernels]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"gemm_library.kernels: kernel name(s) {', '.join(dup)} appear more than once; names must be unique")
        known = set(names)
        for i, row in enumerate(self.choices):
            if len(row) != 4 or not all(isinstance(x, int) and x > 0 for x in row[:3]) or not isinstance(row[3], str):
                raise ValueError(f"gemm_library.choices[{i}] = {row!r}: expected [M, N, K, kernel name] with positive integers")
            if row[3] not in known:
                raise ValueError(f"gemm_library.choices[{i}] names kernel {row[3]!r}, which is not in gemm_library.kernels")
        if self.selection == "measured" and not self.choices:
            raise ValueError("gemm_library.selection=measured needs gemm_library.choices (measured [M, N, K, kernel] rows)")
        if self.kernels and self.selection != "measured" and self.choices:
            raise ValueError(f"gemm_library.choices are read by selection=measured only; selection={self.selection!r} would ignore them")
        return self


__all__ = ["GemmKernelConfig", "GemmLibraryConfig"]
