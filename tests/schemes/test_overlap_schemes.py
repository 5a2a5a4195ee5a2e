"""``concurrent`` and ``chunked``: bounds against the kernels alone, conservation, decomposition."""

from __future__ import annotations

import numpy as np
import pytest

from t3sim.collectives.runner import plan_for_system
from t3sim.collectives.verify import verify
from t3sim.errors import InputError
from t3sim.schemes.runtime import scheme_for
from t3sim.schemes.baseline.chunked import chunked_program
from t3sim.schemes.baseline.concurrent import concurrent_program
from t3sim.schemes.runtime.program import Kernel, Program, run_program
from t3sim.schemes.baseline.sequential import sequential_program
from t3sim.system.model import SystemModel
from t3sim.system.core import simulate
from t3sim.workload.chunks import chunks
from tests.system.helpers import exp

# T-NLG OP at TP=4 on 8 CUs, 512 tokens (4 x 34 tiles): a few seconds a run
SMALL = ("workload.sublayer=OP", "workload.tokens=512", "workload.tp=4", "system.interconnect.num_gpus=4",
         "system.gpu.num_cus=8")


def _run(build, *extra):
    m = SystemModel(exp(*SMALL, *extra))
    run = run_program(m, build(m))
    m.network.check_conserved()
    return m, run


def _alone(kind: str):
    """One kernel alone on a fresh model: the GEMM, or an RS of an independent array (cold, as concurrent's)."""
    def build(m):
        p = Program()
        if kind == "gemm":
            p.add("s", Kernel("gemm", "gemm", "gemm", m.gemm))
        else:
            b = m.alloc(m.c_elems * m.elem_B)
            p.add("s", Kernel("rs", "collective", "rs", lambda: m.collective("reduce_scatter", base_B=b,
                                                                           elems=m.c_elems).done, comm=True))
        return p
    return _run(build)[1]


@pytest.fixture(scope="module")
def alone():
    g, r = _alone("gemm"), _alone("rs")
    return g.end - g.start, r.end - r.start


@pytest.mark.parametrize("first", ["gemm", "comm"])
def test_concurrent_bounds(alone, first):
    """Never faster than the longer kernel alone; never slower than both in sequence plus a launch.

    The lower bound holds to 0.1 %: a cycle-level memory system is not monotone -- another stream's requests
    change row-buffer and queue states, and measured here the GEMM beside the RS once ended 0.01 % earlier
    than alone (a scheduling anomaly, not a missing cost)."""
    gemm, rs = alone
    m, run = _run(lambda m: concurrent_program(m, with_ag=False), "scheme.kind=concurrent",
                  f"scheme.launch_first={first}")
    span = run.end - run.start
    launch = int(m.system.gpu.kernel_launch_overhead_ns * 1000)
    assert span >= max(gemm, rs) * 0.999
    assert span <= gemm + rs + launch
    recs = {r.name: r for r in run.records}
    assert recs["gemm"].start == recs["rs"].start == run.start  # both launched at once
    # the two really overlapped: each ran while the other was running
    assert recs["rs"].start < recs["gemm"].end and recs["gemm"].start < recs["rs"].end


def test_launch_order_decides_who_gets_the_cus(alone):
    """The dispatcher serves kernels in launch order: the RS ends earlier when it is launched first, and the GEMM
    ends no later (to 0.1 %: memory interference is not monotone) when it is (t3sim.compute.dispatcher)."""
    runs = {f: _run(lambda m: concurrent_program(m, with_ag=False), "scheme.kind=concurrent",
                    f"scheme.launch_first={f}")[1] for f in ("gemm", "comm")}
    end = {f: {r.name: r.end for r in run.records} for f, run in runs.items()}
    assert end["gemm"]["gemm"] <= end["comm"]["gemm"] * 1.001
    assert end["comm"]["rs"] < end["gemm"]["rs"]


def test_chunks_partition_the_output_and_each_chunk_rs_is_exact():
    """Chunk tiles partition C's tiles (every output element in exactly one chunk), and every chunk's RS plan
    reduces every element of its chunk exactly once (symbolic contribution-count check)."""
    e = exp(*SMALL)
    m = SystemModel(e)
    k = m.kernel
    for axis in ("M", "N"):
        tiles = k.tiles_m if axis == "M" else k.tiles_n
        for count in (1, 2, 3, 4, 6, 8):  # 4 tile rows, 34 tile columns; 6 and 8 rows: sub-tile chunks
            parts = chunks(k, count, axis)
            assert sum(c.c_elems for c in parts) == k.M * k.N
            if count <= tiles:
                assert sum(c.kernel.num_wgs for c in parts) == k.num_wgs
            else:  # a partial tile row each (FLUX Sec. 6: Transformer Engine splitting a small m eight ways)
                assert all(c.kernel.tiles_m == 1 and c.kernel.num_wgs == k.tiles_n for c in parts)
                sizes = [c.kernel.M for c in parts]
                assert max(sizes) - min(sizes) <= 1
            offs = [c.c_offset_B for c in parts] + [k.M * k.N * m.elem_B]
            assert all(offs[i + 1] - offs[i] == parts[i].c_elems * m.elem_B for i in range(count))  # contiguous
            for c in parts:
                verify(plan_for_system(e.system, "reduce_scatter", c.c_elems, m.elem_B))


def test_chunked_conserves_link_bytes_and_ends_after_every_chunk():
    seq_m, seq = _run(lambda m: sequential_program(m))
    m, run = _run(lambda m: chunked_program(m), "scheme.kind=chunked", "scheme.chunks=4")
    # the chunk RSs send exactly what one RS of C sends (the AG is the same in both)
    assert sum(m.network.bytes_injected.values()) == sum(seq_m.network.bytes_injected.values())
    recs = {r.name: r for r in run.records}
    for i in range(4):
        assert recs[f"rs_c{i}"].start >= recs[f"gemm_c{i}"].end  # an RS never starts before its chunk ends
        if i:
            assert recs[f"gemm_c{i}"].start == recs[f"gemm_c{i - 1}"].end  # chunks back to back
            assert recs[f"rs_c{i}"].start >= recs[f"rs_c{i - 1}"].end  # one comm stream
    assert recs["ag"].start == recs["rs_c3"].end
    # never faster than its GEMM chunks alone back to back (they run first to last on one stream)
    ph = run.phases()
    assert ph.total >= sum(recs[f"gemm_c{i}"].end - recs[f"gemm_c{i}"].start for i in range(4))


def test_options_are_rejected_by_schemes_that_do_not_use_them():
    with pytest.raises(InputError, match="scheme.chunks"):
        simulate(exp(*SMALL, "scheme.chunks=2"))
    with pytest.raises(InputError, match="scheme.launch_first"):
        simulate(exp(*SMALL, "scheme.kind=chunked", "scheme.launch_first=comm"))
    with pytest.raises(InputError, match="scheme.chunks"):
        simulate(exp(*SMALL, "scheme.kind=chunked", "scheme.chunks=999999"))


def test_schemes_registered_with_label_and_color():
    for name in ("concurrent", "chunked"):
        s = scheme_for(name)
        assert s.runnable and s.label and s.color.startswith("#")


@pytest.mark.parametrize("kind", ["concurrent", "chunked"])
def test_cu_reservation_confines_each_kernel(alone, kind):
    """``scheme.comm_cus`` (paper Sec. 3.2.1, Fig. 6's 72-8 split): the RSs' CTAs only on the last CUs, the GEMMs'
    WGs only on the others; never faster than the longer kernel alone."""
    build = concurrent_program if kind == "concurrent" else chunked_program
    m, run = _run(lambda m: build(m, with_ag=False), f"scheme.kind={kind}", "scheme.comm_cus=2")
    for d in m.dispatchers.values():
        masks = {c.name: set(np.flatnonzero(c.mask).tolist()) for c in d._clients.values()}
        gemm = [v for k, v in masks.items() if "gemm" in k]
        comm = [v for k, v in masks.items() if "gemm" not in k]
        assert gemm and all(v == set(range(6)) for v in gemm)
        assert comm and all(v == {6, 7} for v in comm)
    assert all(k.num_cus == 6 for k in m.gemm_kernels)
    assert run.end - run.start >= max(alone) * 0.999
    with pytest.raises(InputError, match="scheme.comm_cus"):
        _run(lambda m: build(m, with_ag=False), f"scheme.kind={kind}", "scheme.comm_cus=8")
    with pytest.raises(InputError, match="scheme.comm_cus"):
        simulate(exp(*SMALL, "scheme.comm_cus=2"))  # sequential does not reserve CUs


def test_compute_streams_run_consecutive_chunks_concurrently():
    """scheme.compute_streams = 3 (Transformer Engine's NVTE_COMM_OVERLAP_MAX_STREAMS): chunks 0-2 launch together
    on their own streams, chunk 3 when chunk 0 (its stream's predecessor) ends; each chunk's RS still follows its
    own chunk; the decomposition gets no slower than on one stream (the later chunks fill the earlier ones'
    partial waves)."""
    _m1, one = _run(lambda m: chunked_program(m), "scheme.kind=chunked", "scheme.chunks=4")
    _m3, three = _run(lambda m: chunked_program(m), "scheme.kind=chunked", "scheme.chunks=4", "scheme.compute_streams=3")
    recs = {r.name: r for r in three.records}
    assert recs["gemm_c0"].start == recs["gemm_c1"].start == recs["gemm_c2"].start
    assert recs["gemm_c3"].start == recs["gemm_c0"].end
    assert {recs[f"gemm_c{i}"].stream for i in range(4)} == {"compute0", "compute1", "compute2"}
    for i in range(4):
        assert recs[f"rs_c{i}"].start >= recs[f"gemm_c{i}"].end
    assert three.phases().total <= one.phases().total
