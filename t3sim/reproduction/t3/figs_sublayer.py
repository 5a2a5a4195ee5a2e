"""The T3 paper's figures of the sixteen sliced sub-layers (Figs. 15-18, 20): data from runs, then plots (pure).

Each ``figNN_rows`` turns runs (:mod:`t3sim.analysis.runs`) into the plotted numbers (a list of dicts,
also the CSV); each ``figNN`` draws them and writes CSV + images via :func:`t3sim.analysis.plotting.save`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from t3sim.analysis.comparison import case_metrics, dram_bytes_MB, geomean_speedup_pct
from t3sim.analysis.plotting import PART_COLORS, SCHEME_COLORS, grouped_bars, pyplot, save
from t3sim.analysis.runs import Run, case_label, case_sort_key, f, scheme_name

OVERLAP_SCHEMES = ("t3", "t3_mca", "ideal_gemm_rs_overlap", "ideal_rs_nmc")
Case = Tuple[str, str, int]


def by_case(runs: Sequence[Run]) -> Dict[Case, Dict[str, Run]]:
    out: Dict[Case, Dict[str, Run]] = {}
    for r in runs:
        out.setdefault((r.model, r.sublayer, r.tp), {})[r.scheme] = r
    return dict(sorted(out.items(), key=lambda kv: case_sort_key(*kv[0])))


# ---------------------------------------------------------------- Fig. 15: runtime distribution
_DTYPE_B = {"fp16": 2, "bf16": 2, "fp32": 4, "fp8": 1}


def rs_link_bound_us(r: Run) -> float:
    """The link-bound time of the sub-layer's ring reduce-scatter (us): each GPU sends ``(tp - 1) / tp`` of the
    ``tokens x hidden_size`` output over its ring links, both directions at once where the ring is bidirectional
    (paper Table 1: a 150 GB/s bidirectional ring, Sec. 5.1). NaN for other topologies."""
    if r.cfg("system.interconnect.kind") != "ring":
        return math.nan
    hidden = r.cfg("workload.model.hidden_size")
    bw = float(r.cfg("system.interconnect.link_bandwidth_GBps", 0) or 0)
    if not hidden or bw <= 0 or r.tp < 2:
        return math.nan
    ways = 2 if r.cfg("system.interconnect.bidirectional", False) else 1
    sent_B = r.tokens * int(hidden) * _DTYPE_B.get(str(r.cfg("workload.dtype", "fp16")), 2) * (r.tp - 1) / r.tp
    return sent_B / (ways * bw * 1e3)  # B / (GB/s) = ns; / 1e3 -> us


def fig15_rows(runs: Sequence[Run]) -> List[Dict]:
    """Sequential phase times and shares per case, with the RS's link-bound time (:func:`rs_link_bound_us`)."""
    rows = []
    for (m, s, tp), sch in by_case(runs).items():
        r = sch.get("sequential")
        if r is None:
            continue
        g, rs, ag = f(r.summary, "gemm_us"), f(r.summary, "rs_us"), f(r.summary, "ag_us")
        tot = g + rs + ag
        rows.append({"model": m, "sublayer": s, "tp": tp, "tokens": r.tokens, "gemm_us": g, "rs_us": rs, "ag_us": ag,
                     "gemm_pct": 100 * g / tot, "rs_pct": 100 * rs / tot, "ag_pct": 100 * ag / tot,
                     "rs_link_bound_us": rs_link_bound_us(r)})
    return rows


def fig15(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",)) -> List[Path]:
    rows = fig15_rows(runs)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(rows) + 2), 3.6))
    x = range(len(rows))
    bottom = [0.0] * len(rows)
    for part, key in (("GEMM", "gemm_pct"), ("RS", "rs_pct"), ("AG", "ag_pct")):
        vals = [r[key] for r in rows]
        ax.bar(x, vals, 0.7, bottom=bottom, color=PART_COLORS[part], label=part)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(list(x))
    ax.set_xticklabels([case_label(r["model"], r["sublayer"], r["tp"], short=True) for r in rows], fontsize=7)
    ax.set_ylabel("share of Sequential runtime (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Fig. 15: sub-layer runtime distribution (Sequential)", fontsize=9)
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    return save(fig, rows, out, "fig15", formats)


# ---------------------------------------------------------------- Fig. 16: speedups
def fig16_rows(runs: Sequence[Run]) -> List[Dict]:
    rows = []
    for (m, s, tp), sch in by_case(runs).items():
        met = case_metrics({k: r.summary for k, r in sch.items()})
        if not met:
            continue
        row = {"model": m, "sublayer": s, "tp": tp, "sequential_us": met["sequential"]["total_us"]}
        for k in OVERLAP_SCHEMES:
            row[f"{k}_speedup_pct"] = met[k]["speedup_pct"] if k in met else math.nan
        rows.append(row)
    return rows


def fig16(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",)) -> List[Path]:
    rows = fig16_rows(runs)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(7, 0.7 * len(rows) + 2.5), 3.8))
    groups = [case_label(r["model"], r["sublayer"], r["tp"], short=True) for r in rows] + ["Geomean"]
    series = {k: [1 + r[f"{k}_speedup_pct"] / 100 for r in rows] +
              [1 + geomean_speedup_pct([r[f"{k}_speedup_pct"] for r in rows]) / 100] for k in OVERLAP_SCHEMES}
    grouped_bars(ax, groups, series, SCHEME_COLORS, {k: scheme_name(k) for k in OVERLAP_SCHEMES})
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_ylabel("speedup over Sequential (x)")
    ax.set_title("Fig. 16: sub-layer speedups", fontsize=9)
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    return save(fig, rows, out, "fig16", formats)


# ---------------------------------------------------------------- Fig. 18: DRAM accesses
DRAM_PARTS = (("GEMM reads", ("gemm",), ("read",)), ("GEMM writes", ("gemm",), ("write", "update")),
              ("RS reads", ("rs",), ("read",)), ("RS writes", ("rs",), ("write", "update")),
              ("AG reads", ("ag",), ("read",)), ("AG writes", ("ag",), ("write", "update")))
DRAM_COLORS = ("#1f77b4", "#9ecae1", "#d62728", "#fc9272", "#ff7f0e", "#fdd0a2")


def fig18_rows(runs: Sequence[Run], schemes: Sequence[str] = ("sequential", "t3_mca")) -> List[Dict]:
    rows = []
    for (m, s, tp), sch in by_case(runs).items():
        if "sequential" not in sch:
            continue
        base = dram_bytes_MB(sch["sequential"].summary)
        for k in schemes:
            if k not in sch:
                continue
            row = {"model": m, "sublayer": s, "tp": tp, "scheme": k}
            for name, cats, kinds in DRAM_PARTS:
                row[name.replace(" ", "_") + "_MB"] = dram_bytes_MB(sch[k].summary, cats, kinds)
            row["total_MB"] = dram_bytes_MB(sch[k].summary)
            row["normalized_to_sequential"] = row["total_MB"] / base if base else math.nan
            rows.append(row)
    return rows


def fig18(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",)) -> List[Path]:
    rows = fig18_rows(runs)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(7, 0.8 * len(rows) / 2 + 2.5), 3.8))
    xs, labels = [], []
    cases = []
    for r in rows:
        c = (r["model"], r["sublayer"], r["tp"])
        if c not in cases:
            cases.append(c)
    for r in rows:
        ci = cases.index((r["model"], r["sublayer"], r["tp"]))
        xs.append(ci + (-0.2 if r["scheme"] == "sequential" else 0.2))
    bottom = [0.0] * len(rows)
    for (name, _, _), color in zip(DRAM_PARTS, DRAM_COLORS):
        key = name.replace(" ", "_") + "_MB"
        vals = [r[key] for r in rows]
        ax.bar(xs, vals, 0.38, bottom=bottom, color=color, label=name, edgecolor="white", linewidth=0.3)
        bottom = [b + v for b, v in zip(bottom, vals)]
    for x, r, b in zip(xs, rows, bottom):
        ax.text(x, b, "S" if r["scheme"] == "sequential" else "M", ha="center", va="bottom", fontsize=6)
    labels = [case_label(*c, short=True) for c in cases]
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("GPU 0 DRAM accesses (MB)")
    ax.set_title("Fig. 18: DRAM accesses per sub-layer (S = Sequential, M = T3-MCA)", fontsize=9)
    ax.legend(fontsize=7, ncol=6, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    return save(fig, rows, out, "fig18", formats)


# ---------------------------------------------------------------- Fig. 17: DRAM bandwidth over time
BW_SERIES = (("GEMM reads", "compute_read"), ("GEMM writes", "compute_write"), ("GEMM updates", "compute_update"),
             ("RS/AG reads", "comm_read"), ("RS/AG writes", "comm_write"), ("RS updates", "comm_update"))
BW_COLORS = ("#1f77b4", "#6baed6", "#9ecae1", "#d62728", "#fc9272", "#ff7f0e")


def fig17_rows(runs: Sequence[Run], schemes: Sequence[str] = ("sequential", "t3", "t3_mca"),
               max_bins: int = 400) -> List[Dict]:
    """Long format: one row per (scheme, bin). Sequential is cut at its GEMM's end (the isolated GEMM,
    Fig. 17a); T3 runs at the end of their fused GEMM-RS (AG left out). ``t_norm`` = time / isolated GEMM time.
    At most ``max_bins`` plotted bins per scheme: consecutive simulator bins are averaged."""
    sch = {r.scheme: r for r in runs}
    iso = f(sch["sequential"].summary, "gemm_us") if "sequential" in sch else math.nan
    rows = []
    for k in schemes:
        if k not in sch:
            continue
        r = sch[k]
        bin_ns = float(r.stat("gpu0.hbm.bandwidth_over_time.bin_ns", 0) or 0)
        start = float(r.stat("gpu0.hbm.bandwidth_over_time.start_ns", 0) or 0)
        if bin_ns <= 0:
            continue
        end_us = f(r.summary, "gemm_us") + (0.0 if k == "sequential" else f(r.summary, "rs_us"))
        series = {label: r.stat(f"gpu0.hbm.bandwidth_over_time.{key}_GBps") or [] for label, key in BW_SERIES}
        n = min(max((len(v) for v in series.values()), default=0), int(max(end_us * 1e3 - start, 0) // bin_ns) + 1)
        g = max(1, n // max_bins)  # merge g simulator bins into one plotted bin (mean bandwidth)
        for i0 in range(0, n, g):
            i1 = min(i0 + g, n)
            t_us = (start + 0.5 * (i0 + i1) * bin_ns) / 1e3
            row = {"scheme": k, "time_us": t_us, "t_norm": t_us / iso if iso else math.nan}
            for label, _ in BW_SERIES:
                v = series[label]
                row[label.replace(" ", "_").replace("/", "_") + "_GBps"] = (
                    sum(float(x) for x in v[i0:i1]) / (i1 - i0))
            rows.append(row)
    return rows


def fig17(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",)) -> List[Path]:
    rows = fig17_rows(runs)
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    plt = pyplot()
    fig, axes = plt.subplots(len(schemes) or 1, 1, figsize=(7, 2.3 * max(len(schemes), 1)), sharex=True, squeeze=False)
    keys = [label.replace(" ", "_").replace("/", "_") + "_GBps" for label, _ in BW_SERIES]
    use_norm = all(math.isfinite(r["t_norm"]) for r in rows)
    for ax, k in zip(axes[:, 0], schemes):
        sel = [r for r in rows if r["scheme"] == k]
        x = [r["t_norm" if use_norm else "time_us"] for r in sel]
        stacks = [[r[key] for r in sel] for key in keys]
        present = [(lab, s, c) for (lab, _), s, c in zip(BW_SERIES, stacks, BW_COLORS) if any(v > 0 for v in s)]
        if present:
            ax.stackplot(x, *[s for _, s, _ in present], labels=[lab for lab, _, _ in present],
                         colors=[c for _, _, c in present], step="mid")
        ax.set_ylabel("DRAM BW (GB/s)", fontsize=8)
        ax.set_title(("(a) isolated GEMM (Sequential)" if k == "sequential" else f"({'bc'[schemes.index(k) - 1] if schemes.index(k) <= 2 else '?'}) {scheme_name(k)}: fused GEMM-RS"), fontsize=8)
        ax.legend(fontsize=6, loc="upper right", ncol=3)
        if use_norm:
            ax.axvline(1.0, color="k", ls=":", lw=0.8)
    axes[-1, 0].set_xlabel("time / isolated GEMM time (GEMM slowdown)" if use_norm else "time (us)")
    fig.suptitle("Fig. 17: DRAM bandwidth over time, T-NLG FC-2 TP=8", fontsize=9)
    return save(fig, rows, out, "fig17", formats)


# ---------------------------------------------------------------- Fig. 20: 2x CUs
def fig20_rows(runs_2x: Sequence[Run], runs_1x: Sequence[Run]) -> List[Dict]:
    """Per case: speedups on the 2x-CU system and on Table 1 (same case and token count), GEMM:RS ratios."""
    rows = []
    one = by_case(runs_1x)
    for c, sch in by_case(runs_2x).items():
        m2 = case_metrics({k: r.summary for k, r in sch.items()})
        ref = {k: r for k, r in one.get(c, {}).items() if r.tokens == next(iter(sch.values())).tokens}
        m1 = case_metrics({k: r.summary for k, r in ref.items()})
        if not m2:
            continue
        row = {"model": c[0], "sublayer": c[1], "tp": c[2]}
        for tag, m, sc in (("1x", m1, ref), ("2x", m2, sch)):
            seq = sc.get("sequential")
            row[f"gemm_rs_ratio_{tag}"] = (f(seq.summary, "gemm_us") / f(seq.summary, "rs_us")
                                           if seq is not None and f(seq.summary, "rs_us") > 0 else math.nan)
            for k in ("t3", "t3_mca"):
                row[f"{k}_speedup_pct_{tag}"] = m[k]["speedup_pct"] if k in m else math.nan
        rows.append(row)
    return rows


def fig20(runs_2x: Sequence[Run], runs_1x: Sequence[Run], out: str | Path,
          formats: Sequence[str] = ("png",)) -> List[Path]:
    rows = fig20_rows(runs_2x, runs_1x)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(rows) + 2), 3.6))
    groups = [case_label(r["model"], r["sublayer"], r["tp"], short=True) for r in rows]
    series = {"T3-MCA, Table 1 (80 CUs)": [1 + r["t3_mca_speedup_pct_1x"] / 100 for r in rows],
              "T3-MCA, GPU-2X-CU (160 CUs)": [1 + r["t3_mca_speedup_pct_2x"] / 100 for r in rows],
              "T3, GPU-2X-CU (160 CUs)": [1 + r["t3_speedup_pct_2x"] / 100 for r in rows]}
    colors = {"T3-MCA, Table 1 (80 CUs)": "#98df8a", "T3-MCA, GPU-2X-CU (160 CUs)": "#2ca02c",
              "T3, GPU-2X-CU (160 CUs)": "#e6b800"}
    grouped_bars(ax, groups, series, colors)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_ylabel("speedup over Sequential (x)")
    ax.set_title("Fig. 20: T3 on future hardware with 2x compute", fontsize=9)
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    return save(fig, rows, out, "fig20", formats)
