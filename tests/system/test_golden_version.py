"""The golden test's messages about the model version (``tests/system/test_golden.py``), without simulating:
the case's statistics come from a stand-in for ``flat_stats`` and the version from a patched
``t3sim.model_version.MODEL_VERSION``; the real files are read, never edited."""

from __future__ import annotations

import re

import pytest

from t3sim import model_version
from tests.system import test_golden as golden

CASE = "tiny-op-chunked"


def _moved_stats(monkeypatch):
    """``flat_stats`` returning the golden statistics of ``CASE`` with one moved."""
    want = dict(golden._cases()[CASE])
    key = "time.total_us"
    want[key] = want[key] + 1.0
    monkeypatch.setattr(golden, "flat_stats", lambda case, meta=None: dict(want))


def test_the_golden_file_records_a_model_version_and_its_cases_stay_apart():
    data = golden._golden()
    assert data[golden.VERSION_KEY] == model_version.MODEL_VERSION
    assert golden.VERSION_KEY not in golden._cases() and set(golden._cases()) == set(golden.CASES)


def test_a_moved_statistic_without_a_bump_says_bump_and_regenerate(monkeypatch):
    _moved_stats(monkeypatch)
    with pytest.raises(pytest.fail.Exception,
                       match=re.escape("statistics moved: bump t3sim/model_version.py and regenerate")) as e:
        golden.test_statistics_equal_the_golden_values(CASE)
    assert "time.total_us" in str(e.value)


def test_unmoved_statistics_pass(monkeypatch):
    want = dict(golden._cases()[CASE])
    monkeypatch.setattr(golden, "flat_stats", lambda case, meta=None: dict(want))
    golden.test_statistics_equal_the_golden_values(CASE)


def test_a_bump_without_regenerating_says_so(monkeypatch):
    monkeypatch.setattr(model_version, "MODEL_VERSION", model_version.MODEL_VERSION + 1)
    with pytest.raises(AssertionError, match="bumped and the file not regenerated"):
        golden.test_golden_file_records_the_current_model_version()
    _moved_stats(monkeypatch)  # the moved statistics of the bumped model: regenerate, not bump again
    with pytest.raises(pytest.fail.Exception, match=re.escape(golden.REGENERATE)) as e:
        golden.test_statistics_equal_the_golden_values(CASE)
    assert "bumped and the file not regenerated" in str(e.value) and "statistics moved: bump" not in str(e.value)


def test_the_history_names_every_version():
    assert sorted(model_version.HISTORY) == list(range(model_version.MODEL_VERSION + 1))
    assert model_version.describe(0) == "version 0 (before versioning)"
