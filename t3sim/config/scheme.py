"""The overlap scheme's config: its kind plus that scheme's own options.

Each scheme family (``t3sim/schemes/<family>/``) defines a pure options model per scheme in its ``options.py``
(pydantic, importing only :mod:`t3sim.config`) and registers it by name with :func:`scheme_kind`: the options
model under registry category ``scheme_options``, and the scheme itself under ``scheme`` as the module that
defines it, which is imported only when a run asks for the scheme (:func:`t3sim.registry.add_lazy`). The config
layer finds a kind's options by name and imports no simulation code.

YAML stays flat: ``scheme: {kind: flux_rs, flux_reduce: pull}``. :func:`resolve` (the validator of
``ExperimentConfig.scheme``) validates the mapping as its kind's options model, so a resolved config holds the
kind and that scheme's options only. Another scheme's option is accepted only at its default, where it changes
nothing (a config written out with every field, or a sweep over ``scheme.kind`` whose base names an option of
another kind at its default), and dropped; set to another value it is an error naming the schemes that take it.

Options shared by several schemes are defined once here as mixins (:class:`Chunks`, :class:`ChunkAxis`,
:class:`ComputeStreams`, :class:`LaunchFirst`, :class:`CommCUs`) and composed by the families' models (mixins
first, :class:`SchemeConfig` last, so that ``kind`` comes first in a resolved config). An option name means one
thing for every scheme that takes it: one type, one default (:func:`option_fields` checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Literal, Optional, Tuple, Type

from pydantic import TypeAdapter, ValidationError, field_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from t3sim import registry
from t3sim.config.base import F, Model, check_kind
from t3sim.errors import InputError


class SchemeConfig(Model):
    """Overlap scheme (paper Sec. 5.3): which kernels run, how outputs are mapped, which arbitration applies. This
    base holds the kind; each scheme's options model (its family's ``options.py``) adds that scheme's options."""

    kind: str = F("sequential", unit="name",
                  desc="registered overlap scheme (sequential, t3, t3_mca, ideal_gemm_rs_overlap, ideal_rs_nmc, "
                       "concurrent, chunked, copy, ...; the scheme options below, by family, list them all)",
                  source="paper Sec. 5.3; t3sim/schemes/<family>/options.py")

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        return check_kind("scheme", v)


# ------------------------------------------------------------------ options shared by several schemes


class Chunks(Model):
    chunks: int = F(4, unit="count",
                    desc="chunked, chunked_dma: GEMM chunks C; each chunk's reduce-scatter is issued when the chunk "
                         "ends; chunked_dma with workload.direction=ag_gemm: GEMM steps, a multiple of the GPUs N (one "
                         "step per shard of A, or chunks/N steps per shard); ficco_char: the per-GPU GEMM as C chunks "
                         "along scheme.chunk_axis (FiCCO Sec. IV-C1: 1, 8, 64); rejected by schemes that do not chunk",
                    source="H200 measurements (experiments/validation/README.md: chunked, 4 chunks of "
                           "M/4 rows); FLUX Sec. 2.2 (ag_gemm: decomposition aligned with the number of devices)", ge=1)


class ChunkAxis(Model):
    chunk_axis: Literal["M", "N", "K"] = F(
        "M", unit="enum",
        desc="chunked, chunked_dma: split the GEMM along M (rows of A and C) or N (columns of B and C); ficco_char: M "
             "(row sharding) or K (column sharding: accumulating chunk GEMMs, C += A_i B_i, beta = 1, A and B stored "
             "K-block-major, t3sim/workload/chunks.py); K is rejected by the other schemes",
        source="CoCoNet / Transformer Engine (the split along the output's rows); FiCCO Sec. IV-C1 (row (M) or "
               "column (K) sharding, column sharding needs accumulative GEMM kernels)")


class ComputeStreams(Model):
    compute_streams: int = F(1, unit="count",
                             desc="chunked, chunked_dma: streams the chunk GEMMs are issued over, round robin (chunk i "
                                  "on stream i mod S), so consecutive chunks run concurrently where the dispatcher has "
                                  "CUs for them (GPU multiplexing, FLUX Sec. 2.2); ficco with hetero_unfused_1d: the "
                                  "per-piece GEMMs likewise; 1: one compute stream",
                             source="Transformer Engine common/comm_gemm_overlap.h: NVTE_COMM_OVERLAP_MAX_STREAMS = 3 "
                                    "(its split_overlap_rs/_ag issue chunk i's GEMM on _stream_compute[i % 3])", ge=1)


class LaunchFirst(Model):
    launch_first: Literal["gemm", "comm"] = F(
        "gemm", unit="enum",
        desc="concurrent, copy, ficco_char (char_part=both): which stream launches its kernel first, the GEMM's or the "
             "other one (concurrent: the RS; copy: the copy streams; ficco_char: the all-gather step); the GPU "
             "dispatches WGs in launch order (t3sim/compute/dispatcher.py)",
        source="assumption: a host program issues one stream's work before the other's, in either order")


class CommCUs(Model):
    comm_cus: int = F(0, unit="count",
                      desc="concurrent, chunked: CUs reserved for the communication kernels: the reduce-scatters' "
                           "CTAs run only on the last comm_cus CUs and the GEMM's WGs only on the others (0: no "
                           "reservation, every kernel may use every CU in launch order); the all-gather after them uses "
                           "every CU",
                      source="paper Sec. 3.2.1, Fig. 6 (72-8 and 64-16 CU splits of an 80-CU GPU)", ge=0)


# ------------------------------------------------------------------ registration


@dataclass(frozen=True)
class SchemeKind:
    """A registered scheme kind: its family, the module that defines the scheme, and its options model."""

    name: str
    family: str
    module: str
    options: Type[SchemeConfig]


def family(name: str, title: str) -> None:
    """Register scheme family ``name`` (its folder ``t3sim/schemes/<name>/``) with a one-line ``title``."""
    registry.add("scheme_family", name, title)


def scheme_kind(name: str, *, family: str, module: str, options: Type[SchemeConfig] = SchemeConfig) -> None:
    """Register scheme ``name`` of ``family``: its options model (``SchemeConfig`` itself: no options) and the
    module that defines the scheme (imported when a run first asks for it)."""
    if not (isinstance(options, type) and issubclass(options, SchemeConfig)):
        raise TypeError(f"scheme {name!r}: options {options!r} is not a SchemeConfig model")
    registry.add("scheme_options", name, SchemeKind(name, family, module, options))
    registry.add_lazy("scheme", name, module)


def kinds() -> List[SchemeKind]:
    """Every registered scheme kind, in registration order (families in load order, t3sim/schemes/__init__.py)."""
    return [registry.get("scheme_options", n) for n in registry.names("scheme_options", sort=False)]


def options_for(kind: str) -> Type[SchemeConfig]:
    """The options model of scheme ``kind`` (InputError for an unknown kind)."""
    return registry.get("scheme_options", kind, "scheme.kind").options


def option_names(options: Type[SchemeConfig]) -> List[str]:
    """The options of an options model (its fields but ``kind``)."""
    return [n for n in options.model_fields if n != "kind"]


def option_fields() -> Dict[str, Tuple[Any, List[str]]]:
    """Every scheme option: name -> (its field, the kinds that take it, in registration order). Raises TypeError if
    two kinds declare one name with different types or defaults (an option means one thing)."""
    out: Dict[str, Tuple[Any, List[str]]] = {}
    for k in kinds():
        for n in option_names(k.options):
            f = k.options.model_fields[n]
            if n in out:
                g = out[n][0]
                if (g.annotation, g.get_default(call_default_factory=True)) != \
                        (f.annotation, f.get_default(call_default_factory=True)):
                    raise TypeError(f"scheme option {n!r} of {k.name} differs from {out[n][1][0]}'s (type or default)")
                out[n][1].append(k.name)
            else:
                out[n] = (f, [k.name])
    return out


# ------------------------------------------------------------------ validation


def unused_option(kind: str, name: str, value: Any, owners: List[str]) -> InputError:
    """The error for option ``name`` set to ``value`` with ``scheme.kind=kind``, which does not take it."""
    return InputError(f"scheme.{name}", f"{value!r} with scheme.kind={kind}, which does not use it",
                      f"scheme.{name} only with " + (", ".join(owners) or "no scheme"))


def foreign_options(kind: str, data: Dict[str, Any]) -> Tuple[Dict[str, Any], List[InputError], List[str]]:
    """Sort the keys of ``data`` (a flat scheme mapping of ``kind``): returns (``data`` without the options of other
    schemes, an error for each of those set away from its default, the keys that are no scheme's option)."""
    own = set(options_for(kind).model_fields)
    fields = option_fields()
    kept, errors, unknown = {}, [], []
    for n, v in data.items():
        if n in own:
            kept[n] = v
        elif n in fields:
            f, owners = fields[n]
            try:
                value = TypeAdapter(f.annotation).validate_python(v)
            except ValidationError:
                value = v
            if value != f.get_default(call_default_factory=True):
                errors.append(unused_option(kind, n, value, owners))
        else:
            kept[n] = v
            unknown.append(n)
    return kept, errors, unknown


def _mapping(v: Any) -> Any:
    """A scheme config given as a model instance, as the mapping it was given with (its kind always)."""
    if isinstance(v, SchemeConfig):
        return {"kind": v.kind, **v.model_dump(exclude_unset=True)}
    return v


def _options_or_none(kind: str) -> Optional[Type[SchemeConfig]]:
    try:
        return options_for(kind)
    except InputError:
        return None


def resolve(v: Any) -> Any:
    """The ``scheme`` section validated as its kind's options model (module doc); raises pydantic's
    ValidationError with locations inside the section."""
    kind_field = SchemeConfig.model_fields["kind"]
    if isinstance(v, SchemeConfig) and type(v) is _options_or_none(v.kind):
        return v
    data = _mapping(v)
    if not isinstance(data, dict):
        return data  # not a mapping: SchemeConfig's validation reports it
    kind = data.get("kind", kind_field.default)
    if not isinstance(kind, str) or kind not in registry.names("scheme_options"):
        return SchemeConfig.model_validate({"kind": kind})  # reports the kind
    options = options_for(kind)
    kept, errors, unknown = foreign_options(kind, data)
    details: List[InitErrorDetails] = [
        InitErrorDetails(type=PydanticCustomError("extra_forbidden", "Extra inputs are not permitted",
                                                  {"allowed": ", ".join(options.model_fields)}),
                         loc=(n,), input=data[n]) for n in unknown]
    details += [InitErrorDetails(type=PydanticCustomError("input_error", "{text}", {
        "text": e.one_line(), "where": e.where, "found": e.found, "allowed": e.allowed}), loc=(e.where.split(".")[-1],),
        input=data.get(e.where.split(".")[-1])) for e in errors]
    if details:
        raise ValidationError.from_exception_data(options.__name__, details)
    return options.model_validate(kept)


def check_options(kind: str, cfg: SchemeConfig) -> None:
    """Raise InputError if ``cfg`` sets an option scheme ``kind`` does not take (the check :func:`resolve` makes;
    this catches a config changed without validation, e.g. ``model_copy``)."""
    _kept, errors, _unknown = foreign_options(kind, cfg.model_dump())
    if errors:
        raise errors[0]


def base_of_sweep(scheme: Any, sweep: Any) -> Any:
    """The base's ``scheme`` section of an experiment whose sweep sets the scheme (``scheme`` or ``scheme.kind``):
    without the options its kind does not take, which the points' kinds may (every point is validated with them,
    :mod:`t3sim.config.sweep`)."""
    if not isinstance(scheme, dict) or not isinstance(sweep, dict):
        return scheme
    keys = set(sweep.get("grid") or {}) if isinstance(sweep.get("grid"), dict) else set()
    for case in sweep.get("cases") or []:
        if isinstance(case, dict):
            keys |= set(case)
    if not keys & {"scheme", "scheme.kind"}:
        return scheme
    kind = scheme.get("kind", SchemeConfig.model_fields["kind"].default)
    if not isinstance(kind, str) or kind not in registry.names("scheme_options"):
        return scheme
    fields = option_fields()
    own = set(options_for(kind).model_fields)
    return {n: v for n, v in scheme.items() if n in own or n not in fields}
