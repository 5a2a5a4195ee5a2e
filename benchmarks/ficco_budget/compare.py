"""Per point of two runs under OUT (``OUT/base``, ``OUT/new``: ab.sh here, ../flux_ab.sh): the wall times
(``meta.json``, s) and whether ``stats.json`` less ``sim.events`` is equal; then the sums. A point is named by its
FiCCO scenario and schedule where its config has them, else by its scheme and point directory."""

import glob
import hashlib
import json
import re
import sys
from pathlib import Path


def digest(stats: Path) -> str:
    d = json.loads(stats.read_text())
    d.get("sim", {}).pop("events", None)
    return hashlib.md5(json.dumps(d, sort_keys=True).encode()).hexdigest()


def label(point: Path) -> str:
    cfg = (point / "config.yaml").read_text()
    g, s = re.search(r"name: (g\d+)", cfg), re.search(r"ficco_schedule: (\w+)", cfg)
    if g and s:
        return f"{g.group(1):4s} {s.group(1):18s}"
    kind = re.search(r"^scheme:\n(?:  .*\n)*?  kind: (\w+)", cfg, re.M)
    return f"{kind.group(1) if kind else '?':22s} {point.name}"


def main(out: str) -> None:
    total_b = total_n = 0.0
    n = equal = 0
    for mb in sorted(glob.glob(f"{out}/base/*/*/meta.json")):
        pb = Path(mb).parent
        pn = Path(out) / "new" / pb.parent.name / pb.name
        wb = json.loads((pb / "meta.json").read_text())["wall_s"]
        wn = json.loads((pn / "meta.json").read_text())["wall_s"]
        same = digest(pb / "stats.json") == digest(pn / "stats.json")
        total_b, total_n = total_b + wb, total_n + wn
        n, equal = n + 1, equal + same
        print(f"{label(pb)} base {wb:7.1f} s new {wn:7.1f} s ratio {wn / wb:.3f} stats {'equal' if same else 'DIFFER'}")
    print(f"points {n}, statistics equal {equal}; sum base {total_b:.1f} s new {total_n:.1f} s ratio "
          f"{total_n / total_b:.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
