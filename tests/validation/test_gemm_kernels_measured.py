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


def test_the_events_own_time_comes_from_launch_csv_or_the_one_kernel_rows(tmp_path):
    """``compare.events_us``: the events-alone row of ``launch.csv`` where the data has one (1.216 us on the H100);
    otherwise the median ``gpu_us - kernel_us`` of the one-kernel rows less the preset's launch overhead."""
    compare = _module("compare")
    ev, how = compare.events_us(HERE / "h100/gemm_kernels.csv", [], 2818.0)
    assert ev == 1.216 and "launch.csv" in how
    rows = [{"n_kernels": "1", "gpu_us": str(g), "kernel_us": "10"} for g in (12.0, 13.0, 19.0)]
    rows.append({"n_kernels": "2", "gpu_us": "99", "kernel_us": "10"})  # a split-K call: not a one-kernel row
    ev, how = compare.events_us(tmp_path / "gemm_kernels.csv", rows, 2000.0)
    assert ev == pytest.approx(3.0 - 2.0) and "3 one-kernel rows" in how


def test_a_decomp_row_runs_its_shards_back_to_back():
    """A ``decomp.csv`` row of 8 row shards is simulated as 8 GEMMs of M/8 rows on one stream and set beside its
    ``gpu_us`` less the events' own time."""
    compare = _module("compare")
    row = {"M": "1024", "N": "3072", "K": "3072", "form": "rows8", "pieces": "8", "gpu_us": "70.0",
           "kernels": "nvjet_sm90_tst_64x64_64x13_4x2_h_bz_NNT"}
    got = compare._one(("h800-8gpu", row, 1.0))
    assert got["set"] == "rows8" and got["pieces"] == 8 and got["measured_us"] == 69.0
    assert got["simulated_kernel"].startswith("nvjet_sm90_tst_64x64_64x13")  # the 128-row shard's kernel
    assert got["error"] == pytest.approx(got["sim_us"] / 69.0 - 1, abs=1e-4)
