"""FLUX's own costs at tile granularity (Chang et al. 2024, Secs. 3.2, 4.2, 4.3, 6): what fusing the
communication into the GEMM costs the kernel beyond the GEMM's work. Pure formulas plus their resolution from a
model (``scheme.flux_*`` options, :mod:`t3sim.schemes.flux.options`); times are integer ticks (1 tick = 1 ps).

* **Registers** (both directions, ``scheme.flux_extra_registers_per_thread``): the fused kernel's threads carry
  the extra registers, and the GEMM's occupancy rule (:func:`~t3sim.compute.gemm_kernel.gemm_occupancy`) decides
  its WGs per SM from them (:func:`fused_kernel`). More than ``system.gpu.max_registers_per_thread`` in all is
  rejected.
* **Epilogue store boxes** (``flux_rs``): the epilogue stores each part of a tile that goes to one owner as TMA
  boxes of ``min(tile_m, r)`` rows by ``scheme.flux_store_box_cols`` columns, ``r`` the rows the part has
  (:func:`part_boxes`): a part of few rows (small m, or a shard boundary along the rows) stores narrow boxes, each
  costing ``scheme.flux_store_box_issue_ns`` whatever its bytes (FLUX Sec. 6: "reducing TMA store size to 8 along
  m"). Parts come from the output layout (:func:`tile_parts`): a row-major C's shards split a tile's rows, a
  column-major C's its columns.
* **Fence and flag per tile** (``flux_rs``): after its stores, the epilogue waits for them to be performed (a
  fence: ``scheme.flux_tile_fence_ns``, by default one round trip to the farthest owner, :func:`fence_ticks`) and
  sets the tile's flag (``scheme.flux_tile_flag_ns``, by default one L2 round trip).
  The WG holds its CU slot, without math, for boxes + fence + flag (:class:`~t3sim.compute.sinks.Stored` ``hold``).
* **Signal polls** (``flux_ag``): the prologue spins on a signal with back-to-back loads of
  ``scheme.flux_signal_poll_ns`` round trip (plus ``scheme.flux_signal_poll_interval_ns`` between them); a poll
  reads the signal at its midpoint, so the WG passes when the first poll that read it set returns
  (:func:`poll_pass`); even a preset signal costs one poll. Several signals are waited for one after another
  (FLUX's ``wait_eq`` per communication tile).

Every cost at 0 gives back the cost-free model exactly (the schemes then take their old paths).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import List, Tuple

import numpy as np

from t3sim.errors import InputError
from t3sim.sim.clock import ns_to_ticks


# ---------------------------------------------------------------- formulas

def part_boxes(rows: int, cols: int, tile_m: int, box_cols: int) -> int:
    """TMA store boxes of one tile part of ``rows`` x ``cols`` elements: boxes of ``min(tile_m, rows)`` rows by
    ``box_cols`` columns (module doc); 0 for an empty part."""
    if rows <= 0 or cols <= 0:
        return 0
    box_rows = min(tile_m, rows)
    return -(-rows // box_rows) * -(-cols // box_cols)


def tile_parts(M: int, N: int, tile_m: int, tile_n: int, tm: int, tn: int, shard_elems: int,
               col_major: bool) -> List[Tuple[int, int, int]]:
    """The parts of output tile ``(tm, tn)`` of an ``M x N`` C whose shard ``o`` is elements
    ``[o * shard_elems, (o + 1) * shard_elems)`` of the array: ``[(owner, rows, cols)]``, owners ascending, ``rows``
    (``cols``) the distinct rows (columns) of the tile inside the matrix that the owner's shard holds."""
    r0, r1 = tm * tile_m, min(M, (tm + 1) * tile_m)
    c0, c1 = tn * tile_n, min(N, (tn + 1) * tile_n)
    if col_major:  # column c holds rows r0..r1-1 at offsets c*M + r
        outer, inner, lead = np.arange(c0, c1, dtype=np.int64), (r0, r1), M
    else:
        outer, inner, lead = np.arange(r0, r1, dtype=np.int64), (c0, c1), N
    lo = (outer * lead + inner[0]) // shard_elems  # owner of each outer line's first element
    hi = (outer * lead + inner[1] - 1) // shard_elems  # ... and of its last
    parts = []
    for o in range(int(lo.min()), int(hi.max()) + 1):
        on = (lo <= o) & (hi >= o)
        if not on.any():
            continue
        # inner extent the owner holds of each outer line it touches; the part's inner size is the largest
        a = np.maximum(outer[on] * lead + inner[0], o * shard_elems) - outer[on] * lead
        b = np.minimum(outer[on] * lead + inner[1], (o + 1) * shard_elems) - outer[on] * lead
        n_outer, n_inner = int(on.sum()), int((b - a).max())
        parts.append((o, n_inner, n_outer) if col_major else (o, n_outer, n_inner))
    return parts


def poll_pass(start: int, set_tick: int, poll: int, interval: int) -> Tuple[int, int]:
    """A WG starts spinning on a signal at ``start`` (ticks); the signal is set at ``set_tick``. Polls are issued
    at ``start + i * (poll + interval)``, each reads the signal at its midpoint (``+ poll // 2``) and returns
    ``poll`` after its issue. Returns ``(tick the WG passes, polls issued)``: the first poll that read the signal
    set returns. ``poll = interval = 0``: ``(max(start, set_tick), 1)``."""
    period = poll + interval
    if period == 0:
        return max(start, set_tick), 1
    i = max(0, -(-(set_tick - start - poll // 2) // period))
    return start + i * period + poll, i + 1


def fused_kernel(kernel, gpu, extra_registers: int):
    """The fused kernel's record: ``kernel`` with ``extra_registers`` more registers per thread (module doc);
    raises InputError past ``gpu.max_registers_per_thread``."""
    if extra_registers == 0:
        return kernel
    regs = kernel.registers_per_thread + extra_registers
    if regs > gpu.max_registers_per_thread:
        raise InputError("scheme.flux_extra_registers_per_thread",
                         f"{extra_registers} on a GEMM kernel of {kernel.registers_per_thread} registers per thread: "
                         f"{regs} > system.gpu.max_registers_per_thread = {gpu.max_registers_per_thread}",
                         f"at most {gpu.max_registers_per_thread - kernel.registers_per_thread}")
    return dataclasses.replace(kernel, registers_per_thread=regs)


def _ticks_or(value_ns, default_ticks: int) -> int:
    return default_ticks if value_ns is None else ns_to_ticks(value_ns)


# ---------------------------------------------------------------- resolved per run

@dataclass(frozen=True)
class EpilogueCosts:
    """``flux_rs``'s per-tile epilogue costs of one run, in ticks (module doc). ``fence`` None: the derived round
    trip (:meth:`fence_ticks`)."""

    box_cols: int
    box_issue: int
    fence: object  # int ticks, or None: derived
    flag: int
    l2: int

    @classmethod
    def of(cls, model) -> "EpilogueCosts":
        sc = model.exp.scheme
        l2 = model.hiers[model.sim_gpus[0]].l2_latency
        fence = None if sc.flux_tile_fence_ns is None else ns_to_ticks(sc.flux_tile_fence_ns)
        return cls(int(sc.flux_store_box_cols), ns_to_ticks(sc.flux_store_box_issue_ns), fence,
                   _ticks_or(sc.flux_tile_flag_ns, l2), l2)

    @property
    def free(self) -> bool:
        """Every cost 0: the epilogue's stores are posted and the WG retires at once (the cost-free model)."""
        return self.box_issue == 0 and self.fence == 0 and self.flag == 0

    def fence_ticks(self, model, g: int, owners) -> int:
        """The fence after GPU ``g``'s stores to ``owners``: the set value, or one L2 round trip if every owner is
        ``g``, else twice the path latency to the farthest peer owner (module doc)."""
        if self.fence is not None:
            return self.fence
        peers = [o for o in owners if o != g]
        if not peers:
            return self.l2
        return 2 * max(model.network.path_latency_ticks(g, o) for o in peers)


@dataclass(frozen=True)
class PollCosts:
    """``flux_ag``'s signal polls of one run, in ticks (module doc)."""

    poll: int
    interval: int

    @classmethod
    def of(cls, model) -> "PollCosts":
        sc = model.exp.scheme
        l2 = model.hiers[model.sim_gpus[0]].l2_latency
        return cls(_ticks_or(sc.flux_signal_poll_ns, l2), ns_to_ticks(sc.flux_signal_poll_interval_ns))

    @property
    def free(self) -> bool:
        """No poll cost: a WG sees a signal the tick it is set (the cost-free model)."""
        return self.poll == 0 and self.interval == 0
