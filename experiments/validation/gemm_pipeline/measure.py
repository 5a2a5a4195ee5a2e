"""Measure what t3sim's GEMM pipeline model needs on one H200.

Three measurements, one GPU, bf16, PyTorch + CuPy (as ``dispatch_order/measure.py``):

a. ``gemm``: ``torch.matmul`` of a row-major 16384 x K A by a K x 3072 B (the Mega-GPT-2 shapes of
   ``gemm_calibration.csv`` / ``overlap_4gpu.csv``), K in 384..3072: which cuBLAS kernel runs (torch.profiler's
   kernel events carry name, grid, block, registers per thread, shared memory) and its time (CUDA events around
   each call, median of ``--reps`` after 5 warm-ups, as the reference README's protocol), plus the mean time of
   ``--b2b`` back-to-back calls between two events.
b. ``clock``: the SM clock and power while each K's GEMMs run back to back for ~1 s, sampled by
   ``nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw -lms 50`` in the background; each window's samples are
   selected by wall time (the script prints the windows; the samples go to ``smi.csv``).
c. ``l2`` / ``hbm``: read bandwidth of a kernel that reads a buffer ``iters`` times from every SM with 16 B
   ``ld.global.cg`` loads (``__ldcg``: cached in L2 only, so an SM cannot serve repeats from its L1), 2 CTAs x
   1024 threads per SM, grid-stride; buffers of 4..48 MiB (fit in the 60 MiB L2) and 4 GiB (HBM).
d. ``beside``: the GEMM (K = 768, 3072) alone and beside a 24-CTA x 512-thread kernel launched first on a second
   stream (NCCL's CTA count and thread count on this system) that either spins (holds 24 SMs, no memory
   traffic) or copies a 256 MiB buffer (holds 24 SMs and streams HBM), both for a fixed time longer than the
   GEMM: the GEMM's slowdown beyond losing 24 SMs, with and without memory traffic beside it.

Run: python3 measure.py --out DIR  (writes DIR/gemm_pipeline_h200.json, DIR/smi.csv, DIR/traces)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import cupy as cp
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpu_timing import ev_times  # noqa: E402  (experiments/validation/gpu_timing.py)

KS = (384, 768, 1152, 1536, 2304, 3072)
M, N = 16384, 3072

SRC = r"""
extern "C" __global__ void rd(const int4* __restrict__ p, unsigned long long n16, int iters, int* sink) {
    int4 acc = make_int4(0, 0, 0, 0);
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (int it = 0; it < iters; ++it) {
        #pragma unroll 4
        for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n16; i += stride) {
            int4 v = __ldcg(p + i);
            acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
        }
    }
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x7fffffff) sink[0] = 1;
}
extern "C" __global__ void spin(long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while ((long long)(t - t0) < ns);
}
extern "C" __global__ void copy(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n16,
                                long long ns, unsigned long long* bytes) {
    unsigned long long t0, t, done = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    do {
        for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n16; i += stride) {
            dst[i] = src[i];
            done += 16;
        }
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while ((long long)(t - t0) < ns);
    atomicAdd(bytes, done);
    if (threadIdx.x == 0) { atomicMax(bytes + 1, t - t0); }
}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--b2b", type=int, default=50)
    args = ap.parse_args()
    out = Path(args.out)
    (out / "traces").mkdir(parents=True, exist_ok=True)
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu",
         "--format=csv,noheader,nounits", "-lms", "50"],
        stdout=open(out / "smi.csv", "w"), stderr=subprocess.DEVNULL)
    res: dict = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                 "cuda": torch.version.cuda, "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
                 "l2_bytes": getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None),
                 "gemm": [], "l2": [], "beside": [], "windows": []}
    dev = torch.device("cuda")
    mod = cp.RawModule(code=SRC)
    rd, spin, copyk = mod.get_function("rd"), mod.get_function("spin"), mod.get_function("copy")
    time.sleep(1.0)
    # a + b: kernels, times, clocks
    from torch.profiler import ProfilerActivity, profile

    for K in KS:
        a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
        torch.matmul(a, b)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            torch.matmul(a, b)
            torch.cuda.synchronize()
        trace = out / "traces" / f"gemm_K{K}.json"
        prof.export_chrome_trace(str(trace))
        kernels = [{"name": e["name"], "args": e.get("args", {}), "dur_us": e.get("dur")}
                   for e in json.load(open(trace))["traceEvents"] if e.get("cat") == "kernel"]
        times = ev_times(lambda: torch.matmul(a, b), args.reps)
        # back to back for ~1 s (clock window)
        n = max(args.b2b, int(1.0e6 / statistics.median(times)))
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.time()
        e0.record()
        for _ in range(n):
            torch.matmul(a, b)
        e1.record()
        e1.synchronize()
        t1 = time.time()
        row = {"M": M, "N": N, "K": K, "kernels": kernels, "median_us": statistics.median(times),
               "min_us": min(times), "max_us": max(times), "b2b_n": n, "b2b_mean_us": e0.elapsed_time(e1) * 1e3 / n,
               "window": [t0, t1]}
        res["gemm"].append(row)
        res["windows"].append({"what": f"gemm K={K}", "t0": t0, "t1": t1})
        print(json.dumps({k: v for k, v in row.items() if k != "kernels"}), flush=True)
        for k in kernels:
            print(f"  K={K} kernel {k['name']} {k['args']}", flush=True)
        del a, b
        time.sleep(0.3)
    # c: L2 / HBM read bandwidth
    sms = res["sm_count"]
    sink = cp.zeros(1, dtype=cp.int32)
    for mib, iters in ((4, 400), (8, 200), (16, 100), (24, 80), (32, 60), (48, 40), (4096, 2)):
        nbytes = mib << 20
        buf = cp.ones(nbytes // 4, dtype=cp.int32)
        n16 = cp.uint64(nbytes // 16)
        for ctas_per_sm in (2, 4):
            grid = (sms * ctas_per_sm,)
            fn = lambda: rd(grid, (1024 // (ctas_per_sm // 2),), (buf, n16, cp.int32(iters), sink))  # noqa: E731
            ts = []
            t0 = time.time()
            for i in range(3 + 5):
                s, e = cp.cuda.Event(), cp.cuda.Event()
                s.record()
                fn()
                e.record()
                e.synchronize()
                if i >= 3:
                    ts.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
            # ~0.5 s of repeats for the clock window
            reps = max(1, int(0.5e6 / statistics.median(ts)))
            for _ in range(reps):
                fn()
            cp.cuda.Device().synchronize()
            t1 = time.time()
            us = statistics.median(ts)
            row = {"buffer_MiB": mib, "iters": iters, "grid": grid[0], "block": 1024 // (ctas_per_sm // 2),
                   "median_us": us, "bytes": nbytes * iters, "GBps": nbytes * iters / us / 1e3,
                   "window": [t0, t1]}
            res["l2"].append(row)
            res["windows"].append({"what": f"read {mib} MiB grid {grid[0]}", "t0": t0, "t1": t1})
            print(json.dumps(row), flush=True)
        del buf
    # d: GEMM beside a 24-CTA spin / copy kernel launched first
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    src = cp.ones((256 << 20) // 4, dtype=cp.int32)
    dst = cp.zeros_like(src)
    cnt = cp.zeros(2, dtype=cp.uint64)
    for K in (768, 3072):
        a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
        for case in ("alone", "spin24", "copy24", "copy24_alone"):
            rows = []
            for rep in range(3 + 7):
                torch.cuda.synchronize()
                cnt[:] = 0
                cp.cuda.Device().synchronize()
                ns = cp.int64((600 if K == 3072 else 250) * 1000)
                cs2 = cp.cuda.ExternalStream(s2.cuda_stream)
                if case == "spin24":
                    spin((24,), (512,), (ns,), stream=cs2)
                elif case.startswith("copy24"):
                    copyk((24,), (512,), (src, dst, cp.uint64(src.nbytes // 16), ns, cnt), stream=cs2)
                r = {"K": K, "case": case}
                if case != "copy24_alone":
                    with torch.cuda.stream(s1):
                        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        e0.record()
                        torch.matmul(a, b)
                        e1.record()
                    e1.synchronize()
                    r["gemm_us"] = e0.elapsed_time(e1) * 1e3
                torch.cuda.synchronize()
                if case.startswith("copy24"):
                    c = cp.asnumpy(cnt)
                    r["copy_GBps_rw"] = 2 * int(c[0]) / int(c[1])  # read + write bytes per ns = GB/s
                if rep >= 3:
                    rows.append(r)
            med = {"K": K, "case": case}
            for k in ("gemm_us", "copy_GBps_rw"):
                if k in rows[0]:
                    med[k] = statistics.median(x[k] for x in rows)
            res["beside"].append(med)
            print(json.dumps(med), flush=True)
        del a, b
    time.sleep(0.3)
    smi.terminate()
    smi.wait()
    # clock per window from nvidia-smi samples
    from datetime import datetime

    samples = []
    for line in open(out / "smi.csv"):
        f = [x.strip() for x in line.split(",")]
        try:
            ts = datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((ts, float(f[1]), float(f[2]), float(f[3]), float(f[4])))
        except (ValueError, IndexError):
            continue
    for w in res["windows"]:
        sel = [s for s in samples if w["t0"] + 0.1 <= s[0] <= w["t1"]]
        w["n_samples"] = len(sel)
        if sel:
            w["sm_MHz_median"] = statistics.median(s[1] for s in sel)
            w["sm_MHz_min"] = min(s[1] for s in sel)
            w["mem_MHz_median"] = statistics.median(s[2] for s in sel)
            w["power_W_median"] = statistics.median(s[3] for s in sel)
            w["temp_C_max"] = max(s[4] for s in sel)
        print(json.dumps(w), flush=True)
    json.dump(res, open(out / "gemm_pipeline_h200.json", "w"), indent=1)
    print("wrote", out / "gemm_pipeline_h200.json")


if __name__ == "__main__":
    main()
