"""The fused GPU-initiated kernels' experiments as ``t3sim reproduce`` runs them (pure data; the files under
``experiments/fused-*/``). Their results experiments: :data:`t3sim.reproduction.fused.tables.EXPERIMENTS`."""

from __future__ import annotations

from t3sim.reproduction.spec import Spec, set_arg

#: --quick: one tiny point per operator (a 1k x 1k GEMV, global batch 128 at 2 tables, a 2048 x 256 x 256 MoE GEMM:
#: its smallest M, one 128-row tile per GPU and destination), the skew and occupancy points at that batch
_EMB_TINY = ("workload.embedding_bag.tables_per_gpu=2", "workload.embedding_bag.global_batch=128")
_EMB_QUICK = _EMB_TINY + (set_arg("sweep.grid", {"scheme.kind": ["emb_a2a", "fused_emb_a2a"]}),)
_SKEW_QUICK = _EMB_TINY + (set_arg("sweep.grid", {"scheme.fused_comm_aware": [True, False]}),)
_PAPER = "Fused GPU-initiated kernels"
SPECS = (
    Spec("fused-gemv", "fused-gemv", f"{_PAPER} Fig. 9 (GEMV + AllReduce, 4 MI210; Sec. IV-B)",
         (set_arg("sweep.cases", [{"workload.gemv.name": "quick.1k", "workload.gemv.model": "quick",
                                   "workload.gemv.M": 1024, "workload.gemv.K": 1024}]),)),
    Spec("fused-emb-a2a", "fused-a2a", f"{_PAPER} Fig. 8 (embedding + All-to-All, 4 MI210; Sec. IV-B; 256 tables per "
         "GPU, the baseline sampled by tables)", _EMB_QUICK),
    Spec("fused-gemm-a2a", "fused-gemm-a2a", f"{_PAPER} Fig. 10 (MoE GEMM + All-to-All, 4 MI210; Sec. IV-B)",
         (set_arg("sweep.cases", [{"workload.gemm.name": "quick", "workload.gemm.M": 2048, "workload.gemm.N": 256,
                                   "workload.gemm.K": 256}]),)),
    Spec("fused-emb-a2a-2node", "fused-a2a-2node", f"{_PAPER} Fig. 12 (embedding + All-to-All, 2 nodes; Sec. IV-C; "
         "256 tables per GPU, the baseline sampled by tables)", _EMB_QUICK),
    Spec("fused-skew", "fused-skew", f"{_PAPER} Fig. 14 (skew, communication-aware order; Sec. IV-C)", _SKEW_QUICK),
    Spec("fused-occupancy", "fused-occupancy", f"{_PAPER} Fig. 13 (fused kernel time vs occupancy; Sec. IV-C)",
         _EMB_TINY + (set_arg("sweep.grid", {"scheme.fused_library_registers_per_thread": [16, 33, 41, 137]}),)),
)
