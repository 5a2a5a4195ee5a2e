"""Read finished runs back from the results layout, for plots and the reproduction report (pure).

Only results files are read (``results/<experiment>/<hash>/{config.yaml,stats.json,summary.csv}``, through
:mod:`t3sim.results.store`); nothing here simulates. A :class:`Run` is one point: its resolved config (plain
data), its ``summary.csv`` row with numbers typed, and its statistics loaded on first use.

Duplicates. One results folder may hold the same point at several sizes (a ``--quick`` run at 128 tokens
beside the full-size one). :func:`load_runs` keeps, per point identity (the resolved config without
``workload.tokens``), the run with the most tokens, unless the caller names the exact hashes to read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from t3sim.results.store import ResultStore, is_complete, load_run, load_yaml, read_csv

#: the paper's names (Table 2, Sec. 5.3, Sec. 6.1)
MODEL_NAMES = {"mega-gpt-2": "Mega-GPT-2", "t-nlg": "T-NLG", "gpt-3": "GPT-3", "palm": "PALM", "mt-nlg": "MT-NLG"}
#: scheme kind -> (display name, colour), learned from the results read: every run's summary.csv carries its
#: scheme's ``scheme_label`` and ``scheme_color``, written from the scheme's registration (t3sim.schemes), so
#: analysis keeps no list of schemes; a kind never seen in a result shows as itself, in grey
SCHEME_STYLES: Dict[str, Tuple[str, str]] = {}
GREY = "#7f7f7f"
SUBLAYER_ORDER = ("OP", "FC-2", "FC-1", "IP")
MODEL_ORDER = tuple(MODEL_NAMES)


def model_name(m: str) -> str:
    return MODEL_NAMES.get(m, m)


def scheme_name(s: str) -> str:
    return SCHEME_STYLES.get(s, (s, GREY))[0]


def scheme_color(s: str) -> str:
    return SCHEME_STYLES.get(s, (s, GREY))[1]


def remember_scheme(summary: Mapping[str, Any]) -> None:
    """Learn a scheme's display name and colour from a run summary that carries them."""
    kind, label = summary.get("scheme"), summary.get("scheme_label")
    if kind and label:
        SCHEME_STYLES[str(kind)] = (str(label), str(summary.get("scheme_color") or GREY))


def case_label(model: str, sublayer: str, tp: int, short: bool = False) -> str:
    """``T-NLG FC-2 TP=8`` (``short``: ``T-NLG\\nFC-2 8``) -- the paper's case naming (Figs. 15-18)."""
    return f"{model_name(model)}\n{sublayer} {tp}" if short else f"{model_name(model)} {sublayer} TP={tp}"


def case_sort_key(model: str, sublayer: str, tp: int):
    mi = MODEL_ORDER.index(model) if model in MODEL_ORDER else len(MODEL_ORDER)
    si = SUBLAYER_ORDER.index(sublayer) if sublayer in SUBLAYER_ORDER else len(SUBLAYER_ORDER)
    return (mi, model, tp, si)


def _num(v: Any) -> Any:
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return v
        return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() else f
    return v


@dataclass
class Run:
    """One finished point read from disk."""

    path: Path
    experiment: str
    config: Dict[str, Any]
    summary: Dict[str, Any]
    _stats: Optional[Dict[str, Any]] = field(default=None, repr=False)

    @property
    def chash(self) -> str:
        return self.path.name

    def cfg(self, dotted: str, default: Any = None) -> Any:
        """A resolved config field by dotted path (``system.gpu.num_cus``)."""
        node: Any = self.config
        for k in dotted.split("."):
            if not isinstance(node, Mapping) or k not in node:
                return default
            node = node[k]
        return node

    @property
    def tokens(self) -> int:
        t = self.cfg("workload.tokens")
        return int(t) if t is not None else int(self.cfg("workload.model.seq_len")) * int(self.cfg("workload.model.batch"))

    @property
    def model(self) -> str:
        return str(self.summary.get("model", self.cfg("workload.model.name")))

    @property
    def sublayer(self) -> str:
        return str(self.summary.get("sublayer", self.cfg("workload.sublayer")))

    @property
    def tp(self) -> int:
        return int(self.summary.get("tp", self.cfg("workload.tp")))

    @property
    def scheme(self) -> str:
        return str(self.summary.get("scheme", self.cfg("scheme.kind")))

    def stat(self, name: str, default: Any = None) -> Any:
        """A statistic's value from ``stats.json`` by dotted name (loaded on first use)."""
        if self._stats is None:
            self._stats = json.loads((self.path / "stats.json").read_text())
        node: Any = self._stats
        for k in name.split("."):
            if not isinstance(node, Mapping) or k not in node:
                return default
            node = node[k]
        return node.get("value", default) if isinstance(node, Mapping) else default


def read_run(d: str | Path) -> Run:
    """One run directory (config and summary now, stats on demand)."""
    d = Path(d)
    if not is_complete(d):
        load_run(d)  # raises the store's InputError naming what is missing
    config = load_yaml((d / "config.yaml").read_text())
    row = read_csv(d / "summary.csv")[0]
    summary = {k: _num(v) for k, v in row.items()}
    remember_scheme(summary)
    return Run(d, str(summary.pop("experiment")), config, summary)


def identity(run: Run) -> str:
    """The point's identity without its token count (for de-duplicating sizes)."""
    cfg = json.loads(json.dumps(run.config))
    cfg.get("workload", {}).pop("tokens", None)
    return json.dumps(cfg, sort_keys=True)


def load_runs(root: str | Path, experiment: str, hashes: Optional[Iterable[str]] = None,
              tokens: Optional[int] = None, every_size: bool = False) -> List[Run]:
    """The runs of ``results/<experiment>/``: those in ``hashes`` if given, else one per point identity
    (the most tokens, or exactly ``tokens`` when given); ``every_size``: every run (an experiment whose sweep
    axis is the token count)."""
    store = ResultStore(root)
    if hashes is not None or every_size:
        wanted = set(hashes) if hashes is not None else None
        return [read_run(p) for p in store.iter_runs(experiment) if wanted is None or p.name in wanted]
    best: Dict[str, Run] = {}
    for p in store.iter_runs(experiment):
        r = read_run(p)
        if tokens is not None and r.tokens != tokens:
            continue
        k = identity(r)
        if k not in best or r.tokens > best[k].tokens:
            best[k] = r
    return sorted(best.values(), key=lambda r: (case_sort_key(r.model, r.sublayer, r.tp), r.scheme, r.chash))


def f(summary: Mapping, key: str) -> float:
    """A summary number (0.0 when missing/blank)."""
    v = summary.get(key, 0.0)
    return float(v) if v not in ("", None) else 0.0
