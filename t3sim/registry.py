"""One registry for every pluggable piece of t3sim.

A config selects a plug-in by ``kind``; the plug-in registered itself under that
name in one category. Registering a name twice raises (two plug-ins silently
shadowing each other is a bug that produces plausible wrong numbers).

Categories in use: ``arbitration`` (memory-controller compute/communication
arbitration), ``write_drain`` (memory-controller write-drain policies),
``dram_standard`` (DRAM timing rule sets), ``address_map``, ``topology``, ``collective``,
``scheme`` (overlap scheme), ``scheme_options`` (a scheme's options model and family),
``scheme_family`` (a family's one-line title), ``executor``, ``tracker_admission`` (who may
take a free way of a T3 tracker set).

Plug-in modules are imported lazily by :func:`load_plugins` so that the config
layer can validate ``kind`` names without importing the simulator at import time.
A plug-in may also be registered *by module* (:func:`add_lazy`): its name is known at
once, and the module that defines it is imported only when :func:`get` first asks for
it (the overlap schemes: a family's light ``options.py`` names its schemes' modules).
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Callable, Dict, TypeVar

from t3sim.errors import InputError

T = TypeVar("T")

#: Modules whose import registers plug-ins. A missing module is skipped, so the
#: registry works while the package grows; a module that fails for another
#: reason raises.
PLUGIN_MODULES = (
    "t3sim.memory.policies",
    "t3sim.memory.standards",
    "t3sim.memory.write_drain",
    "t3sim.memory.address_map",
    "t3sim.dma.tracker_policy",
    "t3sim.compute.selection",
    "t3sim.interconnect.topology",
    "t3sim.interconnect.multinode",
    "t3sim.interconnect.pcie",
    "t3sim.collectives",
    "t3sim.schemes",
)

_registries: Dict[str, Dict[str, Any]] = {}
_loaded = False
_loading = False  # the thread holding _lock is importing the plug-in modules
_lock = threading.RLock()


class DuplicateRegistration(RuntimeError):
    """A name was registered twice in one category."""


class Lazy:
    """A plug-in registered by the module that defines it (:func:`add_lazy`), until :func:`get` imports it."""

    def __init__(self, module: str):
        self.module = module

    def __repr__(self) -> str:
        return f"<defined in {self.module}>"


def register(category: str, name: str) -> Callable[[T], T]:
    """Decorator: register ``obj`` as plug-in ``name`` of ``category``."""

    def deco(obj: T) -> T:
        add(category, name, obj)
        return obj

    return deco


def add(category: str, name: str, obj: Any) -> None:
    """Register ``obj`` under ``category``/``name``; raise on duplicates (a :class:`Lazy` entry is replaced
    once, by the plug-in its module registers)."""
    table = _registries.setdefault(category, {})
    if name in table and isinstance(table[name], Lazy) and not isinstance(obj, Lazy):
        table[name] = obj
        return
    if name in table:
        raise DuplicateRegistration(
            f"{category} plug-in {name!r} registered twice "
            f"({table[name]!r} and {obj!r})"
        )
    table[name] = obj


def add_lazy(category: str, name: str, module: str) -> None:
    """Register plug-in ``name`` of ``category`` as defined in ``module``: :func:`names` lists it at once,
    :func:`get` imports ``module`` (which must :func:`add` it) the first time it is asked for."""
    add(category, name, Lazy(module))


def load_plugins() -> None:
    """Import every plug-in module once (idempotent, thread-safe).

    Another thread asking meanwhile waits until every module is imported (it would otherwise see a
    half-filled registry: a Dask worker runs points on several threads). A plug-in module whose
    import consults the registry (the loading thread re-entering) sees what is registered so far."""
    global _loaded, _loading
    if _loaded:
        return
    with _lock:
        if _loaded or _loading:
            return
        _loading = True
        try:
            for mod in PLUGIN_MODULES:
                try:
                    importlib.import_module(mod)
                except ModuleNotFoundError as exc:
                    if exc.name is None or not mod.startswith(exc.name):
                        raise
            _loaded = True
        finally:
            _loading = False


def names(category: str, sort: bool = True) -> list[str]:
    """Names registered in ``category``: sorted, or (``sort=False``) in the order they were registered."""
    load_plugins()
    table = _registries.get(category, {})
    return sorted(table) if sort else list(table)


def get(category: str, name: str, where: str = "kind") -> Any:
    """Return the plug-in ``name`` of ``category`` or raise :class:`InputError`; a plug-in registered by
    module (:func:`add_lazy`) is imported now."""
    load_plugins()
    table = _registries.get(category, {})
    if name not in table:
        allowed = ", ".join(sorted(table)) or "(none registered)"
        raise InputError(where, f"{category} kind {name!r}", allowed)
    obj = table[name]
    if isinstance(obj, Lazy):
        importlib.import_module(obj.module)
        obj = table[name]
        if isinstance(obj, Lazy):
            raise RuntimeError(f"{obj.module} was imported but registered no {category} plug-in {name!r}")
    return obj
