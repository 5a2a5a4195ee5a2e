"""``emb_a2a``: the library baseline of embedding + All-to-All (fused-collective paper Sec. IV-A).

Bulk-synchronous, as the paper's baseline ("embedding operations implemented in the public DLRM code with
All-to-All", "blit kernel-based collectives for intra-node ... from RCCL"): the pooling kernel(s)
(:func:`~t3sim.compute.embedding_kernel.bulk_embedding`; ``workload.embedding_bag.library_kernels``: one kernel per
table back to back, as the DLRM code calls ``nn.EmbeddingBag`` per table, or one kernel for all tables), each bag's
pooled vector stored into the local sample-major output C; then, on the same stream, the library's CU-driven
all-to-all of C (:meth:`~t3sim.system.model.SystemModel.collective`, plan ``all_to_all``: chunk ``d`` of C -- the
samples GPU ``d`` keeps -- to GPU ``d``; its CTAs take CUs through the GPU's dispatcher).

Not modelled: the concatenation of the per-table outputs that the DLRM code does before its all-to-all (the pooling
kernels here write straight into one C), and the receiver's re-arrangement into ``{local batch, N T D}``.

Phases: ``gemm`` is the pooling, ``rs`` the all-to-all kernel (``ag`` 0). Statistics ``emb.*``. Functional data is
not supported (the collective kernel moves timing only; ``fused_emb_a2a`` has the functional path).

Shared with ``fused_emb_a2a``: :func:`emb_geometry`, :func:`emb_stats`.
"""

from __future__ import annotations

from t3sim.compute.embedding_kernel import EmbeddingGeometry, bulk_embedding
from t3sim.errors import InputError
from t3sim.results.stats import Stats
from t3sim.schemes.fused.bulk import run_bulk
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.runtime.program import ProgramRun
from t3sim.workload.embedding import is_embedding


def emb_geometry(model) -> EmbeddingGeometry:
    """The embedding layer of ``model``'s workload: tables and indices in fresh buffers, the pooled output at C."""
    if not is_embedding(model.kernel):
        raise InputError("workload", f"{model.kernel.name} (not an embedding layer) with scheme.kind="
                         f"{model.exp.scheme.kind}", "workload.embedding_bag")
    e = model.exp.workload.embedding_bag
    geom = EmbeddingGeometry.of(e, model.n, model.kernel.dtype, 0, 0, model.c_base, model.exp.simulation.seed)
    geom.tables_B = model.alloc(geom.tables_size_B())
    geom.indices_B = model.alloc(geom.indices_size_B())
    return geom


def emb_stats(geom: EmbeddingGeometry, prefix: str = "emb") -> Stats:
    s = Stats()
    s.add(f"{prefix}.bags", geom.B * geom.T, "count", "bags (pooled vectors) one GPU computes: global batch x tables")
    s.add(f"{prefix}.gather_B", geom.B * geom.T * geom.P * geom.row_B, "B", "bytes of table rows one GPU gathers")
    s.add(f"{prefix}.output_B", geom.B * geom.T * geom.row_B, "B", "bytes of one GPU's pooled output (all-to-all input)")
    s.add(f"{prefix}.a2a_link_B", (geom.N - 1) * geom.local_batch * geom.T * geom.row_B, "B",
          "bytes one GPU sends to its peers (its pooled vectors of their samples)")
    return s


def launch_bulk_embedding(model, geom: EmbeddingGeometry):
    """The library pooling on every simulated GPU (per table back to back, or one kernel); event of the last end."""
    e, env = model.exp.workload.embedding_bag, model.env
    groups = [(t,) for t in range(geom.T)] if e.library_kernels == "per_table" else [tuple(range(geom.T))]

    def stream(g):
        for i, tables in enumerate(groups):
            k = bulk_embedding(model.engine, f"gpu{g}.emb{i}", model.hiers[g], model.system.gpu, e, geom, g, tables,
                               model.dispatchers[g])
            k.wg_spans = [] if model.trace else None
            model.gemm_kernels.append(k)
            yield k.start()

    return env.all_of([env.process(stream(g)) for g in model.sim_gpus])


def run_emb_a2a(model) -> ProgramRun:
    geom = emb_geometry(model)
    model.add_stats(lambda: emb_stats(geom))
    return run_bulk(model, "embedding", lambda: launch_bulk_embedding(model, geom), "all_to_all", "alltoall",
                    "fused_emb_a2a")


register_simulation("emb_a2a", run_emb_a2a)
register_scheme(Scheme("emb_a2a", "embedding-bag pooling kernel(s), then the library's CU-driven all-to-all of the "
                       "pooled vectors (bulk-synchronous baseline of the fused embedding+All-to-All)",
                       label="Embedding+All-to-All (RCCL)", color="#7f7f7f",
                       paper_section="fused-collective paper Sec. IV-A", simulation="emb_a2a",
                       workloads=("embedding_bag",),
                       table_sampling=""))  # per-table kernels, then one all-to-all: sampled within 0.3 % at 256 tables
