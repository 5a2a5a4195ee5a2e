"""Measure how one H200 shares SMs between a cuBLAS GEMM and a second kernel launched beside it.

The question t3sim's WG dispatcher (t3sim/compute/dispatcher.py) answers by assumption from the literature:
when two kernels on two streams run at once, does the GPU dispatch the later-launched kernel's CTAs only onto
resources left over after every CTA of the earlier kernel has been dispatched (the "left-over" policy), and do
CTAs of a register-hungry cuBLAS GEMM and of a collective-like kernel share an SM?

Method (one GPU, CUDA events and %globaltimer, bf16 GEMM 16384 x 3072 x K as overlap_4gpu.csv):
* ``spin``: a CUDA C kernel of ``ctas`` CTAs x 512 threads (NCCL Simple's thread count) that spins for
  ``spin_us`` and records, per CTA, its SM (%smid) and its start/end (%globaltimer, ns). Marker kernels
  (1 thread) record %globaltimer on the GEMM's stream just before and after the GEMM.
* case ``gemm_first``: GEMM on stream 1, then ``spin`` on stream 2 (launched right after, asynchronously);
* case ``spin_first``: ``spin`` on stream 2, then the GEMM on stream 1;
* each alone.
Reported (CSV): GEMM time, spin CTAs' start relative to the GEMM's start and end, the spin's span, and how many
spin CTAs started before the GEMM ended. Median of ``reps`` repetitions after warm-up.

Run: python3 measure.py --out DIR (on a machine with an NVIDIA GPU, PyTorch and CuPy).
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

import cupy as cp
import torch

SRC = r"""
extern "C" __global__ void spin(long long ns, unsigned long long* out) {
    unsigned long long t0, t; unsigned int sm;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while ((long long)(t - t0) < ns);
    __syncthreads();
    if (threadIdx.x == 0) { out[3 * blockIdx.x] = t0; out[3 * blockIdx.x + 1] = t; out[3 * blockIdx.x + 2] = sm; }
}
extern "C" __global__ void mark(unsigned long long* out) {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); out[0] = t;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--ctas", type=int, default=32)
    args = ap.parse_args()
    mod = cp.RawModule(code=SRC)
    spin, mark = mod.get_function("spin"), mod.get_function("mark")
    dev = torch.device("cuda")
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    rows = []
    for K, spin_us in ((768, 150), (3072, 300)):
        a = torch.randn(16384, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(K, 3072, device=dev, dtype=torch.bfloat16)
        out = cp.zeros(3 * args.ctas, dtype=cp.uint64)
        m0, m1 = cp.zeros(1, dtype=cp.uint64), cp.zeros(1, dtype=cp.uint64)
        ns = cp.int64(spin_us * 1000)

        def gemm(stream):
            with torch.cuda.stream(stream):
                cs = cp.cuda.ExternalStream(stream.cuda_stream)
                mark((1,), (1,), (m0,), stream=cs)
                torch.matmul(a, b)
                mark((1,), (1,), (m1,), stream=cs)

        def spinner(stream):
            spin((args.ctas,), (512,), (ns, out), stream=cp.cuda.ExternalStream(stream.cuda_stream))

        for case in ("gemm_alone", "spin_alone", "gemm_first", "spin_first"):
            res = []
            for rep in range(args.reps + 3):
                torch.cuda.synchronize()
                out[:] = 0
                m0[:] = 0
                m1[:] = 0
                cp.cuda.Device().synchronize()
                if case in ("spin_first", "spin_alone"):
                    spinner(s2)
                if case != "spin_alone":
                    gemm(s1)
                if case == "gemm_first":
                    spinner(s2)
                torch.cuda.synchronize()
                o = cp.asnumpy(out).reshape(-1, 3).astype("int64")
                g0, g1 = int(cp.asnumpy(m0)[0]), int(cp.asnumpy(m1)[0])
                if rep < 3:
                    continue
                r = {"K": K, "case": case, "spin_ctas": args.ctas, "spin_us": spin_us}
                if case != "spin_alone":
                    r["gemm_us"] = (g1 - g0) / 1e3
                if case != "gemm_alone":
                    r["spin_span_us"] = (o[:, 1].max() - o[:, 0].min()) / 1e3
                    r["spin_sms"] = len(set(o[:, 2].tolist()))
                if case in ("gemm_first", "spin_first"):
                    r["spin_first_start_after_gemm_start_us"] = (o[:, 0].min() - g0) / 1e3
                    r["spin_last_start_after_gemm_start_us"] = (o[:, 0].max() - g0) / 1e3
                    r["spin_ctas_started_before_gemm_end"] = int((o[:, 0] < g1).sum())
                    r["both_span_us"] = (max(g1, o[:, 1].max()) - min(g0, o[:, 0].min())) / 1e3
                res.append(r)
            keys = [k for k in res[0] if isinstance(res[0][k], float) or k.startswith("spin_ctas_started")]
            med = dict(res[0])
            for k in keys:
                med[k] = statistics.median(x[k] for x in res)
            rows.append(med)
            print(med, flush=True)
    # which cuBLAS kernel ran, with its grid and block (the trace's kernel events carry them)
    from torch.profiler import ProfilerActivity, profile

    for K in (768, 3072):
        a = torch.randn(16384, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(K, 3072, device=dev, dtype=torch.bfloat16)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            torch.matmul(a, b)
            torch.cuda.synchronize()
        trace = Path(args.out) / f"gemm_K{K}_trace.json"
        prof.export_chrome_trace(str(trace))
        import json

        for e in json.load(open(trace))["traceEvents"]:
            if e.get("cat") == "kernel":
                print(f"K={K} kernel {e['name']} args {e.get('args')}", flush=True)
    cols = sorted({k for r in rows for k in r}, key=lambda k: (k not in ("K", "case"), k))
    path = Path(args.out) / "dispatch_order_h200.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}; GPU {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
