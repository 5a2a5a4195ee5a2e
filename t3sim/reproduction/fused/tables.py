"""The fused GPU-initiated kernels' studies (fused computation-collective paper): per operator and point, the
bulk-synchronous baseline's and the fused kernel's times and the reduction, the communication-aware scheduling's
skew, the occupancy sweep and the 128-node study's rows (pure: reads results only; drawn by
:mod:`t3sim.reproduction.fused.figures`).

Tables (by stem; :func:`tables` computes them from runs, a snapshot gives them back from ``figures/<stem>.csv``):

======================  ====================================================================================
fused-gemv              GEMV + AllReduce, ``fused-gemv`` (``gemv_ar`` vs ``fused_gemv_ar``)
fused-emb-a2a           embedding + All-to-All on one node, ``fused-a2a`` (``emb_a2a`` vs ``fused_emb_a2a``)
fused-emb-a2a-2node     the same between two nodes, ``fused-a2a-2node``
fused-gemm-a2a          MoE GEMM + All-to-All combine, ``fused-gemm-a2a`` (``gemm_a2a`` vs ``fused_gemm_a2a``)
fused-skew              per-GPU fused kernel times with and without communication-aware order, ``fused-skew``
fused-occupancy         fused kernel time against its occupancy, ``fused-occupancy``
fused-scale             the 128-node DLRM study's rows (``experiments/fused-scale/results.csv``)
======================  ====================================================================================

Reduction = ``1 - fused total / baseline total`` in percent (the paper's "lower execution time"). ``overlap_bound``
= the reduction a perfect overlap of the baseline's two kernels would give, ``min(compute, comm) / total``;
``nic_bound_us`` = one NIC's share of the fused kernel's put bytes over the NIC rate (the least time its puts need).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from t3sim.analysis.runs import Run
from t3sim.config.collective_latency import CollectiveLatencyConfig
from t3sim.schemes.fused.options import FusedEmbOptions

NAN = math.nan


@dataclass(frozen=True)
class Op:
    """One fused operator's study: its results experiment, the two schemes, what names a point and its x value."""

    experiment: str
    base: str
    fused: str
    label_keys: tuple
    size_key: str
    title: str
    stated: str  # the paper's numbers, as the figure's title states them (fused.numbers.OPERATOR_KEYS: the rows)
    collective: str = "all_to_all"  # the baseline's collective (its start-up: coll_launch_us)


OPERATORS: Dict[str, Op] = {
    "fused-gemv": Op("fused-gemv", "gemv_ar", "fused_gemv_ar", ("workload.gemv.name",), "workload.gemv.M",
                     "GEMV + AllReduce (4 MI210, fully connected)", "paper: 13 % mean, up to 22 %", "all_reduce"),
    "fused-emb-a2a": Op("fused-a2a", "emb_a2a", "fused_emb_a2a",
                        ("workload.embedding_bag.global_batch", "workload.embedding_bag.tables_per_gpu"),
                        "workload.embedding_bag.global_batch", "Embedding + All-to-All, intra-node (4 MI210)",
                        "paper: 20 % mean, up to 32 %"),
    "fused-emb-a2a-2node": Op("fused-a2a-2node", "emb_a2a", "fused_emb_a2a",
                              ("workload.embedding_bag.global_batch", "workload.embedding_bag.tables_per_gpu"),
                              "workload.embedding_bag.global_batch", "Embedding + All-to-All, 2 nodes (20 GB/s NIC)",
                              "paper: 31 % mean, up to 58 %"),
    "fused-gemm-a2a": Op("fused-gemm-a2a", "gemm_a2a", "fused_gemm_a2a", ("workload.gemm.name",), "workload.gemm.M",
                         "MoE GEMM + All-to-All combine (4 MI210)", "paper: 12 % mean, up to 20 %"),
}
#: the group each operator's stated averages are taken over (the others are sensitivity runs)
MAIN_GROUP = {"fused-gemv": "model", "fused-emb-a2a": "per_table", "fused-emb-a2a-2node": "per_table",
              "fused-gemm-a2a": "main"}
SKEW_EXPERIMENT, OCCUPANCY_EXPERIMENT = "fused-skew", "fused-occupancy"
EXPERIMENTS = tuple(dict.fromkeys(o.experiment for o in OPERATORS.values())) + (SKEW_EXPERIMENT, OCCUPANCY_EXPERIMENT)
COLUMNS = ("operator", "point", "group", "size", "tables", "base_compute_us", "base_comm_us", "base_total_us",
           "fused_compute_us", "fused_tail_us", "fused_total_us", "saving_us", "reduction_pct", "overlap_bound_pct",
           "base_comm_share_pct", "occupancy_reduction", "base_wgs_per_cu", "fused_wgs_per_cu", "registers_per_thread",
           "library_registers_per_thread", "library_kernels", "coll_launch_us", "kernel_launch_us", "nic_bound_us",
           "fused_grid_wgs", "fused_tiles_per_wg")


#: the fused schemes' options at their defaults (a baseline's config holds none of them)
_FUSED_DEFAULTS = {n: f.default for n, f in FusedEmbOptions.model_fields.items() if n != "kind"}


def _point_key(r: Run) -> str:
    """The point's identity: its resolved config without the scheme kind and the fused options at their defaults
    (a baseline and its fused scheme share every other field)."""
    cfg = json.loads(json.dumps(r.config))
    scheme = cfg.get("scheme", {})
    scheme.pop("kind", None)
    for n, v in _FUSED_DEFAULTS.items():
        if scheme.get(n, v) == v:
            scheme.pop(n, None)
    return json.dumps(cfg, sort_keys=True)


def _num(v, default=NAN) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return default
    return x


def _startup_us(b: Run, collective: str) -> float:
    """The baseline collective's start-up (us): software plus the library's base latency (collective.latency)."""
    lat = b.cfg("system.collective.latency")
    if not isinstance(lat, Mapping):
        return NAN
    return CollectiveLatencyConfig(**lat).startup_ns(collective) / 1e3


def _group(key: str, b: Run) -> str:
    if key == "fused-gemv":
        return "msweep" if str(b.cfg("workload.gemv.name", "")).startswith("msweep") else "model"
    if key.startswith("fused-emb"):
        return str(b.cfg("workload.embedding_bag.library_kernels", "per_table"))
    return "main"


def op_rows(runs: Sequence[Run], key: str) -> List[Dict[str, object]]:
    """One row per point of operator ``key`` that has both schemes' results, ordered by size."""
    op = OPERATORS[key]
    by: Dict[str, Dict[str, Run]] = {}
    for r in runs:
        if r.experiment == op.experiment and r.scheme in (op.base, op.fused):
            by.setdefault(_point_key(r), {})[r.scheme] = r
    out = []
    for pair in by.values():
        b, f = pair.get(op.base), pair.get(op.fused)
        if b is None or f is None:
            continue
        bc, ba, bt = (_num(b.summary.get(k)) for k in ("gemm_us", "rs_us", "total_us"))
        fc, fa, ft = (_num(f.summary.get(k)) for k in ("gemm_us", "rs_us", "total_us"))
        emb = key.startswith("fused-emb")
        out.append({
            "operator": key, "point": (f"b{b.cfg(op.label_keys[0])} t{b.cfg(op.label_keys[1])}" if emb
                                       else " ".join(str(b.cfg(k)) for k in op.label_keys)), "group": _group(key, b),
            "size": int(_num(b.cfg(op.size_key), 0)),
            "tables": int(_num(b.cfg("workload.embedding_bag.tables_per_gpu"), 0)) if emb else 0,
            "base_compute_us": bc, "base_comm_us": ba, "base_total_us": bt, "fused_compute_us": fc,
            "fused_tail_us": fa, "fused_total_us": ft, "saving_us": bt - ft,
            "reduction_pct": 100 * (1 - ft / bt) if bt > 0 else NAN,
            "overlap_bound_pct": 100 * min(bc, ba) / bt if bt > 0 else NAN,
            "base_comm_share_pct": 100 * ba / bt if bt > 0 else NAN,
            "occupancy_reduction": _num(f.stat("fused.occupancy_reduction")),
            "base_wgs_per_cu": _num(f.stat("fused.base_wgs_per_cu")), "fused_wgs_per_cu": _num(f.stat("fused.wgs_per_cu")),
            "registers_per_thread": _num(b.cfg("workload.embedding_bag.registers_per_thread")) if emb else NAN,
            "library_registers_per_thread": _num(f.cfg("scheme.fused_library_registers_per_thread")),
            "library_kernels": str(b.cfg("workload.embedding_bag.library_kernels", "")) if emb else "",
            "coll_launch_us": _startup_us(b, op.collective),
            "kernel_launch_us": _num(b.cfg("system.gpu.kernel_launch_overhead_ns")) / 1e3,
            "nic_bound_us": _nic_bound_us(f),
            "fused_grid_wgs": _num(f.stat("fused.grid_wgs")),
            "fused_tiles_per_wg": _num(f.stat("fused.logical_wgs_per_wg")),
        })
    return sorted(out, key=lambda r: (r["group"], r["size"], r["tables"], r["point"]))


SKEW_COLUMNS = ("size", "tables", "comm_aware", "gpu0_us", "gpu1_us", "skew_pct", "total_us")


def skew_rows(runs: Sequence[Run]) -> List[Dict[str, object]]:
    """Per ``fused-skew`` run (the fused kernel on two nodes, explicit mode): each node's fused kernel time and the
    skew ``slowest / fastest - 1`` (statistic ``fused.kernel_skew``), with and without communication-aware order."""
    out = []
    for r in runs:
        if r.experiment != SKEW_EXPERIMENT or r.scheme != "fused_emb_a2a":
            continue
        skew = _num(r.stat("fused.kernel_skew"))
        out.append({"size": int(_num(r.cfg("workload.embedding_bag.global_batch"), 0)),
                    "tables": int(_num(r.cfg("workload.embedding_bag.tables_per_gpu"), 0)),
                    "comm_aware": bool(r.cfg("scheme.fused_comm_aware", True)),
                    "gpu0_us": _num(r.stat("fused.kernel_us.gpu0")), "gpu1_us": _num(r.stat("fused.kernel_us.gpu1")),
                    "skew_pct": 100 * skew, "total_us": _num(r.summary.get("total_us"))})
    return sorted(out, key=lambda r: (r["size"], r["tables"], r["comm_aware"]))


OCC_COLUMNS = ("size", "tables", "fused_wgs_per_cu", "base_wgs_per_cu", "occupancy_pct", "total_us", "nic_bound_us")


def _nic_bound_us(f: Run) -> float:
    """One NIC's share of a fused run's put bytes over the NIC rate (NaN without NIC puts): fused.nic_put_B sums
    every GPU's puts (shadows' included), and the nodes' NICs share them evenly."""
    nodes = _num(f.cfg("system.interconnect.num_gpus")) / _num(f.cfg("system.interconnect.gpus_per_node"), 1.0)
    nic_B, nic_bw = _num(f.stat("fused.nic_put_B")) / nodes, _num(f.cfg("system.interconnect.nic_bandwidth_GBps"))
    return nic_B / nic_bw / 1e3 if nic_B > 0 and nic_bw > 0 else NAN


def occupancy_rows(runs: Sequence[Run]) -> List[Dict[str, object]]:
    """Per ``fused-occupancy`` run: the fused kernel's occupancy relative to the original pooling kernel's (WGs per
    CU, the paper's Fig. 13 axis) and its time."""
    out = []
    for r in runs:
        if r.experiment != OCCUPANCY_EXPERIMENT or r.scheme != "fused_emb_a2a":
            continue
        fw, bw = _num(r.stat("fused.wgs_per_cu")), _num(r.stat("fused.base_wgs_per_cu"))
        out.append({"size": int(_num(r.cfg("workload.embedding_bag.global_batch"), 0)),
                    "tables": int(_num(r.cfg("workload.embedding_bag.tables_per_gpu"), 0)), "fused_wgs_per_cu": fw,
                    "base_wgs_per_cu": bw, "occupancy_pct": 100 * fw / bw if bw > 0 else NAN,
                    "total_us": _num(r.summary.get("total_us")), "nic_bound_us": _nic_bound_us(r)})
    return sorted(out, key=lambda r: (r["size"], r["tables"], r["occupancy_pct"]))


def read_scale_csv(path: Optional[str | Path]) -> List[Dict[str, object]]:
    """The 128-node study's rows (``experiments/fused-scale/study.py`` writes them); [] if there is no file."""
    if path is None or not Path(path).is_file():
        return []
    with Path(path).open(newline="") as fh:
        return [{k: _num(v, v) for k, v in r.items()} for r in csv.DictReader(fh)]


def tables(runs: Sequence[Run], scale: Sequence[Mapping[str, object]] = ()) -> Dict[str, List[Dict[str, object]]]:
    """Every fused table by stem (module doc)."""
    out: Dict[str, List[Dict[str, object]]] = {k: op_rows(runs, k) for k in OPERATORS}
    out["fused-skew"] = skew_rows(runs)
    out["fused-occupancy"] = occupancy_rows(runs)
    out["fused-scale"] = [dict(r) for r in scale]
    return out
