"""Experiments on a system run the GEMM kernel its library picks for their shape, the one ``t3sim validate`` times
for the same shape; a system without library kernels runs the workload's own tile."""

from __future__ import annotations

from t3sim.config import load_experiment, load_system
from t3sim.system.model import SystemModel
from t3sim.system.kernels import gemm_kernel_record
from tests.conftest import LARGE, REPO

H200 = REPO / "configs/systems/h200-4gpu.yaml"
FIELDS = ("tile_m", "tile_n", "tile_k", "tiles_m", "tiles_n", "num_wgs", "wfs_per_wg", "wf_grid", "threads_per_wf",
          "registers_per_thread", "lds_per_wg_B", "cluster_m", "cluster_n", "kernel", "split_k", "mma_rate")


def _exp(tmp_path, tokens):
    f = tmp_path / "e.yaml"
    f.write_text(f"""name: h200-check
system: {{base: {H200}}}
workload:
  model: {{base: models/mega-gpt-2.yaml}}
  sublayer: FC-2
  tp: 4
  tokens: {tokens}
  dtype: bf16
""")
    return load_experiment(f, [])


def test_h200_experiment_runs_the_kernel_its_library_picks(tmp_path):
    """Mega-GPT-2 FC-2 at TP=4 (M x 3072 x 3072): cuBLAS ran the 256x128 coopA kernel at M = 16384 and a
    64x32 split-less kernel at M = 64 (experiments/validation/gemm_kernels/h200/gemm_kernels.csv)."""
    for tokens, name, tile in ((16384, LARGE, (128, 256, 64, 252)), (64, "nvjet_sm90_tst_64x32_64x16_4x2_h_bz",
                                                                    (32, 64, 64, 252))):
        exp = _exp(tmp_path, tokens)
        k = SystemModel(exp).kernel
        v = gemm_kernel_record(load_system(H200, []), k.M, k.N, k.K, k.dtype)
        assert {a: getattr(k, a) for a in FIELDS} == {a: getattr(v, a) for a in FIELDS}
        assert k.kernel == name
        assert (k.tile_m, k.tile_n, k.tile_k, k.registers_per_thread) == tile


def test_table1_system_keeps_the_workload_tile():
    exp = load_experiment(REPO / "configs/experiments/default.yaml", ["workload.tokens=256"])
    assert exp.system.gemm_library.kernels == []
    k = SystemModel(exp).kernel
    assert (k.tile_m, k.tile_n, k.kernel) == (128, 128, "")
