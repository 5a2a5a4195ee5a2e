"""The H200 cuBLAS GEMM library as t3sim runs it, written from the measured kernel choices (``h200/gemm_kernels.csv``).

Every kernel cuBLAS ran in the ``grid``, ``ksweep`` and ``align`` sets (row-major ``torch.matmul``, the ``nn``
layout) becomes one ``system.gemm_library.kernels`` entry, and every measured shape one ``choices`` row
``[M, N, K, kernel]`` (selection ``measured``: the kernel of the nearest measured shape). What each field comes from:

- **nvjet (sm90) kernels**, ``nvjet_sm90_tst_{A}x{B}_{TK}x{S}_{CA}x{CB}_...``: cuBLAS is column-major, so it computes
  ``C^T = B^T A^T``; its tile ``A x B`` is ``A`` of torch's N by ``B`` of torch's M (``tile_n = A``, ``tile_m = B``),
  ``TK`` the K slice, ``S`` the shared-memory stages, the cluster ``CA x CB`` (``cluster_n = CA``, ``cluster_m = CB``);
  ``splitK`` in the name: a split-K kernel followed by ``cublasLt::splitKreduce_kernel``.
- **CUTLASS fallbacks** (``cutlass_80_tensorop_..._s16816gemm_bf16_{A}x{B}_{TK}x{S}_.._align{a}``, ``cutlass_75_..``,
  ``cutlass_80_wmma_..``): the same tile convention; ``align{a}``: ``a`` elements (``operand_alignment_B = 2a``);
  sm75 kernels without ``{TK}x{S}``: 32 x 2 (CUTLASS's sm75 tensor-op default; assumption).
- **Warps, registers**: the profiler's block size and registers per thread (columns ``block``, ``regs``) where the
  CSV has them, else 384 threads and 168 registers (what every nvjet kernel measured on the H100 has); sm90 math warps
  are the block's warps less one producer warpgroup (4 warps), and they are given the whole CTA's registers (block x
  registers, e.g. 384 x 168 over 256 threads = 252 each), so a WG holds the register file the CTA holds (the
  producer warpgroup, which does no math, is not modelled).
- **Split-K slices**: the profiler's grid (``grid`` z, or grid size over tiles).
- **Tile order** (``raster``): nvjet kernels are persistent (grid = the SM count, the profiler's ``grid``) and are
  taken to order their tiles as CUTLASS's sm90 persistent scheduler does by default (``heuristic``: along M when there
  are more tile columns than rows; assumption: nvjet's own rule is not published); the CUTLASS 2.x fallbacks walk M
  first (``GemmIdentityThreadblockSwizzle``: grid x along M).
- **MMA rate**: 1 for every kernel (``--sm80-rate``, ``--sm75-rate``, ``--wmma-rate`` set others): no source gives
  an older generation's MMA rate on an sm90 SM, and the measured fallback rows are not compute-bound in the model
  (README: what they lack).

Run: ``python3 library.py [--csv h200/gemm_kernels.csv] [--out ../../../configs/systems/libraries/cublas-h200-bf16.yaml]``.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
NVJET = re.compile(r"nvjet_sm90_tst_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_([hv])_bz_(?:(\w+?)_)?([NT]{3})$")
CUTLASS = re.compile(r"cutlass_(\d\d)_(wmma_)?tensorop_bf16_s\d+gemm_bf16_(\d+)x(\d+)(?:_(\d+)x(\d+))?_([nt]{2})_align(\d+)")


def base_name(kernel: str) -> str:
    """The kernel's name without its layout suffix (``_NNT``) or C++ wrapper."""
    m = CUTLASS.search(kernel)
    if m:
        return re.sub(r"_[nt]{2}_align", "_align", m.group(0))
    return re.sub(r"_[NT]{3}$", "", kernel)


def parse(row: dict, fallback_rate: dict) -> dict:
    """One library kernel (a ``gemm_library.kernels`` mapping) from a measured row (module doc)."""
    name = row["kernel"]
    block = [int(x) for x in row.get("block", "").split("x") if x] or None
    regs = int(row["regs"]) if row.get("regs") else None
    m = NVJET.search(name)
    if m:
        a, b, tk, st, ca, cb, _dir, variant, _lay = m.groups()
        variant = variant or ""
        tile_n, tile_m, tile_k, stages = int(a), int(b), int(tk), int(st)
        threads = math.prod(block) if block else 384
        warps = max(4, threads // 32 - 4)  # consumer warps: less one producer warpgroup
        # the CTA's registers (block x registers per thread at launch) over the math warps t3sim models, so a WG
        # holds on its SM what the CTA does (setmaxnreg moves registers from the producer to the consumers)
        regs_math = math.ceil((regs or 168) * threads / (warps * 32))
        k = dict(name=base_name(name), tile_m=tile_m, tile_n=tile_n, tile_k=tile_k,
                 wf_grid=[warps // 4, 4], registers_per_thread=regs_math, lds_stages=stages,
                 cluster_m=int(cb), cluster_n=int(ca), split_k=1, operand_alignment_B=16, raster="heuristic",
                 mma_rate=1.0)
        if "splitK" in variant:
            k["split_k"] = split_of(row, tile_m, tile_n)
        return k
    m = CUTLASS.search(name)
    if not m:
        raise ValueError(f"unparsed kernel name {name!r}")
    sm, wmma, a, b, tk, st, _lay, align = m.groups()
    threads = math.prod(block) if block else 256
    warps = threads // 32
    family = ("sm80_wmma" if wmma else f"sm{sm}")
    return dict(name=base_name(name), tile_m=int(b), tile_n=int(a), tile_k=int(tk or 32),
                wf_grid=[max(1, warps // 4), min(4, warps)] if warps >= 4 else [1, warps],
                registers_per_thread=regs or 232, lds_stages=int(st or 2), cluster_m=1, cluster_n=1, split_k=1,
                operand_alignment_B=2 * int(align), raster="along_m", mma_rate=fallback_rate[family])


def split_of(row: dict, tile_m: int, tile_n: int) -> int:
    """Split-K slices of a splitK kernel: the grid's z, else its size over the output tiles; 2 when the CSV has
    no grid (assumption)."""
    grid = [int(x) for x in row.get("grid", "").split("x") if x]
    if not grid:
        return 2
    if len(grid) == 3 and grid[2] > 1:
        return grid[2]
    tiles = math.ceil(int(row["M"]) / tile_m) * math.ceil(int(row["N"]) / tile_n)
    return max(2, round(math.prod(grid) / tiles))


def build(csv_path: Path, fallback_rate: dict):
    kernels, choices = {}, []
    for row in csv.DictReader(open(csv_path)):
        if row["layout"] != "nn" or row["set"] not in ("grid", "ksweep", "align"):
            continue
        k = parse(row, fallback_rate)
        if k["split_k"] > 1:  # a split-K kernel with each split it ran: a kernel of its own
            k["name"] = f"{k['name']}_s{k['split_k']}"
        prev = kernels.setdefault(k["name"], k)
        if prev != k:
            raise ValueError(f"kernel {k['name']} measured with two configurations: {prev} and {k}")
        choices.append([int(row["M"]), int(row["N"]), int(row["K"]), k["name"]])
    return list(kernels.values()), choices


def flow(d: dict) -> str:
    parts = []
    for key, v in d.items():
        parts.append(f"{key}: {v if not isinstance(v, list) else '[' + ', '.join(map(str, v)) + ']'}")
    return "{" + ", ".join(parts) + "}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=str(HERE / "h200" / "gemm_kernels.csv"))
    ap.add_argument("--out", default=str(HERE.parents[2] / "configs" / "systems" / "libraries" / "cublas-h200-bf16.yaml"))
    # 1: no source gives an sm80/sm75 kernel's MMA rate on an sm90 SM, and the measured fallback rows are not
    # compute-bound in the simulation (a rate fitted to them moved their error from 57 % to 47 %: README)
    ap.add_argument("--sm80-rate", type=float, default=1.0, help="mma_rate of sm80 mma.sync fallback kernels")
    ap.add_argument("--sm75-rate", type=float, default=1.0, help="mma_rate of sm75 fallback kernels")
    ap.add_argument("--wmma-rate", type=float, default=1.0, help="mma_rate of sm80 wmma fallback kernels")
    ap.add_argument("--gpu", default="H200", help="the GPU the CSV was measured on (names the library)")
    args = ap.parse_args()
    rates = {"sm80": args.sm80_rate, "sm75": args.sm75_rate, "sm80_wmma": args.wmma_rate}
    kernels, choices = build(Path(args.csv), rates)
    src = Path(args.csv).resolve().relative_to(HERE)
    lines = [f"# GENERATED by experiments/validation/gemm_kernels/library.py from {src}: do not edit.",
             f"# cuBLAS's bf16 GEMM kernels on one {args.gpu}, as torch.matmul ran them, and the kernel it ran for each",
             "# measured shape (the library.py docstring says what each field comes from). Used as system.gemm_library.",
             f"name: cuBLAS (PyTorch 2.11, CUDA 13.0) bf16 on {args.gpu}, measured",
             "selection: measured",
             "kernels:"]
    lines += [f"  - {flow(k)}" for k in kernels]
    lines.append("choices:")
    lines += [f"  - [{m}, {n}, {k}, {name}]" for m, n, k, name in choices]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"{len(kernels)} kernels, {len(choices)} choices -> {args.out}")


if __name__ == "__main__":
    main()
