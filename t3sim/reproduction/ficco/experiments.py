"""FiCCO's experiments as ``t3sim reproduce`` runs them (pure data; the files under ``experiments/ficco*/``)."""

from __future__ import annotations

from t3sim.reproduction.spec import Spec, set_arg

#: FiCCO's results experiments
EXPERIMENTS = ("ficco-sp", "ficco-ep", "ficco-synthetic", "ficco-scale", "ficco-char")
#: --quick: Table I g2 at a tiny scale (128 x 2048 x 512 per GPU), the baseline and the four DMA schedules, and four
#: characterization points
_FICCO_TINY = {"name": "g2", "M": 131072, "N": 16384, "K": 16384, "scale_M": 1024, "scale_K": 32}
_FICCO_QUICK = (set_arg("sweep.grid", {"workload.gemm": [_FICCO_TINY]}),
                set_arg("sweep.cases", [{"scheme.kind": "sequential"}] + [
                    {"scheme.kind": "ficco", "scheme.ficco_schedule": s} for s in
                    ("uniform_fused_1d", "hetero_fused_1d", "hetero_unfused_1d", "uniform_fused_2d")]))
SPECS = (
    Spec("ficco", "ficco-sp", "FiCCO Figs. 12(b), 13, 14 (Table I SP+TP, 8x MI300X; scaled shapes)", _FICCO_QUICK),
    Spec("ficco-ep", "ficco-ep", "FiCCO Table I EP (all-to-all + expert GEMM)", None, "experiments/ficco/ep.yaml"),
    Spec("ficco-synthetic", "ficco-synthetic", "FiCCO Sec. VI-D heuristic on 16 synthetic scenarios", None,
         "experiments/ficco/synthetic.yaml"),
    Spec("ficco-char", "ficco-char", "FiCCO Figs. 7-9 (DIL, CIL; Secs. IV-C, IV-D)", (set_arg("sweep.cases", [
        {"workload.gemm": _FICCO_TINY, **c} for c in (
            {"scheme.char_part": "gemm", "scheme.chunks": 1},
            {"scheme.char_part": "gemm", "scheme.chunks": 8, "scheme.chunk_axis": "M"},
            {"scheme.char_part": "comm", "scheme.char_comm_steps": 1},
            {"scheme.char_part": "comm", "scheme.char_comm_steps": 8})]),)),
    Spec("ficco-scale", "ficco-scale", "FiCCO scale check (g2 at 1x and 4x the scaled FLOPs)", None,
         "experiments/ficco/scale.yaml"),
)
