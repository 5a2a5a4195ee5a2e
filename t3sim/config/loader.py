"""YAML loading with ``base:`` composition, ``--set`` overrides and line-accurate errors.

Composition: any mapping may contain ``base: <file.yaml>``; the named file's
mapping is loaded (recursively) and the remaining keys are deep-merged over it
(mappings merge, everything else replaces). A base path is looked up relative
to the including file, then under each configs root (``./configs``, then the
repository's ``configs/``).

Every value remembers the file and line it came from (its *provenance*), so a
validation error names ``file:line: dotted.field``. Overrides given with
``--set a.b.c=VALUE`` parse ``VALUE`` as a YAML scalar/flow value and report
errors as ``--set a.b.c``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple, Type, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from t3sim.config.kinds import expect_kind, kind_of_model
from t3sim.errors import InputError

M = TypeVar("M", bound=BaseModel)
Path_ = Tuple[Any, ...]
Prov = Dict[Path_, str]  # path -> "file:line" or "--set x.y"

REPO_ROOT = Path(__file__).resolve().parents[2]


def config_roots() -> List[Path]:
    """Directories searched for ``base:`` presets, in order."""
    roots = []
    env = os.environ.get("T3SIM_CONFIGS")
    if env:
        roots.append(Path(env))
    roots += [Path.cwd() / "configs", REPO_ROOT / "configs"]
    out: List[Path] = []
    for r in roots:
        if r not in out:
            out.append(r)
    return out


# --------------------------------------------------------------------------- YAML


def _read_yaml(path: Path) -> Tuple[Any, Prov]:
    return parse_yaml(read_text(path, "YAML file"), str(path))


def read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of ``path``; a missing, unreadable or non-UTF-8 file is an :class:`InputError`.

    ``what`` names the kind of file expected (``"YAML file"``, ``"CSV file"``) in the message.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), "no such file", f"an existing {what}") from None
    except IsADirectoryError:
        raise InputError(str(path), "a directory", f"a {what}") from None
    except OSError as exc:
        raise InputError(str(path), f"unreadable file ({exc.strerror})", f"a readable {what}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}", f"bytes that are not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                         f"a {what} in UTF-8 text") from None


def parse_yaml(text: str, name: str) -> Tuple[Any, Prov]:
    """Parse YAML text; return (data, provenance). Duplicate keys are errors."""
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # checks for unprintable characters here
        node = loader.get_single_node()
    except yaml.YAMLError as exc:
        raise InputError(_yaml_where(exc, name), f"malformed YAML ({_yaml_problem(exc)})", "valid YAML") from None
    except RecursionError:
        raise InputError(name, "YAML nested too deeply", "a config a few levels deep") from None
    finally:
        if loader is not None:
            loader.dispose()
    prov: Prov = {}
    if node is None:
        return {}, prov
    try:
        data = _walk(loader, node, (), prov, name)
    except yaml.YAMLError as exc:  # e.g. a tag SafeLoader does not construct (!!python/object)
        raise InputError(_yaml_where(exc, name), f"unsupported YAML ({_yaml_problem(exc)})",
                         "plain YAML mappings, lists and scalars") from None
    except RecursionError:
        raise InputError(name, "YAML nested too deeply", "a config a few levels deep") from None
    return data, prov


def _yaml_where(exc: yaml.YAMLError, name: str) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return f"{name}:{mark.line + 1}" if mark else name


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc).splitlines()[0]
    return " ".join(str(problem).split())


_PLAIN_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")

#: values one YAML file may expand to (aliases can make a small file expand exponentially)
MAX_YAML_VALUES = 100_000


#: deepest nesting of mappings and lists a config may have (the deepest real one has 5 levels)
MAX_YAML_DEPTH = 32


def _walk(loader: yaml.SafeLoader, node: yaml.Node, path: Path_, prov: Prov, name: str) -> Any:
    prov[path] = f"{name}:{node.start_mark.line + 1}"
    if len(path) > MAX_YAML_DEPTH:
        raise InputError(f"{name}:{node.start_mark.line + 1}", f"YAML nested too deeply (more than {MAX_YAML_DEPTH} levels)",
                         "a config a few levels deep")
    if len(prov) > MAX_YAML_VALUES:
        raise InputError(name, f"YAML that expands to more than {MAX_YAML_VALUES} values (aliases?)",
                         "a config of a few hundred values")
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _PLAIN_TAGS:
        raise InputError(f"{name}:{node.start_mark.line + 1}", f"unsupported YAML (tag {node.tag!r})",
                         "plain YAML mappings, lists and scalars")
    if isinstance(node, yaml.MappingNode):
        out: Dict[Any, Any] = {}
        for k_node, v_node in node.value:
            key = loader.construct_object(k_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise InputError(f"{name}:{k_node.start_mark.line + 1}", f"a {type(key).__name__} as a mapping key",
                                 "a plain (string) key")
            if key in out:
                raise InputError(f"{name}:{k_node.start_mark.line + 1}", f"duplicate key {key!r}", "each key once per mapping")
            out[key] = _walk(loader, v_node, path + (key,), prov, name)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(loader, v, path + (i,), prov, name) for i, v in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


# --------------------------------------------------------------------- composition


def _find_base(ref: Any, including: Path, where: str) -> Path:
    if not isinstance(ref, str) or not ref:
        raise InputError(where, f"base: {ref!r}", "a path to a YAML preset (e.g. systems/t3-table1.yaml)")
    cands = [including.parent / ref] + [r / ref for r in config_roots()]
    for c in cands:
        if c.is_file():
            return c.resolve()
    raise InputError(where, f"base preset {ref!r} (not found next to {including.name} or under {', '.join(str(r) for r in config_roots())})",
                     "an existing preset file")


def _compose(data: Any, prov: Prov, path: Path_, file: Path, stack: Tuple[Path, ...]) -> Tuple[Any, Prov]:
    """Resolve every ``base:`` inside ``data`` (rooted at ``path``)."""
    if isinstance(data, dict):
        out_prov: Prov = {}
        merged: Dict[Any, Any] = {}
        if "base" in data:
            where = prov.get(path + ("base",), str(file))
            bpath = _find_base(data["base"], file, where)
            if bpath in stack:
                raise InputError(where, f"circular base chain ({' -> '.join(p.name for p in stack + (bpath,))})", "an acyclic chain of presets")
            bdata, bprov = _read_yaml(bpath)
            if not isinstance(bdata, dict):
                raise InputError(str(bpath), f"a {type(bdata).__name__} at top level", "a mapping")
            bdata, bprov = _compose(bdata, bprov, (), bpath, stack + (bpath,))
            merged = bdata
            out_prov.update({path + k: v for k, v in bprov.items()})
        out_prov[path] = prov.get(path, str(file))
        for k, v in data.items():
            if k == "base":
                continue
            sub_prov = {p: s for p, s in prov.items() if p[: len(path) + 1] == path + (k,)}
            v2, p2 = _compose(v, sub_prov, path + (k,), file, stack)
            if isinstance(v2, dict) and isinstance(merged.get(k), dict):
                merged[k] = deep_merge(merged[k], v2)
            else:
                # a replaced subtree: drop the base's provenance below it
                out_prov = {p: s for p, s in out_prov.items() if p[: len(path) + 1] != path + (k,)}
                merged[k] = v2
            out_prov.update(p2)
        return merged, out_prov
    if isinstance(data, list):
        out_prov = {path: prov.get(path, str(file))}
        items = []
        for i, v in enumerate(data):
            sub_prov = {p: s for p, s in prov.items() if p[: len(path) + 1] == path + (i,)}
            v2, p2 = _compose(v, sub_prov, path + (i,), file, stack)
            items.append(v2)
            out_prov.update(p2)
        return items, out_prov
    return data, {path: prov.get(path, str(file))}


def deep_merge(base: Dict[Any, Any], over: Dict[Any, Any]) -> Dict[Any, Any]:
    """Return ``base`` with ``over`` merged in (mappings merge, others replace)."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def load_raw(path: str | Path) -> Tuple[Dict[str, Any], Prov]:
    """Load a YAML config file with every ``base:`` resolved."""
    p = Path(path)
    data, prov = _read_yaml(p)
    if not isinstance(data, dict):
        raise InputError(str(p), f"a {type(data).__name__} at top level", "a mapping of config keys")
    return _compose(data, prov, (), p.resolve(), (p.resolve(),))


# ----------------------------------------------------------------------- overrides


def parse_override(text: str) -> Tuple[Tuple[str, ...], Any]:
    """Parse ``a.b.c=VALUE`` into (path, value); VALUE is read as YAML."""
    if "=" not in text:
        raise InputError(f"--set {text}", "no '='", "--set dotted.path=VALUE")
    key, _, raw = text.partition("=")
    parts = tuple(key.strip().split("."))
    if not key.strip() or any(not p for p in parts):
        raise InputError(f"--set {text}", f"path {key!r}", "a dotted path such as system.hbm.channels")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        raise InputError(f"--set {text}", f"value {raw!r} is not valid YAML", "a number, string, true/false, null or [list]") from None
    return parts, value


def apply_overrides(data: Dict[str, Any], prov: Prov, overrides: Iterable[str]) -> Tuple[Dict[str, Any], Prov]:
    """Apply ``--set`` overrides to raw (composed) config data."""
    data = json.loads(json.dumps(data))  # deep copy of plain data
    prov = dict(prov)
    for text in overrides:
        path, value = parse_override(text)
        # mappings the override creates (``--set new.key=1``) are the override's too, so an error about them names it
        created = [path[:i] for i in range(1, len(path)) if _get(data, path[:i]) is None]
        set_path(data, path, value, f"--set {text}")
        prov = {p: s for p, s in prov.items() if p[: len(path)] != path}
        for p in created + [path]:
            prov[p] = f"--set {'.'.join(path)}"
    return data, prov


def _get(data: Any, path: Tuple[str, ...]) -> Any:
    cur = data
    for part in path:
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def set_path(data: Dict[str, Any], path: Tuple[str, ...], value: Any, where: str) -> None:
    """Set ``data[path] = value``, creating intermediate mappings."""
    cur: Any = data
    for i, part in enumerate(path[:-1]):
        nxt = cur.get(part) if isinstance(cur, dict) else None
        if nxt is None:
            nxt = {}
            cur[part] = nxt
        if not isinstance(nxt, dict):
            raise InputError(where, f"{'.'.join(path[: i + 1])} is a {type(nxt).__name__}, not a mapping", "a path through mappings")
        cur = nxt
    cur[path[-1]] = value


# ---------------------------------------------------------------------- validation


def _loc_where(loc: Tuple[Any, ...], prov: Prov, default: str) -> str:
    for n in range(len(loc), -1, -1):
        if loc[:n] in prov:
            src = prov[loc[:n]]
            break
    else:
        src = default
    dotted = ".".join(str(p) for p in loc)
    return f"{src}: {dotted}" if dotted else src


def _fields_at(model: Type[BaseModel], loc: Tuple[Any, ...]) -> Optional[List[str]]:
    """Field names of the model reached by ``loc`` (None if not a model)."""
    cur: Any = model
    for part in loc:
        if not (isinstance(cur, type) and issubclass(cur, BaseModel)):
            return None
        f = cur.model_fields.get(part)
        if f is None:
            return None
        ann = f.annotation
        cur = next((a for a in getattr(ann, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)), ann)
    if isinstance(cur, type) and issubclass(cur, BaseModel):
        return list(cur.model_fields)
    return None


def validation_error(exc: ValidationError, model: Type[BaseModel], prov: Prov, default: str) -> InputError:
    """Turn the first pydantic error into a one-line :class:`InputError`."""
    return _one_error(exc.errors()[0], model, prov, default)


def validation_errors(exc: ValidationError, model: Type[BaseModel], prov: Prov, default: str) -> List[InputError]:
    """Every pydantic error of ``exc`` as a one-line :class:`InputError` (``t3sim config check``)."""
    return [_one_error(err, model, prov, default) for err in exc.errors()]


def _one_error(err, model: Type[BaseModel], prov: Prov, default: str) -> InputError:
    loc = tuple(err["loc"])
    typ = err["type"]
    where = _loc_where(loc, prov, default)
    if typ == "input_error":  # a validator's InputError, with its own where (t3sim.config.scheme)
        ctx = err["ctx"]
        return InputError(ctx["where"], ctx["found"], ctx["allowed"])
    if typ == "extra_forbidden":
        allowed = (err.get("ctx") or {}).get("allowed") or ", ".join(_fields_at(model, loc[:-1]) or [])
        return InputError(where, f"unknown key {loc[-1]!r}", allowed)
    if typ == "missing":
        return InputError(where, "nothing (required field missing)", "a value for this required field")
    if typ == "value_error":
        # a section's validator: blame the --set overrides that changed the section, if any did
        # (a whole-file validator names the file: its message names the fields)
        sets = sorted({src for p, src in prov.items() if loc and p[: len(loc)] == loc and src.startswith("--set ")})
        if sets:
            where = f"{', '.join(sets)}: {'.'.join(str(p) for p in loc)}"
        return InputError(where, err["msg"].removeprefix("Value error, "))
    found = repr(err.get("input"))
    if len(found) > 60:
        found = found[:57] + "..."
    return InputError(where, found, err["msg"])


def build(model: Type[M], data: Dict[str, Any], prov: Prov, default_where: str) -> M:
    """Validate raw data into ``model`` or raise a one-line :class:`InputError`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, model, prov, default_where) from None


def load(model: Type[M], path: str | Path, overrides: Iterable[str] = ()) -> M:
    """Load, compose, override and validate a config file as ``model``."""
    data, prov = load_raw(path)
    expect_kind(data, kind_of_model(model), str(path))
    data, prov = apply_overrides(data, prov, overrides)
    return build(model, data, prov, str(path))
