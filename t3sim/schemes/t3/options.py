"""Options of T3 (paper Secs. 4-5): T3 and T3-MCA take none (the system config holds the tracker, DMA and
memory-controller parameters). Pure: config models only."""

from __future__ import annotations

from t3sim.config.scheme import family, scheme_kind

FAMILY = "t3"
family(FAMILY, "T3: the GEMM fused with its reduce-scatter through tracker-triggered DMA and near-memory reductions "
               "(paper Secs. 4.1-4.5)")
scheme_kind("t3", family=FAMILY, module=f"{__package__}.t3")
scheme_kind("t3_mca", family=FAMILY, module=f"{__package__}.t3")
