"""Is a device-to-device cudaMemcpyAsync executed by a copy engine or by SMs?

Run: ``python3 probe_memcpy_kind.py`` (and under ``ncu`` to list the kernels it launches).
A spin kernel holds every SM's thread slots (2 x 1024-thread blocks per SM) or only one SM's
for ~2 ms; a 256 MiB D2D copy, a 64 MiB H2D copy and a 64 MiB D2H copy are issued on another stream
during the spin; each copy's CUDA-event time tells whether it waited for the SMs.
"""

import json
import sys
import time

import cupy
import torch

MiB = 1 << 20
rt = cupy.cuda.runtime
dev = torch.device("cuda")
SPIN = cupy.RawKernel(r'''
extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}''', "spin")


def main(only_copy=False):
    cs, gs = torch.cuda.Stream(), torch.cuda.Stream()
    d_src = torch.empty(256 * MiB, dtype=torch.uint8, device=dev)
    d_dst = torch.empty(256 * MiB, dtype=torch.uint8, device=dev)
    h_buf = torch.empty(64 * MiB, dtype=torch.uint8).pin_memory()
    copies = {"d2d_256MiB": (d_dst.data_ptr(), d_src.data_ptr(), 256 * MiB, rt.memcpyDeviceToDevice),
              "h2d_64MiB": (d_dst.data_ptr(), h_buf.data_ptr(), 64 * MiB, rt.memcpyHostToDevice),
              "d2h_64MiB": (h_buf.data_ptr(), d_src.data_ptr(), 64 * MiB, rt.memcpyDeviceToHost)}
    if only_copy:  # for ncu: just the copies
        for dst, src, n, kind in copies.values():
            rt.memcpyAsync(dst, src, n, kind, cs.cuda_stream)
        torch.cuda.synchronize()
        return
    with cupy.cuda.ExternalStream(gs.cuda_stream):
        SPIN((1,), (32,), (cupy.int64(1000),))  # compile and load first
    torch.cuda.synchronize()
    out = {}
    cycles = int(2e-3 * 1.98e9)
    for spin_name, blocks, threads in (("all_sm_thread_slots", 264, 1024), ("one_sm", 1, 32), ("no_spin", 0, 0)):
        for name, (dst, src, n, kind) in copies.items():
            a, b, c, d = (torch.cuda.Event(enable_timing=True) for _ in range(4))
            a.record(gs)
            if blocks:
                with cupy.cuda.ExternalStream(gs.cuda_stream):
                    SPIN((blocks,), (threads,), (cupy.int64(cycles),))
            b.record(gs)
            time.sleep(0.0003)
            c.record(cs)
            rt.memcpyAsync(dst, src, n, kind, cs.cuda_stream)
            d.record(cs)
            torch.cuda.synchronize()
            out[f"{spin_name}/{name}"] = {"spin_us": round(a.elapsed_time(b) * 1e3, 1),
                                          "copy_issue_after_spin_start_us": round(a.elapsed_time(c) * 1e3, 1),
                                          "copy_us": round(c.elapsed_time(d) * 1e3, 1),
                                          "copy_end_minus_spin_end_us": round(b.elapsed_time(d) * 1e3, 1)}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--copies-only":
        main(True)
    else:
        res = main()
        if len(sys.argv) > 1:
            json.dump(res, open(sys.argv[1], "w"), indent=1)
