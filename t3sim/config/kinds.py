"""Which kind of config a YAML mapping is (experiment, system, model), so a file given where another kind
is expected is reported as such ("a system config, not an experiment") instead of by its first missing field.

Detection works on the composed file data (``base:`` resolved, before ``--set`` overrides):

* *experiment*: has any experiment-only section (``workload``, ``scheme``, ``simulation``, ``sweep``) or
  a ``system:`` section;
* *model*: has ``hidden_size`` (a Table 2 model preset);
* *gemm_library*: has ``kernels`` (a GEMM library file, ``configs/systems/libraries/``, that a system's
  ``gemm_library`` bases on);
* *system*: everything else (its sections are ``gpu``, ``hbm``, ``interconnect``, ...).
"""

from __future__ import annotations

from typing import Any, Dict, Type

from pydantic import BaseModel

from t3sim.errors import InputError

EXPERIMENT_ONLY = ("workload", "scheme", "simulation", "sweep", "system")
EXAMPLES = {"experiment": "configs/experiments/default.yaml", "system": "configs/systems/t3-table1.yaml",
            "model": "configs/models/t-nlg.yaml", "gemm_library": "configs/systems/libraries/cublas-h200-bf16.yaml"}


def detect_kind(data: Dict[str, Any]) -> str:
    """``experiment``, ``model``, ``gemm_library`` or ``system`` (module doc)."""
    if any(k in data for k in EXPERIMENT_ONLY):
        return "experiment"
    if "hidden_size" in data:
        return "model"
    if "kernels" in data:
        return "gemm_library"
    return "system"


def kind_of_model(model: Type[BaseModel]) -> str:
    """The config kind a root model class validates."""
    return {"ExperimentConfig": "experiment", "SystemConfig": "system", "ModelConfig": "model",
            "GemmLibraryConfig": "gemm_library"}.get(model.__name__, "")


def expect_kind(data: Any, expected: str, where: str) -> None:
    """Raise :class:`InputError` when ``data`` (a file's composed mapping) is another kind of config than
    ``expected``; ``where`` names the file."""
    if not expected or not isinstance(data, dict) or not data:
        return
    found = detect_kind(data)
    if found == expected:
        return
    why = {"experiment": "it has " + "/".join(k for k in EXPERIMENT_ONLY if k in data) + " sections",
           "model": "it has hidden_size", "system": "it has no workload section"}[found]
    hint = ""
    if expected == "system" and found == "experiment" and isinstance(data.get("system"), dict):
        hint = " (its system: section names the system" + (f" {data['system'].get('name')!r}" if data["system"].get("name") else "") + ")"
    raise InputError(where, f"{_a(found)} config ({why}), not {_a(expected)} config{hint}",
                     f"{_a(expected)} config such as {EXAMPLES[expected]}")


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"
