"""Software baselines: ``sequential`` and the ideal compositions ``ideal_gemm_rs_overlap``, ``ideal_rs_nmc``
(:mod:`.sequential`, paper Sec. 5.3), ``concurrent``, ``chunked``, ``copy``; options in :mod:`.options`."""
