"""``t3sim validate``: simulated vs measured hardware times, per row and geomean.

::

    t3sim validate --system CONFIG --measured CSV [--gemm CSV] [--out DIR] [--jobs N] [--json]

``--measured`` takes a collective CSV (``collective,gpus,size_mb,dtype,median_us``),
a GEMM CSV (``model,sublayer,tp,M,N,K,dtype,median_us``), an overlap CSV or a GEMM / copy
contention CSV (``model,sublayer,tp,M,N,K,gemm_alone_us,gemm_with_d2d1_us,...``, see
:mod:`t3sim.analysis.validation_copy`), detected from its header; ``--gemm`` forces the GEMM columns.
Writes ``<stem>.csv`` (sim beside measured), ``<stem>.md`` (the same as a Markdown page, which the docs
quote; not for contention CSVs) and ``<stem>.png`` (Fig. 14-style plot) under ``--out`` (default
``results/validation/<system-name>/``). Definitions: :mod:`t3sim.analysis.validation`.

Rows whose setting the simulator does not represent (an NCCL protocol other than Ring/Simple, an AsyncTP
fused op, peer-copy backgrounds: :mod:`t3sim.analysis.validation_settings`) are not simulated: the table, the
Markdown page and the JSON list each with its measured value and the reason, and ``<stem>-not-simulated.csv``
holds them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional

from t3sim.analysis.validation import Comparison, plot_comparison, read_comparison, read_measured, write_records_csv
from t3sim.analysis.validation_settings import NotSimulated, not_simulated_markdown, not_simulated_text, split_rows
from t3sim.config import load_system
from t3sim.config.workload import DTYPE_BYTES
from t3sim.errors import InputError, check_writable_dir
from t3sim.exec import executors
from t3sim.exec.progress import Progress


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
    p.add_argument("--cache", default=None, metavar="JSON",
                   help="copy-contention CSVs: reuse and extend the simulated outcomes saved in this file "
                        "(keyed by system config and task; simulations are deterministic)")
    p.add_argument("--only", default=None, metavar="BG,...",
                   help="copy-contention CSVs: simulate only these of alone,d2d1,d2d2,pcie into --cache, report nothing")
    p.add_argument("--json", action="store_true", help="print rows and summary as JSON instead of tables")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from t3sim.validation.rows import system_for_gpus  # lazy: the simulator loads when a command runs (fast --help)

    inputs = [(path, None) for path in args.measured] + [(path, "gemm") for path in args.gemm]
    if not inputs:
        raise InputError("t3sim validate", "no measured CSV", "--measured CSV and/or --gemm CSV")
    system = load_system(args.system, args.overrides)
    # Read and check every file (and every row to simulate) before simulating anything.
    loaded = []
    for path, kind in inputs:
        kind, rows = read_measured(path, kind)
        rows, skipped = split_rows(kind, rows)
        for r in rows:
            check_row(system_for_gpus(system, int(r.fields["gpus"]), r.where) if kind == "collective" else system,
                      kind, r.fields, r.where)
        loaded.append((path, kind, rows, skipped))
    out = Path(args.out) if args.out else Path("results") / "validation" / system.name
    check_writable_dir(out, "--out")
    reports: List[dict] = []
    contention = [(path, rows) for path, kind, rows, _ in loaded if kind == "copy_contention"]
    shared = _simulate_contention(args, system, [r for _, rows in contention for r in rows]) if contention else None
    if args.only:
        sys.stdout.write(f"simulated {args.only} into {args.cache}\n")
        return 0
    for path, kind, rows, skipped in loaded:
        if kind == "copy_contention":
            cmp = _contention(args, system, path, rows, out, shared)
        elif not rows:
            reports.append(_nothing_simulated(args, path, kind, skipped, out))
            continue
        else:
            cmp = _compare(args, system, path, kind, rows, skipped, out,
                           args.jobs if args.jobs > 0 else default_jobs(len(rows)))
        reports.append({"file": str(path), **cmp.summary(),
                        **({"by_column": cmp.summary_by()} if hasattr(cmp, "summary_by") else {}),
                        "rows": cmp.records(), "not_simulated": [n.record() for n in cmp.not_simulated]})
    if args.json:
        json.dump(reports, sys.stdout, indent=1)
        sys.stdout.write("\n")
    return 0


def _compare(args: argparse.Namespace, system, path: str, kind: str, rows, skipped, out: Path,
             jobs: int) -> Comparison:
    """Simulate one CSV's rows on ``jobs`` processes and write its comparison (CSV, PNG, Markdown; the rows not
    simulated beside)."""
    outcomes = simulate_with_progress(system, kind, rows, jobs, f"validate {path}")
    cmp = Comparison(kind, system.name, rows, [o.sim_us for o in outcomes], [o.wall_s for o in outcomes],
                     [o.detail for o in outcomes], not_simulated=skipped)
    stem = Path(path).stem
    csv_path = cmp.write_csv(out / f"{stem}.csv")
    png_path = plot_comparison(cmp, out / f"{stem}.png")
    skipped_csv = _write_not_simulated(skipped, out / f"{stem}-not-simulated.csv")
    # the Markdown page from the CSV just written, so docs quoting it can be checked against the CSV alone
    md_path = out / f"{stem}.md"
    page = read_comparison(csv_path, system.name)
    page.not_simulated = skipped
    md_path.write_text(page.markdown(Path(path).name))
    if not args.json:
        also = f" and {skipped_csv}" if skipped_csv else ""
        sys.stdout.write(f"{path} ({kind}):\n{cmp.table()}wrote {csv_path}, {md_path}, {png_path}{also}\n\n")
    return cmp


def _write_not_simulated(skipped: List[NotSimulated], path: Path):
    """``<stem>-not-simulated.csv`` (one row per value not simulated, with its reason); None when there is none."""
    if not skipped:
        return None
    keys = list(dict.fromkeys(k for n in skipped for k in n.record()))
    return write_records_csv([{k: n.record().get(k) for k in keys} for n in skipped], path)


def _nothing_simulated(args: argparse.Namespace, path: str, kind: str, skipped, out: Path) -> dict:
    """A CSV none of whose rows the simulator represents: the listing of them, written and printed."""
    stem = Path(path).stem
    csv_path = _write_not_simulated(skipped, out / f"{stem}-not-simulated.csv")
    md_path = out / f"{stem}.md"
    md_path.write_text("\n".join([f"# {Path(path).name}: nothing simulated", "",
                                   *not_simulated_markdown(skipped)]))
    if not args.json:
        sys.stdout.write(f"{path} ({kind}): no row the simulator represents\n{not_simulated_text(skipped)}"
                         f"wrote {csv_path} and {md_path}\n\n")
    return {"file": str(path), "kind": kind, "rows": [], "not_simulated": [n.record() for n in skipped]}


def check_row(system, kind: str, f: dict, where: str) -> None:
    """Raise :class:`InputError` at ``where`` for a measured row the simulator cannot run: a collective
    array its plan cannot split or that does not fit the HBM, a GEMM too large to simulate or to fit."""
    # lazy: the simulator loads when a command runs (fast --help)
    from t3sim.collectives.runner import plan_for_system
    from t3sim.system.kernels import gemm_kernel_record, hbm_capacity_B
    from t3sim.validation.rows import MIB
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
    percent of the rows' bytes or FLOPs done and the ETA (:class:`t3sim.exec.progress.Progress`). Outcomes in row order."""
    from t3sim.validation.tasks import row_cost, simulate_row  # lazy: the simulator loads when a command runs

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
            r = rows[i]
            progress.point_done(r.label(), f"simulated {o.sim_us:,.1f} us vs measured {r.measured_us:,.1f} us "
                                           f"in {o.wall_s:.1f} s", weight=cost[i], task=j)
        how = "done"
    except KeyboardInterrupt:
        how = "interrupted"
        raise
    finally:
        backend.close()
        progress.end(how)
    return out


def _simulate_contention(args: argparse.Namespace, system, rows):
    """Simulate every GEMM / copy contention row of every such CSV once (t3sim.validation.contention):
    (outcomes by (M, N, K), copies alone by background)."""
    from t3sim.validation.contention import BACKGROUNDS, simulate_contention_rows  # lazy: the simulator (fast --help)

    bgs = _measured_backgrounds(rows, BACKGROUNDS)
    shapes = sorted({(r.fields["M"], r.fields["N"], r.fields["K"]) for r in rows})
    jobs = args.jobs if args.jobs > 0 else default_jobs(len(shapes) * (len(bgs) + 1) + len(bgs))
    only = [b.strip() for b in args.only.split(",")] if args.only else None
    if only is not None:
        bad = [b for b in only if b not in ("alone", *bgs)]
        if bad or not args.cache:
            raise InputError("--only", ",".join(only) + ("" if args.cache else " without --cache"),
                             f"a comma-separated subset of alone,{','.join(bgs)}, with --cache")
    per_row, alone = simulate_contention_rows(system, [dict(M=m, N=n, K=k) for m, n, k in shapes], bgs, jobs=jobs,
                                              cache=args.cache, only=only)
    return dict(zip(shapes, per_row)), alone


def _measured_backgrounds(rows, known) -> tuple:
    """The backgrounds of ``known`` that some row measured (a filled ``gemm_with`` or ``copy_slowdown`` cell)."""
    return tuple(b for b in known if any(r.fields.get(f"gemm_with_{b}_us") is not None
                                         or r.fields.get(f"copy_slowdown_{b}") is not None for r in rows))


def _contention(args: argparse.Namespace, system, path: str, rows, out: Path, shared):
    """Report one GEMM / copy contention CSV from the shared simulations; its backgrounds the simulation does not
    have (peer copies) are listed as not simulated."""
    # lazy: the simulator and matplotlib load when a command runs (fast --help)
    from t3sim.analysis.validation_copy import ContentionComparison, plot_contention
    from t3sim.analysis.validation_settings import contention_not_simulated
    from t3sim.validation.contention import BACKGROUNDS

    by_shape, alone = shared
    bgs = _measured_backgrounds(rows, BACKGROUNDS)
    per_row = [by_shape[(r.fields["M"], r.fields["N"], r.fields["K"])] for r in rows]
    sim, walls = [], []
    for o in per_row:
        d = {"gemm_alone_us": o["alone"].gemm_us}
        for b in bgs:
            d[f"gemm_with_{b}_us"] = o[b].gemm_us
            d[f"copy_slowdown_{b}"] = o[b].copy_us / alone[b].copy_us
        sim.append(d)
        walls.append(sum(x.wall_s for x in o.values() if x is not None))
    notes = {f"copy_alone_{b}_us": alone[b].copy_us for b in bgs}
    skipped = contention_not_simulated(rows, tuple(BACKGROUNDS))
    cmp = ContentionComparison(system.name, rows, sim, walls, bgs, notes=notes, not_simulated=skipped)
    stem = Path(path).stem
    csv_path = cmp.write_csv(out / f"{stem}.csv")
    (out / f"{stem}.md").write_text(cmp.markdown(Path(path).name))
    png_path = plot_contention(cmp, out / f"{stem}.png") if bgs else None
    skipped_csv = _write_not_simulated(skipped, out / f"{stem}-not-simulated.csv")
    if not args.json:
        wrote = ", ".join(str(p) for p in (csv_path, png_path, skipped_csv) if p)
        sys.stdout.write(f"{path} (copy_contention):\n{cmp.table()}"
                         + "".join(f"simulated copies alone, {b}: {alone[b].copy_us:.1f} us\n" for b in bgs)
                         + f"wrote {wrote}\n\n")
    return cmp


def default_jobs(n_rows: int, cpus: Optional[int] = None) -> int:
    """Processes to use for ``n_rows`` rows: at most the CPUs this process may use."""
    return max(1, min(n_rows, cpus or executors.default_jobs()))
