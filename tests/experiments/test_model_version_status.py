"""``t3sim reproduce --status`` and the generated status lines: what predates the current model version is computed
from the snapshot's ``model_version.json`` (the model version is changed by patching
``t3sim.model_version.MODEL_VERSION``, never the real file)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys

import pytest

from t3sim import model_version
from t3sim.commands.reproduce_cmd import status
from t3sim.errors import InputError
from t3sim.reproduction import catalog, freshness
from t3sim.reproduction.build import from_snapshot
from tests.conftest import REPO

SNAP = REPO / "experiments" / "reproduction"


def _status(monkeypatch, version: int, snap=SNAP, **kw) -> list:
    monkeypatch.setattr(model_version, "MODEL_VERSION", version)
    monkeypatch.setitem(model_version.HISTORY, 2, "a stand-in model change")
    buf = io.StringIO()
    assert status(snap, out=buf, **kw) == 0
    return buf.getvalue().splitlines()


def test_status_at_the_current_version_lists_only_what_predates_versioning(monkeypatch):
    lines = _status(monkeypatch, 1)
    m = freshness.read(SNAP)
    old = [e for e in m.entries().values() if e.model_version == 0]
    newer = [e for e in m.entries().values() if e.model_version > 1]  # simulated after version 1: listed too
    assert old and all(e.name in m.experiments for e in old)  # the committed report itself is current
    assert len(lines) == len(old) + len(newer) + 1  # one line per stale result set, then the total
    old_lines = [ln for ln in lines if "version 0 (before versioning)" in ln]  # in the manifest's order
    assert len(old_lines) == len(old)
    for e, ln in zip(old, old_lines):
        assert f"({e.name})" in ln and e.readme in ln and "version 0 (before versioning), current 1" in ln
        assert f"{e.points} points" in ln and e.rerun[0] in ln
    assert not any(ln.startswith("report section") for ln in lines)
    assert lines[-1].startswith(f"{len(old) + len(newer)} committed result sets predate model version 1")


def test_a_bump_lists_every_section(monkeypatch):
    lines = _status(monkeypatch, 2)
    m = freshness.read(SNAP)
    assert len(lines) == sum(e.model_version != 2 for e in m.entries().values()) + 1
    for name in freshness.SECTIONS:
        ln = next(x for x in lines if x.startswith(f"report section {name} "))
        assert "current 2" in ln and "t3sim reproduce --only" in ln
    t3 = next(x for x in lines if x.startswith("report section t3 "))
    assert "241 points, about 3.6 CPU-hours" in t3


def test_all_current_is_one_line(tmp_path, monkeypatch):
    m = freshness.Manifest({n: freshness.section_entry(n, 1, 1, 0.1) for n in freshness.SECTIONS}, {})
    (tmp_path / freshness.MANIFEST).write_text(freshness.manifest_json(m))
    assert _status(monkeypatch, 1, tmp_path) == ["all current (model version 1)"]
    assert len(_status(monkeypatch, 2, tmp_path)) == len(freshness.SECTIONS) + 1


def test_status_lists_a_results_roots_runs_of_another_version(tmp_path, monkeypatch):
    (tmp_path / freshness.MANIFEST).write_text(freshness.manifest_json(freshness.Manifest({}, {})))
    root = tmp_path / "results"
    for i, v in enumerate((1, 1, 0)):
        d = root / "fig19" / f"run{i}"
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps({"wall_s": 3600.0, **({"model_version": v} if v else {})}))
    lines = _status(monkeypatch, 1, tmp_path, results=root)
    assert len(lines) == 2 and "fig19: 1 of 3 points simulated with version 0" in lines[0]
    assert "about 1 CPU-hours" in lines[0] and "1 experiment of" in lines[1]
    assert _status(monkeypatch, 2, tmp_path, results=root)[0].startswith(f"{root / 'fig19'}: 3 of 3 points")


def test_the_cli_status_exits_0():
    r = subprocess.run([sys.executable, "-m", "t3sim.cli", "reproduce", "--status"], capture_output=True, text=True,
                       cwd=REPO, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() and "Traceback" not in r.stderr


def test_committed_readme_status_paragraphs_are_what_the_command_writes():
    """Every experiment README's status paragraphs equal ``t3sim reproduce --status --write``'s (re-make them with
    it after changing model_version.json or t3sim/model_version.py)."""
    m = freshness.read(SNAP)
    seen = set()
    for p in freshness.readmes():
        text = p.read_text()
        names = freshness.MARK.findall(text)
        assert names, f"{p}: no <!-- status: NAME --> paragraph"
        seen |= {n for n, _ in names}
        assert freshness.rewrite(text, m, str(p)) == text, f"{p}: run t3sim reproduce --status --write"
    assert set(m.experiments) <= seen and set(m.report) <= seen and freshness.REPORT in seen
    for e in m.experiments.values():
        assert f"<!-- status: {e.name} -->" in (REPO / e.readme).read_text(), e.readme


def test_no_hand_written_predate_line_is_left():
    """'predate' appears in an experiment README only inside a generated status paragraph."""
    for p in freshness.readmes():
        outside = freshness.MARK.sub("", p.read_text())
        assert "predate" not in outside, p


def test_a_bump_rewrites_the_status_paragraphs(monkeypatch):
    monkeypatch.setattr(model_version, "MODEL_VERSION", 2)
    monkeypatch.setitem(model_version.HISTORY, 2, "a stand-in model change")
    m = freshness.read(SNAP)
    text = (REPO / "experiments/fig16/README.md").read_text()
    new = freshness.rewrite(text, m)
    assert new != text and "simulated with model version 1, before version 2 (a stand-in model change)" in \
        new.replace("\n", " ")
    tp32 = freshness.readme_status(m.experiments["fig19-tp32"]).replace("\n", " ")
    assert "version 0 (before versioning), before the canonical tracker trigger" in tp32
    assert "version 2 (a stand-in model change)" in tp32 and "version 1 (" not in tp32


def test_the_reports_model_line_follows_the_version(tmp_path, monkeypatch):
    md = (SNAP / "REPRODUCTION.md").read_text().splitlines()
    report = freshness.read(SNAP).report
    assert md[2] == freshness.header_line(report)
    t3 = report["t3"].model_version
    nxt = model_version.MODEL_VERSION + 1
    monkeypatch.setattr(model_version, "MODEL_VERSION", nxt)
    from_snapshot(SNAP, tmp_path)
    line = (tmp_path / "REPRODUCTION.md").read_text().splitlines()[2]
    assert f"**Model version {nxt}**" in line and f"T3 (version {t3})" in line and "--status" in line


def test_a_snapshot_without_a_manifest_is_before_versioning(tmp_path):
    snap = tmp_path / "snap"
    shutil.copytree(SNAP, snap)
    (snap / freshness.MANIFEST).unlink()
    m = freshness.read(snap)
    assert set(m.report) == set(freshness.SECTIONS) and {e.model_version for e in m.report.values()} == {0}
    from_snapshot(snap, tmp_path / "out")
    assert "version 0 (before versioning)" in (tmp_path / "out" / "REPRODUCTION.md").read_text()


def test_a_malformed_manifest_is_input_error(tmp_path):
    (tmp_path / freshness.MANIFEST).write_text(json.dumps({"report": {"t3": {"model_version": "one"}}}))
    with pytest.raises(InputError, match="model_version"):
        freshness.read(tmp_path)
    (tmp_path / freshness.MANIFEST).write_text(json.dumps({"report": {"nope": {}}}))
    with pytest.raises(InputError, match="report section"):
        freshness.read(tmp_path)


def test_sections_cover_every_figure_and_results_experiment():
    figs = [f for s in freshness.SECTIONS.values() for f in s.figures]
    assert sorted(figs) == sorted(catalog.FIGURES) and len(figs) == len(set(figs))
    res = [r for s in freshness.SECTIONS.values() for r in s.results]
    assert sorted(res) == sorted(catalog.RESULT_EXPERIMENTS)


def test_from_runs_takes_the_oldest_version_and_sums_wall_times(tmp_path):
    class R:
        def __init__(self, path):
            self.path = path

    runs = {}
    for i, (name, v) in enumerate([("fig06", 1), ("fig17", 0), ("flux-op-h800", 1)]):
        d = tmp_path / f"r{i}"
        d.mkdir()
        (d / "meta.json").write_text(json.dumps({"model_version": v, "wall_s": 1800.0}) if v else
                                     json.dumps({"wall_s": 1800.0}))
        runs.setdefault(name, []).append(R(d))
    vdir = tmp_path / "validation"
    vdir.mkdir()
    (vdir / "rs.csv").write_text("size_mb,wall_s\n6,3600\n12,3600\n")
    got = freshness.from_runs(runs, vdir / "rs.csv")
    assert (got["t3"].model_version, got["t3"].points, got["t3"].cpu_hours) == (0, 2, 1.0)
    assert (got["flux"].model_version, got["flux"].points, got["flux"].cpu_hours) == (1, 1, 0.5)
    assert (got["fig14"].model_version, got["fig14"].points, got["fig14"].cpu_hours) == (0, 2, 2.0)
    freshness.write_validation_version(vdir)
    assert freshness.from_runs(runs, vdir / "rs.csv")["fig14"].model_version == model_version.MODEL_VERSION
    assert "ficco" not in got and "fused" not in got  # no runs: not in the report's line


def test_a_validation_output_of_another_version_is_run_again(tmp_path, monkeypatch):
    """``t3sim reproduce`` reuses its validation CSV only when its recorded model version is the current one."""
    import csv as csvmod

    from t3sim.commands import reproduce_cmd
    from t3sim.reproduction.t3.experiments import validation_csv, validation_inputs

    started = []

    class FakeProc:
        returncode = 0

        def __init__(self, args, **kw):
            started.append(args)

        def wait(self):
            return 0

    monkeypatch.setattr(reproduce_cmd.subprocess, "Popen", FakeProc)
    with (REPO / validation_inputs()["measured"]).open(newline="") as fh:
        sizes = [r["size_mb"] for r in csvmod.DictReader(fh)]
    target = validation_csv(tmp_path)
    target.parent.mkdir(parents=True)
    target.write_text("size_mb,wall_s\n" + "".join(f"{s},1\n" for s in sizes))
    log = io.StringIO()

    v = reproduce_cmd._Validation(tmp_path, False, 1, log).start()  # no recorded version: version 0
    assert len(started) == 1 and "simulating it again" in log.getvalue()
    v.finish()
    assert freshness.validation_version(target.parent) == model_version.MODEL_VERSION
    reproduce_cmd._Validation(tmp_path, False, 1, log).start().finish()  # now current: reused
    assert len(started) == 1 and "reusing" in log.getvalue()


def test_the_cost_table_is_the_manifests():
    """The report README's table of sections, points and re-run costs comes from the manifest, row for row."""
    report = {"flux": freshness.Entry("flux", "FLUX", 1, 378, 10.5, ()),
              "fused": freshness.Entry("fused", "fused", 0, 67, None, ())}
    rows = freshness.cost_table(report).splitlines()
    assert rows[2:] == ["| FLUX | 1 | 378 | 10.5 |", "| fused GPU-initiated kernels | 0 | 67 | not measured |"]
