"""Second H200 measurement: do copies and GEMMs on two streams overlap at all?

The first measurement (measure_h200.py) found copies and GEMMs in lockstep: each copy's CUDA-event
interval equals one GEMM's. This script separates the candidate causes:

1. ``sm_or_ce``: is a D2D cudaMemcpyAsync executed by a copy engine or by an SM kernel? A spin kernel
   fills every SM's thread slots (2 x 1024-thread blocks per SM) for ~2 ms; a 256 MiB copy issued on
   another stream right after it either finishes in ~130 us (copy engine) or waits for the spin.
2. ``events``: 20 GEMMs and 20 copies on two streams with (a) an event pair around every item and
   (b) events only at the ends of each stream's batch: if (a) and (b) give different totals, the
   per-item events themselves serialise the streams.
3. ``order``: GEMMs enqueued before the copies instead of after.
4. ``membound``: copies beside an SM streaming kernel (a large elementwise add) instead of a GEMM.
5. ``env``: CUDA_DEVICE_MAX_CONNECTIONS and friends.
"""

import json
import os
import statistics
import sys
import time

import cupy
import torch

MiB = 1 << 20
dev = torch.device("cuda")
rt = cupy.cuda.runtime

SPIN = cupy.RawKernel(r'''
extern "C" __global__ void spin(long long cycles, int *out) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
    if (threadIdx.x == 0 && out) out[blockIdx.x] = 1;
}''', "spin")


def ev(timing=True):
    return torch.cuda.Event(enable_timing=timing)


def memcpy(dst, src, n, stream):
    rt.memcpyAsync(dst.data_ptr(), src.data_ptr(), n, rt.memcpyDeviceToDevice, stream.cuda_stream)


def main(path):
    res = {"env": {k: v for k, v in os.environ.items() if k.startswith(("CUDA", "NCCL", "TORCH", "PYTORCH"))}}
    n = 256 * MiB
    src = torch.empty(n, dtype=torch.uint8, device=dev)
    dst = torch.empty(n, dtype=torch.uint8, device=dev)
    cs, gs = torch.cuda.Stream(), torch.cuda.Stream()
    out = cupy.zeros(1024, dtype=cupy.int32)
    # warm up
    for _ in range(3):
        memcpy(dst, src, n, cs)
    torch.cuda.synchronize()

    # 1. SM or CE
    r = {}
    for label, blocks, threads in (("full_sms", 264, 1024), ("one_block", 1, 32)):
        a, b, c, d = ev(), ev(), ev(), ev()
        with torch.cuda.stream(gs):
            a.record(gs)
            with cupy.cuda.ExternalStream(gs.cuda_stream):
                SPIN((blocks,), (threads,), (cupy.int64(int(2e-3 * 1.98e9)), out))
            b.record(gs)
        time.sleep(0.0002)
        c.record(cs)
        memcpy(dst, src, n, cs)
        d.record(cs)
        torch.cuda.synchronize()
        r[label] = {"spin_us": a.elapsed_time(b) * 1e3, "copy_us": c.elapsed_time(d) * 1e3,
                    "copy_end_after_spin_end_us": b.elapsed_time(d) * 1e3}
    res["sm_or_ce"] = r

    # 2/3. per-item events or not, and enqueue order
    M, N, K = 16384, 3072, 768
    A = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    B = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
    for _ in range(5):
        torch.matmul(A, B)
    torch.cuda.synchronize()
    reps = 20

    def batch(per_item, gemms_first, timing=True, copies=True, gemms=True):
        g_ev, c_ev = [], []
        g0, g1, c0, c1 = ev(), ev(), ev(), ev()

        def do_gemms():
            with torch.cuda.stream(gs):
                g0.record(gs)
                for _ in range(reps):
                    if per_item:
                        x, y = ev(timing), ev(timing)
                        x.record(gs)
                    torch.matmul(A, B)
                    if per_item:
                        y.record(gs)
                        g_ev.append((x, y))
                g1.record(gs)

        def do_copies():
            c0.record(cs)
            for _ in range(reps):
                if per_item:
                    x, y = ev(timing), ev(timing)
                    x.record(cs)
                memcpy(dst, src, n, cs)
                if per_item:
                    y.record(cs)
                    c_ev.append((x, y))
            c1.record(cs)

        if gemms_first:
            if gemms:
                do_gemms()
            if copies:
                do_copies()
        else:
            if copies:
                do_copies()
            if gemms:
                do_gemms()
        torch.cuda.synchronize()
        o = {}
        if gemms:
            o["gemm_batch_us"] = g0.elapsed_time(g1) * 1e3
        if copies:
            o["copy_batch_us"] = c0.elapsed_time(c1) * 1e3
        if gemms and copies:
            o["both_span_us"] = (max(g0.elapsed_time(g1), g0.elapsed_time(c1)) - min(0.0, g0.elapsed_time(c0))) * 1e3
        if per_item and timing:
            if g_ev:
                o["gemm_item_median_us"] = statistics.median(x.elapsed_time(y) * 1e3 for x, y in g_ev)
            if c_ev:
                o["copy_item_median_us"] = statistics.median(x.elapsed_time(y) * 1e3 for x, y in c_ev)
        return o

    res["events"] = {
        "gemm_only": batch(False, True, copies=False),
        "copy_only": batch(False, True, gemms=False),
        "per_item_copies_first": batch(True, False),
        "per_item_gemms_first": batch(True, True),
        "no_item_events_copies_first": batch(False, False),
        "no_item_events_gemms_first": batch(False, True),
        "per_item_untimed_events_copies_first": batch(True, False, timing=False),
    }

    # 4. copies beside an SM memory-bound kernel (elementwise add of 1 GiB bf16 tensors: 3 GiB traffic)
    X = torch.randn(512 * MiB, device=dev, dtype=torch.bfloat16)
    Y = torch.randn(512 * MiB, device=dev, dtype=torch.bfloat16)
    Z = torch.empty_like(X)
    for _ in range(3):
        torch.add(X, Y, out=Z)
    torch.cuda.synchronize()

    def addbatch(copies):
        e0, e1, c0, c1 = ev(), ev(), ev(), ev()
        if copies:
            c0.record(cs)
            for _ in range(40):
                memcpy(dst, src, n, cs)
            c1.record(cs)
        with torch.cuda.stream(gs):
            e0.record(gs)
            for _ in range(5):
                torch.add(X, Y, out=Z)
            e1.record(gs)
        torch.cuda.synchronize()
        o = {"add_batch_us": e0.elapsed_time(e1) * 1e3, "add_TBps": 5 * 3 * X.numel() * 2 / (e0.elapsed_time(e1) * 1e-3) / 1e12}
        if copies:
            o["copy_batch_us"] = c0.elapsed_time(c1) * 1e3
        return o

    res["membound"] = {"alone": addbatch(False), "with_copies": addbatch(True)}
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "h200_serialization.json")
