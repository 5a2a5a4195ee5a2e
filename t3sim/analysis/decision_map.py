"""The decision map: which overlap scheme wins where -- the sweep's definition and the reading of ranked rows (pure).

**The sweep.** Every operation is one GEMM and its collective of a tensor-parallel Transformer layer (Megatron-LM's
column- and row-parallel linear layers with sequence parallelism, Korthikanti et al. 2022): the column-parallel
GEMMs (attention's fused QKV projection, the FFN's up -- fused gate+up where the FFN is gated, SwiGLU) take an
all-gathered input, **AG+GEMM** (``ag_gemm``); the row-parallel GEMMs (attention's output projection, the FFN's down
projection) reduce-scatter their partial outputs, **GEMM+RS** (``gemm_rs``). Shapes are the whole operator's
(``workload.gemm``: ``M x N x K``, M the tokens; per GPU ``M x N/tp x K`` for AG+GEMM, ``M x N x K/tp`` for GEMM+RS):

* QKV: ``N = (heads + 2 x kv_heads) x head_dim``, ``K = H``; attention output: ``N = H``, ``K = heads x head_dim``;
* FFN up: ``N = (2 if gated else 1) x FFN``, ``K = H``; FFN down: ``N = H``, ``K = FFN``.

:data:`MODELS` gives each model's dimensions with its source; a mixture-of-experts model contributes its expert FFN
only (one expert split over the TP GPUs; its M is the tokens routed to that expert, e.g. ``2/8`` of a batch's tokens
for Mixtral's top-2 of 8). Each operation runs on a machine of :data:`MACHINES` at each TP degree of :data:`TPS` the
machine has GPUs for (:func:`combinations` lists the others with the reason), in bf16, at each M of :data:`M_FULL`
(``--quick``: :data:`QUICK`).

**Sampling.** Operations with ``M >= SAMPLE_FROM_M`` ask for ``simulation.sampling.mode=waves``; a scheme whose
detailed runs the sampler refuses (the preset's GEMM library tiles the cut GEMM differently, a column-major WG
order) runs whole.

**Cost.** Every operation's simulations are costed before anything runs (:func:`run_cost_s`: CPU seconds fitted to
measured runs); :func:`over_budget` keeps the operations of the :data:`SPINE` GEMMs, then the others, each
cheapest first, while they fit the budget (:data:`BUDGET_CPU_H`), and the rest are reported, not run.

**Reading.** :func:`decide` takes the ranked rows of one operation (:func:`t3sim.analysis.advise.rank`) and gives
its winner, time, runner-up (the fastest row of another scheme: a scheme's own variants are not its rivals), the
margin ``100 (T_runner_up / T_winner - 1)`` % and the winner's binding resource; :data:`COLUMNS` is the CSV.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

GEMM_RS, AG_GEMM = "gemm_rs", "ag_gemm"
DIRECTIONS = (GEMM_RS, AG_GEMM)
DIRECTION_LABELS = {GEMM_RS: "GEMM+RS", AG_GEMM: "AG+GEMM"}
DTYPE = "bf16"
#: TP degrees tried on every machine that has that many GPUs
TPS = (2, 4, 8)
#: tokens M: decode-sized to long prefill, a factor of 4 apart
M_FULL = (64, 256, 1024, 4096, 16384, 65536)
#: operations from this M on ask for sampled simulation (``simulation.sampling.mode=waves``)
SAMPLE_FROM_M = 16384
#: the schemes tried on each operation (``t3sim advise``'s machinery tries each in every variant); left out: T3-MCA
#: (T3 with memory-controller arbitration: within 1 % of T3 in experiments/overlap-schemes, at T3's cost), the
#: ideal bounds (never ranked) and the schemes of other workloads (GEMV, embeddings, MoE all-to-all, copies)
SCHEMES = ("sequential", "concurrent", "chunked", "chunked_dma", "t3", "flux_rs", "flux_ag", "ficco")
LEFT_OUT = {
    "t3_mca": "T3 with memory-controller arbitration: within about 1 % of T3 on every overlap-schemes case, at T3's cost",
    "ideal_gemm_rs_overlap": "a bound composed from Sequential's kernels, never ranked",
    "ideal_rs_nmc": "a bound, never ranked",
}


@dataclass(frozen=True)
class ModelDims:
    """A model's layer dimensions (counts) and where they come from."""

    key: str
    label: str
    hidden: int  #: H, the model dimension
    ffn: int  #: the FFN's inner dimension (one expert's for a mixture of experts)
    heads: int
    kv_heads: int
    head_dim: int
    gated: bool  #: SwiGLU: the FFN's up projection is gate and up side by side (2 x ffn columns)
    moe: bool  #: a mixture of experts: only its expert FFN is mapped
    source: str


MODELS = (
    ModelDims("gpt-3", "GPT-3 175B", 12288, 4 * 12288, 96, 96, 128, False, False,
              "Brown et al., Language Models are Few-Shot Learners, NeurIPS 2020, Table 2.1 (GPT-3 175B: d_model "
              "12288, 96 heads of 128; d_ff = 4 d_model)"),
    ModelDims("llama-3-70b", "Llama 3 70B", 8192, 28672, 64, 8, 128, True, False,
              "Llama Team, The Llama 3 Herd of Models, 2024, Table 3 (70B: model dimension 8192, FFN dimension 28672, "
              "64 attention heads, 8 key/value heads; SwiGLU), as the Meta-Llama-3-70B model card's config gives them"),
    ModelDims("llama-3-405b", "Llama 3 405B", 16384, 53248, 128, 8, 128, True, False,
              "Llama Team, The Llama 3 Herd of Models, 2024, Table 3 (405B: model dimension 16384, FFN dimension "
              "53248, 128 attention heads, 8 key/value heads; SwiGLU)"),
    ModelDims("mixtral-8x7b", "Mixtral 8x7B expert", 4096, 14336, 32, 8, 128, True, True,
              "Jiang et al., Mixtral of Experts, 2024, Table 1 (dim 4096, hidden_dim 14336, 32 heads, 8 kv_heads, "
              "8 experts, top-2 routing; SwiGLU experts)"),
)


@dataclass(frozen=True)
class Shape:
    """One tensor-parallel GEMM of a model: whole-operator ``N`` and ``K`` (counts), its direction."""

    model: str
    model_label: str
    projection: str  #: ``QKV``, ``attention-out``, ``FFN up`` or ``FFN down``
    direction: str
    N: int
    K: int

    @property
    def label(self) -> str:
        return f"{self.model_label} {self.projection}"


def shapes(models: Sequence[ModelDims] = MODELS) -> List[Shape]:
    """Every model's GEMMs (module doc), AG+GEMM first, each direction in order of K, then N."""
    out = []
    for m in models:
        attn = m.heads * m.head_dim
        if not m.moe:
            out.append(Shape(m.key, m.label, "QKV", AG_GEMM, (m.heads + 2 * m.kv_heads) * m.head_dim, m.hidden))
            out.append(Shape(m.key, m.label, "attention-out", GEMM_RS, m.hidden, attn))
        out.append(Shape(m.key, m.label, "FFN up", AG_GEMM, (2 if m.gated else 1) * m.ffn, m.hidden))
        out.append(Shape(m.key, m.label, "FFN down", GEMM_RS, m.hidden, m.ffn))
    return sorted(out, key=lambda s: (DIRECTIONS.index(s.direction), s.K, s.N))


@dataclass(frozen=True)
class Machine:
    """A system preset of the map and how it is grounded (its preset's header and docs/validation.md)."""

    preset: str
    label: str
    gpus: int  #: the preset's ``interconnect.num_gpus``
    grounding: str  #: ``validated against measurements``, ``from sources`` or ``assumed``
    note: str  #: what the grounding rests on, in one sentence


MACHINES = (
    Machine("h200-4gpu", "4x H200 (NVSwitch)", 4, "validated against measurements",
            "the measured node (docs/validation.md): reduce-scatter 2.1 % geomean (fitted, 6 rows), cuBLAS GEMMs "
            "5.4 %, GEMM+RS sequential/concurrent/chunked 4.3 % (20 rows); FLUX, T3, FiCCO, copy-engine schemes "
            "not measured"),
    Machine("mi300x-8gpu", "8x MI300X (full mesh)", 8, "from sources",
            "FiCCO's node from AMD's CDNA 3 whitepaper, the MI300X datasheet and RCCL's tuning tables; the 256 MB "
            "Infinity Cache is not simulated; the collective's software start-up (5 us) assumed; nothing measured"),
    Machine("a100-sxm4-8gpu", "8x A100 SXM4 (NVSwitch)", 8, "from sources",
            "FLUX's A100 NVLink node from NVIDIA's A100 datasheet, CUDA, NCCL and CUTLASS; the collective start-up, "
            "CTA copy rate and copy engines assumed from the H200's measurements; nothing measured on an A100"),
    Machine("h800-8gpu", "8x H800 (NVSwitch)", 8, "from sources",
            "FLUX's H800 NVLink node from the datasheet; cuBLAS kernels measured on an H100 (5.1 % geomean, 217 "
            "rows) and the DRAM front-end latency derived from an H100 chase; the rest assumed from the H200's "
            "measurements"),
    Machine("t3-table1", "T3 Table 1 (8-GPU ring)", 8, "assumed",
            "the T3 paper's simulated system (Table 1: 80 CUs, ring of 150 GB/s links), no machine to measure; the "
            "collective start-up (5 us) assumed; sampled simulation validated here (docs/performance.md)"),
)


def machine(preset: str) -> Machine:
    for m in MACHINES:
        if m.preset == preset:
            return m
    raise KeyError(preset)


def combinations(machines: Sequence[Machine] = MACHINES, tps: Sequence[int] = TPS):
    """``(runs, skipped)``: the ``(machine, tp)`` pairs run, and ``(machine, tp, reason)`` for each left out."""
    runs, skipped = [], []
    for m in machines:
        for tp in tps:
            if tp <= m.gpus:
                runs.append((m, tp))
            else:
                skipped.append((m, tp, f"{m.preset} has {m.gpus} GPUs (interconnect.num_gpus), fewer than TP={tp}"))
    return runs, skipped


@dataclass(frozen=True)
class Op:
    """One operation of the map: a shape at ``M`` tokens on ``tp`` GPUs of a machine."""

    machine: str
    tp: int
    shape: Shape
    M: int

    @property
    def direction(self) -> str:
        return self.shape.direction

    @property
    def sampled(self) -> bool:
        """Whether it asks for sampled simulation (:data:`SAMPLE_FROM_M`)."""
        return self.M >= SAMPLE_FROM_M

    @property
    def key(self) -> Tuple:
        return (self.machine, self.tp, self.direction, self.shape.model, self.shape.projection, self.M)


#: the GEMMs the budget keeps first (one per direction, Llama 3 70B's attention; :func:`over_budget`): each panel
#: gets a row across M before the other GEMMs get their cheapest operations
SPINE = (("llama-3-70b", "attention-out"), ("llama-3-70b", "QKV"))
#: the quick map: the measured node at TP=4 and the T3 paper's ring at TP=8, the :data:`SPINE` GEMMs, a decode-sized
#: and a prefill-chunk M -- 8 operations, every one a point of the full map
QUICK = {"runs": (("h200-4gpu", 4), ("t3-table1", 8)), "shapes": SPINE, "M": (64, 1024)}


def operations(quick: bool = False) -> Tuple[List[Op], List[Tuple[Machine, int, str]]]:
    """The map's operations (machine, TP, direction, shape, M in that order) and the skipped (machine, TP) pairs
    (``quick``: :data:`QUICK`'s, which skips nothing)."""
    if quick:
        runs, skipped = [(machine(p), tp) for p, tp in QUICK["runs"]], []
        shs = [s for s in shapes() if (s.model, s.projection) in QUICK["shapes"]]
        Ms = QUICK["M"]
    else:
        runs, skipped = combinations()
        shs, Ms = shapes(), M_FULL
    ops = [Op(m.preset, tp, s, M) for m, tp in runs for d in DIRECTIONS for s in shs if s.direction == d for M in Ms]
    return ops, skipped


# ------------------------------------------------------------------------------------------------------- cost

#: the config field whose refusal a scheme's reason starts with when the sampler cannot cut its GEMM
SAMPLING_FIELD = "simulation.sampling.mode"
#: CPU-hours the full map may cost by estimate (:func:`over_budget`)
BUDGET_CPU_H = 4.0
#: CPU seconds of one simulation: per run, per GB of the GEMM's inputs (A and B once), per GB of its output and the
#: collective's bytes, per GB of tile loads through the L2 (:func:`workload_GB`). Fitted (non-negative least
#: squares on the relative error) to the CPU seconds of 8 Sequential runs on a 2-core machine -- h200-4gpu GEMM+RS at
#: M = 1024 and 4096 (three shapes) and AG+GEMM at 1024, mi300x-8gpu GEMM+RS at 64 and 4096, h800-8gpu AG+GEMM at 64
#: (Llama 3 405B's FFN up, TP=2), a100-sxm4-8gpu GEMM+RS at 256 -- each predicted within 0.58-1.25x; the per-run
#: term is the quick map's smallest runs (about 0.5-1 s each)
COST_FIT = {"run_s": 0.5, "inputs_s_per_GB": 15.2, "outputs_s_per_GB": 34.0, "loads_s_per_GB": 2.7}
#: each scheme's CPU cost relative to Sequential's on the same operation: medians over the same runs' operations
#: (a scheme not listed: 1)
SCHEME_COST = {"concurrent": 1.2, "chunked": 1.8, "chunked_dma": 1.9, "t3": 1.7, "flux_rs": 1.2, "flux_ag": 1.4,
               "ficco": 2.1}
#: schemes whose sampled runs (``simulation.sampling.mode: waves``) met the steady-state criterion with their first
#: detailed runs on every operation measured (Sequential); any other may double its runs up to ``max_detail_waves``
#: (Concurrent with the GEMM first, Chunked and T3 did: 8-12x Sequential's time)
SAMPLING_CONVERGES_FIRST = frozenset({"sequential"})


def workload_GB(direction: str, M: int, N: int, K: int, tp: int, tile: Tuple[int, int] = (256, 128),
                elem_B: int = 2) -> Tuple[float, float, float]:
    """``(inputs, outputs, loads)``, GB (1e9 B) one GPU's operation moves: its GEMM's A and B once; its C once and
    the collective's ``(tp - 1) x`` the reduced or gathered shard; the tile loads through the L2
    (``tiles_n x M x K + tiles_m x K x N`` elements, as :mod:`t3sim.system.workmeter` counts them), with a nominal
    tile ``(tile_m, tile_n)``."""
    if direction == GEMM_RS:
        gM, gN, gK, coll = M, N, K // tp, M * N // tp
    else:
        gM, gN, gK, coll = M, N // tp, K, M * K // tp
    tm, tn = tile
    loads = math.ceil(gN / tn) * gM * gK + math.ceil(gM / tm) * gK * gN
    return ((gM * gK + gK * gN) * elem_B / 1e9, (gM * gN + (tp - 1) * coll) * elem_B / 1e9, loads * elem_B / 1e9)


def run_cost_s(direction: str, M: int, N: int, K: int, tp: int, scheme: str = "sequential",
               detailed_rows: Optional[int] = None) -> float:
    """Estimated CPU seconds of one simulation of the operation under ``scheme`` (:data:`COST_FIT`,
    :data:`SCHEME_COST`); ``detailed_rows``: a sampled run's rows simulated in detail (its detailed runs together),
    which replace ``M``."""
    f = COST_FIT
    inputs, outputs, loads = workload_GB(direction, min(M, detailed_rows) if detailed_rows else M, N, K, tp)
    return SCHEME_COST.get(scheme, 1.0) * (f["run_s"] + f["inputs_s_per_GB"] * inputs
                                          + f["outputs_s_per_GB"] * outputs + f["loads_s_per_GB"] * loads)


def over_budget(costs_s: Sequence[float], budget_s: float, first: Sequence[bool] = ()) -> List[int]:
    """Indices of the operations left out so that the others fit ``budget_s``, in index order. Operations are taken
    in order -- those marked ``first`` (:data:`SPINE`'s) before the others, each group cheapest first, ties in index
    order -- and each is kept if it still fits beside those kept before it."""
    first = list(first) or [False] * len(costs_s)
    total, out = 0.0, []
    for i in sorted(range(len(costs_s)), key=lambda i: (not first[i], costs_s[i], i)):
        if total + costs_s[i] > budget_s:
            out.append(i)
        else:
            total += costs_s[i]
    return sorted(out)


# ------------------------------------------------------------------------------------------------------- reading


#: how the reason of a scheme that runs the other direction (or another workload) begins
OTHER_DIRECTION = "workload."
#: the CSV's columns, in order (times in microseconds of the simulated GPU 0, margin in percent, ``est_cpu_s`` the
#: operation's estimated CPU seconds; no measured wall time, so that the same results give the same file)
COLUMNS = ("machine", "grounding", "tp", "direction", "model", "projection", "M", "N", "K", "gemm_M", "gemm_N",
           "gemm_K", "status", "winner", "winner_variant", "winner_label", "winner_color", "winner_us", "runner_up",
           "runner_up_label", "runner_up_us", "margin_pct", "binding_resource", "sequential_us", "winner_speedup_x",
           "schemes_ranked", "sampled_runs", "not_run", "reason", "est_cpu_s")


def decide(rows: Sequence[Mapping[str, Any]], colors: Optional[Mapping[str, str]] = None,
           sampled: Iterable[Tuple[str, str]] = ()) -> Dict[str, Any]:
    """The decision of one operation from its ranked rows (:func:`t3sim.analysis.advise.rank`, fastest first).

    ``colors``: each scheme kind's colour (its registration's, as results record it); ``sampled``: the
    ``(scheme, variant)`` pairs whose results were extrapolated by sampled simulation. Returns the decision
    columns of :data:`COLUMNS`: ``status`` ``ok`` (a winner), ``no_result`` (nothing ran; ``reason`` says why);
    ``runner_up`` empty and ``margin_pct`` None when a single scheme ran; ``not_run`` lists
    ``scheme(variant):status`` of the candidates tried that did not run (not applicable, failed), but for those of
    the other direction (their reason starts with :data:`OTHER_DIRECTION`)."""
    ranked = sorted((r for r in rows if r.get("rank")), key=lambda r: r["rank"])
    tried = [r for r in rows if r.get("status") in ("not_applicable", "failed")
             and not str(r.get("reason") or "").startswith(OTHER_DIRECTION)]
    not_run = sorted({r["scheme"] + (f"({r['variant']})" if r.get("variant") else "") + f":{r['status']}"
                      for r in tried})
    out: Dict[str, Any] = {k: None for k in ("winner", "winner_variant", "winner_label", "winner_color", "winner_us",
                                             "runner_up", "runner_up_label", "runner_up_us", "margin_pct",
                                             "binding_resource", "sequential_us", "winner_speedup_x")}
    out.update(status="no_result", schemes_ranked=len(ranked), not_run=";".join(not_run), reason="",
               sampled_runs=len({(s, v) for s, v in sampled} & {(r["scheme"], r["variant"] or "") for r in ranked}))
    if not ranked:
        reasons = sorted({r.get("reason") or "" for r in tried} - {""})
        out["reason"] = reasons[0] if len(reasons) == 1 else f"no scheme ran ({len(tried)} not run)"
        return out
    w = ranked[0]
    out.update(status="ok", winner=w["scheme"], winner_variant=w["variant"] or "", winner_label=w["label"],
               winner_color=(colors or {}).get(w["scheme"], ""), winner_us=float(w["total_us"]),
               binding_resource=w.get("binding_resource") or "")
    rival = next((r for r in ranked[1:] if r["scheme"] != w["scheme"]), None)
    if rival is not None:
        out.update(runner_up=rival["scheme"], runner_up_label=rival["label"], runner_up_us=float(rival["total_us"]),
                   margin_pct=100.0 * (float(rival["total_us"]) / float(w["total_us"]) - 1.0))
    else:
        out["runner_up"] = out["runner_up_label"] = ""
    seq = next((r for r in ranked if r["scheme"] == "sequential"), None)
    if seq is not None:
        out.update(sequential_us=float(seq["total_us"]), winner_speedup_x=float(seq["total_us"]) / float(w["total_us"]))
    return out


def op_columns(op: Op, gemm: Tuple[int, int, int]) -> Dict[str, Any]:
    """The identifying columns of :data:`COLUMNS` for ``op`` (``gemm``: one GPU's M, N, K)."""
    m = machine(op.machine)
    return {"machine": op.machine, "grounding": m.grounding, "tp": op.tp, "direction": op.direction,
            "model": op.shape.model, "projection": op.shape.projection, "M": op.M, "N": op.shape.N, "K": op.shape.K,
            "gemm_M": gemm[0], "gemm_N": gemm[1], "gemm_K": gemm[2]}
