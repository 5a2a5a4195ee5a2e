"""Reduce-scatter / all-gather (/ all-reduce) sweep over NCCL's pinned algorithms and protocols.

Question: how do NCCL's collectives on this NVLink node take time from 4 to 24 MiB (2 MiB steps), under its
default choice and with ``NCCL_ALGO`` / ``NCCL_PROTO`` pinned (Ring x {LL, LL128, Simple}; Tree x the three
for all-reduce only: NCCL has no Tree reduce-scatter or all-gather)? t3sim's H200 preset simulates NCCL's
Ring/Simple kernel (experiments/validation/README.md); the pinned rows show where the other protocols would
take over and what they cost.

Method. A driver (no torch needed) starts one ``torchrun --nproc_per_node=N`` of this file's worker per
setting (NCCL reads ``NCCL_ALGO`` / ``NCCL_PROTO`` when the communicator is created, so each setting needs a
fresh process group), with ``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING`` and the required environment
(``multigpu_common.REQUIRED_ENV``: NVLS and multicast off). Each rank times, per collective and size,
``--iters`` runs after ``--warmup`` untimed ones, each run preceded by a device synchronise and a barrier,
with a CUDA-event pair around the collective on the current stream (``reduce_scatter_tensor``,
``all_gather_into_tensor``, ``all_reduce``; bf16; ``size_mb`` = the whole array on each GPU in MiB: the RS
input, the AG output, the AR tensor). Per run the slowest rank's time is taken; the CSV's ``median_us`` is
the median over runs (``multigpu_common.summarize``). Rank 0 prints a marker before each case, so the TUNING
lines NCCL prints after it (``<Coll>: <bytes> Bytes -> Algo <a> proto <p> channel{Lo..Hi}={..}``) say what
NCCL ran for that row (``nccl_choice``, ``nccl_channels``).

Output under ``--out``: ``collectives_<N>gpu.csv`` (``t3sim validate``'s collective columns + ``nccl_algo``,
``nccl_proto``, ``nccl_choice``, ...), ``collectives_<N>gpu.env.json`` (versions, ``nvidia-smi topo -m``,
per-setting exit codes), ``logs/collectives_<setting>.log`` (torchrun + NCCL output), ``raw/`` (per-rank
times).

Run: ``python measure_collectives.py --out DIR`` (all GPUs of the host) or ``--dry-run`` (tiny sizes, few
runs, three settings, however many GPUs there are: every code path).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import multigpu_common as mc  # noqa: E402
import multigpu_launch as ml  # noqa: E402


def parse_args(argv: List[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results/multigpu", help="output folder")
    ap.add_argument("--gpus", type=int, default=0, help="processes (GPUs); default: every visible GPU")
    ap.add_argument("--collectives", default="reduce_scatter,all_gather,all_reduce")
    ap.add_argument("--sizes", default="4:24:2", help="MiB: LO:HI:STEP or a comma list")
    ap.add_argument("--settings", default="", help="comma list of labels (default, Ring-LL, ...); default: all")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--dtype", default="bf16", choices=("bf16", "fp16", "fp32"))
    ap.add_argument("--debug-subsys", default="TUNING", help="NCCL_DEBUG_SUBSYS for the workers")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per setting before it is killed")
    ap.add_argument("--dry-run", action="store_true", help="tiny sizes, 2+3 runs, three settings")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--setting", default="default", help=argparse.SUPPRESS)
    ap.add_argument("--raw", default="", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def sizes_of(text: str) -> List[float]:
    """``LO:HI:STEP`` (inclusive) or ``a,b,c`` -> sizes in MiB."""
    if ":" in text:
        lo, hi, step = (int(x) for x in text.split(":"))
        return [float(s) for s in mc.sweep_sizes(lo, hi, step)]
    return [float(x) for x in text.split(",") if x.strip()]


def driver(args: argparse.Namespace) -> int:
    out = Path(args.out)
    gpus = ml.driver_gpus(args.gpus, "measure_collectives")
    if gpus < 1:
        return 2
    colls = [c.strip() for c in args.collectives.split(",") if c.strip()]
    bad = [c for c in colls if c not in mc.COLLECTIVES]
    if bad:
        print(f"measure_collectives: unknown collectives {bad} (one of {mc.COLLECTIVES})", file=sys.stderr)
        return 2
    if args.dry_run:
        args.sizes, args.warmup, args.iters = "1,2", 2, 3
    settings = mc.settings_for(colls, dry_run=args.dry_run)
    if args.settings:
        settings = [mc.parse_setting(s.strip()) for s in args.settings.split(",") if s.strip()]
    rows: List[Dict[str, object]] = []
    runs, versions = [], None
    for s in settings:
        valid = [c for c in colls if s.valid_for(c)]
        if not valid:
            continue
        raw = mc.clear_rank_files(out / "raw" / f"collectives_{s.label}.json")
        env = mc.child_env({**s.env(), "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": args.debug_subsys})
        cmd = [*ml.torchrun(gpus), str(Path(__file__).resolve()), "--worker", "--setting", s.label, "--raw", str(raw),
               "--collectives", ",".join(valid), "--sizes", args.sizes, "--warmup", str(args.warmup),
               "--iters", str(args.iters), "--dtype", args.dtype]
        print(f"[collectives] setting {s.label}: {', '.join(valid)} on {gpus} GPU(s) ...", flush=True)
        run = {"setting": s.label, "collectives": valid,
               **ml.launch(cmd, env, out / "logs" / f"collectives_{s.label}.log", args.timeout)}
        try:
            res = mc.merge_ranks(mc.read_rank_files(raw))
        except ValueError as exc:  # a rank did not finish: no row from this setting
            run["error"] = str(exc)
        else:
            raw.write_text(json.dumps(res) + "\n")
            if res["errors"]:
                run["error"] = "; ".join(res["errors"])
            versions = versions or res.get("versions")
            with open(run["log"], errors="replace") as f:
                got = mc.collective_rows(res, mc.parse_tuning_log(f))
            rows += got
            run["rows"] = len(got)
        runs.append(run)
        print(f"[collectives] setting {s.label}: exit {run['rc']}, {run.get('rows', 0)} rows, {run['wall_s']} s; "
              f"log {run['log']}" + (f"; {run['error']}" if run.get("error") else ""), flush=True)
    stem = f"collectives_{gpus}gpu"
    if rows:
        mc.write_csv(out / f"{stem}.csv", mc.COLLECTIVE_COLUMNS, rows)
    ml.write_sidecar(out / f"{stem}.env.json", {
        "what": "NCCL collectives sweep (measure_collectives.py)", "dry_run": args.dry_run, "gpus": gpus,
        "args": vars(args), "settings": runs, "versions": versions, "host": ml.host_info(),
        "protocol": ml.timing_protocol(args.iters, args.warmup)})
    print(f"[collectives] wrote {len(rows)} rows to {out / (stem + '.csv')}", flush=True)
    ok = rows and all(r["rc"] == 0 and not r.get("error") for r in runs)
    return 0 if ok else 1


def worker(args: argparse.Namespace) -> int:
    """One rank (under ``torchrun``, started by :func:`main` with the required environment set)."""
    # lazy: torch exists only on the GPU host and must be imported after the environment is set
    import torch
    import torch.distributed as dist

    import multigpu_torch as mt

    me = mt.init_distributed()
    rank, world = me["rank"], me["world"]
    dtype = mt.DTYPES[args.dtype]
    esize = torch.tensor([], dtype=dtype).element_size()
    sync = mt.barrier_sync(me["local"])
    results, errors = [], []
    for coll in [c for c in args.collectives.split(",") if c]:
        for size in sizes_of(args.sizes):
            n = int(round(size * mc.MIB)) // esize
            n -= n % world
            if rank == 0:
                print(mc.mark_line(collective=coll, size_mb=size, setting=args.setting), flush=True)
            if coll == "reduce_scatter":
                inp, out = torch.ones(n, dtype=dtype, device="cuda"), torch.empty(n // world, dtype=dtype, device="cuda")
                op = lambda: dist.reduce_scatter_tensor(out, inp)  # noqa: E731
            elif coll == "all_gather":
                inp, out = torch.ones(n // world, dtype=dtype, device="cuda"), torch.empty(n, dtype=dtype, device="cuda")
                op = lambda: dist.all_gather_into_tensor(out, inp)  # noqa: E731
            else:
                out = torch.zeros(n, dtype=dtype, device="cuda")
                op = lambda: dist.all_reduce(out)  # noqa: E731
            try:
                times = mt.time_op(op, args.warmup, args.iters, sync)
            except Exception as exc:  # noqa: BLE001 - e.g. NCCL refuses the pinned setting for this collective
                errors.append(f"{coll} {size:g} MiB: {type(exc).__name__}: {exc}")
                break  # every rank fails alike (same environment); the other collectives still run
            results.append({"collective": coll, "size_mb": size, "times_us": times})
            del op, out
    if rank == 0:
        print(mc.mark_line(collective="end", size_mb=-1, setting=args.setting), flush=True)
    mine = {"rank": rank, "world_size": world, "setting": args.setting, "dtype": args.dtype, "results": results,
            "error": "; ".join(errors) or None}
    mt.finish_worker(args.raw, mine)
    return 0


def main(argv: List[str]) -> int:
    return ml.run_script(argv, parse_args, driver, worker)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
