"""The independent checker accepts legal command streams and flags each kind of violation."""

import numpy as np
import pytest

from t3sim.memory import timing as T
from t3sim.memory.checker import check

from .helpers import run, system


@pytest.fixture(scope="module")
def legal():
    cfg = system(2)
    rng = np.random.default_rng(3)
    ms = run(cfg, [(0, rng.integers(0, 1 << 20, 400) * 64, "read", "compute", "gemm"),
                   (0, rng.integers(0, 1 << 12, 400) * 64, "write", "comm", "dma"),
                   (0, np.arange(400) * 64, "update", "comm", "dma")])
    return cfg, ms.command_log()


def test_legal_stream_has_no_violation(legal):
    cfg, log = legal
    rep = check(log, cfg.hbm)
    assert rep.ok and rep.commands == len(log)


def _first(log, cmd, start=0):
    return start + int(np.flatnonzero(log[start:, 2] == cmd)[0])


def test_moving_a_read_earlier_violates_trcd(legal):
    cfg, log = legal
    bad = log.copy()
    a = _first(bad, T.ACT)
    # the first column command to that bank after its ACT, moved to 1 cycle after the ACT
    for i in range(a + 1, len(bad)):
        if bad[i, 1] == bad[a, 1] and bad[i, 3] == bad[a, 3] and bad[i, 2] in T.COLUMN_CMDS:
            bad[i, 0] = bad[a, 0] + 1
            break
    bad = bad[np.lexsort((np.arange(len(bad)), bad[:, 0], bad[:, 1]))]
    rep = check(bad, cfg.hbm)
    assert any(k.startswith("tRCD") for k in rep.by_constraint), rep


def test_column_to_closed_row_and_double_activate_flagged(legal):
    cfg, log = legal
    bad = np.delete(log, _first(log, T.ACT), axis=0)
    rep = check(bad, cfg.hbm)
    assert "state: column command to a row that is not open" in rep.by_constraint
    dup = np.insert(log, _first(log, T.ACT) + 1, log[_first(log, T.ACT)] + np.array([60, 0, 0, 0, 0]), axis=0)
    dup = dup[np.lexsort((np.arange(len(dup)), dup[:, 0], dup[:, 1]))]
    assert "state: ACT to an open bank" in check(dup, cfg.hbm).by_constraint


def test_synthetic_streams_each_violate_the_named_rule():
    cfg = system(1)
    hb = cfg.hbm
    v = T.resolve(hb).values
    # two column commands in one bank group tCCD_L - 1 apart (bank 0 and bank 1 of group 0)
    log = np.array([[0, 0, T.ACT, 0, 5, ], [v["tRRD"], 0, T.ACT, 1, 5], [100, 0, T.RD, 0, 5],
                    [100 + v["tCCD_L"] - 1, 0, T.RD, 1, 5]], dtype=np.int64)
    assert any(k.startswith("tCCD_L") for k in check(log, hb).by_constraint)
    # op-and-store then a column command to the same group after tCCD_L (< tCCDWL)
    log2 = log.copy()
    log2[2, 2] = T.UPD
    log2[3, 0] = 100 + v["tCCD_L"]
    log2[3, 2] = T.UPD
    assert any(k.startswith("tCCDWL") for k in check(log2, hb).by_constraint)
    log2[3, 0] = 100 + v["tCCDWL"]
    assert check(log2, hb).ok
    # five ACTs tRRD apart to different banks: legal when tFAW = 4 tRRD (Table 1), not when tFAW is longer
    acts = np.array([[i * v["tRRD"], 0, T.ACT, 4 * i % 16 + i // 4, 1] for i in range(5)], dtype=np.int64)
    assert check(acts, hb).ok
    hb20 = system(1, hbm={"timing": {"tFAW_nCK": 4 * v["tRRD"] + 4}}).hbm
    assert list(check(acts, hb20).by_constraint) == ["tFAW (at most 4 ACT per channel)"]
    # refresh with a bank open
    ref = np.array([[0, 0, T.ACT, 0, 1], [1000, 0, T.REF, -1, -1]], dtype=np.int64)
    assert "state: REF with a bank open" in check(ref, hb).by_constraint
    # read right after a write on the channel: write-to-read turnaround
    wr = np.array([[0, 0, T.ACT, 0, 1], [v["tRRD"], 0, T.ACT, 4, 1], [50, 0, T.WR, 0, 1], [52, 0, T.RD, 4, 1]], dtype=np.int64)
    assert any(k.startswith("tWL + tBL + tWTR") for k in check(wr, hb).by_constraint)
