"""Shipped traces regenerate byte for byte and match the paper's GEMM shapes."""

from __future__ import annotations

import filecmp
from pathlib import Path

from t3sim.config import load_config
from t3sim.config.gpu import GPUConfig
from t3sim.workload import load_trace, num_stages, occupancy, trace_path
from t3sim.workload.generate import SUBLAYERS
from tests.conftest import REPO

TRACES = REPO / "traces"


def _shipped(root: Path):
    return sorted(p.relative_to(root) for p in root.rglob("*.jsonl"))


def test_gen_all_reproduces_shipped_traces(tmp_path, run_cli):
    rc, out, err = run_cli("trace", "gen", "--all", "--out", str(tmp_path))
    assert rc == 0, err
    shipped, regenerated = _shipped(TRACES), _shipped(tmp_path)
    assert shipped == regenerated
    for rel in shipped:
        assert (TRACES / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


def test_single_sublayer_gen_matches_shipped(tmp_path, run_cli):
    rc, out, _ = run_cli("trace", "gen", "--model", "t-nlg", "--tp", "8", "--sublayer", "FC-2", "--out", str(tmp_path))
    assert rc == 0
    assert _shipped(tmp_path) == [Path("t-nlg/tp8/FC-2.jsonl")]
    assert filecmp.cmp(tmp_path / "t-nlg/tp8/FC-2.jsonl", TRACES / "t-nlg/tp8/FC-2.jsonl", shallow=False)


def test_model_by_yaml_path(tmp_path, run_cli):
    rc, _, err = run_cli("trace", "gen", "--model", "configs/models/mega-gpt-2.yaml", "--tp", "16", "--out", str(tmp_path))
    assert rc == 0, err
    assert _shipped(tmp_path) == sorted(Path(f"mega-gpt-2/tp16/{s}.jsonl") for s in SUBLAYERS)


def test_every_table2_model_and_tp_is_shipped():
    for yml in sorted((REPO / "configs/models").glob("*.yaml")):
        _, model = load_config(yml)
        for tp in model.tp_degrees:
            for s in SUBLAYERS:
                k = load_trace(trace_path(TRACES, model.name, tp, s)).kernels[0]
                f = {"OP": 1, "FC-2": 4, "FC-1": 4, "IP": 3}[s]
                assert (k.M, k.N, k.K) == (model.tokens, model.hidden_size, model.hidden_size * f // tp)
                assert k.pass_ == ("fwd" if s in ("OP", "FC-2") else "bwd")
                assert k.trans_a == k.trans_b == (k.pass_ == "fwd")
                assert k.role == "producer" and k.collective == "all-reduce"


def test_stage_counts_on_table1_gpu():
    gpu = GPUConfig()
    k = load_trace(TRACES / "t-nlg/tp8/FC-2.jsonl").kernels[0]
    occ = occupancy(k, gpu)
    assert (occ.wgs_per_cu, occ.limiter) == (2, "registers")
    assert (k.tiles_m, k.tiles_n, k.num_wgs) == (64, 34, 2176)
    assert num_stages(k, occ.stage_wgs(gpu.num_cus)) == 14
    k = load_trace(TRACES / "mega-gpt-2/tp16/OP.jsonl").kernels[0]
    assert (k.M, k.N, k.K, k.num_wgs) == (16384, 3072, 192, 3072)
    assert num_stages(k, 160) == 20


def test_check_prints_one_summary_line_per_file(run_cli):
    files = ["traces/t-nlg/tp8/FC-2.jsonl", "traces/gpt-3/tp32/IP.jsonl"]
    rc, out, err = run_cli("trace", "check", *files)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 2
    assert "M=8192 N=4256 K=2128" in lines[0] and "2176 WGs" in lines[0] and "14 stages" in lines[0]


def test_check_with_2x_cu_system(run_cli):
    rc, out, _ = run_cli("trace", "check", "traces/t-nlg/tp8/FC-2.jsonl", "--system", "configs/systems/t3-table1-2xcu.yaml")
    assert rc == 0 and "160 CUs -> 7 stages" in out


def test_workload_kernel_matches_shipped_trace(tmp_path):
    from t3sim.config import load_experiment
    from t3sim.workload.generate import workload_kernel

    exp = load_experiment(REPO / "configs/experiments/default.yaml")
    w = exp.workload
    k = workload_kernel(w)
    assert k == load_trace(trace_path(TRACES, w.model.name, w.tp, w.sublayer)).kernels[0]
    exp2 = load_experiment(REPO / "configs/experiments/default.yaml",
                           [f"workload.trace={TRACES / 'mega-gpt-2/tp16/OP.jsonl'}"])
    assert workload_kernel(exp2.workload).name == "mega-gpt-2.tp16.OP.fwd"


def test_model_from_experiment_file(tmp_path, run_cli):
    exp = tmp_path / "e.yaml"
    exp.write_text(f"base: {REPO / 'configs/experiments/default.yaml'}\nworkload:\n  tokens: 1000\n")
    rc, _, err = run_cli("trace", "gen", "--model", str(exp), "--tp", "8", "--sublayer", "OP", "--out", str(tmp_path / "o"))
    assert rc == 0, err
    k = load_trace(tmp_path / "o/t-nlg/tp8/OP.jsonl").kernels[0]
    assert (k.M, k.N, k.K, k.tiles_m) == (1000, 4256, 532, 8)  # 1000 = 7 x 128 + 104: partial last tile row
