"""Every overlap scheme side by side: speedups and FLUX's overlap metrics (pure; reads results only).

For each case (model, sub-layer, TP, system) and scheme, from the runs of ``overlap-schemes`` experiments:

* ``speedup_pct`` = ``100 (T_sequential / T_scheme - 1)``;
* FLUX Sec. 2.3's **effective communication time** ``ECT = T_scheme - T_GEMM``, where ``T_GEMM`` is the best
  non-split GEMM time: the GEMM of the Sequential run of the same case, alone on the GPU;
* **overlap efficiency** ``E = 1 - ECT / ECT_sequential`` (0: no better than Sequential; 1: all communication
  hidden; negative: worse than Sequential, e.g. decomposition costs). ``ECT_sequential`` is Sequential's
  ``RS + AG``.

Scheme labels and colours come from the results (``summary.csv``'s ``scheme_label``/``scheme_color``, written
from each scheme's registration), never from a list here.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from t3sim.analysis.plotting import grouped_bars, pyplot, save
from t3sim.analysis.runs import Run, case_sort_key, f, scheme_color, scheme_name

#: short model names for crowded axes
SHORT = {"mega-gpt-2": "MG2", "t-nlg": "TNLG", "gpt-3": "GPT3", "palm": "PALM", "mt-nlg": "MTNLG"}

COLUMNS = ("system", "model", "sublayer", "tp", "scheme", "total_us", "gemm_us", "rs_us", "ag_us",
           "gemm_alone_us", "ect_us", "overlap_efficiency", "speedup_pct")


def ect_us(total_us: float, gemm_alone_us: float) -> float:
    """FLUX Sec. 2.3's effective communication time (us): the scheme's time beyond its GEMM's alone."""
    return total_us - gemm_alone_us


def overlap_efficiency(total_us: float, gemm_alone_us: float, sequential_total_us: float) -> float:
    """FLUX Sec. 2.3's overlap efficiency ``E = 1 - ECT / ECT_sequential`` (module doc); NaN when Sequential's
    ECT is not positive (nothing to hide)."""
    ect_seq = ect_us(sequential_total_us, gemm_alone_us)
    return 1.0 - ect_us(total_us, gemm_alone_us) / ect_seq if ect_seq > 0 else math.nan


def series_keys(runs: Sequence[Run]) -> List[str]:
    """Each run's series: its scheme kind, or ``kind:v1/v2`` where runs of that kind differ in ``scheme.*``
    options (FLUX's reductions in one sweep): the values of the options that vary among the kind's runs
    (options a run's config lacks, from an older schema, do not count)."""
    values: Dict[str, Dict[str, set]] = {}
    for r in runs:
        opts = values.setdefault(r.scheme, {})
        for k, v in (r.cfg("scheme") or {}).items():
            if k != "kind" and v is not None:
                opts.setdefault(k, set()).add(str(v))
    varying = {kind: sorted(k for k, vs in opts.items() if len(vs) > 1) for kind, opts in values.items()}
    return [r.scheme + (":" + "/".join(str(r.cfg(f"scheme.{k}")) for k in varying[r.scheme])
                        if varying[r.scheme] else "") for r in runs]


def _shade(color: str, i: int) -> str:
    """``color`` lightened for the ``i``-th variant of a scheme (0: unchanged)."""
    from matplotlib.colors import to_hex, to_rgb  # lazy: matplotlib is slow to import

    return to_hex(tuple(c + (1 - c) * min(0.25 * i, 0.75) for c in to_rgb(color))) if i else color


def scheme_styles(runs: Sequence[Run]) -> Dict[str, Tuple[str, str]]:
    """series -> (label, colour), as the results recorded them (kind and grey when they did not); a kind's
    variants get its label with the variant and lighter shades of its colour."""
    keys = series_keys(runs)
    out: Dict[str, Tuple[str, str]] = {}
    for key in sorted(set(keys)):
        kind, _, variant = key.partition(":")
        i = sum(1 for k in out if k.partition(":")[0] == kind)
        out[key] = ((f"{scheme_name(kind)} ({variant})" if variant else scheme_name(kind)), _shade(scheme_color(kind), i))
    return {k: out[k] for k in dict.fromkeys(keys)}


def overlap_rows(runs: Sequence[Run]) -> List[Dict]:
    """One row per (case, scheme) whose case has a Sequential run (module doc); cases in paper order."""
    cases: Dict[tuple, Dict[str, Run]] = {}
    tokens: Dict[tuple, int] = {}
    for r, name in zip(runs, series_keys(runs)):  # one case per (system, model, sub-layer, TP), at its largest size
        key = (str(r.cfg("system.name", "")), r.model, r.sublayer, r.tp)
        if r.tokens > tokens.get(key, -1):
            tokens[key], cases[key] = r.tokens, {}
        if r.tokens == tokens[key]:
            cases[key][name] = r
    rows = []
    for key in sorted(cases, key=lambda k: (k[0], *case_sort_key(k[1], k[2], k[3]))):
        by = cases[key]
        seq = by.get("sequential")
        if seq is None:
            continue
        t_seq, g = f(seq.summary, "total_us"), f(seq.summary, "gemm_us")
        for scheme, r in by.items():
            t = f(r.summary, "total_us")
            rows.append({"system": key[0], "model": key[1], "sublayer": key[2], "tp": key[3], "scheme": scheme,
                         "total_us": t, "gemm_us": f(r.summary, "gemm_us"), "rs_us": f(r.summary, "rs_us"),
                         "ag_us": f(r.summary, "ag_us"), "gemm_alone_us": g, "ect_us": ect_us(t, g),
                         "overlap_efficiency": overlap_efficiency(t, g, t_seq),
                         "speedup_pct": 100.0 * (t_seq / t - 1.0)})
    return rows


def overlap_figure(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",),
                   stem: str = "overlap-schemes") -> List[Path]:
    """Per system: speedup over Sequential and overlap efficiency E per case and scheme; CSV of every row."""
    rows = overlap_rows(runs)
    styles = scheme_styles(runs)
    systems = list(dict.fromkeys(r["system"] for r in rows))
    plt = pyplot()
    fig, axes = plt.subplots(2, len(systems), figsize=(max(7.0, 5.5 * len(systems)), 6.4), squeeze=False)
    for j, system in enumerate(systems):
        sr = [r for r in rows if r["system"] == system]
        cases = list(dict.fromkeys((r["model"], r["sublayer"], r["tp"]) for r in sr))
        schemes = [s for s in styles if s != "sequential" and any(r["scheme"] == s for r in sr)]
        groups = [f"{SHORT.get(m, m)} {s} {tp}" for m, s, tp in cases]
        for i, (col, ylabel) in enumerate((("speedup_pct", "speedup over Sequential (%)"),
                                           ("overlap_efficiency", "overlap efficiency E (FLUX)"))):
            ax = axes[i][j]
            series = {s: [next((r[col] for r in sr if (r["model"], r["sublayer"], r["tp"]) == c and r["scheme"] == s),
                               math.nan) for c in cases] for s in schemes}
            grouped_bars(ax, groups, series, {s: styles[s][1] for s in schemes}, {s: styles[s][0] for s in schemes})
            for t in ax.get_xticklabels():
                t.set_rotation(35)
                t.set_ha("right")
                t.set_rotation_mode("anchor")
            ax.axhline(0, color="k", lw=0.6)
            ax.set_ylabel(ylabel, fontsize=8)
            ax.grid(True, axis="y", alpha=0.3)
            if i == 0:
                ax.set_title(system, fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return save(fig, rows, out, stem, formats, COLUMNS)
