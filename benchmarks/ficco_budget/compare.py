"""Per point of two ficco-dma8 runs under OUT (``OUT/base``, ``OUT/new``, written by ab.sh): the wall times
(``meta.json``, s) and whether ``stats.json`` less ``sim.events`` is equal; then the sums."""

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


def main(out: str) -> None:
    total_b = total_n = 0.0
    for mb in sorted(glob.glob(f"{out}/base/*/*/meta.json")):
        pb = Path(mb).parent
        pn = Path(out) / "new" / pb.parent.name / pb.name
        wb = json.loads((pb / "meta.json").read_text())["wall_s"]
        wn = json.loads((pn / "meta.json").read_text())["wall_s"]
        cfg = (pb / "config.yaml").read_text()
        g = re.search(r"name: (g\d+)", cfg).group(1)
        s = re.search(r"ficco_schedule: (\w+)", cfg).group(1)
        same = digest(pb / "stats.json") == digest(pn / "stats.json")
        total_b, total_n = total_b + wb, total_n + wn
        print(f"{g:4s} {s:18s} base {wb:7.1f} s new {wn:7.1f} s ratio {wn / wb:.3f} "
              f"stats {'equal' if same else 'DIFFER'}")
    print(f"sum base {total_b:.1f} s new {total_n:.1f} s ratio {total_n / total_b:.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
