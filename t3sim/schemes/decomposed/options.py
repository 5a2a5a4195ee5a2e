"""Options of the DMA decomposition (Transformer Engine userbuffers, PyTorch AsyncTP): the GEMM in chunks, each
chunk's communication by copy engines. Pure: config models only."""

from __future__ import annotations

from t3sim.config.scheme import ChunkAxis, Chunks, ComputeStreams, SchemeConfig, family, scheme_kind


class ChunkedDmaOptions(ComputeStreams, ChunkAxis, Chunks, SchemeConfig):
    """``chunked_dma``: GEMM chunks (``gemm_rs``) or steps per shard of A (``ag_gemm``), copy-engine communication."""


FAMILY = "decomposed"
family(FAMILY, "DMA decomposition: the GEMM in chunks, each chunk's communication by copy engines (Transformer "
               "Engine userbuffers, PyTorch AsyncTP; FLUX Secs. 2.2, 5)")
scheme_kind("chunked_dma", family=FAMILY, module=f"{__package__}.chunked_dma", options=ChunkedDmaOptions)
