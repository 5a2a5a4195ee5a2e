"""Fused GPU-initiated kernels (the fused-collective paper): ``fused_gemv_ar``, ``fused_emb_a2a``,
``fused_gemm_a2a`` on the library model of :mod:`.gpu_initiated`, and their bulk-synchronous baselines
``gemv_ar``, ``emb_a2a``, ``gemm_a2a``; options in :mod:`.options`."""
