"""A collective's fixed latencies: a software start-up and the collective library's own tuning-model latencies.

NCCL and RCCL time every collective with a model (``src/graph/tuning.cc``, ``ncclTopoTuneModel`` and
``ncclTopoGetAlgoTime``): ``time = latency + bytes / (1000 x bandwidth)`` (us, GB/s), where for one node

* ring (reduce-scatter, all-gather, all-reduce): ``latency = baseLat[RING][p] + nsteps x hwLat[hw][RING][p]``,
  ``nsteps = N - 1`` (reduce-scatter, all-gather) or ``2 (N - 1)`` (all-reduce);
* tree (all-reduce): ``latency = baseLat[TREE][p] + 2 (N - 1) x hwLat[hw][TREE][p]``;

``p`` is the protocol (LL, LL128, Simple), ``hw`` the class of the GPUs' path (``NCCL_HW_NVLINK``, ``_PCI``,
``_NET``; RCCL counts xGMI as NVLink, its links are ``LINK_NVL``). The tables below are those constants, in us:

* NCCL 2.28.9 (github.com/NVIDIA/nccl, tag v2.28.9-1) ``src/graph/tuning.cc`` ``ncclTunerConstantsDefaults``:
  ``baseLatencies`` and ``hwLatencies``; they are the same for every GPU generation (only the bandwidth tables,
  ``llMaxBws``, ``perChMax*Bws``, are per generation).
* RCCL 2.21.5 (github.com/ROCm/rccl, ROCm 6.3.0, commit 0cbce2a7) ``src/graph/tuning.cc``: one ``baseLat`` table
  and per-platform ``rcclTuningModel[i].hwLat`` (i = 0..5); ``src/graph/rome_models.cc`` assigns a platform its
  ``tuning=i`` (the 8x MI300X full mesh, ``rome_model_79``: 5), a topology no model matches keeps 0 (its
  ``ncclTopoSystem`` is zero-allocated, ``src/graph/topo.cc``).

How t3sim uses them (:class:`CollectiveLatencyConfig`): the simulated kernels run their hops -- every ring step's
slices, flags and link latencies -- so of a library's latency only the base part is added as a constant, to the
start-up of a reduce-scatter, all-gather or all-reduce (all-to-all is grouped send/recv, which the tuning model
does not time: ``NCCL_NUM_FUNCTIONS 5 // Send/Recv not included``, ``src/include/nccl_common.h``); the per-hop
``hwLat[hw][RING][SIMPLE]`` is the latency of one hop of the ``nccl_simple`` protocol
(:mod:`t3sim.collectives.nccl`). Before both, every GPU waits the software start-up (host enqueue, kernel launch,
rank skew), which lies outside the tuning model. :func:`model_latency_us` composes a whole collective's latency as
the library does (for comparison with the simulated one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Literal, Tuple

from t3sim.config.base import F, Model

NCCL_TUNING_SRC = "NCCL 2.28.9 (github.com/NVIDIA/nccl, tag v2.28.9-1) src/graph/tuning.cc"
RCCL_TUNING_SRC = "RCCL 2.21.5 (github.com/ROCm/rccl, ROCm 6.3.0, commit 0cbce2a7) src/graph/tuning.cc"

#: protocols in the tables' column order (NCCL_PROTO_LL, NCCL_PROTO_LL128, NCCL_PROTO_SIMPLE)
PROTOCOLS = ("ll", "ll128", "simple")
#: path classes in the tables' row order (NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET)
LINKS = ("nvlink", "pci", "net")
LIBRARIES = ("none", "nccl", "rccl")
#: the collectives the tuning model times (NCCL_NUM_FUNCTIONS: Broadcast, Reduce, AllGather, ReduceScatter,
#: AllReduce); t3sim runs the last three and the all-to-all (send/recv), which is not among them
TUNED_COLLECTIVES = ("reduce_scatter", "all_gather", "all_reduce")

Row = Tuple[float, float, float]  # (LL, LL128, Simple), us


@dataclass(frozen=True)
class TuningTable:
    """One library's latency constants (us): ``base[algorithm]`` and ``hw[link][algorithm]``, each (LL, LL128, Simple)."""

    name: str
    source: str
    base: Dict[str, Row]
    hw: Dict[str, Dict[str, Row]]

    def base_us(self, algorithm: str, protocol: str) -> float:
        return self.base[_algo(self, algorithm)][_proto(protocol)]

    def hw_us(self, link: str, algorithm: str, protocol: str) -> float:
        if link not in LINKS:
            raise ValueError(f"link {link!r}: one of {', '.join(LINKS)}")
        return self.hw[link][_algo(self, algorithm)][_proto(protocol)]


def _algo(t: TuningTable, algorithm: str) -> str:
    if algorithm not in t.base:
        raise ValueError(f"{t.name} has no algorithm {algorithm!r} (its tables: {', '.join(t.base)})")
    return algorithm


def _proto(protocol: str) -> int:
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
    return PROTOCOLS.index(protocol)


# NCCL 2.28.9 src/graph/tuning.cc ncclTunerConstantsDefaults (algorithm order NCCL_ALGO_TREE .. NCCL_ALGO_PAT,
# src/include/plugin/nccl_tuner.h)
NCCL = TuningTable(
    "NCCL 2.28.9", NCCL_TUNING_SRC,
    base={"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "collnet_direct": (0.0, 0.0, 0.0),
          "collnet_chain": (0.0, 0.0, 0.0), "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0),
          "pat": (8.0, 8.0, 8.0)},
    hw={"nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "collnet_direct": (0.0, 0.0, 3.7),
                   "collnet_chain": (0.0, 0.0, 2.8), "nvls": (0.0, 0.0, 25.0), "nvls_tree": (0.0, 0.0, 25.0),
                   "pat": (0.0, 0.0, 4.0)},
        "pci": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "collnet_direct": (0.0, 0.0, 3.7),
                "collnet_chain": (0.0, 0.0, 2.8), "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0),
                "pat": (0.0, 0.0, 4.0)},
        "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "collnet_direct": (0.0, 0.0, 31.0),
                "collnet_chain": (0.0, 0.0, 30.0), "nvls": (0.0, 0.0, 18.0), "nvls_tree": (0.0, 0.0, 20.9),
                "pat": (0.0, 0.0, 14.0)}})

# RCCL 2.21.5 src/graph/tuning.cc: baseLat (one table) and rcclTuningModel[0..5].hwLat (no PAT algorithm)
_RCCL_BASE = {"tree": (12.0, 12.0, 17.0), "ring": (12.0, 12.0, 17.0), "collnet_direct": (12.0, 12.0, 17.0),
              "collnet_chain": (12.0, 12.0, 17.0), "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0)}
_RCCL_PCI = {"tree": (2.2, 2.2, 5.7), "ring": (2.2, 2.2, 5.7), "collnet_direct": (0.0, 0.0, 5.7),
             "collnet_chain": (0.0, 0.0, 5.7), "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0)}
_Z = (0.0, 0.0, 0.0)


def _rccl(i: int, nvlink: Dict[str, Row], net: Dict[str, Row]) -> TuningTable:
    full = lambda d: {**d, "nvls": _Z, "nvls_tree": _Z}  # noqa: E731
    return TuningTable(f"RCCL 2.21.5 tuning_model_{i}", f"{RCCL_TUNING_SRC} tuning_model_{i}", dict(_RCCL_BASE),
                       {"nvlink": full(nvlink), "pci": dict(_RCCL_PCI), "net": full(net)})


RCCL_MODELS: Tuple[TuningTable, ...] = (
    _rccl(0, {"tree": (0.8, 1.4, 2.5), "ring": (0.8, 2.2, 3.6), "collnet_direct": (0.0, 0.0, 0.8),
              "collnet_chain": (0.0, 0.0, 1.4)},
          {"tree": (11.8, 18.2, 20.8), "ring": (9.5, 19.8, 15.1), "collnet_direct": (0.0, 0.0, 11.8),
           "collnet_chain": (0.0, 0.0, 18.2)}),
    _rccl(1, {"tree": (1.5, 1.5, 4.5), "ring": (1.5, 1.5, 4.5), "collnet_direct": (0.0, 0.0, 4.5),
              "collnet_chain": (0.0, 0.0, 4.5)},
          {"tree": (33.0, 33.0, 15.8), "ring": (5.1, 5.1, 68.8), "collnet_direct": (0.0, 0.0, 15.8),
           "collnet_chain": (0.0, 0.0, 15.8)}),
    _rccl(2, {"tree": (1.5, 1.5, 4.5), "ring": (1.5, 1.5, 4.5), "collnet_direct": (0.0, 0.0, 4.5),
              "collnet_chain": (0.0, 0.0, 4.5)},
          {"tree": (27.9, 27.9, 15.8), "ring": (12.1, 12.1, 68.8), "collnet_direct": (0.0, 0.0, 15.8),
           "collnet_chain": (0.0, 0.0, 15.8)}),
    _rccl(3, {"tree": (0.8, 0.0, 2.5), "ring": (0.8, 0.0, 3.6), "collnet_direct": (0.0, 0.0, 0.8),
              "collnet_chain": (0.0, 0.0, 0.0)},
          {"tree": (12.5, 0.0, 22.4), "ring": (9.5, 0.0, 19.8), "collnet_direct": (0.0, 0.0, 12.5),
           "collnet_chain": (0.0, 0.0, 0.0)}),
    _rccl(4, {"tree": (0.8, 1.4, 2.5), "ring": (0.8, 2.2, 3.6), "collnet_direct": (0.8, 1.4, 2.5),
              "collnet_chain": (0.8, 1.4, 2.5)},
          {"tree": (32.2, 34.4, 47.6), "ring": (35.4, 87.8, 209.2), "collnet_direct": (0.0, 0.0, 47.6),
           "collnet_chain": (0.0, 0.0, 47.6)}),
    _rccl(5, {"tree": (0.9, 0.0, 2.3), "ring": (0.8, 0.0, 2.1), "collnet_direct": (0.0, 0.0, 0.9),
              "collnet_chain": (0.0, 0.0, 0.0)},
          {"tree": (10.5, 0.0, 25.0), "ring": (9.5, 0.0, 320.0), "collnet_direct": (0.0, 0.0, 10.5),
           "collnet_chain": (0.0, 0.0, 0.0)}),
)


def table(library: str, rccl_tuning_model: int = 0) -> TuningTable:
    """The latency table of ``library`` (``nccl``, ``rccl``; RCCL's per platform)."""
    if library == "nccl":
        return NCCL
    if library == "rccl":
        if not 0 <= rccl_tuning_model < len(RCCL_MODELS):
            raise ValueError(f"rccl_tuning_model {rccl_tuning_model}: RCCL has tuning models 0..{len(RCCL_MODELS) - 1}")
        return RCCL_MODELS[rccl_tuning_model]
    raise ValueError(f"library {library!r} has no tuning table (nccl or rccl)")


def model_latency_us(library: str, collective: str, algorithm: str, protocol: str, link: str, n_ranks: int,
                     rccl_tuning_model: int = 0) -> float:
    """The latency term the library's tuning model gives one collective on ``n_ranks`` GPUs of one node (module
    doc): ring reduce-scatter / all-gather / all-reduce, tree all-reduce. Raises ValueError for others."""
    t = table(library, rccl_tuning_model)
    if collective not in TUNED_COLLECTIVES:
        raise ValueError(f"{collective}: the tuning model times {', '.join(TUNED_COLLECTIVES)} (and broadcast, reduce)")
    if n_ranks < 2:
        raise ValueError(f"n_ranks {n_ranks}: a collective needs 2 or more")
    nsteps = 2 * (n_ranks - 1) if collective == "all_reduce" else n_ranks - 1
    if algorithm == "ring":
        return t.base_us("ring", protocol) + nsteps * t.hw_us(link, "ring", protocol)
    if algorithm == "tree" and collective == "all_reduce":
        return t.base_us("tree", protocol) + 2 * (n_ranks - 1) * t.hw_us(link, "tree", protocol)
    raise ValueError(f"{algorithm} {collective}: only ring collectives and the tree all-reduce are composed here")


class CollectiveLatencyConfig(Model):
    """A collective's fixed latencies (module doc): the software start-up and the library's tuning-model latencies."""

    software_ns: float = F(
        5000.0, unit="ns",
        desc="the host side of a collective's start-up, outside the library's tuning model: framework and library "
             "enqueue, kernel launch, rank synchronisation (skew); every GPU waits it, then the library's base "
             "latency, before its first op",
        source="assumption: a few us per collective for host enqueue, kernel launch and rank synchronisation; not "
               "fitted (configs/systems/h200-4gpu.yaml sets 21755 ns, fitted to "
               "experiments/validation/reduce_scatter_4gpu.csv (6 rows))", ge=0)
    library: Literal["none", "nccl", "rccl"] = F(
        "none", unit="enum",
        desc="the collective library whose tuning-model latencies the kernel pays: its base latency "
             "baseLat[RING][protocol] joins the start-up of a reduce-scatter, all-gather or all-reduce (not of an "
             "all-to-all: send/recv, which the model does not time); under protocol nccl_simple its "
             "hwLat[link][RING][SIMPLE] is each hop's latency; none: neither",
        source=f"{NCCL_TUNING_SRC} baseLatencies, hwLatencies; {RCCL_TUNING_SRC} baseLat, rcclTuningModel[].hwLat "
               "(t3sim/config/collective_latency.py); default none: the T3 paper simulates the reduce-scatter "
               "kernel alone (Sec. 5.1.1)")
    protocol: Literal["simple", "ll", "ll128"] = F(
        "simple", unit="enum",
        desc="the library protocol whose base latency the kernel pays (the tables' column); the data path is "
             "collective.protocol's in every case (nccl_simple needs simple; the steps protocol is no library "
             "protocol's data path)",
        source="NCCL/RCCL run large collectives with Simple, small ones with LL/LL128 (the protocol of least "
               f"modelled time: {NCCL_TUNING_SRC} ncclTopoGetAlgoTime)")
    link: Literal["nvlink", "pci", "net"] = F(
        "nvlink", unit="enum",
        desc="the hwLat row: the hardware class of the GPUs' path (NCCL_HW_NVLINK, _PCI, _NET; RCCL counts xGMI "
             "as NVLink); sets protocol nccl_simple's hop latency with a library (the steps protocol has no "
             "per-hop latency besides the links')",
        source=f"{NCCL_TUNING_SRC} ncclTopoTuneModel: intraHw = NCCL_HW_NVLINK for an NVLink path, else NCCL_HW_PCI; "
               "NCCL_HW_NET between nodes")
    rccl_tuning_model: int = F(
        0, unit="count",
        desc="library rccl: the rcclTuningModel index (hwLat table) RCCL uses on the platform; read only with "
             "protocol nccl_simple (hop latency)",
        source="ROCm/rccl src/graph/rome_models.cc: each known platform's options set tuning=<i> (8x MI300X "
               "rome_model_79: 5); topologies it does not know keep 0", ge=0, le=len(RCCL_MODELS) - 1)

    def base_latency_ns(self, collective: str) -> float:
        """The library's base latency (ns) a ``collective`` pays at its start: baseLat[RING][protocol], or 0 (no
        library; an all-to-all). t3sim's ring and direct algorithms both take the Ring row: the libraries run
        reduce-scatter, all-gather and all-reduce as rings over channels on any single-node topology."""
        if self.library == "none" or collective not in TUNED_COLLECTIVES:
            return 0.0
        return table(self.library, self.rccl_tuning_model).base_us("ring", self.protocol) * 1e3

    def startup_ns(self, collective: str) -> float:
        """What every GPU waits (ns) before its first op of ``collective``: software plus the library's base latency."""
        return self.software_ns + self.base_latency_ns(collective)

    @property
    def hop_latency_ns(self) -> float | None:
        """Protocol nccl_simple: one Simple hop's latency (ns), hwLat[link][RING][SIMPLE]; None without a library."""
        if self.library == "none":
            return None
        return table(self.library, self.rccl_tuning_model).hw_us(self.link, "ring", "simple") * 1e3
