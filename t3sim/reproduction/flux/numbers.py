"""Every operation-level number the FLUX paper (Chang et al. 2024) states in its text (pure data), and t3sim's.

Sources: the abstract, Sec. 5.1 (Figs. 11-14) and Sec. 6. The figures survive only as captions, so only these
stated numbers can be compared. :data:`READINGS` says how the text is read where it is not explicit.

Out of scope (no t3sim value): Fig. 15 (TP=16 over two nodes: t3sim models no NIC or inter-node network yet)
and the model-level results of Sec. 5.2 (128-GPU Megatron-LM training, vLLM prefill and decoding: t3sim's
end-to-end model covers the T3 paper's Transformers, not pipeline-parallel training or vLLM serving).
"""

from __future__ import annotations

import math
from typing import Dict, List, Mapping, Sequence

from t3sim.analysis.runs import Run
from t3sim.reproduction.flux.op import LARGE_M, SMALL_M, flux_rows, select, speedups_over
from t3sim.reproduction.stated import PaperNumber, lo_hi

#: how the stated numbers are read (shown with the table in REPRODUCTION.md)
READINGS = (
    "Stated ranges (\"1.20x to 3.25x\") are compared end by end: the smallest and the largest value t3sim gives over "
    "the same set of points.",
    "\"m from 1024 to 8192\" (Sec. 5.1, Figs. 11-13) = m in {1024, 2048, 4096, 8192}, GEMM+RS and AG+GEMM pooled; "
    "\"much smaller m as 64 and 512\" (Fig. 14) = m in {64, 512}, both directions.",
    "Sec. 6's averages (\"40%, 63% and 72% average overlap efficiency\") = the mean over the Sec. 5.1 points "
    "(m = 1024-8192, both directions), the figures they summarise (an assumption: the text does not say).",
    "\"up to 96%\" (abstract) = the largest FLUX E over every operation-level point of the three nodes.",
    "FLUX and Transformer Engine are each represented at a point by their fastest configuration (the paper reports TE's "
    "best configuration and autotunes FLUX): t3sim/reproduction/flux/op.py. FLUX's atomic reduction is not run: no "
    "bf16 atomics on A100/H800 (FLUX footnote 5).",
    "Out of scope (no t3sim value): Fig. 15 (TP=16 over two nodes: t3sim models no NIC or inter-node network yet) and "
    "the model-level results of Sec. 5.2 (128-GPU Megatron-LM training, vLLM prefill and decoding: t3sim's end-to-end "
    "model covers the T3 paper's Transformers, not pipeline-parallel training or vLLM serving).",
)

P = PaperNumber
_PCIE, _NVL, _H800 = "a100-pcie-8gpu", "a100-sxm4-8gpu", "h800-8gpu"
_TAG = {_PCIE: "pcie", _NVL: "nvlink", _H800: "h800"}

_S51_X = ("Flux can deliver 1.20x to 3.25x speedups on A100 PCIe, 1.01x to 1.33x speedups on A100 NVLink, and 1.10x "
          "to 1.51x speedups on H800 NVLink over TransformerEngine")
_S51_F = "Flux can deliver 41% to 57% on A100 PCIe, 36% to 96% on A100 NVLink, and 37% to 93% on H800 NVLink"
_S51_T = "TransformerEngine has -125% to 36% on A100 PCIe, -99% to 74% on A100 NVLink, and -40% to 80% on H800 NVLink"
_F14_X = ("Flux can deliver 1.45x to 3.21x speedups on A100 PCIe, 1.33x to 4.68x speedups on A100 NVLink, and a 0.95x "
          "slowdown to a 1.03 speedup on H800 NVLink over TransformerEngine")
_F14_F = "Flux delivers -2% to 41% on A100 PCIe, 14% to 88% on A100 NVLink, and -165% to -82% on H800 NVLink"
_F14_T = "TransformerEngine has -213% to -36% on A100 PCIe, -325% to -49% on A100 NVLink, and -142% to -93% on H800 NVLink"
_S6_AVG = ("Flux can deliver 40%, 63% and 72% average overlap efficiency on A100 PCIe, A100 NVLink, and H800 NVLink "
           "clusters, respectively, while TransformerEngine only delivers -67%, -61%, and 20%")


def _pair(prefix: str, sec: str, quote: str, lo: float, hi: float, kind: str, fig: str) -> List[PaperNumber]:
    return [P(f"{prefix}_lo", sec, quote, lo, kind, fig), P(f"{prefix}_hi", sec, quote, hi, kind, fig)]


NUMBERS: List[PaperNumber] = [
    P("flux_e_max", "abstract", "Flux can potentially overlap up to 96% of communication given a fused kernel", 96, "pct",
      "figs11-14"),
]
for _sys, _fig, (xl, xh), (fl, fh), (tl, th), (sxl, sxh), (sfl, sfh), (stl, sth), favg, tavg in (
        (_PCIE, "fig11", (1.20, 3.25), (41, 57), (-125, 36), (1.45, 3.21), (-2, 41), (-213, -36), 40, -67),
        (_NVL, "fig12", (1.01, 1.33), (36, 96), (-99, 74), (1.33, 4.68), (14, 88), (-325, -49), 63, -61),
        (_H800, "fig13", (1.10, 1.51), (37, 93), (-40, 80), (0.95, 1.03), (-165, -82), (-142, -93), 72, 20)):
    t = _TAG[_sys]
    NUMBERS += _pair(f"flux_over_te_{t}", "5.1", _S51_X, xl, xh, "speedup_x", _fig)
    NUMBERS += _pair(f"flux_e_{t}", "5.1", _S51_F, fl, fh, "pct", _fig)
    NUMBERS += _pair(f"te_e_{t}", "5.1", _S51_T, tl, th, "pct", _fig)
    NUMBERS += _pair(f"small_flux_over_te_{t}", "5.1", _F14_X, sxl, sxh, "speedup_x", "fig14")
    NUMBERS += _pair(f"small_flux_e_{t}", "5.1", _F14_F, sfl, sfh, "pct", "fig14")
    NUMBERS += _pair(f"small_te_e_{t}", "5.1", _F14_T, stl, sth, "pct", "fig14")
    NUMBERS += [P(f"avg_flux_e_{t}", "6", _S6_AVG, favg, "pct", _fig), P(f"avg_te_e_{t}", "6", _S6_AVG, tavg, "pct", _fig)]
NUMBERS += [
    P("h800_rs64_flux_over_te", "6", "except a 0.95x slowdown case of ReduceScatter with m as 64 on H800 NVLink", 0.95,
      "speedup_x", "fig14"),
    P("small_flux_over_te_min", "6", "When m is small (less than or equal to 1024), Flux outperforms TransformerEngine "
      "significantly by 1.03x to 4.68x speedups, except a 0.95x slowdown case", 1.03, "speedup_x", "fig14"),
    P("small_flux_over_te_max", "6", "When m is small (less than or equal to 1024), Flux outperforms TransformerEngine "
      "significantly by 1.03x to 4.68x speedups, except a 0.95x slowdown case", 4.68, "speedup_x", "fig14"),
]
if len({n.key for n in NUMBERS}) != len(NUMBERS):
    raise RuntimeError("duplicate FLUX paper-number key")


def _mean(vals: Sequence[float]) -> float:
    v = [x for x in vals if math.isfinite(x)]
    return sum(v) / len(v) if v else math.nan


def metrics(runs: Sequence[Run]) -> Dict[str, float]:
    """``{key: t3sim value}`` from the flux-op runs of every node present (NaN where a node has no results).
    Efficiencies are in percent, speedups as ratios (module doc for the readings)."""
    return metrics_from_rows(flux_rows(runs))


def metrics_from_tables(tabs: Mapping[str, Sequence[Mapping]]) -> Dict[str, float]:
    """:func:`metrics` from the table ``flux-op`` (``flux-op.csv``: :func:`~t3sim.reproduction.flux.op.flux_rows`, one
    row per run, as ``t3sim reproduce`` writes it into ``figures/``; NaN where it is missing): the same values to
    the table's six significant digits."""
    return metrics_from_rows(tabs.get("flux-op", []))


def metrics_from_rows(rows: Sequence[Mapping]) -> Dict[str, float]:
    """:func:`metrics` from :func:`~t3sim.reproduction.flux.op.flux_rows`' rows (or the same rows read back from
    ``flux-op.csv``)."""
    out: Dict[str, float] = {}
    e_all = []
    for sysname, t in _TAG.items():
        for pre, ms in (("", LARGE_M), ("small_", SMALL_M)):
            out[f"{pre}flux_over_te_{t}_lo"], out[f"{pre}flux_over_te_{t}_hi"] = lo_hi(speedups_over(rows, sysname, ms))
            for meth, name in (("FLUX", "flux_e"), ("TE", "te_e")):
                e = [100 * r["overlap_efficiency"] for r in select(rows, sysname, meth, ms)]
                out[f"{pre}{name}_{t}_lo"], out[f"{pre}{name}_{t}_hi"] = lo_hi(e)
                if meth == "FLUX":
                    e_all += e
                if not pre:
                    out[f"avg_{name}_{t}"] = _mean(e)
    out["flux_e_max"] = lo_hi(e_all)[1]
    rs64 = speedups_over(rows, _H800, (64,), direction="gemm_rs")
    out["h800_rs64_flux_over_te"] = rs64[0] if rs64 else math.nan
    small = [x for s in _TAG for x in speedups_over(rows, s, (64, 512, 1024))]
    excl = [x for x in small if not (rs64 and x == rs64[0])]
    out["small_flux_over_te_min"], out["small_flux_over_te_max"] = lo_hi(excl)
    return out

