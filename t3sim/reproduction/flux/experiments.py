"""FLUX's operation-level experiments as ``t3sim reproduce`` runs them (pure data; the files under
``experiments/flux-op/``)."""

from __future__ import annotations

from t3sim.reproduction.spec import Spec, set_arg

#: FLUX's results experiments, one per node
EXPERIMENTS = ("flux-op-a100-pcie", "flux-op-a100-nvlink", "flux-op-h800")
#: --quick: the A100 NVLink node only, at m = 64 with a 2048-wide model and the non-overlapped, Transformer Engine
#: (DMA) and FLUX schemes of each direction
_FLUX_QUICK = ("workload.model.hidden_size=2048", set_arg("sweep.grid", {"workload.tokens": [64]}),
               set_arg("sweep.cases", [
    {"workload.collective": "reduce_scatter", "scheme.kind": "sequential"},
    {"workload.collective": "reduce_scatter", "scheme.kind": "chunked_dma", "scheme.chunks": 8},
    {"workload.collective": "reduce_scatter", "scheme.kind": "flux_rs", "scheme.flux_reduce": "a2a_local"},
    {"workload.direction": "ag_gemm", "workload.sublayer": "FC-1", "scheme.kind": "sequential"},
    {"workload.direction": "ag_gemm", "workload.sublayer": "FC-1", "scheme.kind": "flux_ag"}]))
SPECS = (
    Spec("flux-op", "flux-op-a100-nvlink", "FLUX Figs. 12, 14 (A100 NVLink; FLUX Sec. 5.1)", _FLUX_QUICK),
    Spec("flux-op-a100-pcie", "flux-op-a100-pcie", "FLUX Figs. 11, 14 (A100 PCIe; FLUX Sec. 5.1)", None,
         "experiments/flux-op/a100-pcie.yaml"),
    Spec("flux-op-h800", "flux-op-h800", "FLUX Figs. 13, 14 (H800 NVLink; FLUX Sec. 5.1)", None,
         "experiments/flux-op/h800.yaml"),
)
