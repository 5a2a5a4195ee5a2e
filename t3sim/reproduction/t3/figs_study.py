"""The T3 paper's Figures 4, 6, 14, 19 and the tracker / MCA parameter sweeps: data from results files, then plots
(pure)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from t3sim.analysis.comparison import geomean_speedup_pct
from t3sim.analysis.plotting import PART_COLORS, SCHEME_COLORS, grouped_bars, pyplot, save
from t3sim.analysis.runs import Run, case_sort_key, f, model_name, scheme_name
from t3sim.analysis.validation import geomean_error
from t3sim.reproduction.t3 import endtoend as e2e
from t3sim.results.store import read_csv


# ---------------------------------------------------------------- Figs. 4 and 19: end to end
def _model_tp_keys(groups) -> List[Tuple[str, int]]:
    return sorted(groups, key=lambda k: case_sort_key(k[0], "", k[1]))


def fig04_rows(runs: Sequence[Run]) -> List[Dict]:
    """Per (model, TP, phase): the Sec. 2.4 breakdown in percent of the layer time (endtoend module)."""
    groups, shapes = e2e.group_model_tp(runs), e2e.shapes_by_model_tp(runs)
    rows = []
    for k in _model_tp_keys(groups):
        for phase in ("training", "prompt"):
            if k not in shapes or not e2e.complete(groups[k], phase):
                continue
            bd = e2e.breakdown(k[0], k[1], groups[k], shapes[k], phase)
            t = bd.total
            rows.append({"model": k[0], "tp": k[1], "phase": phase, "tokens": shapes[k].tokens, "layer_us": t,
                         "sliced_gemm_pct": 100 * bd.sliced_gemm / t, "rs_pct": 100 * bd.rs / t,
                         "ag_pct": 100 * bd.ag / t, "other_gemm_pct": 100 * bd.other_gemm / t,
                         "attention_pct": 100 * bd.attention / t, "other_pct": 100 * bd.other / t,
                         "comm_pct": 100 * bd.comm_frac, "comm_pct_gemm_2x_faster": 100 * bd.comm_frac_gemm_scaled(0.5)})
    return rows


def fig04(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",)) -> List[Path]:
    rows = fig04_rows(runs)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows) + 2), 3.8))
    parts = (("Sliced GEMM", "sliced_gemm_pct", PART_COLORS["GEMM"]), ("RS", "rs_pct", PART_COLORS["RS"]),
             ("AG", "ag_pct", PART_COLORS["AG"]), ("Other GEMMs", "other_gemm_pct", "#9ecae1"),
             ("Attention (non-sliced)", "attention_pct", "#c7e9c0"), ("Other (elementwise, optimizer)", "other_pct", PART_COLORS["Other"]))
    bottom = [0.0] * len(rows)
    for label, key, color in parts:
        vals = [r[key] for r in rows]
        ax.bar(range(len(rows)), vals, 0.7, bottom=bottom, color=color, label=label)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"{model_name(r['model'])}\nTP={r['tp']}\n{'train' if r['phase'] == 'training' else 'prompt'}"
                        for r in rows], fontsize=7)
    ax.set_ylabel("share of Transformer layer time (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Fig. 4: Transformer time in sliced GEMMs, RS, AG and other operations (Sequential)", fontsize=9)
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.28))
    return save(fig, rows, out, "fig04", formats)


def _ideal_overlap_pct(seq: Run) -> float:
    """Ideal-GEMM-RS-Overlap's speedup from Sequential's phase times: (GEMM + RS + AG) / (max(GEMM, RS) + AG)."""
    g, r, a = f(seq, "gemm_us"), f(seq, "rs_us"), f(seq, "ag_us")
    return 100 * ((g + r + a) / (max(g, r) + a) - 1)


def fig19_rows(runs: Sequence[Run], schemes: Sequence[str] = ("t3", "t3_mca")) -> List[Dict]:
    """Per (model, TP, phase, scheme): end-to-end speedup (Sec. 5.1.2), the sliced sub-layers' geomean speedup, the
    geomean of the ideal-overlap bound over the same sub-layers (Sequential's phase times, as Ideal-GEMM-RS-Overlap
    composes them), and the range of the scheme's GEMM slowdown against Sequential's GEMM over those sub-layers."""
    groups, shapes = e2e.group_model_tp(runs), e2e.shapes_by_model_tp(runs)
    rows = []
    for k in _model_tp_keys(groups):
        for phase in ("training", "prompt"):
            if k not in shapes or not e2e.complete(groups[k], phase, ("sequential",)):
                continue
            bd = e2e.breakdown(k[0], k[1], groups[k], shapes[k], phase)
            for s in schemes:
                if not e2e.complete(groups[k], phase, ("sequential", s)):
                    continue
                subs = [sl for sl in e2e.FWD_SLICED + e2e.BWD_SLICED if sl in groups[k] and s in groups[k][sl]]
                pairs = [(groups[k][sl]["sequential"], groups[k][sl][s]) for sl in subs]
                layer = geomean_speedup_pct([100 * (f(q, "total_us") / f(x, "total_us") - 1) for q, x in pairs])
                slow = [100 * (f(x, "gemm_us") / f(q, "gemm_us") - 1) for q, x in pairs if f(q, "gemm_us") > 0]
                rows.append({"model": k[0], "tp": k[1], "phase": phase, "scheme": s,
                             "end_to_end_speedup_pct": 100 * (e2e.end_to_end_speedup(bd, groups[k], s) - 1),
                             "sublayer_geomean_speedup_pct": layer, "sublayers": len(subs),
                             "ideal_sublayer_geomean_pct": geomean_speedup_pct([_ideal_overlap_pct(q) for q, _ in pairs]),
                             "gemm_slowdown_min_pct": min(slow, default=math.nan),
                             "gemm_slowdown_max_pct": max(slow, default=math.nan)})
    return rows


def fig19(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",)) -> List[Path]:
    rows = fig19_rows(runs)
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, phase in zip(axes, ("training", "prompt")):
        sel = [r for r in rows if r["phase"] == phase]
        keys = list(dict.fromkeys((r["model"], r["tp"]) for r in sel))
        groups = [f"{model_name(m)}\nTP={tp}" for m, tp in keys]
        series = {s: [next((1 + r["end_to_end_speedup_pct"] / 100 for r in sel if (r["model"], r["tp"]) == kk
                            and r["scheme"] == s), math.nan) for kk in keys] for s in ("t3", "t3_mca")}
        grouped_bars(ax, groups, series, SCHEME_COLORS, {s: scheme_name(s) for s in series})
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_title("training" if phase == "training" else "inference (prompt phase)", fontsize=9)
    axes[0].set_ylabel("end-to-end speedup over Sequential (x)")
    axes[1].legend(fontsize=7)
    fig.suptitle("Fig. 19: end-to-end model speedups (Sec. 5.1.2 method, t3sim/reproduction/t3/endtoend.py)", fontsize=9)
    return save(fig, rows, out, "fig19", formats)


# ---------------------------------------------------------------- Fig. 6: CU sharing
def split_label(r: Run) -> str:
    cus, coll = int(r.cfg("system.gpu.num_cus")), r.cfg("system.collective.cus")
    return f"{cus}-{cus if coll is None else int(coll)}"


def fig06_rows(runs: Sequence[Run], full_cus: Optional[int] = None) -> List[Dict]:
    """Per (model, sub-layer, split): GEMM and AR (= RS + AG) times, normalized to the all-CU run, and the
    potential-overlap speedup ``(G_all + AR_all) / max(G_A, AR_B)`` (paper Sec. 3.2.1); split "Ideal" is
    ``(G_all + AR_all) / max(G_all, AR_all)``."""
    cases: Dict[Tuple[str, str], Dict[str, Run]] = {}
    for r in runs:
        cases.setdefault((r.model, r.sublayer), {})[split_label(r)] = r
    full_cus = full_cus or max(int(r.cfg("system.gpu.num_cus")) for r in runs) if runs else 80
    full = f"{full_cus}-{full_cus}"
    rows = []
    for (m, s), sp in sorted(cases.items(), key=lambda kv: case_sort_key(kv[0][0], kv[0][1], 0)):
        if full not in sp:
            continue
        g0 = f(sp[full].summary, "gemm_us")
        a0 = f(sp[full].summary, "rs_us") + f(sp[full].summary, "ag_us")
        seq = g0 + a0
        rows.append({"model": m, "sublayer": s, "split": "Ideal", "gemm_us": g0, "ar_us": a0, "gemm_norm": 1.0,
                     "ar_norm": 1.0, "potential_overlap_speedup": seq / max(g0, a0)})
        for lab, r in sorted(sp.items(), key=lambda kv: -int(kv[0].split("-")[0])):
            if lab == full:
                continue
            g, a = f(r.summary, "gemm_us"), f(r.summary, "rs_us") + f(r.summary, "ag_us")
            rows.append({"model": m, "sublayer": s, "split": lab, "gemm_us": g, "ar_us": a, "gemm_norm": g / g0,
                         "ar_norm": a / a0, "potential_overlap_speedup": seq / max(g, a)})
    return rows


def fig06(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",)) -> List[Path]:
    rows = fig06_rows(runs)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.75 * len(rows) + 1.5), 3.8))
    labels = [f"{model_name(r['model'])}\n{'Attn.' if r['sublayer'] == 'OP' else r['sublayer']}\n{r['split']}" for r in rows]
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["gemm_norm"] for r in rows], 0.4, color=PART_COLORS["GEMM"], label="GEMM time (norm.)")
    ax.bar([i + 0.2 for i in x], [r["ar_norm"] for r in rows], 0.4, color=PART_COLORS["RS"], label="AR time (norm.)")
    ax2 = ax.twinx()
    ax2.plot(list(x), [r["potential_overlap_speedup"] for r in rows], "kD", ms=4, label="potential-overlap speedup")
    ax2.set_ylabel("potential-overlap speedup (x)")
    ax2.set_ylim(bottom=0)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=6)
    ax.set_ylabel("time normalized to all 80 CUs")
    ax.set_title("Fig. 6: CU sharing between GEMM and AR (A-B = GEMM CUs - AR CUs), TP=8", fontsize=9)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    return save(fig, rows, out, "fig06", formats)


# ---------------------------------------------------------------- Fig. 14: validation
def fig14_rows(csv_path: str | Path) -> List[Dict]:
    rows = []
    for r in read_csv(csv_path, ["measured_us", "simulated_us"]):
        rows.append({"size_mb": float(r.get("size_mb", "nan") or "nan"), "gpus": r.get("gpus", ""),
                     "measured_us": float(r["measured_us"]), "simulated_us": float(r["simulated_us"]),
                     "error_pct": 100 * (float(r["simulated_us"]) / float(r["measured_us"]) - 1)})
    return rows


def fig14_geomean_error_pct(rows: Sequence[Dict]) -> float:
    return 100 * geomean_error([r["simulated_us"] for r in rows], [r["measured_us"] for r in rows]) if rows else math.nan


def fig14(csv_path: str | Path, out: str | Path, formats: Sequence[str] = ("png",), system: str = "") -> List[Path]:
    rows = fig14_rows(csv_path)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    meas, sim = [r["measured_us"] for r in rows], [r["simulated_us"] for r in rows]
    lo, hi = min(meas + sim) / 1.5, max(meas + sim) * 1.5
    ax.plot([lo, hi], [lo, hi], ":", color="k", lw=1.2, label="ideal (simulated = measured)")
    ax.scatter(meas, sim, s=30, color="tab:blue", zorder=3, label="t3sim")
    for r in rows:
        ax.annotate(f"{r['size_mb']:g} MiB", (r["measured_us"], r["simulated_us"]), textcoords="offset points",
                    xytext=(5, -10), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured reduce-scatter time (us)")
    ax.set_ylabel("simulated reduce-scatter time (us)")
    ax.set_title(f"Fig. 14: RS validation {system} -- geomean error {fig14_geomean_error_pct(rows):.1f} %", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, which="both", alpha=0.25)
    return save(fig, rows, out, "fig14", formats)


# ---------------------------------------------------------------- parameter sweeps
TRACKER_DEFAULTS = {"entries": 256, "ways": 8, "granularity": "wf", "granularity_multiple": 1, "admission": "reserve_ready"}
#: what a result written before a tracker field existed ran with (the admission policy was first_come)
TRACKER_BEFORE = {"admission": "first_come"}
MCA_DEFAULTS = {"threshold_mode": "dynamic", "occupancy_threshold": None, "starvation_limit_cycles": None}
#: how the default starvation limit (None: derived from the link rate, t3sim/memory/policies/t3_mca.py) is labelled
LINK_RATE = "link rate"


def variant(r: Run, study: str) -> Tuple[str, str]:
    """(parameter, value) that this sweep point changes from the paper's design point."""
    if r.scheme == "sequential":
        return ("reference", "Sequential")
    if study == "tracker":
        cur = {k: r.cfg(f"system.tracker.{k}", TRACKER_BEFORE.get(k, d)) for k, d in TRACKER_DEFAULTS.items()}
        diff = [(k, v) for k, v in cur.items() if v != TRACKER_DEFAULTS[k]]
        return (diff[0][0], str(diff[0][1])) if diff else ("paper point", "256 x 8, WF")
    if r.scheme == "t3":
        return ("threshold", "T3 (round-robin)")
    a = {k: r.cfg(f"system.memory_controller.arbitration.{k}") for k in MCA_DEFAULTS}
    if a["threshold_mode"] == "static":
        return ("threshold", f"static {'none' if a['occupancy_threshold'] is None else a['occupancy_threshold']}")
    if a["starvation_limit_cycles"] is not None:
        return ("starvation_limit_cycles", str(a["starvation_limit_cycles"]))
    return ("threshold", "dynamic (default)")


def sweep_rows(runs: Sequence[Run], study: str) -> List[Dict]:
    """One row per point (parameter, value, speedup over the same sub-layer's Sequential point); the design
    point is repeated in every parameter's panel as ``<default> (default)``."""
    seq = {(r.model, r.sublayer, r.tp): r for r in runs if r.scheme == "sequential"}
    rows = []
    for r in runs:
        p, v = variant(r, study)
        base = seq.get((r.model, r.sublayer, r.tp))
        sp = 100 * (f(base.summary, "total_us") / f(r.summary, "total_us") - 1) if base else math.nan
        rows.append({"model": r.model, "sublayer": r.sublayer, "tp": r.tp, "parameter": p, "value": v,
                     "scheme": r.scheme, "gemm_us": f(r.summary, "gemm_us"), "total_us": f(r.summary, "total_us"),
                     "speedup_pct": sp})
    defaults = TRACKER_DEFAULTS if study == "tracker" else {"starvation_limit_cycles": LINK_RATE}
    point = ("paper point", "256 x 8, WF") if study == "tracker" else ("threshold", "dynamic (default)")
    base_rows = [r for r in rows if (r["parameter"], r["value"]) == point]
    for p in dict.fromkeys(r["parameter"] for r in rows):
        if p in defaults:
            rows += [dict(r, parameter=p, value=f"{defaults[p]} (default)") for r in base_rows]
    if study == "tracker":
        rows = [r for r in rows if r["parameter"] != "paper point"] or rows
    return rows


def _value_key(v: str):
    m = re.search(r"-?\d+(\.\d+)?", v)
    return (0, float(m.group(0)), v) if m else (1, 0.0, v)


def sweep(runs: Sequence[Run], study: str, out: str | Path, formats: Sequence[str] = ("png",)) -> List[Path]:
    rows = sweep_rows(runs, study)
    order = list(TRACKER_DEFAULTS) + ["threshold", "starvation_limit_cycles"]
    params = sorted((p for p in dict.fromkeys(r["parameter"] for r in rows) if p != "reference"),
                    key=lambda p: order.index(p) if p in order else len(order))
    cases = sorted({(r["model"], r["sublayer"], r["tp"]) for r in rows}, key=lambda c: (c[2], case_sort_key(c[0], c[1], c[2])))
    plt = pyplot()
    fig, axes = plt.subplots(1, max(len(params), 1), figsize=(3.2 * max(len(params), 1) + 1, 3.4), sharey=True, squeeze=False)
    palette = ["#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    colors = {c: palette[i % len(palette)] for i, c in enumerate(cases)}
    for ax, p in zip(axes[0], params):
        vals = sorted({r["value"] for r in rows if r["parameter"] == p}, key=_value_key)
        series = {c: [next((1 + r["speedup_pct"] / 100 for r in rows if r["parameter"] == p and r["value"] == v
                            and (r["model"], r["sublayer"], r["tp"]) == c), math.nan) for v in vals] for c in cases}
        grouped_bars(ax, vals, series, colors, {c: f"{c[0]} {c[1]} TP={c[2]}" for c in cases})
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xlabel(p.replace("_", " "), fontsize=8)
        for lab in ax.get_xticklabels():
            lab.set_rotation(30)
    axes[0][0].set_ylabel("T3-MCA speedup over Sequential (x)" if study == "tracker" else "speedup over Sequential (x)")
    h, lab = axes[0][0].get_legend_handles_labels()
    fig.legend(h, lab, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.04), ncol=max(len(lab), 1))
    fig.suptitle(f"{'Tracker' if study == 'tracker' else 'MC arbitration'} sweep", fontsize=9)
    return save(fig, rows, out, f"sweep-{study}", formats)
