"""End-to-end Transformer time per layer from simulated sliced sub-layers plus analytical scaling (pure).

The paper (Sec. 2.4, Fig. 4; Sec. 5.1.2, Fig. 19) profiles MLPerf v1.1 BERT on one MI210, scales each
operation's time to the studied models' hyperparameters and TP slicing, and then scales the GEMM and RS
times of the sliced sub-layers by their simulated speedups. No hardware profile exists here, so t3sim does
the same with an explicit analytical model whose *anchor* is the simulator itself:

Simulated (Sequential, per sub-layer, results of the Fig. 16 / Fig. 19 experiments): the four sliced
GEMMs and their all-reduces -- forward OP and FC-2, backward FC-1 and IP (input-gradient GEMMs) --
each ``gemm_us`` + ``rs_us`` + ``ag_us`` (= ``total_us``).

Analytical, per Transformer layer and GPU (``T`` tokens, hidden ``H``, ``a`` heads, sequence ``S`` =
min(seq_len, T), TP degree ``t``, 2-byte elements; all assumptions, listed in ``ASSUMPTIONS``):

* other GEMMs run at the *achieved* FLOP rate of the simulated sliced GEMMs of the same pass
  (forward: OP + FC-2; backward: FC-1 + IP): forward QKV (6TH^2/t FLOPs) and FC-1 (8TH^2/t), the
  attention batched GEMMs QK^T and AV (2 x 2TSH/t); backward the OP and FC-2 input gradients
  ((2+8)TH^2/t), all four weight gradients (24TH^2/t) and the attention GEMMs' gradients (8TSH/t);
* memory-bound operations stream their bytes at the HBM peak bandwidth of the simulated system:
  the unfused attention softmax (+ dropout in training) over the ``T x S x a/t`` score tensor
  (forward 2 read/write passes, + 2 for dropout; backward 5), LayerNorm x2, residual add x2 and
  dropout x2 on ``T x H`` (replicated on every GPU under TP; forward 10 passes + 4 for dropout),
  bias+GeLU on ``T x 4H/t`` (2 passes); backward elementwise = 2x forward; the mixed-precision Adam
  update of the layer's 12H^2/t parameters (28 B per parameter read+written), training only;
* training = forward + backward + optimizer; prompt phase (inference) = forward without dropout;
* embeddings, LM head, data-parallel gradient all-reduce (overlapped with backward) and pipeline
  bubbles are left out: the per-layer fractions do not depend on the layer count ``L``.

With an overlap scheme the sequential sub-layer time (``total_us``) is replaced by the scheme's
``total_us`` for that sub-layer; everything else is unchanged (paper Sec. 5.1.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Sequence, Tuple

from t3sim.analysis.runs import Run, f

ASSUMPTIONS = (
    "Per-layer model: the layer count L cancels in every fraction and speedup; embeddings, LM head, DP gradient all-reduce and pipeline bubbles are not modelled.",
    "Sliced sub-layers (fwd OP, FC-2; bwd FC-1, IP input-gradient GEMMs, each followed by RS + AG) take their simulated Sequential times.",
    "Every other GEMM runs at the achieved FLOP rate of the simulated sliced GEMMs of the same pass (fwd: OP+FC-2, bwd: FC-1+IP).",
    "Backward GEMMs: input gradient + weight gradient per linear layer (2x forward FLOPs); attention QK^T/AV backward = 2x forward.",
    "Memory-bound ops (unfused softmax/dropout over the T x S x a/t score tensor, LayerNorm, residual, dropout, bias+GeLU, Adam) stream at the simulated system's HBM peak bandwidth; pass counts in t3sim/reproduction/t3/endtoend.py.",
    "Mixed-precision Adam: 28 B read+written per parameter (fp32 master, m, v; fp16 weight and gradient); 12 H^2 / t parameters per layer and GPU.",
    "Prompt phase = forward pass without dropout; training = forward + backward + optimizer.",
)

FWD_SLICED = ("OP", "FC-2")
BWD_SLICED = ("FC-1", "IP")
SLICED_K = {"OP": 1, "FC-2": 4, "FC-1": 4, "IP": 3}


@dataclass(frozen=True)
class LayerShape:
    hidden: int
    heads: int
    seq_len: int
    tokens: int
    tp: int
    hbm_GBps: float
    bytes_per_el: int = 2

    @property
    def S(self) -> int:
        return min(self.seq_len, self.tokens)

    def sliced_flops(self, sub: str) -> float:
        """2 M N K with M = T, N = H, K = k H / t (paper Sec. 6.1 / Fig. 5)."""
        return 2.0 * self.tokens * self.hidden * SLICED_K[sub] * self.hidden / self.tp


def shape_of(run: Run, hbm_GBps: Optional[float] = None) -> LayerShape:
    hbm = hbm_GBps or _hbm_peak(run) or run.stat("gpu0.hbm.peak_bandwidth_GBps")
    dtype = str(run.cfg("workload.dtype", "fp16"))
    return LayerShape(int(run.cfg("workload.model.hidden_size")), int(run.cfg("workload.model.attention_heads") or 1),
                      int(run.cfg("workload.model.seq_len")), run.tokens, run.tp, float(hbm),
                      {"fp16": 2, "bf16": 2, "fp32": 4, "fp8": 1}.get(dtype, 2))


def _hbm_peak(run: Run) -> float:
    """channels x bus width x 2 transfers per clock x clock (GB/s), from the resolved config."""
    h = run.cfg("system.hbm", {}) or {}
    return float(h.get("channels", 0)) * float(h.get("bus_width_B", 0)) * 2.0 * float(h.get("clock_GHz", 0))


def analytic_us(shape: LayerShape, rate_fwd: float, rate_bwd: float) -> Dict[str, float]:
    """Times (us) of everything not simulated, per layer and GPU; rates in FLOP/us."""
    T, H, S, t, b = shape.tokens, shape.hidden, shape.S, shape.tp, shape.bytes_per_el
    bw = shape.hbm_GBps * 1e3  # B/us
    E_scores = T * S * shape.heads / t
    TH, T4H = T * H, T * 4 * H / t
    out = {
        "fwd_other_gemm": (14 * T * H * H / t) / rate_fwd,
        "fwd_attn_gemm": (4 * T * S * H / t) / rate_fwd,
        "bwd_other_gemm": (34 * T * H * H / t) / rate_bwd,
        "bwd_attn_gemm": (8 * T * S * H / t) / rate_bwd,
        "fwd_attn_elem_train": 4 * b * E_scores / bw,
        "fwd_attn_elem_infer": 2 * b * E_scores / bw,
        "bwd_attn_elem": 5 * b * E_scores / bw,
        "fwd_elem_train": (14 * TH + 2 * T4H) * b / bw,
        "fwd_elem_infer": (10 * TH + 2 * T4H) * b / bw,
        "bwd_elem": 2 * (14 * TH + 2 * T4H) * b / bw,
        "optimizer": 28 * 12 * H * H / t / bw,
    }
    return out


@dataclass
class Breakdown:
    """Per-layer time split (us) of one (model, TP) in one phase."""

    model: str
    tp: int
    phase: str  # "training" | "prompt"
    sliced_gemm: float
    rs: float
    ag: float
    other_gemm: float
    attention: float  # attention GEMMs + softmax/dropout (the paper's "non-sliced attention operations")
    other: float  # everything else (elementwise, optimizer)
    sliced_total: float  # sum of the sliced sub-layers' Sequential total_us

    @property
    def total(self) -> float:
        return self.sliced_total + self.other_gemm + self.attention + self.other

    @property
    def comm_frac(self) -> float:
        return (self.rs + self.ag) / self.total

    def comm_frac_gemm_scaled(self, factor: float) -> float:
        """Communication fraction when every GEMM takes ``factor`` of its time (paper: GEMMs 2x faster)."""
        g = self.sliced_gemm + self.other_gemm
        tot = self.total - (1 - factor) * g
        return (self.rs + self.ag) / tot


Sublayers = Mapping[str, Mapping[str, Mapping]]  # sublayer -> scheme -> summary


def _rate(sub: Sublayers, names: Sequence[str], shape: LayerShape) -> float:
    flops = sum(shape.sliced_flops(s) for s in names)
    us = sum(f(sub[s]["sequential"], "gemm_us") for s in names)
    return flops / us if us > 0 else math.nan


def complete(sub: Sublayers, phase: str, schemes: Sequence[str] = ("sequential",)) -> bool:
    need = FWD_SLICED + (BWD_SLICED if phase == "training" else ())
    return all(s in sub and all(k in sub[s] for k in schemes) for s in need)


def breakdown(model: str, tp: int, sub: Sublayers, shape: LayerShape, phase: str) -> Breakdown:
    """Fig. 4 split; ``sub`` must hold Sequential summaries of the phase's sliced sub-layers."""
    names = FWD_SLICED + (BWD_SLICED if phase == "training" else ())
    rate_f = _rate(sub, FWD_SLICED, shape)
    rate_b = _rate(sub, BWD_SLICED, shape) if phase == "training" else rate_f
    a = analytic_us(shape, rate_f, rate_b)
    seq = [sub[s]["sequential"] for s in names]
    if phase == "training":
        other_gemm = a["fwd_other_gemm"] + a["bwd_other_gemm"]
        attention = a["fwd_attn_gemm"] + a["bwd_attn_gemm"] + a["fwd_attn_elem_train"] + a["bwd_attn_elem"]
        other = a["fwd_elem_train"] + a["bwd_elem"] + a["optimizer"]
    else:
        other_gemm = a["fwd_other_gemm"]
        attention = a["fwd_attn_gemm"] + a["fwd_attn_elem_infer"]
        other = a["fwd_elem_infer"]
    return Breakdown(model, tp, phase, sum(f(r, "gemm_us") for r in seq), sum(f(r, "rs_us") for r in seq),
                     sum(f(r, "ag_us") for r in seq), other_gemm, attention, other,
                     sum(f(r, "total_us") for r in seq))


def end_to_end_speedup(bd: Breakdown, sub: Sublayers, scheme: str) -> float:
    """``T_seq / T_scheme`` for the layer: each sliced sub-layer's Sequential time replaced by ``scheme``'s."""
    names = FWD_SLICED + (BWD_SLICED if bd.phase == "training" else ())
    new = bd.total - bd.sliced_total + sum(f(sub[s][scheme], "total_us") for s in names)
    return bd.total / new


def group_model_tp(runs: Sequence[Run]) -> Dict[Tuple[str, int], Dict[str, Dict[str, Mapping]]]:
    """``{(model, tp): {sublayer: {scheme: summary}}}`` and remembers one run per (model, tp) for its shape."""
    out: Dict[Tuple[str, int], Dict[str, Dict[str, Mapping]]] = {}
    for r in runs:
        out.setdefault((r.model, r.tp), {}).setdefault(r.sublayer, {})[r.scheme] = r.summary
    return out


def shapes_by_model_tp(runs: Sequence[Run]) -> Dict[Tuple[str, int], LayerShape]:
    out: Dict[Tuple[str, int], LayerShape] = {}
    for r in runs:
        if (r.model, r.tp) not in out and r.scheme == "sequential":
            out[(r.model, r.tp)] = shape_of(r)
    return out
