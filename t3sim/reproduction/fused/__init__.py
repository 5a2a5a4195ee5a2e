"""The fused GPU-initiated kernels reproduced: GEMV+AllReduce, GEMM+All-to-All, Embedding+All-to-All (Secs. III-C,
IV-B-IV-D, Figs. 8-15), and the 128-node DLRM scale-out model (Sec. IV-D)."""
