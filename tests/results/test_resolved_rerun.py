"""The resolved config saved beside the stats (``results/<experiment>/<hash>/config.yaml``, gem5's config.ini) is an
experiment file of its own: it validates again, hashes to its folder's name and re-runs to byte-identical statistics.

Once it did not for 1159 of the 2625 shipped points: a rule "field X only with Y" rejected X written out
at its default (every GEMM-by-shape, GEMV and embedding point, and the static-threshold MCA sweep points)."""

from __future__ import annotations

import glob

import pytest
import yaml

from t3sim.config import load_experiment
from t3sim.config.sweep import expand
from t3sim.results import config_hash
from t3sim.exec.runner import run_experiment

from tests.conftest import REPO
from tests.system.helpers import tiny_sweep

FILES = sorted(glob.glob(str(REPO / "configs/experiments/*.yaml")) + glob.glob(str(REPO / "experiments/*/experiment.yaml")))


def _distinct_points(path: str, most: int = 6):
    """Up to ``most`` points of ``path`` with distinct scheme kinds, workloads and sweep values (first ones first)."""
    seen, out = set(), []
    for p in expand(path):
        d = p.config.model_dump(mode="json")
        key = (d["scheme"]["kind"], repr(sorted(d["workload"].items(), key=str))[:400])
        if key not in seen:
            seen.add(key)
            out.append(d)
        if len(out) >= most:
            break
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.split("/")[-2] + "/" + p.split("/")[-1])
def test_every_shipped_points_resolved_config_validates_again(path, tmp_path):
    for i, d in enumerate(_distinct_points(path)):
        f = tmp_path / f"{i}.yaml"
        f.write_text(yaml.safe_dump(d))
        again = load_experiment(f).model_dump(mode="json")
        assert config_hash(again) == config_hash(d), f"{path}: point {i} resolved config hashes differently"


def test_a_rule_still_refuses_a_field_given_away_from_its_default(tmp_path):
    """``given`` only lets a default through: a real value of a field the workload does not read is still refused."""
    from t3sim.errors import InputError

    f = tmp_path / "x.yaml"
    f.write_text(f"base: {REPO / 'configs/experiments/fused-gemv.yaml'}\nworkload:\n  tokens: 4096\n")
    with pytest.raises(InputError, match="tokens with workload.gemv"):
        load_experiment(f)


def test_a_saved_config_re_runs_to_identical_statistics(tmp_path):
    src = tmp_path / "tiny.yaml"
    src.write_text(tiny_sweep("rerun", ["t3"]).replace("workload.tokens: [128, 256]", "workload.tokens: [128]"))
    first = run_experiment(src, out=tmp_path / "a")
    saved = first[0].path / "config.yaml"
    again = run_experiment(saved, out=tmp_path / "b")
    assert again[0].path.name == first[0].path.name
    assert (again[0].path / "stats.json").read_bytes() == (first[0].path / "stats.json").read_bytes()
