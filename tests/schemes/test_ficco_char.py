"""``ficco_char``: FiCCO's DIL/CIL characterization -- chunk GEMMs along M and K, the
all-gather alone (a2a steps by copy engines or RCCL, p2p shards), a GEMM shard beside one step; bounds,
bytes, modes, determinism, rejections."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.errors import InputError
from t3sim.schemes.runtime import scheme_for
from t3sim.schemes.runtime.program import Kernel, Program, run_program
from t3sim.system.model import SystemModel
from t3sim.workload.chunks import chunks
from tests.system.helpers import MEM64, exp


def _cfg(n, *extra, tokens=256):
    # FC-1's consumer GEMM of a 512-wide model: A is tokens x 512, C is tokens x 2048/n; 8 CUs
    return ("workload.sublayer=FC-1", f"workload.tokens={tokens}", "workload.model.hidden_size=512",
            "system.gpu.num_cus=8", "workload.direction=ag_gemm", f"workload.tp={n}",
            f"system.interconnect.num_gpus={n}", "scheme.kind=ficco_char", *extra)


def _run(n, *extra, tokens=256, mode="homogeneous"):
    m = SystemModel(exp(*_cfg(n, f"simulation.mode={mode}", *extra, tokens=tokens)))
    run = scheme_for("ficco_char").simulate(m)
    m.network.check_conserved()
    return m, run, m.stats()


def _us(s, what):
    return s.value(f"ficco_char.{what}_us")


def test_one_chunk_is_the_plain_gemm():
    """chunks = 1 is the workload's GEMM (row-major C) launched alone: the same ticks exactly."""
    m, run, s = _run(4, "scheme.chunks=1")
    plain = SystemModel(exp(*_cfg(4, "simulation.mode=homogeneous")))
    plain = SystemModel(plain.exp, kernel=dataclasses.replace(plain.kernel, c_layout="row_major"))
    p = Program()
    p.add("s", Kernel("gemm", "gemm", "gemm", plain.gemm))
    r = run_program(plain, p)
    assert run.end - run.start == r.end - r.start > 0
    assert _us(s, "comm") == 0 and s.value("ficco_char.gemms") == 1


@pytest.mark.parametrize("axis,count", [("M", 2), ("M", 8), ("M", 64), ("K", 2), ("K", 8), ("K", 64)])
def test_chunk_sums_and_c_reads(axis, count):
    """M chunks' rows sum to M (K each); K chunks' depths sum to K (M rows each) and every K chunk after the first
    reads the whole C before writing it (beta = 1)."""
    m, run, s = _run(2, f"scheme.chunks={count}", f"scheme.chunk_axis={axis}")
    k = m.kernel
    assert s.value("ficco_char.gemms") == count
    if axis == "M":
        assert s.value("ficco_char.gemm_rows_total") == k.M and s.value("ficco_char.gemm_K_total") == count * k.K
        assert s.value("ficco_char.gpu0.c_read_B") == 0
    else:
        assert s.value("ficco_char.gemm_K_total") == k.K and s.value("ficco_char.gemm_rows_total") == count * k.M
        assert s.value("ficco_char.gpu0.c_read_B") == (count - 1) * k.M * k.N * m.elem_B
    assert [r.name for r in run.records] == [f"gemm_c{i}" for i in range(count)]
    assert all(a.end == b.start for a, b in zip(run.records, run.records[1:]))  # back to back, one stream


@settings(max_examples=12, deadline=None)
@given(K=st.integers(1, 4096), tile_k=st.sampled_from([16, 32, 64]), count=st.integers(1, 80))
def test_k_chunks_partition_a_and_b(K, tile_k, count):
    """K chunks (workload.chunks): depths partition K; A and B blocks are contiguous, K-block-major, back to back."""
    k0 = SystemModel(exp(*_cfg(2))).kernel
    k = dataclasses.replace(k0, K=K, tile_k=tile_k)
    if count > max(-(-K // tile_k), K):
        return
    cs = chunks(k, count, "K")
    eb = 2 if k.dtype in ("fp16", "bf16") else 4
    assert sum(c.kernel.K for c in cs) == K and len(cs) == count
    a = b = 0
    for i, c in enumerate(cs):
        assert (c.a_offset_B, c.b_offset_B, c.c_offset_B) == (a, b, 0)
        assert c.accumulate == (i > 0) and c.kernel.M == k.M and c.kernel.N == k.N
        a += k.M * c.kernel.K * eb
        b += k.N * c.kernel.K * eb
    assert (a, b) == (k.M * K * eb, k.N * K * eb)


def test_gemm_dil_at_least_one():
    """On a GEMM that fills the GPU (32 tiles on 8 CUs), 8- and 64-way row or column chunks are never faster."""
    base = _us(_run(2, "scheme.chunks=1", tokens=1024)[2], "gemm")
    for axis in ("M", "K"):
        t8 = _us(_run(2, "scheme.chunks=8", f"scheme.chunk_axis={axis}", tokens=1024)[2], "gemm")
        t64 = _us(_run(2, "scheme.chunks=64", f"scheme.chunk_axis={axis}", tokens=1024)[2], "gemm")
        assert t64 >= t8 >= 0.99 * base > 0


COMM = [("dma", "a2a", 1), ("dma", "a2a", 4), ("rccl", "a2a", 1), ("rccl", "a2a", 4), ("dma", "p2p", 1)]


@pytest.mark.parametrize("comm,pattern,steps", COMM)
@pytest.mark.parametrize("mode", ["homogeneous", "explicit"])
def test_comm_moves_the_rest_of_a(comm, pattern, steps, mode):
    """The all-gather alone delivers (N-1)/N of A to every GPU, whole or in steps, by copy engines or RCCL."""
    m, run, s = _run(4, "scheme.char_part=comm", f"scheme.ficco_comm={comm}", f"scheme.char_comm_pattern={pattern}",
                     f"scheme.char_comm_steps={steps}", mode=mode)
    k, n = m.kernel, m.n
    want = (n - 1) * k.M * k.K * m.elem_B // n
    assert s.value("ficco_char.received_plan_B") == want
    for g in m.sim_gpus:
        if comm == "dma":
            assert m.context.push.received_B[g] == m.context.push.engines[g].peer_B == want
        else:
            assert s.value(f"gpu{g}.dram_traffic.ag.write_bytes") == want
    assert _us(s, "gemm") == 0 and _us(s, "comm") > 0
    if comm == "dma":  # the communication ends when the last GPU's last flag is set (its stream wait)
        assert max(r.end for r in run.records if r.kind == "wait") == max(r.end for r in run.records)


def test_homogeneous_matches_explicit():
    """On MEM64 (tests/system/helpers.py). Under the current defaults the comm part differs by -2.2 % (steps of the
    comm-only run: 15.698 vs 16.054 us; -0.2 % without the frontend latency): per-GPU placement, latency-bound."""
    for extra in (("scheme.char_part=comm", "scheme.char_comm_steps=4", *MEM64),
                  ("scheme.char_part=both", "scheme.chunks=4", "scheme.char_comm_steps=4", "scheme.char_pieces=first",
                   *MEM64)):
        h, e = _run(4, *extra)[2], _run(4, *extra, mode="explicit")[2]
        for part in ("gemm", "comm"):
            assert _us(h, part) == pytest.approx(_us(e, part), rel=0.02)


def test_steps_cost_more_than_whole():
    """Communication DIL: the same bytes in 4 steps take at least as long as at once; shard by shard (p2p) longer."""
    whole = _us(_run(4, "scheme.char_part=comm")[2], "comm")
    steps = _us(_run(4, "scheme.char_part=comm", "scheme.char_comm_steps=4")[2], "comm")
    p2p = _us(_run(4, "scheme.char_part=comm", "scheme.char_comm_pattern=p2p")[2], "comm")
    assert steps >= whole > 0 and p2p > whole


@pytest.mark.parametrize("comm,pattern,steps", [("dma", "a2a", 4), ("rccl", "a2a", 4), ("dma", "p2p", 1)])
@pytest.mark.parametrize("first", ["gemm", "comm"])
def test_beside_never_faster_than_alone(comm, pattern, steps, first):
    """CIL >= 1: one M/4 GEMM shard beside one step; neither part is faster than the same part alone (0.1 %)."""
    common = ("scheme.char_pieces=first",)
    g = ("scheme.chunks=4",)
    c = (f"scheme.ficco_comm={comm}", f"scheme.char_comm_pattern={pattern}", f"scheme.char_comm_steps={steps}")
    _m, run, both = _run(4, "scheme.char_part=both", f"scheme.launch_first={first}", *common, *g, *c, tokens=512)
    gemm_alone = _us(_run(4, "scheme.char_part=gemm", *common, *g, tokens=512)[2], "gemm")
    comm_alone = _us(_run(4, "scheme.char_part=comm", *common, *c, tokens=512)[2], "comm")
    # within 0.1 %: the memory controllers' scheduling of the mixed traffic can come out a hair better for the GEMM
    # (seen: a 1.4 ns = 0.01 % faster GEMM shard beside a p2p shard push); more is a bug
    assert _us(both, "gemm") >= 0.999 * gemm_alone > 0
    assert _us(both, "comm") >= 0.999 * comm_alone > 0
    starts = {r.start for r in run.records if r.kind != "wait"}
    assert starts == {run.start}  # launched together
    assert both.value("ficco_char.gemms") == 1 and both.value("ficco_char.gemm_rows_total") == _m.kernel.M // 4


def test_deterministic():
    a, b = (_run(2, "scheme.char_part=both", "scheme.chunks=2", "scheme.char_comm_steps=2", "scheme.char_pieces=first",
                 mode="explicit")[2] for _ in range(2))
    assert a.to_dict() == b.to_dict()


@pytest.mark.parametrize("extra,field", [
    (("scheme.ficco_comm=rccl",), "scheme.ficco_comm"),  # char_part=gemm runs no communication
    (("scheme.char_comm_steps=4",), "scheme.char_comm_steps"),
    (("scheme.launch_first=comm",), "scheme.launch_first"),  # only with both
    (("scheme.char_part=comm", "scheme.chunk_axis=K"), "scheme.chunk_axis"),  # comm runs no GEMM
    (("scheme.char_part=comm", "scheme.chunks=8"), "scheme.chunks"),
    (("scheme.chunk_axis=N",), "scheme.chunk_axis"),
    (("scheme.chunks=300",), "scheme.chunks"),  # more chunks than rows
    (("scheme.char_part=comm", "scheme.char_comm_pattern=p2p", "scheme.char_comm_steps=2"), "scheme.char_comm_steps"),
    (("scheme.char_part=comm", "scheme.char_comm_pattern=p2p", "scheme.ficco_comm=rccl"), "scheme.ficco_comm"),
    (("scheme.char_part=comm", "scheme.char_comm_steps=3"), "scheme.char_comm_steps"),  # 64-row shard
    (("simulation.functional_data=true", "simulation.mode=explicit"), "simulation.functional_data"),
    (("workload.direction=gemm_rs",), "workload.direction"),
    (("scheme.compute_streams=2",), "scheme.compute_streams"),  # not ficco_char's option
    (("scheme.char_part=comm", "workload.sublayer=OP"), "workload.sublayer"),  # A column-major
])
def test_bad_values_rejected(extra, field):
    from t3sim.exec.checks import check_experiment

    with pytest.raises(InputError) as e:
        cfg = exp(*_cfg(4, *extra))
        check_experiment(cfg)
        scheme_for("ficco_char").check_options(cfg.scheme)
        scheme_for("ficco_char").check_direction(cfg.workload)
        scheme_for("ficco_char").simulate(SystemModel(cfg))
    assert e.value.where == field
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("kind", ["chunked", "chunked_dma"])
def test_other_chunking_schemes_reject_k(kind):
    cfg = exp("scheme.kind=" + kind, "scheme.chunk_axis=K", "workload.tokens=256", "workload.model.hidden_size=512",
              "system.gpu.num_cus=8")
    with pytest.raises(InputError) as e:
        scheme_for(kind).simulate(SystemModel(cfg))
    assert e.value.where == "scheme.chunk_axis"


def test_shipped_config_is_generated():
    """configs/experiments/ficco-char.yaml is exactly what experiments/ficco/make_configs.py writes."""
    from tests.conftest import REPO, load_script

    mod = load_script("experiments/ficco/make_configs.py")
    assert (REPO / "configs/experiments/ficco-char.yaml").read_text() == mod.configs()["ficco-char.yaml"]


@pytest.mark.parametrize("axis,count", [("K", 4), ("M", 4)])
def test_chunk_gemms_run_windowed_with_the_reference_statistics(axis, count, monkeypatch):
    """The chunk GEMMs run back to back on one stream, so each takes the windowed GEMM, the K chunks
    with their accumulating stores (C += the tile); stats.json as with ``simulation.gemm_window: false``, but the
    simpy event count."""
    from t3sim.window import gemm_window

    seen = []
    orig = gemm_window.GemmWindow.__init__
    monkeypatch.setattr(gemm_window.GemmWindow, "__init__", lambda self, gk, *a: (seen.append(gk.name), orig(self, gk, *a))[1])
    extra = (f"scheme.chunks={count}", f"scheme.chunk_axis={axis}")
    ref = _run(2, *extra, "simulation.gemm_window=false", tokens=512)[2].to_dict()
    assert not seen
    win = _run(2, *extra, tokens=512)[2].to_dict()
    assert len(seen) >= 2  # (a chunk that starts with write-backs still in flight takes the reference path)
    ea, eb = ref["sim"].pop("events"), win["sim"].pop("events")
    assert eb["value"] < ea["value"]
    assert win == ref
    if axis == "K":
        assert win["ficco_char"]["gpu0"]["c_read_B"]["value"] > 0
