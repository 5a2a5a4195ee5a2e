"""Transformer models (paper Table 2) and the workload of one experiment."""

from __future__ import annotations

from typing import List, Literal, Optional

from pydantic import model_validator

from t3sim.config.base import F, Model
from t3sim.config.embedding import EmbeddingBagConfig

Sublayer = Literal["OP", "FC-2", "FC-1", "IP"]
DType = Literal["fp16", "bf16", "fp32", "fp8"]
Direction = Literal["gemm_rs", "ag_gemm", "a2a_gemm", "gemm_a2a"]
Collective = Literal["all_reduce", "reduce_scatter"]

#: Bytes per element of each dtype.
DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "fp8": 1}

#: Sliced sub-layers that need an all-reduce (paper Sec. 6.1): the GEMM's
#: K = H * f / TP with these f, and whether the GEMM is a forward or backward
#: one (forward GEMMs use transposed inputs, backward ones not; Sec. 5.2).
SUBLAYER_K_FACTOR = {"OP": 1, "FC-2": 4, "FC-1": 4, "IP": 3}
SUBLAYER_PASS = {"OP": "fwd", "FC-2": "fwd", "FC-1": "bwd", "IP": "bwd"}


class ModelConfig(Model):
    """A Transformer model (paper Table 2)."""

    name: str = F(..., unit="name", desc="model name (used in trace file names and plots)", source="paper Table 2",
                  descriptive="names traces, results and plots; a run simulates the model's shape (hidden_size, tokens)")
    hidden_size: int = F(..., unit="count", desc="hidden dimension H", source="paper Table 2", gt=0)
    layers: int = F(..., unit="count", desc="Transformer layers L", source="paper Table 2", gt=0,
                    descriptive="records Table 2: a run simulates one sliced sub-layer, and no analysis multiplies by the layer count")
    seq_len: int = F(..., unit="count", desc="input sequence length SL (tokens)", source="paper Table 2", gt=0)
    batch: int = F(..., unit="count", desc="batch size B (sequences)", source="paper Table 2", gt=0)
    tp_degrees: List[int] = F(..., unit="list", desc="tensor-parallel degrees the paper evaluates", source="paper Table 2", min_length=1,
                              descriptive="the degrees `t3sim trace gen --all` writes traces for (each must divide hidden_size); a run uses workload.tp")
    ffn_multiplier: int = F(4, unit="count", desc="FC-1 output width / H", source="paper Sec. 6.1 (K = 4H/TP for FC layers)", gt=0)
    attention_heads: Optional[int] = F(None, unit="count", desc="attention heads (only for end-to-end breakdowns)", source="model paper", gt=0,
                                       descriptive="read by the end-to-end analysis (t3sim/reproduction/t3/endtoend.py), not by a run")

    @property
    def tokens(self) -> int:
        """T = SL x B (paper Sec. 5.2: 'input tokens = input-length * batch-size')."""
        return self.seq_len * self.batch

    @model_validator(mode="after")
    def _tp(self) -> "ModelConfig":
        for tp in self.tp_degrees:
            check_tp(self.hidden_size, tp)
        return self


class GemmShapeConfig(Model):
    """A GEMM given by its shape instead of a model's sub-layer: the whole operator over the ``tp`` GPUs.

    Reading of FiCCO Table I: the table's (M, N, K) are the whole operator, not one GPU's
    share. N is the layer's full output width (g9's 18432 = 16384 + 2 x 1024 is llama-3-405b's fused QKV
    projection, g10's 106496 = 2 x 53248 its fused gate+up FFN; g11/g12 the same for llama-2-70b; g14-g16's
    28672 = 2 x 14336 a whole Mixtral expert's gate+up), and the all-gathered A is M x K. So with
    ``workload.direction: ag_gemm`` (SP+TP, g1-g12) every GPU gathers all M rows of A and multiplies them
    by its weight shard: ``M x N/tp x K`` per GPU; with ``a2a_gemm`` (EP, g13-g16, one expert per GPU and
    equal load) every GPU's expert receives M/tp of the M routed rows, M/tp^2 from each GPU:
    ``M/tp x N x K`` per GPU; with ``gemm_rs`` (a row-parallel layer whose partial outputs are reduce-scattered:
    FLUX Sec. 5.1 gives its GEMM+ReduceScatter shapes as the whole operator's (n, k), k over all GPUs) every GPU
    multiplies all M rows by its K/tp slice of the reduction depth: ``M x N x K/tp`` per GPU, whose M x N partial
    outputs are reduced. Each way each GPU does 1/tp of the operator's 2MNK FLOPs."""

    name: str = F(..., unit="name", desc="the GEMM's name (e.g. FiCCO Table I's g1..g16); names results, traces and plots",
                  descriptive="names results, traces and plots; a run simulates the shape (M, N, K)",
                  source="FiCCO Table I", min_length=1)
    M: int = F(..., unit="count", desc="rows of A and C over all GPUs (the gathered / routed token dimension)",
               source="FiCCO Table I", gt=0)
    N: int = F(..., unit="count", desc="columns of B and C of the whole operator (ag_gemm: each GPU holds N/tp of them)",
               source="FiCCO Table I", gt=0)
    K: int = F(..., unit="count", desc="reduction depth (columns of A, rows of B); gemm_rs: over all GPUs, each holding K/tp of it",
               source="FiCCO Table I", gt=0)
    model: Optional[str] = F(None, unit="name", desc="the model the GEMM comes from", descriptive="records FiCCO Table I's model column; not simulated",
                             source="FiCCO Table I")
    scale_M: int = F(1, unit="count",
                     desc="simulate M / scale_M rows instead of M (a scaled shape for a GEMM too large to simulate "
                          "whole; results are the scaled GEMM's, and analyses say so); 1 = as given",
                     source="t3sim: a scaled shape for a GEMM too large to simulate whole (experiments/ficco/README.md)", ge=1)
    scale_K: int = F(1, unit="count", desc="simulate K / scale_K instead of K (as scale_M); 1 = as given",
                     source="t3sim: a scaled shape for a GEMM too large to simulate whole (experiments/ficco/README.md)", ge=1)

    @property
    def sim_M(self) -> int:
        """Rows simulated: M / scale_M."""
        return self.M // self.scale_M

    @property
    def sim_K(self) -> int:
        """Reduction depth simulated: K / scale_K."""
        return self.K // self.scale_K

    @model_validator(mode="after")
    def _scales(self) -> "GemmShapeConfig":
        for dim, sc in (("M", self.scale_M), ("K", self.scale_K)):
            if getattr(self, dim) % sc:
                raise ValueError(f"gemm.scale_{dim}={sc} does not divide gemm.{dim}={getattr(self, dim)}; allowed: a divisor")
        return self


#: rocBLAS's GEMV kernel (non-transposed, non-skinny case), the source of :class:`GemvShapeConfig`'s kernel defaults
ROCBLAS_GEMVN = ("ROCm/rocBLAS library/src/blas2/rocblas_gemv_kernels.cpp (rocblas_internal_gemv_template, non-skinny "
                 "gemvn: GEMVN_DIM_X = 64, GEMVN_DIM_Y = 16, blocks = (m - 1) / (DIM_X * 4) + 1) and gemv_device.hpp "
                 "(rocblas_gemvn_kernel_calc)")


class GemvShapeConfig(Model):
    """A matrix-vector product y = W x given by its whole-operator shape: the token (decode) phase of a
    tensor-parallel Transformer layer, whose row-parallel weight W (M x K) is split along K over the ``tp`` GPUs
    (Megatron-LM, the fused-collective paper's Fig. 3): every GPU multiplies its M x K/tp slice by its K/tp slice of
    x and the M-element partial outputs are all-reduced. The kernel fields describe the GEMV kernel that runs it
    (one WG per tile of ``rows_per_wg`` output rows, streaming its rows of W through the L2 from HBM,
    :mod:`t3sim.compute.gemv_kernel`); W is column-major (rocBLAS gemvn: element (i, k) at i + k M)."""

    name: str = F(..., unit="name", desc="the GEMV's name (names results and plots)",
                  descriptive="names results and plots; a run simulates the shape (M, K)", source="user", min_length=1)
    M: int = F(..., unit="count", desc="rows of W = length of the output vector y, the all-reduced vector",
               source="fused-collective paper Sec. IV-B (up to M = 64k); configs/experiments/fused-gemv.yaml", gt=0)
    K: int = F(..., unit="count", desc="columns of W = length of x over all GPUs (each GPU holds K/tp of them)",
               source="configs/experiments/fused-gemv.yaml (T3 Table 2 hidden sizes)", gt=0)
    model: Optional[str] = F(None, unit="name", desc="the model the GEMV comes from",
                             descriptive="records which model's sub-layer the GEMV is; not simulated", source="user")
    rows_per_wg: int = F(256, unit="count", desc="output rows per WG (the tile of y one WG computes)",
                         source=f"{ROCBLAS_GEMVN}: DIM_X x 4 = 256 rows per block", gt=0)
    threads_per_wg: int = F(1024, unit="count", desc="threads per WG", source=f"{ROCBLAS_GEMVN}: 64 x 16 threads",
                            gt=0, le=1024)
    cols_per_step: int = F(64, unit="count",
                           desc="columns of W one WG loads per main-loop iteration (each of its threads: 4 columns of "
                                "its 4 rows and the 4 x values; then the multiply-adds)",
                           source=f"{ROCBLAS_GEMVN}: the column loop advances by 4 x DIM_Y = 64", gt=0)
    steps_in_flight: int = F(1, unit="count",
                             desc="main-loop iterations whose loads a WG keeps in flight (1: each iteration's loads, "
                                  "then its multiply-adds, then the next iteration's loads)",
                             source="assumption: rocblas_gemvn_kernel_calc's loop has no software prefetch, and the "
                                    "compiler is assumed not to hoist the next iteration's loads", gt=0)
    registers_per_thread: int = F(40, unit="count", desc="32-bit VGPRs per thread of the GEMV kernel",
                                  source="assumption: rocBLAS does not publish it; 4 fp32 accumulators, 4 x values, 16 "
                                         "loaded W elements and 64-bit addresses, about 40", gt=0)
    lds_per_wg_B: int = F(16384, unit="B", desc="LDS bytes per WG (the partial sums reduced across the WG's 16 thread rows)",
                          source=f"{ROCBLAS_GEMVN}: __shared__ sdata[DIM_X * 4 * DIM_Y] = 4096 fp32 accumulators", ge=0)


def check_tp(hidden_size: int, tp: int) -> None:
    """Raise ``ValueError`` if ``tp`` does not divide the hidden size."""
    if tp < 1 or hidden_size % tp:
        raise ValueError(f"TP degree {tp} does not divide the hidden size H={hidden_size}")


class WorkloadConfig(Model):
    """What one experiment runs: a model's sliced sub-layer at a TP degree."""

    model: Optional[ModelConfig] = F(None, unit="mapping", desc="the Transformer model (usually `base: models/<name>.yaml`); exactly one of model, gemm and gemv", source="paper Table 2")
    gemm: Optional[GemmShapeConfig] = F(
        None, unit="mapping",
        desc="a GEMM given by its whole-operator shape (M, N, K) instead of a model's sub-layer (FiCCO Table I); with "
             "any direction (gemm_rs: M x N x K/tp per GPU, its M x N output reduced); exactly one of model, gemm and "
             "gemv",
        source="FiCCO Table I; FLUX (Chang et al. 2024) Sec. 5.1 (GEMM+ReduceScatter shapes of the whole operator)")
    gemv: Optional[GemvShapeConfig] = F(
        None, unit="mapping",
        desc="a GEMV (matrix-vector product, the decode phase) given by its whole-operator shape (M, K), whose M-element "
             "output is all-reduced; only with direction gemm_rs and collective all_reduce, and with the schemes that run "
             "a GEMV (gemv_ar, fused_gemv_ar); exactly one of model, gemm and gemv",
        source="fused computation-collective paper Secs. II-A, III-B, IV-B")
    embedding_bag: Optional[EmbeddingBagConfig] = F(
        None, unit="mapping",
        desc="a DLRM embedding-bag pooling layer (tables per GPU, global batch, dimension, pooling) whose pooled "
             "vectors are all-to-all'ed to their samples' GPUs (tp = the GPUs); only with the schemes that run it "
             "(emb_a2a, fused_emb_a2a); exactly one of model, gemm, gemv and embedding_bag",
        source="fused computation-collective paper Secs. II-A, III-A, IV-A/B; DLRM (its refs. [7], [48])")
    sublayer: Sublayer = F("FC-2", unit="enum", desc="sliced sub-layer: OP, FC-2 (forward), FC-1, IP (backward)", source="paper Sec. 6.1")
    tp: int = F(8, unit="count", desc="tensor-parallel degree (GPUs sharing the sub-layer)", source="paper Table 2", gt=0)
    tokens: Optional[int] = F(None, unit="count", desc="override T (tokens = SL x B when unset)", source="paper Sec. 5.2", gt=0)
    dtype: DType = F("fp16", unit="enum", desc="element type of activations and weights", source="paper Sec. 5.2 (FP16)")
    direction: Direction = F(
        "gemm_rs", unit="enum",
        desc="gemm_rs: the sub-layer's producer GEMM (M = T, N = H, K = H*f/TP; workload.gemm's M x N x K/tp) whose "
             "output is reduce-scattered, then all-gathered (collective all_reduce) or not (reduce_scatter); ag_gemm: the sub-layer's consumer GEMM (M = T, N = H*f/TP, K = H) whose input A (T x H, "
             "row-sharded over the TP GPUs) is all-gathered first (sequence parallelism: IP and FC-1 forward, OP and "
             "FC-2 backward), or workload.gemm's M x N/tp x K; a2a_gemm: an expert GEMM (workload.gemm only, "
             "M/tp x N x K per GPU) whose input rows arrive by an all-to-all, M/tp^2 from each GPU (expert "
             "parallelism, FiCCO Sec. IV-B2); gemm_a2a: an expert GEMM (workload.gemm only, M/tp x N x K per GPU, C "
             "row-major) whose output rows go back to their tokens' GPUs by an all-to-all, M/tp^2 to each GPU (the "
             "MoE combine: M = tokens x top-k routed rows, one expert per GPU, equal load; fused-collective paper "
             "Sec. II-A, Fig. 4); only with schemes that run that direction",
        source="paper Secs. 2.4, 6.1 (gemm_rs); FLUX (Chang et al. 2024) Sec. 2, Fig. 2 and Sec. 5.1 (AllGather shapes "
               "(n, k) = (4H, H)); Megatron-LM sequence parallelism (Korthikanti et al. 2022)")
    collective: Collective = F(
        "all_reduce", unit="enum",
        desc="gemm_rs: the collective the GEMM's output feeds: all_reduce (the reduce-scatter, then the all-gather "
             "that completes the all-reduce: the paper's sliced sub-layers) or reduce_scatter (the operation ends at "
             "the reduce-scatter: FLUX's GEMM+ReduceScatter operation); with ag_gemm only all_reduce (the default) is "
             "accepted, the all-gather there being the operation's input",
        source="paper Secs. 2.4, 6.1 (all_reduce); FLUX (Chang et al. 2024) Sec. 5.1 (operation-level GEMM+ReduceScatter)")
    trace: Optional[str] = F(None, unit="path", desc="GEMM trace file to run (default: generated from model/sublayer/tp)", source="traces/FORMAT.md")

    @property
    def num_tokens(self) -> int:
        if self.gemm is not None:
            return self.gemm.sim_M
        if self.embedding_bag is not None:
            return self.embedding_bag.global_batch
        if self.gemv is not None:
            return 1  # a GEMV is one token's (the decode phase's) matrix-vector product
        return self.tokens if self.tokens is not None else self.model.tokens

    @property
    def collective_feeds_gemm(self) -> bool:
        """Whether the collective runs before the GEMM and delivers its input (``direction`` ``ag_gemm``, ``a2a_gemm``)
        rather than consuming its output (``gemm_rs``, ``gemm_a2a``)."""
        return self.direction in ("ag_gemm", "a2a_gemm")

    @property
    def kind(self) -> str:
        """Which workload this is: ``model`` (a Transformer sub-layer's GEMM), ``gemm`` or ``gemv`` (given by shape)."""
        if self.embedding_bag is not None:
            return "embedding_bag"
        return "gemm" if self.gemm is not None else "gemv" if self.gemv is not None else "model"

    @property
    def name(self) -> str:
        """The model's name, or the shape-given GEMM's or GEMV's."""
        if self.embedding_bag is not None:
            return self.embedding_bag.name
        return self.gemm.name if self.gemm is not None else self.gemv.name if self.gemv is not None else self.model.name

    @property
    def label(self) -> str:
        """What results call the operation: the sub-layer (``FC-2``...), ``GEMM`` or ``GEMV``."""
        return {"model": self.sublayer, "gemm": "GEMM", "gemv": "GEMV", "embedding_bag": "EmbeddingBag"}[self.kind]

    @model_validator(mode="after")
    def _tp(self) -> "WorkloadConfig":
        given = [n for n in ("model", "gemm", "gemv", "embedding_bag") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of workload.model (a Transformer sub-layer), workload.gemm (a GEMM by its "
                             "shape), workload.gemv (a GEMV by its shape) and workload.embedding_bag (a DLRM embedding "
                             f"layer); found {' and '.join(given) or 'none'}")
        if self.embedding_bag is not None:
            self._check_embedding_bag()
        elif self.gemv is not None:
            self._check_gemv()
        elif self.gemm is not None:
            self._check_gemm()
        else:
            check_tp(self.model.hidden_size, self.tp)
            if self.direction == "a2a_gemm":
                raise ValueError("direction=a2a_gemm with workload.model; allowed: a2a_gemm only with workload.gemm "
                                 "(an expert-parallel GEMM given by its shape)")
        if self.direction != "gemm_rs" and self.collective != "all_reduce":
            raise ValueError(f"collective={self.collective} with direction={self.direction}, whose collective is the "
                             "all-gather (all-to-all) of its input; allowed: collective=all_reduce (the default) with "
                             "ag_gemm and a2a_gemm, reduce_scatter only with direction=gemm_rs")
        return self

    def _only_with(self, names, where: str, allowed: str) -> None:
        """Refuse the first of ``names`` given away from its default (:meth:`Model.given`) beside ``where``."""
        given = self.given(names)
        if given:
            raise ValueError(f"{given[0]} with {where}; allowed: {given[0]} only with {allowed}")

    def _check_gemv(self) -> None:
        g, tp = self.gemv, self.tp
        self._only_with(("sublayer", "tokens", "trace"), "workload.gemv, whose shape is given", "workload.model")
        if self.direction != "gemm_rs" or self.collective != "all_reduce":
            raise ValueError(f"direction={self.direction}, collective={self.collective} with workload.gemv; allowed: "
                             "direction gemm_rs with collective all_reduce (the GEMV's partial outputs are all-reduced)")
        if g.K % tp:
            raise ValueError(f"gemv.K={g.K} with tp={tp} (each GPU holds K/tp columns of W); allowed: K a multiple of {tp}")

    def _check_embedding_bag(self) -> None:
        e, tp = self.embedding_bag, self.tp
        self._only_with(("sublayer", "tokens", "trace", "direction", "collective"), "workload.embedding_bag, whose "
                        "collective is the all-to-all of its pooled vectors", "workload.model or workload.gemm")
        if e.global_batch % tp:
            raise ValueError(f"embedding_bag.global_batch={e.global_batch} with tp={tp} (each GPU keeps global_batch/tp "
                             f"samples); allowed: a multiple of {tp}")

    def _check_gemm(self) -> None:
        g, tp = self.gemm, self.tp
        self._only_with(("sublayer", "tokens", "trace"), "workload.gemm, whose shape is given", "workload.model")
        if self.direction == "gemm_rs" and g.sim_K % tp:
            raise ValueError(f"gemm.K={g.K} / scale_K={g.scale_K} with tp={tp} (gemm_rs: each GPU holds K/tp of the "
                             f"reduction depth); allowed: K / scale_K a multiple of {tp}")
        if self.direction == "ag_gemm" and g.N % tp:
            raise ValueError(f"gemm.N={g.N} with tp={tp} (ag_gemm: each GPU holds N/tp columns of B); allowed: N a "
                             f"multiple of {tp}")
        if self.direction == "gemm_a2a" and g.sim_M % (tp * tp):
            raise ValueError(f"gemm.M={g.M} / scale_M={g.scale_M} with tp={tp} (gemm_a2a: each GPU's expert computes "
                             f"M/tp rows, M/tp^2 for each GPU); allowed: M / scale_M a multiple of {tp * tp}")
        if self.direction == "a2a_gemm" and g.sim_M % (tp * tp):
            raise ValueError(f"gemm.M={g.M} / scale_M={g.scale_M} with tp={tp} (a2a_gemm: each GPU's expert gets M/tp "
                             f"rows, M/tp^2 from each GPU); allowed: M / scale_M a multiple of {tp * tp}")
