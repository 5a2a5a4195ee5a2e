"""The decision map's figures: per machine, the winning scheme over (M, shape) per direction and TP (pure; reads
the CSV that ``t3sim decision-map`` writes, :data:`t3sim.analysis.decision_map.COLUMNS`).

One figure per machine: a row of panels per direction (GEMM+RS, AG+GEMM), a column per TP degree. In a panel, x is
the tokens M (log-spaced columns) and y the GEMMs of that direction in order of K (then N), each labelled with its
model, projection and whole-operator N x K. A cell's colour is its winner's (the scheme's registered colour, as the
CSV carries it); its opacity grows with the margin to the runner-up, from :data:`ALPHA_MIN` at no margin to opaque
at :data:`OPAQUE_MARGIN_PCT` and beyond, and the cell prints the margin in percent (``s``: some of its runs were
extrapolated by sampled simulation) and the winner's variant. An operation over the budget is grey and hatched with its estimated CPU-minutes;
one that no scheme ran is blank. The legend names every winner, and the footer says how the machine's preset is
grounded (:data:`t3sim.analysis.decision_map.MACHINES`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Mapping, Sequence

from t3sim.analysis import decision_map as D
from t3sim.analysis.plotting import pyplot, save_figure

#: opacity of a cell whose winner leads by nothing; the margin (%) from which a cell is opaque
ALPHA_MIN, OPAQUE_MARGIN_PCT = 0.25, 20.0
OVER_BUDGET_COLOR, FALLBACK_COLORS = "#d9d9d9", ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")


def alpha(margin_pct) -> float:
    """A cell's opacity for its winner's margin (%): :data:`ALPHA_MIN` at 0 (or no runner-up: opaque), rising
    linearly to 1 at :data:`OPAQUE_MARGIN_PCT`."""
    if margin_pct is None or (isinstance(margin_pct, float) and math.isnan(margin_pct)):
        return 1.0
    return ALPHA_MIN + (1 - ALPHA_MIN) * min(max(float(margin_pct), 0.0) / OPAQUE_MARGIN_PCT, 1.0)


def scheme_label(row: Mapping) -> str:
    """The winner's scheme name without its variant (``FLUX (flux_reduce=atomic)`` -> ``FLUX``)."""
    return str(row.get("winner_label") or row.get("winner") or "").split(" (")[0]


def _present(v) -> bool:
    return v not in (None, "") and not (isinstance(v, float) and math.isnan(v))


def colors(rows: Sequence[Mapping]) -> Dict[str, str]:
    """Each winning scheme's colour: the CSV's ``winner_color``, else one of :data:`FALLBACK_COLORS` in order."""
    out: Dict[str, str] = {}
    for r in rows:
        w = r.get("winner")
        if _present(w) and w not in out:
            c = r.get("winner_color")
            out[w] = str(c) if _present(c) else FALLBACK_COLORS[len(out) % len(FALLBACK_COLORS)]
    return out


def cell_text(row: Mapping) -> str:
    """What a cell prints: the margin (``12%``, ``-`` with no runner-up), ``s`` if sampled; the estimate when over
    the budget; nothing when no scheme ran."""
    if row.get("status") == "over_budget":
        if not _present(row.get("est_cpu_s")):
            return "over"
        minutes = float(row["est_cpu_s"]) / 60
        return f"{minutes:.0f} min" if minutes >= 10 else f"{minutes:.1f} min"
    if row.get("status") != "ok":
        return ""
    m = row.get("margin_pct")
    text = f"{float(m):.0f}%" if _present(m) else "-"
    text += " s" if _present(row.get("sampled_runs")) and int(row["sampled_runs"]) > 0 else ""
    variant = str(row.get("winner_variant") or "")
    return text + (f"\n{variant.split('=')[-1]}" if variant else "")


def _shape_rows(rows: Sequence[Mapping], direction: str) -> List[tuple]:
    keys = {(r["model"], r["projection"], int(r["N"]), int(r["K"])) for r in rows if r["direction"] == direction}
    return sorted(keys, key=lambda k: (k[3], k[2], k[0]))


def machine_figure(rows: Sequence[Mapping], preset: str, quick: bool = False):
    """The figure of one machine (module doc); ``rows``: that machine's CSV rows."""
    plt = pyplot()
    from matplotlib.patches import Patch

    m = D.machine(preset)
    tps = sorted({int(r["tp"]) for r in rows})
    dirs = [d for d in D.DIRECTIONS if any(r["direction"] == d for r in rows)]
    Ms = sorted({int(r["M"]) for r in rows})
    cmap = colors(rows)
    fig, axes = plt.subplots(len(dirs), len(tps), figsize=(2.2 + 1.05 * len(Ms) * len(tps), 1.0 + 0.55 * len(dirs) *
                             max(len(_shape_rows(rows, d)) for d in dirs) + 1.2), squeeze=False)
    for i, d in enumerate(dirs):
        shs = _shape_rows(rows, d)
        for j, tp in enumerate(tps):
            ax = axes[i][j]
            by = {(r["model"], r["projection"], int(r["M"])): r for r in rows if r["direction"] == d and int(r["tp"]) == tp}
            for y, (model, proj, N, K) in enumerate(shs):
                for x, M in enumerate(Ms):
                    r = by.get((model, proj, M))
                    if r is None:
                        continue
                    if r.get("status") == "ok":
                        ax.add_patch(plt.Rectangle((x, y), 1, 1, color=cmap[r["winner"]], alpha=alpha(r.get("margin_pct")),
                                                   lw=0))
                    elif r.get("status") == "over_budget":
                        ax.add_patch(plt.Rectangle((x, y), 1, 1, facecolor=OVER_BUDGET_COLOR, hatch="//",
                                                   edgecolor="white", lw=0))
                    ax.text(x + 0.5, y + 0.5, cell_text(r), ha="center", va="center", fontsize=6.5)
            ax.set_xlim(0, len(Ms))
            ax.set_ylim(0, len(shs))
            ax.set_xticks([x + 0.5 for x in range(len(Ms))])
            ax.set_xticklabels([str(M) for M in Ms], fontsize=7)
            ax.set_yticks([y + 0.5 for y in range(len(shs))])
            ax.set_yticklabels([f"{_model_label(mo)} {p}\nN={N} K={K}" if j == 0 else "" for mo, p, N, K in shs],
                               fontsize=6.5)
            ax.set_title(f"{D.DIRECTION_LABELS[d]}, TP={tp}", fontsize=8.5)
            if i == len(dirs) - 1:
                ax.set_xlabel("tokens M", fontsize=7.5)
    handles = [Patch(color=c, label=_winner_label(rows, w)) for w, c in cmap.items()]
    if any(r.get("status") == "over_budget" for r in rows):
        handles.append(Patch(facecolor=OVER_BUDGET_COLOR, hatch="//", edgecolor="white",
                             label="over the budget (estimated CPU-minutes)"))
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 0.88), fontsize=7, frameon=False,
               title=f"winner\n(cell: % ahead of the runner-up,\nopaque from {OPAQUE_MARGIN_PCT:.0f}%; s: sampled)",
               title_fontsize=7, alignment="left")
    fig.suptitle(f"{'Quick decision map' if quick else 'Decision map'}: {m.label} ({preset})", x=0.02, ha="left",
                 fontsize=10)
    fig.text(0.02, -0.01, _wrap(f"Preset grounding: {m.grounding} ({m.note}).", 110), fontsize=7, va="top")
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    return fig


def _model_label(key: str) -> str:
    return next((m.label for m in D.MODELS if m.key == key), key)


def _winner_label(rows: Sequence[Mapping], winner: str) -> str:
    return next((scheme_label(r) for r in rows if r.get("winner") == winner), winner)


def _wrap(text: str, width: int) -> str:
    out, line = [], ""
    for w in text.split():
        if line and len(line) + 1 + len(w) > width:
            out.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return "\n".join(out + [line])


def draw(rows: Sequence[Mapping], out: str | Path, formats: Sequence[str] = ("png",), quick: bool = False) -> List[Path]:
    """One figure per machine of ``rows``: ``decision-map[-quick]-<preset>.<fmt>`` under ``out``."""
    paths = []
    for preset in [m.preset for m in D.MACHINES if any(r["machine"] == m.preset for r in rows)]:
        fig = machine_figure([r for r in rows if r["machine"] == preset], preset, quick)
        paths += save_figure(fig, out, f"decision-map{'-quick' if quick else ''}-{preset}", formats)
    return paths
