"""Measure GEMM / copy-engine contention on one H200, separating mechanisms.

Run on a machine with one Hopper GPU, PyTorch and CuPy:  python3 measure_h200.py OUT.json

Copies are explicit cudaMemcpyAsync calls (CuPy's runtime binding) on their own streams; GEMMs are
torch.matmul (cuBLAS) in bf16 on the default stream. Times come from CUDA events (per copy and per
GEMM), so every copy's and every GEMM's start and end are known. What is measured:

* ``device``: the GPU's properties (asyncEngineCount, L2 size, SMs).
* ``copy_alone``: 1-4 streams of back-to-back 256 MiB device-to-device copies: median copy time and
  the aggregate rate (read + write bytes / time).
* ``gemm_alone``: each GEMM shape alone (median of 20 back-to-back runs).
* ``contention``: for each GEMM shape and background (``d2d1``/``d2d2``: 1/2 streams of back-to-back
  256 MiB D2D copies; ``d2d1_32M``: 32 MiB copies; ``pcie``: 64 MiB pinned H2D + D2H), the copies
  are enqueued first, the GEMM stream sleeps 0.3 ms (so copies reach steady state) then runs 20
  GEMMs back to back. Reported: GEMM median over the GEMMs inside the copy window; per copy stream
  the median duration of copies (a) lying entirely inside the GEMM window, (b) overlapping it at
  all; and the bytes-based copy rate inside the GEMM window (bytes of copies, prorated by overlap,
  divided by the window), which needs no per-copy assumption.
"""

import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "multigpu"))
import multigpu_torch as mt  # noqa: E402  (its GEMM timing)

try:
    import cupy
except ImportError:  # pragma: no cover - fall back to PyTorch's copy_ (also cudaMemcpyAsync for contiguous bytes)
    cupy = None

MiB = 1 << 20
dev = torch.device("cuda")
rt = cupy.cuda.runtime if cupy is not None else None
D2D, H2D, D2H = 3, 1, 2  # cudaMemcpyKind


def ev():
    return torch.cuda.Event(enable_timing=True)


def memcpy(cs, stream):
    if rt is not None:
        rt.memcpyAsync(cs.dp, cs.sp, cs.n, cs.kind, stream.cuda_stream)
    else:
        cs.dst.copy_(cs.src, non_blocking=True)


class CopyStream:
    """A stream of back-to-back copies of ``n`` bytes with an event pair around each."""

    def __init__(self, kind, n, idx):
        self.kind, self.n = kind, n
        self.stream = torch.cuda.Stream()
        if kind == D2D:
            self.src = torch.empty(n, dtype=torch.uint8, device=dev)
            self.dst = torch.empty(n, dtype=torch.uint8, device=dev)
            self.sp, self.dp = self.src.data_ptr(), self.dst.data_ptr()
        elif kind == H2D:
            self.src = torch.empty(n, dtype=torch.uint8).pin_memory()
            self.dst = torch.empty(n, dtype=torch.uint8, device=dev)
            self.sp, self.dp = self.src.data_ptr(), self.dst.data_ptr()
        else:
            self.src = torch.empty(n, dtype=torch.uint8, device=dev)
            self.dst = torch.empty(n, dtype=torch.uint8).pin_memory()
            self.sp, self.dp = self.src.data_ptr(), self.dst.data_ptr()
        self.events = []

    def enqueue(self, count):
        self.events = []
        with torch.cuda.stream(self.stream):
            for _ in range(count):
                a, b = ev(), ev()
                a.record(self.stream)
                memcpy(self, self.stream)
                b.record(self.stream)
                self.events.append((a, b))


def copy_alone(streams, count=12):
    for s in streams:
        s.enqueue(2)
    torch.cuda.synchronize()
    for s in streams:
        s.enqueue(count)
    torch.cuda.synchronize()
    ref = streams[0].events[0][0]
    per = [[a.elapsed_time(b) * 1e3 for a, b in s.events] for s in streams]
    first = min(ref.elapsed_time(s.events[0][0]) for s in streams)
    last = max(ref.elapsed_time(s.events[-1][1]) for s in streams)
    total_B = sum(s.n * count for s in streams) * (2 if streams[0].kind == D2D else 1)
    return {"streams": len(streams), "copy_MiB": streams[0].n / MiB,
            "median_copy_us": [statistics.median(p) for p in per],
            "aggregate_TBps": total_B / ((last - first) * 1e-3) / 1e12}


def gemm_tensors(M, N, K):
    a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    b = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
    return a, b


def gemm_alone(M, N, K, reps=20):
    return mt.gemm_alone_us(*gemm_tensors(M, N, K), reps)


def contention(M, N, K, streams, copies_per_stream, reps=20, sleep_us=300):
    a, b = gemm_tensors(M, N, K)
    for _ in range(5):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    ref = ev()
    ref.record()
    for s in streams:
        s.enqueue(copies_per_stream)
    torch.cuda._sleep(int(sleep_us * 1.98e3))
    ge = [(ev(), ev()) for _ in range(reps)]
    for x, y in ge:
        x.record()
        torch.matmul(a, b)
        y.record()
    torch.cuda.synchronize()
    T = lambda e: ref.elapsed_time(e) * 1e3  # us since ref
    copies = [[(T(x), T(y)) for x, y in s.events] for s in streams]
    win0 = max(c[0][0] for c in copies)
    win1 = min(c[-1][1] for c in copies)
    gemms = [(T(x), T(y)) for x, y in ge]
    inside = [g1 - g0 for g0, g1 in gemms if g0 >= win0 and g1 <= win1]
    out = {"gemms_inside": len(inside), "gemm_us": statistics.median(inside) if inside else None,
           "gemm_all_us": [round(g1 - g0, 2) for g0, g1 in gemms]}
    if inside:
        G0 = min(g0 for g0, g1 in gemms if g0 >= win0 and g1 <= win1)
        G1 = max(g1 for g0, g1 in gemms if g0 >= win0 and g1 <= win1)
        out["gemm_window_us"] = [round(G0, 2), round(G1, 2)]
        per = []
        for s, cs in zip(streams, copies):
            full = [y - x for x, y in cs if x >= G0 and y <= G1]
            over = [y - x for x, y in cs if y > G0 and x < G1]
            # bytes-based: each copy's bytes prorated by its overlap with the window, assuming a uniform rate
            B = sum(s.n * max(0.0, min(y, G1) - max(x, G0)) / (y - x) for x, y in cs if y > x)
            per.append({"copies_inside": len(full), "median_inside_us": statistics.median(full) if full else None,
                        "copies_overlapping": len(over), "median_overlapping_us": statistics.median(over) if over else None,
                        "rate_in_window_GBps": B / ((G1 - G0) * 1e-6) / 1e9,
                        "all_copy_us": [round(y - x, 2) for x, y in cs]})
        out["copy_streams"] = per
    return out


def main(path):
    props = rt.getDeviceProperties(0) if rt is not None else {}
    name = props.get("name", b"?")
    res = {"device": {"name": name.decode() if isinstance(name, bytes) else str(name), "torch": torch.__version__,
                      **{k: props.get(k) for k in ("asyncEngineCount", "l2CacheSize", "multiProcessorCount",
                                                   "memoryBusWidth", "concurrentKernels", "persistingL2CacheMaxSize")}}}
    t_start = time.time()
    d2d = [CopyStream(D2D, 256 * MiB, i) for i in range(4)]
    d2d32 = [CopyStream(D2D, 32 * MiB, i) for i in range(2)]
    pcie = [CopyStream(H2D, 64 * MiB, 0), CopyStream(D2H, 64 * MiB, 1)]
    res["copy_alone"] = [copy_alone(d2d[:k]) for k in (1, 2, 3, 4)]
    res["copy_alone"].append(copy_alone(d2d32[:1], count=40))
    res["copy_alone"].append(copy_alone(d2d32[:2], count=40))
    res["copy_alone_pcie"] = copy_alone(pcie, count=6)
    shapes = [(16384, 3072, 192), (16384, 3072, 384), (16384, 3072, 768), (16384, 3072, 1536),
              (4096, 3072, 6144), (16384, 768, 6144), (8192, 8192, 8192)]
    res["gemm_alone"] = {f"{M}x{N}x{K}": gemm_alone(M, N, K) for M, N, K in shapes}
    res["contention"] = {}
    for M, N, K in shapes:
        key = f"{M}x{N}x{K}"
        ga = res["gemm_alone"][key]
        n256 = int((300 + 20 * ga * 6) / 120) + 4   # copies enough to cover the sleep and 20 slowed GEMMs
        r = {}
        for name, streams, n in (("d2d1", d2d[:1], n256), ("d2d2", d2d[:2], n256 // 2 + 3),
                                 ("d2d1_32M", d2d32[:1], 8 * n256), ("pcie", pcie, int((300 + 40 * ga) / 1200) + 3)):
            if name == "pcie" and K not in (384, 1536):
                continue
            try:
                r[name] = contention(M, N, K, streams, n)
            except Exception as exc:  # keep the rest of the measurement
                r[name] = {"error": repr(exc)}
        res["contention"][key] = r
        print(key, "alone", round(ga, 1), {k: v.get("gemm_us") for k, v in r.items()}, flush=True)
    res["wall_s"] = time.time() - t_start
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps({k: res[k] for k in ("device", "copy_alone", "copy_alone_pcie", "gemm_alone")}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "h200_copy_contention.json")
