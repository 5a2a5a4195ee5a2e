"""Base class and field helper for every t3sim config model.

Rules (enforced here and by ``tests/config/test_params.py``):

* unknown keys are errors (``extra="forbid"``) and models are frozen;
* every field is declared with :func:`F`, which records its **unit**, a one-line
  **description** and the **source** of its default (paper table, datasheet,
  measurement, or "assumption: ..." with the reason);
* a field with a physical unit carries the unit in its name
  (``bandwidth_GBps``, ``latency_ns``, ``clock_GHz``, ``size_MiB``): see
  :data:`UNIT_SUFFIX`;
* no field is accepted and ignored: a field either changes what some run
  simulates, is rejected where it cannot apply, or is declared **descriptive**
  (``F(..., descriptive="why no run depends on it")``: a name, a label, a value
  only analyses read, the only implemented choice); ``t3sim params`` shows the
  reason and ``tests/config/test_every_field_matters.py`` holds every other
  field to changing some statistic of some small run.
"""

from __future__ import annotations

from typing import Any, Iterable, List, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from t3sim import registry

#: unit -> suffix the field name must end with. Units not listed here are
#: dimensionless (``count``, ``bool``, ``name``, ``ratio``, ``enum``, ``path``)
#: and need no suffix.
UNIT_SUFFIX = {
    "GHz": "_GHz",
    "ns": "_ns",
    "us": "_us",
    "GBps": "_GBps",
    "B": "_B",
    "KiB": "_KiB",
    "MiB": "_MiB",
    "bits": "_bits",
    "cycles": "_cycles",
    "nCK": "_nCK",
    "FLOP/cycle": "_flops_per_cycle",
    "B/cycle": "_B_per_cycle",
    "Mmsg/s": "_Mps",
}
DIMENSIONLESS = {"count", "bool", "name", "ratio", "enum", "path", "text", "list", "mapping"}


def F(default: Any = ..., *, unit: str, desc: str, source: str, descriptive: str = "", **constraints: Any) -> Any:
    """Declare a documented config field.

    Args:
        default: default value (``...`` for required); a :class:`Model`
            subclass means "that section with all its defaults".
        unit: physical unit (a key of :data:`UNIT_SUFFIX`) or a dimensionless
            kind from :data:`DIMENSIONLESS`.
        desc: one-line description.
        source: where the default comes from.
        descriptive: if given, the field changes no simulated statistic, and this says why (a name, a value
            only analyses or other commands read, the only implemented choice).
        constraints: pydantic constraints (``gt``, ``ge``, ``le`` ...).
    """
    if unit not in UNIT_SUFFIX and unit not in DIMENSIONLESS:
        raise ValueError(f"unknown unit {unit!r}")
    extra = {"unit": unit, "source": source}
    if descriptive:
        extra["descriptive"] = descriptive
    if isinstance(default, type) and issubclass(default, BaseModel):
        # nested section: build its default lazily (validators may consult the registry)
        constraints["default_factory"] = default
    else:
        constraints["default"] = default
    return Field(
        description=desc,
        json_schema_extra=extra,
        **constraints,
    )


#: the largest integer a config field may hold: the simulator computes in 64-bit integers (numpy, numba)
MAX_INT = 2**62


class Model(BaseModel):
    """Frozen, strict base for all config models.

    Numbers must be finite (no NaN or infinity), integers must fit the simulator's 64-bit arithmetic
    (:data:`MAX_INT`), and ``true``/``false`` is not a number.
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_default=True,
        strict=False,
        populate_by_name=False,
        allow_inf_nan=False,
    )

    def given(self, names: Iterable[str]) -> List[str]:
        """Of ``names``, the fields this config sets to a value other than their default (sorted): what a rule
        "field X only with Y" checks. A field written out at its default changes nothing, so a resolved config (every
        field written, as ``results/<experiment>/<hash>/config.yaml``) validates again and re-runs."""
        fields = type(self).model_fields
        return sorted(n for n in names if n in self.model_fields_set
                      and getattr(self, n) != fields[n].get_default(call_default_factory=True))

    @field_validator("*", mode="before")
    @classmethod
    def _plain_numbers(cls, v: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is None:
            return v
        kinds = set(get_args(field.annotation) or (field.annotation,))
        if isinstance(v, bool) and bool not in kinds and kinds & {int, float}:
            raise ValueError(f"{str(v).lower()}, a boolean where a number is expected")
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT:
            raise ValueError(f"an integer of {len(str(abs(v)))} digits; at most {MAX_INT} (64-bit arithmetic)")
        return v


def check_kind(category: str, value: str) -> str:
    """Validate that ``value`` names a registered plug-in of ``category``.

    Used by ``kind`` field validators; raises ``ValueError`` (which pydantic
    reports with the field path) listing the registered names.
    """
    allowed = registry.names(category)
    if value not in allowed:
        raise ValueError(f"unknown {category} kind {value!r}; registered: {', '.join(allowed) or '(none)'}")
    return value
