"""L2-only replay: time the compiled L2 kernel of one simulation point alone (docs/performance.md, profiling method).

    python benchmarks/l2replay.py record CONFIG OUT.pkl [--set key=value ...]
    python benchmarks/l2replay.py replay OUT.pkl [--reps N]

``record`` runs a one-point experiment in this process with ``MemoryHierarchy``'s two compiled L2 calls
(``l2_read``, ``l2_write``) wrapped: it keeps each L2's state as first seen, every batch's arguments and a digest
of the write-back rows each call returned, and a digest of every L2's state at the end. ``replay`` feeds the batches
to ``access_uniform`` (the L2 access both calls make) on a copy of the first-seen state and prints the time per
access, the number of batches whose write-back rows differ from the recording and whether the final state matches.
A mismatch says the recording missed calls: a GEMM in the compiled window accesses the L2 from compiled code; use
points whose GEMMs run beside other traffic (T3, FLUX, FiCCO). The read plan and the fill table are not replayed.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import tempfile
import time

import numpy as np


def _digest(arrays) -> str:
    h = hashlib.md5()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def record(config: str, out: str, sets) -> None:
    from t3sim.cli import main
    from t3sim.compute import memhier as MH

    first, live, calls = {}, {}, []
    o_read, o_write = MH.l2_read, MH.l2_write

    def seen(state) -> int:
        k = id(state[0])
        if k not in first:
            first[k] = [x.copy() for x in state]
            live[k] = state
        return k

    def read(addrs, unc, sc, now, S, G, V, occ, counts, *rest):
        k = seen((S, G, V, occ, counts))
        r = o_read(addrs, unc, sc, now, S, G, V, occ, counts, *rest)
        calls.append((k, np.array(addrs), False, bool(unc), int(sc), int(now), _digest([r[3]])))
        return r

    def write(addrs, unc, sc, now, S, G, V, occ, counts, access_B):
        k = seen((S, G, V, occ, counts))
        r = o_write(addrs, unc, sc, now, S, G, V, occ, counts, access_B)
        calls.append((k, np.array(addrs), True, bool(unc), int(sc), int(now), _digest([r[3]])))
        return r

    MH.l2_read, MH.l2_write = read, write
    try:
        with tempfile.TemporaryDirectory() as d:
            try:
                main(["run", config, "--out", d, "--force"] + [x for s in sets for x in ("--set", s)])
            except SystemExit as e:
                if e.code:
                    raise
    finally:
        MH.l2_read, MH.l2_write = o_read, o_write
    final = {k: _digest(st) for k, st in live.items()}
    with open(out, "wb") as f:
        pickle.dump((first, calls, final), f, protocol=5)
    print(f"recorded {len(calls)} batches, {sum(len(c[1]) for c in calls)} accesses, {len(first)} L2(s) -> {out}")


def replay(path: str, reps: int) -> int:
    from t3sim.cache.fast import l2_kernel as L2K
    from t3sim.config.system import REQUEST_B

    with open(path, "rb") as f:
        first, calls, final = pickle.load(f)
    n = sum(len(c[1]) for c in calls)
    rc = 0
    for rep in range(reps):
        state = {k: [x.copy() for x in st] for k, st in first.items()}
        t0 = time.perf_counter()
        Es = [L2K.access_uniform(a, wr, unc, sc, REQUEST_B, now, *state[k])[1] for k, a, wr, unc, sc, now, _ in calls]
        dt = time.perf_counter() - t0
        bad = sum(_digest([E]) != c[6] for E, c in zip(Es, calls))
        equal = all(_digest(st) == final[k] for k, st in state.items())
        print(f"rep {rep}: {dt:.3f} s, {dt / max(n, 1) * 1e9:.1f} ns an access ({len(calls)} batches, {n} accesses); "
              f"write-back mismatches {bad}, final state {'equal to' if equal else 'DIFFERS from'} the recording")
        if bad or not equal:
            rc = 1
    return rc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("config")
    r.add_argument("out")
    r.add_argument("--set", action="append", default=[])
    q = sub.add_parser("replay")
    q.add_argument("pkl")
    q.add_argument("--reps", type=int, default=3)
    a = p.parse_args(argv)
    if a.cmd == "record":
        record(a.config, a.out, a.set)
        return 0
    if a.reps < 1:
        p.error("--reps must be at least 1")
    return replay(a.pkl, a.reps)


if __name__ == "__main__":
    sys.exit(main())
