"""Options of FLUX (Chang et al. 2024): the GEMM and its collective fused in one kernel, reduce-scatter in the
epilogue (``flux_rs``) or all-gather in the prologue (``flux_ag``). Pure: config models only."""

from __future__ import annotations

from typing import Literal

from t3sim.config.base import F, Model
from t3sim.config.scheme import SchemeConfig, family, scheme_kind


class FluxSwizzle(Model):
    flux_swizzle: bool = F(True, unit="bool",
                           desc="flux_rs: shift each GPU's tile coordinates by its rank along the shard axis, so GPUs "
                                "do not write to the same owner at the same time; flux_ag: start each GPU's tile order "
                                "at its own shard's rows, then the rows in the order their copies arrive (false: every "
                                "GPU runs the same tile order)",
                           source="FLUX Sec. 4.1, Figs. 7-8 (tile coordinate swizzling; for AllGather aligned with the "
                                  "signal arrival order)")


class FluxRSOptions(FluxSwizzle, SchemeConfig):
    """``flux_rs``: GEMM+ReduceScatter fused, each output tile stored into its owner GPU."""

    flux_reduce: Literal["atomic", "pull", "a2a_local"] = F(
        "atomic", unit="enum",
        desc="flux_rs: how the fused GEMM+RS reduces: atomic (each output tile's stores are atomic adds into the owner "
             "GPU's shard, local or over the links), pull (partials stored locally; dedicated WGs on the owner pull "
             "the peers' partials over the links and reduce), a2a_local (write-only all-to-all into per-source slots, "
             "then a local reduction kernel)",
        source="FLUX (Chang et al. 2024) Secs. 3.1, 4.2: Write and Reduce branches of Alg. 1, red/atomic "
               "instructions, thread-block-specialised pull reduction")
    flux_pull_ctas: int = F(8, unit="count",
                            desc="flux_rs with flux_reduce=pull: dedicated pull-and-reduce CTAs per GPU, resident "
                                 "beside the GEMM's WGs for the whole fused kernel",
                            source="assumption: FLUX (Sec. 4.2) does not publish how many thread blocks it "
                                   "specialises for the pull reduction", gt=0)


class FluxAGOptions(FluxSwizzle, SchemeConfig):
    """``flux_ag``: AllGather+GEMM fused in the prologue, A's tiles copied by copy engines with a signal each."""

    flux_ag_mode: Literal["push", "pull"] = F(
        "push", unit="enum",
        desc="flux_ag: push (each GPU's copy engines write its shard's communication tiles into every peer's "
             "gathered buffer and set the peer's signal) or pull (each GPU's copy engines read the peers' tiles into "
             "its own buffer and set its own signal)",
        source="FLUX Alg. 3, Secs. 3.2, 4.3 (pull- and push-based DataTransfer, a tuning knob)")
    flux_ag_copy_streams: int = F(
        0, unit="count",
        desc="flux_ag: host streams the copies are issued on, round robin in topology order; a stream's copies run "
             "one after another (CUDA stream order), so with 1 the tiles arrive one by one in the order the tile "
             "swizzle expects; 0: every copy on a stream of its own (all issued at the kernel's launch, queued FIFO "
             "on system.copy_engine.engines); explicit mode only unless 0",
        source="FLUX Alg. 3 (one host loop of DataTransfer, SetSignal per tile) and Sec. 4.3 (signals set with "
               "cuStreamWriteValue on a stream); the paper does not say how many streams: assumption", ge=0)
    flux_comm_tile_rows: int = F(
        0, unit="count",
        desc="flux_ag: rows of A per communication tile (one copy and one signal each); 0: the shard's M/N rows; "
             "otherwise a divisor of M/N from the GEMM's tile_m up to M/N",
        source="FLUX Sec. 4.3 (communication tile size, tuned from M/N down to the GEMM tile; Fig. 10)", ge=0)


FAMILY = "flux"
family(FAMILY, "FLUX: the GEMM and its collective fused in one kernel (Chang et al. 2024)")
scheme_kind("flux_rs", family=FAMILY, module=f"{__package__}.flux_rs", options=FluxRSOptions)
scheme_kind("flux_ag", family=FAMILY, module=f"{__package__}.flux_ag", options=FluxAGOptions)
