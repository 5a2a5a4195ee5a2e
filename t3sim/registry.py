"""One registry for every pluggable piece of t3sim.

A config selects a plug-in by ``kind``; the plug-in registered itself under that
name in one category. Registering a name twice raises (two plug-ins silently
shadowing each other is a bug that produces plausible wrong numbers).

Categories in use: ``arbitration`` (memory-controller compute/communication
arbitration), ``write_drain`` (memory-controller write-drain policies),
``dram_standard`` (DRAM timing rule sets), ``address_map``, ``topology``, ``collective``,
``scheme`` (overlap scheme), ``executor``, ``tracker_admission`` (who may take a free way of a
T3 tracker set).

Plug-in modules are imported lazily by :func:`load_plugins` so that the config
layer can validate ``kind`` names without importing the simulator at import time.
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
    "t3sim.interconnect.topology",
    "t3sim.interconnect.multinode",
    "t3sim.collectives",
    "t3sim.schemes",
)

_registries: Dict[str, Dict[str, Any]] = {}
_loaded = False
_loading = False  # the thread holding _lock is importing the plug-in modules
_lock = threading.RLock()


class DuplicateRegistration(RuntimeError):
    """A name was registered twice in one category."""


def register(category: str, name: str) -> Callable[[T], T]:
    """Decorator: register ``obj`` as plug-in ``name`` of ``category``."""

    def deco(obj: T) -> T:
        add(category, name, obj)
        return obj

    return deco


def add(category: str, name: str, obj: Any) -> None:
    """Register ``obj`` under ``category``/``name``; raise on duplicates."""
    table = _registries.setdefault(category, {})
    if name in table:
        raise DuplicateRegistration(
            f"{category} plug-in {name!r} registered twice "
            f"({table[name]!r} and {obj!r})"
        )
    table[name] = obj


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


def names(category: str) -> list[str]:
    """Sorted names registered in ``category``."""
    load_plugins()
    return sorted(_registries.get(category, {}))


def get(category: str, name: str, where: str = "kind") -> Any:
    """Return the plug-in ``name`` of ``category`` or raise :class:`InputError`."""
    load_plugins()
    table = _registries.get(category, {})
    if name not in table:
        allowed = ", ".join(sorted(table)) or "(none registered)"
        raise InputError(where, f"{category} kind {name!r}", allowed)
    return table[name]
