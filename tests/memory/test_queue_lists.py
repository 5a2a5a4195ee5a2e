"""The fast controller's queues as linked lists (``t3sim.memory.fast.queue_lists``) against a plain model:
after any sequence of admissions and removals, the queue list is the entries in admission order, each
bank list is that bank's entries in admission order, the bank ring holds exactly the banks with entries,
the free list holds every other slot, and same-line counts agree."""

import numpy as np
from hypothesis import given, settings, strategies as st

from t3sim.memory import bookkeeping as BK
from t3sim.memory.fast import queue_lists as QL

NB, CAP = 4, 6


def _walk(Q, q, head, link):
    out, k = [], Q[0, q, head, link]
    while k != head:
        out.append(int(k))
        k = Q[0, q, k, link]
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, NB - 1), st.integers(0, 3), st.integers(0, 100),
                          st.sampled_from([0, 0, 1, 5])), min_size=1, max_size=60))
def test_lists_follow_admission_order(ops):
    """Also with lines past 2^31 (``hi``): lines equal in their low 31 bits are different lines."""
    Q = np.zeros(QL.shape(1, CAP, NB), dtype=np.int64)
    QL.init_queues(Q, NB)
    qcnt = np.zeros((1, 2, NB), dtype=np.int64)
    RQ = np.zeros((BK.NF, 200), dtype=np.int64)
    S = CAP
    model = {0: [], 1: []}  # queue -> [(seq, slot, request)]
    seq = 0
    for add, bank, line, pick, hi in ops:
        q = line % 2
        if add and len(model[q]) < CAP:
            r = seq
            RQ[BK.F_BANK, r], RQ[BK.F_ROW, r], RQ[BK.F_SEQ, r] = bank, line, seq
            RQ[BK.F_LINE, r] = line * NB + bank + (hi << 31)
            free = int(Q[0, q, S + 1 + NB, QL.QF_GN])
            QL.enqueue(0, q, r, 0, RQ, Q, qcnt)
            model[q].append((seq, free, r))
            seq += 1
        elif model[q]:
            seq_, slot, r = model[q].pop(pick % len(model[q]))
            QL.dequeue(0, q, slot, Q, qcnt)
        for qq in (0, 1):
            entries = model[qq]
            assert _walk(Q, qq, S, QL.QF_GN) == [s for _, s, _ in entries]
            for b in range(NB):
                mine = [s for _, s, r in entries if RQ[BK.F_BANK, r] == b]
                assert _walk(Q, qq, S + 1 + b, QL.QF_BN) == mine
                assert qcnt[0, qq, b] == len(mine)
                for ln in {int(RQ[BK.F_LINE, r]) for _, _, r in entries if RQ[BK.F_BANK, r] == b}:
                    n = sum(1 for _, _, r in entries if RQ[BK.F_LINE, r] == ln)
                    assert QL.count_line(0, qq, b, ln, Q, NB, False) == n
                    assert QL.count_line(0, qq, b, ln, Q, NB, True) == 1
            ring = sorted(x - S - 1 for x in _walk(Q, qq, S + 2 + NB, QL.QF_GN))
            assert ring == sorted({int(RQ[BK.F_BANK, r]) for _, _, r in entries})
            free, k = [], Q[0, qq, S + 1 + NB, QL.QF_GN]
            while k >= 0:
                free.append(int(k))
                k = Q[0, qq, k, QL.QF_GN]
            assert sorted(free + [s for _, s, _ in entries]) == list(range(CAP))
            assert all(Q[0, qq, s, QL.QF_REQ] == -1 for s in free)
