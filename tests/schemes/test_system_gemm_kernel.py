"""Experiments on a system run the GEMM kernel its preset names, the one ``t3sim validate`` validated."""

from __future__ import annotations

from t3sim.config import load_experiment, load_system
from t3sim.system.model import SystemModel
from t3sim.system.kernels import gemm_kernel_record
from tests.conftest import REPO

H200 = REPO / "configs/systems/h200-4gpu.yaml"
FIELDS = ("tile_m", "tile_n", "tile_k", "tiles_m", "tiles_n", "num_wgs", "wfs_per_wg", "wf_grid", "threads_per_wf",
          "registers_per_thread", "lds_per_wg_B")


def test_h200_experiment_runs_the_validated_gemm_kernel(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text(f"""name: h200-check
system: {{base: {H200}}}
workload:
  model: {{base: models/mega-gpt-2.yaml}}
  sublayer: FC-2
  tp: 4
  dtype: bf16
""")
    exp = load_experiment(f, [])
    k = SystemModel(exp).kernel
    v = gemm_kernel_record(load_system(H200, []), k.M, k.N, k.K, k.dtype)
    assert {a: getattr(k, a) for a in FIELDS} == {a: getattr(v, a) for a in FIELDS}
    assert (k.tile_m, k.tile_n, k.tile_k, k.registers_per_thread) == (128, 256, 64, 240)  # cuBLAS sm90 128x256x64


def test_table1_system_keeps_the_workload_tile():
    exp = load_experiment(REPO / "configs/experiments/default.yaml", ["workload.tokens=256"])
    assert exp.system.gemm_kernel is None
    assert (SystemModel(exp).kernel.tile_m, SystemModel(exp).kernel.tile_n) == (128, 128)
