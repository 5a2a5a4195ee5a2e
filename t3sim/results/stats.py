"""Hierarchical statistics; every statistic carries a value, a unit and a description.

>>> s = Stats()
>>> s.add("gpu0.hbm.bytes_read", 4096, "B", "bytes read from DRAM")
>>> s.to_dict()["gpu0"]["hbm"]["bytes_read"]["unit"]
'B'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Tuple


@dataclass(frozen=True)
class Stat:
    """One statistic. ``value`` is a number, a list of numbers (a histogram or time series) or a string."""

    value: Any
    unit: str
    description: str

    def to_dict(self) -> Dict[str, Any]:
        return {"value": _plain(self.value), "unit": self.unit, "description": self.description}


def _plain(v: Any) -> Any:
    """numpy scalars/arrays -> plain Python (JSON-serialisable, deterministic)."""
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


class Stats:
    """An ordered collection of :class:`Stat` under dotted names (``gpu0.hbm.bytes_read``)."""

    def __init__(self) -> None:
        self._stats: Dict[str, Stat] = {}
        self._groups: set = set()  # every proper dotted prefix of a recorded name (O(depth) clash checks)

    def add(self, name: str, value: Any, unit: str, description: str) -> None:
        """Record a statistic; names are unique and a name is never also a group."""
        if not unit or not description:
            raise ValueError(f"statistic {name!r} needs a unit and a description")
        if name in self._stats:
            raise ValueError(f"statistic {name!r} recorded twice")
        parts = name.split(".")
        prefixes = [".".join(parts[:i]) for i in range(1, len(parts))]
        if name in self._groups:
            other = next(o for o in self._stats if o.startswith(name + "."))
            raise ValueError(f"statistic {name!r} clashes with group/leaf {other!r}")
        for p in prefixes:
            if p in self._stats:
                raise ValueError(f"statistic {name!r} clashes with group/leaf {p!r}")
        self._groups.update(prefixes)
        self._stats[name] = Stat(value, unit, description)

    def merge(self, prefix: str, other: "Stats") -> None:
        """Add all of ``other``'s statistics under ``prefix.``."""
        for k, st in other.items():
            self.add(f"{prefix}.{k}" if prefix else k, st.value, st.unit, st.description)

    def __getitem__(self, name: str) -> Stat:
        return self._stats[name]

    def __contains__(self, name: str) -> bool:
        return name in self._stats

    def value(self, name: str) -> Any:
        return self._stats[name].value

    def items(self) -> Iterator[Tuple[str, Stat]]:
        return iter(self._stats.items())

    def names(self) -> List[str]:
        return list(self._stats)

    def to_dict(self) -> Dict[str, Any]:
        """Nested dict: groups are dicts, leaves are ``{value, unit, description}``."""
        root: Dict[str, Any] = {}
        for name, st in self._stats.items():
            parts = name.split(".")
            cur = root
            for p in parts[:-1]:
                cur = cur.setdefault(p, {})
            cur[parts[-1]] = st.to_dict()
        return root

    @classmethod
    def from_dict(cls, d: Dict[str, Any], prefix: str = "") -> "Stats":
        """Inverse of :meth:`to_dict`."""
        out = cls()

        def walk(node: Dict[str, Any], path: str) -> None:
            for k, v in node.items():
                name = f"{path}.{k}" if path else k
                if isinstance(v, dict) and set(v) == {"value", "unit", "description"}:
                    out.add(name, v["value"], v["unit"], v["description"])
                elif isinstance(v, dict):
                    walk(v, name)
                else:
                    raise ValueError(f"malformed statistic at {name!r}")

        walk(d, prefix)
        return out
