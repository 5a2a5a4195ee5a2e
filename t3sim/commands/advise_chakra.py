"""``t3sim advise --chakra`` and ``t3sim trace export --chakra --scheme advise``: every overlap scheme ranked on each
GEMM+collective pair of per-rank Chakra traces, and the traces written back under each pair's winner.

    t3sim advise --chakra FILE.et [FILE.et ...] --system SYSTEM [--tp N] [--dtype D] [--schemes S,...]
                 [--set a.b=V ...] [--out DIR] [-j N] [--force] [--json]

The pairs are those ``t3sim trace import`` finds (:func:`t3sim.workload.chakra_pairs.find_pairs`); pairs of one
operation (every rank and layer of one shape) share one advice. A Chakra operation (per-rank shape) becomes the
advise operation (whole-operator shape, ``workload.gemm``) in one place, :func:`advise_operation`; both build the
same workload, so what advise simulates for a scheme is what ``trace export --scheme`` simulates for it. An operation
the system cannot run (the checks ``t3sim run`` makes, under Sequential) is listed among the unmapped nodes with the
check's message, as ``trace import`` lists it.

The scheme a pair gets (:func:`scheme_spec`): the ``scheme.kind`` ranked first, followed by ``:option=value`` for the
variant advise ran (``concurrent:launch_first=comm``, ``flux_rs:flux_reduce=pull``). Export takes each pair's times
from that winner's own run (``<results>/advise/<hash>/``), so its durations are the winner's simulated time.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from t3sim.commands.advise_cmd import Advice, Operation, _preset, advise_report
from t3sim.commands.chakra_cmd import _need_chakra, _refuse, _table, _unmapped, experiment_points, system_ref
from t3sim.errors import InputError

#: the scheme every operation is checked under before it is advised on (it runs both directions)
CHECKED_UNDER = "sequential"


def advise_operation(op) -> Operation:
    """The advise :class:`~t3sim.commands.advise_cmd.Operation` of a Chakra pair's
    :class:`~t3sim.workload.chakra_pairs.Operation`: its whole-operator shape (``workload.gemm``), direction,
    collective (gemm_rs), element type and TP degree."""
    M, N, K = op.operator_shape
    return Operation(direction=op.direction, tp=op.tp, dtype=op.dtype, M=M, N=N, K=K,
                     collective=op.collective if op.direction == "gemm_rs" else None)


def scheme_spec(row: Dict[str, Any]) -> str:
    """A ranked row's scheme as export names it: ``kind``, or ``kind:option=value`` for a variant."""
    return row["scheme"] + (f":{row['variant']}" if row["variant"] else "")


def ranked(advice: Advice) -> List[Dict[str, Any]]:
    """The rows of ``advice`` that have a rank (ran, not a bound), winner first."""
    return [r for r in advice.rows if r["rank"] is not None]


@dataclass
class ChakraAdvice:
    """What :func:`advise_traces` found: the system (a path), the pairs advised on, the nodes left out with their
    reasons (:class:`~t3sim.workload.chakra_pairs.Unmapped`), and per operation its :class:`Advice`."""

    system: str
    pairs: list
    unmapped: list
    advice: Dict[Any, Advice] = field(default_factory=dict)


def runnable(traces, pairs, unmapped, system: str):
    """``(path, pairs, unmapped)``: the system's config file (``system``: a preset name such as ``h200-4gpu``, a
    path under a configs root such as ``systems/t3-table1.yaml``, or a system YAML), and ``pairs`` less those whose
    operation the system cannot run, which join ``unmapped`` with the check's message (as ``trace import`` lists
    them)."""
    path = _preset(str(system), "systems", "--system").resolve()
    ref = system_ref(str(path))  # a system config, not another kind
    with tempfile.TemporaryDirectory(prefix="t3sim-chakra-") as tmp:
        _, refused = experiment_points([(op, CHECKED_UNDER) for op in dict.fromkeys(p.op for p in pairs)], ref,
                                       Path(tmp))
    pairs, unmapped = _refuse(pairs, unmapped, {p: refused[(p.op, CHECKED_UNDER)] for p in pairs
                                                if (p.op, CHECKED_UNDER) in refused}, traces)
    return path, pairs, unmapped


def advise_pairs(pairs, system: Path, new_progress: Optional[Callable[[], Any]] = None, **kwargs) -> Dict[Any, Advice]:
    """Per distinct operation of ``pairs`` (first-seen order), its :class:`Advice` on ``system`` (a system YAML);
    ``new_progress``: makes each operation's :class:`~t3sim.exec.progress.Progress` (default: silent); ``kwargs``
    as :func:`~t3sim.commands.advise_cmd.advise_report` takes them, for every operation."""
    return {op: advise_report(system, advise_operation(op), progress=new_progress() if new_progress else None, **kwargs)
            for op in dict.fromkeys(p.op for p in pairs)}


def advise_traces(paths: Sequence[str], system: str, *, tp: Optional[int] = None, dtype: Optional[str] = None,
                  **kwargs) -> ChakraAdvice:
    """Advise on every distinct operation of the pairs of the traces ``paths`` (module doc).

    ``system``: as :func:`runnable` takes it; ``tp``, ``dtype``: as ``trace import`` takes them; ``kwargs``
    (``new_progress``, ``overrides``, ``schemes``, ``out``, ``jobs``, ``force``) as :func:`advise_pairs` takes them. Raises :class:`InputError` for bad traces, flags
    or system, before anything is simulated."""
    _need_chakra()
    from t3sim.workload.chakra_pairs import find_pairs
    from t3sim.workload.chakra_trace import traces_in

    if tp is not None and tp < 2:
        raise InputError("--tp", str(tp), "a tensor-parallel degree >= 2 (a collective needs two GPUs)")
    if kwargs.get("jobs", 1) < 0:
        raise InputError("-j/--jobs", str(kwargs["jobs"]), "a number of processes >= 1, or 0 for one per CPU")
    schemes = kwargs.get("schemes")
    if schemes is not None:  # checked before the traces, as every operation would be refused alike
        from t3sim.schemes.runtime import SCHEMES

        unknown = [k for k in schemes if k not in SCHEMES]
        if unknown or not schemes:
            raise InputError("--schemes", ",".join(unknown) or "none", "registered schemes: " + ", ".join(SCHEMES))
    traces = traces_in(paths)
    pairs, unmapped = find_pairs(traces, tp, dtype)
    path, pairs, unmapped = runnable(traces, pairs, unmapped, system)
    return ChakraAdvice(str(path), pairs, unmapped, advise_pairs(pairs, path, **kwargs))


def winner_times(pairs, advice: Dict[Any, Advice]) -> Tuple[Dict[Any, Any], Dict[Any, str]]:
    """Each pair's :class:`~t3sim.workload.chakra_export.PairTime` under its operation's winner (``advice``), read
    from the winner's run; and why each pair whose operation no scheme ran has none."""
    from t3sim.results.store import load_run
    from t3sim.workload.chakra_export import PairTime

    per_op: Dict[Any, Any] = {}
    why: Dict[Any, str] = {}
    for op, a in advice.items():
        rows = ranked(a)
        if not rows:
            failed = [f"{r['label']}: {r['reason']}" for r in a.rows if r["status"] == "failed"]
            why[op] = "no scheme ran it" + (": " + "; ".join(failed) if failed else "")
            continue
        summary = load_run(rows[0]["result_dir"]).summary
        per_op[op] = PairTime.from_summary(op, scheme_spec(rows[0]), summary, rows[0]["result_dir"])
    return ({p: per_op[p.op] for p in pairs if p.op in per_op}, {p: why[p.op] for p in pairs if p.op in why})


def pair_rows(result: ChakraAdvice) -> List[Dict[str, Any]]:
    """One record per pair: its nodes, operation, the winner and its time (us), the runner-up and the margin (us
    and as a fraction of the winner's time), the winner's binding resource."""
    out = []
    for p in result.pairs:
        rows = ranked(result.advice[p.op])
        first = rows[0] if rows else None
        second = rows[1] if len(rows) > 1 else None
        margin = second["total_us"] - first["total_us"] if first and second else None
        out.append({"trace": Path(p.trace).name, "gemm": p.gemm, "comm": p.comm, "gemm_label": p.gemm_label,
                    "comm_label": p.comm_label, "operation": p.op.name,
                    "winner": scheme_spec(first) if first else "", "total_us": first["total_us"] if first else None,
                    "runner_up": scheme_spec(second) if second else "", "margin_us": margin,
                    "margin_frac": margin / first["total_us"] if margin is not None and first["total_us"] else None,
                    "binding_resource": first["binding_resource"] if first else ""})
    return out


def _cell(v: Optional[float], fmt: str) -> str:
    return "-" if v is None else fmt.format(v)


def run(args: argparse.Namespace) -> int:
    """``t3sim advise --chakra``: the ranking of each operation, a table of the pairs, the unmapped nodes."""
    from t3sim.analysis.advise import format_table
    from t3sim.exec.progress import Progress

    given = [f for f, v in (("--model", args.model), ("--sublayer", args.sublayer), ("--tokens", args.tokens),
                            ("--m", args.M), ("--n", args.N), ("--k", args.K), ("--direction", args.direction))
             if v is not None]
    if given:
        raise InputError(given[0], "beside --chakra (the traces give the operations)",
                         "--chakra FILE.et ... or one operation (--model ... or --m --n --k), not both")
    schemes = [s.strip() for s in args.schemes.split(",") if s.strip()] if args.schemes is not None else None
    result = advise_traces(args.chakra, args.system, tp=args.tp, dtype=args.dtype, overrides=args.overrides,
                           schemes=schemes, out=args.out, jobs=args.jobs, force=args.force,
                           new_progress=lambda: Progress(sys.stderr))
    records = pair_rows(result)
    if args.json:
        ops = [{"name": op.name, "pairs": sum(p.op == op for p in result.pairs), **asdict(a)}
               for op, a in result.advice.items()]
        unmapped = [{"trace": Path(u.trace).name, "node": u.node, "label": u.label, "reason": u.reason}
                    for u in result.unmapped]
        json.dump({"system": result.system, "operations": ops, "pairs": records, "unmapped": unmapped},
                  sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    for op, a in result.advice.items():
        n = sum(p.op == op for p in result.pairs)
        coll = f" ({op.collective})" if op.direction == "gemm_rs" else ""
        sys.stdout.write(f"{op.name}: {op.direction}{coll} on {a.system}, tp={op.tp}, {op.dtype}: per GPU "
                         f"{a.gemm_M}x{a.gemm_N}x{a.gemm_K} (M x N x K), peak {a.peak_TFLOPS:.0f} TFLOP/s; "
                         f"{n} pair{'s' * (n != 1)}\n\n")
        sys.stdout.write(format_table(a.rows) + "\n")
    rows = [(r["trace"], r["gemm_label"], r["comm_label"], r["operation"], r["winner"] or "-",
             _cell(r["total_us"], "{:.3f}"), r["runner_up"] or "-", _cell(r["margin_us"], "{:.3f}"),
             _cell(r["margin_frac"], "{:.1%}"), r["binding_resource"] or "-") for r in records]
    sys.stdout.write(f"pairs ({len(records)}):\n" + _table(
        ("trace", "GEMM", "collective", "operation", "winner", "time us", "runner-up", "margin us", "margin",
         "binding"), rows))
    sys.stdout.write(_unmapped(result.unmapped))
    sys.stdout.write(f"results: {Path(args.out) / 'advise'}\n")
    return 0
