"""``workload.collective``: a GEMM+ReduceScatter operation (FLUX Sec. 5.1) ends at the
reduce-scatter in every gemm_rs scheme, with the GEMM and RS phases of the all-reduce run unchanged."""

from __future__ import annotations

import pytest

from t3sim.errors import InputError
from t3sim.schemes.runtime import SCHEMES, scheme_for
from t3sim.system.model import SystemModel
from tests.system.helpers import exp

SMALL = ("workload.sublayer=OP", "workload.tokens=256", "workload.model.hidden_size=1024", "system.gpu.num_cus=4",
         "workload.tp=4", "system.interconnect.num_gpus=4")

GEMM_RS = sorted(n for n, s in SCHEMES.items() if "gemm_rs" in s.directions and "model" in s.workloads and n != "copy")


def _phases(kind, collective, *extra):
    m = SystemModel(exp(*SMALL, f"scheme.kind={kind}", f"workload.collective={collective}", *extra))
    return m, scheme_for(kind).run(m)


@pytest.mark.parametrize("kind", GEMM_RS)
def test_reduce_scatter_operation_drops_only_the_all_gather(kind):
    extra = ("workload.dtype=fp32",) if kind == "flux_rs" else ()  # flux_rs's default atomic needs an atomic dtype
    m_ar, ar = _phases(kind, "all_reduce", *extra)
    m_rs, rs = _phases(kind, "reduce_scatter", *extra)
    assert ar.ag > 0 and rs.ag == 0
    assert rs.total == (max(rs.gemm, rs.rs) if scheme_for(kind).ideal else ar.total - ar.ag)
    assert (rs.gemm, rs.rs) == (ar.gemm, ar.rs)  # the AG runs after the RS ended: nothing before it changes
    assert not any(r.name == "ag" for r in m_rs.kernel_records)
    assert any(r.name == "ag" for r in m_ar.kernel_records) or scheme_for(kind).ideal


def test_reduce_scatter_with_ag_gemm_is_rejected():
    with pytest.raises((InputError, ValueError), match="collective=reduce_scatter with direction=ag_gemm"):
        exp(*SMALL, "workload.direction=ag_gemm", "workload.collective=reduce_scatter")
