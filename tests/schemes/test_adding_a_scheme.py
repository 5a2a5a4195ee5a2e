"""docs/adding-a-scheme.md works as written: its code blocks, written out as a family package (outside t3sim, in a
temporary folder), register a scheme that validates, resolves and runs through the normal simulate path.

The point runs in a subprocess, so that the scheme registered there stays out of this process's registry (whose
listings, e.g. docs/parameters.md, must not show it)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.conftest import REPO

DOC = REPO / "docs/adding-a-scheme.md"
#: a code block the doc gives a file of the family folder: ```python, then ``# t3sim/schemes/staggered/<file>``
BLOCK = re.compile(r"```python\n# t3sim/schemes/staggered/(\w+\.py)\n(.*?)```", re.S)
PACKAGE = "doc_staggered"

#: a two-GPU OP sub-layer of a 256-wide model on 4 CUs (tests/system/test_golden.py's TINY)
TINY = ["workload.sublayer=OP", "workload.tokens=64", "workload.model.hidden_size=256", "workload.tp=2",
        "system.interconnect.num_gpus=2", "system.gpu.num_cus=4"]

SCRIPT = """
import json, sys
import {package}.options  # registers the family (a folder of t3sim/schemes/ is imported by t3sim.schemes)
from t3sim.config import load_experiment
from t3sim.config.params import render_markdown
from t3sim.errors import InputError
from t3sim.system import simulate

DEFAULT, TINY = "configs/experiments/default.yaml", {tiny!r}
out = {{}}
exp = load_experiment(DEFAULT, TINY + ["scheme.kind=staggered", "scheme.stagger_ns=3000"])
out["resolved"] = exp.model_dump(mode="json")["scheme"]
out["loaded_before_run"] = "{package}.staggered" in sys.modules
s = simulate(exp).stats
seq = simulate(load_experiment(DEFAULT, TINY)).stats
out["loaded_after_run"] = "{package}.staggered" in sys.modules
for name in ("kernels.gemm.end_us", "kernels.rs.start_us", "time.rs_us", "time.total_us"):
    out[name] = s.value(name)
out["seq.gemm_end_us"] = seq.value("kernels.gemm.end_us")
out["seq.total_us"] = seq.value("time.total_us")
try:
    load_experiment(DEFAULT, TINY + ["scheme.stagger_ns=3000"])
except InputError as e:
    out["refused"] = str(e)
out["listed"] = "`scheme.stagger_ns` | staggered |" in render_markdown()
print(json.dumps(out))
"""


def test_the_doc_adds_a_scheme_that_runs(tmp_path):
    blocks = dict(BLOCK.findall(DOC.read_text()))
    assert set(blocks) == {"__init__.py", "options.py", "staggered.py"}, sorted(blocks)
    pkg = tmp_path / PACKAGE
    pkg.mkdir()
    for name, code in blocks.items():
        (pkg / name).write_text(code)
    script = SCRIPT.format(package=PACKAGE, tiny=TINY)
    r = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=600,
                       env={**__import__("os").environ, "PYTHONPATH": f"{tmp_path}:{REPO}"})
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["resolved"] == {"kind": "staggered", "stagger_ns": 3000.0}
    assert not out["loaded_before_run"] and out["loaded_after_run"]  # the scheme's module loads when a run needs it
    # the reduce-scatter launches 3 us after the GEMM ends; the GEMM (alone on its GPU) is Sequential's
    assert abs(out["kernels.rs.start_us"] - out["kernels.gemm.end_us"] - 3.0) < 1e-6
    assert out["kernels.gemm.end_us"] == out["seq.gemm_end_us"]
    assert out["time.rs_us"] > 3.0 and out["time.total_us"] > out["seq.total_us"]  # the gap counts as exposed RS
    assert out["refused"] == ("scheme.stagger_ns: found 3000.0 with scheme.kind=sequential, which does not use it; "
                              "allowed: scheme.stagger_ns only with staggered")
    assert out["listed"]
