"""The GEMM libraries against the measurements they come from (experiments/validation/gemm_kernels/).

* The committed library files are what ``library.py`` writes from the committed CSVs (nothing edited by hand).
* A sample of the H100 rows, simulated on ``h800-8gpu`` (the H100's silicon and its measured library) by
  ``compare.py``: each runs the kernel cuBLAS ran and lands within 30 % of the measured GPU time less the CUDA
  events' own time (the whole set: README.md).
* A sequence of row shards (``decomp.csv``) runs its shards back to back with the preset's launch gap.
"""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from tests.conftest import REPO, load_script

HERE = REPO / "experiments/validation/gemm_kernels"
LIB = REPO / "configs/systems/libraries"


def _module(name: str):
    return load_script(f"experiments/validation/gemm_kernels/{name}.py")


@pytest.mark.parametrize("gpu, out", [("H200", "cublas-h200-bf16.yaml"), ("H100", "cublas-h100-bf16.yaml")])
def test_committed_libraries_are_what_library_py_writes(tmp_path, gpu, out):
    target = tmp_path / out
    subprocess.run([sys.executable, str(HERE / "library.py"), "--csv", str(HERE / gpu.lower() / "gemm_kernels.csv"),
                    "--gpu", gpu, "--out", str(target)], check=True, capture_output=True)
    assert target.read_text() == (LIB / out).read_text()


#: (M, N, K) of measured H100 rows: small and medium GEMMs, split-K, wide N (not the unaligned shapes' fallback
#: kernels, whose narrow loads the model lacks: README.md)
SAMPLE = [(16, 1536, 3072), (64, 3072, 768), (256, 3072, 1536), (512, 3072, 3072), (64, 12288, 6144),
          (16, 3072, 3072), (1024, 12288, 1536)]


@pytest.mark.parametrize("shape", SAMPLE, ids=lambda s: "x".join(map(str, s)))
def test_h100_rows_run_the_measured_kernel_within_30_percent(shape):
    compare, library = _module("compare"), _module("library")
    rows = {(int(r["M"]), int(r["N"]), int(r["K"])): r for r in csv.DictReader(open(HERE / "h100/gemm_kernels.csv"))
            if r["layout"] == "nn" and r["set"] == "grid"}
    row = rows[shape]
    ev_us, _ = compare.events_us(HERE / "h100/gemm_kernels.csv", [], 0.0)  # launch.csv's events-alone row
    got = compare._one(("h800-8gpu", row, ev_us))
    assert got["simulated_kernel"].startswith(library.base_name(row["kernel"]))
    assert abs(got["error"]) <= 0.30, got
