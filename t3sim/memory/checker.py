"""Independent DRAM timing checker.

Watches a command log (``cycle, unit, command, bank, row`` per row, as
``MemorySystem.command_log()`` returns it) and reports every violated
constraint. It is written from the rules of the configured DRAM standard
(:mod:`t3sim.memory.standards`) and the JEDEC state rules, not from the
schedulers: it compiles the rules itself, rule by rule, keeps its own bank state and checks each command
against the most recent command of each rule's ``prev`` kind in the rule's
scope (for a minimum-distance rule the most recent one is the binding one).

Checked, per unit (independent channel):

* every timing rule of the table and the window rule (tFAW);
* bank state: ACT to a closed bank, PRE to an open bank, RD/WR/UPD to the
  open row, REF with every bank closed (a per-bank REF, which names its bank: that bank closed);
* command buses: at most one row command (ACT/PRE/REF) and one column
  command (RD/WR/UPD) per cycle;
* data bus: data bursts (RD: [c+tCL, c+tCL+tBL), WR/UPD: [c+tWL, c+tWL+tBL))
  never overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import numba as nb
import numpy as np

from t3sim.memory import timing as T

SPECIAL = ("state: ACT to an open bank", "state: PRE to a closed bank", "state: column command to a row that is not open",
           "state: REF with a bank open", "command bus: two row commands in one cycle",
           "command bus: two column commands in one cycle", "data bus: overlapping bursts")


@dataclass
class CheckReport:
    """Violations found: total, per constraint name, and the first few as (log row, constraint)."""

    commands: int
    violations: int
    by_constraint: Dict[str, int] = field(default_factory=dict)
    examples: List[Tuple[int, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.violations == 0


def _compile(values: Dict[str, int], std, refresh: str = "all_bank"):
    prev, nxt, scope, lat, names = [], [], [], [], []
    for r in std.rules_for(refresh):
        prev.append(T.CMD_NAMES.index(r.prev))
        nxt.append(T.CMD_NAMES.index(r.nxt))
        scope.append(T.SCOPES.index(r.scope))
        lat.append(T.evaluate(r.latency, values))
        names.append(f"{r.latency} ({r.prev}->{r.nxt}, {r.scope})")
    w = [(T.CMD_NAMES.index(x.cmd), x.count, T.SCOPES.index(x.scope), T.evaluate(x.window, values)) for x in std.windows]
    for x in std.windows:
        names.append(f"{x.window} (at most {x.count} {x.cmd} per {x.scope})")
    names.extend(SPECIAL)
    a = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    return a(prev), a(nxt), a(scope), a(lat), np.array(w, dtype=np.int64).reshape(-1, 4), names


@nb.njit(cache=True)
def _check(log, nbg, bpg, rp, rn, rs, rl, win, tCL, tWL, tBL, max_examples):  # pragma: no cover - numba
    n = log.shape[0]
    nb_ = nbg * bpg
    nrule = rp.shape[0]
    nwin = win.shape[0]
    base = nrule + nwin
    counts = np.zeros(base + 7, dtype=np.int64)
    ex = np.full((max_examples, 2), -1, dtype=np.int64)
    nex = 0
    NEG = -(1 << 40)
    last = np.full((3, nb_, 6), NEG, dtype=np.int64)  # [scope, node, cmd]
    wmax = 1
    for w in range(nwin):
        wmax = max(wmax, win[w, 1])
    wring = np.full((nwin, nb_, wmax), NEG, dtype=np.int64)
    wpos = np.zeros((nwin, nb_), dtype=np.int64)
    open_row = np.full(nb_, -1, dtype=np.int64)
    bursts = np.full(16, NEG, dtype=np.int64)
    bpos = 0
    cur_unit = -1
    last_row_cyc = NEG
    last_col_cyc = NEG
    for i in range(n):
        c, u, cmd, bank, row = log[i, 0], log[i, 1], log[i, 2], log[i, 3], log[i, 4]
        if u != cur_unit:
            cur_unit = u
            last[:] = NEG
            wring[:] = NEG
            wpos[:] = 0
            open_row[:] = -1
            bursts[:] = NEG
            last_row_cyc = NEG
            last_col_cyc = NEG
        viol = np.zeros(base + 7, dtype=np.bool_)
        # nodes this command touches per scope: REF (bank -1) touches all
        lo = 0 if bank < 0 else bank
        hi = nb_ if bank < 0 else bank + 1
        for k in range(nrule):
            if rn[k] != cmd:
                continue
            for b in range(lo, hi):
                node = 0 if rs[k] == 0 else (b // bpg if rs[k] == 1 else b)
                if c - last[rs[k], node, rp[k]] < rl[k]:
                    viol[k] = True
        for w in range(nwin):
            if win[w, 0] != cmd:
                continue
            for b in range(lo, hi):
                node = 0 if win[w, 2] == 0 else (b // bpg if win[w, 2] == 1 else b)
                oldest = wring[w, node, wpos[w, node]]
                if c - oldest < win[w, 3]:
                    viol[nrule + w] = True
        is_col = cmd == 2 or cmd == 3 or cmd == 4
        if cmd == 0:
            if open_row[bank] >= 0:
                viol[base + 0] = True
        elif cmd == 1:
            if open_row[bank] < 0:
                viol[base + 1] = True
        elif is_col:
            if open_row[bank] != row:
                viol[base + 2] = True
        else:  # REF: every bank closed (all-bank), or its bank (per-bank: bank >= 0)
            for b in range(lo, hi):
                if open_row[b] >= 0:
                    viol[base + 3] = True
        if is_col:
            if c == last_col_cyc:
                viol[base + 5] = True
            last_col_cyc = c
            start = c + (tCL if cmd == 2 else tWL)
            for j in range(16):
                if bursts[j] > NEG and start < bursts[j] + tBL and bursts[j] < start + tBL:
                    viol[base + 6] = True
            bursts[bpos] = start
            bpos = (bpos + 1) % 16
        else:
            if c == last_row_cyc:
                viol[base + 4] = True
            last_row_cyc = c
        for k in range(base + 7):
            if viol[k]:
                counts[k] += 1
                if nex < max_examples:
                    ex[nex, 0] = i
                    ex[nex, 1] = k
                    nex += 1
        # record
        for b in range(lo, hi):
            last[0, 0, cmd] = c
            last[1, b // bpg, cmd] = c
            last[2, b, cmd] = c
        for w in range(nwin):
            if win[w, 0] != cmd:
                continue
            for b in range(lo, hi):
                node = 0 if win[w, 2] == 0 else (b // bpg if win[w, 2] == 1 else b)
                if bank < 0 and win[w, 2] == 0 and b > lo:
                    break
                wring[w, node, wpos[w, node]] = c
                wpos[w, node] = (wpos[w, node] + 1) % win[w, 1]
        if cmd == 0:
            open_row[bank] = row
        elif cmd == 1:
            open_row[bank] = -1
    return counts, ex[:nex]


def check(log: np.ndarray, hbm, max_examples: int = 20) -> CheckReport:
    """Check a command log against the timing rules of ``hbm``'s standard (``hbm.standard``).

    ``log`` must be ordered by unit, then cycle (then issue order within a cycle).
    """
    values = T.timing_values(hbm)
    rp, rn, rs, rl, win, names = _compile(values, T.standard(hbm), hbm.refresh)
    log = np.ascontiguousarray(log, dtype=np.int64).reshape(-1, 5)
    counts, ex = _check(log, hbm.bank_groups, hbm.banks_per_group, rp, rn, rs, rl, win,
                        values["tCL"], values["tWL"], values["tBL"], max_examples)
    by = {}
    for k, v in enumerate(counts):
        if v:
            by[names[k]] = by.get(names[k], 0) + int(v)
    return CheckReport(int(log.shape[0]), int(counts.sum()), by, [(int(i), names[int(k)]) for i, k in ex])
