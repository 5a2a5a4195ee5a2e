"""Synthetic results for the analysis tests: real resolved point configs, made-up (deterministic) numbers.

Every experiment that ``t3sim reproduce`` runs is expanded from its real YAML (quick or full overrides), and
each point gets a plausible summary and a small ``stats.json`` (with the Fig. 17 bandwidth series), written
through the real results store. Nothing is simulated, so the figure and report code is tested in seconds.
"""

from __future__ import annotations

import csv
from pathlib import Path

from t3sim.config.sweep import expand
from t3sim.reproduction.catalog import SPECS
from t3sim.results.stats import Stats
from t3sim.results.store import ResultStore, RunResult

K = {"OP": 1, "FC-2": 4, "FC-1": 4, "IP": 3}


def fake_ficco(cfg) -> tuple:
    """(summary, ficco_char stats or None) of a FiCCO point (workload.gemm): made-up times from its shape."""
    from t3sim.schemes.runtime import scheme_for
    from t3sim.schemes.ficco.heuristic import SCHEDULES

    w, sc, kind = cfg.workload, cfg.scheme, cfg.scheme.kind
    g = w.gemm
    gemm = 2 * g.sim_M * g.N * g.sim_K / w.tp / 1e6  # us at 1 PFLOP/s
    comm = 2 * g.sim_M * g.sim_K * 7 / 8 / (336e3 if w.direction == "ag_gemm" else 8 * 336e3)
    t = {"sequential": gemm + comm, "chunked_dma": gemm + 3 * comm}.get(kind, 0.0)
    if kind == "ficco":
        t = max(gemm, comm) * (1.05 + 0.1 * SCHEDULES.index(sc.ficco_schedule)) * (0.98 if sc.ficco_comm == "rccl" else 1)
    stats = None
    if kind == "ficco_char":
        first = sc.char_pieces == "first"
        gu = gemm * (1 + 0.05 * sc.chunks) / (8 if first else 1) if sc.char_part != "comm" else 0.0
        cu = comm * (1.1 if sc.char_comm_steps > 1 else 1.0) * (7 if sc.char_comm_pattern == "p2p" else 1) / (
            8 if first else 1) if sc.char_part != "gemm" else 0.0
        if sc.char_part == "both":
            gu, cu = gu * 1.05, cu * 1.08
        stats = {"ficco_char": {"gemm_us": {"value": gu}, "comm_us": {"value": cu}}}
        t = gu + cu
    summ = {"scheme": kind, "scheme_label": scheme_for(kind).label, "scheme_color": scheme_for(kind).color,
            "model": w.name, "sublayer": "GEMM", "tp": w.tp, "mode": "homogeneous", "gemm_us": round(t - comm if kind
            == "sequential" else t, 3), "rs_us": 0.0, "ag_us": round(comm if kind == "sequential" else 0.0, 3),
            "total_us": round(t, 3)}
    return summ, stats


FUSED_KINDS = ("gemv_ar", "fused_gemv_ar", "emb_a2a", "fused_emb_a2a", "gemm_a2a", "fused_gemm_a2a")


def fake_fused(cfg) -> tuple:
    """(summary, stats as nested dict) of a fused-kernel study point (fused computation-collective paper): made-up times from its size, the
    fused kernel hiding most of the collective; explicit-mode fused embedding runs get per-GPU kernel times whose
    skew is larger without communication-aware order."""
    from t3sim.schemes.runtime import scheme_for

    w, sc, kind = cfg.workload, cfg.scheme, cfg.scheme.kind
    fused = kind.startswith("fused_")
    if w.gemv is not None:
        comp, comm = w.gemv.M * w.gemv.K / 4 / 7e5, 7.0 + w.gemv.M / 3e4
    elif w.embedding_bag is not None:
        e = w.embedding_bag
        comp = e.global_batch * e.tables_per_gpu / 50.0 + 3.0 * e.tables_per_gpu
        comm = e.global_batch * e.tables_per_gpu / (25.0 if cfg.system.interconnect.kind == "multinode" else 80.0)
    else:
        g = w.gemm
        comp, comm = g.M * g.N * g.K / 4 / 9e7, g.M * g.N / 4 * 0.75 * 2 / 4e4
    if fused:
        regs = sc.fused_library_registers_per_thread
        comp = (0.8 if w.embedding_bag is not None else 1.1) * comp * (1 + max(0, regs - 30) / 100)
        comm = 0.02 * comm
    summ = {"scheme": kind, "scheme_label": scheme_for(kind).label, "scheme_color": scheme_for(kind).color,
            "model": w.name, "sublayer": "-", "tp": w.tp, "mode": cfg.simulation.mode, "gemm_us": round(comp, 3),
            "rs_us": round(comm, 3), "ag_us": 0.0, "total_us": round(comp + comm, 3)}
    stats = {}
    if fused:
        stats = {"occupancy_reduction": 0.0, "base_wgs_per_cu": 8, "wgs_per_cu": 8, "grid_wgs": 832,
                 "nic_put_B": (comm / 0.02) * 15e3 if cfg.system.interconnect.kind == "multinode" else None}
        if cfg.simulation.mode == "explicit" and w.embedding_bag is not None:
            t0, skew = comp + comm, (0.01 if sc.fused_comm_aware else 0.07)
            stats.update({"kernel_us": {"gpu0": t0, "gpu1": t0 * (1 + skew)}, "kernel_skew": skew})
        if w.embedding_bag is not None:
            stats["wgs_per_cu"] = {33: 7, 41: 6, 65: 4, 137: 2}.get(regs, 8)  # the MI210's rule at 32 + regs VGPRs
    return summ, {"fused": {k: ({g: {"value": x} for g, x in v.items()} if isinstance(v, dict) else {"value": v})
                            for k, v in stats.items() if v is not None}}


def _flat(d: dict, pre: str = ""):
    """(dotted name, value) of a nested ``{"value": x}`` stats dict."""
    for k, v in d.items():
        if isinstance(v, dict) and "value" in v:
            yield pre + k, v["value"]
        elif isinstance(v, dict):
            yield from _flat(v, pre + k + ".")


def fake_summary(cfg) -> dict:
    w, sysc, kind = cfg.workload, cfg.system, cfg.scheme.kind
    if kind in FUSED_KINDS:
        return fake_fused(cfg)[0]
    if w.gemm is not None:
        return fake_ficco(cfg)[0]
    T, H, tp = w.num_tokens, w.model.hidden_size, w.tp
    g = 2.0 * T * H * K[w.sublayer] * H / tp / 40e6 * (80 / sysc.gpu.num_cus)  # ~40 TFLOP/s at 80 CUs
    rs = T * H * 2 * (tp - 1) / tp / 150e3 * 1.3
    coll = sysc.collective.cus
    if coll is not None and coll < 20:
        rs *= 1 + 3.0 / coll
    ag = rs * 0.9
    seq = dict(gemm_us=g, rs_us=rs, ag_us=ag)
    if w.direction == "ag_gemm":  # the AG of the input, then (or overlapped with) the GEMM
        f = {"sequential": 1.0, "chunked_dma": 0.5, "flux_ag": 0.1}[kind]
        t = dict(gemm_us=g * (1.0 if kind == "sequential" else 1.04), rs_us=0.0, ag_us=ag * f)
    elif kind == "sequential":
        t = seq
    elif kind in ("chunked", "chunked_dma", "flux_rs"):
        f = {"chunked": 0.6, "chunked_dma": 0.5, "flux_rs": 0.15}[kind]
        t = dict(gemm_us=g * 1.03, rs_us=rs * f, ag_us=ag)
    elif kind in ("t3", "t3_mca"):
        f = 1.08 if kind == "t3" else 1.03
        t = dict(gemm_us=g * f, rs_us=max(rs - 0.8 * g, 0.05 * rs), ag_us=ag)
    else:  # ideal: isolated kernel times, total max(GEMM, RS) + AG (Sec. 5.3)
        t = dict(gemm_us=g, rs_us=rs * (1.0 if kind == "ideal_gemm_rs_overlap" else 0.94), ag_us=ag)
    if w.collective == "reduce_scatter":
        t["ag_us"] = 0.0
    t["total_us"] = (max(t["gemm_us"], t["rs_us"]) if kind.startswith("ideal") else t["gemm_us"] + t["rs_us"]) + t["ag_us"]
    mb = T * H * 2 / 1e6
    fused = kind in ("t3", "t3_mca")
    traffic = dict(gemm_read_MB=mb * K[w.sublayer] / (1.3 if fused else 1.0), gemm_write_MB=0.0 if fused else mb,
                   gemm_update_MB=mb if fused else 0.0, rs_read_MB=mb * (0.9 if fused else 2.2),
                   rs_write_MB=0.0 if fused else mb * 0.9, rs_update_MB=mb * 0.8 if fused else 0.0,
                   ag_read_MB=mb * 0.9, ag_write_MB=mb * 0.9, ag_update_MB=0.0)
    from t3sim.schemes.runtime import scheme_for

    s = scheme_for(kind)
    return {"scheme": kind, "scheme_label": s.label, "scheme_color": s.color, "model": w.model.name, "sublayer": w.sublayer, "tp": tp, "mode": "homogeneous",
            **{k: round(v, 3) for k, v in t.items()}, **{k: round(v, 6) for k, v in traffic.items()}}


def fake_stats(summary: dict) -> Stats:
    s = Stats()
    s.add("gpu0.hbm.peak_bandwidth_GBps", 1024.0, "GB/s", "peak")
    s.add("gpu0.hbm.bandwidth_over_time.bin_ns", 1000.0, "ns", "bin")
    s.add("gpu0.hbm.bandwidth_over_time.start_ns", 3000.0, "ns", "start")
    n = int(summary["total_us"]) + 2
    fused = summary["scheme"] in ("t3", "t3_mca")
    s.add("gpu0.hbm.bandwidth_over_time.compute_read_GBps", [300.0 + 50 * (i % 7) for i in range(n)], "GB/s", "x")
    s.add("gpu0.hbm.bandwidth_over_time.compute_" + ("update" if fused else "write") + "_GBps",
          [200.0 * (i % 5 == 0) for i in range(n)], "GB/s", "x")
    s.add("gpu0.hbm.bandwidth_over_time.comm_read_GBps", [100.0 * (i % 3 == 0) for i in range(n)], "GB/s", "x")
    if fused:
        s.add("gpu0.hbm.bandwidth_over_time.comm_update_GBps", [80.0 * (i % 2) for i in range(n)], "GB/s", "x")
    return s


def fake_inputs(quick: bool = False):
    """The same synthetic runs in memory (no files): a :class:`t3sim.reproduction.inputs.Inputs` without stats."""
    from t3sim.analysis.runs import Run
    from t3sim.reproduction.inputs import Inputs

    runs = {}
    for spec in SPECS:
        if quick and spec.quick is None:
            continue
        for i, p in enumerate(expand(spec.path, list(spec.quick) if quick else [])):
            runs.setdefault(spec.results, []).append(
                Run(Path(f"/nonexistent/{spec.results}/{i:012d}"), p.config.name, p.config.model_dump(mode="json"),
                    fake_summary(p.config),
                    fake_fused(p.config)[1] if p.config.scheme.kind in FUSED_KINDS else
                    fake_ficco(p.config)[1] if p.config.workload.gemm is not None else None))
    from t3sim.reproduction.catalog import FUSED_SCALE_CSV

    return Inputs(runs, None, FUSED_SCALE_CSV)


def write_fake_results(root: Path, quick: bool = True, only=None) -> Path:
    """Fake results of every reproduce experiment (or those whose results name is in ``only``) and a
    validation CSV under ``root``."""
    store = ResultStore(root)
    for spec in SPECS:
        if (only is not None and spec.results not in only) or (quick and spec.quick is None):
            continue
        for p in expand(spec.path, list(spec.quick) if quick else []):
            summ = fake_summary(p.config)
            st = fake_stats(summ)
            if p.config.scheme.kind in FUSED_KINDS:
                for k, v in _flat(fake_fused(p.config)[1]):
                    st.add(k, v, "x", "fake")
            if p.config.workload.gemm is not None and p.config.scheme.kind == "ficco_char":
                for k, v in fake_ficco(p.config)[1]["ficco_char"].items():
                    st.add(f"ficco_char.{k}", v["value"], "us", "fake")
            store.write(RunResult(p.config.name, p.config.model_dump(mode="json"), st, summ, 0, {"wall_s": 0.0}))
    v = root / "validation" / "h200-4gpu" / "reduce_scatter_4gpu.csv"
    v.parent.mkdir(parents=True, exist_ok=True)
    with v.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["collective", "gpus", "size_mb", "dtype", "median_us", "measured_us", "simulated_us", "error"])
        for mb, meas, sim in ((6, 50.6, 52.9), (12, 60.1, 65.6), (24, 93.4, 91.2)):
            w.writerow(["reduce_scatter", 4, mb, "bf16", meas, meas, sim, round(sim / meas - 1, 5)])
    return root


def assert_same_metrics(got: dict, want: dict, rel: float = 1e-5) -> None:
    """A section's values from its figure table (``metrics_from_tables``) against those from the runs: the same
    keys, each equal to the table's six significant digits or NaN in both."""
    import math

    import pytest

    assert set(got) == set(want)
    for k in want:
        assert (math.isnan(got[k]) and math.isnan(want[k])) or got[k] == pytest.approx(want[k], rel=rel), k

