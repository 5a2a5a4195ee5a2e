"""Memory-only replay: time the memory model of one simulation point alone (docs/performance.md, profiling method).

    python benchmarks/memreplay.py record CONFIG OUT.pkl [--set key=value ...]
    python benchmarks/memreplay.py replay OUT.pkl [--reps N] [--perf-map]

``record`` runs a one-point experiment in this process with every call into ``MemorySystem`` (submit, advance,
sync, settle, pop_completed, policy events, hooks) wrapped, and pickles the calls, the constructor's arguments and
a digest of the memory's statistics at the end. ``replay`` feeds the calls into a fresh ``MemorySystem`` and
prints the wall time (and the share in advance/sync/settle, the compiled controller), the number of submissions
and completions that differ from the recording, and whether the statistics digest matches: a replay that
differs says the recording missed calls (a GEMM in the compiled window drives the controllers without these
methods; use points whose GEMMs run beside other traffic, as FiCCO's and T3's do).

T3's enqueue hook (its tracker) is replayed as a hook that does nothing: its reports change no memory state.

``--perf-map`` writes ``/tmp/perf-<pid>.map`` with the address of the compiled pump step and dumps its code to
``pump_step.bin`` (run under ``perf record``; read ``perf script -F ip`` against ``objdump -D -b binary
-mi386:x86-64 --adjust-vma=<address> pump_step.bin``). Recordings are large (1.1 GB for a FiCCO 2D point).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import hashlib
import json
import os
import pickle
import sys
import tempfile
import time

import numpy as np

NAMES = ("submit", "advance", "sync", "settle", "pop_completed", "post_policy_event", "set_enqueue_hook",
         "run_until_idle")
CHECKED = ("submit", "pop_completed")  # calls whose results the replay compares
HOOK = "enqueue hook"  # stands for the recorded run's enqueue hook (T3's tracker)


def _no_hook(*_args, **_kw) -> None:
    return None


def stats_digest(mem) -> str:
    return hashlib.md5(json.dumps(mem.stats(at_tick=None).to_dict(), sort_keys=True, default=str).encode()).hexdigest()


def record(config: str, out: str, sets) -> None:
    from t3sim.cli import main
    from t3sim.memory import system as S

    calls, inits, mems = [], [], []
    originals = {n: getattr(S.MemorySystem, n) for n in NAMES if hasattr(S.MemorySystem, n)}

    def wrap(name, f):
        def w(self, *a, **k):
            copy = tuple(np.array(x) if isinstance(x, np.ndarray) else x for x in a)
            if name == "set_enqueue_hook" and copy and copy[0] is not None:
                copy = (HOOK,) + copy[1:]  # the hook's reports change no memory state: a no-op on replay
            kw = {key: (np.array(v) if isinstance(v, np.ndarray) else v) for key, v in k.items()}
            r = f(self, *a, **k)
            calls.append((name, copy, kw, r if name in CHECKED else None))
            return r
        return w

    init = S.MemorySystem.__init__

    def recording_init(self, system, *a, **k):
        inits.append((system, a, k))
        mems.append(self)
        init(self, system, *a, **k)

    try:
        for n, f in originals.items():
            setattr(S.MemorySystem, n, wrap(n, f))
        S.MemorySystem.__init__ = recording_init
        with tempfile.TemporaryDirectory() as d:
            args = ["run", config, "--out", d, "--force"] + [x for s in sets for x in ("--set", s)]
            try:
                main(args)
            except SystemExit as e:
                if e.code:
                    raise
    finally:
        for n, f in originals.items():
            setattr(S.MemorySystem, n, f)
        S.MemorySystem.__init__ = init
    if len(mems) != 1:
        sys.exit(f"memreplay: {config} built {len(mems)} memory systems; record a one-point experiment of one "
                 "simulated GPU (homogeneous mode)")
    data = pickle.dumps((inits[0], calls, stats_digest(mems[0])), protocol=5)
    with open(out, "wb") as f:
        f.write(data)
    print(f"{len(calls)} calls: " + ", ".join(f"{n} {sum(1 for c in calls if c[0] == n)}" for n in NAMES), flush=True)


def replay(path: str, reps: int, perf_map: bool) -> int:
    from t3sim.memory.system import MemorySystem

    with open(path, "rb") as f:
        (system, a, k), calls, digest = pickle.load(f)
    bad_all = 0
    for _ in range(reps):
        mem = MemorySystem(system, *a, **k)
        gc.collect()
        gc.disable()
        bad, tk = 0, 0.0
        t0 = time.perf_counter()
        for name, args, kw, r in calls:
            if name in ("advance", "sync", "settle"):
                t1 = time.perf_counter()
                getattr(mem, name)(*args, **kw)
                tk += time.perf_counter() - t1
                continue
            if name == "set_enqueue_hook" and args and args[0] == HOOK:
                args = (_no_hook,) + args[1:]
            out = getattr(mem, name)(*args, **kw)
            if name in CHECKED and out != r:
                bad += 1
        dt = time.perf_counter() - t0
        gc.enable()
        same = stats_digest(mem) == digest
        bad_all += bad + (not same)
        print(f"replay {dt:.2f} s (advance/sync/settle {tk:.2f} s), mismatches {bad}, statistics "
              f"{'equal to the recording' if same else 'DIFFER from the recording'}", flush=True)
    if perf_map:
        from t3sim.memory.fast import controller_fast as CF

        step = CF.kernels(type(mem.policy), type(mem.drain))[1]
        with open(f"/tmp/perf-{os.getpid()}.map", "w") as f:
            for cres in step.overloads.values():
                addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
                f.write(f"{addr:x} 20000 pump_step\n")
                with open("pump_step.bin", "wb") as b:
                    b.write(ctypes.string_at(addr, 0x20000))
                print(f"pump_step at {addr:#x} (pump_step.bin, 128 KiB)")
    return 1 if bad_all else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("config")
    r.add_argument("out")
    r.add_argument("--set", action="append", default=[], dest="sets")
    q = sub.add_parser("replay")
    q.add_argument("pkl")
    q.add_argument("--reps", type=int, default=1)
    q.add_argument("--perf-map", action="store_true")
    ns = p.parse_args(argv)
    if ns.cmd == "replay" and ns.reps < 1:
        p.error(f"--reps {ns.reps}: at least 1")
    if ns.cmd == "record":
        record(ns.config, ns.out, ns.sets)
        return 0
    return replay(ns.pkl, ns.reps, ns.perf_map)


if __name__ == "__main__":
    sys.exit(main())
