"""Workload: GEMM traces (format, generation, tiling, WG orders).

Public API::

    from t3sim.workload import load_trace, write_trace, generate, tile_rect, wf_rect, wg_order
    trace = load_trace("traces/t-nlg/tp8/FC-2.jsonl")
    k = trace.kernels[0]
    order = wg_order(k, gpu=3, num_gpus=8, stage_wgs=160)   # staggered (paper Sec. 4.4)
    row0, col0, rows, cols = tile_rect(k, 0, order)

See ``traces/FORMAT.md`` for the file format.
"""

from t3sim.workload.gemm import (Occupancy, element_offset, flops, num_stages, occupancy, output_bytes, tile_bytes,
                                 tile_grid, tile_rect, tile_rect_of, wf_rect, wf_rect_in_tile, wf_tile_size)
from t3sim.workload.generate import SUBLAYERS, TileParams, generate, kernel_for, trace_path, workload_kernel, write_traces
from t3sim.workload.record import KernelRecord
from t3sim.workload.trace import FORMAT_NAME, FORMAT_VERSION, Trace, dumps_trace, load_trace, parse_trace, write_trace
from t3sim.workload.wg_order import base_order, base_tile, column_major, row_major, staggered_order, wg_order

__all__ = [
    "Occupancy", "element_offset", "flops", "num_stages", "occupancy", "output_bytes", "tile_bytes", "tile_grid",
    "tile_rect", "tile_rect_of", "wf_rect", "wf_rect_in_tile", "wf_tile_size", "SUBLAYERS", "TileParams", "generate",
    "kernel_for", "trace_path", "workload_kernel", "write_traces", "FORMAT_NAME", "FORMAT_VERSION", "KernelRecord", "Trace", "dumps_trace",
    "load_trace", "parse_trace", "write_trace", "base_order", "base_tile", "column_major", "row_major", "staggered_order", "wg_order",
]
