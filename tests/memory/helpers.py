"""Shared helpers for the memory tests."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import strategies as st

from t3sim.config import SystemConfig
from t3sim.memory import MemorySystem
from t3sim.memory import timing as T
from t3sim.memory.checker import check
from t3sim.system import simulate as simulate_run

from tests.system.helpers import exp


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


def draw_controller(draw) -> dict:
    """A ``memory_controller`` section drawn by hypothesis (``draw``): write drain, frontend latency, queue sizes,
    write starvation bound, admissions per cycle and page policy (the caller adds the arbitration)."""
    return {
        "write_drain": draw(st.sampled_from(["watermark", "drain_when_full"])),
        "frontend_latency_gpu_cycles": draw(st.sampled_from([0, 100])),
        "read_queue_entries": draw(st.sampled_from([4, 16, 64])),
        "write_queue_entries": draw(st.sampled_from([4, 16, 64])),
        "write_starvation_limit_cycles": draw(st.sampled_from([50, 2000])),
        "admissions_per_cycle": draw(st.sampled_from([1, 2])),
        "page_policy": draw(st.sampled_from(["open", "closed", "closed_adaptive"])),
    }


def draw_refresh(draw, refis) -> dict:
    """An ``hbm`` section's refresh, drawn by hypothesis: tREFI from ``refis`` and, half the time, per-bank refresh
    (the HBM3 rule set, which has it, with a short and a long tRFCpb)."""
    timing = {"tREFI_nCK": draw(st.sampled_from(refis))}
    if not draw(st.booleans()):
        return {"timing": timing}
    timing.update(tPPD_nCK=2, tRFCpb_nCK=draw(st.sampled_from([20, 200])), tRREFD_nCK=draw(st.sampled_from([3, 8])))
    return {"standard": "HBM3", "refresh": "per_bank", "timing": timing}


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


def bank_group_addrs(cfg, bank_groups, n: int) -> np.ndarray:
    """``n`` accesses in one row of bank 0 of each listed bank group, interleaved over the groups (``cfg``: one
    channel, no XOR hash, so addresses place accesses exactly; checked)."""
    A = cfg.hbm.access_size_B
    cols = cfg.hbm.row_size_B // A
    per_bg = [(np.arange(cols) + cols * bg) * A for bg in bank_groups]
    addrs = np.stack(per_bg, axis=1).reshape(-1)[:n]
    m = MemorySystem(cfg).amap.map(addrs)
    assert set(m.bankgroup.tolist()) == set(bank_groups) and len(set(m.row.tolist())) == 1
    return addrs


def steady_columns(ms) -> np.ndarray:
    """The command log's column commands while every bank has its row open and columns left: from the first
    column of the last bank opened to the last column of the first bank to run out."""
    log = ms.command_log()
    col = log[np.isin(log[:, 2], T.COLUMN_CMDS)]
    banks = np.unique(col[:, 3])
    start = max(col[col[:, 3] == b, 0].min() for b in banks)
    end = min(col[col[:, 3] == b, 0].max() for b in banks)
    return col[(col[:, 0] >= start) & (col[:, 0] <= end)]


def assert_clean(ms):
    rep = check(ms.command_log(), ms.hbm)
    assert rep.ok, rep
    return rep


def mixed_batches(seed: int, access_B: int, count: int = 30):
    """``count`` random batches ``(tick, addrs, kind, stream)``: reads, writes and op-and-stores of both streams,
    sequential or scattered accesses of ``access_B`` bytes, up to 300 000 ticks apart."""
    rng = np.random.default_rng(seed)
    batches, tick = [], 0
    for i in range(count):
        tick += int(rng.integers(0, 300_000))
        n = int(rng.integers(4, 90))
        start = int(rng.integers(0, 1 << 16)) * access_B
        addrs = start + rng.integers(0, 256, n) * access_B if i % 2 else start + np.arange(n) * access_B
        batches.append((tick, addrs, ("read", "write", "update")[i % 3], ("compute", "comm")[(i // 3) % 2]))
    return batches


def run_advancing(cfg, batches, mode: str, record: bool):
    """Submit ``batches`` (:func:`mixed_batches`) from the GEMM, advancing the controller to each batch's tick
    first, and run to idle."""
    ms = MemorySystem(cfg, mode=mode, record_commands=record)
    for t, a, k, s in batches:
        ms.advance(t)
        ms.submit(t, a, k, s, "gemm")
    ms.run_until_idle()
    return ms


def fast_and_reference(cfg, batches):
    """:func:`run_advancing` with the reference controller and the fast one (with a command log, and without one:
    the fused pump steps real runs take); asserts the command logs agree and the reference's is legal. Returns
    (reference, fast, fast without a log)."""
    ref, fast, fused = (run_advancing(cfg, batches, "reference", True), run_advancing(cfg, batches, "fast", True),
                        run_advancing(cfg, batches, "fast", False))
    assert np.array_equal(fast.command_log(), ref.command_log())
    assert_clean(ref)
    return ref, fast, fused


def whole_run_stats(*args: str) -> dict:
    """A whole (tiny) system run of the overrides ``args`` under the fast and the reference memory model
    (``simulation.memory_model``): asserts their statistics agree but for the count of simpy events (the fast
    model runs the GEMM in a compiled window, ``simulation.gemm_window``, and looks ahead where the reference one
    cannot); returns the statistics."""
    out = []
    for mode in ("fast", "reference"):
        st = simulate_run(exp(*args, f"simulation.memory_model={mode}")).stats.to_dict()
        st["sim"].pop("events")
        out.append(json.dumps(st, sort_keys=True, default=str))
    assert out[0] == out[1]
    return json.loads(out[0])
