"""Whether each committed result is current: the model version it was simulated with beside the current one
(:mod:`t3sim.model_version`), computed from data, never narrated by hand.

A snapshot folder (``experiments/reproduction/``) holds ``model_version.json``::

    {"report":      {"<section>": {"model_version": 1, "points": 241, "cpu_hours": 3.6}, ...},
     "experiments": {"<name>": {"readme": "experiments/<folder>/README.md", "what": "...", "model_version": 0,
                                "points": 36, "cpu_hours": null, "rerun": ["t3sim run ..."], "note": "..."}, ...}}

``report``: each section of ``REPRODUCTION.md`` (:data:`SECTIONS`: its experiments, its figure CSVs in
``figures/`` and its rows of ``reproduction.csv``), written by ``t3sim reproduce`` from its runs' ``meta.json``
(:func:`from_runs`: the oldest model version among them, their count and the sum of their wall times).
``experiments``: the experiments' own committed results outside the report (a README's table, a folder's CSV),
each with the README that shows it, what to re-run and, for a result from before versioning (version 0), the model
changes it predates (``note``). ``cpu_hours`` is the last measured cost of re-running it (a sum of per-point wall
times), null where none was measured. A snapshot without the file counts as version 0 throughout.

From it: the report's model-version line (:func:`header_line`), ``t3sim reproduce --status``'s listing of what
predates the current model (:func:`status_lines`; :func:`results_status` for a results root's runs) and each
experiment README's status paragraph (:func:`readme_status`), which sits between ``<!-- status: NAME -->`` and
``<!-- /status -->`` and is rewritten by ``t3sim reproduce --status --write`` (:func:`write_readmes`).
"""

from __future__ import annotations

import csv
import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from t3sim import model_version
from t3sim.errors import InputError
from t3sim.reproduction.ficco import experiments as ficco_experiments
from t3sim.reproduction.flux import experiments as flux_experiments
from t3sim.reproduction.fused import experiments as fused_experiments
from t3sim.reproduction.spec import REPO, Spec
from t3sim.reproduction.t3 import experiments as t3_experiments
from t3sim.results.store import model_version_of

MANIFEST = "model_version.json"
#: the committed snapshot folder, read by ``t3sim reproduce --status``
SNAPSHOT = REPO / "experiments" / "reproduction"
#: the file a ``t3sim validate`` output folder run by ``t3sim reproduce`` records its model version in
VALIDATION_VERSION = "model_version.json"


@dataclass(frozen=True)
class Section:
    """A section of the report: its title, the experiment files it runs, its figures (``figures/<stem>.csv``)."""

    title: str
    specs: Tuple[Spec, ...]
    figures: Tuple[str, ...]

    @property
    def results(self) -> Tuple[str, ...]:
        """Its results experiments (``results/<name>/``)."""
        return tuple(dict.fromkeys(s.results for s in self.specs))

    @property
    def folders(self) -> Tuple[str, ...]:
        """Its ``t3sim reproduce --only`` folders."""
        return tuple(dict.fromkeys(s.folder for s in self.specs)) or ("fig14",)


#: the report's sections, in its order (``fig14``: the reduce-scatter validation, run by ``t3sim validate``)
SECTIONS: Dict[str, Section] = {
    "t3": Section("T3", t3_experiments.SPECS, ("fig04", "fig06", "fig15", "fig16", "fig17", "fig18", "fig19", "fig20",
                                                "sweep-tracker", "sweep-mca")),
    "fig14": Section("Fig. 14 validation", (), ("fig14",)),
    "flux": Section("FLUX", flux_experiments.SPECS, ("flux-op",)),
    "ficco": Section("FiCCO", ficco_experiments.SPECS, ("ficco", "ficco-char")),
    "fused": Section("fused GPU-initiated kernels", fused_experiments.SPECS,
                     ("fused-gemv", "fused-emb-a2a", "fused-emb-a2a-2node", "fused-gemm-a2a", "fused-skew",
                      "fused-occupancy", "fused-scale")),
}


@dataclass(frozen=True)
class Entry:
    """One committed result set: what it is, the model version it was simulated with, its points, the measured cost
    of re-running it (CPU-hours; None: not measured), the commands that re-run it and, for a version-0 result, the
    model changes it predates."""

    name: str
    what: str
    model_version: int
    points: Optional[int]
    cpu_hours: Optional[float]
    rerun: Tuple[str, ...]
    note: str = ""
    readme: str = ""

    def current(self, now: Optional[int] = None) -> bool:
        return self.model_version == (model_version.MODEL_VERSION if now is None else now)


@dataclass
class Manifest:
    """A snapshot's ``model_version.json``: the report's sections and the experiments' own results, by name."""

    report: Dict[str, Entry]
    experiments: Dict[str, Entry]

    def entries(self) -> Dict[str, Entry]:
        return {**self.report, **self.experiments}


def section_entry(name: str, version: int, points: Optional[int], cpu_hours: Optional[float]) -> Entry:
    """A report section's entry (its description and re-run command come from :data:`SECTIONS`)."""
    sec = SECTIONS[name]
    return Entry(name, f"the committed report's {sec.title} section (`experiments/reproduction/`; "
                       f"figure{'s' if len(sec.figures) > 1 else ''} {', '.join(sec.figures)})",
                 version, points, cpu_hours, ("t3sim reproduce " + " ".join(f"--only {f}" for f in sec.folders),))


def _int(v, where: str) -> Optional[int]:
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise InputError(where, repr(v), "a non-negative integer (or null)")
    return v


def _hours(v, where: str) -> Optional[float]:
    if v is None:
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
        raise InputError(where, repr(v), "CPU-hours, a non-negative number (or null: not measured)")
    return float(v)


def read(folder: str | Path) -> Manifest:
    """The manifest of a snapshot ``folder``; without one, every report section at version 0 (before versioning).
    :class:`~t3sim.errors.InputError` names a malformed field."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return Manifest({n: section_entry(n, 0, None, None) for n in SECTIONS}, {})
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"malformed JSON ({exc})", "the model-version manifest t3sim writes") from None
    if not isinstance(data, dict):
        raise InputError(str(path), f"a JSON {type(data).__name__}", "a JSON object with report and experiments")
    for key in ("report", "experiments"):
        if not isinstance(data.get(key) or {}, dict) or \
                not all(isinstance(d, dict) for d in (data.get(key) or {}).values()):
            raise InputError(f"{path}: {key}", repr(data.get(key))[:60], "an object of named objects")
    report: Dict[str, Entry] = {}
    for name, d in (data.get("report") or {}).items():
        where = f"{path}: report.{name}"
        if name not in SECTIONS:
            raise InputError(where, repr(name), f"a report section: {', '.join(SECTIONS)}")
        report[name] = section_entry(name, _int(d.get("model_version"), f"{where}.model_version") or 0,
                                     _int(d.get("points"), f"{where}.points"),
                                     _hours(d.get("cpu_hours"), f"{where}.cpu_hours"))
    experiments: Dict[str, Entry] = {}
    for name, d in (data.get("experiments") or {}).items():
        where = f"{path}: experiments.{name}"
        if name in SECTIONS:
            raise InputError(where, repr(name), "a name that is not a report section's")
        for key in ("readme", "what", "rerun"):
            if not d.get(key):
                raise InputError(f"{where}.{key}", "nothing", f"the entry's {key}")
        experiments[name] = Entry(name, str(d["what"]), _int(d.get("model_version"), f"{where}.model_version") or 0,
                                  _int(d.get("points"), f"{where}.points"),
                                  _hours(d.get("cpu_hours"), f"{where}.cpu_hours"),
                                  tuple(d["rerun"]) if isinstance(d["rerun"], list) else (str(d["rerun"]),),
                                  str(d.get("note", "")), str(d["readme"]))
    return Manifest(report, experiments)


def manifest_json(m: Manifest) -> str:
    """The text of ``model_version.json`` (sections in the report's order, experiments in theirs)."""
    report = {n: {"model_version": e.model_version, "points": e.points, "cpu_hours": e.cpu_hours}
              for n, e in sorted(m.report.items(), key=lambda kv: list(SECTIONS).index(kv[0]))}
    experiments = {n: {"readme": e.readme, "what": e.what, "model_version": e.model_version, "points": e.points,
                       "cpu_hours": e.cpu_hours, "rerun": list(e.rerun), **({"note": e.note} if e.note else {})}
                   for n, e in m.experiments.items()}
    return json.dumps({"report": report, "experiments": experiments}, indent=1) + "\n"


def _json_object(path: Path) -> dict:
    """A JSON object file's contents; {} where it is missing or not one."""
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return d if isinstance(d, dict) else {}


def _meta(run_dir: Path) -> dict:
    return _json_object(Path(run_dir) / "meta.json")


def _wall_hours(walls: Iterable[object]) -> Optional[float]:
    w = [float(x) for x in walls if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return round(sum(w) / 3600, 4) if w else None


def validation_version(folder: str | Path) -> int:
    """The model version a ``t3sim validate`` output folder was simulated with (0 where it records none)."""
    return model_version_of(_json_object(Path(folder) / VALIDATION_VERSION))


def write_validation_version(folder: str | Path) -> Path:
    """Record the current model version in a ``t3sim validate`` output folder just simulated."""
    path = Path(folder) / VALIDATION_VERSION
    path.write_text(json.dumps({"model_version": model_version.MODEL_VERSION}) + "\n")
    return path


def from_runs(runs: Mapping[str, Sequence[object]], validation_csv: Optional[Path] = None) -> Dict[str, Entry]:
    """The report's sections from a results root's runs (``runs``: results experiment -> runs with a ``path``,
    :class:`t3sim.analysis.runs.Run`) and the validation output CSV: per section with results, the oldest model
    version of its runs, their count and the sum of their wall times (CPU-hours)."""
    out: Dict[str, Entry] = {}
    for name, sec in SECTIONS.items():
        if name == "fig14":
            if validation_csv is None or not Path(validation_csv).is_file():
                continue
            with Path(validation_csv).open(newline="") as fh:
                rows = list(csv.DictReader(fh))
            walls = []
            for r in rows:
                try:
                    walls.append(float(r.get("wall_s") or "nan"))
                except ValueError:
                    pass
            out[name] = section_entry(name, validation_version(Path(validation_csv).parent), len(rows),
                                      _wall_hours(w for w in walls if w == w))
            continue
        metas = [_meta(r.path) for n in sec.results for r in runs.get(n, ())]
        if metas:
            out[name] = section_entry(name, min(model_version_of(m) for m in metas), len(metas),
                                      _wall_hours(m.get("wall_s") for m in metas))
    return out


# ------------------------------------------------------------------------------------------------ the words


def _cost(e: Entry) -> str:
    pts = f"{e.points} points" if e.points is not None else "points not counted"
    return f"{pts}, " + (f"about {e.cpu_hours:.3g} CPU-hours" if e.cpu_hours is not None else "cost not measured")


def _commands(e: Entry) -> str:
    cmds = [f"`{c}`" for c in e.rerun]
    return cmds[0] if len(cmds) == 1 else ", ".join(cmds[:-1]) + ", then " + cmds[-1]


def _since(e: Entry, now: int) -> str:
    """The model changes a result of ``e``'s version predates (its note, for the changes before versioning)."""
    v = e.model_version
    changes = [e.note] if e.note and v == 0 else []
    first = v + 1 if v > 0 else (2 if changes else 1)  # a version-0 note names what version 1 brought
    changes += [f"version {k} ({model_version.HISTORY.get(k, '?')})" for k in range(first, now + 1)]
    return "; ".join(changes)


def header_line(report: Mapping[str, Entry], now: Optional[int] = None) -> str:
    """The report's one generated line: the model version its results were simulated with, and which sections are
    current."""
    now = model_version.MODEL_VERSION if now is None else now
    ran = [(n, report[n]) for n in SECTIONS if n in report]
    head = f"**Model version {now}** (`t3sim/model_version.py`)"
    if not ran:
        return f"{head}: no section has results."
    stale = [(n, e) for n, e in ran if not e.current(now)]
    titles = ", ".join(SECTIONS[n].title for n, _ in ran)
    if not stale:
        return f"{head}: every section was simulated with it ({titles}): all current."
    cur = [SECTIONS[n].title for n, e in ran if e.current(now)]
    old = "; ".join(f"{SECTIONS[n].title} ({model_version.describe(e.model_version)})" for n, e in stale)
    return (f"{head} is current; sections simulated with another version: {old}"
            f"{'; current: ' + ', '.join(cur) if cur else ''}. `t3sim reproduce --status` lists them and what "
            "re-running them costs.")


def status_lines(m: Manifest, now: Optional[int] = None, results: Optional[Path] = None) -> List[str]:
    """``t3sim reproduce --status``: one line per result set that another model version simulated (which
    experiments, how many points, the measured cost, the command), then one per experiment of the results root
    ``results`` holding such runs (:func:`results_status`), then a total line; or one line "all current"."""
    now = model_version.MODEL_VERSION if now is None else now
    out = []
    stale = [e for e in m.entries().values() if not e.current(now)]
    for e in stale:
        where = (f"report section {e.name} (experiments {', '.join(SECTIONS[e.name].folders)})"
                 if e.name in m.report else f"{e.readme} ({e.name})")
        out.append(f"{where}: {model_version.describe(e.model_version)}, current {now}: {e.what}; "
                   f"{_cost(e)}; re-run: {_commands(e)}")
    runs = results_status(results, now) if results is not None else []
    if not stale and not runs:
        return [f"all current (model version {now})"]
    pts = sum(e.points or 0 for e in stale)
    hours = sum(e.cpu_hours or 0 for e in stale)
    unmeasured = sum(1 for e in stale if e.cpu_hours is None)
    total = (f"{len(stale)} committed result set{'s' if len(stale) != 1 else ''} predate model version {now}: "
             f"{pts} points, about {hours:.3g} CPU-hours measured"
             + (f" ({unmeasured} without a measured cost)" if unmeasured else ""))
    if runs:
        total += f"; {len(runs)} experiment{'s' if len(runs) != 1 else ''} of {results} hold runs of another version"
    return out + runs + [total]


def results_status(root: str | Path, now: Optional[int] = None) -> List[str]:
    """The runs under a results root that another model version simulated, per experiment (``meta.json``: their
    model version and wall time); ``t3sim run`` / ``t3sim reproduce`` simulates them again."""
    now = model_version.MODEL_VERSION if now is None else now
    root = Path(root)
    out = []
    if not root.is_dir():
        return out
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        metas = [_meta(r) for r in sorted(d.iterdir()) if r.is_dir() and (r / "meta.json").is_file()]
        old = [m for m in metas if model_version_of(m) != now]
        if old:
            versions = sorted({model_version_of(m) for m in old})
            h = _wall_hours(m.get("wall_s") for m in old)
            out.append(f"{d}: {len(old)} of {len(metas)} points simulated with "
                       f"{', '.join(model_version.describe(v) for v in versions)}, current {now}; "
                       + (f"about {h:.3g} CPU-hours by their meta.json wall times" if h is not None
                          else "cost not measured") + "; `t3sim run` or `t3sim reproduce` simulates them again")
    return out


def readme_status(e: Entry, now: Optional[int] = None, width: int = 118) -> str:
    """An experiment README's generated status paragraph for ``e`` (wrapped at ``width``)."""
    now = model_version.MODEL_VERSION if now is None else now
    what = e.what[:1].upper() + e.what[1:]
    if e.current(now):
        text = (f"**Model version.** {what}: simulated with model version {now}, the current one "
                "(`t3sim reproduce --status`).")
    elif e.model_version > now:
        text = (f"**Model version.** {what}: simulated with model version {e.model_version}, newer than this "
                f"checkout's {now}.")
    else:
        text = (f"**Model version.** {what}: simulated with model {model_version.describe(e.model_version)}, before "
                f"{_since(e, now)}; the current model is version {now}. Re-run: {_commands(e)} ({_cost(e)}).")
    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)


#: a README's status paragraph: the entry's name, the generated text
MARK = re.compile(r"<!-- status: ([\w.-]+) -->\n(.*?)\n?<!-- /status -->", re.S)
#: the status name of the whole report (its header line: :func:`header_line`)
REPORT = "report"


def cost_table(report: Mapping[str, Entry]) -> str:
    """The report's sections with their points and the measured cost of re-running them (from the manifest)."""
    rows = ["| section | model version | points | cost (CPU-hours, sum over points) |", "|---|---:|---:|---:|"]
    for n in SECTIONS:
        if n in report:
            e = report[n]
            cost = "not measured" if e.cpu_hours is None else f"{e.cpu_hours:g}"
            rows.append(f"| {SECTIONS[n].title} | {e.model_version} | {'' if e.points is None else e.points} | {cost} |")
    return "\n".join(rows)


def rewrite(text: str, m: Manifest, where: str = "README", now: Optional[int] = None) -> str:
    """``text`` with every status paragraph regenerated; :class:`~t3sim.errors.InputError` for an unknown name."""
    entries = m.entries()

    def one(match: re.Match) -> str:
        name = match.group(1)
        if name == REPORT:
            body = (textwrap.fill(header_line(m.report, now), 118, break_long_words=False, break_on_hyphens=False)
                    + "\n\n" + cost_table(m.report))
        elif name in entries:
            body = readme_status(entries[name], now)
        else:
            raise InputError(f"{where}: <!-- status: {name} -->", repr(name),
                             f"{REPORT} or an entry of {MANIFEST}: {', '.join(entries)}")
        return f"<!-- status: {name} -->\n{body}\n<!-- /status -->"
    return MARK.sub(one, text)


def readmes(repo: Path = REPO) -> List[Path]:
    """Every experiment README (``experiments/*/README.md``)."""
    return sorted((repo / "experiments").glob("*/README.md"))


def write_readmes(m: Manifest, repo: Path = REPO, now: Optional[int] = None) -> List[Path]:
    """Rewrite every experiment README's status paragraphs from ``m``; returns the files that changed."""
    changed = []
    for p in readmes(repo):
        old = p.read_text(encoding="utf-8")
        new = rewrite(old, m, str(p.relative_to(repo)), now)
        if new != old:
            p.write_text(new, encoding="utf-8")
            changed.append(p)
    return changed
