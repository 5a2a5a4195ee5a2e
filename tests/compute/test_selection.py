"""The GEMM library's selection (t3sim/compute/selection.py): measured choices reproduced, the rule between measured
shapes, alignment fallbacks, fused epilogues without split-K, the fastest estimate, clear errors, and every GEMM of
every scheme getting its kernel from the one selection."""

from __future__ import annotations

import csv

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import t3sim.compute.gemm_kernel as gemm_kernel_mod
from t3sim.compute.selection import Shape, admits, check_selected, estimate_ns, retile, select
from t3sim.config import load_experiment, load_system
from t3sim.errors import InputError
from t3sim.system.kernels import gemm_kernel_record
from tests.conftest import REPO, load_script

DATA = REPO / "experiments/validation/gemm_kernels"
PRESETS = {"h200": "h200-4gpu", "h100": "h800-8gpu"}


@pytest.fixture(scope="module", params=sorted(PRESETS))
def measured(request):
    """(system, measured rows) of one GPU's measured cuBLAS choices."""
    s = load_system(REPO / f"configs/systems/{PRESETS[request.param]}.yaml")
    rows = [r for r in csv.DictReader(open(DATA / request.param / "gemm_kernels.csv"))
            if r["layout"] == "nn" and r["set"] in ("grid", "ksweep", "align")]
    return s, rows


def _base(name: str) -> str:
    """The library name of a measured kernel (layout suffix and C++ wrapper dropped, as library.py names them)."""
    return load_script("experiments/validation/gemm_kernels/library.py").base_name(name)


def test_measured_selection_reproduces_every_measured_choice(measured):
    s, rows = measured
    assert len(rows) > 200
    for r in rows:
        k = select(s, int(r["M"]), int(r["N"]), int(r["K"]), "bf16")
        assert k.name.split("_s")[0] == _base(r["kernel"]).split("_s")[0] or k.name.startswith(_base(r["kernel"])), r


def test_between_measured_shapes_the_nearest_one_in_log_space_decides():
    """Between the measured M = 64 and 128 (N = K = 3072) the geometric mean, 90.5, divides their kernels: M = 90
    takes 64's, M = 91 128's. N, K off the grid by a little keep M's choice."""
    s = load_system(REPO / "configs/systems/h200-4gpu.yaml")
    at = {m: select(s, m, 3072, 3072, "bf16").name for m in (64, 90, 91, 128)}
    assert at[90] == at[64] and at[91] == at[128] != at[64]
    assert select(s, 128, 3080, 3064, "bf16").name == at[128]


def test_unaligned_shapes_fall_back_to_a_kernel_of_their_alignment():
    """TMA needs 16-byte strides: an odd K runs a 2-byte-aligned (align1) kernel, K = 532 (8-byte rows) an align2
    one, as measured (T-NLG's OP at TP = 8)."""
    s = load_system(REPO / "configs/systems/h200-4gpu.yaml")
    assert select(s, 4096, 3072, 4095, "bf16").operand_alignment_B == 2
    k = select(s, 1024, 4256, 532, "bf16")
    assert k.operand_alignment_B == 4 and k.mma_rate <= 1
    assert select(s, 4096, 3072, 4096, "bf16").operand_alignment_B == 16
    assert Shape(1, 4256, 532, "bf16").alignment_B == 8 and Shape(1, 3072, 4095, "bf16").alignment_B == 2


def test_fused_epilogue_takes_no_split_k():
    s = load_system(REPO / "configs/systems/h200-4gpu.yaml")
    assert select(s, 16, 1536, 3072, "bf16").split_k > 1  # cuBLAS splits K at M = 16
    assert select(s, 16, 1536, 3072, "bf16", fused_epilogue=True).split_k == 1


def test_no_kernel_for_a_shape_is_a_clear_error():
    s = load_system(REPO / "configs/systems/h200-4gpu.yaml")
    lib = s.gemm_library
    only16 = [k for k in lib.kernels if k.operand_alignment_B == 16]
    s2 = s.model_copy(update={"gemm_library": lib.model_copy(update={"kernels": only16, "selection": "first_fit",
                                                                      "choices": []})})
    with pytest.raises(InputError) as e:
        select(s2, 1024, 3072, 4095, "bf16")
    assert "system.gemm_library.kernels" in str(e.value) and "2-byte aligned" in str(e.value)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40000), st.integers(1, 20000), st.integers(1, 20000))
def test_fastest_is_the_least_estimate_among_the_most_aligned_admitting_kernels(M, N, K):
    s = load_system(REPO / "configs/systems/a100-sxm4-8gpu.yaml")
    k = select(s, M, N, K, "bf16")
    sh = Shape(M, N, K, "bf16")
    ok = [c for c in s.gemm_library.kernels if admits(c, sh)]
    best = [c for c in ok if c.operand_alignment_B == max(c.operand_alignment_B for c in ok)]
    assert k in best
    assert estimate_ns(k, sh, s.gpu, s.hbm, s.l2) == min(estimate_ns(c, sh, s.gpu, s.hbm, s.l2) for c in best)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40000), st.sampled_from([1536, 3072, 4256, 12288, 3071]), st.sampled_from([384, 532, 3072, 4095]),
       st.booleans())
def test_retile_is_idempotent_and_check_selected_holds_it(M, N, K, fused):
    s = load_system(REPO / "configs/systems/h200-4gpu.yaml")
    rec = gemm_kernel_record(s, M, N, K, "bf16")
    again = retile(rec, s, fused_epilogue=fused)
    assert retile(again, s, fused_epilogue=fused) is again
    check_selected(again, s, fused_epilogue=fused)
    import dataclasses
    with pytest.raises(RuntimeError, match="did not pick"):
        check_selected(dataclasses.replace(again, tile_m=again.tile_m * 2), s, fused_epilogue=fused)


@pytest.mark.parametrize("value, fragment", [
    ("{kernels: [{name: a}, {name: a}]}", "more than once"),
    ("{kernels: [{name: a}], selection: measured, choices: [[1, 2, 3, b]]}", "not in gemm_library.kernels"),
    ("{kernels: [{name: a}], selection: measured}", "needs gemm_library.choices"),
    ("{kernels: [{name: a}], selection: nearest}", "unknown gemm_selection kind"),
    ("{kernels: [{name: a, operand_alignment_B: 0}]}", "operand_alignment_B"),
])
def test_bad_libraries_are_refused_naming_the_field(value, fragment):
    with pytest.raises(InputError) as e:
        load_experiment(REPO / "configs/experiments/default.yaml", [f"system.gemm_library={value}"])
    assert fragment in str(e.value) and "gemm_library" in str(e.value)


#: a two-kernel library where the measured choice gives chunks of at most 128 rows the small kernel
LIB = ("system.gemm_library={name: two, selection: measured, "
       "kernels: [{name: big, tile_m: 128, tile_n: 128, tile_k: 32}, {name: small, tile_m: 64, tile_n: 64, tile_k: 32},"
       " {name: split, tile_m: 64, tile_n: 64, tile_k: 32, split_k: 2}], "
       "choices: [[256, 512, 256, big], [128, 512, 256, small], [32, 512, 256, split], [1024, 1024, 512, big]]}")
TINY = ("workload.sublayer=OP", "workload.tokens=256", "workload.model.hidden_size=512", "workload.tp=2",
        "system.interconnect.num_gpus=2", "system.gpu.num_cus=8", LIB)
CASES = {
    "sequential": (),
    "chunked": ("scheme.kind=chunked", "scheme.chunks=2"),
    "chunked_dma": ("scheme.kind=chunked_dma", "scheme.chunks=4"),
    "t3": ("scheme.kind=t3",),
    "flux_rs": ("scheme.kind=flux_rs",),
    "flux_ag": ("workload.direction=ag_gemm", "workload.sublayer=FC-1", "scheme.kind=flux_ag"),
    "chunked_dma_ag": ("workload.direction=ag_gemm", "workload.sublayer=FC-1", "scheme.kind=chunked_dma", "scheme.chunks=4"),
    "ficco": ("workload.direction=ag_gemm", "workload.sublayer=FC-1", "scheme.kind=ficco"),
    "ficco_char": ("workload.direction=ag_gemm", "workload.sublayer=FC-1", "scheme.kind=ficco_char", "scheme.char_part=both", "scheme.chunks=4",
                   "scheme.char_comm_steps=4"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_gemm_of_every_scheme_gets_its_kernel_from_the_selection(case, monkeypatch):
    """Every GemmKernel a scheme launches runs the kernel :func:`retile` picks for its own shape and the scheme's
    flags: a chunk of 128 rows the small kernel, the whole GEMM the big one (a scheme that built a kernel record any
    other way, e.g. by cutting the whole GEMM's record, would run the big tile on its chunks and fail here)."""
    from t3sim.exec.dispatch import simulate
    from t3sim.schemes.runtime.base import scheme_for

    exp = load_experiment(REPO / "configs/experiments/default.yaml", list(TINY + CASES[case]))
    seen = []
    orig = gemm_kernel_mod.GemmKernel.__init__

    def spy(self, engine, name, hier, gpu, kernel, *a, **kw):
        seen.append(kernel)
        orig(self, engine, name, hier, gpu, kernel, *a, **kw)

    monkeypatch.setattr(gemm_kernel_mod.GemmKernel, "__init__", spy)
    simulate(exp)
    sc = scheme_for(exp.scheme.kind)
    assert seen
    for k in seen:
        want = retile(k, exp.system, fused_epilogue=sc.fused_epilogue, autotune=sc.autotune)
        assert (k.kernel, k.tile_m, k.tile_n, k.split_k) == (want.kernel, want.tile_m, want.tile_n, want.split_k), k
    assert {k.kernel for k in seen} <= {"big", "small", "split"}
