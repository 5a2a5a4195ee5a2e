"""PyTorch AsyncTP's decomposed GEMM+RS and AG+GEMM beside the plain sequential pair, TP = the GPU count.

Question: on this NVLink node, how long do ``torch.ops.symm_mem.fused_matmul_reduce_scatter`` (each rank
computes the GEMM in ``tp`` row blocks, one per destination, and the peers pull each block from symmetric
memory while the next is computed; a local kernel reduces the ``tp`` partials) and
``torch.ops.symm_mem.fused_all_gather_matmul`` (the shards of A are pulled from the peers' symmetric buffers
one by one on two streams, each multiplied as it arrives) take, against the same GEMM and NCCL collective run
one after the other, on the Mega-GPT-2 and T-NLG sub-layer shapes at TP = 4?

Shapes (``multigpu_common.overlap_shapes``, from the models' T and H as t3sim/workload/generate.py slices
them): ``gemm_rs``: ``M = T, N = H, K = H f / tp`` (Mega-GPT-2: the rows of overlap_4gpu.csv), the M x N
output reduce-scattered over the GPUs; ``ag_gemm``: the sub-layer's consumer GEMM ``M = T, N = H f / tp,
K = H`` whose ``M x K`` input is all-gathered from ``M / tp``-row shards first (Megatron sequence parallelism).

Cases per shape, each timed in the same process (``--iters`` runs after ``--warmup``, each run after a device
synchronise and a barrier, CUDA events on the current stream, the slowest rank per run, median over runs):

* ``gemm``: ``torch.matmul`` alone (bf16, row-major A and B); ``rs`` / ``ag``: the NCCL collective alone
  (``reduce_scatter_tensor`` of the M x N output; ``all_gather_into_tensor`` of the M x K input);
* ``sequential``: the GEMM then the collective (gemm_rs) or the collective then the GEMM (ag_gemm), one stream;
* gemm_rs only, the reference protocol of overlap_4gpu.csv: ``concurrent``: an RS of an *independent* M x N
  array issued first on a second stream, the GEMM on the current one; ``chunked``: the GEMM in 4 chunks of
  M/4 rows, chunk i's RS on a second stream after an event recorded after chunk i;
* ``asynctp``: the fused op (``reduce_op="sum"``, ``scatter_dim`` / ``gather_dim`` 0, the world group's
  symmetric memory). Its result is compared once with the sequential pair's (``max_rel_diff`` in the raw JSON).

Output under ``--out``: ``asynctp_<N>gpu.csv`` (overlap columns + ``op``, ``scheme``, ``pair_us``, ``ag_us``;
``multigpu_common.OVERLAP_COLUMNS``), ``asynctp_<N>gpu.env.json``, ``logs/asynctp.log`` (NCCL TUNING lines
included), ``raw/asynctp.json``. With one GPU (``--dry-run`` on a single-GPU host) AsyncTP runs if symmetric
memory accepts a world of one; otherwise the run says "asynctp needs >= 2 GPUs" and that part is skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import List

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import multigpu_common as mc  # noqa: E402
import multigpu_launch as ml  # noqa: E402

NEEDS_TWO = "asynctp needs >= 2 GPUs"


def parse_args(argv: List[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results/multigpu", help="output folder")
    ap.add_argument("--gpus", type=int, default=0, help="processes (GPUs) = TP degree; default: every visible GPU")
    ap.add_argument("--models", default="mega-gpt-2,t-nlg")
    ap.add_argument("--ops", default="gemm_rs,ag_gemm")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--chunks", type=int, default=4, help="chunks of the chunked case (the reference: 4)")
    ap.add_argument("--timeout", type=float, default=1200.0)
    ap.add_argument("--dry-run", action="store_true", help="two tiny shapes per op, 2+3 runs")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--raw", default="", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def shapes(args: argparse.Namespace, tp: int) -> List[mc.Shape]:
    ops = [o for o in args.ops.split(",") if o]
    if args.dry_run:  # tiny GEMMs whose M splits into chunks x tp rows
        m = 128 * args.chunks * tp
        return [mc.Shape("dry", sub, tp, m, n, k, op) for op in ops for sub, n, k in (("OP", 256, 128), ("FC", 384, 256))]
    return mc.overlap_shapes(tp, [m for m in args.models.split(",") if m], ops)


def driver(args: argparse.Namespace) -> int:
    out = Path(args.out)
    gpus = ml.driver_gpus(args.gpus, "measure_asynctp")
    if gpus < 1:
        return 2
    if args.dry_run:
        args.warmup, args.iters = 2, 3
    raw = mc.clear_rank_files(out / "raw" / "asynctp.json")
    env = mc.child_env({"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "TUNING"})
    cmd = [*ml.torchrun(gpus), str(Path(__file__).resolve()), "--worker", "--raw", str(raw),
           "--models", args.models, "--ops", args.ops, "--warmup", str(args.warmup), "--iters", str(args.iters),
           "--chunks", str(args.chunks), *(["--dry-run"] if args.dry_run else [])]
    print(f"[asynctp] {gpus} GPU(s) ...", flush=True)
    run = ml.launch(cmd, env, out / "logs" / "asynctp.log", args.timeout)
    rows, res = [], {}
    try:
        res = mc.merge_ranks(mc.read_rank_files(raw))
    except ValueError as exc:  # a rank did not finish
        run["error"] = str(exc)
    else:
        raw.write_text(json.dumps(res) + "\n")
        rows = mc.overlap_rows(res)
    stem = f"asynctp_{gpus}gpu"
    if rows:
        mc.write_csv(out / f"{stem}.csv", mc.OVERLAP_COLUMNS, rows)
    note = "; ".join(res.get("errors", [])) or None
    ml.write_sidecar(out / f"{stem}.env.json", {
        "what": "AsyncTP fused GEMM+RS / AG+GEMM vs sequential (measure_asynctp.py)", "dry_run": args.dry_run,
        "gpus": gpus, "args": vars(args), "run": run, "versions": res.get("versions"), "host": ml.host_info(),
        "asynctp_error": note, "checks": res.get("checks"),
        "protocol": ml.timing_protocol(args.iters, args.warmup)})
    print(f"[asynctp] exit {run['rc']}, {len(rows)} rows to {out / (stem + '.csv')} in {run['wall_s']} s"
          + (f"; {note}" if note else ""), flush=True)
    if note and note.startswith(NEEDS_TWO) and gpus < 2 and rows:
        return 0  # the sequential half ran; AsyncTP cannot on one GPU
    return 0 if rows and run["rc"] == 0 and not note else 1


def worker(args: argparse.Namespace) -> int:
    """One rank (under ``torchrun``, started by :func:`main` with the required environment set)."""
    # lazy: torch exists only on the GPU host and must be imported after the environment is set
    import torch
    import torch.distributed as dist

    import multigpu_torch as mt

    me = mt.init_distributed()
    rank, world, local = me["rank"], me["world"], me["local"]
    sync = mt.barrier_sync(local)
    group = dist.group.WORLD.group_name
    fused_err = _enable_symm_mem(group)
    dt = torch.bfloat16
    side = torch.cuda.Stream()
    results, checks = [], []

    def timed(op):
        return mt.time_op(op, args.warmup, args.iters, sync)

    for sh in shapes(args, world):
        M, N, K = sh.M, sh.N, sh.K
        torch.manual_seed(1234 + rank)
        rec = {"shape": {**sh.row(), "op": sh.op}, "times_us": {}}
        if sh.op == "gemm_rs":
            A = torch.randn(M, K, dtype=dt, device="cuda") / K ** 0.5
            B = torch.randn(K, N, dtype=dt, device="cuda")
            C = torch.empty(M, N, dtype=dt, device="cuda")
            out = torch.empty(M // world, N, dtype=dt, device="cuda")
            X, out2 = torch.randn(M, N, dtype=dt, device="cuda"), torch.empty(M // world, N, dtype=dt, device="cuda")
            m = M // args.chunks
            outs = [torch.empty(m // world, N, dtype=dt, device="cuda") for _ in range(args.chunks)]

            def sequential():
                torch.matmul(A, B, out=C)
                dist.reduce_scatter_tensor(out, C)

            def concurrent():
                cur = torch.cuda.current_stream()
                side.wait_stream(cur)
                with torch.cuda.stream(side):  # the RS of an independent array, issued first
                    dist.reduce_scatter_tensor(out2, X)
                torch.matmul(A, B, out=C)
                cur.wait_stream(side)

            def chunked():
                cur = torch.cuda.current_stream()
                for i in range(args.chunks):
                    torch.matmul(A[i * m:(i + 1) * m], B, out=C[i * m:(i + 1) * m])
                    side.wait_stream(cur)
                    with torch.cuda.stream(side):
                        dist.reduce_scatter_tensor(outs[i], C[i * m:(i + 1) * m])
                cur.wait_stream(side)

            cases = {"gemm": lambda: torch.matmul(A, B, out=C), "rs": lambda: dist.reduce_scatter_tensor(out, C),
                     "sequential": sequential, "concurrent": concurrent, "chunked": chunked}
            fused = lambda: torch.ops.symm_mem.fused_matmul_reduce_scatter(A, B, "sum", 0, group)  # noqa: E731
            reference = lambda: (sequential(), out.clone())[1]  # noqa: E731
        else:
            A_shard = torch.randn(M // world, K, dtype=dt, device="cuda") / K ** 0.5
            A_full = torch.empty(M, K, dtype=dt, device="cuda")
            B = torch.randn(K, N, dtype=dt, device="cuda")
            C = torch.empty(M, N, dtype=dt, device="cuda")

            def sequential():
                dist.all_gather_into_tensor(A_full, A_shard)
                torch.matmul(A_full, B, out=C)

            cases = {"gemm": lambda: torch.matmul(A_full, B, out=C),
                     "ag": lambda: dist.all_gather_into_tensor(A_full, A_shard), "sequential": sequential}
            fused = lambda: torch.ops.symm_mem.fused_all_gather_matmul(A_shard, [B], 0, group)[1][0]  # noqa: E731
            reference = lambda: (sequential(), C.clone())[1]  # noqa: E731
        for name, op in cases.items():
            rec["times_us"][name] = timed(op)
        if fused_err is None:
            try:
                want = reference()
                got = fused()
                torch.cuda.synchronize()
                diff = float((got.float() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-6))
                checks.append({"shape": rec["shape"], "rank": rank, "max_rel_diff": diff})
                rec["times_us"]["asynctp"] = timed(fused)
            except Exception as exc:  # noqa: BLE001 - reported in the sidecar; the sequential cases stand
                fused_err = (f"{NEEDS_TWO} (symmetric memory with world size 1: {type(exc).__name__}: {exc})"
                             if world < 2 else f"asynctp failed: {type(exc).__name__}: {exc}")
        results.append(rec)
    mine = {"rank": rank, "world_size": world, "dtype": "bf16", "results": results, "checks": checks,
            "error": fused_err}
    mt.finish_worker(args.raw, mine)
    return 0


def _enable_symm_mem(group_name: str):
    """Load PyTorch's symmetric-memory ops and enable them for the world group (required by older PyTorch,
    a deprecated no-op in newer ones); None, or why AsyncTP cannot run."""
    # lazy: torch exists only on the GPU host (the worker imported it already); symmetric memory is optional
    import torch

    try:
        import torch.distributed._symmetric_memory as symm_mem  # registers torch.ops.symm_mem.*
    except Exception as exc:  # noqa: BLE001
        return f"asynctp unavailable: torch.distributed._symmetric_memory does not import ({exc})"
    for op in ("fused_matmul_reduce_scatter", "fused_all_gather_matmul"):
        if not hasattr(torch.ops.symm_mem, op):
            return f"asynctp unavailable: this torch has no torch.ops.symm_mem.{op}"
    if hasattr(symm_mem, "enable_symm_mem_for_group"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                symm_mem.enable_symm_mem_for_group(group_name)
            except RuntimeError as exc:  # registered already (newer PyTorch does it itself): the ops will say
                print(f"[asynctp] enable_symm_mem_for_group: {exc}", flush=True)
    return None


def main(argv: List[str]) -> int:
    return ml.run_script(argv, parse_args, driver, worker)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
