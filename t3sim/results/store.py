"""The on-disk results layout, shared by every run.

Each run of a resolved experiment point writes one directory::

    results/<experiment>/<hash>/
        config.yaml   the resolved config (bases merged, overrides applied, defaults filled)
        stats.json    hierarchical statistics: {group: {stat: {value, unit, description}}}
        summary.csv   one header row and one data row (headline numbers, units in column names)
        meta.json     seed, t3sim version, model version, config hash, wall-clock time, host (not part of the stats)

``<hash>`` is the first 12 hex digits of the SHA-256 of the resolved config's
canonical JSON (sorted keys), so the same config always maps to the same
directory and a re-run finds it. The hash leaves the code out: ``meta.json``'s ``model_version``
(:mod:`t3sim.model_version`) says which model simulated the run, and :func:`stored_model_version` reads it
back (0, "before versioning", where a run has none), so a reuse by an older model is noticed
(:mod:`t3sim.exec.runner` simulates such a point again).

Atomicity: everything is written into a hidden temporary sibling directory,
fsynced, and renamed into place in one ``os.rename``. A directory at the final
path is therefore always complete; an interrupted run leaves only a
``.tmp-*`` directory, which readers ignore and the next run removes
(:meth:`ResultStore.clean_partial`, which leaves alone the temporary
directories of writers still running on this host).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import yaml

from t3sim import __version__
from t3sim.errors import InputError
from t3sim import model_version
from t3sim.results.stats import Stats

#: libyaml's safe loader where PyYAML was built with it (about 10x faster on the ~30 KB resolved configs that
#: reading a results tree parses by the thousand), else the pure-Python one; both load the same safe YAML
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """Parse a results file's safe YAML (a written ``config.yaml``); raises ``yaml.YAMLError``."""
    return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader

FILES = ("config.yaml", "stats.json", "summary.csv", "meta.json")
HASH_LEN = 12


@functools.lru_cache(maxsize=1)
def code_revision() -> str:
    """The simulator's source revision (see :func:`source_revision`) for this installed package.
    Results are reused by config hash alone, so this (in ``meta.json``) is how a reuse from older
    code is noticed."""
    return source_revision(Path(__file__).resolve().parents[2])


def source_revision(root: Path) -> str:
    """Revision of the checkout at ``root``: the ``git`` short commit, with ``+dirty`` when ``t3sim/``
    has uncommitted changes; outside a git checkout (a copied tree, an unpacked archive, no ``git``)
    ``src-`` and a short SHA-256 of the ``t3sim/**/*.py`` sources, so results still name their code;
    ``""`` when neither is available."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "-uno", "--", "t3sim"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    files = sorted((root / "t3sim").rglob("*.py"))
    if not files:
        return ""
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return "src-" + h.hexdigest()[:HASH_LEN]


def canonical_json(obj: Any) -> str:
    """Canonical JSON (sorted keys, no whitespace) used for hashing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def config_hash(resolved: Dict[str, Any]) -> str:
    """Short SHA-256 of a resolved config (a plain, JSON-able dict)."""
    return hashlib.sha256(canonical_json(resolved).encode()).hexdigest()[:HASH_LEN]


@dataclass
class RunResult:
    """Everything one run produced.

    Attributes:
        experiment: experiment name (results/<experiment>/).
        config: the resolved config as plain data.
        stats: all statistics, each with unit and description.
        summary: ordered headline values for summary.csv; keys carry units
            (``total_time_us``).
        seed: the simulation seed.
        meta: version, wall time, host... (never compared for determinism).
        timeline: a Chrome trace-event timeline of the run (``t3sim run --timeline``), written as
            ``timeline.json`` beside the results; None when the run was not traced.
    """

    experiment: str
    config: Dict[str, Any]
    stats: Stats
    summary: Dict[str, Any]
    seed: int
    meta: Dict[str, Any] = field(default_factory=dict)
    timeline: Optional[Dict[str, Any]] = None

    @property
    def config_hash(self) -> str:
        return config_hash(self.config)


class ResultStore:
    """Reads and writes run directories under ``root`` (default ``results/``)."""

    def __init__(self, root: str | Path = "results"):
        self.root = Path(root)

    def run_dir(self, experiment: str, chash: str) -> Path:
        return self.root / experiment / chash

    def find(self, experiment: str, resolved: Dict[str, Any]) -> Optional[Path]:
        """The complete result directory for this resolved config, if one exists."""
        d = self.run_dir(experiment, config_hash(resolved))
        return d if is_complete(d) else None

    def write(self, result: RunResult, replace: bool = False) -> Path:
        """Atomically write ``result``; returns the final directory.

        If a complete result already sits at the final path (another run
        finished the same config meanwhile) it is kept, unless ``replace``
        (``--force``): then the old directory is swapped out and the new one
        renamed in, so the final path never holds a partial result.
        """
        chash = result.config_hash
        final = self.run_dir(result.experiment, chash)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".tmp-{chash}-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        # the model version last: a result written now was simulated by the current model
        meta = {"t3sim_version": __version__, "code_revision": code_revision(), "config_hash": chash,
                "seed": result.seed, **result.meta, "model_version": model_version.MODEL_VERSION}
        _write(tmp / "config.yaml", config_yaml(result.config))
        _write(tmp / "stats.json", stats_json(result.stats))
        _write(tmp / "summary.csv", summary_csv(result))
        _write(tmp / "meta.json", json.dumps(meta, indent=1, sort_keys=True) + "\n")
        if result.timeline is not None:
            _write(tmp / "timeline.json", json.dumps(result.timeline, separators=(",", ":")) + "\n")
        _fsync_dir(tmp)
        if final.exists() and not replace:  # someone finished the same config meanwhile: keep theirs
            shutil.rmtree(tmp)
            return final
        old = None
        if final.exists():
            old = final.parent / f".tmp-old-{chash}-{os.getpid()}"
            if old.exists():
                shutil.rmtree(old)
            os.rename(final, old)
        os.rename(tmp, final)
        _fsync_dir(final.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return final

    def add_timeline(self, d: Path, timeline: Dict[str, Any]) -> Path:
        """Write ``timeline.json`` into the complete result directory ``d`` (atomically: a temporary file renamed
        into place), leaving its other files as they are; returns the file's path."""
        final = Path(d) / "timeline.json"
        tmp = Path(d) / f".timeline.json.tmp-{os.getpid()}"
        _write(tmp, json.dumps(timeline, separators=(",", ":")) + "\n")
        os.replace(tmp, final)
        _fsync_dir(Path(d))
        return final

    def clean_partial(self, experiment: str) -> int:
        """Remove leftovers of interrupted writes; returns how many.

        A temporary directory is named ``.tmp-<hash>-<pid>``; one whose writer
        is still alive on this host (another sweep writing meanwhile) is kept.
        Call it when this process has no write in flight.
        """
        n = 0
        d = self.root / experiment
        if d.is_dir():
            for p in d.glob(".tmp-*"):
                if _writer_alive(p.name):
                    continue
                shutil.rmtree(p, ignore_errors=True)
                n += 1
        return n

    def iter_runs(self, experiment: str) -> Iterator[Path]:
        """Complete run directories of ``experiment`` (sorted by hash)."""
        d = self.root / experiment
        if d.is_dir():
            for p in sorted(d.iterdir()):
                if not p.name.startswith(".") and is_complete(p):
                    yield p


#: LibYAML's emitter where PyYAML has it (its output is the pure-Python SafeDumper's, ~4x faster:
#: tests/results/test_store.py holds them equal)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def config_yaml(config: Dict[str, Any]) -> str:
    """The text of ``config.yaml``: the resolved config, keys in the model's order."""
    return yaml.dump(config, Dumper=_DUMPER, sort_keys=False)


def stats_json(stats: Stats) -> str:
    """The text of ``stats.json``: byte-identical for identical statistics."""
    return json.dumps(stats.to_dict(), indent=1) + "\n"


def summary_csv(result: RunResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = ["experiment", "config_hash", "seed", *result.summary.keys()]
    w.writerow(cols)
    w.writerow([result.experiment, result.config_hash, result.seed, *result.summary.values()])
    return buf.getvalue()


def is_complete(d: Path) -> bool:
    return d.is_dir() and all((d / f).is_file() for f in FILES)


def model_version_of(meta: Dict[str, Any]) -> int:
    """The model version a run's meta records; 0 ("before versioning") where it records none or no integer."""
    v = meta.get("model_version", 0)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def stored_model_version(d: str | Path) -> int:
    """The model version of the complete run directory ``d`` (its ``meta.json`` alone is read); 0 where
    ``meta.json`` records none (or cannot be read as a JSON object)."""
    try:
        meta = json.loads((Path(d) / "meta.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return 0
    return model_version_of(meta) if isinstance(meta, dict) else 0


def load_run(d: str | Path) -> RunResult:
    """Read a run directory back (raises InputError naming the bad file and what is wrong with it)."""
    d = Path(d)
    if not is_complete(d):
        missing = [f for f in FILES if not (d / f).is_file()]
        raise InputError(str(d), f"an incomplete result directory (missing {', '.join(missing)})", f"a directory holding {', '.join(FILES)}")
    meta = _read_json(d / "meta.json")
    if not isinstance(meta, dict):
        raise InputError(str(d / "meta.json"), f"a JSON {type(meta).__name__}", "a JSON object")
    stats_raw = _read_json(d / "stats.json")
    try:
        if not isinstance(stats_raw, dict):
            raise ValueError(f"a JSON {type(stats_raw).__name__} at top level")
        stats = Stats.from_dict(stats_raw)
    except (ValueError, TypeError) as exc:
        raise InputError(str(d / "stats.json"), str(exc), "{group: {stat: {value, unit, description}}}") from None
    try:
        config = load_yaml(_read_text(d / "config.yaml"))
    except yaml.YAMLError:
        raise InputError(str(d / "config.yaml"), "malformed YAML", "the resolved config written by t3sim") from None
    if not isinstance(config, dict):
        raise InputError(str(d / "config.yaml"), f"a YAML {type(config).__name__}", "the resolved config written by t3sim")
    rows = read_csv(d / "summary.csv", required=["experiment", "config_hash", "seed"])
    if len(rows) != 1:
        raise InputError(str(d / "summary.csv"), f"{len(rows)} data rows", "exactly one data row")
    row = rows[0]
    experiment = row.pop("experiment")
    row.pop("config_hash")
    try:
        seed = int(row.pop("seed"))
    except ValueError:
        raise InputError(f"{d / 'summary.csv'}:2: seed", "a value that is not an integer", "the integer seed") from None
    return RunResult(experiment, config, stats, row, seed, meta)


def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(str(p), f"bytes that are not UTF-8 (offset {exc.start})", "the UTF-8 text t3sim writes") from None
    except OSError as exc:
        raise InputError(str(p), f"an unreadable file ({exc.strerror})", "a readable file") from None


def read_csv(path: str | Path, required: Optional[List[str]] = None) -> List[Dict[str, str]]:
    """Read a CSV with a header; check required columns and row widths (errors name file:line)."""
    path = Path(path)
    if not path.exists():
        raise InputError(str(path), "no such file", "an existing CSV file")
    text = _read_text(path)
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"{path}:1", "an empty file", "a CSV header row") from None
    if required:
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(f"{path}:1", f"columns {header}", f"a header with {', '.join(required)}")
    rows = []
    for i, r in enumerate(reader, start=2):
        if not r or all(not c.strip() for c in r):
            continue
        if len(r) != len(header):
            raise InputError(f"{path}:{i}", f"{len(r)} fields", f"{len(header)} fields ({', '.join(header)})")
        rows.append(dict(zip(header, r)))
    return rows


def _read_json(p: Path) -> Any:
    try:
        return json.loads(_read_text(p))
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}:{exc.lineno}", f"malformed JSON ({exc.msg})", "valid JSON") from None


def _write(p: Path, text: str) -> None:
    with open(p, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _writer_alive(tmp_name: str) -> bool:
    """Whether the process that named this temporary directory is still running (not us)."""
    try:
        pid = int(tmp_name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return False
    if pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists but is not ours (or cannot tell): leave it
    return True


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
