"""benchmarks/memreplay.py (the memory-only replay of docs/performance.md): a recorded point replays with the
recording's completions and statistics, and a recording with a call missing is reported, not timed silently."""

import pickle

from tests.conftest import REPO, load_script

memreplay = load_script("benchmarks/memreplay.py")


def test_a_recorded_point_replays_exactly(tmp_path, capsys):
    pkl = tmp_path / "t3.pkl"
    memreplay.main(["record", str(REPO / "configs/experiments/default.yaml"), str(pkl), "--set", "scheme.kind=t3",
                    "--set", "workload.tokens=128"])
    assert memreplay.main(["replay", str(pkl), "--reps", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("mismatches 0, statistics equal to the recording") == 2
    (system, a, k), calls, digest = pickle.loads(pkl.read_bytes())
    i = next(j for j, c in enumerate(calls) if c[0] == "submit" and len(c[1][1]) > 1)
    calls = calls[:i] + calls[i + 1:]  # one submission lost
    pkl.write_bytes(pickle.dumps(((system, a, k), calls, digest)))
    assert memreplay.main(["replay", str(pkl)]) == 1
    assert "DIFFER from the recording" in capsys.readouterr().out
