"""The torch half of the multi-GPU measurement scripts: versions, process group set-up, CUDA-event timing.

Imported only on the GPU host: by the worker code after :func:`multigpu_common.apply_required_env` (NCCL and
symmetric memory read the environment when they initialise), and for :func:`gemm_alone_us` by the one-GPU
scripts (this folder's ``measure_p2p_copy.py``, ``../copy_contention/measure_h200*.py``). Times are microseconds.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path
from typing import Callable, Dict, List, Optional

import torch
import torch.distributed as dist

import multigpu_common as mc

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def versions() -> Dict[str, object]:
    """Software and device facts of this process: torch, CUDA, NCCL, cuBLAS-relevant device properties, peers."""
    info: Dict[str, object] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                               "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
                               "env": {k: os.environ.get(k) for k in (*mc.REQUIRED_ENV, "NCCL_ALGO", "NCCL_PROTO",
                                                                      "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS",
                                                                      "CUDA_VISIBLE_DEVICES", "TORCH_SYMMMEM")}}
    try:
        v = torch.cuda.nccl.version()
        info["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        info["nccl"] = f"unknown ({exc})"
    n = torch.cuda.device_count()
    devs = []
    for i in range(n):
        p = torch.cuda.get_device_properties(i)
        devs.append({"index": i, "name": p.name, "capability": f"{p.major}.{p.minor}", "sms": p.multi_processor_count,
                     "memory_GiB": round(p.total_memory / 2**30, 1), "l2_bytes": getattr(p, "L2_cache_size", None)})
    info["devices"] = devs
    info["peer_access"] = {f"{a}->{b}": torch.cuda.can_device_access_peer(a, b)
                           for a in range(n) for b in range(n) if a != b}
    return info


def init_distributed() -> Dict[str, int]:
    """Set this rank's GPU (``LOCAL_RANK``) and start the NCCL process group; returns rank, world, local."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    return {"rank": dist.get_rank(), "world": dist.get_world_size(), "local": local}


def finish_worker(raw: str, mine: Dict[str, object]) -> None:
    """End a worker: write this rank's results ``mine`` (rank 0's with :func:`versions`) to its rank file of
    ``raw`` (:func:`multigpu_common.rank_path`) and destroy the process group."""
    if mine["rank"] == 0:
        mine["versions"] = versions()
    path = mc.rank_path(Path(raw), int(mine["rank"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(mine) + "\n")
    dist.destroy_process_group()


def barrier_sync(local: int) -> Callable[[], None]:
    """Before each timed run: the GPU idle, then every rank's host released by a barrier (so the runs do not
    pipeline and a rank's event interval includes its wait for the slowest rank)."""

    def sync() -> None:
        torch.cuda.synchronize()
        dist.barrier(device_ids=[local])

    return sync


def time_op(op: Callable[[], object], warmup: int, iters: int, sync: Optional[Callable[[], None]] = None) -> List[float]:
    """``iters`` CUDA-event times (us) of ``op`` on the current stream after ``warmup`` untimed runs, each run
    preceded by ``sync`` (default: a device synchronise)."""
    sync = sync or torch.cuda.synchronize
    for _ in range(warmup):
        sync()
        op()
    out = []
    for _ in range(iters):
        sync()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        op()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e3)
    torch.cuda.synchronize()
    return out


def gemm_alone_us(A: torch.Tensor, B: torch.Tensor, reps: int = 20, warmup: int = 5) -> float:
    """Median (us) of ``reps`` back-to-back ``torch.matmul(A, B)`` on the current stream, a CUDA-event pair
    around each, after ``warmup`` untimed ones and a device synchronise (no synchronise between the timed ones)."""
    for _ in range(warmup):
        torch.matmul(A, B)
    torch.cuda.synchronize()
    es = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in es:
        a.record()
        torch.matmul(A, B)
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in es)
