"""Helpers that several scheme families use: functional data values (:mod:`.functional_data`), the
AllGather+GEMM layout of A (:mod:`.ag_gemm`), copy-engine pushes of A's pieces (:mod:`.ag_push`), GEMM chunks and
their streams (:mod:`.chunking`), and GEMM output helpers (:mod:`.outputs`)."""
