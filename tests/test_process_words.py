"""The product speaks of itself only: no tracked file narrates how t3sim was developed.

A user's checkout has no issue tracker, no ``shared/`` folder, no numbered papers and no development sessions, so
no code, config, test or document may cite them. Papers are cited by name and section (T3 Sec. 4.5, FLUX Alg. 2,
FiCCO Sec. IV-C, the fused computation-collective paper Sec. IV-B), measurements by the document that describes them
(experiments/validation/README.md). This test reads every git-tracked text file and lists each ``file:line`` that
uses one of :data:`_PATTERNS`.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess

import pytest

from tests.conftest import REPO

#: what may not appear, by name (each a regex matched per line)
_PATTERNS = {
    # "issue 12", "Issue 16 item 2", "issues 15, 17", "issue #4", "issue-7", "pre-issue-16" (a GitHub URL's
    # ".../issues/1397" is a source, not narration: the slash does not match)
    "issue number": r"\b[Ii]ssues?[- ]#?\d+",
    # the project's numbered paper files ("paper 000", "paper 001"): cite the paper by name and section
    "paper number": r"\b[Pp]apers?[- ]?0\d\d\b",
    # the development machine's shared folder (papers, reference measurements): absent from a user's checkout
    "shared/ path": r"\.\./shared\b|\bshared/",
    # "session 10", "this session", "Session 6": development narration; any case, inside identifiers too (a
    # technical use, e.g. an HTTP or Dask session, goes in _ALLOWED)
    "session": r"(?i:session)",
    # "on the VM", "the 2-CPU VM": the development machine
    "VM": r"\bVMs?\b",
    # "a lent host", "a lent H200", "lent-host runs": the development machines
    "lent machine": r"\b[Ll]ent\b",
    # the development machines' time budget
    "device time": r"\b[Dd]evice[- ](?:time|minutes?|calls?)\b",
    # "the goal", "as the issue lists them": the tracker's texts, which a checkout has not
    "the issue": r"\b[Tt]he issue's\b|\bas the issue\b",
    # the development machines' ritual: "Device prefix", "carry [\".whl\"]", "the returned files"
    "machine ritual": r"(?i:device prefix)|\bcarry \[|\breturned files?\b",
    # "this workplace's device pool", "a 16-core device host": the development machines again
    "device pool": r"(?i:\bworkplace\b|\bdevice (?:pool|host)s?\b)",
    # the development environment's own tools (a checkout has none of them)
    "development tool": r"\bfarm-(?:studio|bench)\b",
    # which machine took a measurement, as a story ("a second H200 run", "on another H200", "a different host", "the
    # node's notes", "(137.1 us on this one)"): a measurement is cited by its data folder and env.json
    "which machine": r"(?i:\b(?:a second|another) [ah]\d{3}\b|\bdifferent host\b|\bnode's notes\b|\bon this one\))",
}
_RX = re.compile("|".join(f"(?P<g{i}>{p})" for i, p in enumerate(_PATTERNS.values())))
_NAMES = list(_PATTERNS)

#: (path glob, line regex) pairs of legitimate technical uses of a listed word; none today
_ALLOWED: list = []

#: Files another change is rewriting at the time of writing; they are cleaned elsewhere and this list is emptied
#: once those changes are merged. docs/parameters.md is generated from the config fields' ``source``/``desc``
#: (``t3sim params --write``): it is clean once t3sim/config/experiment.py's field sources are.
_PENDING: list = []


_SELF = "tests/test_process_words.py"


def _pending(path: str) -> bool:
    # fnmatchcase with "/" kept: "experiments/*/README.md" is one folder deep, "t3sim/schemes/*" the whole tree
    for pat in _PENDING:
        if pat.endswith("/*") and path.startswith(pat[:-1]):
            return True
        if fnmatch.fnmatchcase(path, pat) and path.count("/") == pat.count("/"):
            return True
    return False


def _tracked() -> list:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.decode().split("\0") if p]


#: lower-case words one of which every match of :data:`_RX` contains: a line is matched only if it holds one
#: (``str.find`` over a whole file is far faster than a regex search, and keeps the test under a second)
_KEYS = ("issue", "paper", "shared", "session", "vm", "lent", "device", "carry", "returned", "workplace", "farm",
         "a second ", "another ", "different host", "node's notes", "on this one")


def _candidate_lines(text: str):
    """(number, line) of each line of ``text`` that holds one of :data:`_KEYS`, in order."""
    low, starts = text.lower(), set()
    if len(low) != len(text):  # a character whose lower case is longer: indices would not match
        yield from enumerate(text.splitlines(), 1)
        return
    for key in _KEYS:
        i = low.find(key)
        while i != -1:
            start = low.rfind("\n", 0, i) + 1
            starts.add(start)
            end = low.find("\n", i)
            if end == -1:
                break
            i = low.find(key, end)
    for start in sorted(starts):
        end = text.find("\n", start)
        yield text.count("\n", 0, start) + 1, text[start:end if end != -1 else len(text)]


def _findings(path: str, text: str) -> list:
    out = []
    for n, line in _candidate_lines(text):
        m = _RX.search(line)
        if not m:
            continue
        if any(fnmatch.fnmatchcase(path, g) and re.search(rx, line) for g, rx in _ALLOWED):
            continue
        what = _NAMES[int(m.lastgroup[1:])]
        out.append(f"{path}:{n}: {what}: {line.strip()[:160]}")
    return out


def test_no_tracked_file_narrates_the_development():
    found = []
    for path in _tracked():
        if path == _SELF or _pending(path):
            continue
        try:
            raw = (REPO / path).read_bytes()
        except OSError:  # listed but absent (e.g. deleted and not yet staged)
            continue
        if b"\0" in raw[:8192]:
            continue  # binary
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        found += _findings(path, text)
    assert not found, "development narration in the product (see this test's doc):\n" + "\n".join(found)


@pytest.mark.parametrize("line, word", [
    ("see issue 12 item 6", "issue number"), ("(issues 15, 17)", "issue number"), ("Issue #4:", "issue number"),
    ("the pre-issue-16 default", "issue number"), ("paper 000 Fig. 9", "paper number"),
    ("../shared/reference/h200/README.md", "shared/ path"), ("shared/papers/000_*", "shared/ path"),
    ("(session 10: ...)", "session"), ("Session 6 changed", "session"), ("on a lent 16-core host", "lent machine"),
    ("the session's device time", "session"), ("30 device-minutes", "device time"),
    ("SESSION_EVENTS = 1 << 16", "session"), ("start_new_session=True", "session"), ("schemes/shared/", "shared/ path"),
    ("on the VM (-j 2)", "VM"), ("one H200 of this workplace's device pool", "device pool"),
    ("a 16-core device host", "device pool"), ("`farm-studio look` draws it", "development tool"),
    ("`h200-timed/` is a second H200 run", "which machine"), ("on another H200 of the same model", "which machine"),
    ("(a different host)", "which machine"), ("the node's notes; clock", "which machine"),
    ("(137.1 us on this one)", "which machine"),
])
def test_patterns_catch_the_words(line, word):
    m = _RX.search(line)
    assert m and _NAMES[int(m.lastgroup[1:])] == word
    assert [n for n, _ in _candidate_lines(line)] == [1]  # the key filter passes the line to the patterns


@pytest.mark.parametrize("line", [
    "github.com/NVIDIA/nccl/issues/1397", "the memory hierarchy issues whole DRAM accesses", "EVENTS_PER_CALL = 1 << 16",
    "FiCCO Sec. IV-C", "a shared L2", "excellent", "item 7 of experiments/t3-sublayers/README.md",
    "copies issued on another stream", "a second stream", "each H200 SXM of the node",
])
def test_patterns_leave_technical_text(line):
    assert not _RX.search(line)
