"""The embedding-bag workload of the fused embedding + All-to-All (fused-collective paper).

DLRM's model-parallel embedding layer (Naumov et al. 2019, the paper's ref. [48]; its public code, ref. [7]): every
GPU holds ``tables_per_gpu`` embedding tables of ``rows_per_table`` rows of ``embedding_dim`` elements and pools,
for every sample of the *global* batch, ``pooling`` rows of each of its tables (sum or mean: ``nn.EmbeddingBag``).
The pooled vectors then go by an all-to-all to the GPU that holds the sample in the data-parallel top MLP: sample
``b`` to GPU ``b // (global_batch / N)``.
"""

from __future__ import annotations

from typing import Literal

from t3sim.config.base import F, Model

#: PyTorch's CUDA/HIP embedding-bag forward kernel, the library kernel of the paper's baseline (Sec. III-A names it)
PYTORCH_EMBBAG = ("pytorch aten/src/ATen/native/cuda/EmbeddingBag.cu (EmbeddingBag_updateOutputKernel_sum_mean; "
                  "embedding_bag_cuda: block dim3(64, 4) on ROCm, grid 1024, one wavefront per 64-feature chunk of a "
                  "bag, chunks strided over the grid)")
DLRM_CODE = "facebookresearch/dlrm dlrm_s_pytorch.py (create_emb: nn.EmbeddingBag(n, m, mode='sum'); apply_emb: one call per table)"


class EmbeddingBagConfig(Model):
    """An embedding-bag pooling layer by its DLRM sizes, and the kernel that runs it (module doc).

    Kernel structure (:mod:`t3sim.compute.embedding_kernel`): one WG of ``threads_per_wg`` threads pools one bag (the
    paper: "each output embedding vector is computed by one WG"; 512k logical WGs for batch 2048 x 256 tables), each
    thread ``ceil(embedding_dim / threads_per_wg)`` features; for each of the bag's ``pooling`` indices it loads the
    index, then the table row's ``embedding_dim`` elements (a random row: an HBM gather), and adds them."""

    name: str = F(..., unit="name", desc="the layer's name (names results and plots)",
                  descriptive="names results and plots; a run simulates the sizes below", source="user", min_length=1)
    global_batch: int = F(..., unit="count", desc="samples of the global batch (every GPU pools all of them for its own "
                          "tables, then keeps global_batch / N)",
                          source="fused-collective paper Sec. IV-A/B (global batch 256-2048 in its hardware runs)", gt=0)
    tables_per_gpu: int = F(..., unit="count", desc="embedding tables on each GPU (model parallelism, table-wise)",
                            source="fused-collective paper Sec. IV-A (256 tables per GPU)", gt=0)
    embedding_dim: int = F(256, unit="count", desc="elements per embedding row (and per pooled output vector)",
                           source="fused-collective paper Sec. IV-A ('embedding dim=256 [47]')", gt=0)
    pooling: int = F(10, unit="count", desc="rows pooled per bag (indices per lookup; fixed for every bag)",
                     source="DLRM code dlrm_s_pytorch.py --num-indices-per-lookup default 10 (assumption: the "
                            "fixed size, --num-indices-per-lookup-fixed; the default draws 1..10 per bag)", gt=0)
    rows_per_table: int = F(100000, unit="count", desc="rows of each embedding table (the gathers' address range)",
                            source="assumption: the paper does not state it; large enough that the gathered rows "
                                   "do not fit the 8 MB L2 (DLRM's production tables have millions of rows)", gt=0)
    mode: Literal["sum", "mean"] = F("sum", unit="enum", desc="pooling: sum, or mean (one more multiply per element)",
                                     source=DLRM_CODE)
    threads_per_wg: int = F(256, unit="count", desc="threads per WG (one bag per WG)", source=f"{PYTORCH_EMBBAG}: 64 x 4",
                            gt=0, le=1024)
    grid_wgs: int = F(1024, unit="count", desc="WGs of the library kernel's grid (one kernel per table; a WG pools "
                      "bags w, w + grid, ... of its table)", source=f"{PYTORCH_EMBBAG}: grid = 1024", gt=0)
    registers_per_thread: int = F(32, unit="count", desc="32-bit VGPRs per thread of the pooling kernel",
                                  source="assumption: PyTorch does not publish it; an fp32 accumulator, 64-bit "
                                         "pointers and loop bounds, about 32", gt=0)
    rows_in_flight: int = F(1, unit="count",
                            desc="pooled rows whose loads a WG keeps in flight (1: load the index, then its row, "
                                 "add, next index)",
                            source="assumption: the kernel's inner loop has no unroll pragma and each row's address "
                                   "depends on a loaded index", gt=0)
    library_kernels: Literal["per_table", "one"] = F(
        "per_table", unit="enum",
        desc="emb_a2a (the baseline; the fused kernel is one kernel by construction and does not read it): its pooling "
             "launches: per_table (one kernel per table, back to back on one stream, as the "
             "DLRM code calls nn.EmbeddingBag per table) or one (every table in one kernel, e.g. FBGEMM's batched "
             "embedding)", source=DLRM_CODE)
