"""Launching and host facts for the multi-GPU measurement drivers (torch-free, like :mod:`multigpu_common`).

The drivers start one ``torchrun`` per process group (:func:`launch`), each in its own process group with a
timeout, with the environment of :func:`multigpu_common.child_env`; the sidecar files record the host's
``nvidia-smi`` view (:func:`host_info`) beside the workers' software versions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from multigpu_common import REQUIRED_ENV, apply_required_env, line_buffer_c_stdout


# ----------------------------------------------------------------------------------------------- sidecar
def run_quiet(cmd: Sequence[str], timeout: float = 60.0) -> str:
    """A command's stdout (stderr appended), or a one-line note why it could not run."""
    if shutil.which(cmd[0]) is None:
        return f"({cmd[0]} not found)"
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"({' '.join(cmd)} failed: {exc})"
    return p.stdout + (p.stderr if p.returncode else "")


def host_info() -> Dict[str, str]:
    """What the host says about its GPUs without torch: ``nvidia-smi topo -m``, driver and GPU list."""
    return {"nvidia_smi_topo": run_quiet(["nvidia-smi", "topo", "-m"]),
            "nvidia_smi_gpus": run_quiet(["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total,"
                                          "clocks.max.sm,pci.bus_id", "--format=csv"]),
            "nvidia_smi_nvlink": run_quiet(["nvidia-smi", "nvlink", "--status"]),
            "required_env": json.dumps(REQUIRED_ENV)}


def gpu_count() -> int:
    """GPUs visible to this process without torch: ``CUDA_VISIBLE_DEVICES`` if set, else ``nvidia-smi -L``."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return len([d for d in vis.split(",") if d.strip()])
    out = run_quiet(["nvidia-smi", "-L"])
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def driver_gpus(requested: int, script: str) -> int:
    """The processes a driver launches: ``requested``, or when 0 every visible GPU (:func:`gpu_count`); when
    that is none, says so on stderr (as ``script``) and returns 0."""
    gpus = requested or gpu_count()
    if gpus < 1:
        print(f"{script}: no GPU found (nvidia-smi -L lists none); pass --gpus", file=sys.stderr)
    return gpus


def timing_protocol(iters: int, warmup: int) -> str:
    """The sidecar's ``protocol`` text for the torchrun workers' timing (``multigpu_torch.time_op`` after
    ``multigpu_torch.barrier_sync``, reduced by ``multigpu_common.summarize``)."""
    return (f"median over {iters} runs (after {warmup} warm-ups) of the slowest rank's CUDA-event time; "
            "each run after a device synchronise and a barrier")


def write_sidecar(path: Path, info: Mapping[str, object]) -> Path:
    """Write the environment record (software versions, topology, settings) beside a CSV as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(info, indent=1, sort_keys=True, default=str) + "\n")
    return path


# ------------------------------------------------------------------------------------------------ launching
def launch(cmd: Sequence[str], env: Mapping[str, str], log_path: Path, timeout_s: float) -> Dict[str, object]:
    """Run ``cmd`` (a ``torchrun`` of a worker) with stdout and stderr into ``log_path``, in its own process
    group, killed with its children after ``timeout_s``; returns ``rc`` (None on timeout), ``wall_s``, ``log``."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        log.write("# " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(list(cmd), env=dict(env), stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=os.setpgrp)  # its own process group: os.killpg ends its children too
        try:
            rc: Optional[int] = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    return {"rc": rc, "wall_s": round(time.monotonic() - t0, 1), "log": str(log_path)}


def torchrun(nproc: int) -> List[str]:
    """The torchrun command prefix for ``nproc`` processes on this host, with this Python."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]


# ------------------------------------------------------------------------------------------------ entry
def run_script(argv: Sequence[str], parse_args: Callable[[Sequence[str]], argparse.Namespace],
               driver: Callable[[argparse.Namespace], int], worker: Callable[[argparse.Namespace], int]) -> int:
    """A torchrun measurement script's entry: parse ``argv``, set :data:`multigpu_common.REQUIRED_ENV`, then
    run ``driver`` (which launches ``torchrun`` of the worker) or, under ``--worker``, ``worker`` with the C
    library's stdout line-buffered (NCCL's log lines stay in order with the markers Python prints). Returns
    the exit code."""
    args = parse_args(list(argv))
    apply_required_env()
    if not args.worker:
        return driver(args)
    line_buffer_c_stdout()
    return worker(args)
