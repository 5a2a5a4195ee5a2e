"""The T3 paper's experiments as ``t3sim reproduce`` runs them, and where its validation (Fig. 14) reads and writes
(pure data; the files under ``experiments/``)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

from t3sim.reproduction.spec import REPO, Spec, set_arg

#: --quick's one T-NLG case at TP=8
TNLG8 = {"workload.tp": 8, "system.interconnect.num_gpus": 8}
#: the results experiments the T3 section reads (``results/<name>/``)
EXPERIMENTS = ("t3-sublayers", "fig06", "fig17", "fig19", "fig20", "sweep-tracker", "sweep-mca")
SPECS = (
    Spec("fig16", "t3-sublayers", "Figs. 4, 15, 16, 18, 19 (16 sub-layers x 5 schemes; Secs. 2.4, 6.1-6.3)",
         ("workload.tokens=128", set_arg("sweep.cases", [TNLG8]))),
    Spec("fig06", "fig06", "Fig. 6 (CU sharing; Sec. 3.2.1)",
         ("workload.tokens=128", set_arg("sweep.grid", {"workload.model": [
             {"name": "t-nlg", "hidden_size": 4256, "layers": 78, "seq_len": 1024, "batch": 8, "tp_degrees": [8, 16],
              "attention_heads": 28}], "workload.sublayer": ["OP", "FC-2"]}))),
    Spec("fig17", "fig17", "Fig. 17 (DRAM bandwidth over time; Sec. 6.1.2)", ("workload.tokens=128",)),
    Spec("fig19", "fig19", "Figs. 4, 19 (GPT-3, PALM, MT-NLG at TP=32; Secs. 2.4, 6.4)",
         ("workload.tokens=128", set_arg("sweep.cases", [{"workload.model.name": "gpt-3"}]),
          set_arg("sweep.grid", {"workload.sublayer": ["OP", "FC-2"], "scheme.kind": ["sequential", "t3_mca"]}))),
    Spec("fig20", "fig20", "Fig. 20 (2x CUs; Sec. 7.5)",
         ("workload.tokens=128", set_arg("sweep.cases", [TNLG8]),
          set_arg("sweep.grid", {"workload.sublayer": ["OP", "FC-2"], "scheme.kind": ["sequential", "t3_mca"]}))),
    Spec("sweep-tracker", "sweep-tracker", "tracker entries / ways / granularity",
         ("workload.tokens=128", set_arg("sweep.cases", [{"scheme.kind": "sequential"}, {},
                                                         {"system.tracker.entries": 16},
                                                         {"system.tracker.granularity": "wg"}]),
          set_arg("sweep.grid", {"workload.sublayer": ["FC-2"]}))),
    Spec("sweep-tracker", "sweep-tracker", "tracker size at TP=32 (Sec. 6.4; deadlock-free admission)",
         ("workload.tokens=128", set_arg("sweep.cases", [{"scheme.kind": "sequential"}, {}]),
          set_arg("sweep.grid", {"workload.sublayer": ["FC-1"]})), "experiments/sweep-tracker/tp32.yaml"),
    Spec("sweep-mca", "sweep-mca", "MCA thresholds and starvation limit",
         ("workload.tokens=128", set_arg("sweep.cases", [
             {"scheme.kind": "sequential"}, {"scheme.kind": "t3"}, {},
             {"system.memory_controller.arbitration.threshold_mode": "static",
              "system.memory_controller.arbitration.occupancy_threshold": 5}]),
          set_arg("sweep.grid", {"workload.sublayer": ["FC-2"]}))),
    Spec("sweep-mca", "sweep-mca", "MCA starvation limit at TP=32 (Sec. 6.4)",
         ("workload.tokens=128", set_arg("sweep.cases", [
             {"scheme.kind": "sequential"}, {}, {"system.memory_controller.arbitration.starvation_limit_cycles": 1000}]),
          set_arg("sweep.grid", {"workload.sublayer": ["FC-2"]})), "experiments/sweep-mca/tp32.yaml"),
)
#: the validation of Fig. 14: ``t3sim validate`` of this system's measured reduce-scatter CSV
VALIDATION_SYSTEM = "h200-4gpu"
VALIDATION_STEM = "reduce_scatter_4gpu"


def validation_csv(root: str | Path, system: str = VALIDATION_SYSTEM) -> Path:
    """The validation output CSV under a results root (``validation/<system>/<stem>.csv``)."""
    return Path(root) / "validation" / system / f"{VALIDATION_STEM}.csv"


def validation_inputs() -> Dict[str, str]:
    """``experiments/fig14/validate.yaml``: the system and measured CSV of ``t3sim validate`` (repo-relative)."""
    import yaml  # lazy: PyYAML loads only when the validation runs

    return yaml.safe_load((REPO / "experiments" / "fig14" / "validate.yaml").read_text())
