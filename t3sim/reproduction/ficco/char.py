"""FiCCO's characterization of inefficiencies (FiCCO Secs. IV-C, IV-D; Figs. 7-9) from the ``ficco-char``
experiment's ``ficco_char`` runs (pure; reads results only).

Per scenario (a Table I GEMM, at its scaled shape):

* GEMM DIL (Sec. IV-C1) = the GEMM as 8 or 64 chunks along M (rows) or K (columns, accumulating) back to back,
  over the GEMM whole (``ficco_char.gemm_us``);
* communication DIL (Sec. IV-C2: "we scale down collective size 8-way for eight GPU system and study resultant
  slowdown") = eight times the all-gather of 1/8 of A (one all-to-all step, run alone: ``char_pieces=first``)
  over the whole all-gather (``ficco_char.comm_us``), for copy engines (dma) and a CU-driven collective (rccl).
  Reading: the slowdown of the scaled-down collective itself, as a collective run once measures it. Also
  reported: ``steps_comm_*``, the 8 steps as FiCCO's schedules issue them (per-peer streams, a step's copy to a
  peer after the previous step's to it) over the whole, and ``comm_fixed_us_*`` = ``(8 t(A/8) - t(A)) / 7``, the
  size-independent part of one collective's time if it is ``fixed + bytes / rate``. The pipelined ratio is not a
  DIL (dma 0.60-0.86x: the wrong sign against the paper's +10 %);
* ``p2p`` (shard by shard, peer to peer) over the baseline's whole CU-driven all-gather is the shard-based
  overlap's communication slowdown (Sec. VI-B);
* CIL (Sec. IV-D) = one 8-way M shard of the GEMM beside one all-gather step (dma, rccl) or one p2p shard,
  over each alone: GEMM CIL from ``gemm_us``, communication CIL from ``comm_us``.

Trends the paper states in words are scored as signs: Spearman rank correlations, differences of geomeans, or
the mean agreement (+1 / -1 per scenario) with a stated rule.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, List, Mapping, Sequence

from t3sim.analysis.plotting import pyplot, save
from t3sim.analysis.runs import Run
from t3sim.analysis.tables import geomean
from t3sim.schemes.ficco.heuristic import mt_B, otb

#: the communication's decomposition degree: one all-to-all step per GPU of the 8-GPU system (Sec. IV-C2)
STEPS = 8

COLUMNS = ("scenario", "M", "N", "K", "sim_M", "sim_K", "otb_FLOP_per_B", "mt_GB", "a_MB", "dil_gemm_8M", "dil_gemm_64M",
           "dil_gemm_8K", "dil_gemm_64K", "dil_comm_dma", "dil_comm_rccl", "steps_comm_dma", "steps_comm_rccl",
           "comm_whole_us_dma", "comm_bound_us_dma", "comm_fixed_us_dma", "comm_fixed_us_rccl", "p2p_over_rccl_whole",
           "cil_gemm_dma", "cil_gemm_rccl", "cil_gemm_p2p", "cil_comm_dma", "cil_comm_rccl", "cil_comm_p2p")


def _key(r: Run) -> tuple:
    c = lambda k, d=None: r.cfg(f"scheme.{k}", d)  # noqa: E731
    part = c("char_part", "gemm")
    if part == "gemm":
        return ("gemm", c("chunks", 1), c("chunk_axis", "M") if c("chunks", 1) > 1 else "", c("char_pieces", "all"))
    pat = c("char_comm_pattern", "a2a")
    comm = "p2p" if pat == "p2p" else c("ficco_comm", "dma")
    return (part, comm, 1 if pat == "p2p" else c("char_comm_steps", 1), c("char_pieces", "all"))


def _link_bound_us(run: Run | None, a_MB: float) -> float:
    """The copy-engine all-gather's link bound (us): each GPU's shard of A (``a_MB``, simulated) to each of its
    N - 1 peers at the link's payload rate, ``ceil((N - 1) / engines)`` copies after one another per engine."""
    if run is None:
        return math.nan
    n = int(run.cfg("workload.tp"))
    engines = int(run.cfg("system.copy_engine.engines"))
    rate_GBps = float(run.cfg("system.interconnect.link_bandwidth_GBps"))
    return -(-(n - 1) // engines) * (a_MB * 1e6 / n) / (rate_GBps * 1e3)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation of the pairs where both are finite (ties: average ranks); NaN under 3 pairs."""
    p = [(a, b) for a, b in zip(x, y) if math.isfinite(a) and math.isfinite(b)]
    if len(p) < 3:
        return math.nan

    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    rx, ry = ranks([a for a, _ in p]), ranks([b for _, b in p])
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (sx * sy) if sx and sy else math.nan


def char_rows(runs: Sequence[Run]) -> List[Dict]:
    """One row per scenario of the ``ficco-char`` runs (module doc; NaN where a point is missing)."""
    by: Dict[str, Dict[tuple, Run]] = {}
    shapes: Dict[str, dict] = {}
    for r in runs:
        if r.scheme != "ficco_char" or r.cfg("workload.gemm") is None:
            continue
        g = r.cfg("workload.gemm")
        by.setdefault(g["name"], {})[_key(r)] = r
        shapes[g["name"]] = g

    def t(runs_, key, what) -> float:
        r = runs_.get(key)
        return float(r.stat(f"ficco_char.{what}_us", math.nan)) if r is not None else math.nan

    def ratio(a, b) -> float:
        return a / b if math.isfinite(a) and math.isfinite(b) and b > 0 else math.nan

    out = []
    for name in sorted(by, key=lambda n: (n.rstrip("0123456789"), int(n[len(n.rstrip("0123456789")):] or 0))):
        rr, g = by[name], shapes[name]
        M, N, K = int(g["M"]), int(g["N"]), int(g["K"])
        sm, sk = int(g.get("scale_M", 1)), int(g.get("scale_K", 1))
        m, k = M // sm, K // sk
        whole = t(rr, ("gemm", 1, "", "all"), "gemm")
        row = {"scenario": name, "M": M, "N": N, "K": K, "sim_M": m, "sim_K": k,
               "otb_FLOP_per_B": otb(M, N, K), "mt_GB": mt_B(M, N, K) / 1e9, "a_MB": 2 * m * k / 1e6}
        for c in (8, 64):
            for ax in ("M", "K"):
                row[f"dil_gemm_{c}{ax}"] = ratio(t(rr, ("gemm", c, ax, "all"), "gemm"), whole)
        for comm in ("dma", "rccl"):
            whole, one = t(rr, ("comm", comm, 1, "all"), "comm"), t(rr, ("comm", comm, STEPS, "first"), "comm")
            row[f"dil_comm_{comm}"] = ratio(STEPS * one, whole)
            row[f"steps_comm_{comm}"] = ratio(t(rr, ("comm", comm, STEPS, "all"), "comm"), whole)
            row[f"comm_fixed_us_{comm}"] = (STEPS * one - whole) / (STEPS - 1)
            if comm == "dma":
                row["comm_whole_us_dma"] = whole
                row["comm_bound_us_dma"] = _link_bound_us(rr.get(("comm", "dma", 1, "all")), row["a_MB"])
        row["p2p_over_rccl_whole"] = ratio(t(rr, ("comm", "p2p", 1, "all"), "comm"), t(rr, ("comm", "rccl", 1, "all"), "comm"))
        g_alone = t(rr, ("gemm", 8, "M", "first"), "gemm")
        for comm, steps in (("dma", 8), ("rccl", 8), ("p2p", 1)):
            both = rr.get(("both", comm, steps, "first"))
            gb = float(both.stat("ficco_char.gemm_us", math.nan)) if both is not None else math.nan
            cb = float(both.stat("ficco_char.comm_us", math.nan)) if both is not None else math.nan
            row[f"cil_gemm_{comm}"] = ratio(gb, g_alone)
            row[f"cil_comm_{comm}"] = ratio(cb, t(rr, ("comm", comm, steps, "first"), "comm"))
        out.append(row)
    return out


def metrics(runs: Sequence[Run]) -> Dict[str, float]:
    """The characterization's stated-number values (t3sim.reproduction.ficco.numbers; module doc for the readings)."""
    return metrics_from_rows(char_rows(runs))


def metrics_from_rows(rows: Sequence[Mapping]) -> Dict[str, float]:
    """:func:`metrics` from the characterization's rows (:func:`char_rows`, or ``ficco-char.csv`` read back)."""
    col = lambda c: [r[c] for r in rows]  # noqa: E731
    if not rows:
        return {}
    agree = []
    for r in rows:  # "row-sharding incurs higher overhead when M < K, and column-sharding when M > K" (8-way)
        a, b = r["dil_gemm_8M"], r["dil_gemm_8K"]
        if math.isfinite(a) and math.isfinite(b) and a != b:
            agree.append(1.0 if (a > b) == (r["M"] < r["K"]) else -1.0)
    d64 = [geomean(col(f"dil_gemm_64{ax}")) - geomean([r[f"dil_gemm_8{ax}"] for r in rows
                                                        if math.isfinite(r[f"dil_gemm_64{ax}"])]) for ax in ("M", "K")]
    d64 = [x for x in d64 if math.isfinite(x)]
    return {
        "shard_comm_slowdown": max([x for x in col("p2p_over_rccl_whole") if math.isfinite(x)], default=math.nan),
        "comm_dil_geomean": 100 * (geomean(col("dil_comm_dma")) - 1),
        "comm_dil_vs_size": spearman(col("dil_comm_dma"), col("a_MB")),
        "gemm_dil_64_vs_8": min(d64) if d64 else math.nan,
        "gemm_dil_row_vs_col_mk": sum(agree) / len(agree) if agree else math.nan,
        "gemm_dil_vs_otb": spearman(col("dil_gemm_8M"), col("otb_FLOP_per_B")),
        "gemm_cil_ficco": geomean(col("cil_gemm_dma")),
        "gemm_cil_shard": geomean(col("cil_gemm_p2p")),
        "comm_cil_ficco": geomean(col("cil_comm_dma")),
        "comm_cil_shard": geomean(col("cil_comm_p2p")),
        "gemm_cil_dma_vs_rccl": geomean(col("cil_gemm_dma")) - geomean(col("cil_gemm_rccl")),
        "gemm_cil_vs_mt": spearman(col("cil_gemm_dma"), col("mt_GB")),
    }


def figure(runs: Sequence[Run], out: str | Path, formats: Sequence[str] = ("png",),
           stem: str = "ficco-char") -> List[Path]:
    """FiCCO Figs. 7-9's quantities: GEMM DIL against OTB, communication DIL against A's size, CIL against MT."""
    rows = char_rows(runs)
    plt = pyplot()
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    for c, mk, lab in (("dil_gemm_8M", "o", "8-way rows (M)"), ("dil_gemm_64M", "s", "64-way rows"),
                       ("dil_gemm_8K", "^", "8-way columns (K, accumulating)"), ("dil_gemm_64K", "v", "64-way columns")):
        pts = [(r["otb_FLOP_per_B"], r[c]) for r in rows if math.isfinite(r[c])]
        ax[0].scatter([p[0] for p in pts], [p[1] for p in pts], marker=mk, label=lab, s=18)
    ax[0].set(xlabel="OTB of the Table I GEMM (FLOP/B)", ylabel="GEMM DIL (x)",
              title="GEMM DIL (Sec. IV-C1, Fig. 7)")
    for c, mk, lab in (("dil_comm_dma", "o", "dma: 8 x (1/8 size) / whole"),
                       ("dil_comm_rccl", "s", "rccl: 8 x (1/8 size) / whole"),
                       ("steps_comm_dma", "^", "dma: 8 pipelined steps / whole"),
                       ("p2p_over_rccl_whole", "x", "p2p shards / rccl whole")):
        pts = [(r["a_MB"], r[c]) for r in rows if math.isfinite(r[c])]
        ax[1].scatter([p[0] for p in pts], [p[1] for p in pts], marker=mk, label=lab, s=18)
    ax[1].set(xlabel="A (simulated, MB)", ylabel="slowdown (x)", title="Communication DIL (Sec. IV-C2, Fig. 8)")
    for c, mk, lab in (("cil_gemm_dma", "o", "GEMM beside dma step"), ("cil_gemm_rccl", "s", "GEMM beside rccl step"),
                       ("cil_gemm_p2p", "x", "GEMM beside p2p shard"), ("cil_comm_dma", "^", "dma step beside GEMM"),
                       ("cil_comm_rccl", "v", "rccl step beside GEMM"), ("cil_comm_p2p", "+", "p2p shard beside GEMM")):
        pts = [(r["mt_GB"], r[c]) for r in rows if math.isfinite(r[c])]
        ax[2].scatter([p[0] for p in pts], [p[1] for p in pts], marker=mk, label=lab, s=18)
    ax[2].set(xlabel="MT of the Table I GEMM (GB)", ylabel="CIL (x)", title="CIL (Sec. IV-D, Fig. 9)")
    for a in ax:
        if any(len(c.get_offsets()) for c in a.collections):
            a.set_xscale("log")
        a.axhline(1.0, color="k", lw=0.6)
        a.grid(True, alpha=0.3)
        a.legend(fontsize=6)
    fig.suptitle("FiCCO characterization on 8x MI300X, scaled shapes (configs/experiments/ficco-char.yaml)", fontsize=9)
    fig.tight_layout()
    return save(fig, rows, out, stem, formats, COLUMNS)
