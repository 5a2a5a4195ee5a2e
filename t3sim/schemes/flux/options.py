"""Options of FLUX (Chang et al. 2024): the GEMM and its collective fused in one kernel, reduce-scatter in the
epilogue (``flux_rs``) or all-gather in the prologue (``flux_ag``). Pure: config models only."""

from __future__ import annotations

from typing import Literal, Optional

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


FLUX_SRC = "bytedance/flux"


class FluxKernelCosts(Model):
    """What fusing costs the GEMM kernel itself (both directions): its registers, hence its occupancy."""

    flux_extra_registers_per_thread: int = F(
        0, unit="count",
        desc="flux_rs, flux_ag: 32-bit registers per thread the fused prologue/epilogue adds to the GEMM kernel's "
             "(the fused kernel's occupancy, WGs per SM, is computed with them by the GEMM's occupancy rule; more "
             "than system.gpu.max_registers_per_thread in all is rejected)",
        source=f"{FLUX_SRC} src/gemm_rs/sm90_gemm_tma_warpspecialized_cooperative_reduce_scatter.hpp and "
               "src/ag_gemm/sm90_all_gather_gemm_tma_warpspecialized_cooperative.hpp: the fused sm90 kernels set their "
               "warpgroups with setmaxnreg to LoadRegisterRequirement = 40, MmaRegisterRequirement = 232, the values "
               "of CUTLASS's own sm90 cooperative kernel, so the fused state fits the plain kernel's budget (0 extra); "
               "the sm80 kernels' counts are the compiler's and not published", ge=0)


class FluxRSCosts(Model):
    """``flux_rs``: the per-tile costs of the fused epilogue (store boxes, fence, flag)."""

    flux_store_box_cols: int = F(
        32, unit="count",
        desc="flux_rs: columns (N) of one epilogue TMA store box; a tile part of r rows and c columns going to one "
             "owner is stored as ceil(c / this) boxes of min(kernel.tile_m, r) rows",
        source="NVIDIA/cutlass include/cutlass/epilogue/collective/builders/sm90_builder.inl "
               "sm90_compute_tile_shape_or_override: the cooperative schedule's epilogue tile is "
               "(tile_m >= 128 ? 128 : 64) x min(32, tile_n), one TMA store each; FLUX Sec. 4.2 (TMA stores)", gt=0)
    flux_store_box_issue_ns: float = F(
        20.0, unit="ns",
        desc="flux_rs: time the epilogue spends per TMA store box it issues, whatever the box's bytes (a narrow box "
             "costs as much as a full one: FLUX Sec. 6, TMA stores shrunk to 8 rows at small m); the WG holds its "
             "CU slot, without math, for boxes x this after its main loop",
        source="assumption: no published per-instruction cost of a Hopper TMA store; ~32 SM cycles at 1.6 GHz for "
               "the issuing thread's cp.async.bulk.tensor and bulk-group commit and the TMA unit's box set-up", ge=0)
    flux_tile_fence_ns: Optional[float] = F(
        None, unit="ns",
        desc="flux_rs: after a tile's stores the epilogue waits for them to be performed before it sets the tile's "
             "flag (a memory fence); null: one round trip to the farthest place they went -- the L2 hit latency "
             "(system.l2.hit_latency_cycles) if every part is this GPU's, else twice the network path latency to "
             "the farthest peer owner (the stores out, the acknowledgement back); 0: no fence",
        source=f"{FLUX_SRC} src/gemm_rs/sm90_epilogue_evt.hpp (the epilogue's end: tma_store_wait, then the tile's "
               "flag) and include/flux/cuda/system_barrier.hpp (red_release: fence.acq_rel.sys before the flag); "
               "the PTX ISA memory consistency model (a release fence orders the prior writes before the flag). "
               "The round-trip length is an assumption (the fence's own issue cost is not added)", ge=0)
    flux_tile_flag_ns: Optional[float] = F(
        None, unit="ns",
        desc="flux_rs: time the epilogue spends setting the tile's flag after the fence (a system-scope atomic on a "
             "32-bit flag in this GPU's memory); null: the L2 hit latency (system.l2.hit_latency_cycles at "
             "system.l2.clock_GHz), one atomic round trip to the L2; 0: no flag cost",
        source=f"{FLUX_SRC} src/gemm_rs/sm90_epilogue_evt.hpp (Sm90AuxStoreReduceScatter end(): "
               "wait_eq_reset, an atomicCAS_system on the tile's flag, include/flux/cuda/system_barrier.hpp); that "
               "the atomic is served at the L2 is an assumption", ge=0)


class FluxAGCosts(Model):
    """``flux_ag``: the cost of the prologue's spin on a tile's signal."""

    flux_signal_poll_ns: Optional[float] = F(
        None, unit="ns",
        desc="flux_ag: round trip of one poll of a signal by the prologue (a load of the 32-bit signal in this "
             "GPU's memory); a WG passes its wait when a poll returns that read the signal set (read at the poll's "
             "midpoint), so even a preset signal costs one poll; null: the L2 hit latency "
             "(system.l2.hit_latency_cycles at system.l2.clock_GHz); 0: the WG sees a signal the tick it is set",
        source=f"FLUX Sec. 4.3 (a signal is regular 32-bit GPU memory; WaitSignal spins); {FLUX_SRC} "
               "include/flux/cuda/system_barrier.hpp (wait_eq: thread 0 spins on ld.global.acquire.sys, then a "
               "block barrier); that the load is served at the L2 (the point of coherence of this GPU's memory, "
               "where the peers' signal writes land) is an assumption", ge=0)
    flux_signal_poll_interval_ns: float = F(
        0.0, unit="ns",
        desc="flux_ag: pause between a poll's return and the next poll (a back-off); the poll period is "
             "flux_signal_poll_ns plus this",
        source=f"{FLUX_SRC} include/flux/cuda/system_barrier.hpp: wait_eq spins back to back "
               "('while (ld_acquire(flag_ptr) != val) {}', no nanosleep)", ge=0)


class FluxRSOptions(FluxRSCosts, FluxKernelCosts, FluxSwizzle, SchemeConfig):
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


class FluxAGOptions(FluxAGCosts, FluxKernelCosts, FluxSwizzle, SchemeConfig):
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
