"""One measured row as a task ``t3sim validate`` spreads over processes: what it simulates and what it weighs."""

from __future__ import annotations

from t3sim.validation import overlap, rows
from t3sim.validation.rows import MIB, SimOutcome


def simulate_row(task) -> SimOutcome:
    """One measured row, ``task = (kind, system, fields, where)`` (module-level, so worker processes can run
    it): a collective, a GEMM (:mod:`t3sim.validation.rows`), or an overlap column
    (:mod:`t3sim.validation.overlap`)."""
    kind, system, row, where = task
    if kind == "overlap":
        return overlap.simulate_overlap_row(system, row, where)
    if kind == "collective":
        return rows.simulate_collective_row(system, row["collective"], row["gpus"], row["size_mb"], row["dtype"],
                                            where)
    return rows.simulate_gemm_row(system, row["M"], row["N"], row["K"], row["dtype"], where)


def row_cost(kind: str, f: dict) -> float:
    """A row's weight for scheduling (largest first) and progress: its bytes (collective) or FLOPs (GEMM; an
    overlap program -- GEMM and collective on 4 GPUs -- counts as three GEMMs)."""
    if kind == "collective":
        return float(f["size_mb"]) * MIB
    scale = 3 if f.get("what") in overlap.PROGRAMS else 1
    return 2.0 * f["M"] * f["N"] * f["K"] * scale
