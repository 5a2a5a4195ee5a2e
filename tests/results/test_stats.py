"""Statistics: the naming rules of :class:`t3sim.results.stats.Stats` (unique names; a name is never also a group),
held against a brute-force statement of the rule over random dotted names; and the fast YAML loader that reads
results back, held to ``yaml.safe_load``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3sim.results.stats import Stats

_names = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4).map(".".join)


def _allowed(recorded, name) -> bool:
    """The rule, stated directly: not recorded yet, and no recorded name is a group of it or it a group of one."""
    return name not in recorded and not any(o.startswith(name + ".") or name.startswith(o + ".") for o in recorded)


@settings(max_examples=200, deadline=None)
@given(names=st.lists(_names, max_size=25))
def test_add_accepts_exactly_what_the_naming_rule_allows(names):
    s, recorded = Stats(), []
    for n in names:
        if _allowed(recorded, n):
            s.add(n, 1, "count", "a test statistic")
            recorded.append(n)
        else:
            with pytest.raises(ValueError, match=repr(n)):
                s.add(n, 1, "count", "a test statistic")
    assert s.names() == recorded
    assert sorted(Stats.from_dict(s.to_dict()).names()) == sorted(recorded)


def test_clash_messages_name_the_other_statistic():
    s = Stats()
    s.add("gpu0.hbm.bytes", 1, "B", "bytes")
    with pytest.raises(ValueError, match="recorded twice"):
        s.add("gpu0.hbm.bytes", 1, "B", "bytes")
    with pytest.raises(ValueError, match="clashes with group/leaf 'gpu0.hbm.bytes'"):
        s.add("gpu0.hbm", 1, "B", "bytes")
    with pytest.raises(ValueError, match="clashes with group/leaf 'gpu0.hbm.bytes'"):
        s.add("gpu0.hbm.bytes.read", 1, "B", "bytes")
    with pytest.raises(ValueError, match="needs a unit and a description"):
        s.add("gpu1.x", 1, "", "bytes")


# ---------------------------------------------------------------- results YAML: the fast loader reads what the slow one does

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63), st.floats(allow_nan=False),
                     st.text(max_size=12))
_docs = st.recursive(_scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                      st.dictionaries(st.text(max_size=8), kids, max_size=4)),
                     max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(doc=st.dictionaries(st.text(max_size=8), _docs, max_size=6))
def test_results_yaml_loader_reads_what_safe_load_reads(doc):
    """config.yaml is written by ``yaml.safe_dump``; :func:`t3sim.results.store.load_yaml` (libyaml where built)
    must give back exactly what ``yaml.safe_load`` does."""
    import yaml

    from t3sim.results.store import load_yaml

    text = yaml.safe_dump(doc, sort_keys=False)
    assert load_yaml(text) == yaml.safe_load(text)


def test_results_yaml_loader_on_a_shipped_resolved_config():
    import yaml

    from t3sim.config import load_experiment
    from t3sim.results.store import load_yaml
    from tests.conftest import REPO

    cfg = load_experiment(REPO / "configs" / "experiments" / "default.yaml").model_dump(mode="json")
    text = yaml.safe_dump(cfg, sort_keys=False)
    assert load_yaml(text) == yaml.safe_load(text) == cfg
