"""Idle and loaded DRAM latency on one GPU, and the device-to-device copy alone.

Three measurements (bf16-free: plain CUDA C++ kernels compiled by CuPy):

- ``idle``: one thread chases a random cycle of 128 B lines (``p = next[p]``, loads with ``ld.global.cg``: cached
  in L2 only) over footprints from inside the L2 to 4 GiB; nanoseconds per hop = kernel time / hops. Each run goes on
  from where the last one ended, so a footprint larger than the L2 is not served from lines the last run left there.
- ``loaded``: the same chase over a 4 GiB footprint, beside a streaming-read kernel on ``k`` SMs (one CTA of 1024
  threads per SM, held to one per SM by its shared-memory request; 16 B ``ld.global.cg`` loads over a separate
  2 GiB buffer, for a fixed time longer than the chase). The streaming kernel counts its bytes and the span from its
  first CTA's start to its last CTA's end (``%globaltimer``), so each row pairs the chase's ns per hop with the HBM
  bandwidth achieved beside it. ``k`` runs from 1 to every SM, then two and four CTAs per SM (the peak).
- ``l2``: the streaming kernel alone over a 16 MiB buffer (resident in the L2 after a first pass) on ``k`` SMs, one
  CTA of 1024 threads each, then two CTAs per SM: the L2's read bandwidth to one SM and to all, in GB/s and in bytes
  per SM cycle (the SM clock read by a spinning kernel's ``clock64()`` against ``%globaltimer`` right after);
- ``copy``: ``torch.Tensor.copy_`` device to device of 64 MiB to 1 GiB, median of 20 after warm-ups;
  GB/s counts bytes read and written; the kernel that runs it (name, grid, block, registers per thread) from the
  profiler's trace, empty if a copy engine runs it.

Each row is the median of ``--reps`` repeats. Run: ``python3 measure.py --out DIR`` (writes
``DIR/idle_latency.csv``, ``DIR/loaded_latency.csv``, ``DIR/l2_bandwidth.csv``, ``DIR/d2d_copy.csv``,
``DIR/env.json``); ``--quick`` for a
dry run.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

import cupy as cp
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpu_timing import ev_times, kernels_of  # noqa: E402  (experiments/validation/gpu_timing.py)

LINE_B = 128

SRC = r"""
extern "C" __global__ void chase(const unsigned int* __restrict__ nxt, long long hops, unsigned int* sink,
                                 long long* ns) {
    unsigned long long t0, t1;
    unsigned int p = sink[0];  // go on from where the last chase ended: no line is visited twice in a row of runs
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (long long i = 0; i < hops; ++i) {
        p = __ldcg(nxt + p);
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    sink[0] = p;
    ns[0] = (long long)(t1 - t0);
}
extern "C" __global__ void stream(const int4* __restrict__ src, unsigned long long n16, long long ns,
                                  unsigned long long* out) {
    extern __shared__ int4 hold[];
    unsigned long long t0, t, done = 0;
    int4 acc = make_int4(0, 0, 0, 0);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    do {
        #pragma unroll 8
        for (int u = 0; u < 64; ++u) {
            int4 v = __ldcg(src + i);
            acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
            i += stride;
            if (i >= n16) i -= n16;
        }
        done += 64 * 16;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while ((long long)(t - t0) < ns);
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x7fffffff) hold[0] = acc;
    atomicAdd(out, done);
    if (threadIdx.x == 0) {  // the span of the whole grid: first start to last end (CTAs that ran late count)
        atomicMin(out + 1, t0);
        atomicMax(out + 2, t);
    }
}
extern "C" __global__ void clocks(long long ns, long long* out) {
    unsigned long long t0, t;
    long long c0 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while ((long long)(t - t0) < ns);
    out[0] = clock64() - c0;
    out[1] = (long long)(t - t0);
}
"""


def chain(footprint_B: int, seed: int = 1) -> cp.ndarray:
    """A random single cycle over the footprint's lines: ``nxt[line * 32] = next line * 32`` (uint32 words)."""
    lines = footprint_B // LINE_B
    g = torch.Generator(device="cuda").manual_seed(seed)
    order = torch.randperm(lines, device="cuda", generator=g, dtype=torch.int64)
    words = LINE_B // 4
    nxt = torch.zeros(lines * words, device="cuda", dtype=torch.int64)
    nxt[order * words] = torch.roll(order, -1) * words
    return cp.asarray(nxt.to(torch.int32)).view(cp.uint32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=("idle", "loaded", "l2", "copy"), help="one of the four measurements")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cupy": cp.__version__, "sm_count": sms, "l2_bytes": getattr(props, "L2_cache_size", None)}
    (out / "env.json").write_text(json.dumps(env, indent=1) + "\n")
    mod = cp.RawModule(code=SRC)
    chase, stream = mod.get_function("chase"), mod.get_function("stream")
    smem_one_per_sm = 160 * 1024  # more than half an SM's shared memory: one CTA per SM
    stream.max_dynamic_shared_size_bytes = smem_one_per_sm
    sink = cp.zeros(1, dtype=cp.uint32)
    ns = cp.zeros(1, dtype=cp.int64)

    def chase_ns_per_hop(nxt: cp.ndarray, hops: int, stream_obj=None) -> float:
        chase((1,), (1,), (nxt, cp.int64(hops), sink, ns), stream=stream_obj)
        (stream_obj or cp.cuda.get_current_stream()).synchronize()
        return int(ns.get()[0]) / hops

    hops = 20_000 if args.quick else 100_000
    footprints = tuple(m << 20 for m in (1, 16, 20, 24, 28, 32, 36, 40, 48, 128, 1024, 4096))
    if args.quick:
        footprints = (1 << 20, 256 << 20)
    if args.only in (None, "idle"):
        with open(out / "idle_latency.csv", "w", newline="") as f:
            w = csv.DictWriter(f, ["footprint_B", "hops", "ns_per_hop", "min_ns_per_hop"])
            w.writeheader()
            for fp in footprints:
                nxt = chain(fp)
                sink[0] = 0
                chase_ns_per_hop(nxt, 1000)
                vals = [chase_ns_per_hop(nxt, hops) for _ in range(args.reps)]
                w.writerow({"footprint_B": fp, "hops": hops, "ns_per_hop": round(statistics.median(vals), 2),
                            "min_ns_per_hop": round(min(vals), 2)})
                f.flush()
                del nxt
    if args.only in (None, "loaded"):
        big = footprints[-1]
        nxt = chain(big)
        sink[0] = 0
        src = cp.ones(((256 if args.quick else 2048) << 20) // 4, dtype=cp.int32)
        n16 = cp.uint64(src.nbytes // 16)
        cnt = cp.zeros(3, dtype=cp.uint64)
        s_stream, s_chase = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
        ks = [1, 2, 4, 8, 16, 24, 32, 48, 56, 64, 66, 80, 100, sms]
        if args.quick:
            ks = [1, sms]
        load_hops = hops // 5
        configs = [(k, 1) for k in ks] + [(sms, 2), (sms, 4)]
        with open(out / "loaded_latency.csv", "w", newline="") as f:
            w = csv.DictWriter(f, ["stream_sms", "ctas_per_sm", "stream_GBps", "ns_per_hop", "hops", "stream_B",
                                   "stream_span_ns", "stream_event_GBps", "chase_overlapped"])
            w.writeheader()
            for k, per in configs:
                rows = []
                for _ in range(args.reps):
                    cnt[0], cnt[1], cnt[2] = 0, 2 ** 64 - 1, 0
                    cp.cuda.Device().synchronize()
                    smem = smem_one_per_sm if per == 1 else 0
                    threads = 1024 if per <= 2 else 512
                    run_ns = cp.int64(int(load_hops * 4000 + 20e6))  # outlasts the chase at 4 us per hop
                    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                    e0.record(s_stream)
                    stream((k * per,), (threads,), (src, n16, run_ns, cnt), shared_mem=smem, stream=s_stream)
                    e1.record(s_stream)
                    chase((1,), (1,), (nxt, cp.int64(load_hops), sink, ns), stream=s_chase)
                    c_end = cp.cuda.Event()
                    c_end.record(s_chase)
                    c_end.synchronize()
                    chase_done_first = not e1.done  # the chase ended while the stream still ran: it ran beside it
                    s_stream.synchronize()
                    per_hop = int(ns.get()[0]) / load_hops
                    c = cnt.get()
                    span = int(c[2]) - int(c[1])
                    ev_us = cp.cuda.get_elapsed_time(e0, e1) * 1e3
                    rows.append((int(c[0]) / span, per_hop, int(c[0]), span, int(c[0]) / ev_us / 1e3, chase_done_first))
                med = sorted(rows, key=lambda r: r[1])[len(rows) // 2]  # the repeat of median latency
                w.writerow({"stream_sms": k, "ctas_per_sm": per, "stream_GBps": round(med[0], 1),
                            "ns_per_hop": round(med[1], 2), "hops": load_hops, "stream_B": med[2],
                            "stream_span_ns": med[3], "stream_event_GBps": round(med[4], 1),
                            "chase_overlapped": int(all(r[5] for r in rows))})
                f.flush()
        del nxt, src
    if args.only in (None, "l2"):
        clocks = mod.get_function("clocks")
        src = cp.ones((16 << 20) // 4, dtype=cp.int32)
        n16 = cp.uint64(src.nbytes // 16)
        cnt = cp.zeros(3, dtype=cp.uint64)
        clk = cp.zeros(2, dtype=cp.int64)
        with open(out / "l2_bandwidth.csv", "w", newline="") as f:
            w = csv.DictWriter(f, ["stream_sms", "ctas_per_sm", "stream_GBps", "sm_clock_GHz", "B_per_sm_cycle"])
            w.writeheader()
            for k, per in [(k, 1) for k in (1, 2, 4, 8, 16, 33, 66, sms)] + [(sms, 2)]:
                vals = []
                for _ in range(args.reps):
                    cnt[0], cnt[1], cnt[2] = 0, 2 ** 64 - 1, 0
                    stream((k * per,), (1024,), (src, n16, cp.int64(2_000_000), cnt),
                           shared_mem=smem_one_per_sm if per == 1 else 0)
                    clocks((1,), (1,), (cp.int64(200_000), clk))
                    cp.cuda.Device().synchronize()
                    c, ck = cnt.get(), clk.get()
                    vals.append((int(c[0]) / (int(c[2]) - int(c[1])), int(ck[0]) / int(ck[1])))
                gbps, ghz = sorted(vals)[len(vals) // 2]
                w.writerow({"stream_sms": k, "ctas_per_sm": per, "stream_GBps": round(gbps, 1),
                            "sm_clock_GHz": round(ghz, 3), "B_per_sm_cycle": round(gbps / ghz / k, 2)})
                f.flush()
        del src
    if args.only in (None, "copy"):
        with open(out / "d2d_copy.csv", "w", newline="") as f:
            w = csv.DictWriter(f, ["bytes", "median_us", "GBps_read_plus_write", "kernel", "grid", "block", "regs"])
            w.writeheader()
            for mib in ((64, 256) if args.quick else (64, 256, 1024)):
                a = torch.empty(mib << 20, dtype=torch.uint8, device="cuda")
                b = torch.empty_like(a)
                ts = ev_times(lambda: b.copy_(a), 20)
                med = statistics.median(ts)
                ks = kernels_of(lambda: b.copy_(a)) or [{}]  # none: the copy ran on a copy engine
                w.writerow({"bytes": a.numel(), "median_us": round(med, 2),
                            "GBps_read_plus_write": round(2 * a.numel() / med / 1e3, 1),
                            **{c: ks[0].get("name" if c == "kernel" else c, "") for c in ("kernel", "grid", "block", "regs")}})
                del a, b
    print(json.dumps(env), flush=True)


if __name__ == "__main__":
    main()
