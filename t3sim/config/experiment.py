"""Experiment configuration: system + workload + overlap scheme + simulation settings + sweep."""

from __future__ import annotations

from typing import Any, Dict, List, Literal

from pydantic import field_validator, model_validator

from t3sim.config.ficco import SCHEDULES
from t3sim.config.base import F, Model, check_kind
from t3sim.config.system import SystemConfig
from t3sim.config.workload import WorkloadConfig


class SchemeConfig(Model):
    """Overlap scheme (paper Sec. 5.3): which kernels run, how outputs are mapped, which arbitration applies."""

    kind: str = F("sequential", unit="name", desc="registered overlap scheme (sequential, t3, t3_mca, ideal_gemm_rs_overlap, ideal_rs_nmc, concurrent, chunked, copy, ...)", source="paper Sec. 5.3; issue 12")
    chunks: int = F(4, unit="count", desc="chunked, chunked_dma: GEMM chunks C; each chunk's reduce-scatter is issued when the chunk ends; chunked_dma with workload.direction=ag_gemm: GEMM steps, a multiple of the GPUs N (one step per shard of A, or chunks/N steps per shard); ficco_char: the per-GPU GEMM as C chunks along scheme.chunk_axis (FiCCO Sec. IV-C1: 1, 8, 64); rejected by schemes that do not chunk",
                    source="issue 12; shared/reference/h200/README.md (chunked_decomposition: 4 chunks of M/4 rows); FLUX Sec. 2.2 (ag_gemm: decomposition aligned with the number of devices)", ge=1)
    compute_streams: int = F(1, unit="count",
                             desc="chunked, chunked_dma: streams the chunk GEMMs are issued over, round robin (chunk i on "
                                  "stream i mod S), so consecutive chunks run concurrently where the dispatcher has CUs "
                                  "for them (GPU multiplexing, FLUX Sec. 2.2); ficco with hetero_unfused_1d: the "
                                  "per-piece GEMMs likewise; 1: one compute stream",
                             source="Transformer Engine common/comm_gemm_overlap.h: NVTE_COMM_OVERLAP_MAX_STREAMS = 3 "
                                    "(its split_overlap_rs/_ag issue chunk i's GEMM on _stream_compute[i % 3])", ge=1)
    chunk_axis: Literal["M", "N", "K"] = F(
        "M", unit="enum",
        desc="chunked, chunked_dma: split the GEMM along M (rows of A and C) or N (columns of B and C); ficco_char: M "
             "(row sharding) or K (column sharding: accumulating chunk GEMMs, C += A_i B_i, beta = 1, A and B stored "
             "K-block-major, t3sim/workload/chunks.py); K is rejected by the other schemes",
        source="issue 12 (CoCoNet / Transformer Engine split along the output's rows); FiCCO Sec. IV-C1 (row (M) or "
               "column (K) sharding, column sharding needs accumulative GEMM kernels)")
    launch_first: Literal["gemm", "comm"] = F(
        "gemm", unit="enum", desc="concurrent, copy, ficco_char (char_part=both): which stream launches its kernel first, the GEMM's or the other one (concurrent: the RS; copy: the copy streams; ficco_char: the all-gather step); the GPU dispatches WGs in launch order (t3sim/compute/dispatcher.py)",
        source="issue 12 (a host program issues one stream's work before the other's)")
    comm_cus: int = F(0, unit="count", desc="concurrent, chunked: CUs reserved for the communication kernels: the reduce-scatters' CTAs run only on the last comm_cus CUs and the GEMM's WGs only on the others (0: no reservation, every kernel may use every CU in launch order); the all-gather after them uses every CU",
                      source="paper Sec. 3.2.1, Fig. 6 (72-8 and 64-16 CU splits of an 80-CU GPU); issue 12", ge=0)
    copy_streams: int = F(1, unit="count", desc="copy: streams issuing background copies back to back while the GEMM runs (0: the GEMM alone)",
                          source="issue 12; shared/reference/h200/README.md (gemm_copy_contention: one or two copy streams)", ge=0)
    copy_size_MiB: float = F(256.0, unit="MiB", desc="copy: bytes of each background copy (rounded down to whole 64 B requests)",
                             source="shared/reference/h200/README.md (gemm_copy_contention: 256 MiB device-to-device, 64 MiB host copies)", gt=0)
    copy_direction: Literal["d2d", "h2d", "d2h", "h2d+d2h"] = F(
        "d2d", unit="enum", desc="copy: what each copy stream copies: device to device (an SM copy kernel when system.copy_engine.d2d_path is sm, else a copy engine), host to device or device to host over the host link (copy engines), or h2d+d2h (even streams h2d, odd streams d2h)",
        source="issue 12; shared/reference/h200/README.md (gemm_copy_contention backgrounds d2d1, d2d2, pcie)")

    flux_reduce: Literal["atomic", "pull", "a2a_local"] = F(
        "atomic", unit="enum",
        desc="flux_rs: how the fused GEMM+RS reduces: atomic (each output tile's stores are atomic adds into the owner GPU's "
             "shard, local or over the links), pull (partials stored locally; dedicated WGs on the owner pull the peers' partials "
             "over the links and reduce), a2a_local (write-only all-to-all into per-source slots, then a local reduction kernel)",
        source="FLUX (Chang et al. 2024) Secs. 3.1, 4.2: Write and Reduce branches of Alg. 1, red/atomic instructions, "
               "thread-block-specialised pull reduction")
    flux_swizzle: bool = F(True, unit="bool",
                           desc="flux_rs: shift each GPU's tile coordinates by its rank along the shard axis, so GPUs do not "
                                "write to the same owner at the same time; flux_ag: start each GPU's tile order at its own "
                                "shard's rows, then the rows in the order their copies arrive (false: every GPU runs the "
                                "same tile order)",
                           source="FLUX Sec. 4.1, Figs. 7-8 (tile coordinate swizzling; for AllGather aligned with the "
                                  "signal arrival order)")
    flux_ag_mode: Literal["push", "pull"] = F(
        "push", unit="enum",
        desc="flux_ag: push (each GPU's copy engines write its shard's communication tiles into every peer's gathered "
             "buffer and set the peer's signal) or pull (each GPU's copy engines read the peers' tiles into its own "
             "buffer and set its own signal)",
        source="FLUX Alg. 3, Secs. 3.2, 4.3 (pull- and push-based DataTransfer, a tuning knob)")
    flux_ag_copy_streams: int = F(
        0, unit="count",
        desc="flux_ag: host streams the copies are issued on, round robin in topology order; a stream's copies run one "
             "after another (CUDA stream order), so with 1 the tiles arrive one by one in the order the tile swizzle "
             "expects; 0: every copy on a stream of its own (all issued at the kernel's launch, queued FIFO on "
             "system.copy_engine.engines); explicit mode only unless 0",
        source="FLUX Alg. 3 (one host loop of DataTransfer, SetSignal per tile) and Sec. 4.3 (signals set with "
               "cuStreamWriteValue on a stream); the paper does not say how many streams: assumption", ge=0)
    flux_comm_tile_rows: int = F(
        0, unit="count",
        desc="flux_ag: rows of A per communication tile (one copy and one signal each); 0: the shard's M/N rows; "
             "otherwise a divisor of M/N from the GEMM's tile_m up to M/N",
        source="FLUX Sec. 4.3 (communication tile size, tuned from M/N down to the GEMM tile; Fig. 10)", ge=0)
    flux_pull_ctas: int = F(8, unit="count",
                            desc="flux_rs with flux_reduce=pull: dedicated pull-and-reduce CTAs per GPU, resident beside the "
                                 "GEMM's WGs for the whole fused kernel",
                            source="assumption: FLUX (Sec. 4.2) does not publish how many thread blocks it specialises for "
                                   "the pull reduction", gt=0)

    ficco_schedule: Literal[SCHEDULES] = F(
        "uniform_fused_1d", unit="enum",
        desc="ficco: which FiCCO schedule runs the AllGather+GEMM: uniform_fused_1d (every step gathers its N row "
             "pieces, local one included, into one GEMM, then scatters the output rows), hetero_fused_1d (the local "
             "shard's GEMM first, then one GEMM per step over the N-1 gathered remote pieces, scattered), "
             "hetero_unfused_1d (the local shard's GEMM, then one GEMM per remote piece, in place: no gather or "
             "scatter), uniform_fused_2d (K-sharded: every step gathers its N column blocks and runs an accumulating "
             "GEMM over the whole M rows); t3sim/schemes/ficco.py states the reading of each",
        source="FiCCO Sec. V-A, V-B (Fig. 11(b), lost: the reading is in t3sim/schemes/ficco.py)")
    ficco_comm: Literal["dma", "rccl"] = F(
        "dma", unit="enum",
        desc="ficco: what moves each step's pieces: dma (copy-engine copies, hipMemcpyDtoDAsync) or rccl (a CU-driven "
             "collective per step, FiCCO-rccl: t3sim/schemes/ficco_rccl.py); ficco_char: the same for its all-gather "
             "(rccl: one CU-driven all_gather collective per step)",
        source="FiCCO Secs. IV-B1, IV-D1, VI-E")
    char_part: Literal["gemm", "comm", "both"] = F(
        "gemm", unit="enum",
        desc="ficco_char: what runs: gemm (the per-GPU GEMM as scheme.chunks chunks back to back, no communication: "
             "GEMM DIL), comm (the all-gather of A alone, no GEMM: communication DIL), both (the GEMM chunks on one "
             "stream beside the all-gather steps on others, launched together: CIL)",
        source="FiCCO Secs. IV-C1, IV-C2, IV-D")
    char_comm_pattern: Literal["a2a", "p2p"] = F(
        "a2a", unit="enum",
        desc="ficco_char: how the all-gather moves A: a2a (FiCCO: in each step every GPU sends 1/char_comm_steps of "
             "its shard to all N-1 peers at once) or p2p (shard-based overlap, PyTorch AsyncTP / chunked_dma: every "
             "GPU sends its whole shard to one peer at a time, peers r+1, r+2, ... one after another; copy engines only)",
        source="FiCCO Secs. III-A, IV-C2, IV-D1 (shard-based overlap CIL), VI-B (7x communication slowdown)")
    char_comm_steps: int = F(
        1, unit="count",
        desc="ficco_char with char_comm_pattern=a2a: steps the all-gather is cut into (1: the whole all-gather at "
             "once; N: FiCCO's steps, 'collective size scaled down 8-way for eight GPU system'); p2p: 1 only",
        source="FiCCO Secs. III-A, IV-C2", ge=1)
    char_pieces: Literal["all", "first"] = F(
        "all", unit="enum",
        desc="ficco_char: run every GEMM chunk and every all-gather step (p2p: every peer) back to back, or only the "
             "first of each (with char_part=both: one M/N-row GEMM shard beside one step, FiCCO Sec. IV-D's CIL unit)",
        source="FiCCO Sec. IV-D1 ('8-way M-sharded GEMM concurrently with RCCL or DMA-based all-gather')")

    fused_library_registers_per_thread: int = F(
        16, unit="count",
        desc="fused_gemv_ar, fused_emb_a2a: 32-bit VGPRs per thread the GPU-initiated communication library's device code adds to the "
             "fused kernel (its occupancy, and so its persistent grid, is computed with them; the statistic "
             "fused.occupancy_reduction compares it with the original kernel's)",
        source="assumption: neither the fused-collective paper (Sec. III-C: ROC_SHMEM calls 'consume GPU registers', 12.5 % "
               "lower occupancy for its embedding kernel) nor rocSHMEM publishes a register count; a context handle, "
               "symmetric-heap addresses and a few 64-bit loop values", ge=0)
    fused_put_api_latency_ns: float = F(
        100.0, unit="ns",
        desc="fused_gemv_ar, fused_emb_a2a: time a WG spends in each GPU-initiated library call it makes (a ready-flag put, a fence), "
             "besides the wait the call implies (a fence's wait for its stores to land is simulated)",
        source="assumption: the paper names the API latency (Sec. III-C) without a value; ~170 CU cycles at 1.7 GHz of "
               "library code per call", ge=0)
    fused_bookkeeping_ns: float = F(
        120.0, unit="ns",
        desc="fused_gemv_ar, fused_emb_a2a: time a WG spends after each logical WG on completion tracking (setting its WG_Done bit and "
             "testing whether it completed its slice)",
        source="assumption: the paper names the bookkeeping (Sec. III-C, 'setting WG_Done flags') without a value; one "
               "L2 atomic round trip (~200 L2 cycles at 1.7 GHz)", ge=0)
    fused_comm_aware: bool = F(
        True, unit="bool",
        desc="fused_gemv_ar, fused_emb_a2a: communication-aware order (each persistent WG computes its tiles owned by peers first, "
             "owners r+1, r+2, ..., its own last) or communication-oblivious (tiles in index order; explicit mode "
             "only, as it breaks the GPUs' rotation symmetry)",
        source="fused-collective paper Secs. III-A ('Communication-aware Scheduling'), III-B, IV-C (Fig. 14)")
    fused_slice_bags: int = F(
        32, unit="count",
        desc="fused_emb_a2a: pooled vectors (bags, one logical WG each) per slice: the unit of completion tracking and "
             "of one ready flag (consecutive samples of one table, all kept by one GPU)",
        source="fused-collective paper Secs. IV-A ('a cluster of 32 logical WGs compute an output slice'), IV-C "
               "('slice size of 32 embeddings')", gt=0)

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        return check_kind("scheme", v)


class SamplingConfig(Model):
    """Sampled simulation: ``waves`` (t3sim/sampling/plan.py), detailed runs of the first GEMM waves, the rest
    advanced at the measured steady-state per-wave rates; ``tables`` (t3sim/sampling/tables.py), detailed
    runs of an embedding-bag layer's first tables, the rest at the measured per-table rates. ``tolerance_pct``
    applies to both; the ``*_waves`` fields only with ``waves``, the ``*_tables`` fields only with ``tables``."""

    mode: Literal["off", "waves", "tables"] = F(
        "off", unit="enum",
        desc="off: simulate the whole workload in detail; waves: simulate the workload cut to its first rows "
             "(about detail_waves/4, /2 and detail_waves GEMM waves) in detail, check steady state, and advance "
             "the rest at the measured rates: the GEMM phase at the largest run's steady wave time, every other "
             "additive statistic on the line through the two larger runs (t3sim/sampling/plan.py); tables: an "
             "embedding-bag layer cut to detail_tables/4, /2 and detail_tables tables per GPU, every additive "
             "statistic on the line through the two larger runs once the per-table rates agree "
             "(t3sim/sampling/tables.py)",
        source="issue 17; TBPoint (Huang et al., IISWC'14), Photon (Liu et al., MICRO'23), PKA (Baddouh et al., "
               "MICRO'21, Accel-Sim's kernel sampling): simulate until steady state, project the rest")
    detail_waves: int = F(
        8, unit="count",
        desc="GEMM waves (stages: WG slots' worth of WGs) the largest of the three first detailed runs holds at "
             "least (the others about a quarter and a half of it); a workload too small for them is simulated whole",
        source="assumption: the Table 1 sub-layers' GEMM waves settle after the first (docs/performance.md, "
               "sampled simulation: wave times within about 1 % from the second wave on)", ge=2)
    window_waves: int = F(
        3, unit="count", desc="the steady-state criterion compares the mean of the last window_waves complete waves "
                              "of the larger detailed run with the mean of the window_waves before them",
        source="assumption: the wave period of a row-major GEMM (lcm(tiles_n, stage_wgs) / stage_wgs waves) is at "
               "most a few waves on the Table 1 sub-layers; 2 x 3 windows fit in detail_waves = 8 after the first "
               "wave", ge=1)
    tolerance_pct: float = F(
        2.0, unit="ratio",
        desc="steady state: the largest run's last two windows' mean wave times, and the two larger runs' last "
             "windows, within tolerance_pct percent of each other, and every communication phase extrapolated from "
             "either pair of detailed runs within tolerance_pct percent of the total; otherwise the detailed runs "
             "double (up to max_detail_waves, or until they would hold the whole workload: then it is simulated "
             "whole) and the result says the criterion failed",
        source="issue 17 (phase times within 2 % of full simulation)", gt=0, le=100)
    max_detail_waves: int = F(
        64, unit="count", desc="the most waves the larger detailed run may grow to while the criterion fails",
        source="assumption: bounds a sampled run's cost at about 2 x 64 detailed waves", ge=2)
    detail_tables: int = F(
        16, unit="count",
        desc="tables per GPU of the largest of the three first detailed runs of sampling.mode tables (the others a "
             "quarter and a half of it); a layer of no more tables is simulated whole",
        source="assumption: on the fused-a2a node at batch 256 the baseline's layer extrapolated from 4, 8 and 16 "
               "tables is within 0.3 % of a whole 256-table run (t3sim/sampling/tables.py); the criterion "
               "decides whether more are needed", ge=4)
    max_detail_tables: int = F(
        128, unit="count", desc="the most tables per GPU the larger detailed run of sampling.mode tables may grow "
                                "to while the criterion fails",
        source="assumption: bounds a sampled run's cost at about 2 x 128 detailed tables (the paper's layers have "
               "256 per GPU)", ge=4)

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_off(cls, v):
        return "off" if v is False else v  # YAML 1.1 reads a bare `off` as false

    @model_validator(mode="after")
    def _off_means_off(self) -> "SamplingConfig":
        if self.mode == "off":
            for name, field in type(self).model_fields.items():
                if name != "mode" and getattr(self, name) != field.default:
                    raise ValueError(f"sampling.{name}={getattr(self, name)!r} with sampling.mode=off, which does "
                                     f"not use it; allowed: sampling.{name} only with sampling.mode="
                                     f"{'tables' if name.endswith('_tables') else 'waves'}")
        if self.mode != "off":  # a field of the other sampling mode: not used by this one
            other = "tables" if self.mode == "waves" else "waves"
            for name, field in type(self).model_fields.items():
                if name.endswith(f"_{other}") and getattr(self, name) != field.default:
                    raise ValueError(f"sampling.{name}={getattr(self, name)!r} with sampling.mode={self.mode}, which "
                                     f"does not use it; allowed: sampling.{name} only with sampling.mode={other}")
        if self.max_detail_tables < self.detail_tables:
            raise ValueError(f"sampling.max_detail_tables={self.max_detail_tables} below sampling.detail_tables="
                             f"{self.detail_tables}; allowed: at least detail_tables")
        if self.max_detail_waves < self.detail_waves:
            raise ValueError(f"sampling.max_detail_waves={self.max_detail_waves} below sampling.detail_waves="
                             f"{self.detail_waves}; allowed: at least detail_waves")
        if 2 * self.window_waves >= self.detail_waves:
            raise ValueError(f"sampling.window_waves={self.window_waves} with detail_waves={self.detail_waves}; "
                             "allowed: 2 x window_waves < detail_waves (two windows after the first wave)")
        return self


class SimulationConfig(Model):
    """How to simulate (not what)."""

    mode: Literal["homogeneous", "explicit"] = F(
        "homogeneous", unit="enum",
        desc="homogeneous: one GPU in detail, neighbours' traffic generated at its own rate (paper Sec. 5.1.1, Fig. 13); explicit: every GPU and link",
        source="paper Sec. 5.1.1; issue 4")
    seed: int = F(0, unit="count", desc="seed of the simulation's single random generator", source="user", ge=0,
                  descriptive="no model draws a random number (every run is deterministic: same config, same stats.json); the seed is recorded with the results")
    memory_model: Literal["fast", "reference"] = F(
        "fast", unit="enum", desc="fast: batched, compiled DRAM/MC inner loop; reference: straightforward per-command model the tests hold the fast one against",
        source="issue 3",
        descriptive="two implementations of one model: they give identical statistics (tests/memory/test_fast_vs_reference.py, test_page_policy.py); the choice changes only the wall time")
    functional_data: bool = F(False, unit="bool", desc="memory keeps real values and op-and-store really adds (for correctness checks)", source="issue 3")
    gemm_window: bool = F(
        True, unit="bool",
        desc="run a GEMM kernel that has its GPU to itself (a one-stream program: Sequential, the ideal schemes) in compiled windows: its WGs, L2, fill table and memory controllers advance in one compiled event loop that mirrors the simpy events of the reference path (t3sim.window.gemm_window); false: the simpy WG processes everywhere (the reference)",
        source="issue 17",
        descriptive="two implementations of one model: they give identical statistics except sim.events (tests/compute/test_gemm_window.py); the choice changes only the wall time")
    memory_lookahead: bool = F(
        True, unit="bool",
        desc="let each memory pump step simulate the controllers up to one frontend latency (memory_controller.frontend_latency_gpu_cycles) ahead of now, the span no later request can reach (t3sim.memory.system, 'Lookahead'), where nothing could observe it (an enqueue hook, T3's tracker, sees the admissions in the same order either way; a producer-kernel arbitration event, T3-MCA's, reaches the controllers a frontend latency after it happens, past any lookahead); false: pump to now only (the reference cadence)",
        source="issue 17",
        descriptive="two cadences of one model: they give identical statistics except sim.events (tests/memory/test_lookahead.py); the choice changes only the wall time")
    watchdog_idle_ns: float = F(
        1.0e6, unit="ns", desc="report a deadlock when no component makes progress for this long while work remains",
        source="assumption: far longer than any legitimate idle gap (link latency 500 ns)", gt=0)
    sampling: SamplingConfig = F(SamplingConfig, unit="mapping",
                                 desc="sampled simulation of workloads too large to simulate whole (off by default)",
                                 source="issue 17")


class SweepConfig(Model):
    """Sweep axes. ``grid`` takes the cross product of its axes; ``cases`` lists points explicitly.

    Keys are dotted override paths (``workload.tp``); with both, every case is
    crossed with the grid.
    """

    grid: Dict[str, List[Any]] = F({}, unit="mapping", desc="axis path -> values (cross product)", source="user",
                                   descriptive="says which runs an experiment makes (each point is a run with its own config); not a parameter of a run")
    cases: List[Dict[str, Any]] = F([], unit="list", desc="explicit points, each a mapping of path -> value", source="user",
                                    descriptive="says which runs an experiment makes (each point is a run with its own config); not a parameter of a run")

    @field_validator("grid")
    @classmethod
    def _nonempty(cls, v: Dict[str, List[Any]]) -> Dict[str, List[Any]]:
        for k, vals in v.items():
            if not vals:
                raise ValueError(f"sweep axis {k!r} has no values")
        return v


class ExperimentConfig(Model):
    """One experiment: a base point and optional sweep axes."""

    name: str = F(..., unit="name", desc="experiment name: results go to results/<name>/", source="user", pattern=r"^[A-Za-z0-9_.-]+$",
                  descriptive="names the results directory; not simulated")
    description: str = F("", unit="text", desc="what question or figure this answers", source="user",
                         descriptive="free text for readers; not simulated")
    system: SystemConfig = F(SystemConfig, unit="mapping", desc="the simulated system (usually `base: systems/<name>.yaml`)", source="configs/systems")
    workload: WorkloadConfig = F(..., unit="mapping", desc="what runs", source="paper Table 2")
    scheme: SchemeConfig = F(SchemeConfig, unit="mapping", desc="overlap scheme", source="paper Sec. 5.3")
    simulation: SimulationConfig = F(SimulationConfig, unit="mapping", desc="simulation settings", source="user")
    sweep: SweepConfig = F(SweepConfig, unit="mapping", desc="sweep axes (empty: a single point)", source="user")

    @model_validator(mode="after")
    def _gpus_match_tp(self) -> "ExperimentConfig":
        n = self.system.interconnect.num_gpus
        if self.workload.tp != n and n != 1:
            raise ValueError(
                f"workload.tp={self.workload.tp} but system.interconnect.num_gpus={n}: "
                "the tensor-parallel group spans all simulated GPUs, so they must be equal "
                "(or num_gpus 1: one GPU's GEMM of the sub-layer, for schemes without collectives)")
        return self
