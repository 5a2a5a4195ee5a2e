"""One registry for all plug-ins; duplicates raise; unknown kinds are input errors."""

from __future__ import annotations

import numpy as np
import pytest

from t3sim import registry
from t3sim.config.system import InterconnectConfig, SystemConfig
from t3sim.errors import InputError
from t3sim.memory.policies.base import COMM, COMPUTE, NONE


def test_duplicate_raises():
    registry.add("test-cat", "x", object())
    with pytest.raises(registry.DuplicateRegistration):
        registry.add("test-cat", "x", object())


def test_unknown_is_input_error():
    with pytest.raises(InputError) as e:
        registry.get("topology", "hypercube", "interconnect.kind")
    assert "ring" in str(e.value) and "interconnect.kind" in str(e.value)


def test_builtin_plugins():
    """Each built-in name maps to the plug-in that is that thing, not merely to something."""
    assert {"ring", "direct", "switch"} <= set(registry.names("topology"))
    assert {"sequential", "t3", "t3_mca", "ideal_gemm_rs_overlap", "ideal_rs_nmc"} <= set(registry.names("scheme"))
    # schemes: the scheme of that name, its options entry of that name in a registered family
    families = set(registry.names("scheme_family"))
    for n in registry.names("scheme"):
        assert registry.get("scheme", n).name == n
        opt = registry.get("scheme_options", n)
        assert opt.name == n and opt.family in families and opt.module.startswith(f"t3sim.schemes.{opt.family}."), n
    t3, mca, ideal = (registry.get("scheme", n) for n in ("t3", "t3_mca", "ideal_rs_nmc"))
    assert (t3.fused_rs, t3.arbitration) == (True, "round_robin") and (mca.fused_rs, mca.arbitration) == (True, "t3_mca")
    assert ideal.ideal and ideal.nmc and not registry.get("scheme", "sequential").fused_rs
    # DRAM standards: each its own JEDEC document's rule set; only HBM3's has the PRE-to-PRE delay tPPD
    std = {n: registry.get("dram_standard", n) for n in registry.names("dram_standard")}
    assert {n: s.name for n, s in std.items()} == {n: n for n in ("HBM2", "HBM2E", "HBM3", "HBM3E")}
    assert (std["HBM2"].document, std["HBM3"].document) == ("JESD235", "JESD238")
    assert std["HBM2E"].rules == std["HBM2"].rules and std["HBM3E"].rules == std["HBM3"].rules
    assert "tPPD" in std["HBM3"].timing and "tPPD" not in std["HBM2"].reads()
    assert any((r.prev, r.nxt) == ("PRE", "PRE") for r in std["HBM3"].rules)
    assert not any((r.prev, r.nxt) == ("PRE", "PRE") for r in std["HBM2"].rules)
    # topologies: the graph of that shape (4 GPUs, links both ways)
    ic = InterconnectConfig(num_gpus=4, bidirectional=True)
    edges = {n: registry.get("topology", n)(ic) for n in ("ring", "direct", "switch")}
    assert {n: g.graph["kind"] for n, g in edges.items()} == {n: n for n in edges}
    assert set(edges["ring"].edges) == {(i, (i + 1) % 4) for i in range(4)} | {((i + 1) % 4, i) for i in range(4)}
    assert set(edges["direct"].edges) == {(i, j) for i in range(4) for j in range(4) if i != j}
    assert set(edges["switch"].edges) == {(i, "switch") for i in range(4)} | {("switch", i) for i in range(4)}
    # arbitration: one decision each tells the policies apart. Both streams eligible, compute admitted last:
    # round robin alternates to communication; compute-first and T3-MCA (not starved) keep compute. Only
    # communication eligible, queue at 10 entries over a threshold of 5: T3-MCA holds it back, the others admit it.
    arb = SystemConfig().memory_controller.arbitration
    decide = {}
    for n in ("round_robin", "compute_first", "t3_mca"):  # the built-ins (other tests register their own)
        cls = registry.get("arbitration", n)
        assert cls.__name__.lower() == n.replace("_", ""), n
        pp = np.array(cls(arb.model_copy(update={"kind": n})).params(), dtype=np.int64)
        decide[n] = (cls.choose(10, True, True, 5, 9, 0, COMPUTE, 9, 0, -1, pp),
                     cls.choose(10, False, True, -1, 9, 10, COMM, 9, 0, 5, pp))
    assert decide == {"round_robin": (COMM, COMM), "compute_first": (COMPUTE, COMM), "t3_mca": (COMPUTE, NONE)}
    # the rest: the function or class of that name
    for cat in ("collective", "write_drain", "tracker_admission"):
        for n in registry.names(cat):
            obj = registry.get(cat, n)
            if not obj.__module__.startswith("t3sim."):
                continue  # registered by another test in this process
            assert obj.__name__.lower().replace("_", "") == n.replace("_", ""), (cat, n)
    assert registry.get("address_map", "channel_interleave").__name__ == "channel_interleave"


@pytest.mark.parametrize("cat", ["scheme", "dram_standard", "topology", "arbitration", "collective", "address_map",
                                 "write_drain", "tracker_admission"])
def test_missing_builtin_name_is_a_one_line_input_error(cat):
    """A missing name raises InputError (the CLI's exit 2): one line naming the field, what was asked, and every
    registered name."""
    with pytest.raises(InputError) as e:
        registry.get(cat, "no_such_plugin", "some.field")
    text = str(e.value)
    assert "\n" not in text and text.startswith("some.field: found ") and "'no_such_plugin'" in text
    assert e.value.where == "some.field" and e.value.allowed == ", ".join(registry.names(cat))


def test_a_second_thread_waits_for_the_plugins(monkeypatch):
    """A thread asking while another imports the plug-in modules sees them all (a Dask worker runs points on
    several threads; it once saw no DRAM standard registered)."""
    import threading
    import time

    imported = []

    def slow_import(name):
        time.sleep(0.2)
        if not imported:
            registry.add("test-slow-import", "x", object())
        imported.append(name)

    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry.importlib, "import_module", slow_import)
    first = threading.Thread(target=registry.load_plugins)
    first.start()
    time.sleep(0.05)
    seen = registry.names("test-slow-import")  # while the first thread is still importing
    first.join()
    assert seen == ["x"] and len(imported) == len(registry.PLUGIN_MODULES)
