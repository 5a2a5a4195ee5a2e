"""Tables of rows: figure CSVs read back and written atomically, and the small statistics any study takes over
them (pure; reads and writes files only).

A *table* is a list of rows (``{column: value}``), the numbers a figure plots and writes as ``<stem>.csv``
(:func:`t3sim.analysis.plotting.save`). :func:`read_table` gives one back typed (numbers as ``int``/``float``,
``True``/``False`` as booleans, other cells as text). Statistics skip what is not a finite number, and give NaN
where nothing is left.
"""

from __future__ import annotations

import csv
import math
import os
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

Rows = Sequence[Mapping[str, object]]
#: tables by figure stem
Tables = Mapping[str, Rows]
NAN = math.nan


def write_csv_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temporary sibling and one ``os.replace`` (readers never see half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _typed(v: str):
    if v in ("True", "False"):
        return v == "True"
    try:
        x = float(v)
    except ValueError:
        return v
    return int(x) if x.is_integer() and "." not in v and "e" not in v.lower() and "n" not in v.lower() else x


def read_table(path: str | Path) -> List[Dict[str, object]]:
    """A figure CSV back as rows: numbers typed, ``True``/``False`` as booleans, other cells as text."""
    with Path(path).open(newline="") as fh:
        return [{k: _typed(v) for k, v in r.items()} for r in csv.DictReader(fh)]


def read_tables(folder: str | Path) -> Dict[str, List[Dict[str, object]]]:
    """Every ``<stem>.csv`` in ``folder`` (e.g. a snapshot's ``figures/``), by stem."""
    return {p.stem: read_table(p) for p in sorted(Path(folder).glob("*.csv"))}


def fin(v) -> bool:
    """``v`` is a finite number (a boolean is not)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def lo_hi(vals: Iterable) -> tuple:
    """(smallest, largest) of the finite numbers among ``vals``, as floats; (NaN, NaN) if none."""
    v = [float(x) for x in vals if fin(x)]
    return (min(v), max(v)) if v else (NAN, NAN)


def geomean(vals: Sequence[float]) -> float:
    """Geometric mean of the positive finite values (NaN when none)."""
    v = [x for x in vals if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else math.nan


def mean_by(rows: Sequence[Mapping], key: str, where: Optional[Mapping] = None) -> float:
    """Plain mean of column ``key`` over the rows matching every ``where`` column (finite values; NaN when none)."""
    v = [r[key] for r in rows if all(r.get(k) == w for k, w in (where or {}).items()) and math.isfinite(r[key])]
    return sum(v) / len(v) if v else math.nan
