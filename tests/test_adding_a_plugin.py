"""docs/adding-a-plugin.md works as written: its code blocks register plug-ins that validate and run.

The arbitration policy's block is written out as a module (outside t3sim, in a temporary folder) and drives the
Table 1 memory with both controllers, and the page's statements about it are checked on the statistics. Every other
example is executed in the namespace of the module it says it is added to and exercised briefly; the DRAM standard's
block is an excerpt of ``t3sim/memory/standards/hbm3.py`` and must stay one. Each block registers under a fresh name
(``doc_`` and its own) in a subprocess, so that nothing of it reaches this process's registry.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from tests.conftest import REPO

DOC = REPO / "docs/adding-a-plugin.md"
#: a code block and the file it names: ```python, then ``# <path>``, ``# added to <path> ...`` or ``# from <path>``
BLOCK = re.compile(r"```python\n# (added to |from )?(t3sim/[\w/]+\.py)[^\n]*\n(.*?)```", re.S)
REGISTERED = re.compile(r'(register\(|add\()"(\w+)", "(\w+)"')

SCRIPT = r"""
import importlib, json, sys
from concurrent.futures import ThreadPoolExecutor, as_completed

import numpy as np

blocks = json.loads(sys.stdin.read())
out = {}


def added(path):
    # the block executed in (a copy of) the namespace of the module it is added to
    mod = importlib.import_module(path[:-3].replace("/", "."))
    ns = dict(vars(mod), ThreadPoolExecutor=ThreadPoolExecutor, as_completed=as_completed)
    exec(compile(blocks[path], "<docs/adding-a-plugin.md: " + path + ">", "exec"), ns)
    return ns


# ---- the arbitration policy: a module of its own, both controllers
import doc_oldest_first  # noqa: F401  (registers doc_oldest_first)
from t3sim.config import SystemConfig
from t3sim.memory import MemorySystem
from t3sim.memory.request import Kind

N = 2048
for kind in ("doc_oldest_first", "compute_first"):
    for mode in ("reference", "fast"):
        cfg = SystemConfig.model_validate({"memory_controller": {"arbitration": {"kind": kind}}})
        ms = MemorySystem(cfg, mode=mode)
        a = np.arange(N, dtype=np.int64) * cfg.hbm.access_size_B
        ms.submit(0, a, Kind.READ, "comm", "collective")  # tick 0
        ms.submit(10_000, a + (1 << 28), Kind.READ, "compute", "gemm")  # 10 ns later (1 tick = 1 ps)
        ms.run_until_idle()
        s = ms.stats("")
        out[kind + "/" + mode] = {"comm": s.value("read_latency.comm_mean_ns"),
                                  "compute": s.value("read_latency.compute_mean_ns"),
                                  "requests": s.value("requests"), "done": ms.r_done[: ms.n].tolist()}

# ---- the write-drain policy: a module of its own, its decisions and a run of the reference controller
import doc_read_priority
d = doc_read_priority.decide
out["drain"] = [list(d(0, 5, 3, False, 0, 8, ())), list(d(0, 0, 3, False, 0, 8, ())), list(d(1, 5, 3, True, 0, 8, ()))]
cfg = SystemConfig.model_validate({"memory_controller": {"write_drain": "doc_read_priority"}})
ms = MemorySystem(cfg, mode="reference")
a = np.arange(512, dtype=np.int64) * cfg.hbm.access_size_B
ms.submit(0, a, Kind.WRITE, "compute", "gemm")
ms.submit(0, a + (1 << 28), Kind.READ, "compute", "gemm")
ms.run_until_idle()
out["drain_requests"] = ms.stats("").value("requests")

# ---- the address map: the first 16 chunks of 256 B lie in the 16 banks of channel 0
added("t3sim/memory/address_map.py")
cfg = SystemConfig.model_validate({"address_map": {"kind": "doc_bank_interleave"}})
m = MemorySystem(cfg, mode="reference").amap.map(np.arange(16, dtype=np.int64) * 256)
out["amap"] = {"units": sorted(set(m.unit.tolist())), "banks": len(set(m.bank.tolist()))}

# ---- the topology: every GPU's degree, and the graph maps onto itself rotated by one GPU
added("t3sim/interconnect/topology.py")
from t3sim.config import InterconnectConfig
from t3sim.interconnect.topology import build_topology

out["chordal"] = {}
for n in (3, 4, 5, 8):
    for bidir in (True, False):
        g = build_topology(InterconnectConfig(kind="doc_chordal_ring", num_gpus=n, bidirectional=bidir))
        out["chordal"][f"{n}/{bidir}"] = sorted({g.out_degree(v) for v in range(n)} | {g.in_degree(v) for v in range(n)})
        assert all(g.has_edge((a + 1) % n, (b + 1) % n) for a, b in g.edges), (n, bidir)

# ---- the collective: the symbolic executor proves the plan an all-to-all
ns = added("t3sim/collectives/algorithms.py")
from t3sim import registry
from t3sim.collectives.verify import verify

build = registry.get("collective", "doc_pairwise_all_to_all")
for n in range(2, 7):
    for num in (0, 1, n, 7 * n + 3):
        plan = build(n, num)
        verify(plan, seed=n * 100 + num)
out["a2a_steps"] = build(5, 40).num_steps

# ---- the tracker admission policy: refuses_all is admit refusing all; the smallest tracker never deadlocks
added("t3sim/dma/tracker_policy.py")
from t3sim.config import TrackerConfig
from t3sim.dma.tracker_policy import AdmissionPolicy
from tests.dma.test_tracker_deadlock import simulate_ring

pol = registry.get("tracker_admission", "doc_reserve_strict")()
TrackerConfig(admission="doc_reserve_strict")
out["refuses_all"] = all(pol.refuses_all(u, w, r) == AdmissionPolicy.refuses_all(pol, u, w, r)
                         for w in (1, 2, 3, 8) for u in range(w + 1) for r in range(u + 1))
out["tracker_completes"] = [simulate_ring(4, 12, False, 1, 1, 1, 1, 12, seed, "doc_reserve_strict", 0.9)[0]
                            for seed in range(10)]

# ---- the executor: every item's result, each once
ns = added("t3sim/exec/executors.py")
out["threads"] = sorted(ns["threads"](abs, [-3, 1, -2, 5], 2))
print(json.dumps(out))
"""


def _blocks():
    found = {path: (how or "", code) for how, path, code in BLOCK.findall(DOC.read_text())}
    return found


def _fresh(code: str) -> str:
    """``code`` with every name it registers prefixed ``doc_``."""
    return REGISTERED.sub(lambda m: f'{m.group(1)}"{m.group(2)}", "doc_{m.group(3)}"', code)


def test_the_doc_adds_plugins_that_run(tmp_path):
    blocks = _blocks()
    assert set(blocks) == {
        "t3sim/memory/policies/oldest_first.py", "t3sim/memory/write_drain/read_priority.py",
        "t3sim/memory/standards/hbm3.py", "t3sim/memory/address_map.py", "t3sim/interconnect/topology.py",
        "t3sim/collectives/algorithms.py", "t3sim/dma/tracker_policy.py", "t3sim/exec/executors.py"}, sorted(blocks)
    for path, (how, code) in blocks.items():
        assert (how == "") == path.endswith(("oldest_first.py", "read_priority.py")), path  # new files are whole
        assert (how == "from ") == path.endswith("hbm3.py"), path
    # the DRAM standard's block is an excerpt of the real file, line for line
    hbm3 = (REPO / "t3sim/memory/standards/hbm3.py").read_text().splitlines()
    assert all(line in hbm3 for line in blocks["t3sim/memory/standards/hbm3.py"][1].splitlines() if line.strip())
    for name, module in (("oldest_first.py", "doc_oldest_first.py"), ("read_priority.py", "doc_read_priority.py")):
        (path,) = [p for p in blocks if p.endswith(name)]
        (tmp_path / module).write_text(_fresh(blocks[path][1]))
    added = {p: _fresh(c) for p, (how, c) in blocks.items() if how == "added to "}
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, input=json.dumps(added), capture_output=True,
                       text=True, timeout=900, env={**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}"})
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])

    # the arbitration policy: both controllers complete every request at the same cycle
    for kind in ("doc_oldest_first", "compute_first"):
        fast, ref = out[f"{kind}/fast"], out[f"{kind}/reference"]
        assert fast["done"] == ref["done"] and fast["requests"] == 4096 and min(fast["done"]) >= 0, kind
    oldest, compute_first = out["doc_oldest_first/fast"], out["compute_first/fast"]
    assert oldest["comm"] < oldest["compute"]  # the communication reads, which arrived first, are served first
    assert oldest["comm"] < compute_first["comm"]  # ... sooner than under compute_first,
    assert compute_first["comm"] > compute_first["compute"]  # which serves the compute reads first

    assert out["drain"] == [[0, 0], [1, 0], [1, 0]] and out["drain_requests"] == 1024
    assert out["amap"] == {"units": [0], "banks": 16}
    assert out["chordal"] == {"3/True": [2], "3/False": [2], "4/True": [3], "4/False": [2], "5/True": [4],
                              "5/False": [2], "8/True": [4], "8/False": [2]}
    assert out["a2a_steps"] == 4
    assert out["refuses_all"] and all(out["tracker_completes"])
    assert out["threads"] == [[0, 3], [1, 1], [2, 2], [3, 5]]
