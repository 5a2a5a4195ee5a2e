"""The kernel record of an embedding-bag workload (``workload.embedding_bag``).

Each of the ``tp`` GPUs pools, for all ``B`` samples of the global batch, its ``T`` tables' bags into a ``B x T x D``
output (``D`` the embedding dimension), which is then all-to-all'ed. The record is a
:class:`~t3sim.workload.record.KernelRecord` with ``M = B``, ``N = T x D``, ``K = pooling`` so the system model's C
(``M x N``, :mod:`t3sim.system.model`) is exactly the pooled output, the all-to-all's input: sample-major
``[b][t][d]``, so the samples one GPU keeps are one contiguous chunk (the all-to-all plan's layout). The model's A and
B regions are not used by the pooling kernel (the tables and indices get their own buffers). One WG pools one bag:
``num_wgs = B x T`` logical WGs; ``sublayer`` is ``"EMB"``. Only the embedding kernel
(:mod:`t3sim.compute.embedding_kernel`) runs it.
"""

from __future__ import annotations

from t3sim.config.embedding import EmbeddingBagConfig
from t3sim.workload.record import KernelRecord, ceil_div

#: ``KernelRecord.sublayer`` of every embedding-bag record
EMB = "EMB"


def embedding_record(e: EmbeddingBagConfig, tp: int, dtype: str, threads_per_wf: int = 64) -> KernelRecord:
    """One GPU's embedding-bag pooling kernel (module doc)."""
    wfs = ceil_div(e.threads_per_wg, threads_per_wf)
    return KernelRecord(
        name=f"{e.name}.tp{tp}.emb", model=e.name, sublayer=EMB, pass_="fwd", tp=tp,
        M=e.global_batch, N=e.tables_per_gpu * e.embedding_dim, K=e.pooling, dtype=dtype, trans_a=False, trans_b=False,
        c_layout="row_major", tile_m=1, tile_n=e.embedding_dim, tile_k=1, tiles_m=e.global_batch,
        tiles_n=e.tables_per_gpu, num_wgs=e.global_batch * e.tables_per_gpu, wfs_per_wg=wfs, wf_grid=(1, wfs),
        threads_per_wf=threads_per_wf, registers_per_thread=e.registers_per_thread, lds_per_wg_B=0,
        wg_order={"kind": "row_major"}, role="producer", collective="all-to-all")


def is_embedding(kernel) -> bool:
    """Whether ``kernel`` (a KernelRecord) is an embedding-bag record of :func:`embedding_record`."""
    return getattr(kernel, "sublayer", "") == EMB
