"""``t3sim memtest``: drive the HBM model with a synthetic pattern and report what it achieved."""

from __future__ import annotations

import argparse
import json
import math
import sys

from t3sim.config import SystemConfig, apply_overrides, build, load
from t3sim.errors import InputError
from t3sim.memory.memtest import DEFAULT_MIX, PATTERNS, parse_mix, run_memtest


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("memtest", help="run a synthetic memory pattern through the cycle-level HBM model")
    p.add_argument("--pattern", required=True, choices=PATTERNS, help="traffic pattern")
    p.add_argument("--mix", metavar="R:W", default=None,
                   help="read:write ratio of --pattern mixed, in chunks of 256 requests (default 1:1; e.g. 2:1)")
    p.add_argument("--requests", type=int, default=200_000, metavar="N", help="DRAM accesses (hbm.access_size_B each: 32 B on Table 1) to simulate (default 200000)")
    p.add_argument("--system", metavar="FILE", default=None, help="system config YAML (default: built-in Table 1 defaults)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a system field, e.g. --set hbm.channels=8 (repeatable)")
    p.add_argument("--mode", choices=("fast", "reference"), default="fast", help="controller implementation")
    p.add_argument("--seed", type=int, default=0, help="seed of the random pattern")
    p.add_argument("--no-check", action="store_true", help="skip the independent timing checker")
    p.add_argument("--compare-requests", type=int, default=4000, metavar="N",
                   help="requests for the fast-vs-reference comparison (0 = skip)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=_run)


def _system(args):
    overrides = [o.removeprefix("system.") for o in args.overrides]
    if args.system:
        return load(SystemConfig, args.system, overrides)
    data, prov = apply_overrides({}, {}, overrides)
    return build(SystemConfig, data, prov, "memtest defaults")


def strict_json(value):
    """``value`` with every non-finite float (NaN: no reads, so no read latency; inf) as None, and numpy
    scalars as Python numbers, so ``json.dump(..., allow_nan=False)`` writes strict JSON."""
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _run(args: argparse.Namespace) -> int:
    if args.requests <= 0:
        raise InputError("--requests", str(args.requests), "a positive number of requests")
    if args.compare_requests < 0:
        raise InputError("--compare-requests", str(args.compare_requests), "0 or more")
    mix = DEFAULT_MIX
    if args.mix is not None:
        if args.pattern != "mixed":
            raise InputError("--mix", f"{args.mix!r} with --pattern {args.pattern}", "--mix only with --pattern mixed")
        try:
            mix = parse_mix(args.mix)
        except ValueError as exc:
            raise InputError("--mix", str(exc), "R:W, two whole numbers of read and write chunks such as 2:1") from None
    system = _system(args)
    r = run_memtest(system, args.pattern, args.requests, args.mode, args.seed, not args.no_check, args.compare_requests,
                    mix=mix)
    if args.json:
        json.dump(strict_json(r), sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    w = sys.stdout.write
    name = f"{r['pattern']} {r['mix']}" if "mix" in r else r["pattern"]
    w(f"pattern            {name} ({r['requests']} requests, {r['bytes'] / 1e6:.1f} MB, {r['mode']} mode)\n")
    w(f"achieved bandwidth {r['achieved_GBps']:.1f} GB/s\n")
    w(f"peak bandwidth     {r['peak_GBps']:.1f} GB/s\n")
    w(f"efficiency         {100 * r['efficiency']:.1f} %\n")
    w(f"row-hit rate       {100 * r['row_hit_rate']:.1f} % (misses {r['row_misses']}, conflicts {r['row_conflicts']})\n")
    lat = r["read_latency_mean_ns"]
    w(f"mean read latency  {lat:.1f} ns\n" if lat == lat else "mean read latency  n/a (no reads)\n")
    w(f"turnarounds        {r['turnarounds']}   refreshes {r['refreshes']}\n")
    if "timing_violations" in r:
        w(f"timing violations  {r['timing_violations']} (checker over {r['commands_checked']} commands)\n")
        for k, v in r["violations_by_constraint"].items():
            w(f"  {v:8d}  {k}\n")
    w(f"simulation speed   {r['requests_per_s']:,.0f} requests/s (wall {r['wall_s']:.2f} s)\n")
    if "compare_requests" in r:
        w(f"fast vs reference  completion {100 * r['fast_vs_reference_completion_diff']:+.3f} %, bandwidth "
          f"{100 * r['fast_vs_reference_bandwidth_diff']:+.3f} % over {r['compare_requests']} requests"
          f"{' (identical per request)' if r['fast_vs_reference_identical'] else ''}\n")
    return 0
