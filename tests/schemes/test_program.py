"""The program runtime's derived quantities (schemes/runtime/program.py) on hand-made records: phases, exposed
communication, critical path."""

from __future__ import annotations

import pytest

from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, Record


def _run(*recs):
    return ProgramRun(0, [Record(n, "k", ph, comm, "s", a, b) for n, ph, comm, a, b in recs])


def test_phases_exposed_comm_and_critical_path():
    # GEMM 0-100; RS 60-150 on another stream; AG 150-200 after the RS
    run = _run(("gemm", "gemm", False, 0, 100), ("rs", "rs", True, 60, 150), ("ag", "ag", True, 150, 200))
    p = run.phases()
    assert (p.gemm, p.rs, p.ag, p.total) == (100, 50, 50, 200)
    assert run.exposed_comm() == 100  # 100-150 (RS alone) + 150-200 (AG)
    assert run.critical_path() == ["rs", "ag"]


def test_phase_ending_early_is_not_negative():
    run = _run(("gemm", "gemm", False, 0, 100), ("rs", "rs", True, 0, 40), ("ag", "ag", True, 100, 130))
    p = run.phases()
    assert (p.gemm, p.rs, p.ag) == (100, 0, 30)
    assert run.exposed_comm() == 30


def test_program_check_rejects_bad_graphs():
    p = Program()
    p.add("a", Kernel("x", "gemm", "gemm", lambda: None))
    p.add("b", Kernel("x", "gemm", "gemm", lambda: None))
    with pytest.raises(ValueError, match="duplicate"):
        p.check()
    q = Program()
    q.add("a", Kernel("x", "gemm", "gemm", lambda: None, after=("nope",)))
    with pytest.raises(ValueError, match="nope"):
        q.check()
