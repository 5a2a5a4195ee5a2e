"""The ``copy`` scheme: the GEMM beside background copies on copy streams.

A scaled-down h200-1gpu (16 CUs, 16 HBM channels, 10 MiB L2), Mega-GPT-2 OP at 512 tokens (4 x 12 tiles of
128 x 256: three stages on 16 CUs) and 2 MiB copies keep each run to about 2 s.
"""

from __future__ import annotations

import pytest

from t3sim.config import load_experiment
from t3sim.errors import InputError
from t3sim.schemes.runtime import scheme_for
from t3sim.schemes.runtime.program import Kernel, Program
from t3sim.exec.checks import check_experiment
from t3sim.system.core import simulate
from tests.conftest import REPO

CONFIG = REPO / "configs/experiments/copy-contention.yaml"
SMALL = ["system.gpu.num_cus=16", "system.collective.cus=16", "system.hbm.channels=16", "system.l2.banks=16",
         "system.l2.size_MiB=10", "workload.tokens=512", "workload.sublayer=OP", "scheme.copy_size_MiB=2",
         "sweep.cases=[]", "sweep.grid={}"]
SIZE = 2 << 20


def _exp(*extra):
    return load_experiment(CONFIG, SMALL + list(extra))


_cache: dict = {}


def _run(*extra):
    if extra not in _cache:
        _cache[extra] = simulate(_exp(*extra))
    return _cache[extra]


def _copies(r):
    """(stream, index, start_us, end_us) of every copy record, and the GEMM's end (us)."""
    v = r.stats.value
    names = sorted({k.split(".")[1] + "." + k.split(".")[2] for k, _ in r.stats.items()
                    if k.startswith("kernels.copy")})
    recs = [(n.split(".")[0], int(n.split(".")[1]), v(f"kernels.{n}.start_us"), v(f"kernels.{n}.end_us"))
            for n in names]
    return recs, v("kernels.gemm.end_us")


def test_experiment_config_checks():
    """The shipped experiment (Mega-GPT-2 TP=8 on h200-1gpu) validates, every point."""
    from t3sim.config.sweep import expand

    exp = load_experiment(CONFIG, [])
    assert exp.system.interconnect.num_gpus == 1 and exp.workload.tp == 8 and exp.scheme.kind == "copy"
    points = expand(CONFIG)
    assert len(points) == 16
    for p in points:
        check_experiment(p.config, p.label)
        k = p.config
        assert k.scheme.copy_streams in (0, 1, 2)


@pytest.mark.parametrize("extra", [("scheme.copy_streams=2",),
                                   ("scheme.copy_streams=1", "system.copy_engine.d2d_path=ce"),
                                   ("scheme.copy_streams=2", "scheme.copy_direction=h2d+d2h")])
def test_bytes_conserved(extra):
    """Every copy reads and writes exactly its size: local bytes and DRAM bytes of category dma = copies x size
    (d2d: read and written locally; h2d only written, d2h only read), and each copy is one record."""
    r = _run(*extra)
    v = r.stats.value
    recs, _ = _copies(r)
    n = v("copy.copies_issued")
    assert n == len(recs) >= 2
    e, sm = "gpu0.copy_engines.", "gpu0.sm_copy."
    text = " ".join(extra)
    assert ("gpu0.sm_copy.copies_done" in r.stats) == ("d2d_path=ce" not in text)  # h200: d2d_path sm
    done = v(e + "copies_done") + (v(sm + "copies_done") if sm + "copies_done" in r.stats else 0)
    assert done == n  # the copy in flight at the GEMM's end completes
    if "h2d+d2h" in text:
        h2d = sum(1 for s, *_ in recs if s == "copy0")
        d2h = n - h2d
        assert v(e + "h2d_bytes") == v(e + "local_written_bytes") == h2d * SIZE
        assert v(e + "d2h_bytes") == v(e + "local_read_bytes") == d2h * SIZE
        assert (v("gpu0.dram_traffic.dma.write_bytes"), v("gpu0.dram_traffic.dma.read_bytes")) == (h2d * SIZE,
                                                                                                    d2h * SIZE)
    else:
        path = e if "d2d_path=ce" in text else sm
        assert v(path + "local_read_bytes") == v(path + "local_written_bytes") == n * SIZE
        assert v("gpu0.dram_traffic.dma.read_bytes") == v("gpu0.dram_traffic.dma.write_bytes") == n * SIZE
        assert v(path + "max_in_flight_requests") > 0


@pytest.mark.parametrize("extra", [("scheme.copy_streams=1",), ("scheme.copy_streams=2",),
                                   ("scheme.copy_streams=1", "scheme.launch_first=gemm"),
                                   ("scheme.copy_streams=1", "system.copy_engine.d2d_path=ce"),
                                   ("scheme.copy_streams=2", "scheme.copy_direction=h2d+d2h")])
def test_gemm_beside_copies_never_faster_than_alone(extra):
    """Bounds: the GEMM beside copies takes at least as long as alone (to 0.1 %: a cycle-level memory system is
    not monotone); copies on the SMs launched first delay it by a good part of a copy."""
    alone = _run("scheme.copy_streams=0").summary["total_us"]
    r = _run(*extra)
    assert r.summary["total_us"] == r.summary["gemm_us"] and r.summary["rs_us"] == r.summary["ag_us"] == 0
    assert r.summary["total_us"] >= alone * 0.999
    if extra == ("scheme.copy_streams=1",):  # SM copy kernel first: it holds the CUs, the GEMM waits behind it
        recs, _ = _copies(r)
        first = min(end - start for s, i, start, end in recs if i == 0)
        assert r.summary["total_us"] > alone + 0.25 * first


@pytest.mark.parametrize("extra", [("scheme.copy_streams=2",), ("scheme.copy_streams=1", "scheme.launch_first=gemm")])
def test_copies_back_to_back_until_the_gemm_ends(extra):
    """Each stream issues its next copy when the previous ends, and none after the GEMM has ended."""
    r = _run(*extra)
    recs, gemm_end = _copies(r)
    for s in {s for s, *_ in recs}:
        mine = sorted((i, a, b) for t, i, a, b in recs if t == s)
        assert [i for i, *_ in mine] == list(range(len(mine)))
        assert mine[0][1] == 0.0
        assert all(mine[j + 1][1] == mine[j][2] for j in range(len(mine) - 1))
        assert all(a < gemm_end for _i, a, _b in mine)  # started while the GEMM ran
        assert mine[-1][2] >= gemm_end  # the stream stopped only once the GEMM had ended


def test_no_copy_streams_is_the_gemm_alone():
    r = _run("scheme.copy_streams=0")
    recs, gemm_end = _copies(r)
    assert recs == [] and r.stats.value("copy.copies_issued") == 0
    assert r.summary["total_us"] == gemm_end


@pytest.mark.parametrize("kind", ["sequential", "concurrent", "chunked", "t3"])
@pytest.mark.parametrize("opt", ["copy_streams=2", "copy_size_MiB=64", "copy_direction=h2d"])
def test_copy_options_rejected_by_other_schemes(kind, opt):
    """The config refuses them (each scheme's options are its own, t3sim.config.scheme), naming the scheme that
    takes them; a config changed without validation is refused by the scheme before it runs."""
    with pytest.raises(InputError, match=rf"^scheme\.{opt.split('=')[0]}: found .* with scheme.kind={kind}, which does "
                       "not use it; allowed: .*only with copy$"):
        load_experiment(REPO / "configs/experiments/default.yaml", [f"scheme.kind={kind}", f"scheme.{opt}"])
    copy = load_experiment(REPO / "configs/experiments/default.yaml", ["scheme.kind=copy", f"scheme.{opt}"])
    forged = copy.scheme.model_copy(update={"kind": kind})  # no validation
    with pytest.raises(InputError, match=rf"scheme\.{opt.split('=')[0]}.*only with copy"):
        scheme_for(kind).check_options(forged)


@pytest.mark.parametrize("opt", ["chunks=2", "chunk_axis=N"])
def test_copy_rejects_other_schemes_options(opt):
    with pytest.raises(InputError, match=rf"scheme\.{opt.split('=')[0]}"):
        _exp(f"scheme.{opt}")
    scheme_for("copy").check_options(_exp("scheme.launch_first=gemm", "scheme.copy_streams=2").scheme)


def test_collective_schemes_need_two_gpus():
    """One GPU runs one GPU's GEMM of a TP=8 sub-layer: fine for copy, an input error for schemes with collectives."""
    check_experiment(_exp())
    with pytest.raises(InputError, match=r"scheme.kind: found 'sequential', which runs collectives.*allowed: .*copy"):
        check_experiment(_exp("scheme.kind=sequential", "scheme.copy_size_MiB=256", "scheme.launch_first=gemm"))
    with pytest.raises(InputError, match="workload.tp=16 but system.interconnect.num_gpus=8"):
        load_experiment(REPO / "configs/experiments/default.yaml", ["workload.tp=16"])


def test_copy_buffers_must_fit_hbm():
    with pytest.raises(InputError, match=r"scheme.copy_size_MiB: found 2 copy streams of 1e\+06 MiB"):
        simulate(_exp("scheme.copy_streams=2", "scheme.copy_size_MiB=1000000"))
    with pytest.raises(InputError, match="at least 64 B"):
        simulate(_exp("scheme.copy_size_MiB=0.00001"))


def test_program_rejects_dependencies_on_repeating_kernels():
    p = Program()
    p.add("a", Kernel("g", "gemm", "gemm", lambda: None))
    p.add("b", Kernel("c", "copy", "copy", lambda: None, repeat_until="g"))
    p.check()
    p.add("a", Kernel("x", "gemm", "gemm", lambda: None, after=("c",)))
    with pytest.raises(ValueError, match="repeats"):
        p.check()
    q = Program()
    q.add("b", Kernel("c", "copy", "copy", lambda: None, repeat_until="nope"))
    with pytest.raises(ValueError, match="repeats until 'nope'"):
        q.check()
