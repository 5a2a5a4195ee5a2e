"""One experiment file that ``t3sim reproduce`` runs, and its ``--quick`` overrides (pure data).

Each paper lists its own in ``t3sim.reproduction.<paper>.experiments`` (``SPECS``);
:data:`t3sim.reproduction.catalog.SPECS` is all of them, in the order they run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

#: the repository root (the experiment files' paths are relative to it)
REPO = Path(__file__).resolve().parents[2]


def set_arg(key: str, value) -> str:
    """A ``--set`` override ``key=value``, the value written as JSON (JSON is YAML: lists and mappings pass through)."""
    return f"{key}={json.dumps(value)}"


@dataclass(frozen=True)
class Spec:
    """One experiment file to run: its results name, what it answers, and its --quick overrides (None: not run
    by --quick)."""

    folder: str
    results: str
    answers: str
    quick: Optional[Sequence[str]] = field(default_factory=tuple)
    #: the experiment file, repo-relative (default: ``experiments/<folder>/experiment.yaml``)
    config: str = ""

    @property
    def path(self) -> Path:
        return REPO / (self.config or f"experiments/{self.folder}/experiment.yaml")
