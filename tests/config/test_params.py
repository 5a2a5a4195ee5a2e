"""Every parameter is documented: type, default, unit (in the name where physical), description, source.

A source says where a value comes from: a document (datasheet, paper section, vendor source file), "measured: ...",
"derived from ...", "assumption: <why>", or, for a value fitted to measurements, "fitted to <data> (<N> rows)".
The same holds for the values the system presets set (``configs/systems/*.yaml``, the comment on or above the
line): a fitted value leads its comment with ``FITTED to <data> (<N> rows)``, a value derived from a measurement with
``DERIVED from ...``; a preset that inherits such a value through ``base:`` says so in a comment line
``inherits <field> ...``, and a preset that sets a field fitted elsewhere says what its own value was fitted to or
that it was not fitted. docs/validation.md tabulates the fitted values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from t3sim.config.base import DIMENSIONLESS, UNIT_SUFFIX
from t3sim.config.params import iter_params, render_markdown

from tests.conftest import REPO

SYSTEMS = REPO / "configs/systems"

#: a source that promises a value instead of giving one
_PLACEHOLDER = re.compile(r"\b(?:TODO|TBD|FIXME|XXX|placeholder|to be (?:fitted|measured|determined)|until (?:fitted|measured))\b"
                          r"|^\W*(?:\?+|n/?a|none|unknown|tbd|-+)?\W*$", re.I)
#: a source that is an assumption says what it assumes or why
_BARE_ASSUMPTION = re.compile(r"^\W*assumptions?\W*$", re.I)
#: a mention of a fitted value ...
_FITTED_WORD = re.compile(r"\b(?:fitted|calibrated)\b", re.I)
#: ... unless negated ("not fitted", "assumption (not fitted)")
_NOT_FITTED = re.compile(r"\bnot\s+(?:fitted|calibrated)\b", re.I)
#: ... names its data and the number of rows used
_FITTED_TO = re.compile(r"(?:fitted|calibrated) to .{1,200}?\(\d+ rows?\)", re.I | re.S)
#: the kind a value's comment or source leads with
_LEADS_FITTED = re.compile(r"\s*(?:fitted|calibrated)\b", re.I)
_LEADS_DERIVED = re.compile(r"\s*DERIVED\b")


def fitted_mentions_unsourced(text: str) -> List[str]:
    """Each mention of a fitted value in ``text`` that does not read "fitted to <data> (<N> rows)"."""
    masked = _NOT_FITTED.sub(lambda m: " " * len(m.group()), text)
    return [masked[m.start():m.start() + 60] for m in _FITTED_WORD.finditer(masked) if not _FITTED_TO.match(masked, m.start())]


def source_problems(path: str, source: str, description: str) -> List[str]:
    """What is wrong with one field's documented source (empty list: nothing)."""
    out = []
    if not source.strip() or _PLACEHOLDER.search(source):
        out.append(f"{path}: source is empty or a placeholder: {source!r}")
    elif _BARE_ASSUMPTION.match(source):
        out.append(f"{path}: an assumption must say what it assumes or why: {source!r}")
    for text in (source, description):
        for bad in fitted_mentions_unsourced(text):
            out.append(f"{path}: a fitted value must say 'fitted to <data> (<N> rows)': ...{bad!r}")
    return out


_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_]\w*):(?P<rest>.*)$")


@dataclass
class Preset:
    """One system preset's values as written, each with its comment (inline and the comment lines above it)."""

    path: Path
    base: Optional[str] = None
    #: dotted field (relative to ``system.``) -> its comment ("" when it has none)
    values: Dict[str, str] = field(default_factory=dict)
    #: every comment (a block of comment lines, or an inline comment): each is checked for unsourced fits
    comments: List[str] = field(default_factory=list)
    #: comment blocks holding "inherits <field> ..." lines: what the preset takes from its base chain
    notes: List[str] = field(default_factory=list)

    def base_preset(self) -> Optional[Path]:
        if self.base is None:
            return None
        near = self.path.parent / self.base
        return near if near.exists() else REPO / "configs" / self.base


def parse_preset(path: Path) -> Preset:
    """The values ``path`` sets and their comments (a YAML subset: the presets' block mappings, flow lists,
    folded scalars, ``#`` comments)."""
    pre = Preset(path)
    stack: List[tuple] = []  # (indent, key) of the open mappings
    block: List[str] = []  # comment lines waiting for the key below them
    scalar_indent = None  # inside a folded/literal scalar opened at this indent

    def take_block() -> str:
        text = " ".join(block)
        if block:
            pre.comments.append(text)
            if any(line.startswith("inherits ") for line in block):
                pre.notes.append(text)
                text = ""
        block.clear()
        return text

    for raw in path.read_text().splitlines():
        if scalar_indent is not None:
            if not raw.strip() or len(raw) - len(raw.lstrip(" ")) > scalar_indent:
                continue
            scalar_indent = None
        line = raw.strip()
        if not line:
            take_block()
            continue
        if line.startswith("#"):
            block.append(line.lstrip("#").strip())
            continue
        m = _KEY_LINE.match(raw)
        assert m, f"{path.name}: cannot read line {raw!r}"
        indent, key, rest = len(m["indent"]), m["key"], m["rest"]
        hash_at = re.search(r"(?:^|\s)#", rest)
        value, inline = (rest[:hash_at.start()], rest[hash_at.end():]) if hash_at else (rest, "")
        value, inline = value.strip(), inline.strip()
        if inline:
            pre.comments.append(inline)
        comment = " ".join(c for c in (take_block(), inline) if c)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not value:
            stack.append((indent, key))
            continue
        if value[0] in ">|":
            scalar_indent = indent
            continue
        if not stack and key in ("base", "name", "description"):
            if key == "base":
                pre.base = value
            continue
        if key == "base":  # a section composed from another file (e.g. gemm_library: {base: libraries/...})
            continue
        pre.values[".".join([k for _, k in stack] + [key])] = comment
    take_block()
    return pre


def all_presets() -> Dict[Path, Preset]:
    return {p: parse_preset(p) for p in sorted(SYSTEMS.glob("*.yaml"))}


def chain(presets: Dict[Path, Preset], path: Path) -> List[Preset]:
    """``path``'s preset, its base, that one's base ..."""
    out, p = [], path
    while p is not None:
        out.append(presets[p.resolve()] if p.resolve() in presets else parse_preset(p))
        p = out[-1].base_preset()
    return out


def preset_problems(sources: Dict[str, str]) -> List[str]:
    """What the system presets leave undocumented about fitted values (``sources``: field -> default's source)."""
    presets = {p.resolve(): pre for p, pre in all_presets().items()}
    out: List[str] = []
    fitted = {f for f, src in sources.items() if _LEADS_FITTED.match(src)}  # fields whose default is fitted
    calibrated = {(None, f) for f in fitted}  # (preset path or None for the default, field)
    for pre in presets.values():
        for text in pre.comments:
            out += [f"{pre.path.name}: a fitted value must say 'fitted to <data> (<N> rows)': ...{bad!r}"
                    for bad in fitted_mentions_unsourced(text)]
        for f, comment in pre.values.items():
            if f not in sources:
                out.append(f"{pre.path.name}: {f} is not a config field (or this test misread the file)")
            if _LEADS_FITTED.match(comment):
                fitted.add(f)
                calibrated.add((pre.path, f))
            elif _LEADS_DERIVED.match(comment):
                calibrated.add((pre.path, f))
    for pre in presets.values():
        links = chain(presets, pre.path)
        notes = "\n".join(n for p in links[:1] for n in p.notes)
        for f in sorted({f for _, f in calibrated}):
            owner = next((p for p in links if f in p.values), None)
            if owner is pre:
                continue
            if (owner.path if owner else None, f) in calibrated and not re.search(rf"\binherits {re.escape(f)}\b", notes):
                frm = owner.path.name if owner else "the field default"
                out.append(f"{pre.path.name}: inherits {f} (fitted or derived, from {frm}) without a comment line "
                           f"'# inherits {f} = <value>, fitted to <data> (<N> rows) ...'")
        for f in sorted(fitted & set(pre.values)):
            comment = pre.values[f]
            if not (_LEADS_FITTED.match(comment) or _NOT_FITTED.search(comment)):
                out.append(f"{pre.path.name}: sets {f}, a fitted field, without saying what its value was fitted to "
                           f"('FITTED to <data> (<N> rows)') or that it was not fitted: {comment!r}")
    return out


def test_every_param_documented():
    params = list(iter_params())
    assert len(params) > 80
    problems: List[str] = []
    for p in params:
        assert p.unit, f"{p.path} has no unit"
        assert p.description.strip(), f"{p.path} has no description"
        assert "\n" not in p.description, f"{p.path}: description must be one line"
        problems += source_problems(p.path, p.source, p.description)
    sources = {p.path[len("system."):]: p.source for p in params if p.path.startswith("system.")}
    problems += preset_problems(sources)
    assert not problems, "\n".join(problems)


def test_preset_reader_sees_the_fitted_values():
    """The YAML reader above finds the H200 preset's fitted and derived values and what inherits them (if it
    misread the files, the documentation checks would pass vacuously)."""
    h200 = parse_preset(SYSTEMS / "h200-4gpu.yaml")
    fitted = {f for f, c in h200.values.items() if _LEADS_FITTED.match(c)}
    assert fitted == {"collective.latency.software_ns", "collective.cu_bandwidth_GBps",
                      "copy_engine.sm_copy_inflight_per_cu_B"}
    assert _LEADS_DERIVED.match(h200.values["l2.clock_GHz"])
    assert h200.values["hbm.timing.tPPD_nCK"] and h200.base == "t3-table1.yaml"
    h800 = parse_preset(SYSTEMS / "h800-8gpu.yaml")
    assert h800.base == "h200-4gpu.yaml" and "assumption" in h800.values["collective.latency.software_ns"]
    h1 = parse_preset(SYSTEMS / "h200-1gpu.yaml")
    assert "collective.latency.software_ns" not in h1.values
    assert any("inherits collective.latency.software_ns" in n for n in h1.notes)
    assert fitted_mentions_unsourced("FITTED to the RS rows (6 rows); not fitted to the AG rows") == []
    assert fitted_mentions_unsourced("FITTED (fit_rs.py) to the RS rows")
    assert fitted_mentions_unsourced("fitted to the RS rows (6)")


def test_physical_units_in_names():
    for p in iter_params():
        leaf = p.path.split(".")[-1]
        if p.unit in UNIT_SUFFIX:
            assert leaf.endswith(UNIT_SUFFIX[p.unit]), f"{p.path} is in {p.unit} but its name lacks {UNIT_SUFFIX[p.unit]}"
        else:
            assert p.unit in DIMENSIONLESS, f"{p.path}: unknown unit {p.unit}"
            for suffix in UNIT_SUFFIX.values():
                assert not leaf.endswith(suffix), f"{p.path} ends in {suffix} but is declared {p.unit}"


def test_docs_in_sync():
    doc = (REPO / "docs/parameters.md").read_text()
    assert doc == render_markdown(), "docs/parameters.md is stale: run `t3sim params --write`"


def test_cli_params_lists_every_field(run_cli):
    rc, out, _ = run_cli("params")
    assert rc == 0
    for p in iter_params():
        assert p.path in out
