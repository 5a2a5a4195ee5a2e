"""Shared helpers for the memory tests."""

from __future__ import annotations

import numpy as np

from t3sim.config import SystemConfig
from t3sim.memory import MemorySystem
from t3sim.memory import timing as T
from t3sim.memory.checker import check


def system(channels: int = 4, **sections) -> SystemConfig:
    """A SystemConfig with ``channels`` HBM channels and nested overrides (dicts). The controller's frontend
    latency is 0 unless given (a request reaches the controller at its submission cycle, so tests count
    cycles from it); tests/memory/test_frontend_latency.py covers the latency."""
    data = {"hbm": {"channels": channels}, "memory_controller": {"frontend_latency_gpu_cycles": 0}}
    for k, v in sections.items():
        if k in ("hbm", "memory_controller"):
            data[k] = {**data[k], **v}
        else:
            data[k] = v
    return SystemConfig.model_validate(data)


def run(cfg, batches, mode="fast", record=True, functional=False):
    """Submit ``batches`` [(tick, addrs, kind, stream, source)] and run to idle."""
    ms = MemorySystem(cfg, mode=mode, record_commands=record, functional=functional)
    for tick, addrs, kind, stream, source in batches:
        ms.submit(tick, addrs, kind, stream, source)
    ms.run_until_idle()
    return ms


def column_cycles(ms) -> np.ndarray:
    log = ms.command_log()
    return log[np.isin(log[:, 2], T.COLUMN_CMDS), 0]


def assert_clean(ms):
    rep = check(ms.command_log(), ms.hbm)
    assert rep.ok, rep
    return rep
