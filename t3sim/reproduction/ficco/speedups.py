"""FiCCO's evaluation (Secs. VI-B..VI-E, Figs. 12(b), 13, 14) from the ``ficco-sp``, ``ficco-ep`` and
``ficco-synthetic`` experiments (pure; reads results only).

Per scenario (a ``workload.gemm`` by name) and run:

* ``method`` -- ``baseline`` (``sequential``: the collective, then one GEMM), ``shard`` (``chunked_dma``: the
  shard-based overlap, PyTorch AsyncTP's decomposition), ``ficco-dma`` / ``ficco-rccl`` (scheme ``ficco``
  with ``scheme.ficco_comm``), ``variant`` the schedule;
* ``total_us`` and ``speedup`` = the baseline's ``total_us`` over the run's;
* the scenario's ``ideal`` speedup (Sec. VI-B: "operator decomposition scales linearly with no slowdowns"):
  ``(t_comm + t_GEMM) / max(t_comm, t_GEMM)`` from the baseline's two isolated phases;
* the heuristic's pick (:func:`t3sim.schemes.ficco.heuristic.pick`) for the simulated (scaled) shape and for the full one.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from t3sim.analysis.plotting import pyplot, save
from t3sim.analysis.runs import Run, f
from t3sim.schemes.ficco.heuristic import SCHEDULES, otb, pick

METHODS = ("baseline", "shard", "ficco-dma", "ficco-rccl")
COLUMNS = ("experiment", "scenario", "direction", "M", "N", "K", "sim_M", "sim_K", "otb_FLOP_per_B", "mt_GB", "method",
           "variant", "total_us", "gemm_us", "comm_us", "speedup", "ideal_speedup", "best_ficco_dma", "heuristic_pick",
           "heuristic_pick_full_shape")
SCHEDULE_LABELS = {"uniform_fused_1d": "uniform-fused-1D", "hetero_fused_1d": "hetero-fused-1D",
                   "hetero_unfused_1d": "hetero-unfused-1D", "uniform_fused_2d": "uniform-fused-2D (emulated)"}
COLORS = {"baseline": "#7f7f7f", "shard": "#ff7f0e", "ideal": "#bbbbbb", "uniform_fused_1d": "#1f77b4",
          "hetero_fused_1d": "#2ca02c", "hetero_unfused_1d": "#9467bd", "uniform_fused_2d": "#d62728"}


def method_of(run: Run) -> Optional[Tuple[str, str]]:
    """(method, variant) of a run of the FiCCO experiments, or None for another scheme."""
    s = run.scheme
    if s == "sequential":
        return "baseline", "baseline"
    if s == "chunked_dma":
        return "shard", f"chunked_dma x{run.cfg('scheme.chunks')}"
    if s == "ficco":
        return f"ficco-{run.cfg('scheme.ficco_comm', 'dma')}", str(run.cfg("scheme.ficco_schedule"))
    return None


def peak_TFLOPS(run: Run) -> float:
    """The run's GPU's peak dense fp16/bf16 rate: CUs x FLOP/cycle x clock."""
    return (float(run.cfg("system.gpu.num_cus")) * float(run.cfg("system.gpu.fp16_flops_per_cycle"))
            * float(run.cfg("system.gpu.clock_GHz")) / 1e3)


def _shape(run: Run) -> Dict[str, int]:
    g = run.cfg("workload.gemm") or {}
    sm, sk = int(g.get("scale_M", 1)), int(g.get("scale_K", 1))
    return {"M": int(g["M"]), "N": int(g["N"]), "K": int(g["K"]), "sim_M": int(g["M"]) // sm, "sim_K": int(g["K"]) // sk}


def ficco_rows(runs: Sequence[Run]) -> List[Dict]:
    """One row per FiCCO-experiment run whose scenario has a baseline run (module doc), in experiment and
    scenario order (g1, g2, ..., s1, ...)."""
    points: Dict[Tuple[str, str], List[Tuple[str, str, Run]]] = {}
    for r in runs:
        mv = method_of(r)
        if mv is None or r.cfg("workload.gemm") is None:
            continue
        g = r.cfg("workload.gemm")
        points.setdefault((str(r.cfg("name", "")), str(g["name"]), int(g.get("scale_M", 1)), int(g.get("scale_K", 1))),
                          []).append((*mv, r))
    names: Dict[Tuple[str, str], set] = {}
    for e, n, sm, sk in points:
        names.setdefault((e, n), set()).add((sm, sk))

    def order(k):
        name = k[1]
        return (k[0], name.rstrip("0123456789"), int(name[len(name.rstrip("0123456789")):] or 0), -k[2], -k[3])

    rows = []
    for key in sorted(points, key=order):
        items = points[key]
        base = next((r for m, _, r in items if m == "baseline"), None)
        if base is None:
            continue
        t_base, g_base, c_base = f(base.summary, "total_us"), f(base.summary, "gemm_us"), f(base.summary, "ag_us")
        ideal = (g_base + c_base) / max(g_base, c_base) if max(g_base, c_base) > 0 else math.nan
        sh = _shape(base)
        n_gpu = int(base.cfg("workload.tp"))
        d = str(base.cfg("workload.direction"))
        elem = 2
        scaled = pick(sh["sim_M"], sh["N"], sh["sim_K"], gpus=n_gpu, peak_TFLOPS=peak_TFLOPS(base), elem_B=elem)
        full = pick(sh["M"], sh["N"], sh["K"], gpus=n_gpu, peak_TFLOPS=peak_TFLOPS(base), elem_B=elem)
        dma = {v: f(r.summary, "total_us") for m, v, r in items if m == "ficco-dma"}
        best = min(dma, key=lambda v: (dma[v], v)) if dma else ""
        for m, v, r in sorted(items, key=lambda x: (METHODS.index(x[0]), SCHEDULES.index(x[1])
                                                    if x[1] in SCHEDULES else -1, x[1])):
            t = f(r.summary, "total_us")
            label = key[1] if len(names[key[:2]]) == 1 else f"{key[1]} /{key[2]}x{key[3]}"  # one name at several scales
            rows.append({"experiment": key[0], "scenario": label, "direction": d, **sh,
                         "otb_FLOP_per_B": otb(sh["M"], sh["N"], sh["K"], elem),
                         "mt_GB": elem * (sh["M"] * sh["K"] + sh["N"] * sh["K"] + sh["M"] * sh["N"]) / 1e9,
                         "method": m, "variant": v, "total_us": t, "gemm_us": f(r.summary, "gemm_us"),
                         "comm_us": f(r.summary, "ag_us"), "speedup": t_base / t if t > 0 else math.nan,
                         "ideal_speedup": ideal, "best_ficco_dma": best, "heuristic_pick": scaled.schedule,
                         "heuristic_pick_full_shape": full.schedule})
    return rows


def scenarios(rows: Sequence[Dict], experiment: Optional[str] = None) -> List[str]:
    return list(dict.fromkeys(r["scenario"] for r in rows if experiment is None or r["experiment"] == experiment))


def speedup(rows: Sequence[Dict], scenario: str, method: str, variant: Optional[str] = None) -> float:
    """The speedup of ``method`` (its ``variant``, or its best variant) at ``scenario``; NaN if not run."""
    v = [r["speedup"] for r in rows if r["scenario"] == scenario and r["method"] == method
         and (variant is None or r["variant"] == variant)]
    return max(v) if v else math.nan


def heuristic_accuracy(rows: Sequence[Dict], experiment: str, full_shape: bool = False) -> Tuple[float, float, int]:
    """``(share of scenarios picked right, mean loss of the picked schedule's speedup against the best one over
    the mispredicted scenarios, scenarios scored)`` among ``experiment``'s scenarios with all four dma schedules."""
    right, losses, n = 0, [], 0
    col = "heuristic_pick_full_shape" if full_shape else "heuristic_pick"
    for sc in scenarios(rows, experiment):
        rs = [r for r in rows if r["scenario"] == sc and r["experiment"] == experiment and r["method"] == "ficco-dma"]
        if {r["variant"] for r in rs} != set(SCHEDULES):
            continue
        n += 1
        best = max(rs, key=lambda r: r["speedup"])
        picked = next(r for r in rs if r["variant"] == rs[0][col])
        if picked["variant"] == best["variant"]:
            right += 1
        else:
            losses.append(1 - picked["speedup"] / best["speedup"])
    return (right / n if n else math.nan, sum(losses) / len(losses) if losses else (0.0 if n else math.nan), n)


def figure(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",), stem: str = "ficco") -> List[Path]:
    """Per experiment: every scenario's speedup over the baseline -- ideal, shard overlap, each FiCCO schedule
    (dma; rccl hatched) -- FiCCO Figs. 12(b), 13, 14's quantities; the heuristic's pick is marked with a dot."""
    rows = ficco_rows(runs)
    exps = list(dict.fromkeys(r["experiment"] for r in rows))
    plt = pyplot()
    fig, axes = plt.subplots(len(exps) or 1, 1, figsize=(18, 4.2 * max(len(exps), 1)), squeeze=False)
    for ax, e in zip((a[0] for a in axes), exps):
        scs = scenarios(rows, e)
        series = [("ideal", None, "ideal", None), ("shard", None, "shard overlap (AsyncTP)", None)]
        series += [("ficco-dma", s, SCHEDULE_LABELS[s], None) for s in SCHEDULES]
        series += [("ficco-rccl", s, SCHEDULE_LABELS[s] + " rccl", "//") for s in SCHEDULES]
        series = [s for s in series if s[0] == "ideal" or any(r["method"] == s[0] and (s[1] is None or r["variant"] == s[1])
                                                               for r in rows if r["experiment"] == e)]
        w = 0.7 / max(len(series), 1)
        top = 0.0
        for k, (m, v, label, hatch) in enumerate(series):
            xs, ys = [], []
            for x, sc in enumerate(scs):
                y = (next((r["ideal_speedup"] for r in rows if r["scenario"] == sc and r["experiment"] == e), math.nan)
                     if m == "ideal" else speedup([r for r in rows if r["experiment"] == e], sc, m, v))
                if math.isfinite(y):
                    top = max(top, y)
                    xs.append(x + (k - (len(series) - 1) / 2) * w)
                    ys.append(y)
                    pk = next((r for r in rows if r["scenario"] == sc and r["experiment"] == e), None)
                    if m == "ficco-dma" and pk and pk["heuristic_pick"] == v:
                        ax.plot(xs[-1], y + 0.03, "k.", ms=4)
            ax.bar(xs, ys, w, color=COLORS.get(v or m, "#7f7f7f"), hatch=hatch, label=label,
                   edgecolor="white" if hatch else None)
        ax.axhline(1.0, color="k", lw=0.7)
        ax.set_ylim(0, 1.6 * max(top, 1.0))  # room for the legend above the bars
        ax.set_xticks(range(len(scs)))
        ax.set_xticklabels(scs, fontsize=8)
        ax.set_ylabel("speedup over baseline\n(AG/A2A then GEMM)", fontsize=8)
        ax.set_title(f"{e}: scaled shapes (see configs); dot = heuristic's pick", fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=6, ncol=6, loc="upper right")
    fig.tight_layout()
    return save(fig, rows, out, stem, formats, COLUMNS)
