"""Every parameter is documented: type, default, unit (in the name where physical), description, source."""

from __future__ import annotations

from t3sim.config.base import DIMENSIONLESS, UNIT_SUFFIX
from t3sim.config.params import iter_params, render_markdown

from tests.conftest import REPO


def test_every_param_documented():
    params = list(iter_params())
    assert len(params) > 80
    for p in params:
        assert p.unit, f"{p.path} has no unit"
        assert p.description.strip(), f"{p.path} has no description"
        assert p.source.strip(), f"{p.path} has no source"
        assert "\n" not in p.description, f"{p.path}: description must be one line"


def test_physical_units_in_names():
    for p in iter_params():
        leaf = p.path.split(".")[-1]
        if p.unit in UNIT_SUFFIX:
            assert leaf.endswith(UNIT_SUFFIX[p.unit]), f"{p.path} is in {p.unit} but its name lacks {UNIT_SUFFIX[p.unit]}"
        else:
            assert p.unit in DIMENSIONLESS, f"{p.path}: unknown unit {p.unit}"
            for suffix in UNIT_SUFFIX.values():
                assert not leaf.endswith(suffix), f"{p.path} ends in {suffix} but is declared {p.unit}"


def test_docs_in_sync():
    doc = (REPO / "docs/parameters.md").read_text()
    assert doc == render_markdown(), "docs/parameters.md is stale: run `t3sim params --write`"


def test_cli_params_lists_every_field(run_cli):
    rc, out, _ = run_cli("params")
    assert rc == 0
    for p in iter_params():
        assert p.path in out
