"""DMA decomposition, ``chunked_dma``: GEMM chunks with copy-engine reduce-scatters (:mod:`.chunked_dma`) or the
shard-based AllGather+GEMM (:mod:`.chunked_dma_ag`); options in :mod:`.options`."""
