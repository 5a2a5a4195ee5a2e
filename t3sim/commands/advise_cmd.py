"""``t3sim advise``: which overlap scheme wins for one operation on one machine.

    t3sim advise --system SYSTEM (--model NAME [--sublayer S] [--tokens T] | --m M --n N --k K)
                 [--direction gemm-rs|ag-gemm] [--tp N] [--dtype D] [--set a.b=V ...] [--out DIR] [-j N] [--force] [--json]
    t3sim advise --system SYSTEM --chakra FILE.et [FILE.et ...] [...]   (each pair of the traces: advise_chakra.py)

The operation is one GEMM and its collective on ``--tp`` GPUs of the system (a preset name such as ``h200-4gpu``,
``configs/systems/<name>.yaml``, or a system YAML): ``gemm_rs``, the GEMM whose output is reduce-scattered
(``workload.collective: reduce_scatter``: the operation ends at the reduce-scatter, FLUX Sec. 5.1's
GEMM+ReduceScatter), or ``ag_gemm``, the GEMM whose input is all-gathered first. It is given as a model's sub-layer
(``workload.model``/``sublayer``/``tokens``, as the experiments give it) or by its whole-operator shape
(``workload.gemm``: per GPU ``M x N x K/tp`` for gemm_rs, ``M x N/tp x K`` for ag_gemm). ``--set`` overrides any
field of the experiment built from them (``system.*``, ``workload.*``, ``simulation.*``).

Every registered scheme (:data:`t3sim.schemes.runtime.SCHEMES`) is tried on it as the scheme declares
(:class:`~t3sim.schemes.runtime.base.Scheme`): its ``variants`` option at each of its values (each a variant), the
others at their defaults plus the ``operation_options`` the operation needs (``chunked_dma`` in ag_gemm: one GEMM
step per shard of A); the variant its ``heuristic_pick`` chooses for the operation (FiCCO's schedule) is marked. A scheme that cannot run the operation -- its config or the pre-run checks
(:func:`t3sim.exec.checks.check_experiment`) reject it, or its simulation refuses it as bad input -- is listed with
that reason, and a ``study`` scheme with the reason it declares; one
whose simulation fails is listed as failed. The rest run through :func:`t3sim.exec.runner.run_points` as experiment
``advise`` (``results/advise/<hash>/``, reused on the next call, ``-j N`` worker processes), and
:mod:`t3sim.analysis.advise` ranks them. Exit 0 when the table is printed, 2 on bad input.

Python: :func:`advise` (rows) and :func:`advise_report` (rows and what they were ranked on); a sweep of operations
(``t3sim decision-map``) plans each with :func:`plan_advice`, runs all their points at once and ranks each with
:func:`finish_advice`.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from t3sim.config.loader import apply_overrides, build, config_roots, load_raw
from t3sim.config.kinds import expect_kind
from t3sim.config.workload import DTYPE_BYTES, SUBLAYER_K_FACTOR
from t3sim.errors import InputError

# (the simulator and the schemes load when advise runs, so `t3sim --help` and bad flags answer fast)

DIRECTIONS = {"gemm-rs": "gemm_rs", "ag-gemm": "ag_gemm", "gemm_rs": "gemm_rs", "ag_gemm": "ag_gemm"}
EXPERIMENT = "advise"


@dataclass(frozen=True)
class Operation:
    """One GEMM and its collective: a model's sub-layer (``model``, optionally ``sublayer`` and ``tokens``) or a
    whole-operator shape (``M``, ``N``, ``K``, counts: ``workload.gemm``). ``direction``: ``gemm_rs`` or
    ``ag_gemm``; ``tp``: GPUs (None: the system's ``interconnect.num_gpus``); ``dtype``: element type (None: the
    workload default). ``model``: a preset name (``configs/models/<name>.yaml``) or a model YAML. ``collective``
    (gemm_rs only): ``reduce_scatter`` (None: the operation ends at the reduce-scatter) or ``all_reduce`` (the
    reduce-scatter, then the all-gather of the reduced shards)."""

    direction: str = "gemm_rs"
    tp: Optional[int] = None
    dtype: Optional[str] = None
    model: Optional[str] = None
    sublayer: Optional[str] = None
    tokens: Optional[int] = None
    M: Optional[int] = None
    N: Optional[int] = None
    K: Optional[int] = None
    collective: Optional[str] = None


@dataclass
class Advice:
    """What :func:`advise_report` found: the system, the per-GPU GEMM (counts), the peak it is measured against
    (TFLOP/s), per scheme the options its own heuristic picks (``Scheme.heuristic_pick``: FiCCO's schedule in
    ag_gemm) and the ranked rows (:data:`t3sim.analysis.advise.ROW_KEYS`)."""

    system: str
    operation: Dict[str, Any]
    gemm_M: int
    gemm_N: int
    gemm_K: int
    peak_TFLOPS: float
    heuristic_picks: Dict[str, Dict[str, Any]]
    rows: List[Dict[str, Any]] = field(default_factory=list)


def _preset(ref: str, folder: str, flag: str) -> Path:
    """A preset name (``configs/<folder>/<ref>.yaml`` under a configs root), a path under a configs root
    (``<folder>/<ref>.yaml``) or a YAML path."""
    p = Path(ref)
    if p.is_file():
        return p
    for root in config_roots():
        for cand in (root / folder / ref, root / folder / f"{ref}.yaml", root / ref):
            if cand.is_file():
                return cand
    names = sorted({q.stem for root in config_roots() if (root / folder).is_dir() for q in (root / folder).glob("*.yaml")})
    raise InputError(flag, repr(ref), f"a {folder[:-1]} YAML file or a preset name: {', '.join(names)}")


def _workload(op: Operation, tp: int) -> Tuple[Dict[str, Any], Dict[Tuple[str, ...], str]]:
    """The ``workload`` section of ``op`` and the flag each of its values came from (for error messages)."""
    direction = DIRECTIONS.get(op.direction)
    if direction is None:
        raise InputError("--direction", repr(op.direction), "gemm-rs, ag-gemm")
    shape = [v is not None for v in (op.M, op.N, op.K)]
    sub = [v is not None for v in (op.model, op.sublayer, op.tokens)]
    if any(shape) and any(sub):
        raise InputError("--m/--n/--k", "both a shape and a model sub-layer (--model/--sublayer/--tokens)",
                         "one of them: --model NAME [--sublayer S] [--tokens T], or --m M --n N --k K")
    if any(shape) and not all(shape):
        missing = [f for f, g in zip(("--m", "--n", "--k"), shape) if not g]
        raise InputError(", ".join(missing), "missing beside the other shape flags", "all of --m, --n and --k (whole-operator counts)")
    if not any(shape) and op.model is None:
        raise InputError("--model", "no operation", "--model NAME [--sublayer S] [--tokens T], or --m M --n N --k K")
    w: Dict[str, Any] = {"tp": tp, "direction": direction}
    given = [(f, v) for f, v in (("--model", op.model), ("--sublayer", op.sublayer), ("--tokens", op.tokens),
                                 ("--m", op.M), ("--n", op.N), ("--k", op.K)) if v is not None]
    flags = " ".join(f"{f} {v}" for f, v in given + [("--direction", op.direction), ("--tp", tp)])
    # a check of the workload as a whole (its validator) names the flags that gave it
    prov = {("workload",): f"the operation ({flags})", ("workload", "tp"): "--tp", ("workload", "direction"): "--direction"}
    if op.collective is not None and (direction != "gemm_rs" or op.collective not in ("reduce_scatter", "all_reduce")):
        raise InputError("Operation.collective", f"{op.collective!r} with direction {direction}",
                         "reduce_scatter or all_reduce, with direction gemm_rs")
    if direction == "gemm_rs":  # by default the operation ends at the reduce-scatter (FLUX's GEMM+ReduceScatter)
        w["collective"] = op.collective or "reduce_scatter"
    if op.dtype is not None:
        w["dtype"], prov[("workload", "dtype")] = op.dtype, "--dtype"
    if all(shape):
        w["gemm"] = {"name": f"gemm-{op.M}x{op.N}x{op.K}", "M": op.M, "N": op.N, "K": op.K}
        prov.update({("workload", "gemm", d): f"--{d.lower()}" for d in "MNK"})
        return w, prov
    path = _preset(op.model, "models", "--model")
    data, _ = load_raw(path)
    expect_kind(data, "model", str(path))
    w["model"], prov[("workload", "model")] = data, f"--model {op.model} ({path})"
    for key, flag in (("sublayer", "--sublayer"), ("tokens", "--tokens")):
        if getattr(op, key) is not None:
            w[key], prov[("workload", key)] = getattr(op, key), flag
    return w, prov


#: systems read so far: (path, modification time, size) -> (num_gpus, raw data, provenance); a sweep of many
#: operations on one system (``t3sim decision-map``) parses its YAML and GEMM library once
_SYSTEMS: Dict[Tuple[str, int, int], Tuple[int, Dict[str, Any], Dict[Any, str]]] = {}


def _system(path: Path):
    """The system at ``path``: its ``interconnect.num_gpus`` and a fresh copy of its raw data and provenance."""
    from t3sim.config import load_system

    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _SYSTEMS:
        data, prov = load_raw(path)
        _SYSTEMS[key] = (load_system(path).interconnect.num_gpus, data, prov)
    n, data, prov = _SYSTEMS[key]
    return n, copy.deepcopy(data), dict(prov)


def _base(system: Union[str, Path], op: Operation, overrides: Iterable[str], experiment: str = EXPERIMENT):
    """The experiment (raw data, provenance) of ``op`` on ``system`` before a scheme is chosen, and its system;
    ``experiment`` names it (its results land in ``<out>/<experiment>/``)."""
    path = _preset(str(system), "systems", "--system")
    num_gpus, sys_data, sys_prov = _system(path)
    tp = op.tp if op.tp is not None else num_gpus
    if tp < 2:
        raise InputError("--tp", str(tp), "2 or more GPUs (the operation's collective runs over them)")
    sys_data.setdefault("interconnect", {})["num_gpus"] = tp
    workload, w_prov = _workload(op, tp)
    data = {"name": experiment, "system": sys_data, "workload": workload, "scheme": {"kind": "sequential"}}
    prov = {("system",) + k: v for k, v in sys_prov.items()}
    prov.update(w_prov)
    prov[("system", "interconnect", "num_gpus")] = "--tp"
    data, prov = apply_overrides(data, prov, overrides)
    return data, prov, str(path)


def _variants(kind: str, scheme) -> List[Dict[str, Any]]:
    """The scheme options of each variant of ``scheme`` (every value of its ``variants`` option; ``[{}]``: its
    defaults)."""
    from t3sim.config.scheme import options_for

    if not scheme.variants:
        return [{}]
    opt = scheme.variants
    return [{opt: v} for v in typing.get_args(options_for(kind).model_fields[opt].annotation)]


def _candidates(data, prov, source: str, only: Optional[Sequence[str]] = None):
    """One candidate per scheme variant (plain data for :func:`t3sim.analysis.advise.rank`) and the points to
    run, each with the index of its candidate; ``only``: the schemes to try (the others are listed, not run)."""
    from t3sim.config.experiment import ExperimentConfig
    from t3sim.config.sweep import Point
    from t3sim.exec.checks import check_experiment
    from t3sim.schemes.runtime import SCHEMES

    cands, points, kernel = [], [], None
    for kind, scheme in SCHEMES.items():
        base = {"scheme": kind, "label": scheme.label or kind, "bound": scheme.ideal}
        if only is not None and kind not in only:
            cands.append({**base, "variant": "", "options": {}, "status": "skipped",
                          "reason": "not among the schemes asked for (--schemes)"})
            continue
        if scheme.study:
            cands.append({**base, "variant": "", "options": {}, "status": "not_applicable", "reason": scheme.study})
            continue
        reasons = []
        for opts in _variants(kind, scheme):
            variant = ",".join(f"{k}={v}" for k, v in opts.items())
            cand = {**base, "variant": variant, "options": opts,
                    "label": base["label"] + (f" ({variant})" if variant else "")}
            fixed = scheme.operation_options(data["workload"]["direction"], data["workload"]["tp"])
            d = {**data, "scheme": {"kind": kind, **fixed, **opts}}
            p = {**prov, ("scheme",): f"scheme {kind}"}
            try:
                cfg = build(ExperimentConfig, d, p, source)
                resolved = check_experiment(cfg)
            except InputError as exc:
                reasons.append(exc.one_line())
                cands.append({**cand, "status": "not_applicable", "reason": exc.one_line()})
                continue
            kernel = kernel or resolved.kernel
            points.append((len(cands), Point(f"{kind}" + (f":{variant}" if variant else ""), cfg, source)))
            cands.append({**cand, "status": "ok"})
        if len(reasons) > 1 and len(set(reasons)) == 1 and len(reasons) == len(_variants(kind, scheme)):
            # every variant refused for one reason: the scheme itself does not apply
            del cands[-len(reasons):]
            cands.append({**base, "variant": "", "options": {}, "status": "not_applicable", "reason": reasons[0]})
    return cands, points, kernel


@dataclass
class Planned:
    """One operation's candidates (plain data for :func:`t3sim.analysis.advise.rank`) and the points that run them,
    each with the index of its candidate (:func:`plan_advice`); :func:`finish_advice` ranks their outcomes."""

    operation: Operation
    cands: List[Dict[str, Any]]
    points: List[Tuple[int, Any]]
    kernel: Any


def plan_advice(system: Union[str, Path], operation: Operation, *, overrides: Sequence[str] = (),
                schemes: Optional[Sequence[str]] = None, experiment: str = EXPERIMENT) -> Planned:
    """The candidates and points of ``operation`` on ``system`` (:func:`advise_report`'s arguments; ``experiment``
    names the points' experiment). Raises :class:`~t3sim.errors.InputError` as :func:`advise_report` does."""
    data, prov, source = _base(system, operation, overrides, experiment)
    if schemes is not None:
        from t3sim.schemes.runtime import SCHEMES

        unknown = [s for s in schemes if s not in SCHEMES]
        if unknown or not schemes:
            raise InputError("--schemes", ",".join(unknown) or "none", "registered schemes: " + ", ".join(SCHEMES))
    from t3sim.config.experiment import ExperimentConfig
    from t3sim.exec.checks import check_experiment

    check_experiment(build(ExperimentConfig, data, prov, source))  # the operation itself, under Sequential
    cands, points, kernel = _candidates(data, prov, source, schemes)
    if not points:
        reasons = "; ".join(f"{c['scheme']}: {c['reason']}" for c in cands if c["scheme"] == "sequential")
        raise InputError(source, f"no scheme can run this operation ({reasons})", "an operation the system can run")
    return Planned(operation, cands, points, kernel)


def finish_advice(planned: Planned, outcomes: Sequence[Any]) -> Advice:
    """Rank the outcomes (:class:`t3sim.exec.runner.PointOutcome`, one per point of ``planned``, in its order)."""
    from t3sim.analysis.advise import FAILED, NOT_APPLICABLE, peak_TFLOPS, rank
    from t3sim.schemes.runtime import scheme_for

    cands = [dict(c) for c in planned.cands]
    for (i, _), o in zip(planned.points, outcomes):
        c = cands[i]
        if o.ok:
            r = o.result
            c.update(total_us=float(r.summary["total_us"]), summary=dict(r.summary), result_dir=str(o.path),
                     reused=o.reused, stats={n: s.to_dict()["value"] for n, s in r.stats.items()})
        else:
            c.update(status=NOT_APPLICABLE if o.error.kind == "input" else FAILED, reason=o.error.message)
    exp, kernel = planned.points[0][1].config, planned.kernel
    dtype = exp.workload.dtype
    peak = peak_TFLOPS(exp.system.model_dump(mode="json"), dtype)
    # each scheme's own pick on the whole operator: M x (N of all GPUs) x K for ag_gemm, M x N x (K of all GPUs) else
    tp, direction = exp.workload.tp, exp.workload.direction
    whole = (kernel.M, kernel.N * tp, kernel.K) if direction == "ag_gemm" else (kernel.M, kernel.N, kernel.K * tp)
    picks = {name: p for name in dict.fromkeys(c["scheme"] for c in cands)
             if (p := scheme_for(name).heuristic_pick(direction, *whole, tp, peak, DTYPE_BYTES[dtype]))}
    rows = rank(cands, 2.0 * kernel.M * kernel.N * kernel.K, peak, picks)
    op = {k: v for k, v in asdict(planned.operation).items() if v is not None}
    op.update(direction=exp.workload.direction, tp=exp.workload.tp, dtype=dtype)
    return Advice(exp.system.name, op, kernel.M, kernel.N, kernel.K, peak, picks, rows)


def advise_report(system: Union[str, Path], operation: Operation, *, overrides: Sequence[str] = (),
                  schemes: Optional[Sequence[str]] = None, out: Union[str, Path] = "results", jobs: int = 1,
                  force: bool = False, progress=None) -> Advice:
    """Try every scheme on ``operation`` on ``system`` (a preset name or a system YAML) and rank them (module doc).

    Args:
        overrides: ``--set`` style ``dotted.path=VALUE`` strings applied to the experiment built.
        schemes: the registered scheme kinds to try (default: all); the others are rows saying so.
        out: results root; runs land in ``<out>/advise/<hash>/`` and are reused by later calls.
        jobs: local worker processes (1: this process; 0: one per CPU).
        force: simulate again points that already have results.
        progress: a :class:`t3sim.exec.progress.Progress` (default: silent).

    Raises :class:`~t3sim.errors.InputError` for bad input (system, shape, flags) and when no scheme can run the
    operation; a scheme that cannot run it is a row with its reason, not an error."""
    from t3sim.exec.runner import run_points

    planned = plan_advice(system, operation, overrides=overrides, schemes=schemes)
    outcomes = run_points([p for _, p in planned.points], out=out, jobs=jobs, force=force, progress=progress)
    return finish_advice(planned, outcomes)


def advise(system: Union[str, Path], operation: Operation, **kwargs) -> List[Dict[str, Any]]:
    """The ranked rows of :func:`advise_report` (:data:`t3sim.analysis.advise.ROW_KEYS`, fastest first, then the
    bounds, then the schemes that did not run with their reasons)."""
    return advise_report(system, operation, **kwargs).rows


# ------------------------------------------------------------------------------------------------------- command


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("advise", help="rank every overlap scheme on one GEMM + collective on one system")
    p.add_argument("--system", required=True, help="system preset name (h200-4gpu) or system YAML")
    p.add_argument("--model", help="model preset name (t-nlg) or model YAML: the operation is its sub-layer")
    p.add_argument("--sublayer", choices=tuple(SUBLAYER_K_FACTOR), help="the model's sub-layer (default FC-2)")
    p.add_argument("--tokens", type=int, help="tokens T (default: the model's SL x B)")
    p.add_argument("--m", dest="M", type=int, help="whole-operator M (rows of A and C)")
    p.add_argument("--n", dest="N", type=int, help="whole-operator N (columns of C; ag-gemm: over all GPUs)")
    p.add_argument("--k", dest="K", type=int, help="whole-operator K (gemm-rs: over all GPUs)")
    p.add_argument("--direction", choices=("gemm-rs", "ag-gemm"),
                   help="gemm-rs (default): GEMM, then reduce-scatter of its output; ag-gemm: all-gather of its input, "
                        "then GEMM")
    p.add_argument("--chakra", nargs="+", metavar="FILE.et",
                   help="per-rank Chakra traces: advise on each distinct GEMM+collective pair instead of one operation")
    p.add_argument("--tp", type=int, help="GPUs (default: the system's interconnect.num_gpus; with --chakra: the "
                   "tensor-parallel degree of every collective, default the size of its process group)")
    p.add_argument("--dtype", choices=tuple(DTYPE_BYTES), help="element type (default: the workload's, fp16; with "
                   "--chakra: of GEMMs whose trace has no tensor types)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a field of the experiment built (system.*, workload.*, simulation.*; repeatable)")
    p.add_argument("--out", default="results", help="results root (default: results/; runs land in advise/)")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="local worker processes (default 1: in this process; 0: one per CPU)")
    p.add_argument("--schemes", metavar="S,S,...",
                   help="only these schemes (comma-separated kinds; default: every registered scheme)")
    p.add_argument("--force", action="store_true", help="simulate again points that already have results")
    p.add_argument("--json", action="store_true", help="print the advice as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from t3sim.analysis.advise import format_table
    from t3sim.exec.progress import Progress

    if args.chakra:
        from t3sim.commands.advise_chakra import run

        return run(args)
    for flag, v in (("--tokens", args.tokens), ("--m", args.M), ("--n", args.N), ("--k", args.K)):
        if v is not None and v < 1:
            raise InputError(flag, str(v), "a count >= 1")
    op = Operation(direction=args.direction or "gemm-rs", tp=args.tp, dtype=args.dtype, model=args.model, sublayer=args.sublayer,
                   tokens=args.tokens, M=args.M, N=args.N, K=args.K)
    schemes = [s.strip() for s in args.schemes.split(",") if s.strip()] if args.schemes is not None else None
    a = advise_report(args.system, op, overrides=args.overrides, schemes=schemes, out=args.out, jobs=args.jobs,
                      force=args.force, progress=Progress(sys.stderr))
    if args.json:
        json.dump(asdict(a), sys.stdout, indent=1, sort_keys=False)
        sys.stdout.write("\n")
        return 0
    d = a.operation
    what = (f"{d['model']} {d.get('sublayer', 'FC-2')}" if "model" in d else f"GEMM {d['M']}x{d['N']}x{d['K']}")
    sys.stdout.write(f"{what} {d['direction']} on {a.system}, tp={d['tp']}, {d['dtype']}: per GPU "
                     f"{a.gemm_M}x{a.gemm_N}x{a.gemm_K} (M x N x K), peak {a.peak_TFLOPS:.0f} TFLOP/s\n\n")
    sys.stdout.write(format_table(a.rows))
    sys.stdout.write(f"results: {Path(args.out) / EXPERIMENT}\n")
    return 0
