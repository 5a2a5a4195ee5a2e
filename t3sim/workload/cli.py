"""``t3sim trace gen|check``: generate and validate GEMM trace files (traces/FORMAT.md). The group's ``import`` and
``export`` subcommands (Chakra traces) live in :mod:`t3sim.commands.chakra_cmd`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import List, Tuple

from t3sim.config import load_config, load_system
from t3sim.config.gpu import GPUConfig
from t3sim.config.loader import config_roots
from t3sim.errors import InputError, check_writable_dir
from t3sim.workload.gemm import num_stages, occupancy
from t3sim.workload.generate import SUBLAYERS, kernel_for, TILE_PARAM_SOURCES, TileParams, write_traces
from t3sim.workload.trace import load_trace
from t3sim.workload.wg_order import NAMED_ORDERS

DEFAULT_OUT = "traces"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("trace", help="generate or check GEMM trace files (traces/FORMAT.md); import or export Chakra traces")
    tsub = p.add_subparsers(dest="trace_command", metavar="SUBCOMMAND", parser_class=type(p))
    tsub.required = True
    p.subcommands = tsub  # command groups of other layers add theirs here (`import`, `export`: t3sim/commands/chakra_cmd.py)

    d = TileParams()
    gen = tsub.add_parser("gen", help="write traces of the sliced sub-layers that need an all-reduce (OP, FC-2 fwd; FC-1, IP bwd)")
    which = gen.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="model name (configs/models/<name>.yaml) or a model/experiment YAML file")
    which.add_argument("--all", action="store_true", help="every configs/models/*.yaml model at each of its tp_degrees (what traces/ ships)")
    gen.add_argument("--tp", type=int, action="append", metavar="N",
                     help="tensor-parallel degree (repeatable; default: the model's tp_degrees)")
    gen.add_argument("--sublayer", action="append", choices=SUBLAYERS, help="sub-layer (repeatable; default: all four)")
    gen.add_argument("--out", default=DEFAULT_OUT, help="output directory (default: %(default)s/); files are OUT/<model>/tp<TP>/<sublayer>.jsonl")
    gen.add_argument("--tile", default=f"{d.tile_m}x{d.tile_n}x{d.tile_k}", metavar="MxNxK",
                     help=f"macro tile tile_m x tile_n x tile_k in elements (default %(default)s: {TILE_PARAM_SOURCES['tile_m']})")
    gen.add_argument("--wf-grid", default=f"{d.wf_grid[0]}x{d.wf_grid[1]}", metavar="MxN",
                     help=f"WFs per WG as an M x N grid of sub-tiles (default %(default)s: {TILE_PARAM_SOURCES['wf_grid']})")
    gen.add_argument("--threads-per-wf", type=int, default=d.threads_per_wf, metavar="N",
                     help=f"threads per WF (default %(default)s: {TILE_PARAM_SOURCES['threads_per_wf']})")
    gen.add_argument("--registers-per-thread", type=int, default=d.registers_per_thread, metavar="N",
                     help=f"32-bit registers per thread (default %(default)s: {TILE_PARAM_SOURCES['registers_per_thread']})")
    gen.add_argument("--lds-stages", type=int, default=d.lds_stages, metavar="N",
                     help=f"LDS buffers of the A/B tiles (default %(default)s: {TILE_PARAM_SOURCES['lds_stages']})")
    gen.add_argument("--dtype", default=d.dtype, choices=("fp16", "bf16", "fp32", "fp8"), help="element type (default %(default)s)")
    gen.add_argument("--order", default=d.wg_order, choices=tuple(NAMED_ORDERS), help="base WG -> tile order (default %(default)s)")
    gen.set_defaults(func=_gen)

    check = tsub.add_parser("check", help="validate trace files; print one summary line each; exit 2 at the first bad one")
    check.add_argument("files", nargs="+", help="trace files (.jsonl)")
    check.add_argument("--system", help="system YAML whose GPU sets the occupancy/stage summary (default: paper Table 1 GPU)")
    check.set_defaults(func=_check)


def _dims(text: str, n: int, flag: str) -> Tuple[int, ...]:
    parts = text.lower().split("x")
    if len(parts) != n or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise InputError(flag, repr(text), f"{n} positive integers joined by 'x', e.g. {'x'.join(['128'] * n)}")
    return tuple(int(p) for p in parts)


def _params(args: argparse.Namespace) -> TileParams:
    tm, tn, tk = _dims(args.tile, 3, "--tile")
    wm, wn = _dims(args.wf_grid, 2, "--wf-grid")
    for flag, v in (("--threads-per-wf", args.threads_per_wf), ("--registers-per-thread", args.registers_per_thread),
                    ("--lds-stages", args.lds_stages)):
        if v < 1:
            raise InputError(flag, str(v), "integer > 0")
    if not 1 <= args.registers_per_thread <= 255:
        raise InputError("--registers-per-thread", str(args.registers_per_thread), "integer in 1..255")
    if (wm * wn) * args.threads_per_wf > 1024:
        raise InputError("--wf-grid", args.wf_grid, f"at most 1024 threads per WG ({wm * wn} WFs x {args.threads_per_wf} threads)")
    params = TileParams(tile_m=tm, tile_n=tn, tile_k=tk, wf_grid=(wm, wn), threads_per_wf=args.threads_per_wf,
                        registers_per_thread=args.registers_per_thread, lds_stages=args.lds_stages,
                        dtype=args.dtype, wg_order=args.order)
    params.check()
    return params


def _models_dir() -> Path:
    for root in config_roots():
        if (root / "models").is_dir():
            return root / "models"
    raise InputError("configs/models", "no such directory", "a configs/models/ directory with Table 2 model presets")


def resolve_model(ref: str):
    """``(ModelConfig, tokens or None)`` from a model name or a model/experiment YAML path.

    For an experiment, its ``workload.model`` and its ``workload.tokens`` override.
    """
    path = Path(ref)
    if not (path.suffix in (".yaml", ".yml") or path.exists()):
        path = _models_dir() / f"{ref}.yaml"
        if not path.exists():
            names = sorted(p.stem for p in _models_dir().glob("*.yaml"))
            raise InputError("--model", repr(ref), f"a model name ({', '.join(names)}) or a YAML file")
    kind, cfg = load_config(path)
    if kind == "experiment":
        return cfg.workload.model, cfg.workload.tokens
    if kind != "model":
        raise InputError(f"--model {ref}", f"a {kind} config", "a model config (configs/models/*.yaml) or an experiment")
    return cfg, None


def _gen(args: argparse.Namespace) -> int:
    params = _params(args)
    if args.all:
        if args.tp or args.sublayer:
            raise InputError("--all", "combined with --tp/--sublayer", "--all alone (it writes every shipped trace)")
        models = [resolve_model(str(p)) for p in sorted(_models_dir().glob("*.yaml"))]
        jobs = [(m, t, m.tp_degrees) for m, t in models]
    else:
        m, t = resolve_model(args.model)
        jobs = [(m, t, args.tp or m.tp_degrees)]
    for model, tokens, tps in jobs:  # validate every request before writing anything
        for tp in tps:
            kernel_for(model, tp, (args.sublayer or SUBLAYERS)[0], params, tokens)
    check_writable_dir(args.out, "--out")
    written: List[Path] = []
    for model, tokens, tps in jobs:
        written += write_traces(model, tps, args.out, args.sublayer, params, tokens)
    for p in written:
        print(f"wrote {p}")
    return 0


def summary(path: str, gpu=None) -> str:
    """One line describing a valid trace file (kernels, shapes, WGs, tiles, stages)."""
    gpu = gpu or GPUConfig()
    trace = load_trace(path)
    parts = []
    for k in trace:
        occ = occupancy(k, gpu)
        stage = occ.stage_wgs(gpu.num_cus)
        parts.append(
            f"{k.sublayer} {k.pass_} M={k.M} N={k.N} K={k.K} {k.dtype} tile {k.tile_m}x{k.tile_n}x{k.tile_k} "
            f"grid {k.tiles_m}x{k.tiles_n} = {k.num_wgs} WGs, {occ.wgs_per_cu} WGs/CU ({occ.limiter}) x {gpu.num_cus} CUs "
            f"-> {num_stages(k, stage)} stages")
    n = len(trace)
    return f"ok  {path}: {n} kernel{'s' if n != 1 else ''}: " + "; ".join(parts)


def _check(args: argparse.Namespace) -> int:
    gpu = None
    if args.system:
        gpu = load_system(args.system).gpu
    for f in args.files:
        try:
            line = summary(f, gpu)
        except ValueError as exc:  # kernel does not fit on a CU of this GPU
            raise InputError(f, str(exc), "kernels whose WG fits on one CU of the GPU (resources: paper Table 1 or --system)") from None
        print(line)
    return 0
