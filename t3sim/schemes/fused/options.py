"""Options of the fused GPU-initiated kernels (the fused-collective paper: GEMV+AllReduce, embedding+All-to-All,
GEMM+All-to-All, and the bulk-synchronous baselines it compares them with, which take no options). Pure: config
models only."""

from __future__ import annotations

from t3sim.config.base import F
from t3sim.config.scheme import SchemeConfig, family, scheme_kind


class FusedOptions(SchemeConfig):
    """The persistent fused kernel's GPU-initiated communication library and its WG order."""

    fused_library_registers_per_thread: int = F(
        16, unit="count",
        desc="fused_gemv_ar, fused_emb_a2a: 32-bit VGPRs per thread the GPU-initiated communication library's "
             "device code adds to the fused kernel (its occupancy, and so its persistent grid, is computed with "
             "them; the statistic fused.occupancy_reduction compares it with the original kernel's)",
        source="assumption: neither the fused-collective paper (Sec. III-C: ROC_SHMEM calls 'consume GPU registers', "
               "12.5 % lower occupancy for its embedding kernel) nor rocSHMEM publishes a register count; a context "
               "handle, symmetric-heap addresses and a few 64-bit loop values", ge=0)
    fused_put_api_latency_ns: float = F(
        100.0, unit="ns",
        desc="fused_gemv_ar, fused_emb_a2a: time a WG spends in each GPU-initiated library call it makes (a "
             "ready-flag put, a fence), besides the wait the call implies (a fence's wait for its stores to land is "
             "simulated)",
        source="assumption: the paper names the API latency (Sec. III-C) without a value; ~170 CU cycles at 1.7 GHz "
               "of library code per call", ge=0)
    fused_bookkeeping_ns: float = F(
        120.0, unit="ns",
        desc="fused_gemv_ar, fused_emb_a2a: time a WG spends after each logical WG on completion tracking (setting "
             "its WG_Done bit and testing whether it completed its slice)",
        source="assumption: the paper names the bookkeeping (Sec. III-C, 'setting WG_Done flags') without a value; "
               "one L2 atomic round trip (~200 L2 cycles at 1.7 GHz)", ge=0)
    fused_comm_aware: bool = F(
        True, unit="bool",
        desc="fused_gemv_ar, fused_emb_a2a: communication-aware order (each persistent WG computes its tiles owned by "
             "peers first, owners r+1, r+2, ..., its own last) or communication-oblivious (tiles in index order; "
             "explicit mode only, as it breaks the GPUs' rotation symmetry)",
        source="fused-collective paper Secs. III-A ('Communication-aware Scheduling'), III-B, IV-C (Fig. 14)")


class FusedEmbOptions(FusedOptions):
    """``fused_emb_a2a``: the fused kernel's options and its slices."""

    fused_slice_bags: int = F(
        32, unit="count",
        desc="fused_emb_a2a: pooled vectors (bags, one logical WG each) per slice: the unit of completion tracking "
             "and of one ready flag (consecutive samples of one table, all kept by one GPU)",
        source="fused-collective paper Secs. IV-A ('a cluster of 32 logical WGs compute an output slice'), IV-C "
               "('slice size of 32 embeddings')", gt=0)


FAMILY = "fused"
family(FAMILY, "fused GPU-initiated kernels: computation and communication in one persistent kernel (the "
               "fused-collective paper), and its bulk-synchronous baselines")
scheme_kind("gemv_ar", family=FAMILY, module=f"{__package__}.gemv_ar")
scheme_kind("fused_gemv_ar", family=FAMILY, module=f"{__package__}.fused_gemv_ar", options=FusedOptions)
scheme_kind("emb_a2a", family=FAMILY, module=f"{__package__}.emb_a2a")
scheme_kind("fused_emb_a2a", family=FAMILY, module=f"{__package__}.fused_emb_a2a", options=FusedEmbOptions)
scheme_kind("gemm_a2a", family=FAMILY, module=f"{__package__}.gemm_a2a")
scheme_kind("fused_gemm_a2a", family=FAMILY, module=f"{__package__}.fused_gemm_a2a", options=FusedOptions)
