"""What the reproduction report reads from a results root: the runs of every results experiment, the validation
CSV and the 128-node fused study's rows (:func:`t3sim.reproduction.catalog.load_inputs` fills it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from t3sim.analysis.runs import Run


@dataclass
class Inputs:
    """Everything the report reads: runs per results experiment, and the validation CSV."""

    runs: Dict[str, List[Run]] = field(default_factory=dict)
    validation_csv: Optional[Path] = None
    #: the 128-node fused DLRM study's rows (experiments/fused-scale/study.py's results.csv)
    fused_scale_csv: Optional[Path] = None

    def get(self, name: str) -> List[Run]:
        return self.runs.get(name, [])
