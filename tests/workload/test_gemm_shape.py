"""``workload.gemm``: a GEMM given by its whole-operator shape (FiCCO Table I), and the
``a2a_gemm`` direction (expert parallelism: the all-to-all that feeds an expert GEMM)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from t3sim.config import load_experiment
from t3sim.config.workload import GemmShapeConfig
from t3sim.schemes.runtime import scheme_for
from t3sim.system.model import SystemModel
from t3sim.workload.generate import shape_kernel, workload_kernel
from t3sim.workload.trace import Trace, dumps_trace, parse_trace

from tests.conftest import REPO

BASE = """\
name: shape
system:
  base: systems/h200-4gpu.yaml
  gpu: {{num_cus: 8}}
  collective: {{protocol: steps, cus: 4}}
workload:
  gemm: {{name: gx, M: {M}, N: {N}, K: {K}}}
  direction: {direction}
  tp: 4
  dtype: bf16
scheme: {{kind: sequential}}
"""


def _exp(tmp_path, M=1024, N=1024, K=256, direction="ag_gemm", extra=()):
    p = tmp_path / "e.yaml"
    p.write_text(BASE.format(M=M, N=N, K=K, direction=direction))
    return load_experiment(p, list(extra))


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 64), n=st.integers(1, 64), k=st.integers(1, 4096), tp=st.sampled_from([1, 2, 4, 8]),
       a2a=st.booleans())
def test_each_gpu_runs_one_tp_th_of_the_operator(m, n, k, tp, a2a):
    g = GemmShapeConfig(name="g", M=m * tp * tp * 16, N=n * tp * 16, K=k)
    kr = shape_kernel(g, tp, "a2a_gemm" if a2a else "ag_gemm")
    assert 2 * kr.M * kr.N * kr.K * tp == 2 * g.M * g.N * g.K  # each GPU: 1/tp of the FLOPs
    assert (kr.M, kr.N) == ((g.M // tp, g.N) if a2a else (g.M, g.N // tp))
    assert kr.K == g.K and kr.trans_a  # A row-major: a block of its rows is one copy
    assert kr.num_wgs == kr.tiles_m * kr.tiles_n
    assert parse_trace(dumps_trace(Trace((kr,))), "t").kernels == (kr,)  # a valid trace record


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 4096), n=st.integers(1, 64), k=st.integers(1, 64), tp=st.sampled_from([1, 2, 4, 8]))
def test_gemm_rs_splits_the_reduction_depth(m, n, k, tp):
    """gemm_rs: every GPU multiplies all M rows by its K/tp slice (a row-parallel layer, FLUX's (n, k) shapes),
    its M x N partial output the producer of the reduction, column-major as a model sub-layer's."""
    g = GemmShapeConfig(name="g", M=m, N=n * 16, K=k * tp * 16)
    kr = shape_kernel(g, tp, "gemm_rs")
    assert (kr.M, kr.N, kr.K) == (g.M, g.N, g.K // tp)
    assert 2 * kr.M * kr.N * kr.K * tp == 2 * g.M * g.N * g.K
    assert (kr.role, kr.c_layout) == ("producer", "col_major")


def test_gemm_rs_shape_matches_the_sub_layer_it_names(tmp_path):
    """A model sub-layer and the workload.gemm of its whole-operator shape run the same per-GPU GEMM."""
    sub = load_experiment(REPO / "configs/experiments/default.yaml", ["workload.tokens=256"])
    k_sub = workload_kernel(sub.workload)
    e = _exp(tmp_path, M=256, N=k_sub.N, K=k_sub.K * 4, direction="gemm_rs")
    k = workload_kernel(e.workload)
    assert (k.M, k.N, k.K, k.c_layout, k.trans_a) == (k_sub.M, k_sub.N, k_sub.K, k_sub.c_layout, k_sub.trans_a)


def test_workload_kernel_follows_the_shape(tmp_path):
    e = _exp(tmp_path, M=2048, N=4096, K=512)
    k = workload_kernel(e.workload)
    assert (k.M, k.N, k.K, k.model) == (2048, 1024, 512, "gx")
    assert e.workload.name == "gx" and e.workload.num_tokens == 2048


@pytest.mark.parametrize("setting, match", [
    (("workload.sublayer=OP",), "sublayer with workload.gemm"),
    (("workload.tokens=64",), "tokens with workload.gemm"),
    (("workload.direction=gemm_rs", "workload.gemm.K=258"), "gemm.K=258 / scale_K=1 with tp=4"),
    (("workload.gemm.N=1026",), "gemm.N=1026 with tp=4"),
    (("workload.direction=a2a_gemm", "workload.gemm.M=1000"), "gemm.M=1000 / scale_M=1 with tp=4"),
    (("workload.gemm.scale_K=3",), "scale_K=3 does not divide gemm.K=256"),
])
def test_bad_shapes_are_rejected(tmp_path, setting, match):
    with pytest.raises(Exception, match=match):
        _exp(tmp_path, extra=setting)


def test_scales_shrink_the_simulated_gemm_only(tmp_path):
    e = _exp(tmp_path, M=2048, N=4096, K=512, extra=("workload.gemm.scale_M=4", "workload.gemm.scale_K=2"))
    k = workload_kernel(e.workload)
    assert (k.M, k.N, k.K) == (512, 1024, 256)
    assert (e.workload.gemm.M, e.workload.gemm.K) == (2048, 512)  # the operator's shape stays as given


def test_model_and_gemm_are_exclusive(tmp_path):
    with pytest.raises(Exception, match="exactly one of workload.model"):
        _exp(tmp_path, extra=("workload.model.name=x", "workload.model.hidden_size=64", "workload.model.layers=1",
                              "workload.model.seq_len=64", "workload.model.batch=1", "workload.model.tp_degrees=[4]"))
    with pytest.raises(Exception, match="a2a_gemm only with workload.gemm"):
        load_experiment(REPO / "configs/experiments/default.yaml", ["workload.direction=a2a_gemm"])


def _run(e):
    m = SystemModel(e)
    ph = scheme_for("sequential").run(m)
    return m, ph


def test_a2a_moves_one_tp_th_of_the_all_gather_and_the_same_flops(tmp_path):
    """Sequential, 4 GPUs: the all-gather feeds M x N/4 x K per GPU, receiving 3/4 of A (M x K); the
    all-to-all feeds M/4 x N x K per GPU, receiving 3/4 of its M/4 rows: 1/4 of the bytes, same FLOPs."""
    m_ag, ag = _run(_exp(tmp_path, M=1024, N=1024, K=256))
    m_a2a, a2a = _run(_exp(tmp_path, M=1024, N=1024, K=256, direction="a2a_gemm"))
    sent = lambda m: sum(m.network.bytes_injected.values())  # noqa: E731
    assert sent(m_ag) > 0 and sent(m_a2a) > 0
    assert sent(m_a2a) * 4 == pytest.approx(sent(m_ag), rel=0.02)
    assert ag.gemm > 0 and a2a.gemm == pytest.approx(ag.gemm, rel=0.25)
    assert a2a.ag < ag.ag


def test_nccl_protocol_rejects_an_all_to_all(tmp_path):
    from t3sim.errors import InputError
    e = _exp(tmp_path, direction="a2a_gemm", extra=("system.collective.protocol=nccl_simple",))
    with pytest.raises(InputError, match="system.collective.protocol"):
        _run(e)
