"""Which cuBLAS kernel ``torch.matmul`` runs for each GEMM shape on one GPU, and how long it takes.

The shapes are the ones t3sim's experiments create, in bf16 (row-major A of M x K, row-major B of K x N):

- ``grid``: whole GEMMs and row shards, M from 16 to 32768 (powers of two) against the (N, K) of the
  tensor-parallel sub-layers of Mega-GPT-2, T-NLG and GPT-3 at TP = 4 and 8 (OP, FC-1, FC-2);
- ``ksweep``: K from 64 to 16384 at M = 128, 2048, 16384 and N = 3072, 12288 (K-chunks of accumulating schedules);
- ``align``: K or N one element off a multiple of 8 (a 16-byte stride is what TMA needs), beside their aligned
  neighbours of the same work;
- ``decomp``: one GEMM whole, as 8 and as 64 row shards back to back, and as 8 accumulating K-chunks
  (``C.addmm_(A_i, B_i)``: beta = 1), each timed as one sequence between two CUDA events;
- ``linear``: a subset of ``grid`` as ``torch.nn.functional.linear`` (B stored N x K, the layout of a weight).

Kernel names come from torch.profiler's CUDA kernel events, with each kernel's grid, block, registers per thread,
shared memory and duration from the profiler's trace; every kernel of the call is kept, so a split-K reduction or a
second kernel shows up. Three times per call, medians of ``--reps`` after 5 warm-ups:

- ``median_us``/``min_us``: CUDA events around each call, the host waiting for each call (the method of
  ``../gemm_pipeline/measure.py``): for small GEMMs this is the host's launch time, not the GPU's;
- ``gpu_us``: the same events with the GPU held by a sleep kernel while the host enqueues the call
  (``gpu_timing.gpu_times``): the GPU's time for the call, kernels and the gaps between them;
- ``kernel_us``: the sum of the call's kernel durations in the profiler's trace.

- ``launch`` (``launch.csv``): the two CUDA events alone, and 1, 8 and 64 kernels back to back between them (a
  one-element add, and a 64 x 64 x 64 GEMM): the events' own time, and what each further kernel of a stream adds.

Run: ``python3 measure.py --out DIR`` (writes ``DIR/gemm_kernels.csv``, ``DIR/launch.csv``, ``DIR/decomp.csv`` and
``DIR/env.json``);
``--quick`` measures a few shapes of each set (a dry run).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpu_timing import ev_times, gpu_times, kernels_of  # noqa: E402  (experiments/validation/gpu_timing.py)

MS = tuple(2 ** i for i in range(3, 16))  # 8 .. 32768 (8: a 64-row GEMM in 8 row chunks)
MODELS = {"mega-gpt-2": 3072, "t-nlg": 4256, "gpt-3": 12288}


def sublayer_nk(h: int, tp: int) -> dict[str, tuple[int, int]]:
    """(N, K) of one GPU's GEMM per sub-layer (T3 Table 2's sub-layers; FC-1 in its AllGather+GEMM form)."""
    return {"OP": (h, h // tp), "FC-2": (h, 4 * h // tp), "FC-1": (4 * h // tp, h)}


def shapes(quick: bool) -> list[tuple[str, str, int, int, int]]:
    """(set, label, M, N, K) rows to measure."""
    rows = []
    nks = {}
    for model, h in MODELS.items():
        for tp in (4, 8):
            for sub, nk in sublayer_nk(h, tp).items():
                nks.setdefault(nk, f"{model}-tp{tp}-{sub}")
    for (n, k), label in sorted(nks.items()):
        for m in MS:
            rows.append(("grid", label, m, n, k))
    for m in (128, 2048, 16384):
        for n in (3072, 12288):
            for k in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384):
                rows.append(("ksweep", f"n{n}", m, n, k))
    for m, n, k in ((4096, 3072, 4096), (4096, 3072, 4095), (4096, 3072, 4100), (4096, 3071, 4096),
                    (4096, 3076, 4096), (1024, 12288, 1536), (1024, 12288, 1535), (1024, 12287, 1536)):
        rows.append(("align", "off8" if (n % 8 or k % 8) else "aligned", m, n, k))
    if quick:
        rows = rows[::37] + [r for r in rows if r[0] == "align"][:3]
    return rows


COLUMNS = ["set", "label", "layout", "M", "N", "K", "kernel", "grid", "block", "regs", "smem_B", "kernels",
           "n_kernels", "kernel_us", "gpu_us", "median_us", "min_us", "TFLOPs"]


def measure_shapes(rows, reps: int, writer) -> None:
    dev = torch.device("cuda")
    for st, label, m, n, k in rows:
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        layouts = [("nn", lambda: torch.matmul(a, b))]
        if st == "grid" and m in (64, 512, 4096, 16384):
            w = b.t().contiguous()
            layouts.append(("linear", lambda: torch.nn.functional.linear(a, w)))
        for layout, fn in layouts:
            ks = kernels_of(fn)
            ts = ev_times(fn, reps)
            gpu = statistics.median(gpu_times(fn, reps))
            main = max(ks, key=lambda e: e["dur_us"]) if ks else {"name": "", "dur_us": 0}
            writer.writerow({"set": st, "label": label, "layout": layout, "M": m, "N": n, "K": k,
                             "kernel": main["name"], "grid": main.get("grid", ""), "block": main.get("block", ""),
                             "regs": main.get("regs", ""), "smem_B": main.get("smem_B", ""),
                             "kernels": ";".join(e["name"] for e in ks), "n_kernels": len(ks),
                             "kernel_us": round(sum(e["dur_us"] for e in ks), 3), "gpu_us": round(gpu, 3),
                             "median_us": round(statistics.median(ts), 3), "min_us": round(min(ts), 3),
                             "TFLOPs": round(2 * m * n * k / gpu / 1e6, 2)})
        del a, b
    torch.cuda.synchronize()


def measure_decomp(reps: int, quick: bool, path: Path) -> None:
    """Whole vs 8 and 64 row shards vs 8 accumulating K-chunks, each as one back-to-back sequence."""
    dev = torch.device("cuda")
    cases = [(16384, 3072, 1536), (16384, 3072, 3072), (8192, 12288, 6144), (4096, 4256, 4256), (2048, 12288, 1536),
             (1024, 3072, 3072)]
    if quick:
        cases = cases[:2]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, ["M", "N", "K", "form", "pieces", "n_kernels", "kernel_us", "gpu_us", "median_us",
                               "min_us", "kernels"])
        w.writeheader()
        for m, n, k in cases:
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
            c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
            forms = {"whole": (1, lambda: torch.matmul(a, b, out=c))}
            for p in (8, 64):
                if m % p == 0:
                    rows_a = [a[i * m // p:(i + 1) * m // p] for i in range(p)]
                    rows_c = [c[i * m // p:(i + 1) * m // p] for i in range(p)]
                    forms[f"rows{p}"] = (p, lambda ra=rows_a, rc=rows_c: [torch.matmul(x, b, out=y)
                                                                          for x, y in zip(ra, rc)])
            if k % 8 == 0:
                ak = [a[:, i * k // 8:(i + 1) * k // 8].contiguous() for i in range(8)]
                bk = [b[i * k // 8:(i + 1) * k // 8].contiguous() for i in range(8)]

                def kchunks(ak=ak, bk=bk):
                    c.zero_()
                    for x, y in zip(ak, bk):
                        c.addmm_(x, y)
                forms["kchunks8"] = (8, kchunks)
            for form, (pieces, fn) in forms.items():
                ks = kernels_of(fn)
                names = sorted({e["name"] for e in ks})
                ts = ev_times(fn, reps)
                gpu = statistics.median(gpu_times(fn, reps))
                w.writerow({"M": m, "N": n, "K": k, "form": form, "pieces": pieces, "n_kernels": len(ks),
                            "kernel_us": round(sum(e["dur_us"] for e in ks), 3), "gpu_us": round(gpu, 3),
                            "median_us": round(statistics.median(ts), 3), "min_us": round(min(ts), 3),
                            "kernels": ";".join(names)})
                f.flush()
            del a, b, c


def measure_launch(reps: int, path: Path) -> None:
    """The GPU's time for the two CUDA events alone (``kernels`` 0), and for 1, 8 and 64 kernels back to back between
    them: kernels that add 1 to one element (``add1``) and 64 x 64 x 64 GEMMs (``matmul64``): the events' own time,
    and what each further kernel of a stream adds beyond its duration."""
    x = torch.zeros(1, device="cuda")
    a = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    ops = {"add1": lambda: x.add_(1), "matmul64": lambda: torch.matmul(a, b)}
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, ["kind", "kernels", "kernel_us", "gpu_us", "kernel"])
        w.writeheader()
        w.writerow({"kind": "events", "kernels": 0, "kernel_us": 0, "kernel": "",
                    "gpu_us": round(statistics.median(gpu_times(lambda: None, reps)), 3)})
        for kind, op in ops.items():
            for n in (1, 8, 64):
                fn = (lambda op=op, n=n: [op() for _ in range(n)])
                ks = kernels_of(fn)
                w.writerow({"kind": kind, "kernels": len(ks), "kernel_us": round(sum(e["dur_us"] for e in ks), 3),
                            "gpu_us": round(statistics.median(gpu_times(fn, reps)), 3),
                            "kernel": ks[0]["name"] if ks else ""})
                f.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="a few shapes of each set (a dry run)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cublas": torch.backends.cuda.preferred_blas_library().name if hasattr(torch.backends.cuda,
                                                                                  "preferred_blas_library") else "",
           "sm_count": props.multi_processor_count, "l2_bytes": getattr(props, "L2_cache_size", None),
           "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                    capture_output=True, text=True).stdout.strip()}
    (out / "env.json").write_text(json.dumps(env, indent=1) + "\n")
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    with open(out / "gemm_kernels.csv", "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        measure_shapes(shapes(args.quick), args.reps, w)
    measure_launch(args.reps, out / "launch.csv")
    measure_decomp(args.reps, args.quick, out / "decomp.csv")
    print(json.dumps(env), flush=True)


if __name__ == "__main__":
    main()
