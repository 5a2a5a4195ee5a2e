"""The SM clock *during* each cuBLAS GEMM, timed as the reference data were (median of 20 calls after 5 warm-ups).

A probe kernel of one CTA per SM (132 CTAs, 1 thread, 200 KiB of dynamic shared memory so no two share an SM)
records per CTA ``%smid``, ``%clock64`` (the SM's cycle counter) and ``%globaltimer`` (ns) just before and just
after the GEMM on the same stream; per SM, (clock64 after - before) / (globaltimer after - before) is the mean SM
clock over the GEMM (plus the probe launches, a few us). Reported per K: the median over calls of the median over
SMs, and the GEMM time between the probes (the last 'before' to the first 'after' timestamp).

Run: python3 measure_clock.py --out DIR  (writes DIR/gemm_clock_h200.json)
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import cupy as cp
import numpy as np
import torch

SRC = r"""
extern "C" __global__ void probe(unsigned long long* out) {
    extern __shared__ int pad[];
    unsigned long long c, t; unsigned int sm;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    pad[0] = (int)sm;
    out[3 * blockIdx.x] = sm; out[3 * blockIdx.x + 1] = c; out[3 * blockIdx.x + 2] = t;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    dev = torch.device("cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    probe = cp.RawModule(code=SRC).get_function("probe")
    probe.max_dynamic_shared_size_bytes = 200 * 1024
    res = []
    for K in (384, 768, 1152, 1536, 2304, 3072):
        a = torch.randn(16384, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(K, 3072, device=dev, dtype=torch.bfloat16)
        b0, b1 = cp.zeros(3 * sms, dtype=cp.uint64), cp.zeros(3 * sms, dtype=cp.uint64)
        s = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        mhz, us = [], []
        for i in range(5 + args.reps):
            torch.cuda.synchronize()
            probe((sms,), (1,), (b0,), stream=s, shared_mem=200 * 1024)
            torch.matmul(a, b)
            probe((sms,), (1,), (b1,), stream=s, shared_mem=200 * 1024)
            torch.cuda.synchronize()
            if i < 5:
                continue
            x0 = cp.asnumpy(b0).reshape(-1, 3).astype(np.int64)
            x1 = cp.asnumpy(b1).reshape(-1, 3).astype(np.int64)
            d0 = {int(r[0]): r for r in x0}
            per = [(r[1] - d0[int(r[0])][1]) / (r[2] - d0[int(r[0])][2]) * 1e3 for r in x1 if int(r[0]) in d0]
            mhz.append(statistics.median(per))
            us.append((x1[:, 2].min() - x0[:, 2].max()) / 1e3)
        row = {"K": K, "sm_MHz_median": statistics.median(mhz), "sm_MHz_min": min(mhz), "sm_MHz_max": max(mhz),
               "gemm_between_probes_us_median": statistics.median(us), "calls": args.reps}
        print(json.dumps(row), flush=True)
        res.append(row)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    json.dump({"gpu": torch.cuda.get_device_name(), "rows": res}, open(Path(args.out) / "gemm_clock_h200.json", "w"),
              indent=1)


if __name__ == "__main__":
    main()
