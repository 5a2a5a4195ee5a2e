"""Golden statistics: every scheme's results held to the values committed in ``golden_stats.json``.

Speed work must leave results unchanged: exactly for Sequential and the ideal schemes, within a
stated tolerance elsewhere. The stated tolerance here is **none**: every statistic of every case (phase and
kernel times, DRAM traffic per category, HBM, L2, link, DMA and tracker counts; all but the ``sim.*`` wall-clock
and event counts) must equal the committed value, because the model is deterministic and every speed change so
far was exact (``CHANGELOG.md``). A failure lists the statistics that moved.

A model change (a fidelity fix, a new mechanism) moves them on purpose: bump ``t3sim/model_version.py`` (the
file records the model version it was generated with, its top-level ``model_version``), regenerate the file with
``python -m tests.system.test_golden --write`` and say in the commit which values moved, by how much and why. A
moved statistic under an unchanged version fails with "statistics moved: bump t3sim/model_version.py and
regenerate"; a bumped version with the file not regenerated fails saying that.
The cases are small (each under a few seconds once numba's cache is warm): one point per scheme, explicit mode,
T3-MCA ending with its reduce-scatter, and the T3-MCA arbitration under schemes that are not T3's, on the shipped
systems. No case may need the re-run without the memory's lookahead (it would double the cost unseen).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import pytest

from t3sim import model_version
from t3sim.config import load_experiment
from tests.conftest import REPO

GOLDEN = Path(__file__).with_name("golden_stats.json")
#: the golden file's top-level key naming the model version it was generated with (every other key is a case)
VERSION_KEY = "model_version"
REGENERATE = "python -m tests.system.test_golden --write"
DEFAULT = "configs/experiments/default.yaml"
H200 = "configs/experiments/overlap-schemes-h200.yaml"
ONE = ("sweep.cases=[]", "sweep.grid={}")
#: a two-GPU sub-layer of a 256-wide model (tests/memory/test_lookahead.py's TINY)
TINY = ("workload.tokens=64", "workload.model.hidden_size=256", "workload.tp=2", "system.interconnect.num_gpus=2",
        "system.gpu.num_cus=4")
AG = ("workload.sublayer=FC-1", "workload.direction=ag_gemm")
MCA = ("system.memory_controller.arbitration.kind=t3_mca",)

#: case -> (experiment file, overrides)
CASES = {
    "fc2-tp8-256-sequential": (DEFAULT, ("workload.tokens=256",)),
    "fc2-tp8-256-t3": (DEFAULT, ("workload.tokens=256", "scheme.kind=t3")),
    "fc2-tp8-256-t3_mca": (DEFAULT, ("workload.tokens=256", "scheme.kind=t3_mca")),
    "fc2-tp8-256-ideal_gemm_rs_overlap": (DEFAULT, ("workload.tokens=256", "scheme.kind=ideal_gemm_rs_overlap")),
    "fc2-tp8-256-ideal_rs_nmc": (DEFAULT, ("workload.tokens=256", "scheme.kind=ideal_rs_nmc")),
    "tiny-op-sequential-mca": (DEFAULT, TINY + ("workload.sublayer=OP",) + MCA),
    "tiny-op-sequential-explicit": (DEFAULT, TINY + ("workload.sublayer=OP", "simulation.mode=explicit")),
    "tiny-op-t3-explicit": (DEFAULT, TINY + ("workload.sublayer=OP", "scheme.kind=t3", "simulation.mode=explicit")),
    "tiny-op-t3_mca-rs-only": (DEFAULT, TINY + ("workload.sublayer=OP", "scheme.kind=t3_mca",
                                                "workload.collective=reduce_scatter")),
    "tiny-op-chunked": (DEFAULT, TINY + ("workload.sublayer=OP", "scheme.kind=chunked")),
    "tiny-op-chunked_dma": (DEFAULT, TINY + ("workload.sublayer=OP", "scheme.kind=chunked_dma")),
    "tiny-op-concurrent": (DEFAULT, TINY + ("workload.sublayer=OP", "scheme.kind=concurrent")),
    "tiny-op-flux_rs": (DEFAULT, TINY + ("workload.sublayer=OP", "scheme.kind=flux_rs")),
    "tiny-ag-flux_ag": (DEFAULT, TINY + AG + ("scheme.kind=flux_ag",)),
    "tiny-ag-chunked_dma-mca": (DEFAULT, TINY + AG + ("scheme.kind=chunked_dma",) + MCA),
    "tiny-ag-ficco-1d": (DEFAULT, TINY + AG + ("scheme.kind=ficco", "scheme.ficco_schedule=hetero_fused_1d")),
    "tiny-ag-ficco-2d": (DEFAULT, TINY + AG + ("scheme.kind=ficco", "scheme.ficco_schedule=uniform_fused_2d")),
    "tiny-ag-ficco_char": (DEFAULT, TINY + AG + ("scheme.kind=ficco_char", "scheme.char_part=gemm",
                                                 "scheme.chunks=8")),
    "h200-op-copy-1k": ("configs/experiments/copy-contention.yaml",
                        ONE + ("workload.sublayer=OP", "workload.tokens=1024", "scheme.copy_streams=1",
                               "scheme.copy_size_MiB=4")),
    "mi210-gemv_ar": ("configs/experiments/fused-gemv.yaml", ONE + ("scheme.kind=gemv_ar",)),
    "mi210-fused_gemv_ar": ("configs/experiments/fused-gemv.yaml", ONE + ("scheme.kind=fused_gemv_ar",)),
    "mi210-emb_a2a": ("configs/experiments/fused-a2a.yaml",
                      ("sweep.grid={}", "workload.embedding_bag.global_batch=256",
                       "workload.embedding_bag.tables_per_gpu=4", "scheme.kind=emb_a2a")),
    "mi210-fused_emb_a2a": ("configs/experiments/fused-a2a.yaml",
                            ("sweep.grid={}", "workload.embedding_bag.global_batch=256",
                             "workload.embedding_bag.tables_per_gpu=4", "scheme.kind=fused_emb_a2a")),
    "mi210-gemm_a2a": ("configs/experiments/fused-gemm-a2a.yaml",
                       ONE + ("workload.gemm.name=moe-m2k", "workload.gemm.M=2048", "scheme.kind=gemm_a2a")),
    "mi210-fused_gemm_a2a": ("configs/experiments/fused-gemm-a2a.yaml",
                             ONE + ("workload.gemm.name=moe-m2k", "workload.gemm.M=2048",
                                    "scheme.kind=fused_gemm_a2a")),
}


def flat_stats(case: str, meta: Optional[dict] = None) -> dict:
    """Simulate ``case``; its statistics as ``{name: value}`` (``sim.*``, wall time and event counts, left out);
    ``meta``: filled with the run's meta."""
    from t3sim.system import simulate

    path, overrides = CASES[case]
    r = simulate(load_experiment(REPO / path, list(overrides)))
    if meta is not None:
        meta.update(r.meta)
    st = r.stats.to_dict()
    st.pop("sim", None)
    out = {}

    def walk(d, prefix):
        for k, v in d.items():
            if isinstance(v, dict) and "value" in v and "unit" in v:
                out[prefix + k] = v["value"]
            elif isinstance(v, dict):
                walk(v, prefix + k + ".")

    walk(st, "")
    return out


def _golden() -> dict:
    return json.loads(GOLDEN.read_text())


def _cases() -> dict:
    """The golden file's cases (its keys but the model version)."""
    return {k: v for k, v in _golden().items() if k != VERSION_KEY}


def _version_mismatch() -> Optional[str]:
    """Why the golden file does not belong to the current model version; None when it does."""
    have, now = _golden().get(VERSION_KEY, 0), model_version.MODEL_VERSION
    if have == now:
        return None
    return (f"t3sim/model_version.py is at version {now} but golden_stats.json was generated with version {have}: "
            f"the version was bumped and the file not regenerated; regenerate it ({REGENERATE})")


def test_every_scheme_has_a_golden_case():
    from t3sim.schemes.runtime import base

    kinds = set()
    for path, overrides in CASES.values():
        kinds.add(load_experiment(REPO / path, list(overrides)).scheme.kind)
    assert kinds == set(base.SCHEMES), set(base.SCHEMES) - kinds
    assert set(_cases()) == set(CASES)


def test_golden_file_records_the_current_model_version():
    why = _version_mismatch()
    assert why is None, why


@pytest.mark.parametrize("case", sorted(CASES))
def test_statistics_equal_the_golden_values(case):
    want = _cases()[case]
    meta = {}
    got = json.loads(json.dumps(flat_stats(case, meta)))  # the file's JSON round trip (tuples -> lists)
    # a run the memory's lookahead could not keep exact is simulated again at the reference cadence: same results,
    # twice the cost (all of flux-op's T3 points, until the hook removal at the RS's end kept to its tick)
    assert "memory_lookahead" not in meta, meta["memory_lookahead"]
    moved = {k: (want.get(k), got.get(k)) for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)}
    if moved:
        what = f"{len(moved)} of {len(want)} statistics moved (golden, now): " + \
            "; ".join(f"{k}: {_short(a)} -> {_short(b)}" for k, (a, b) in list(moved.items())[:25])
        why = _version_mismatch() or (f"statistics moved: bump t3sim/model_version.py and regenerate ({REGENERATE}) "
                                      "if the model changed on purpose (a speed change must leave them equal)")
        pytest.fail(f"{why}. {what}", pytrace=False)


def _short(v) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def main(argv) -> int:
    if argv[1:] != ["--write"]:
        print("usage: python -m tests.system.test_golden --write   (re-simulate every case, rewrite the file)",
              file=sys.stderr)
        return 2
    data = {}
    for case in sorted(CASES):
        data[case] = flat_stats(case)
        print(case, len(data[case]), "statistics", file=sys.stderr)
    # one statistic per line (lists kept on theirs), so a regenerated file's diff names what moved
    cases = [json.dumps(c) + ": {\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                                                   for k, v in sorted(data[c].items())) + "\n}" for c in sorted(data)]
    version = f"{json.dumps(VERSION_KEY)}: {model_version.MODEL_VERSION}"  # the model these statistics belong to
    GOLDEN.write_text("{\n" + ",\n".join([version] + cases) + "\n}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
