"""The fused GPU-initiated kernels' facts for the explanations' claims (pure; reads figure tables only).

Same contract as :mod:`t3sim.reproduction.t3.facts`: from the tables of
:func:`t3sim.reproduction.fused.tables.tables` (``fused-gemv``, ``fused-emb-a2a``, ``fused-emb-a2a-2node``,
``fused-gemm-a2a``, ``fused-skew``, ``fused-occupancy``, ``fused-scale``), computed from the runs by ``t3sim reproduce`` or read back from a snapshot's figure CSVs. Each
fact is the measured quantity of a mechanism named in experiments/fused-gemv, fused-a2a and fused-scale READMEs;
NaN where the tables lack it. The stated numbers' own values are facts too
(:func:`t3sim.reproduction.report.number_facts`).
"""

from __future__ import annotations

from typing import Dict, List, Mapping

from t3sim.analysis.tables import NAN, Rows, Tables, fin, lo_hi
from t3sim.reproduction.fused.tables import MAIN_GROUP


#: what the GEMV claim says of GEMVs whose fused GEMV part is slower than the baseline's (a fact, so that the claim
#: reads the same where there are none)
GEMV_SLOW_CLAUSE = (
    "; where the fused GEMV part is slower ({gemv_slow_points}: {gemv_slow_pct_lo:+.1f} to {gemv_slow_pct_hi:+.1f} %, "
    "reduction {gemv_slow_red_lo:.1f} to {gemv_slow_red_hi:.1f} %) the persistent grid, the largest divisor of the "
    "tiles within the occupancy ({gemv_slow_grid_lo:.0f} WGs), loops over several tiles per WG and streams the matrix "
    "with fewer WGs in flight than the baseline's one WG per tile")


def _main(tables: Tables, key: str) -> List[Mapping[str, object]]:
    return [r for r in tables.get(key, []) if r.get("group") == MAIN_GROUP[key]]


def _end(rows: Rows, which: str) -> Mapping[str, object]:
    """The row at the smallest or largest size (the first of its size); {} if none."""
    if not rows:
        return {}
    s = (min if which == "small" else max)(r["size"] for r in rows)
    return next(r for r in rows if r["size"] == s)


def _ratio(a, b) -> float:
    return float(a) / float(b) if fin(a) and fin(b) and float(b) > 0 else NAN


def _gemv(rows: Rows) -> Dict[str, object]:
    """Split at the fused kernel's GEMV part: as fast as the baseline's GEMV (within 2 %: the gain is the collective
    alone) or slower (``slow``: the persistent grid's loss)."""
    out: Dict[str, object] = {}
    slow = [r for r in rows if _ratio(r["fused_compute_us"], r["base_compute_us"]) > 1.02]
    fast = [r for r in rows if r not in slow]
    out["gemv_saving_lo"], out["gemv_saving_hi"] = lo_hi(r["saving_us"] for r in fast)
    out["gemv_fast_n"], out["gemv_slow_n"] = len(fast), len(slow)
    out["gemv_slow_points"] = ", ".join(str(r["point"]) for r in slow) or "none"
    out["gemv_slow_pct_lo"], out["gemv_slow_pct_hi"] = lo_hi(100 * (_ratio(r["fused_compute_us"], r["base_compute_us"])
                                                                    - 1) for r in slow)
    out["gemv_slow_red_lo"], out["gemv_slow_red_hi"] = lo_hi(r["reduction_pct"] for r in slow)
    out["gemv_slow_grid_lo"], out["gemv_slow_grid_hi"] = lo_hi(r["fused_grid_wgs"] for r in slow)
    # a slower fused GEMV part with one tile per persistent WG would be another cause
    out["gemv_slow_one_tile_n"] = sum(1 for r in slow if not (fin(r.get("fused_tiles_per_wg"))
                                                            and float(r["fused_tiles_per_wg"]) > 1))
    # the GEMV claim's clause on the slower points, filled from these facts (empty where there are none)
    out["gemv_slow_clause"] = "" if not slow else GEMV_SLOW_CLAUSE.format_map(out)
    out["gemv_base_ar_lo"], out["gemv_base_ar_hi"] = lo_hi(r["base_comm_us"] for r in rows)
    out["gemv_tail_lo"], out["gemv_tail_hi"] = lo_hi(r["fused_tail_us"] for r in rows)
    out["gemv_share_lo"], out["gemv_share_hi"] = lo_hi(100 - r["base_comm_share_pct"] for r in fast
                                                       if fin(r["base_comm_share_pct"]))
    out["gemv_coll_launch_us"] = lo_hi(r["coll_launch_us"] for r in rows)[1]
    return out


def _emb(rows: Rows, p: str) -> Dict[str, object]:
    """Embedding + All-to-All (``p`` = ``emb`` intra-node, ``inter`` two nodes)."""
    out: Dict[str, object] = {}
    if not rows:
        return out
    sm, lg = _end(rows, "small"), _end(rows, "large")
    out[f"{p}_tables"] = sm["tables"]
    out[f"{p}_kernel_launch_us"] = sm["kernel_launch_us"]
    out[f"{p}_size_small"], out[f"{p}_size_large"] = sm["size"], lg["size"]
    out[f"{p}_red_small"], out[f"{p}_red_large"] = sm["reduction_pct"], lg["reduction_pct"]
    out[f"{p}_base_pool_small"], out[f"{p}_fused_pool_small"] = sm["base_compute_us"], sm["fused_compute_us"]
    out[f"{p}_base_pool_large"], out[f"{p}_fused_pool_large"] = lg["base_compute_us"], lg["fused_compute_us"]
    out[f"{p}_pool_ratio_small"] = _ratio(sm["base_compute_us"], sm["fused_compute_us"])
    out[f"{p}_pool_ratio_large"] = _ratio(lg["base_compute_us"], lg["fused_compute_us"])
    out[f"{p}_bound_small"], out[f"{p}_bound_large"] = sm["overlap_bound_pct"], lg["overlap_bound_pct"]
    out[f"{p}_tail_max_us"] = lo_hi(r["fused_tail_us"] for r in rows)[1]
    out[f"{p}_tail_share_max_pct"] = lo_hi(100 * _ratio(r["fused_tail_us"], r["fused_total_us"]) for r in rows)[1]
    out[f"{p}_comm_share_lo"], out[f"{p}_comm_share_hi"] = lo_hi(r["base_comm_share_pct"] for r in rows)
    nic = [_ratio(r["fused_total_us"], r["nic_bound_us"]) for r in rows]
    out[f"{p}_fused_over_nic_lo"], out[f"{p}_fused_over_nic_hi"] = lo_hi(nic)
    out[f"{p}_fused_over_nic_small"] = _ratio(sm["fused_total_us"], sm["nic_bound_us"])
    out[f"{p}_nic_bound_small"], out[f"{p}_fused_total_small"] = sm["nic_bound_us"], sm["fused_total_us"]
    out[f"{p}_base_total_small"] = sm["base_total_us"]
    out[f"{p}_nic_cap_small"] = (100 * (1 - _ratio(sm["nic_bound_us"], sm["base_total_us"]))
                                 if fin(sm["nic_bound_us"]) else NAN)
    return out


def _gemm(rows: Rows) -> Dict[str, object]:
    out: Dict[str, object] = {}
    out["gemm_comm_share_lo"], out["gemm_comm_share_hi"] = lo_hi(r["base_comm_share_pct"] for r in rows)
    # a whole MoE layer has a dispatch all-to-all too; with top-2 routing and N = K it moves the combine's bytes, so
    # a dispatch as long as the combine (share c of the baseline) makes the communication 2c / (1 + c) of the layer
    c = out["gemm_comm_share_hi"] / 100
    out["gemm_share_with_dispatch_hi"] = 100 * 2 * c / (1 + c) if fin(c) else NAN
    out["gemm_slowdown_lo"], out["gemm_slowdown_hi"] = lo_hi(100 * (_ratio(r["fused_compute_us"], r["base_compute_us"])
                                                                    - 1) for r in rows)
    out["gemm_tail_max_us"] = lo_hi(r["fused_tail_us"] for r in rows)[1]
    out["gemm_tail_share_max_pct"] = lo_hi(100 * _ratio(r["fused_tail_us"], r["fused_total_us"]) for r in rows)[1]
    return out


def _occupancy(rows: Rows) -> Dict[str, object]:
    """The fused embedding kernel's WGs per CU against the pooling kernel's, and the registers that set them."""
    if not rows:
        return {}
    return {"occ_fused_wgs_lo": lo_hi(r["fused_wgs_per_cu"] for r in rows)[0],
            "occ_base_wgs_hi": lo_hi(r["base_wgs_per_cu"] for r in rows)[1],
            "occ_registers": lo_hi(r["registers_per_thread"] for r in rows)[1],
            "occ_library_registers": lo_hi(r["library_registers_per_thread"] for r in rows)[1]}


def _occupancy_sweep(rows: Rows) -> Dict[str, object]:
    """The Fig. 13 sweep: the lowest occupancy run, the spread of the kernel's time over occupancies, and its time
    against its NIC bytes' time."""
    if not rows:
        return {}
    t = [float(r["total_us"]) for r in rows if fin(r["total_us"])]
    out: Dict[str, object] = {"occ_sweep_lo_pct": lo_hi(r["occupancy_pct"] for r in rows)[0]}
    out["occ_sweep_spread_pct"] = 100 * (max(t) / min(t) - 1) if t and min(t) > 0 else NAN
    out["occ_sweep_over_nic_lo"], out["occ_sweep_over_nic_hi"] = lo_hi(_ratio(r["total_us"], r.get("nic_bound_us"))
                                                                       for r in rows)
    return out


def _skew(rows: Rows) -> Dict[str, object]:
    """Per node, the fused kernel's time without communication-aware order over with it (the same point)."""
    out: Dict[str, object] = {}
    aware = {(r["size"], r["tables"]): r for r in rows if r["comm_aware"]}
    slow0, slow1 = [], []
    for r in rows:
        a = aware.get((r["size"], r["tables"]))
        if not r["comm_aware"] and a is not None:
            slow0.append(100 * (_ratio(r["gpu0_us"], a["gpu0_us"]) - 1))
            slow1.append(100 * (_ratio(r["gpu1_us"], a["gpu1_us"]) - 1))
    out["skew_node0_slowdown_lo"], out["skew_node0_slowdown_hi"] = lo_hi(slow0)
    out["skew_node1_slowdown_lo"], out["skew_node1_slowdown_hi"] = lo_hi(slow1)
    out["skew_points"] = len(slow0)
    # oblivious points where node 0 (whose order changes) ends first, i.e. node 1 is the slower one (the paper's case)
    out["skew_node0_first_n"] = sum(1 for r in rows if not r["comm_aware"] and fin(r["gpu0_us"]) and fin(r["gpu1_us"])
                                    and r["gpu1_us"] > r["gpu0_us"])
    out["skew_oblivious_lo"], out["skew_oblivious_hi"] = lo_hi(r["skew_pct"] for r in rows if not r["comm_aware"])
    out["skew_aware_lo"], out["skew_aware_hi"] = lo_hi(r["skew_pct"] for r in rows if r["comm_aware"])
    return out


def _scale(rows: Rows) -> Dict[str, object]:
    """The 128-node study: the fused forward pooling against the library's, and the overlap-only reduction."""
    if not rows:
        return {}
    out: Dict[str, object] = {}
    out["scale_fwd_ratio_lo"], out["scale_fwd_ratio_hi"] = lo_hi(_ratio(r["emb_fwd_fused_us"], r["emb_fwd_base_us"])
                                                                 for r in rows)
    ov = [100 * float(r["reduction_overlap_only"]) for r in rows if fin(r.get("reduction_overlap_only"))]
    out["scale_overlap_only_mean"] = sum(ov) / len(ov) if ov else NAN
    out["scale_overlap_only_lo"], out["scale_overlap_only_hi"] = lo_hi(ov)
    out["scale_a2a_over_pool_lo"], out["scale_a2a_over_pool_hi"] = lo_hi(_ratio(r["a2a_us"], r["emb_fwd_base_us"])
                                                                         for r in rows)
    return out


def fused_facts(tables: Tables) -> Dict[str, object]:
    """The fused studies' facts from their tables (module doc)."""
    out: Dict[str, object] = {}
    out.update(_gemv(_main(tables, "fused-gemv")))
    out.update(_emb(_main(tables, "fused-emb-a2a"), "emb"))
    out.update(_emb(_main(tables, "fused-emb-a2a-2node"), "inter"))
    out.update(_gemm(_main(tables, "fused-gemm-a2a")))
    out.update(_occupancy(_main(tables, "fused-emb-a2a") + _main(tables, "fused-emb-a2a-2node")))
    out.update(_occupancy_sweep(tables.get("fused-occupancy", [])))
    out.update(_skew(tables.get("fused-skew", [])))
    out.update(_scale(tables.get("fused-scale", [])))
    return out
