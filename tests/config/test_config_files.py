"""Every shipped config validates; composition, overrides and provenance work."""

from __future__ import annotations

import glob

import pytest

from t3sim.config import ExperimentConfig, SystemConfig, load_config, load_experiment, load_system
from t3sim.config.loader import load_raw

from tests.conftest import REPO

ALL_CONFIGS = sorted(glob.glob(str(REPO / "configs/**/*.yaml"), recursive=True))


def test_there_are_configs():
    names = {p.split("configs/")[1] for p in ALL_CONFIGS}
    for required in ["systems/t3-table1.yaml", "systems/t3-table1-2xcu.yaml", "systems/mi210-4gpu.yaml",
                     "systems/h200-4gpu.yaml", "systems/mi300x-8gpu.yaml", "systems/mi210-4gpu-fc.yaml", "models/mega-gpt-2.yaml", "models/t-nlg.yaml", "models/gpt-3.yaml",
                     "models/palm.yaml", "models/mt-nlg.yaml", "experiments/default.yaml"]:
        assert required in names


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.split("configs/")[1])
def test_config_validates(path):
    kind, model = load_config(path)
    assert kind in {"experiment", "system", "model", "gemm_library"}


def test_cli_check_all(run_cli):
    rc, out, err = run_cli("config", "check", *ALL_CONFIGS)
    assert rc == 0, err
    assert out.count("ok ") == len(ALL_CONFIGS)


def test_table1_values():
    """Paper Table 1 and the ref. [11] HBM2 timings."""
    s = load_system(REPO / "configs/systems/t3-table1.yaml")
    assert (s.gpu.num_cus, s.gpu.clock_GHz, s.gpu.max_threads_per_cu) == (80, 1.4, 2048)
    assert (s.gpu.lds_l1_size_KiB, s.gpu.register_file_size_KiB, s.gpu.l1_write_allocate) == (128, 256, False)
    assert (s.l2.size_MiB, s.l2.banks, s.l2.clock_GHz) == (16, 64, 1.4)
    assert s.hbm.peak_bandwidth_GBps == pytest.approx(1024.0)
    t = s.hbm.timing
    assert (s.hbm.banks_per_group * s.hbm.bank_groups, t.tCCD_S_nCK, t.tRRD_nCK, t.tRCD_nCK, t.tRAS_nCK, t.tRP_nCK,
            t.tRC_nCK, t.tCL_nCK, t.tWL_nCK, t.tWTR_nCK, t.tWR_nCK, s.hbm.bank_groups, t.tCCD_L_nCK, t.tRTP_nCK) == \
        (16, 1, 4, 14, 33, 14, 47, 14, 2, 3, 12, 4, 2, 4)
    assert t.tCCDWL_nCK == 2 * t.tCCD_L_nCK == 4
    ic = s.interconnect
    assert (ic.kind, ic.num_gpus, ic.link_latency_ns, ic.bidirectional) == ("ring", 8, 500, True)
    assert 2 * ic.link_bandwidth_GBps == 150  # "150 GB/s bi-directional"


def test_mi300x_preset_matches_its_sources():
    """FiCCO's MI300X platform: datasheet compute and HBM peaks, the whitepaper's aggregate L2
    read bandwidth, a full mesh of 48 GB/s (payload) links, and a GEMM kernel that fits one workgroup per CU."""
    from t3sim.compute.occupancy import occupancy

    s = load_system(REPO / "configs/systems/mi300x-8gpu.yaml")
    g = s.gpu
    assert g.num_cus * g.fp16_flops_per_cycle * g.clock_GHz / 1e3 == pytest.approx(1307.4, rel=1e-3)
    assert s.hbm.peak_bandwidth_GBps == pytest.approx(5325, rel=1e-3)  # footnote MI300-05A
    assert s.l2.banks * s.l2.bank_bandwidth_B_per_cycle * s.l2.clock_GHz / 1e3 == pytest.approx(34.4, rel=1e-3)
    ic = s.interconnect
    assert (ic.kind, ic.num_gpus, ic.links_per_gpu, ic.link_bandwidth_GBps) == ("direct", 8, 7, 48)
    gk = next(k for k in s.gemm_library.kernels if k.name.startswith("MT256x256"))
    occ = occupancy(g, wfs_per_wg=gk.wf_grid[0] * gk.wf_grid[1], registers_per_thread=gk.registers_per_thread,
                    lds_per_wg_B=(gk.tile_m + gk.tile_n) * gk.tile_k * 2 * gk.lds_stages)  # bf16
    assert occ.wgs_per_cu == 1 and occ.lds_carveout_B == 64 * 1024 and occ.l1_capacity_B == 32 * 1024


def test_mi210_fc_preset_matches_its_sources():
    """The fused computation-collective paper's Table I node: MI210 datasheet compute and HBM peaks, a full
    mesh of 3 links per GPU at the paper's 80 GB/s read as both directions, gfx90a's 8 waves per SIMD and VGPR
    granule (LLVM), and everything else as mi210-4gpu.yaml (the same GPU)."""
    s = load_system(REPO / "configs/systems/mi210-4gpu-fc.yaml")
    ring = load_system(REPO / "configs/systems/mi210-4gpu.yaml")
    g = s.gpu
    assert g.num_cus * g.fp16_flops_per_cycle * g.clock_GHz / 1e3 == pytest.approx(181.0, rel=2e-3)  # datasheet TFLOPS
    assert s.hbm.peak_bandwidth_GBps == pytest.approx(1638.4)  # datasheet 1.6 TB/s
    assert s.l2.size_MiB == 8
    assert g.max_threads_per_cu // g.threads_per_wf // 4 == 8  # LLVM getMaxWavesPerEU(gfx90a) = 8 waves per SIMD
    assert g.register_alloc_unit_per_wf == 8 * g.threads_per_wf  # LLVM getVGPRAllocGranule(gfx90a) = 8 per lane
    ic = s.interconnect
    assert (ic.kind, ic.num_gpus, ic.links_per_gpu, ic.bidirectional) == ("direct", 4, 3, True)
    assert 2 * ic.link_bandwidth_GBps == 80  # paper Table I: 80 GB/s per link, both directions
    assert ic.link_bandwidth_GBps <= 50  # below the CDNA2 x16 25 Gbps link's raw 50 GB/s per direction
    assert s.collective.algorithm == "direct"
    changed = {"max_threads_per_cu", "register_alloc_unit_per_wf", "max_registers_per_thread", "lds_carveouts"}
    for name in type(g).model_fields:
        if name not in changed:
            assert getattr(g, name) == getattr(ring.gpu, name), name
    assert s.hbm == ring.hbm and s.l2 == ring.l2 and s.memory_controller == ring.memory_controller


def test_2xcu_inherits_everything_but_cus():
    a = load_system(REPO / "configs/systems/t3-table1.yaml")
    b = load_system(REPO / "configs/systems/t3-table1-2xcu.yaml")
    assert b.gpu.num_cus == 2 * a.gpu.num_cus
    assert b.hbm == a.hbm and b.interconnect == a.interconnect and b.l2 == a.l2


def test_models_table2():
    rows = {
        "mega-gpt-2": (3072, 74, 1024, 16, [8, 16], 16384),
        "t-nlg": (4256, 78, 1024, 8, [8, 16], 8192),
        "gpt-3": (12288, 96, 1024, 2, [32], 2048),
        "palm": (18432, 118, 1024, 2, [32], 2048),
        "mt-nlg": (20480, 105, 1024, 2, [32], 2048),
    }
    for name, (h, l, sl, b, tps, tokens) in rows.items():
        _, m = load_config(REPO / f"configs/models/{name}.yaml")
        assert (m.hidden_size, m.layers, m.seq_len, m.batch, m.tp_degrees, m.tokens) == (h, l, sl, b, tps, tokens)


def test_overrides_apply_and_are_typed():
    e = load_experiment(REPO / "configs/experiments/default.yaml",
                        ["system.interconnect.num_gpus=16", "workload.tp=16", "system.l2.size_MiB=32"])
    assert e.system.interconnect.num_gpus == 16 and e.workload.tp == 16 and e.system.l2.size_MiB == 32.0
    assert isinstance(e, ExperimentConfig) and isinstance(e.system, SystemConfig)


def test_models_are_frozen():
    e = load_experiment(REPO / "configs/experiments/default.yaml")
    with pytest.raises(Exception):
        e.system.gpu.num_cus = 1  # type: ignore[misc]


def test_provenance_points_at_base_file_lines(tmp_path):
    (tmp_path / "base.yaml").write_text("gpu:\n  num_cus: 80\n")
    (tmp_path / "child.yaml").write_text("base: base.yaml\nl2:\n  banks: 32\n")
    data, prov = load_raw(tmp_path / "child.yaml")
    assert data == {"gpu": {"num_cus": 80}, "l2": {"banks": 32}}
    assert prov[("gpu", "num_cus")].endswith("base.yaml:2")
    assert prov[("l2", "banks")].endswith("child.yaml:3")


def test_nested_base_and_deep_merge(tmp_path):
    (tmp_path / "sys.yaml").write_text("hbm:\n  channels: 16\n  timing:\n    tCL_nCK: 10\n")
    (tmp_path / "exp.yaml").write_text(
        "name: x\nsystem:\n  base: sys.yaml\n  hbm:\n    timing:\n      tRCD_nCK: 9\n"
        f"workload:\n  model:\n    base: {REPO}/configs/models/t-nlg.yaml\n  tp: 8\n")
    e = load_experiment(tmp_path / "exp.yaml")
    assert e.system.hbm.channels == 16
    assert (e.system.hbm.timing.tCL_nCK, e.system.hbm.timing.tRCD_nCK) == (10, 9)
    assert e.workload.model.name == "t-nlg"
