"""The chunks of a decomposed GEMM and the streams they are issued on (``scheme.chunks``, ``scheme.chunk_axis``,
``scheme.compute_streams``), shared by the schemes that cut the GEMM: ``chunked``, ``chunked_dma``, FiCCO."""

from __future__ import annotations

from t3sim.errors import InputError
from t3sim.workload.chunks import chunks


def compute_stream(model, i: int, prefix: str = "") -> str:
    """The stream chunk ``i``'s GEMM is issued on: ``compute`` with one stream, else ``compute<i mod S>``
    (``scheme.compute_streams``, round robin as Transformer Engine does)."""
    s = model.exp.scheme.compute_streams
    return f"{prefix}compute" if s == 1 else f"{prefix}compute{i % s}"


def chunk_parts(model):
    """The chunks of the workload's GEMM (``scheme.chunks`` along ``scheme.chunk_axis``); InputError if too many."""
    sc = model.exp.scheme
    k = model.kernel
    if sc.chunk_axis == "K":
        raise InputError("scheme.chunk_axis", f"K with scheme.kind={sc.kind} (its chunks each reduce-scatter a part "
                         "of C; K chunks would each produce all of C)", "M or N")
    whole = k.M if sc.chunk_axis == "M" else k.N
    if sc.chunks > whole:
        raise InputError("scheme.chunks", f"{sc.chunks} chunks of a GEMM with {whole} "
                         f"{'rows' if sc.chunk_axis == 'M' else 'columns'} ({k.M} x {k.N})",
                         f"1..{whole}, or scheme.chunk_axis={'N' if sc.chunk_axis == 'M' else 'M'}")
    return chunks(k, sc.chunks, sc.chunk_axis, retile=model.retile)
