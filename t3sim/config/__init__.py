"""Configuration layer: pydantic models, YAML loader with ``base:`` composition, ``--set`` overrides.

Public API::

    from t3sim.config import load_experiment, load_system, load_config
    exp = load_experiment("configs/experiments/default.yaml", overrides=["workload.tp=8"])
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Tuple, Type

from pydantic import BaseModel

from t3sim.config.base import F, Model
from t3sim.config.gemm_library import GemmLibraryConfig
from t3sim.config.experiment import ExperimentConfig, SimulationConfig, SweepConfig
from t3sim.config.kinds import detect_kind
from t3sim.config.gpu import GPUConfig, L2Config
from t3sim.config.loader import apply_overrides, build, load, load_raw
from t3sim.config.scheme import SchemeConfig
from t3sim.config.memory import AddressMapConfig, ArbitrationConfig, HBMConfig, HBMTimingConfig, MemoryControllerConfig
from t3sim.config.system import CollectiveConfig, DMAConfig, InterconnectConfig, SystemConfig, TrackerConfig
from t3sim.config.workload import DTYPE_BYTES, ModelConfig, WorkloadConfig

__all__ = [
    "F", "Model", "ExperimentConfig", "SchemeConfig", "SimulationConfig", "SweepConfig", "GPUConfig", "L2Config",
    "AddressMapConfig", "ArbitrationConfig", "HBMConfig", "HBMTimingConfig", "MemoryControllerConfig",
    "CollectiveConfig", "DMAConfig", "InterconnectConfig", "SystemConfig", "TrackerConfig", "ModelConfig",
    "WorkloadConfig", "DTYPE_BYTES", "load", "load_raw", "apply_overrides", "build", "load_experiment",
    "load_system", "load_config", "detect_kind", "ROOT_MODELS",
]

#: Top-level config kinds and their models.
ROOT_MODELS: dict[str, Type[BaseModel]] = {
    "experiment": ExperimentConfig,
    "system": SystemConfig,
    "model": ModelConfig,
    "gemm_library": GemmLibraryConfig,
}


def load_config(path: str | Path, overrides: Iterable[str] = ()) -> Tuple[str, BaseModel]:
    """Load any config file; return (kind, validated model)."""
    data, prov = load_raw(path)
    data, prov = apply_overrides(data, prov, overrides)
    kind = detect_kind(data)
    return kind, build(ROOT_MODELS[kind], data, prov, str(path))


def load_experiment(path: str | Path, overrides: Iterable[str] = ()) -> ExperimentConfig:
    """Load and validate an experiment file."""
    return load(ExperimentConfig, path, overrides)


def load_system(path: str | Path, overrides: Iterable[str] = ()) -> SystemConfig:
    """Load and validate a system file."""
    return load(SystemConfig, path, overrides)
