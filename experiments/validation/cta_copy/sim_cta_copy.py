"""Simulate the cta_copy benchmark on the H200 preset and compare it with the measurement (README.md here).

Each of ``ctas`` CUs runs one collective CTA (:class:`t3sim.collectives.gpu_hook.CuPool`, as NCCL's channels
do in :mod:`t3sim.collectives.nccl`): it reduce-copies ``per_cta`` bytes from ``nsrc`` cold source buffers into
a local output, in pieces of ``collective.inflight_per_cu_B`` bytes per source, with the preset's
``collective.cu_bandwidth_GBps``. Prints one JSON object: every row simulated beside the measured
``cta_copy_h200.json`` row, and the mean log error (sim / measured) of the calibration rows (24 CTAs,
256 KiB..2 MiB per CTA, 1 and 2 sources: the rows a kernel's start-up time weighs least in).

Usage: python experiments/validation/cta_copy/sim_cta_copy.py [--set FIELD=VALUE ...]
"""
import argparse
import json
import math
from pathlib import Path

import simpy

HERE = Path(__file__).resolve().parent
SYSTEM = HERE.parents[2] / "configs/systems/h200-4gpu.yaml"
CALIBRATION = {(n, 24, kib) for n in (1, 2) for kib in (256, 1024, 2048)}


def simulate(system, nsrc: int, ctas: int, per_B: int) -> float:
    """Microseconds for ``ctas`` CTAs to reduce-copy ``per_B`` bytes each from ``nsrc`` cold sources."""
    from t3sim.collectives.gpu_hook import CuPool, _Group, _Piece, line_addrs
    from t3sim.compute.memhier import MemoryHierarchy
    from t3sim.memory.request import Stream
    from t3sim.sim.clock import TICKS_PER_NS, Clock
    from t3sim.sim.engine import Engine

    eng = Engine(seed=0)
    env = eng.env
    hier = MemoryHierarchy(env, system)
    clock = Clock.from_GHz(system.gpu.clock_GHz, "cu")
    P = system.collective.inflight_per_cu_B
    region = 96 << 20  # source 0, source 1, output: 96 MiB apart (as the benchmark's buffers)
    groups = []
    for c in range(ctas):
        pool = CuPool(env, hier, 1, clock, 256, Stream.COMM, lambda: None, None, None, f"cta{c}",
                      system.collective.cu_bandwidth_GBps)
        parts = [(off, min(P, per_B - off)) for off in range(0, per_B, P)]
        g = _Group(env, f"cta{c}", len(parts))
        groups.append(g)
        pieces = []
        for off, nb in parts:
            a = c * per_B + off
            pieces.append(_Piece([line_addrs(a + k * region, nb) for k in range(nsrc)], (nsrc - 1) * nb // 2,
                                 line_addrs(a + 2 * region, nb), g, env.event(), None))
        pool.submit(pieces, "rs")
    done = simpy.AllOf(env, [g.event for g in groups])
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    return env.now / TICKS_PER_NS / 1e3


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    a = ap.parse_args(argv)
    from t3sim.config import load_system

    system = load_system(SYSTEM, a.set)
    meas = json.loads((HERE / "cta_copy_h200.json").read_text())["rows"]
    rows, logs = [], []
    for m in meas:
        key = (m["nsrc"], m["ctas"], m["per_cta_KiB"])
        t = simulate(system, m["nsrc"], m["ctas"], m["per_cta_KiB"] << 10)
        r = dict(nsrc=m["nsrc"], ctas=m["ctas"], per_cta_KiB=m["per_cta_KiB"], measured_cold_us=m["cold_us"],
                 simulated_us=round(t, 3), error=round(t / m["cold_us"] - 1, 4), calibration=key in CALIBRATION)
        rows.append(r)
        if key in CALIBRATION:
            logs.append(math.log(t / m["cold_us"]))
    print(json.dumps({"set": a.set, "cu_bandwidth_GBps": system.collective.cu_bandwidth_GBps,
                      "inflight_per_cu_B": system.collective.inflight_per_cu_B,
                      "calibration_mean_log_error": round(sum(logs) / len(logs), 4),
                      "calibration_rms_log_error": round(math.sqrt(sum(x * x for x in logs) / len(logs)), 4),
                      "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
