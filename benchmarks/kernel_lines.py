"""Where a run's compiled time goes: samples per numba function and, in one kernel, per source line (docs/performance.md,
profiling method).

    python benchmarks/kernel_lines.py record CONFIG DIR [--set key=value ...] [--freq HZ] [--warm]
    python benchmarks/kernel_lines.py report DIR [--kernel NAME] [--top N]

``record`` runs the one-point experiment CONFIG in a child process under ``perf record`` (cpu-clock samples at
``--freq``), with numba compiling every kernel afresh with line tables (``NUMBA_DEBUGINFO=1`` and an empty
``NUMBA_CACHE_DIR=DIR/nbc``: code loaded from a cache has no object code at hand) and bounds checks off
(``NUMBA_BOUNDSCHECK=0``: debug info turns them on otherwise). numba also keeps variables alive to their scope's
end with debug info, so the code is close to, not the same as, a normal run's (on a FiCCO characterization point
the controller kernel took about as many seconds of samples as cProfile gives the whole window in a normal
run). Without ``--warm`` the child's wall time includes the compilation. When the point is done the child
writes ``DIR/entries.json`` (every compiled overload: entry address, qualified name, source file and line range, the
source files of the functions it calls) and ``DIR/obj/<n>.o`` (each overload's object code). Compilation is sampled
too (its samples fall outside the compiled functions) unless ``--warm``: then the child runs the point twice and
``perf`` is attached (``perf record -p``) only for the second run, so the shares are the run's.

``report`` reads the samples (``perf script -F ip``) and prints the share of all samples in each compiled function
(a function spans to the next entry) and, with ``--kernel`` (a substring of a qualified name), the share of that
function's samples per source line, from its object's line table (``addr2line``). numba gives the code of a helper
inlined at numba level (``inline="always"``) the caller's file with the helper's own line numbers; a line outside the
kernel's own source range is printed with the text of that line in each file of the functions the kernel calls, to
be settled by the line's instructions (``objdump -dl DIR/obj/<n>.o``).

Needs ``perf``, ``objdump`` and ``addr2line`` (binutils). The numbers are cpu-clock samples of one run on a shared
machine: shares, not timings (a load that misses is charged to the instruction after it).
"""

from __future__ import annotations

import argparse
import bisect
import collections
import gc
import inspect
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, List


def _source_range(fn):
    """(file, first line, last line) of a Python function's source, or (None, 0, 0)."""
    try:
        lines, first = inspect.getsourcelines(fn)
        return inspect.getsourcefile(fn), first, first + len(lines) - 1
    except (OSError, TypeError):
        return None, 0, 0


def _callee_files(fn) -> List[str]:
    """Source files of the functions (and numba dispatchers) ``fn``'s globals name."""
    out = set()
    for v in getattr(fn, "__globals__", {}).values():
        f = getattr(v, "py_func", v)
        if inspect.isfunction(f):
            path = _source_range(f)[0]
            if path:
                out.add(path)
    return sorted(out)


def dump_compiled(out: Path) -> List[dict]:
    """Every compiled overload of every numba dispatcher alive in this process: its entry and, where its object
    code is at hand (compiled in this process), ``out/obj/<n>.o``. Returns the entries (written as entries.json)."""
    from numba.core.dispatcher import Dispatcher

    (out / "obj").mkdir(parents=True, exist_ok=True)
    ents = []
    for d in [o for o in gc.get_objects() if isinstance(o, Dispatcher)]:
        path, first, last = _source_range(d.py_func)
        callees = _callee_files(d.py_func)
        for cres in d.overloads.values():
            try:
                addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
            except Exception:  # a library without that symbol (not finalized)
                continue
            if not addr:
                continue
            e = {"addr": addr, "name": d.py_func.__qualname__, "symbol": cres.fndesc.llvm_func_name, "file": path,
                 "first": first, "last": last, "callees": callees, "obj": None}
            try:
                blob = cres.library.serialize_using_object_code()[2]
            except RuntimeError:  # loaded from a cache: no object code
                blob = None
            if blob is not None:
                o = out / "obj" / f"{len(ents)}.o"
                o.write_bytes(blob[0] if isinstance(blob, tuple) else blob)
                e["obj"] = str(o)
            ents.append(e)
    ents.sort(key=lambda e: e["addr"])
    (out / "entries.json").write_text(json.dumps(ents, indent=0))
    return ents


def by_function(ents: List[dict], ips: Iterable[int], span_cap: int = 1 << 20) -> collections.Counter:
    """Samples per function: an address belongs to the last entry at or below it, within ``span_cap`` bytes."""
    starts = [e["addr"] for e in ents]
    c = collections.Counter()
    for ip in ips:
        i = bisect.bisect_right(starts, ip) - 1
        c[ents[i]["name"] if i >= 0 and ip - starts[i] < span_cap else "(not compiled code)"] += 1
    return c


def _symbol_offset(obj: str, symbol: str):
    """(offset, size, section) of ``symbol`` in ``obj`` (``objdump -t``; numba's large code model puts code in
    ``.ltext``)."""
    out = subprocess.run(["objdump", "-t", obj], capture_output=True, text=True, check=True).stdout
    for ln in out.splitlines():
        p = ln.split()
        if len(p) >= 5 and p[-1] == symbol:
            return int(p[0], 16), int(p[-2], 16), p[-3]
    raise ValueError(f"{obj}: no symbol {symbol}")


def by_line(ent: dict, ips: Iterable[int]) -> collections.Counter:
    """Samples of function ``ent`` per ``(file, line)`` of its object's line table (``addr2line``; '?' where none).
    The function's code is its symbol's ``[offset, offset + size)`` in the object, loaded at ``ent['addr']``."""
    off0, size, section = _symbol_offset(ent["obj"], ent["symbol"])
    base = ent["addr"] - off0
    offs = collections.Counter(ip - base for ip in ips if off0 <= ip - base < off0 + size)
    if not offs:
        return collections.Counter()
    uniq = sorted(offs)
    res = subprocess.run(["addr2line", "-a", "-e", ent["obj"], "-j", section] + [hex(o) for o in uniq],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    line_of, cur = {}, None
    for r in res:
        if r.startswith("0x"):
            cur = int(r, 16)
        elif cur is not None:
            f, _, n = r.rpartition(":")
            line_of[cur] = (os.path.basename(f) or "?", int(n) if n.isdigit() else 0)
            cur = None
    c = collections.Counter()
    for o, n in offs.items():
        c[line_of.get(o, ("?", 0))] += n
    return c


def _text(path, n: int) -> str:
    """Line ``n`` of file ``path`` (stripped), or '' (no file, no such line)."""
    if not path or n < 1:
        return ""
    try:
        return Path(path).read_text().splitlines()[n - 1].strip()
    except (OSError, IndexError):
        return ""


def report(d: Path, kernel: str, top: int) -> int:
    for f in ("entries.json", "perf.data"):
        if not (d / f).is_file():
            print(f"kernel_lines: {d / f} not found (made by `kernel_lines.py record CONFIG {d}`)", file=sys.stderr)
            return 2
    ents = json.loads((d / "entries.json").read_text())
    out = subprocess.run(["perf", "script", "-i", str(d / "perf.data"), "-F", "ip"], capture_output=True, text=True,
                         check=True).stdout.split()
    ips = [int(x, 16) for x in out]
    total = len(ips)
    print(f"{total} samples")
    for name, n in by_function(ents, ips).most_common(top):
        print(f"{100 * n / total:6.2f}%  {name}")
    if not kernel:
        return 0
    cands = [e for e in ents if kernel in e["name"] and e["obj"]]
    if not cands:
        print(f"no compiled overload named like {kernel!r} with object code", file=sys.stderr)
        return 2
    for e in cands:
        c = by_line(e, ips)
        n_in = sum(c.values())
        if not n_in:
            continue
        where = os.path.basename(e["file"] or "?")
        print(f"\n{e['name']}: {n_in} samples ({100 * n_in / total:.1f}% of all), by line of {where}")
        for (f, ln), n in c.most_common(top):
            own = e["first"] <= ln <= e["last"]
            print(f"{100 * n / n_in:6.2f}%  {f}:{ln:<5d} {_text(e['file'], ln)[:100] if own else ''}")
            if not own and ln:
                for p in e["callees"]:
                    t = _text(p, ln)
                    if t:
                        print(f"{'':8s}  (inlined?) {os.path.basename(p)}:{ln} {t[:90]}")
    return 0


def _child(config: str, d: Path, sets: List[str], warm: bool) -> None:
    from t3sim.config import load_experiment
    from t3sim.system import simulate

    exp = load_experiment(config, overrides=sets)
    if warm:  # run once to compile, then tell the parent (which attaches perf) and wait for it
        t0 = time.perf_counter()
        simulate(exp)
        print(f"warm-up run (compiling) {time.perf_counter() - t0:.1f} s", flush=True)
        (d / "warm.pid").write_text(str(os.getpid()))
        while not (d / "go").exists():
            time.sleep(0.05)
    t0 = time.perf_counter()
    r = simulate(exp)
    print(f"simulated {r.summary['total_us']:.3f} us in {time.perf_counter() - t0:.1f} s", flush=True)
    ents = dump_compiled(d)
    print(f"{len(ents)} compiled overloads, {sum(1 for e in ents if e['obj'])} with object code -> {d}", flush=True)


def record(config: str, d: Path, sets: List[str], freq: int, warm: bool) -> int:
    for tool in ("perf", "objdump", "addr2line"):
        if shutil.which(tool) is None:
            print(f"kernel_lines: {tool} not found (needed to record and read samples)", file=sys.stderr)
            return 2
    d.mkdir(parents=True, exist_ok=True)
    for f in ("warm.pid", "go"):
        (d / f).unlink(missing_ok=True)
    # debug info turns numba's bounds checks on unless they are set off
    env = dict(os.environ, NUMBA_DEBUGINFO="1", NUMBA_BOUNDSCHECK="0", NUMBA_CACHE_DIR=str(d / "nbc"))
    child = [sys.executable, __file__, "_child", config, str(d)] + [x for s in sets for x in ("--set", s)]
    perf = ["perf", "record", "-F", str(freq), "-o", str(d / "perf.data")]
    if not warm:
        return subprocess.run(perf + child, env=env).returncode
    proc = subprocess.Popen(child + ["--warm"], env=env)
    while not (d / "warm.pid").exists():
        if proc.poll() is not None:
            return proc.returncode or 1
        time.sleep(0.2)
    rec = subprocess.Popen(perf + ["-p", (d / "warm.pid").read_text()])
    time.sleep(2.0)  # perf attached
    (d / "go").touch()
    rc = proc.wait()
    rec.wait()  # perf -p ends with the process it samples
    return rc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    c = sub.add_parser("_child")  # the process record samples
    for x in (r, c):
        x.add_argument("config")
        x.add_argument("dir")
        x.add_argument("--set", action="append", default=[], dest="sets")
        x.add_argument("--warm", action="store_true", help="run the point twice, sampling only the second run")
    r.add_argument("--freq", type=int, default=999)
    q = sub.add_parser("report")
    q.add_argument("dir")
    q.add_argument("--kernel", default="")
    q.add_argument("--top", type=int, default=30)
    ns = p.parse_args(argv)
    if ns.cmd == "record":
        return record(ns.config, Path(ns.dir), ns.sets, ns.freq, ns.warm)
    if ns.cmd == "_child":
        _child(ns.config, Path(ns.dir), ns.sets, ns.warm)
        return 0
    return report(Path(ns.dir), ns.kernel, ns.top)


if __name__ == "__main__":
    sys.exit(main())
