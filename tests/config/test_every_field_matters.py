"""No parameter is accepted and then ignored.

Every config field reachable from an experiment config either changes some statistic of some small run
when perturbed (a recipe in :mod:`tests.config.field_recipes`), is refused where its value cannot hold
(``rejects``), or is declared descriptive with a reason in its ``F(...)`` (shown by ``t3sim params``).

* :func:`test_every_field_has_a_recipe_or_is_descriptive` (fast): the inventory is complete, so a new
  field without one fails here;
* :func:`test_memory_fields_change_a_run` (default suite, about a second each): the memory-system fields,
  page policy and DRAM standard among them, on the memory system alone;
* :func:`test_every_field_changes_a_run` (``slow``, a few minutes): every recipe.
"""

from __future__ import annotations

import functools

import pytest

from t3sim.config.params import iter_params
from t3sim.errors import InputError, SimulationError

from tests.config.field_recipes import CONTEXTS, RECIPES, overrides, run_context

PARAMS = {p.path: p for p in iter_params()}
FAST = sorted(p for p, r in RECIPES.items() if CONTEXTS[r.ctx].kind == "mem")


def test_every_field_has_a_recipe_or_is_descriptive():
    missing = [p for p, q in PARAMS.items() if not q.descriptive and p not in RECIPES]
    both = [p for p, q in PARAMS.items() if q.descriptive and p in RECIPES]
    unknown = [p for p in RECIPES if p not in PARAMS]
    assert not missing, f"fields with neither a recipe (tests/config/field_recipes.py) nor descriptive=...: {missing}"
    assert not both, f"descriptive fields that have a recipe: {both}"
    assert not unknown, f"recipes for fields that do not exist: {unknown}"
    for path, r in RECIPES.items():
        assert r.ctx in CONTEXTS, (path, r.ctx)
    for q in PARAMS.values():
        assert len(q.descriptive) == 0 or len(q.descriptive) > 20, f"{q.path}: say why it is descriptive"


@functools.lru_cache(maxsize=None)
def _stats(ctx: str, ovr: tuple) -> str:
    return run_context(ctx, ovr)


def check_field(path: str) -> None:
    """Assert that perturbing ``path`` as its recipe says changes a statistic (or is refused, naming it)."""
    r = RECIPES[path]
    base = _stats(r.ctx, overrides(r, path, False))
    assert base
    if r.rejects:
        with pytest.raises((InputError, SimulationError, ValueError)) as e:
            run_context(r.ctx, overrides(r, path, True))
        assert path.split(".")[-1] in str(e.value), (path, str(e.value))
        return
    assert _stats(r.ctx, overrides(r, path, True)) != base, (
        f"{path}={r.value} changed no statistic of the {r.ctx!r} context: does the field do anything?")


@pytest.mark.parametrize("path", FAST)
def test_memory_fields_change_a_run(path):
    check_field(path)


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(RECIPES))
def test_every_field_changes_a_run(path):
    check_field(path)
