"""FLUX's operation-level evaluation (Chang et al. 2024, Sec. 5.1, Figs. 11-14): ECT and overlap efficiency per
system, direction and m, from the ``flux-op-*`` experiments (pure; reads results only).

Per point (system, direction, m) and run:

* ``total_us`` -- the operation's time: GEMM+ReduceScatter (``workload.collective=reduce_scatter``: no all-gather
  after it) or AllGather+GEMM;
* ``gemm_alone_us`` -- FLUX Eq. 1's best non-split GEMM: the GEMM phase of the point's ``sequential`` run (the
  GEMM alone on the GPU, whole);
* ``ect_us = total_us - gemm_alone_us`` (Eq. 1) and ``overlap_efficiency = 1 - ECT / ECT_non-overlap`` (Eq. 2),
  ``ECT_non-overlap`` being the ``sequential`` run's.

Methods, as FLUX Sec. 5 names them: ``non-overlap`` (``sequential``: the NCCL-style collective and the GEMM);
``TE`` (Transformer Engine with UserBuffer, "the best of all configurations": the faster of ``chunked`` and
``chunked_dma`` at the point); ``FLUX`` (the faster of the ``flux_rs`` reductions or the ``flux_ag`` transfer
modes at the point: FLUX autotunes them, Secs. 4.2-4.4); and, for GEMM+RS, ``t3`` and ``t3_mca``. Every run is a
row (``variant`` names its configuration); ``best`` marks the one its method is represented by at the point.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from t3sim.analysis.plotting import pyplot, save
from t3sim.analysis.runs import Run, f

DIRECTIONS = {"gemm_rs": "GEMM+RS", "ag_gemm": "AG+GEMM"}
#: FLUX's three nodes (Sec. 5) by t3sim system name, in the paper's order
SYSTEMS = {"a100-pcie-8gpu": "A100 PCIe", "a100-sxm4-8gpu": "A100 NVLink", "h800-8gpu": "H800 NVLink"}
METHODS = ("non-overlap", "TE", "FLUX", "t3", "t3_mca")
METHOD_LABELS = {"non-overlap": "non-overlap (NCCL + GEMM)", "TE": "Transformer Engine (best of chunked)",
                 "FLUX": "FLUX (best variant)", "t3": "T3", "t3_mca": "T3-MCA"}
METHOD_COLORS = {"non-overlap": "#7f7f7f", "TE": "#ff7f0e", "FLUX": "#e377c2", "t3": "#2ca02c", "t3_mca": "#d62728"}
#: FLUX Sec. 5.1: m from 1024 to 8192 for training and prefill, 64 and 512 for decoding (Fig. 14)
LARGE_M = (1024, 2048, 4096, 8192)
SMALL_M = (64, 512)
COLUMNS = ("system", "direction", "m", "method", "variant", "best", "total_us", "gemm_us", "gemm_alone_us", "ect_us",
           "overlap_efficiency", "speedup_over_non_overlap")


def method_of(run: Run) -> Tuple[str, str]:
    """(method, variant) of a run (module doc)."""
    s = run.scheme
    if s == "sequential":
        return "non-overlap", "sequential"
    if s in ("chunked", "chunked_dma"):
        streams = run.cfg("scheme.compute_streams", 1) or 1
        return "TE", f"{s} x{run.cfg('scheme.chunks')}" + (f" s{streams}" if streams > 1 else "")
    if s == "flux_rs":
        return "FLUX", f"flux_rs {run.cfg('scheme.flux_reduce')}" + ("" if run.cfg("scheme.flux_swizzle", True)
                                                                     else " no-swizzle")
    if s == "flux_ag":
        return "FLUX", f"flux_ag {run.cfg('scheme.flux_ag_mode')}" + ("" if run.cfg("scheme.flux_swizzle", True)
                                                                      else " no-swizzle")
    return s, s


def flux_rows(runs: Sequence[Run], swizzled_only: bool = True) -> List[Dict]:
    """One row per run whose point has a ``sequential`` run (module doc), sorted by system, direction, m, method.

    ``swizzled_only``: runs with the tile swizzle switched off (the Fig. 8 study) are left out, so that FLUX's best
    is chosen among the configurations FLUX ships."""
    points: Dict[Tuple[str, str, int], List[Tuple[str, str, Run]]] = {}
    for r in runs:
        method, variant = method_of(r)
        if swizzled_only and variant.endswith("no-swizzle"):
            continue
        key = (str(r.cfg("system.name", "")), str(r.cfg("workload.direction", "gemm_rs")), r.tokens)
        points.setdefault(key, []).append((method, variant, r))
    rows = []
    sys_order = list(SYSTEMS)
    for key in sorted(points, key=lambda k: (sys_order.index(k[0]) if k[0] in sys_order else len(sys_order), k[0],
                                             list(DIRECTIONS).index(k[1]) if k[1] in DIRECTIONS else 9, k[2])):
        items = points[key]
        seq = next((r for m, _, r in items if m == "non-overlap"), None)
        if seq is None:
            continue
        g = f(seq.summary, "gemm_us")
        t_seq = f(seq.summary, "total_us")
        ect_seq = t_seq - g
        best: Dict[str, float] = {}
        for m, _, r in items:
            best[m] = min(best.get(m, math.inf), f(r.summary, "total_us"))
        for m, variant, r in sorted(items, key=lambda x: (METHODS.index(x[0]) if x[0] in METHODS else 9, x[1])):
            t = f(r.summary, "total_us")
            ect = t - g
            rows.append({"system": key[0], "direction": key[1], "m": key[2], "method": m, "variant": variant,
                         "best": t == best[m], "total_us": t, "gemm_us": f(r.summary, "gemm_us"), "gemm_alone_us": g,
                         "ect_us": ect, "overlap_efficiency": 1.0 - ect / ect_seq if ect_seq > 0 else math.nan,
                         "speedup_over_non_overlap": t_seq / t if t > 0 else math.nan})
    return rows


def best_rows(rows: Sequence[Dict]) -> List[Dict]:
    """Each method's representative row per point (the first of equal bests)."""
    seen, out = set(), []
    for r in rows:
        k = (r["system"], r["direction"], r["m"], r["method"])
        if r["best"] and k not in seen:
            seen.add(k)
            out.append(r)
    return out


def select(rows: Sequence[Dict], system: str, method: str, ms: Sequence[int],
           direction: Optional[str] = None) -> List[Dict]:
    return [r for r in best_rows(rows) if r["system"] == system and r["method"] == method and r["m"] in ms
            and (direction is None or r["direction"] == direction)]


def speedups_over(rows: Sequence[Dict], system: str, ms: Sequence[int], num: str = "TE", den: str = "FLUX",
                  direction: Optional[str] = None) -> List[float]:
    """``T_num / T_den`` per point of ``system`` at ``ms`` where both methods ran (FLUX over TE by default)."""
    by: Dict[Tuple[str, int], Dict[str, float]] = {}
    for r in best_rows(rows):
        if r["system"] == system and r["m"] in ms and (direction is None or r["direction"] == direction):
            by.setdefault((r["direction"], r["m"]), {})[r["method"]] = r["total_us"]
    return [v[num] / v[den] for v in by.values() if num in v and den in v and v[den] > 0]


def figure(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",), stem: str = "flux-op") -> List[Path]:
    """Per system: for each direction, the operation time of each method normalised to non-overlap's, split into the
    best non-split GEMM and ECT (bars), and E_overlap (lines) against m -- FLUX Figs. 11-14's quantities."""
    rows = flux_rows(runs)
    systems = list(dict.fromkeys(r["system"] for r in rows))
    plt = pyplot()
    fig, axes = plt.subplots(2 * len(systems) or 1, 2, figsize=(12, 3.2 * max(2 * len(systems), 1)), squeeze=False)
    for i, system in enumerate(systems):
        for j, direction in enumerate(DIRECTIONS):
            ax_t, ax_e = axes[2 * i + j][0], axes[2 * i + j][1]
            br = [r for r in best_rows(rows) if r["system"] == system and r["direction"] == direction]
            ms = sorted({r["m"] for r in br})
            methods = [m for m in METHODS if any(r["method"] == m for r in br)]
            n = max(len(methods), 1)
            w = 0.8 / n
            for k, m in enumerate(methods):
                xs, gemm, ect, es = [], [], [], []
                for x, mm in enumerate(ms):
                    r = next((r for r in br if r["m"] == mm and r["method"] == m), None)
                    seq = next((r for r in br if r["m"] == mm and r["method"] == "non-overlap"), None)
                    if r is None or seq is None:
                        continue
                    xs.append(x + (k - (n - 1) / 2) * w)
                    gemm.append(r["gemm_alone_us"] / seq["total_us"])
                    ect.append(r["ect_us"] / seq["total_us"])
                    es.append((x, 100 * r["overlap_efficiency"]))
                c = METHOD_COLORS.get(m, "#7f7f7f")
                ax_t.bar(xs, gemm, w, color="#dddddd", edgecolor=c, linewidth=0.8)
                ax_t.bar(xs, ect, w, bottom=gemm, color=c, label=METHOD_LABELS.get(m, m))
                if m != "non-overlap" and es:
                    ax_e.plot([x for x, _ in es], [e for _, e in es], "o-", color=c, label=METHOD_LABELS.get(m, m))
            for ax in (ax_t, ax_e):
                ax.set_xticks(range(len(ms)))
                ax.set_xticklabels([str(m) for m in ms], fontsize=7)
                ax.grid(True, axis="y", alpha=0.3)
            ax_t.set_ylabel("time / non-overlap time\n(grey: best GEMM, colour: ECT)", fontsize=7)
            ax_e.set_ylabel("overlap efficiency E (%)", fontsize=7)
            ax_e.axhline(0, color="k", lw=0.6)
            ax_e.set_ylim(bottom=max(-350, ax_e.get_ylim()[0]), top=105)
            title = f"{SYSTEMS.get(system, system)}: {DIRECTIONS[direction]} (m)"
            ax_t.set_title(title, fontsize=9)
            ax_e.set_title(title, fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=max(len(labels), 1), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return save(fig, rows, out, stem, formats, COLUMNS)
