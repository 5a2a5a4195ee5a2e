"""Options of the software baselines: the GEMM and its collectives as separate kernels on streams (paper Sec. 5.3's
Sequential and ideal compositions; the concurrent, chunked and copy schedules). Pure: config models only."""

from __future__ import annotations

from typing import Literal

from t3sim.config.base import F
from t3sim.config.scheme import (ChunkAxis, Chunks, CommCUs, ComputeStreams, LaunchFirst, SchemeConfig, family,
                                 scheme_kind)


class ConcurrentOptions(CommCUs, LaunchFirst, SchemeConfig):
    """``concurrent``: the GEMM and an independent RS on two streams."""


class ChunkedOptions(ComputeStreams, CommCUs, ChunkAxis, Chunks, SchemeConfig):
    """``chunked``: the GEMM in chunks, each chunk's RS (a CU-driven collective) on a second stream."""


class CopyOptions(LaunchFirst, SchemeConfig):
    """``copy``: the GEMM beside background copies."""

    copy_streams: int = F(1, unit="count",
                          desc="copy: streams issuing background copies back to back while the GEMM runs (0: the GEMM "
                               "alone)",
                          source="H200 measurements (experiments/validation/README.md, gemm_copy_contention: one or "
                                 "two copy streams)", ge=0)
    copy_size_MiB: float = F(256.0, unit="MiB",
                             desc="copy: bytes of each background copy (rounded down to whole 64 B requests)",
                             source="H200 measurements (experiments/validation/README.md, gemm_copy_contention: "
                                    "256 MiB device-to-device, 64 MiB host copies)", gt=0)
    copy_direction: Literal["d2d", "h2d", "d2h", "h2d+d2h"] = F(
        "d2d", unit="enum",
        desc="copy: what each copy stream copies: device to device (an SM copy kernel when "
             "system.copy_engine.d2d_path is sm, else a copy engine), host to device or device to host over the host "
             "link (copy engines), or h2d+d2h (even streams h2d, odd streams d2h)",
        source="H200 measurements (experiments/validation/README.md, gemm_copy_contention backgrounds d2d1, d2d2, "
               "pcie)")


FAMILY = "baseline"
family(FAMILY, "software baselines: the GEMM and its collectives as separate kernels on streams (paper Sec. 5.3)")
scheme_kind("sequential", family=FAMILY, module=f"{__package__}.sequential")
scheme_kind("ideal_gemm_rs_overlap", family=FAMILY, module=f"{__package__}.sequential")
scheme_kind("ideal_rs_nmc", family=FAMILY, module=f"{__package__}.sequential")
scheme_kind("concurrent", family=FAMILY, module=f"{__package__}.concurrent", options=ConcurrentOptions)
scheme_kind("chunked", family=FAMILY, module=f"{__package__}.chunked", options=ChunkedOptions)
scheme_kind("copy", family=FAMILY, module=f"{__package__}.copy", options=CopyOptions)
