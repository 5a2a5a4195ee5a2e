"""benchmarks/l2replay.py (the L2-only replay of docs/performance.md): a recorded point replays with the
recording's write-backs and final L2 state, and a recording with a batch missing is reported, not timed silently."""

import pickle

from tests.conftest import REPO, load_script

l2replay = load_script("benchmarks/l2replay.py")


def test_a_recorded_point_replays_exactly(tmp_path, capsys):
    pkl = tmp_path / "t3.pkl"
    l2replay.main(["record", str(REPO / "configs/experiments/default.yaml"), str(pkl), "--set", "scheme.kind=t3",
                   "--set", "workload.tokens=128"])
    assert l2replay.main(["replay", str(pkl), "--reps", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("write-back mismatches 0, final state equal to the recording") == 2
    first, calls, final = pickle.loads(pkl.read_bytes())
    assert len(calls) > 100 and any(c[2] for c in calls) and any(not c[2] for c in calls)  # reads and writes
    i = next(j for j, c in enumerate(calls) if not c[2] and len(c[1]) > 1)
    pkl.write_bytes(pickle.dumps((first, calls[:i] + calls[i + 1:], final)))  # one read batch lost
    assert l2replay.main(["replay", str(pkl), "--reps", "1"]) == 1
    assert "DIFFERS from the recording" in capsys.readouterr().out
