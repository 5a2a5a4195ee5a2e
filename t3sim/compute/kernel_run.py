"""What a finished kernel on the CUs reports (:class:`GemmRun`): the GEMM kernel
(:class:`~t3sim.compute.gemm_kernel.GemmKernel`) and the program kernels
(:class:`~t3sim.compute.wg_program.ProgramKernel`) both end with one. A module of its own so that both can import it (the GEMM kernel runs its split-K reduction on a
program kernel). Times are integer ticks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List


@dataclass
class GemmRun:
    """What a finished GEMM kernel reports (ticks).

    ``wgs``, ``stages``, ``stage_wgs`` and ``stage_end_ticks`` count the kernel's main WGs (with split-K: the
    slice WGs, tiles x ``split_k``). ``split_k`` > 1: the kernel ran its K loop in that many slices and a reduction
    kernel after them; ``workspace_B`` is the size of its fp32 partial-tile workspace, ``reduce_start_tick`` the
    tick the reduction was launched (every slice WG retired and its partial tile written), ``reduce_wgs`` the
    reduction's WGs (one per output tile); ``end_tick`` is the reduction's end.
    """

    start_tick: int
    end_tick: int = -1
    stage_end_ticks: List[int] = field(default_factory=list)
    wgs: int = 0
    stages: int = 0
    stage_wgs: int = 0
    wgs_per_cu: int = 0
    occupancy_limiter: str = ""
    load_requests: int = 0
    split_k: int = 1
    workspace_B: int = 0
    reduce_start_tick: int = -1
    reduce_wgs: int = 0

    @property
    def duration_ticks(self) -> int:
        return self.end_tick - self.start_tick
