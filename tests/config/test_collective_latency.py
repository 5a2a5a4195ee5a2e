"""The collective latencies of t3sim/config/collective_latency.py: the libraries' tuning-model tables, how they
compose, what the config derives from them, and that every system preset's collective start-up has a source.

The expected values are read off the cited files: NVIDIA/nccl v2.28.9-1 src/graph/tuning.cc
(ncclTunerConstantsDefaults) and ROCm/rccl 0cbce2a7 (RCCL 2.21.5) src/graph/tuning.cc (baseLat, tuning_model_i).
"""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from t3sim.config import load_system
from t3sim.config.collective_latency import (LINKS, NCCL, PROTOCOLS, RCCL_MODELS, CollectiveLatencyConfig,
                                             model_latency_us, table)
from t3sim.config.system import CollectiveConfig

from tests.config.test_params import SYSTEMS, _LEADS_FITTED, all_presets, chain

# (link, algorithm) -> (LL, LL128, Simple), NCCL 2.28.9 hwLatencies
NCCL_HW = {("nvlink", "tree"): (0.6, 1.25, 4.0), ("nvlink", "ring"): (0.6, 1.9, 3.4),
           ("pci", "tree"): (1.0, 1.9, 4.0), ("pci", "ring"): (1.0, 2.5, 5.7),
           ("net", "tree"): (5.0, 8.5, 14.0), ("net", "ring"): (2.7, 4.0, 14.0),
           ("nvlink", "nvls"): (0.0, 0.0, 25.0), ("net", "nvls_tree"): (0.0, 0.0, 20.9), ("pci", "pat"): (0.0, 0.0, 4.0),
           ("net", "collnet_direct"): (0.0, 0.0, 31.0), ("nvlink", "collnet_chain"): (0.0, 0.0, 2.8)}
NCCL_BASE = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "pat": (8.0, 8.0, 8.0), "nvls": (0.0, 0.0, 0.0)}
# (model, link, algorithm) -> (LL, LL128, Simple), RCCL 2.21.5 rcclTuningModel[model].hwLat
RCCL_HW = {(0, "nvlink", "ring"): (0.8, 2.2, 3.6), (0, "nvlink", "tree"): (0.8, 1.4, 2.5),
           (0, "net", "ring"): (9.5, 19.8, 15.1), (1, "net", "ring"): (5.1, 5.1, 68.8),
           (2, "net", "tree"): (27.9, 27.9, 15.8), (3, "nvlink", "ring"): (0.8, 0.0, 3.6),
           (4, "net", "ring"): (35.4, 87.8, 209.2), (5, "nvlink", "ring"): (0.8, 0.0, 2.1),
           (5, "nvlink", "tree"): (0.9, 0.0, 2.3), (5, "net", "ring"): (9.5, 0.0, 320.0)}


@pytest.mark.parametrize("key", sorted(NCCL_HW))
def test_nccl_hw_latencies_are_tuning_cc(key):
    link, algo = key
    assert tuple(NCCL.hw_us(link, algo, p) for p in PROTOCOLS) == NCCL_HW[key]


@pytest.mark.parametrize("algo", sorted(NCCL_BASE))
def test_nccl_base_latencies_are_tuning_cc(algo):
    assert tuple(NCCL.base_us(algo, p) for p in PROTOCOLS) == NCCL_BASE[algo]


@pytest.mark.parametrize("key", sorted(RCCL_HW))
def test_rccl_hw_latencies_are_tuning_cc(key):
    model, link, algo = key
    assert tuple(table("rccl", model).hw_us(link, algo, p) for p in PROTOCOLS) == RCCL_HW[key]


def test_tables_are_complete_and_rccl_shares_its_base_and_pci_rows():
    for t in (NCCL, *RCCL_MODELS):
        assert set(t.hw) == set(LINKS)
        for link in LINKS:
            assert set(t.hw[link]) == set(t.base), (t.name, link)
    assert len(RCCL_MODELS) == 6 and "pat" not in RCCL_MODELS[0].base
    for t in RCCL_MODELS:
        assert tuple(t.base_us("ring", p) for p in PROTOCOLS) == (12.0, 12.0, 17.0)
        assert tuple(t.hw_us("pci", "ring", p) for p in PROTOCOLS) == (2.2, 2.2, 5.7)
    with pytest.raises(ValueError, match="no algorithm 'pat'"):
        table("rccl").base_us("pat", "simple")
    with pytest.raises(ValueError, match="tuning models 0..5"):
        table("rccl", 6)
    with pytest.raises(ValueError, match="protocol"):
        NCCL.base_us("ring", "ll64")
    with pytest.raises(ValueError, match="link"):
        NCCL.hw_us("xgmi", "ring", "simple")


def test_model_latency_composes_as_ncclTopoTuneModel():
    """Ring: base + nsteps x hw (nsteps N-1 for RS/AG, 2(N-1) for AR); tree all-reduce: base + 2(N-1) x hw."""
    assert model_latency_us("nccl", "reduce_scatter", "ring", "simple", "nvlink", 4) == pytest.approx(8.4 + 3 * 3.4)
    assert model_latency_us("nccl", "all_gather", "ring", "ll", "pci", 8) == pytest.approx(6.6 + 7 * 1.0)
    assert model_latency_us("nccl", "all_reduce", "ring", "ll128", "nvlink", 8) == pytest.approx(14.0 + 14 * 1.9)
    assert model_latency_us("nccl", "all_reduce", "tree", "simple", "nvlink", 4) == pytest.approx(8.4 + 6 * 4.0)
    assert model_latency_us("rccl", "all_reduce", "ring", "ll", "nvlink", 4) == pytest.approx(12.0 + 6 * 0.8)
    assert model_latency_us("rccl", "reduce_scatter", "ring", "simple", "nvlink", 8, 5) == pytest.approx(17 + 7 * 2.1)
    with pytest.raises(ValueError, match="times"):
        model_latency_us("nccl", "all_to_all", "ring", "simple", "nvlink", 4)
    with pytest.raises(ValueError, match="only ring"):
        model_latency_us("nccl", "reduce_scatter", "tree", "simple", "nvlink", 4)


def test_config_derives_startup_and_hop():
    nccl = CollectiveLatencyConfig(software_ns=1000.0, library="nccl", link="pci")
    assert nccl.startup_ns("reduce_scatter") == 1000.0 + 8400.0
    assert nccl.startup_ns("all_gather") == nccl.startup_ns("all_reduce") == 9400.0
    assert nccl.startup_ns("all_to_all") == 1000.0  # send/recv: outside the tuning model
    assert nccl.hop_latency_ns == 5700.0
    rccl = CollectiveLatencyConfig(library="rccl", protocol="ll", rccl_tuning_model=5)
    assert rccl.startup_ns("all_reduce") == 5000.0 + 12000.0 and rccl.hop_latency_ns == 2100.0
    none = CollectiveLatencyConfig(software_ns=300.0)
    assert none.startup_ns("reduce_scatter") == 300.0 and none.hop_latency_ns is None
    with pytest.raises(ValidationError):
        CollectiveLatencyConfig(rccl_tuning_model=len(RCCL_MODELS))
    with pytest.raises(ValidationError):
        CollectiveLatencyConfig(library="mscclpp")


def test_nccl_simple_pays_simple_latencies_only():
    with pytest.raises(Exception, match="latency.protocol"):
        load_system(SYSTEMS / "h200-4gpu.yaml", ["collective.latency.protocol=ll"])
    assert CollectiveConfig().latency == CollectiveLatencyConfig()


# ---------------------------------------------------------------- every preset's start-up has a source

_STARTUP = ("software_ns", "library")


def _needs(system) -> tuple:
    lat = system.collective.latency
    extra = () if lat.library == "none" else ("protocol",)
    if lat.library != "none" and system.collective.protocol == "nccl_simple":
        extra += ("link",)
    return _STARTUP + extra


def test_every_preset_sources_its_collective_startup():
    """Each preset sets the start-up's fields itself (with a comment) or says in an ``inherits collective.latency``
    line what it takes from its base; a FITTED software part reaches no other preset that runs collectives."""
    presets = {p.resolve(): pre for p, pre in all_presets().items()}
    problems = []
    for path, pre in presets.items():
        system = load_system(path)
        notes = " ".join(pre.notes)
        for leaf in _needs(system):
            f = f"collective.latency.{leaf}"
            if f in pre.values:
                if not pre.values[f].strip():
                    problems.append(f"{path.name}: sets {f} without a comment saying where it comes from")
                continue
            if not re.search(rf"\binherits collective\.latency(?:\.{leaf})?\b", notes):
                problems.append(f"{path.name}: takes {f} from its base without an 'inherits {f} ...' line")
        owner = next((p for p in chain(presets, path) if "collective.latency.software_ns" in p.values), None)
        if owner is None:
            problems.append(f"{path.name}: its collective start-up's software part is the field default (set it, "
                            "saying which assumption it is)")
        elif owner is not pre and _LEADS_FITTED.match(owner.values["collective.latency.software_ns"]) \
                and system.interconnect.num_gpus > 1:
            problems.append(f"{path.name}: runs collectives with the software start-up fitted in {owner.path.name}")
        elif owner is pre:
            c = pre.values["collective.latency.software_ns"]
            if not (_LEADS_FITTED.match(c) or "assumption" in c):
                problems.append(f"{path.name}: collective.latency.software_ns is neither FITTED nor an assumption: {c!r}")
    assert not problems, "\n".join(problems)
    assert len(presets) >= 12
