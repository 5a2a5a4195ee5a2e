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
