"""A collective's start-up and per-hop latencies (collective.latency) in simulated runs.

* The start-up (software plus the library's base latency) delays a collective by exactly its value (with DRAM
  refresh, whose phase the delay shifts, out of the way), and only the collectives the library's tuning model times
  (not the all-to-all).
* Under protocol nccl_simple the link class sets each hop's latency (NCCL's hwLat[link][RING][SIMPLE]).
* Cross-check: on the H200 preset with no software part, a tiny ring collective (latency-bound) takes what NCCL's
  own tuning model gives as its latency (baseLat + nsteps x hwLat), plus the little its data and memory cost.
"""

from __future__ import annotations

import pytest

from t3sim.collectives.gpu_run import simulate_collective_on_gpus
from t3sim.config import load_system
from t3sim.config.collective_latency import model_latency_us

from tests.conftest import REPO

T3 = REPO / "configs/systems/t3-table1.yaml"
H200 = REPO / "configs/systems/h200-4gpu.yaml"
# 4 GPUs of 8 CUs, no DRAM refresh in the run (a later start meets refreshes at other points of the collective)
SMALL = ["interconnect.num_gpus=4", "gpu.num_cus=8", "collective.cus=4", "hbm.timing.tREFI_nCK=100000000"]


def _us(path, sets, coll="reduce_scatter", elems=4 * 4096):
    run, _ = simulate_collective_on_gpus(load_system(path, sets), coll, elems, 2)
    return run.duration_ns / 1e3


@pytest.mark.parametrize("coll", ["reduce_scatter", "all_gather", "all_reduce", "all_to_all"])
def test_startup_fields_move_a_collective_by_their_value(coll):
    base = _us(T3, SMALL + ["collective.latency.software_ns=0"], coll)
    assert _us(T3, SMALL + ["collective.latency.software_ns=7000"], coll) == pytest.approx(base + 7.0, abs=1e-6)
    tuned = coll != "all_to_all"  # send/recv: no base latency in the tuning model
    rccl = _us(T3, SMALL + ["collective.latency.software_ns=0", "collective.latency.library=rccl"], coll)
    assert rccl == pytest.approx(base + (17.0 if tuned else 0.0), abs=1e-6)
    ll = _us(T3, SMALL + ["collective.latency.software_ns=0", "collective.latency.library=rccl",
                          "collective.latency.protocol=ll"], coll)
    assert ll == pytest.approx(base + (12.0 if tuned else 0.0), abs=1e-6)
    nccl = _us(T3, SMALL + ["collective.latency.software_ns=0", "collective.latency.library=nccl"], coll)
    assert nccl == pytest.approx(base + (8.4 if tuned else 0.0), abs=1e-6)


def test_link_class_sets_the_simple_hop():
    """A tiny 4-GPU RS on the H200 preset: each of its 3 ring steps waits one Simple hop, so PCI's 5.7 us hop
    instead of NVLink's 3.4 us adds about 3 x 2.3 us; no library: the fence costs only the acknowledgement."""
    nvl = _us(H200, ["collective.latency.software_ns=0"], elems=4 * 512)
    pci = _us(H200, ["collective.latency.software_ns=0", "collective.latency.link=pci"], elems=4 * 512)
    assert pci - nvl == pytest.approx(3 * (5.7 - 3.4), rel=0.15)
    bare = _us(H200, ["collective.latency.software_ns=0", "collective.latency.library=none"], elems=4 * 512)
    assert bare < nvl - 8.4


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("coll", ["reduce_scatter", "all_gather", "all_reduce"])
def test_tiny_collective_takes_nccls_modelled_latency(n, coll):
    sim = _us(H200, ["collective.latency.software_ns=0", f"interconnect.num_gpus={n}"], coll, elems=n * 512)
    model = model_latency_us("nccl", coll, "ring", "simple", "nvlink", n)
    assert model <= sim <= 1.15 * model, (sim, model)
