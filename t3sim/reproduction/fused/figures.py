"""The fused GPU-initiated kernels' figures: one per operator (the paper's Figs. 8-10, 12: time normalized to the
baseline's, and the reduction against the paper's stated mean and maximum) and one per study table (Figs. 13-15)
(pure: draws the rows of :mod:`t3sim.reproduction.fused.tables`)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Mapping, Sequence

from t3sim.analysis.plotting import pyplot, save
from t3sim.reproduction.fused.numbers import BY_KEY, OPERATOR_KEYS
from t3sim.reproduction.fused.tables import COLUMNS, OCC_COLUMNS, OPERATORS, SKEW_COLUMNS


def figure(rows: Sequence[Mapping[str, object]], key: str, out: str | Path,
           formats: Sequence[str] = ("png",)) -> List[Path]:
    """Operator ``key``: baseline (compute + communication) and fused (compute part + exposed tail) time per point,
    normalized to the baseline's (labelled with it, in us), and the reduction per point against the paper's stated
    mean and maximum."""
    op = OPERATORS[key]
    rows = list(rows)
    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(max(6.0, 0.9 * len(rows) + 2), 6.5), sharex=True)
    xs = range(len(rows))
    w = 0.38

    def norm(col):  # the paper's Figs. 8-10, 12: execution time normalized to the baseline's
        return [r[col] / r["base_total_us"] for r in rows]

    ax.bar([x - w / 2 for x in xs], norm("base_compute_us"), w, color="#1f77b4", label="baseline compute")
    ax.bar([x - w / 2 for x in xs], norm("base_comm_us"), w, bottom=norm("base_compute_us"), color="#d62728",
           label="baseline collective")
    ax.bar([x + w / 2 for x in xs], norm("fused_compute_us"), w, color="#bcbd22", label="fused kernel")
    ax.bar([x + w / 2 for x in xs], norm("fused_tail_us"), w, bottom=norm("fused_compute_us"), color="#ff7f0e",
           label="fused: exposed tail")
    for x, r in zip(xs, rows):
        ax.annotate(f"{r['base_total_us']:.4g} us", (x - w / 2, 1.0), ha="center", va="bottom", fontsize=6)
    ax.set_ylabel("time / baseline time")
    ax.set_ylim(0, 1.25)
    ax.legend(fontsize=7, ncol=4, loc="upper center")
    ax.set_title(f"{op.title}; {op.stated}", fontsize=9)
    ax2.bar(list(xs), [r["reduction_pct"] for r in rows], 0.6, color="#2ca02c", label="t3sim reduction")
    kmean, kmax = OPERATOR_KEYS[key]
    ax2.axhline(float(BY_KEY[kmean].value), color="k", ls="--", lw=0.8, label="paper mean")
    ax2.axhline(float(BY_KEY[kmax].value), color="k", ls=":", lw=0.8, label="paper max")
    ax2.axhline(0, color="k", lw=0.5)
    ax2.set_ylabel("reduction (%)")
    ax2.set_xticks(list(xs))
    ax2.set_xticklabels([f"{r['point']}\n({r['group']})" for r in rows], fontsize=7, rotation=30, ha="right")
    ax2.legend(fontsize=7)
    ax2.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return save(fig, rows, out, key, formats, COLUMNS)


def table_figure(rows: Sequence[Mapping[str, object]], stem: str, out: str | Path,
                 formats: Sequence[str] = ("png",)) -> List[Path]:
    """``fused-skew``: each node's fused kernel time per batch, with and without communication-aware order (paper
    Fig. 14); ``fused-occupancy``: the fused kernel's time against its occupancy (Fig. 13); ``fused-scale``: the
    128-node iteration time, baseline and fused, per grid point (Fig. 15)."""
    rows = list(rows)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.8))
    if stem == "fused-skew":
        labels = [f"b{r['size']} t{r['tables']}\n{'aware' if r['comm_aware'] else 'oblivious'}" for r in rows]
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r["gpu0_us"] for r in rows], 0.4, color="#1f77b4", label="node 0")
        ax.bar([x + 0.2 for x in xs], [r["gpu1_us"] for r in rows], 0.4, color="#ff7f0e", label="node 1")
        for x, r in zip(xs, rows):
            ax.annotate(f"{r['skew_pct']:.1f} %", (x, max(r["gpu0_us"], r["gpu1_us"])), ha="center", va="bottom",
                        fontsize=7)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("fused kernel time (us)")
        ax.set_title("skew between nodes (label): paper ~7 % oblivious, ~1 % communication-aware", fontsize=9)
    elif stem == "fused-occupancy":
        for key in dict.fromkeys((r["size"], r["tables"]) for r in rows):
            sel = [r for r in rows if (r["size"], r["tables"]) == key]
            ax.plot([r["occupancy_pct"] for r in sel], [r["total_us"] for r in sel], "o-", label=f"b{key[0]} t{key[1]}")
        ax.set_xlabel("occupancy relative to the pooling kernel (%)")
        ax.set_ylabel("fused kernel time (us)")
        ax.set_title("paper: 25 -> 75 % occupancy -46 %, 75 -> 87.5 % +25 %", fontsize=9)
    else:
        labels = [f"{int(r['tables_per_node'])} tables\nbatch {int(r['global_batch'])}" for r in rows]
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r["baseline_us"] / 1e3 for r in rows], 0.4, color="#d62728", label="baseline")
        ax.bar([x + 0.2 for x in xs], [r["fused_us"] / 1e3 for r in rows], 0.4, color="#bcbd22", label="fused")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("iteration time per node (ms)")
        ax.set_title("DLRM on 128 nodes (8 x 16 torus): paper ~21 % lower", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    cols = {"fused-skew": SKEW_COLUMNS, "fused-occupancy": OCC_COLUMNS}.get(stem)
    return save(fig, rows, out, stem, formats, cols)
