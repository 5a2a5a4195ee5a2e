"""The exactness set: nine runs whose ``stats.json`` must stay byte-identical across a speed or layout change.

Each case runs through the command line (so the script does not depend on the package's internal layout) into a
scratch results folder, and the script prints one line per case: the MD5 of ``stats.json`` with the ``sim.*``
statistics (wall-clock time, event counts) left out. Compare the output before and after a change::

    python benchmarks/exactness.py > before.txt   # on the old commit
    python benchmarks/exactness.py > after.txt    # on the new one
    diff before.txt after.txt                     # no output: exact

The cases: T-NLG FC-2 at TP=8 on the T3 paper's Table 1 system (``configs/experiments/default.yaml``) at 256 tokens
under Sequential, T3, T3-MCA, Ideal-RS+NMC, T3 with WG-granular tracking and T3-MCA in explicit mode; at 1024 tokens
under T3 and T3-MCA; and the OP sub-layer at 512 tokens under T3. ``tests/system/test_golden.py`` holds 25 smaller
cases, every scheme, to committed values; this set adds larger points of the paper's own configurations.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT = "configs/experiments/default.yaml"
CASES = {
    "fc2-256-sequential": ("workload.tokens=256",),
    "fc2-256-t3": ("workload.tokens=256", "scheme.kind=t3"),
    "fc2-256-t3_mca": ("workload.tokens=256", "scheme.kind=t3_mca"),
    "fc2-256-ideal_rs_nmc": ("workload.tokens=256", "scheme.kind=ideal_rs_nmc"),
    "fc2-256-t3-wg-tracking": ("workload.tokens=256", "scheme.kind=t3", "system.tracker.granularity=wg"),
    "fc2-256-t3_mca-explicit": ("workload.tokens=256", "scheme.kind=t3_mca", "simulation.mode=explicit"),
    "fc2-1k-t3": ("workload.tokens=1024", "scheme.kind=t3"),
    "fc2-1k-t3_mca": ("workload.tokens=1024", "scheme.kind=t3_mca"),
    "op-512-t3": ("workload.tokens=512", "workload.sublayer=OP", "scheme.kind=t3"),
}


def digest(stats_path: Path) -> str:
    """MD5 of the statistics less ``sim.*`` (wall time and event counts), keys sorted."""
    stats = json.loads(stats_path.read_text())
    kept = {k: v for k, v in stats.items() if not k.startswith("sim.")}
    return hashlib.md5(json.dumps(kept, sort_keys=True).encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="run only these cases")
    args = ap.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.case or CASES:
            out = Path(tmp) / name
            cmd = [sys.executable, "-m", "t3sim.cli", "run", DEFAULT, "--out", str(out)]
            for s in CASES[name]:
                cmd += ["--set", s]
            subprocess.run(cmd, cwd=repo, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            (stats,) = out.rglob("stats.json")
            print(f"{name} {digest(stats)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
