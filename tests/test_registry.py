"""One registry for all plug-ins; duplicates raise; unknown kinds are input errors."""

from __future__ import annotations

import pytest

from t3sim import registry
from t3sim.errors import InputError


def test_duplicate_raises():
    registry.add("test-cat", "x", object())
    with pytest.raises(registry.DuplicateRegistration):
        registry.add("test-cat", "x", object())


def test_unknown_is_input_error():
    with pytest.raises(InputError) as e:
        registry.get("topology", "hypercube", "interconnect.kind")
    assert "ring" in str(e.value) and "interconnect.kind" in str(e.value)


def test_builtin_plugins():
    assert {"ring", "direct", "switch"} <= set(registry.names("topology"))
    assert {"sequential", "t3", "t3_mca", "ideal_gemm_rs_overlap", "ideal_rs_nmc"} <= set(registry.names("scheme"))


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
