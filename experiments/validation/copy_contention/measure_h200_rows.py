"""Re-measure gemm_copy_contention.csv's rows on one H200 with a written-down protocol.

Run: ``python3 measure_h200_rows.py ROWS.csv OUT.csv OUT.json`` (ROWS.csv: the reference CSV; its
model/sublayer/tp/M/N/K columns are used). Writes OUT.csv with the reference CSV's columns.

Protocol (every time from CUDA events, bf16 ``torch.matmul`` on the default stream; copies are
``cudaMemcpyAsync`` through CuPy's runtime binding on their own streams, an event pair around each):

* ``gemm_alone_us``: median of 20 back-to-back GEMMs after 5 warm-ups.
* copies alone: each background's copies back to back for 12 (D2D) or 4 (PCIe) copies per stream;
  a stream's copy time is its median copy.
* ``gemm_with_<bg>_us``: the background's copies are enqueued first (enough to outlast the GEMMs),
  the GEMM stream sleeps 0.3 ms, then 20 GEMMs run back to back; the median over GEMMs lying
  entirely inside [last stream's first copy start, first stream's last copy end].
* ``copy_slowdown_<bg>``: the median time of the copies lying entirely inside the span of those
  GEMMs, over the copy time alone (mean over the background's streams).

Backgrounds: ``d2d1`` one stream of 256 MiB device-to-device copies; ``d2d2`` two such streams;
``pcie`` 64 MiB pinned host-to-device and device-to-host copies on two streams.
"""

import csv
import json
import statistics
import sys
from pathlib import Path

import cupy
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "multigpu"))
import multigpu_torch as mt  # noqa: E402  (its GEMM timing)

MiB = 1 << 20
dev = torch.device("cuda")
rt = cupy.cuda.runtime
D2D, H2D, D2H = rt.memcpyDeviceToDevice, rt.memcpyHostToDevice, rt.memcpyDeviceToHost


def ev():
    return torch.cuda.Event(enable_timing=True)


class CopyStream:
    def __init__(self, kind, n):
        self.kind, self.n = kind, n
        self.stream = torch.cuda.Stream()
        host = torch.empty(n, dtype=torch.uint8).pin_memory() if kind != D2D else None
        a = torch.empty(n, dtype=torch.uint8, device=dev)
        b = torch.empty(n, dtype=torch.uint8, device=dev) if kind == D2D else host
        src, dst = {D2D: (a, b), H2D: (host, a), D2H: (a, host)}[kind]
        self.bufs = (src, dst)
        self.sp, self.dp = src.data_ptr(), dst.data_ptr()
        self.events = []

    def enqueue(self, count):
        self.events = []
        for _ in range(count):
            a, b = ev(), ev()
            a.record(self.stream)
            rt.memcpyAsync(self.dp, self.sp, self.n, self.kind, self.stream.cuda_stream)
            b.record(self.stream)
            self.events.append((a, b))


BG = {"d2d1": ((D2D, 256 * MiB),), "d2d2": ((D2D, 256 * MiB), (D2D, 256 * MiB)),
      "pcie": ((H2D, 64 * MiB), (D2H, 64 * MiB))}


def copies_alone(streams, count):
    for s in streams:
        s.enqueue(2)
    torch.cuda.synchronize()
    for s in streams:
        s.enqueue(count)
    torch.cuda.synchronize()
    return [statistics.median(a.elapsed_time(b) * 1e3 for a, b in s.events) for s in streams]


def with_background(A, B, streams, alone_us, gemm_us, reps=20):
    per_copy = max(alone_us)
    n = int((300 + reps * gemm_us * 8) / per_copy) + 6  # copies to outlast the (slowed) GEMMs
    ref = ev()
    ref.record()
    for s in streams:
        s.enqueue(n)
    torch.cuda._sleep(int(300e-6 * 1.98e9))
    ge = [(ev(), ev()) for _ in range(reps)]
    for x, y in ge:
        x.record()
        torch.matmul(A, B)
        y.record()
    torch.cuda.synchronize()
    T = lambda e: ref.elapsed_time(e) * 1e3  # noqa: E731
    copies = [[(T(x), T(y)) for x, y in s.events] for s in streams]
    w0, w1 = max(c[0][0] for c in copies), min(c[-1][1] for c in copies)
    gemms = [(T(x), T(y)) for x, y in ge]
    inside = [(a, b) for a, b in gemms if a >= w0 and b <= w1]
    out = {"gemms_inside": len(inside), "copies_enqueued_per_stream": n}
    if not inside:
        return out
    out["gemm_us"] = statistics.median(b - a for a, b in inside)
    g0, g1 = inside[0][0], inside[-1][1]
    sd = []
    for cs, a_us in zip(copies, alone_us):
        full = [y - x for x, y in cs if x >= g0 and y <= g1]
        out.setdefault("copies_inside", []).append(len(full))
        if full:
            sd.append(statistics.median(full) / a_us)
    if sd:
        out["copy_slowdown"] = sum(sd) / len(sd)
    return out


def main(rows_csv, out_csv, out_json):
    rows = list(csv.DictReader(open(rows_csv)))
    streams = {bg: [CopyStream(k, n) for k, n in spec] for bg, spec in BG.items()}
    alone = {bg: copies_alone(s, 12 if bg != "pcie" else 4) for bg, s in streams.items()}
    res = {"copies_alone_us": alone, "rows": []}
    cols = ["model", "sublayer", "tp", "M", "N", "K", "gemm_alone_us", "gemm_with_d2d1_us", "gemm_with_d2d2_us",
            "gemm_with_pcie_us", "copy_slowdown_d2d1", "copy_slowdown_d2d2", "copy_slowdown_pcie"]
    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            M, N, K = int(r["M"]), int(r["N"]), int(r["K"])
            A = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            B = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
            ga = mt.gemm_alone_us(A, B)
            rec = {"row": {k: r[k] for k in cols[:6]}, "gemm_alone_us": ga}
            line = [r[k] for k in cols[:6]] + [f"{ga:.1f}"]
            got = {}
            for bg in BG:
                got[bg] = with_background(A, B, streams[bg], alone[bg], ga)
            rec.update(got)
            line += [f"{got[bg].get('gemm_us', float('nan')):.1f}" for bg in BG]
            line += [f"{got[bg].get('copy_slowdown', float('nan')):.3f}" for bg in BG]
            w.writerow(line)
            res["rows"].append(rec)
            print(",".join(line), flush=True)
    json.dump(res, open(out_json, "w"), indent=1)
    print(json.dumps(alone))


if __name__ == "__main__":
    main(*sys.argv[1:4])
