"""``t3sim validate``: simulated vs measured hardware times, per row and geomean (issue 4).

::

    t3sim validate --system CONFIG --measured CSV [--gemm CSV] [--out DIR] [--jobs N] [--json]

``--measured`` takes a collective CSV (``collective,gpus,size_mb,dtype,median_us``)
or a GEMM CSV (``model,sublayer,tp,M,N,K,dtype,median_us``), detected from its
header; ``--gemm`` forces the GEMM columns. Writes ``<stem>.csv`` (sim beside
measured), ``<stem>.md`` (the same as a Markdown page, which the docs quote) and ``<stem>.png``
(Fig. 14-style plot) under ``--out`` (default
``results/validation/<system-name>/``). Definitions: :mod:`t3sim.analysis.validation`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List

from t3sim.analysis.validation import Comparison, plot_comparison, read_comparison, read_measured
from t3sim.config import load_system
from t3sim.errors import InputError, check_writable_dir


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="compare simulated with measured times (collectives or GEMMs)")
    p.add_argument("--system", required=True, help="system YAML (e.g. configs/systems/h200-4gpu.yaml)")
    p.add_argument("--measured", action="append", default=[], metavar="CSV",
                   help="measured CSV, collective or GEMM columns (repeatable)")
    p.add_argument("--gemm", action="append", default=[], metavar="CSV", help="measured GEMM CSV (repeatable)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a system field, e.g. collective.cus=16 (repeatable)")
    p.add_argument("--out", default=None, help="output folder (default results/validation/<system-name>/)")
    p.add_argument("--jobs", type=int, default=0, help="parallel processes (default: CPUs available)")
    p.add_argument("--json", action="store_true", help="print rows and summary as JSON instead of tables")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from t3sim.system.validate import default_jobs, system_for_gpus

    inputs = [(path, None) for path in args.measured] + [(path, "gemm") for path in args.gemm]
    if not inputs:
        raise InputError("t3sim validate", "no measured CSV", "--measured CSV and/or --gemm CSV")
    system = load_system(args.system, args.overrides)
    # Read and check every file (and every row) before simulating anything.
    loaded = []
    for path, kind in inputs:
        kind, rows = read_measured(path, kind)
        for r in rows:
            check_row(system_for_gpus(system, int(r.fields["gpus"]), r.where) if kind == "collective" else system,
                      kind, r.fields, r.where)
        loaded.append((path, kind, rows))
    out = Path(args.out) if args.out else Path("results") / "validation" / system.name
    check_writable_dir(out, "--out")
    comparisons: List[Comparison] = []
    for path, kind, rows in loaded:
        jobs = args.jobs if args.jobs > 0 else default_jobs(len(rows))
        outcomes = simulate_with_progress(system, kind, rows, jobs, f"validate {path}")
        cmp = Comparison(kind, system.name, rows, [o.sim_us for o in outcomes], [o.wall_s for o in outcomes],
                         [o.detail for o in outcomes])
        stem = Path(path).stem
        csv_path = cmp.write_csv(out / f"{stem}.csv")
        png_path = plot_comparison(cmp, out / f"{stem}.png")
        # the Markdown page from the CSV just written, so docs quoting it can be checked against the CSV alone
        md_path = out / f"{stem}.md"
        md_path.write_text(read_comparison(csv_path, system.name).markdown(Path(path).name))
        comparisons.append(cmp)
        if not args.json:
            sys.stdout.write(f"{path} ({kind}):\n{cmp.table()}wrote {csv_path}, {md_path} and {png_path}\n\n")
    if args.json:
        json.dump([{"file": str(p), **c.summary(), "by_column": c.summary_by(), "rows": c.records()} for (p, _, _), c in zip(loaded, comparisons)],
                  sys.stdout, indent=1)
        sys.stdout.write("\n")
    return 0


def check_row(system, kind: str, f: dict, where: str) -> None:
    """Raise :class:`InputError` at ``where`` for a measured row the simulator cannot run: a collective
    array its plan cannot split or that does not fit the HBM, a GEMM too large to simulate or to fit."""
    from t3sim.collectives.runner import plan_for_system
    from t3sim.config.workload import DTYPE_BYTES
    from t3sim.system.checks import hbm_capacity_B
    from t3sim.system.validate import MIB, gemm_kernel_record
    from t3sim.workload.trace import check_size

    eb = DTYPE_BYTES[f["dtype"]]
    cap = hbm_capacity_B(system.hbm)
    if kind == "collective":
        elems = int(round(f["size_mb"] * MIB / eb))
        if elems < f["gpus"]:
            raise InputError(where, f"size_mb={f['size_mb']:g}: {elems} {f['dtype']} elements for {f['gpus']} GPUs",
                             "at least one element per GPU")
        need = 2 * elems * eb  # the array and a receive buffer of its size
        if need > cap:
            raise InputError(where, f"size_mb={f['size_mb']:g}: the array and its receive buffer ({need / 2**30:.3g} GiB) "
                             f"exceed the {cap / 2**30:.3g} GiB of HBM per GPU", "an array that fits the system's HBM")
        try:
            plan_for_system(system, f["collective"], elems, eb)
        except ValueError as exc:
            raise InputError(where, f"size_mb={f['size_mb']:g} ({elems} {f['dtype']} elements): {exc}",
                             f"an array the {f['collective']} plan can split over {f['gpus']} GPUs") from None
        return
    k = gemm_kernel_record(system, f["M"], f["N"], f["K"], f["dtype"])
    check_size(k.num_wgs, k.K, k.tile_k, where)
    need = (k.M * k.K + k.K * k.N + k.M * k.N) * eb
    if need > cap:
        raise InputError(where, f"a {k.M}x{k.N}x{k.K} GEMM whose A, B and C ({need / 2**30:.3g} GiB) exceed the "
                         f"{cap / 2**30:.3g} GiB of HBM per GPU", "a GEMM that fits the system's HBM")


def simulate_with_progress(system, kind: str, rows, jobs: int, title: str) -> list:
    """Simulate every row (largest first, ``jobs`` processes) with progress on stderr: rows done, the
    percent of the rows' bytes or FLOPs done and the ETA (:class:`t3sim.exec.Progress`). Outcomes in row order."""
    from t3sim.exec import executors
    from t3sim.exec.progress import Progress
    from t3sim.system.validate import row_cost, simulate_row

    tasks = [(kind, system, r.fields, r.where) for r in rows]
    cost = [row_cost(kind, r.fields) for r in rows]
    order = sorted(range(len(tasks)), key=lambda i: -cost[i])
    progress = Progress(sys.stderr, unit="rows", resumable=False)
    workers = max(1, min(jobs, len(tasks)))
    progress.begin(title, len(tasks), 0, "this process" if workers == 1 else f"{workers} local worker processes",
                   weights=cost)

    def on_progress(j: int, status) -> None:
        progress.update(j, status, cost[order[j]], rows[order[j]].label())

    items = [tasks[i] for i in order]
    backend = (executors.local_pool(simulate_row, items, workers, on_progress=on_progress) if workers > 1
               else executors.serial(simulate_row, items, on_progress=on_progress))
    out: list = [None] * len(tasks)
    how = "stopped"
    try:
        for j, o in backend:
            i = order[j]
            out[i] = o
            progress.task_done(j)
            r = rows[i]
            progress.point_done(r.label(), f"simulated {o.sim_us:,.1f} us vs measured {r.measured_us:,.1f} us "
                                           f"in {o.wall_s:.1f} s", weight=cost[i])
        how = "done"
    except KeyboardInterrupt:
        how = "interrupted"
        raise
    finally:
        backend.close()
        progress.end(how)
    return out
