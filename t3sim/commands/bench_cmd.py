"""``t3sim bench``: simulator speed on fixed cases.

::

    t3sim bench [--quick | --schemes] [--json] [--case NAME ...] [--list] [--write [FILE]]

For each case, in a fresh Python process (so peak memory is the case's own): wall-clock
seconds of the simulation (after a numba warm-up, which is excluded) and the CPU seconds it took (user and
system, from ``getrusage``: system time is the kernel's, mostly page faults on first-touched arrays, and on a virtual machine it
swings with the host's memory state; a wall time far above user + system is CPU contention; not given for a
sweep, whose workers the fork server starts), simulated time,
slowdown (wall / simulated), DRAM requests per wall-clock second (column accesses of hbm.access_size_B of
every simulated GPU's HBM), simpy events per wall-clock second, and peak resident memory
of the process (``ru_maxrss``, which includes the interpreter and imports, ~0.2 GB).
Benchmarks measure; they assert nothing. ``--write`` puts the table of the cases just measured, with the
machine and the commit, into ``docs/performance.md`` (:mod:`t3sim.commands.bench_table`).

``--schemes`` runs the scheme set (:data:`SCHEME_SET`): one small case (seconds, not minutes) per
registered scheme, per FiCCO schedule and per FiCCO communication kind; a test fails if a scheme,
schedule or kind has none (``tests/test_bench_cmd.py``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

from t3sim.commands import bench_table, cli_argv
from t3sim.errors import InputError

_DEFAULT = "configs/experiments/default.yaml"
_TP16 = ["workload.tp=16", "system.interconnect.num_gpus=16"]
SCHEMES = ("sequential", "t3", "t3_mca", "ideal_gemm_rs_overlap", "ideal_rs_nmc")

#: name -> (kind, arguments, description). ``quick`` cases are the ``--quick`` set.
CASES: Dict[str, dict] = {
    "hbm-stream": dict(kind="memtest", pattern="stream-read", requests=2_000_000,
                       what="HBM stream-read microbenchmark, 2M requests (benchmarks/bench_memtest.py)"),
    "hbm-stream-quick": dict(kind="memtest", pattern="stream-read", requests=200_000, quick=True,
                             what="HBM stream-read microbenchmark, 200k requests"),
    "fc2-tp8-256": dict(kind="experiment", config=_DEFAULT, overrides=["workload.tokens=256"], quick=True,
                        what="T-NLG FC-2 TP=8 Sequential, 256 tokens"),
    "fc2-tp8-1k": dict(kind="experiment", config=_DEFAULT, overrides=["workload.tokens=1024"],
                       what="T-NLG FC-2 TP=8 Sequential, 1024 tokens"),
    "fc2-tp8-2k": dict(kind="experiment", config=_DEFAULT, overrides=["workload.tokens=2048"],
                       what="T-NLG FC-2 TP=8 Sequential, 2048 tokens (2x fc2-tp8-1k: cost growth)"),
    "fc2-tp8-4k": dict(kind="experiment", config=_DEFAULT, overrides=["workload.tokens=4096"],
                       what="T-NLG FC-2 TP=8 Sequential, 4096 tokens (4x fc2-tp8-1k: cost growth)"),
    "fc2-tp8-mca-1k": dict(kind="experiment", config=_DEFAULT, overrides=["workload.tokens=1024", "scheme.kind=t3_mca"],
                           what="T-NLG FC-2 TP=8 T3-MCA, 1024 tokens"),
    "op-tp8-2k": dict(kind="experiment", config=_DEFAULT, overrides=["workload.sublayer=OP", "workload.tokens=2048"],
                      what="T-NLG OP TP=8 Sequential, 2048 tokens (the memory-path profiling run)"),
    "fc2-tp8": dict(kind="experiment", config=_DEFAULT, overrides=[],
                    what="T-NLG FC-2 TP=8 Sequential sub-layer (configs/experiments/default.yaml)"),
    "fc2-tp8-x2": dict(kind="experiment", config=_DEFAULT, overrides=["workload.tokens=16384"],
                       what="T-NLG FC-2 TP=8 Sequential at 2x the tokens (16384)"),
    "fc2-tp8-x4": dict(kind="experiment", config=_DEFAULT, overrides=["workload.tokens=32768"],
                       what="T-NLG FC-2 TP=8 Sequential at 4x the tokens (32768)"),
    "tp16-256-homogeneous": dict(kind="experiment", config=_DEFAULT,
                                 overrides=_TP16 + ["workload.tokens=256", "simulation.mode=homogeneous"], quick=True,
                                 what="T-NLG FC-2 TP=16 on 16 GPUs, 256 tokens, homogeneous"),
    "tp16-256-explicit": dict(kind="experiment", config=_DEFAULT,
                              overrides=_TP16 + ["workload.tokens=256", "simulation.mode=explicit"],
                              what="T-NLG FC-2 TP=16 on 16 GPUs, 256 tokens, explicit (every GPU simulated)"),
    "gemm-1m-sampled": dict(kind="experiment", config="configs/experiments/sampled-1m-gemm.yaml", overrides=[],
                            what="FiCCO Table I g12: a 1M x 57K x 8K all-gather + GEMM (TP 8) on the Table 1 system, "
                                 "sampled (simulation.sampling.mode waves)"),
    "fig16-1k": dict(kind="sweep", config="configs/experiments/t3-sublayers.yaml", overrides=["workload.tokens=1024"],
                     jobs=2, what="the 80 Fig. 16 points (16 sub-layers x 5 schemes) at 1024 tokens, t3sim run -j 2"),
    "fig16": dict(kind="sweep", config="configs/experiments/t3-sublayers.yaml", overrides=[], jobs=2,
                  what="the 80 full-size Fig. 16 points (16 sub-layers x 5 schemes), t3sim run -j 2"),
    "copy-op-1gpu": dict(kind="experiment", config="configs/experiments/copy-contention.yaml",
                         overrides=["sweep.cases=[]", "sweep.grid={}", "workload.sublayer=OP", "scheme.copy_streams=1"],
                         what="Mega-GPT-2 OP TP=8 GEMM on one H200 beside one stream of 256 MiB SM copies (scheme copy)"),
    "flux-op-h200-2k": dict(kind="experiment", config="configs/experiments/overlap-schemes-h200.yaml",
                            overrides=["sweep.cases=[]", "sweep.grid={}", "workload.sublayer=OP", "workload.tokens=2048",
                                       "scheme.kind=flux_rs"],
                            what="Mega-GPT-2 OP TP=4 on 4 H200s, 2048 tokens, flux_rs (atomic reduction, homogeneous)"),
    **{f"{kind.replace('_', '-')}-op-h200-2k": dict(
        kind="experiment", config="configs/experiments/overlap-schemes-h200.yaml",
        overrides=["sweep.cases=[]", "sweep.grid={}", "workload.sublayer=OP", "workload.tokens=2048",
                   f"scheme.kind={kind}"],
        what=f"Mega-GPT-2 OP TP=4 on 4 H200s, 2048 tokens, {kind} (homogeneous)")
       for kind in ("concurrent", "chunked", "chunked_dma")},
    **{f"{name}-ag-fc1-h200-1k": dict(
        kind="experiment", config="configs/experiments/overlap-schemes-h200.yaml",
        overrides=["sweep.cases=[]", "sweep.grid={}", "workload.sublayer=FC-1", "workload.tokens=1024",
                   "workload.direction=ag_gemm", *extra],
        what=f"Mega-GPT-2 FC-1 consumer GEMM (AG direction) TP=4 on 4 H200s, 1024 tokens, {what}")
       for name, extra, what in (
           ("flux", ["simulation.mode=explicit", "scheme.kind=flux_ag"], "flux_ag (push, explicit)"),
           ("chunked-dma", ["scheme.kind=chunked_dma", "scheme.chunks=4"],
            "chunked_dma (one step per shard, copy-engine pushes, homogeneous)"),
           ("ficco", ["scheme.kind=ficco", "scheme.ficco_schedule=uniform_fused_1d"],
            "ficco uniform_fused_1d (all-to-all copy-engine steps, gather/GEMM/scatter, homogeneous)"),
           ("ficco-char", ["scheme.kind=ficco_char", "scheme.char_part=both", "scheme.chunks=4",
                           "scheme.char_comm_steps=4", "scheme.char_pieces=first"],
            "ficco_char: one M/4 GEMM shard beside one of 4 all-to-all copy-engine steps (CIL unit, homogeneous)"))},
    **{f"{name}-gpt3-fc2-mi210": dict(
        kind="experiment", config="configs/experiments/fused-gemv.yaml",
        overrides=["sweep.cases=[]", "sweep.grid={}", "workload.gemv.name=gpt-3.FC-2", "workload.gemv.M=12288",
                   "workload.gemv.K=49152", f"scheme.kind={kind}"],
        what=f"GPT-3 FC-2 decode GEMV (M = 12288, K/4 = 12288, 302 MB of W) + all-reduce on 4 MI210 (full mesh), {what}")
       for name, kind, what in (("gemv-ar", "gemv_ar", "gemv_ar: GEMV kernel, then the direct all-reduce (homogeneous)"),
                                ("fused-gemv-ar", "fused_gemv_ar",
                                 "fused_gemv_ar: persistent WGs, flags, owner reduce + broadcast (homogeneous)"))},
    **{f"{name}-b256-t16-mi210": dict(
        kind="experiment", config="configs/experiments/fused-a2a.yaml",
        overrides=["sweep.grid={}", "workload.embedding_bag.global_batch=256", "workload.embedding_bag.tables_per_gpu=16",
                   f"scheme.kind={kind}"],
        what=f"DLRM embedding-bag (batch 256, 16 tables/GPU, dim 256, pooling 10) + all-to-all on 4 MI210, {what}")
       for name, kind, what in (("emb-a2a", "emb_a2a", "emb_a2a: per-table pooling kernels, then the all-to-all"),
                                ("fused-emb-a2a", "fused_emb_a2a",
                                 "fused_emb_a2a: persistent WGs, zero-copy stores, slice flags (homogeneous)"))},
    **{f"{name}-b256-t16-mi210-2node": dict(
        kind="experiment", config="configs/experiments/fused-a2a-2node.yaml",
        overrides=["sweep.grid={}", "workload.embedding_bag.global_batch=256", "workload.embedding_bag.tables_per_gpu=16",
                   f"scheme.kind={kind}"],
        what=f"DLRM embedding-bag (batch 256, 16 tables/GPU, dim 256, pooling 10) + all-to-all on 2 MI210 nodes over "
             f"20 GB/s NICs, {what}")
       for name, kind, what in (("emb-a2a", "emb_a2a", "emb_a2a: per-table pooling kernels, then the all-to-all "
                                 "through the NICs"),
                                ("fused-emb-a2a", "fused_emb_a2a",
                                 "fused_emb_a2a: persistent WGs, slices put through the NIC, flags (homogeneous)"))},
    **{f"{name}-tutel-b2-mi210": dict(
        kind="experiment", config="configs/experiments/fused-gemm-a2a.yaml",
        overrides=["sweep.cases=[]", "sweep.grid={}", "workload.gemm.name=tutel-b2", "workload.gemm.M=8192",
                   f"scheme.kind={kind}"],
        what=f"MoE combine GEMM 2048 x 2048 x 2048 per GPU (Tutel helloworld, batch 2) + all-to-all on 4 MI210, {what}")
       for name, kind, what in (("gemm-a2a", "gemm_a2a", "gemm_a2a: expert GEMM, then the all-to-all"),
                                ("fused-gemm-a2a", "fused_gemm_a2a",
                                 "fused_gemm_a2a: tiles stored to their tokens' GPUs, slice flags (homogeneous)"))},
    # small cases of the scheme set (SCHEME_SET): seconds each
    "copy-op-1gpu-1k": dict(kind="experiment", config="configs/experiments/copy-contention.yaml",
                            overrides=["sweep.cases=[]", "sweep.grid={}", "workload.sublayer=OP", "workload.tokens=1024",
                                       "scheme.copy_streams=1", "scheme.copy_size_MiB=16"],
                            what="Mega-GPT-2 OP TP=8 GEMM, 1024 tokens, on one H200 beside one stream of 16 MiB SM copies"),
    **{f"{name}-mgpt2-op-mi210": dict(
        kind="experiment", config="configs/experiments/fused-gemv.yaml",
        overrides=["sweep.cases=[]", "sweep.grid={}", f"scheme.kind={kind}"],
        what=f"Mega-GPT-2 OP decode GEMV (M = 3072, K/4 = 768) + all-reduce on 4 MI210 (full mesh), {kind} (homogeneous)")
       for name, kind in (("gemv-ar", "gemv_ar"), ("fused-gemv-ar", "fused_gemv_ar"))},
    **{f"{name}-b256-t4-mi210": dict(
        kind="experiment", config="configs/experiments/fused-a2a.yaml",
        overrides=["sweep.grid={}", "workload.embedding_bag.global_batch=256", "workload.embedding_bag.tables_per_gpu=4",
                   f"scheme.kind={kind}"],
        what=f"DLRM embedding-bag (batch 256, 4 tables/GPU, dim 256, pooling 10) + all-to-all on 4 MI210, {kind}")
       for name, kind in (("emb-a2a", "emb_a2a"), ("fused-emb-a2a", "fused_emb_a2a"))},
    **{f"{name}-m2k-mi210": dict(
        kind="experiment", config="configs/experiments/fused-gemm-a2a.yaml",
        overrides=["sweep.cases=[]", "sweep.grid={}", "workload.gemm.name=moe-m2k", "workload.gemm.M=2048",
                   f"scheme.kind={kind}"],
        what=f"MoE combine GEMM 512 x 2048 x 2048 per GPU + all-to-all on 4 MI210, {kind} (homogeneous)")
       for name, kind in (("gemm-a2a", "gemm_a2a"), ("fused-gemm-a2a", "fused_gemm_a2a"))},
    **{f"ficco-{sched.replace('_', '-')}-{comm}-ag-fc1-h200-1k": dict(
        kind="experiment", config="configs/experiments/overlap-schemes-h200.yaml",
        overrides=["sweep.cases=[]", "sweep.grid={}", "workload.sublayer=FC-1", "workload.tokens=1024",
                   "workload.direction=ag_gemm", "scheme.kind=ficco", f"scheme.ficco_schedule={sched}",
                   f"scheme.ficco_comm={comm}"],
        what=f"Mega-GPT-2 FC-1 consumer GEMM (AG direction) TP=4 on 4 H200s, 1024 tokens, ficco {sched} with {comm} "
             "communication (homogeneous)")
       for sched, comm in (("hetero_fused_1d", "dma"), ("hetero_unfused_1d", "dma"), ("uniform_fused_2d", "dma"),
                           ("uniform_fused_1d", "rccl"))},
    **{f"fc2-tp8-256-{kind.replace('_', '-')}": dict(
        kind="experiment", config=_DEFAULT, overrides=["workload.tokens=256", f"scheme.kind={kind}"],
        what=f"T-NLG FC-2 TP=8, 256 tokens, {kind}")
       for kind in ("t3", "t3_mca", "ideal_gemm_rs_overlap", "ideal_rs_nmc")},
}
for _s in SCHEMES:
    CASES[f"fc2-tp8-{_s}"] = dict(kind="experiment", config=_DEFAULT, overrides=[f"scheme.kind={_s}"],
                                  what=f"T-NLG FC-2 TP=8 full size, scheme {_s}")
#: the scheme set (``--schemes``): one small case per scheme, FiCCO schedule and FiCCO communication kind
SCHEME_SET = ("fc2-tp8-256", "fc2-tp8-256-t3", "fc2-tp8-256-t3-mca", "fc2-tp8-256-ideal-gemm-rs-overlap",
              "fc2-tp8-256-ideal-rs-nmc", "copy-op-1gpu-1k", "concurrent-op-h200-2k", "chunked-op-h200-2k",
              "chunked-dma-op-h200-2k", "chunked-dma-ag-fc1-h200-1k", "flux-op-h200-2k", "flux-ag-fc1-h200-1k",
              "ficco-ag-fc1-h200-1k", "ficco-hetero-fused-1d-dma-ag-fc1-h200-1k",
              "ficco-hetero-unfused-1d-dma-ag-fc1-h200-1k", "ficco-uniform-fused-2d-dma-ag-fc1-h200-1k",
              "ficco-uniform-fused-1d-rccl-ag-fc1-h200-1k", "ficco-char-ag-fc1-h200-1k", "gemv-ar-mgpt2-op-mi210",
              "fused-gemv-ar-mgpt2-op-mi210", "emb-a2a-b256-t4-mi210", "fused-emb-a2a-b256-t4-mi210",
              "gemm-a2a-m2k-mi210", "fused-gemm-a2a-m2k-mi210")
DEFAULT_CASES = ("hbm-stream", "fc2-tp8-1k", "fc2-tp8-2k", "fc2-tp8-4k", "fc2-tp8-mca-1k", "tp16-256-homogeneous",
                 "tp16-256-explicit") + tuple(f"fc2-tp8-{_s}" for _s in SCHEMES)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure simulator speed on fixed cases (wall, slowdown, requests/s, memory)")
    p.add_argument("--quick", action="store_true", help="small cases only (a minute or less)")
    p.add_argument("--schemes", action="store_true",
                   help="the scheme set: one small case per scheme, FiCCO schedule and FiCCO communication kind")
    p.add_argument("--case", action="append", default=[], metavar="NAME", help="run only this case (repeatable)")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--write", nargs="?", const="docs/performance.md", default=None, metavar="FILE",
                   help="replace the bench table of FILE (default docs/performance.md) by these results, with the "
                        "machine and commit")
    p.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=_run)


def machine() -> Dict[str, object]:
    """Where the benchmark ran."""
    info: Dict[str, object] = {"host": platform.node(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
                               "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:  # lazy: numba is slow to import, and only this report needs the versions
        import numba
        import numpy
        import simpy

        info["numpy"], info["numba"], info["simpy"] = numpy.__version__, numba.__version__, simpy.__version__
    except ImportError:  # pragma: no cover
        pass
    return info


def run_case(name: str) -> Dict[str, object]:
    """Run one case in this process and measure it (CPU seconds: this process's, the warm-up excluded; None
    for a sweep). An experiment whose run compiled kernels the warm-up did not (numba's cache grew: the first run
    after a code change) is run again and that run is measured; ``compile_s`` is the first run's extra wall time."""
    import resource  # lazy: POSIX only

    # lazy: the simulator loads when a command runs (fast --help)
    from t3sim.config import SystemConfig
    from t3sim.memory.memtest import warm_up
    from t3sim.sim.engine import peak_rss_MiB

    case = CASES[name]
    if case["kind"] != "sweep":  # a sweep simulates in its own processes
        warm_up(SystemConfig())  # numba compile/cache load, outside the timing
    out: Dict[str, object] = {"case": name, "what": case["what"]}
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    if case["kind"] == "sweep":
        out.update(_run_sweep(case))
    elif case["kind"] == "memtest":
        from t3sim.memory.memtest import simulate  # lazy: the simulator (fast --help)

        ms, wall = simulate(SystemConfig(), case["pattern"], case["requests"])
        sim_s = ms.now_tick * 1e-12
        out.update(wall_s=wall, simulated_us=sim_s * 1e6, dram_requests=case["requests"], simpy_events=0)
    else:
        # lazy: the simulator loads when a command runs (fast --help)
        from t3sim.config import load_experiment
        from t3sim.exec.dispatch import simulate as simulate_exp
        from t3sim.sim import engine as engine_mod

        # count simpy events over every Engine.run of the case
        counted = {"events": 0}
        orig = engine_mod.Engine.run

        def counting_run(self, *a, **k):
            try:
                return orig(self, *a, **k)
            finally:
                counted["events"] += self.events_processed

        engine_mod.Engine.run = counting_run
        try:
            cfg = _repo_path(case["config"])
            e = load_experiment(cfg, list(case["overrides"]))
            cached = _cache_files()
            t0 = time.perf_counter()
            r = simulate_exp(e)
            wall = time.perf_counter() - t0
            if _cache_files() > cached:  # it compiled kernels the warm-up did not: time it again, from the cache
                out["compile_s"] = wall
                counted["events"] = 0
                r0 = resource.getrusage(resource.RUSAGE_SELF)
                t0 = time.perf_counter()
                r = simulate_exp(e)
                wall = time.perf_counter() - t0
                out["compile_s"] -= wall
        finally:
            engine_mod.Engine.run = orig
        st = r.stats
        reqs = sum(int(v.value) for k, v in st.items() if k.startswith("gpu") and k.endswith(".hbm.requests"))
        sim_us = float(st.value("sim.end_us")) if "sim.end_us" in st else float(r.summary.get("total_us", 0.0))
        out.update(wall_s=wall, simulated_us=sim_us, dram_requests=reqs, simpy_events=counted["events"],
                   summary={k: v for k, v in r.summary.items() if k.endswith("_us")})
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_user_s"], out["cpu_sys_s"] = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
    if case["kind"] == "sweep":  # its workers are the fork server's children, which getrusage does not reach
        out["cpu_user_s"] = out["cpu_sys_s"] = None
    sim_s = out["simulated_us"] * 1e-6
    out["slowdown"] = out["wall_s"] / sim_s if sim_s > 0 else None
    out["dram_requests_per_s"] = out["dram_requests"] / out["wall_s"]
    out["simpy_events_per_s"] = out["simpy_events"] / out["wall_s"] if out["simpy_events"] is not None else None
    out["peak_rss_MB"] = peak_rss_MiB()
    return out


def _cache_files() -> int:
    """Files in numba's on-disk cache (``NUMBA_CACHE_DIR``, :mod:`t3sim.numba_cache`): a run that adds some compiled
    kernels on its way."""
    d = os.environ.get("NUMBA_CACHE_DIR", "")
    return sum(len(files) for _, _, files in os.walk(d)) if d and os.path.isdir(d) else 0


def _repo_path(rel: str) -> Path:
    p = Path(rel)
    return p if p.exists() else Path(__file__).resolve().parents[2] / rel


def _run_sweep(case: dict) -> Dict[str, object]:
    """``t3sim run CONFIG -j N --force`` into a temporary results root; simulated time and DRAM
    requests summed over the simulations (one shared by several points counts once); peak memory =
    the largest process's: the ``t3sim run`` process, or the largest pool worker's (each point's ``meta.json``
    records its process's peak so far; the workers are the fork server's children, which ``getrusage`` does
    not reach)."""
    import resource  # lazy: POSIX only

    with tempfile.TemporaryDirectory() as tmp:
        cmd = cli_argv("run", str(_repo_path(case["config"])), "--out", tmp, "--force", "-j", str(case.get("jobs", 2)))
        for o in case["overrides"]:
            cmd += ["--set", o]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError((p.stderr or p.stdout).strip().splitlines()[-1:])
        sim_us, reqs, points, sims, peak = 0.0, 0, 0, 0, 0.0
        for f in Path(tmp).rglob("stats.json"):
            points += 1
            meta = json.loads((f.parent / "meta.json").read_text())
            peak = max(peak, float(meta.get("peak_rss_MiB", 0.0)))
            # points that shared a simulation (meta "shared_simulation") count it once: at its first scheme
            shared = meta.get("shared_simulation")
            me = next(csv.DictReader((f.parent / "summary.csv").open()))["scheme"]
            if shared and (me if ":" not in shared[0] else f"{f.parent.parent.name}:{me}") != shared[0]:
                continue
            sims += 1
            flat = _flatten(json.loads(f.read_text()))
            sim_us += float(flat.get("sim.end_us", flat.get("time.total_us", 0.0)))
            reqs += sum(int(v) for k, v in flat.items() if k.startswith("gpu") and k.endswith(".hbm.requests"))
    peak = max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0)
    return dict(wall_s=wall, simulated_us=sim_us, dram_requests=reqs, simpy_events=None, points=points,
                simulations=sims, child_peak_rss_MB=peak)


def _flatten(d, prefix: str = "") -> Dict[str, object]:
    """stats.json (nested; leaves carry ``value``) as {dotted name: value}."""
    out: Dict[str, object] = {}
    if isinstance(d, dict) and "value" in d and not isinstance(d["value"], dict):
        out[prefix] = d["value"]
        return out
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else k))
    return out


def _in_child(name: str) -> Dict[str, object]:
    cmd = cli_argv("bench", "--_child", name)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"case": name, "error": (p.stderr or p.stdout).strip().splitlines()[-1:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def _fmt(r: Dict[str, object]) -> str:
    if "error" in r:
        return f"{r['case']:<18} ERROR {r['error']}"
    cpu = f"{r['cpu_user_s']:.2f}+{r['cpu_sys_s']:.2f} s" if r.get("cpu_user_s") is not None else "-"
    return (f"{r['case']:<18} wall {r['wall_s']:8.2f} s  cpu {cpu}  "
            f"simulated {r['simulated_us']:9.2f} us  "
            f"slowdown {r['slowdown']:10.3g}  DRAM req/s {r['dram_requests_per_s']:10.3g}  "
            f"events/s {_g(r['simpy_events_per_s'])}  peak {r['peak_rss_MB']:7.0f} MB")


def _g(x) -> str:
    """A rate for the table ('-' where it is not measured, e.g. a sweep's events in its workers)."""
    return f"{x:9.3g}" if x is not None else f"{'-':>9}"


def _run(args: argparse.Namespace) -> int:
    if args._child:
        print(json.dumps(run_case(args._child)))
        return 0
    if args.list:
        for name, c in CASES.items():
            tag = "quick " if c.get("quick") else "scheme" if name in SCHEME_SET else "      "
            print(f"{name:<18} {tag} {c['what']}")
        return 0
    if args.case:
        names: List[str] = list(args.case)
    elif args.quick:
        names = [n for n, c in CASES.items() if c.get("quick")]
    elif args.schemes:
        names = list(SCHEME_SET)
    else:
        names = list(DEFAULT_CASES)
    for n in names:
        if n not in CASES:
            raise InputError("--case", repr(n), ", ".join(CASES))
    target = Path(args.write) if args.write else None
    if target is not None:
        bench_table.markers(target)  # a bad --write is refused before anything runs
    results = []
    for n in names:
        r = _in_child(n)
        results.append(r)
        if not args.json:
            print(_fmt(r), flush=True)
    if target is not None:
        bench_table.write(target, bench_table.render(results, machine(), bench_table.commit_of(Path(__file__).resolve().parents[2])))
        print(f"bench table written to {target}", file=sys.stderr)
    if args.json:
        print(json.dumps({"machine": machine(), "results": results}, indent=2))
    else:
        m = machine()
        print(f"machine: {m.get('cpu', '?')}, {m['cpus']} CPUs, Python {m['python']}, numba {m.get('numba', '?')}")
    return 0 if all("error" not in r for r in results) else 1
