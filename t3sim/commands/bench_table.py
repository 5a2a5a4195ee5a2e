"""The bench table of ``docs/performance.md``, written by ``t3sim bench --write``.

The table sits between the markers :data:`BEGIN` and :data:`END`; ``--write`` replaces what is between them with
the cases just measured, the machine they ran on and the commit of the code, so the page always shows one current
table. ``tests/test_docs_numbers.py`` holds the README's quoted wall times to it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Dict, List, Sequence

from t3sim.errors import InputError

BEGIN = "<!-- bench-table: written by `t3sim bench --write`; do not edit by hand -->"
END = "<!-- /bench-table -->"
COLUMNS = ("case", "wall s", "simulated us", "slowdown", "DRAM requests/s", "simpy events/s", "peak RSS MB", "events")


def commit_of(repo: Path) -> str:
    """The checkout's commit (12 hex digits), with ``+changes`` when the work tree differs from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=repo, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" +changes" if dirty else "")


def _rate(x) -> str:
    return f"{x:.2e}" if x is not None else "-"


def render(results: Sequence[Dict[str, object]], machine: Dict[str, object], commit: str) -> str:
    """The block between the markers: a line naming the machine and commit, then one row per measured case."""
    where = (f"Measured on {machine.get('cpu', 'an unknown CPU')}, {machine['cpus']} CPUs ({machine['platform']}; "
             f"Python {machine['python']}, numpy {machine.get('numpy', '?')}, numba {machine.get('numba', '?')}, "
             f"simpy {machine.get('simpy', '?')}), at commit {commit}, one run per case, each in a fresh process "
             "after a numba warm-up.")
    lines: List[str] = [BEGIN, where, "", "| " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * (len(COLUMNS) - 1)]
    for r in results:
        if "error" in r:
            continue
        events = r.get("simpy_events")
        lines.append(f"| {r['case']} ({r['what']}) | {r['wall_s']:.2f} | {r['simulated_us']:.1f} | "
                     f"{r['slowdown']:.2e} | {_rate(r['dram_requests_per_s'])} | {_rate(r['simpy_events_per_s'])} | "
                     f"{r['peak_rss_MB']:.0f} | {'-' if events is None else f'{int(events) // 1000}k'} |")
    lines.append(END)
    return "\n".join(lines)


def markers(path: Path) -> tuple:
    """``(text, begin, end)`` of ``path``'s marked block; :class:`InputError` (``--write``) if the file cannot be
    read or written, or does not hold each marker once, in order."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError("--write", f"{path}: {exc.strerror}",
                         "a readable Markdown file holding the bench-table markers") from None
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i or text.count(BEGIN) != 1 or text.count(END) != 1:
        raise InputError("--write", f"{path} without one bench-table marker pair",
                         f"a Markdown file holding '{BEGIN}' and '{END}' once each")
    return text, i, j


def write(path: Path, block: str) -> None:
    """Replace the marked block of ``path`` by ``block``."""
    text, i, j = markers(path)
    path.write_text(text[:i] + block + text[j + len(END):])
