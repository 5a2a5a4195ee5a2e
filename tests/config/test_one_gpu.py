"""One-GPU systems (the h200-1gpu preset for the copy scheme)."""

from __future__ import annotations

import pickle

import pytest

from t3sim.collectives.runner import plan_for_system
from t3sim.config import load_system
from t3sim.errors import InputError
from t3sim.interconnect.topology import build_topology


def test_h200_1gpu_preset_loads():
    s = load_system("configs/systems/h200-1gpu.yaml", [])
    assert s.name == "h200-1gpu" and s.interconnect.num_gpus == 1
    assert s.gpu.num_cus == 132 and s.copy_engine.d2d_path == "sm"  # everything else is h200-4gpu's


@pytest.mark.parametrize("kind", ["ring", "direct", "switch"])
def test_one_gpu_topologies_have_no_gpu_links(kind):
    s = load_system("configs/systems/h200-1gpu.yaml", [f"interconnect.kind={kind}", "interconnect.links_per_gpu=null"])
    g = build_topology(s.interconnect)
    assert not any(isinstance(a, int) and isinstance(b, int) for a, b in g.edges)


def test_collective_on_one_gpu_is_an_input_error():
    s = load_system("configs/systems/h200-1gpu.yaml", [])
    with pytest.raises(InputError, match=r"num_gpus: found 1 GPU for a reduce_scatter; allowed: >= 2"):
        plan_for_system(s, "reduce_scatter", 1024)


def test_input_error_rebuilds_from_args():
    """simpy re-raises a failed process's exception as type(e)(*e.args); pickling does the same."""
    e = InputError("a.b", "x", "y")
    assert str(type(e)(*e.args)) == str(e) == str(pickle.loads(pickle.dumps(e))) == "a.b: found x; allowed: y"
