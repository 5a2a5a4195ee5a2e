"""Experiment configuration: system + workload + overlap scheme + simulation settings + sweep."""

from __future__ import annotations

from typing import Any, Dict, List, Literal

from pydantic import SerializeAsAny, field_validator, model_validator

from t3sim.config.base import F, Model
from t3sim.config.scheme import SchemeConfig, base_of_sweep, resolve
from t3sim.config.system import SystemConfig
from t3sim.config.workload import WorkloadConfig


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
        source="TBPoint (Huang et al., IISWC'14), Photon (Liu et al., MICRO'23), PKA (Baddouh et al., "
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
        source="assumption: phase times within 2 % of full simulation (docs/performance.md, Sampled simulation)",
        gt=0, le=100)
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
        source="paper Sec. 5.1.1 (homogeneous); explicit: t3sim extension")
    seed: int = F(0, unit="count", desc="seed of the random draws: the embedding-bag layers' indices (per GPU, [seed, gpu]); the only random input of the model, so the same config and seed give the same stats.json",
                  source="user", ge=0)
    memory_model: Literal["fast", "reference"] = F(
        "fast", unit="enum", desc="fast: batched, compiled DRAM/MC inner loop; reference: straightforward per-command model the tests hold the fast one against",
        source="t3sim model choice (t3sim/memory/README.md)",
        descriptive="two implementations of one model: they give identical statistics (tests/memory/test_fast_vs_reference.py, test_page_policy.py); the choice changes only the wall time")
    functional_data: bool = F(False, unit="bool", desc="memory keeps real values and op-and-store really adds (for correctness checks)",
                              source="t3sim model choice")
    gemm_window: bool = F(
        True, unit="bool",
        desc="run a GEMM kernel that has its GPU to itself (a one-stream program: Sequential, the ideal schemes) in compiled windows: its WGs, L2, fill table and memory controllers advance in one compiled event loop that mirrors the simpy events of the reference path (t3sim.window.gemm_window); false: the simpy WG processes everywhere (the reference)",
        source="t3sim model choice (simulator speed)",
        descriptive="two implementations of one model: they give identical statistics except sim.events (tests/compute/test_gemm_window.py); the choice changes only the wall time")
    memory_lookahead: bool = F(
        True, unit="bool",
        desc="let each memory pump step simulate the controllers up to one frontend latency (memory_controller.frontend_latency_gpu_cycles) ahead of now, the span no later request can reach (t3sim.memory.system, 'Lookahead'), where nothing could observe it (an enqueue hook, T3's tracker, sees the admissions in the same order either way; a producer-kernel arbitration event, T3-MCA's, reaches the controllers a frontend latency after it happens, past any lookahead); false: pump to now only (the reference cadence)",
        source="t3sim model choice (simulator speed)",
        descriptive="two cadences of one model: they give identical statistics except sim.events (tests/memory/test_lookahead.py); the choice changes only the wall time")
    watchdog_idle_ns: float = F(
        1.0e6, unit="ns", desc="report a deadlock when no component makes progress for this long while work remains",
        source="assumption: far longer than any legitimate idle gap (link latency 500 ns)", gt=0)
    sampling: SamplingConfig = F(SamplingConfig, unit="mapping",
                                 desc="sampled simulation of workloads too large to simulate whole (off by default)",
                                 source="TBPoint, Photon, PKA (see sampling.mode); accuracy: docs/performance.md "
                                        "(Sampled simulation)")


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
    scheme: SerializeAsAny[SchemeConfig] = F(SchemeConfig, unit="mapping",
                                             desc="overlap scheme: its kind and that scheme's options",
                                             source="paper Sec. 5.3")
    simulation: SimulationConfig = F(SimulationConfig, unit="mapping", desc="simulation settings", source="user")
    sweep: SweepConfig = F(SweepConfig, unit="mapping", desc="sweep axes (empty: a single point)", source="user")

    @model_validator(mode="before")
    @classmethod
    def _sweep_sets_scheme(cls, data: Any) -> Any:
        """A sweep that sets the scheme may leave options in the base's scheme section that only its points'
        kinds take: the base keeps its own kind's (t3sim.config.scheme.base_of_sweep)."""
        if isinstance(data, dict) and "scheme" in data:
            data = {**data, "scheme": base_of_sweep(data["scheme"], data.get("sweep"))}
        return data

    @field_validator("scheme", mode="before")
    @classmethod
    def _scheme_options(cls, v: Any) -> Any:
        return resolve(v)

    @model_validator(mode="after")
    def _gpus_match_tp(self) -> "ExperimentConfig":
        n = self.system.interconnect.num_gpus
        if self.workload.tp != n and n != 1:
            raise ValueError(
                f"workload.tp={self.workload.tp} but system.interconnect.num_gpus={n}: "
                "the tensor-parallel group spans all simulated GPUs, so they must be equal "
                "(or num_gpus 1: one GPU's GEMM of the sub-layer, for schemes without collectives)")
        return self
