"""WG -> output-tile orders, and per-GPU staggering (paper Sec. 4.4).

An *order* is a list ``order`` with ``order[w]`` = row-major tile number
(``tm * tiles_n + tn``, see :mod:`t3sim.workload.gemm`) computed by the WG
dispatched at position ``w``. Every order is a permutation of
``range(num_wgs)``.

A trace stores only the *base* order (``wg_order`` field): a named kind with
parameters, or an explicit list. Named kinds:

* ``row_major``: WGs walk the tile grid row by row (``tn`` fastest). This is
  how GPUs dispatch a 2-D grid (``blockIdx.x`` fastest, ``x`` over N tiles)
  and what paper Fig. 9(a) calls "row-major scheduling".
* ``column_major``: ``tm`` fastest.
* ``explicit``: ``{"kind": "explicit", "tiles": [...]}``, any permutation.

The simulator applies per-GPU *staggering* on top (paper Sec. 4.4, Fig. 7:
"in step-1, GPU-0 executes stage-1, while GPU-1 executes stage-2, and so
forth"): GPU ``g`` starts ``g`` stages later in the base order and wraps
around, so it produces first the chunk the ring needs from it next.
:func:`staggered_order` is a pure function of (base order, gpu index, number
of GPUs, stage size in WGs).
"""

from __future__ import annotations

from typing import Callable, Dict, List, Mapping, Optional, Sequence

from t3sim.workload.record import KernelRecord, ceil_div


def row_major(tiles_m: int, tiles_n: int) -> List[int]:
    """WG ``w`` computes tile ``w`` (``tn`` fastest)."""
    return list(range(tiles_m * tiles_n))


def column_major(tiles_m: int, tiles_n: int) -> List[int]:
    """WG ``w`` computes tile ``(w % tiles_m, w // tiles_m)`` (``tm`` fastest)."""
    return [(w % tiles_m) * tiles_n + w // tiles_m for w in range(tiles_m * tiles_n)]


#: Named order kinds -> generator(tiles_m, tiles_n). Parameterless for now;
#: a kind with parameters reads them from the ``wg_order`` mapping.
NAMED_ORDERS: Dict[str, Callable[[int, int], List[int]]] = {
    "row_major": row_major,
    "column_major": column_major,
}
#: Every kind a trace's ``wg_order.kind`` may name.
ORDER_KINDS = tuple(NAMED_ORDERS) + ("explicit",)


def base_order(spec: Mapping[str, object], tiles_m: int, tiles_n: int) -> List[int]:
    """Materialise an order spec (``{"kind": ...}``) for a ``tiles_m x tiles_n`` grid.

    The spec is assumed valid (:mod:`t3sim.workload.trace` validates it).
    """
    kind = spec["kind"]
    if kind == "explicit":
        return list(spec["tiles"])  # type: ignore[arg-type]
    return NAMED_ORDERS[kind](tiles_m, tiles_n)  # type: ignore[index]


def base_tile(kernel: "KernelRecord", wg_index: int) -> int:
    """Tile computed by the WG at ``wg_index`` in the kernel's base order, in O(1)."""
    if not 0 <= wg_index < kernel.num_wgs:
        raise IndexError(f"WG index {wg_index} out of range 0..{kernel.num_wgs - 1}")
    kind = kernel.wg_order["kind"]
    if kind == "row_major":
        return wg_index
    if kind == "column_major":
        return (wg_index % kernel.tiles_m) * kernel.tiles_n + wg_index // kernel.tiles_m
    if kind == "explicit":
        return kernel.wg_order["tiles"][wg_index]
    return base_order(kernel.wg_order, kernel.tiles_m, kernel.tiles_n)[wg_index]


def staggered_order(base: Sequence[int], gpu: int, num_gpus: int, stage_wgs: int) -> List[int]:
    """Base order rotated to start ``gpu`` stages later (paper Sec. 4.4).

    Args:
        base: the unstaggered order (a permutation).
        gpu: this GPU's index in the ring, ``0 <= gpu < num_gpus``.
        num_gpus: GPUs in the ring (collective group size).
        stage_wgs: WGs per stage (resident WGs per CU x CUs).

    The rotation is by whole stages: GPU ``g`` starts at stage
    ``g mod num_stages`` (so the last, possibly partial, stage keeps its
    place in the cyclic sequence). GPU 0 keeps the base order.
    """
    if num_gpus < 1 or not 0 <= gpu < num_gpus:
        raise ValueError(f"gpu index {gpu} out of range for {num_gpus} GPUs")
    if stage_wgs < 1:
        raise ValueError(f"stage size must be >= 1 WG, got {stage_wgs}")
    n = len(base)
    if n == 0:
        return []
    stages = ceil_div(n, stage_wgs)
    shift = (gpu % stages) * stage_wgs
    return list(base[shift:]) + list(base[:shift])


def wg_order(kernel: "KernelRecord", gpu: int = 0, num_gpus: int = 1, stage_wgs: Optional[int] = None) -> List[int]:
    """The WG -> tile order GPU ``gpu`` runs for ``kernel``.

    Without ``stage_wgs`` (or with one GPU) this is the trace's base order;
    with it, the base order staggered by one stage per GPU
    (:func:`staggered_order`).
    """
    order = base_order(kernel.wg_order, kernel.tiles_m, kernel.tiles_n)
    if stage_wgs is None or num_gpus == 1:
        if not 0 <= gpu < max(num_gpus, 1):
            raise ValueError(f"gpu index {gpu} out of range for {num_gpus} GPUs")
        return order
    return staggered_order(order, gpu, num_gpus, stage_wgs)


def stage_of_wg(wg_index: int, stage_wgs: int) -> int:
    """Stage (0-based) a WG dispatch index falls in."""
    return wg_index // stage_wgs
