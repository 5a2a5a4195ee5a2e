"""Bad-input fuzz corpus: every bad input gets exit code 2, exactly one line on stderr naming the
file / field / ``--set``, and no traceback -- and nothing is simulated first.

Most cases call the CLI's entry function in-process (:func:`cli`); a few run ``python -m t3sim.cli`` in a
subprocess (the real entry point, real stderr). The corpus: inputs once mishandled, one
wrong-type and one out-of-range override for every config field (generated from the config schema), files
that are not what they claim (binary, truncated, wrong kind), and hypothesis-generated overrides, YAML files,
trace records and measured CSVs. Every case fails during validation, so the corpus runs in seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from t3sim.cli import main
from t3sim.config import ExperimentConfig
from tests.conftest import REPO

EXP = str(REPO / "configs/experiments/default.yaml")
SYS = str(REPO / "configs/systems/t3-table1.yaml")
H200 = str(REPO / "configs/systems/h200-4gpu.yaml")
TRACE = REPO / "traces/t-nlg/tp8/FC-2.jsonl"
RS_CSV = REPO / "experiments/validation/reduce_scatter_4gpu.csv"
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def cli(*argv: str) -> Tuple[int, str, str]:
    """``t3sim ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse usage errors
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def assert_clean(rc, err: str, *fragments: str, lines: int = 1) -> str:
    """Exit 2, ``lines`` stderr lines (one by default) from t3sim, no traceback; every fragment in them."""
    got = [line for line in err.splitlines() if line.strip()]
    assert rc == 2, f"exit {rc}, stderr={err[-2000:]!r}"
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    assert len(got) == lines, f"expected {lines} stderr line(s), got {got!r}"
    assert all(line.startswith("t3sim") for line in got), got
    text = "\n".join(got)
    for f in fragments:
        assert f in text, f"{f!r} not in {text!r}"
    return text


def clean_or_ok(rc, err: str) -> None:
    """Fuzzed input may be valid (exit 0); if not, it is clean bad input."""
    if rc == 0:
        return
    got = [line for line in err.splitlines() if line.strip()]
    assert rc == 2, f"exit {rc}, stderr={err[-2000:]!r}"
    assert "Traceback" not in err and got and all(line.startswith("t3sim") for line in got), err[-2000:]


def write(tmp: Path, name: str, data) -> str:
    p = tmp / name
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data)
    return str(p)


# ----------------------------------------------------------------------------- the config schema


def leaf_fields(model=ExperimentConfig, prefix: str = "") -> List[Tuple[str, object, dict]]:
    """(dotted path, annotation, constraint metadata by type name) of every leaf field of ``model``."""
    out = []
    for name, f in model.model_fields.items():
        ann = f.annotation
        args = typing.get_args(ann) or (ann,)
        sub = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if sub is not None:
            out += leaf_fields(sub, f"{prefix}{name}.")
        else:
            md = {}
            for m in f.metadata:
                for k in ("gt", "ge", "lt", "le", "min_length", "pattern"):
                    if getattr(m, k, None) is not None:
                        md[k] = getattr(m, k)
            out.append((prefix + name, ann, md))
    return out


LEAVES = leaf_fields()


def wrong_type(ann) -> str:
    """A YAML value of the wrong shape for ``ann``: a mapping for lists, a list for everything else."""
    origin = typing.get_origin(ann)
    if origin in (list, typing.List):
        return "{a: 1}"
    return "[1, 2]"


def out_of_range(ann, md: dict):
    """A value just outside the field's constraint, or None if it has none."""
    is_int = int in (typing.get_args(ann) or (ann,))
    step = 1 if is_int else 0.5
    if "gt" in md:
        return md["gt"]
    if "ge" in md:
        return md["ge"] - step
    if "lt" in md:
        return md["lt"]
    if "le" in md:
        return md["le"] + step
    if "min_length" in md:
        return "[]"
    if "pattern" in md:
        return "'no spaces or slashes/'"
    return None


RANGE_CASES = [(p, out_of_range(a, md)) for p, a, md in LEAVES if out_of_range(a, md) is not None]


def test_corpus_is_large_enough():
    """The issue asks for >= 150 cases; the schema alone gives one per field and one per constraint."""
    assert len(LEAVES) >= 100 and len(RANGE_CASES) >= 60
    assert len(LEAVES) + len(RANGE_CASES) + len(FILE_CASES) + len(ARGV_CASES) + len(ISSUE_CASES) >= 150


@pytest.mark.parametrize("path", [p for p, _, _ in LEAVES])
def test_every_field_rejects_a_wrong_type(path, tmp_path):
    ann = next(a for p, a, _ in LEAVES if p == path)
    value = wrong_type(ann)
    if LEAVES.index(next(x for x in LEAVES if x[0] == path)) % 2:
        rc, _, err = cli("config", "show", EXP, "--set", f"{path}={value}")
    else:
        rc, _, err = cli("run", EXP, "--out", tmp_path, "--set", f"{path}={value}")
    assert_clean(rc, err, f"--set {path}")


@pytest.mark.parametrize("path,value", RANGE_CASES, ids=[p for p, _ in RANGE_CASES])
def test_every_constraint_is_enforced(path, value, tmp_path):
    rc, _, err = cli("run", EXP, "--out", tmp_path, "--set", f"{path}={value}")
    assert_clean(rc, err, f"--set {path}")


# ------------------------------------------------------------------------- inputs once mishandled


def _huge_trace(tmp: Path) -> str:
    lines = TRACE.read_text().splitlines()
    rec = json.loads(lines[1])
    rec.update(M=10**12, tiles_m=10**12 // 128 + (10**12 % 128 > 0))
    rec["num_wgs"] = rec["tiles_m"] * rec["tiles_n"]
    return write(tmp, "huge.jsonl", lines[0] + "\n" + json.dumps(rec) + "\n")


def _corrupt_result(tmp: Path, content: bytes) -> str:
    """A results root holding the default experiment's 256-token point with a corrupt stats.json."""
    from t3sim import model_version
    from t3sim.config.sweep import expand
    from t3sim.results.store import FILES, ResultStore, config_hash

    cfg = expand(EXP, ["workload.tokens=256"])[0].config
    d = ResultStore(tmp / "r").run_dir(cfg.name, config_hash(cfg.model_dump(mode="json")))
    d.mkdir(parents=True)
    for f in FILES:
        (d / f).write_text("{}\n")
    (d / "meta.json").write_text(json.dumps({"model_version": model_version.MODEL_VERSION}) + "\n")  # current
    (d / "stats.json").write_bytes(content)
    return str(tmp / "r")


ISSUE_CASES = {
    # (argv builder from tmp_path, fragments the one line must contain)
    "binary-yaml-check": (lambda t: ["config", "check", write(t, "b.yaml", bytes(range(128, 256)))], ["b.yaml", "not UTF-8"]),
    "binary-yaml-run": (lambda t: ["run", write(t, "b.yaml", b"\xff\xfe\x00name"), "--out", t], ["b.yaml", "not UTF-8"]),
    "binary-csv-validate": (lambda t: ["validate", "--system", H200, "--measured",
                                       write(t, "m.csv", b"collective,gpus\n\xe9\xff"), "--out", t / "o"],
                            ["m.csv:2", "not UTF-8"]),
    "l2-banks-3": (lambda t: ["run", EXP, "--out", t, "--set", "system.l2.banks=3"], ["--set system.l2.banks", "does not split"]),
    "out-in-proc": (lambda t: ["run", EXP, "--set", "workload.tokens=256", "--out", "/proc/nope"], ["--out /proc/nope"]),
    "out-is-a-file": (lambda t: ["run", EXP, "--set", "workload.tokens=256", "--out", write(t, "f", "x") + "/sub"],
                      ["--out", "Not a directory"]),
    "huge-trace-check": (lambda t: ["trace", "check", _huge_trace(t)], ["huge.jsonl:2", "too many to simulate"]),
    "huge-trace-run": (lambda t: ["run", EXP, "--out", t, "--set", f"workload.trace={_huge_trace(t)}"],
                       ["huge.jsonl:2", "too many to simulate"]),
    "hbm-rows-1": (lambda t: ["run", EXP, "--out", t, "--set", "system.hbm.rows=1"], ["system.hbm", "footprint"]),
    "memtest-bank-groups-3": (lambda t: ["memtest", "--pattern", "mixed", "--set", "hbm.bank_groups=3"],
                              ["--set hbm.bank_groups", "power of two"]),
    "tokens-0": (lambda t: ["run", EXP, "--out", t, "--set", "workload.tokens=0"], ["workload.tokens"]),
    "access-wider-than-request": (lambda t: ["run", EXP, "--out", t, "--set", "system.hbm.burst_length=8"],
                                  ["--set system.hbm.burst_length", "does not divide the 64 B memory request"]),
    "watermark-without-watermark-drain": (lambda t: ["run", EXP, "--out", t, "--set",
                                                     "system.memory_controller.write_drain=drain_when_full", "--set",
                                                     "system.memory_controller.write_high_watermark=0.9"],
                                          ["write_high_watermark", "drain_when_full", "does not read"]),
    "set-unknown-path": (lambda t: ["run", EXP, "--out", t, "--set", "nonexistent.path=3"],
                         ["--set nonexistent.path", "unknown key 'nonexistent'"]),
    "validate-given-experiment": (lambda t: ["validate", "--system", EXP, "--measured", RS_CSV],
                                  ["default.yaml", "an experiment config", "not a system config"]),
    "run-given-system": (lambda t: ["run", SYS, "--out", t], ["t3-table1.yaml", "a system config", "not an experiment"]),
    "run-given-model": (lambda t: ["run", str(REPO / "configs/models/t-nlg.yaml"), "--out", t], ["a model config"]),
    "corrupt-stats": (lambda t: ["run", EXP, "--set", "workload.tokens=256", "--out", _corrupt_result(t, b"{nope")],
                      ["stats.json", "corrupt cached result", "--force"]),
    "binary-stats": (lambda t: ["run", EXP, "--set", "workload.tokens=256", "--out", _corrupt_result(t, b"\x89PNG\xff")],
                     ["stats.json", "not UTF-8", "--force"]),
    "mix-bad": (lambda t: ["memtest", "--pattern", "mixed", "--mix", "2-1"], ["--mix", "R:W"]),
    "mix-zero": (lambda t: ["memtest", "--pattern", "mixed", "--mix", "0:0"], ["--mix", "no reads and no writes"]),
    "mix-wrong-pattern": (lambda t: ["memtest", "--pattern", "stream-read", "--mix", "2:1"], ["--mix only with --pattern mixed"]),
    "timeline-sweep": (lambda t: ["run", str(REPO / "configs/experiments/t3-sublayers.yaml"), "--timeline", "--out", t],
                       ["--timeline"]),
    "timeline-hbm-rows-1": (lambda t: ["run", EXP, "--timeline", "--out", t, "--set", "system.hbm.rows=1"],
                            ["footprint"]),
    "t3-fewer-wgs-than-gpus": (lambda t: ["run", EXP, "--out", t, "--set", "scheme.kind=t3", "--set",
                                          "workload.model.hidden_size=512", "--set", "workload.tokens=128"],
                               ["scheme.kind", "at least one WG per GPU"]),
    "wg-does-not-fit": (lambda t: ["run", EXP, "--out", t, "--set", "system.gpu.register_file_size_KiB=1"],
                        ["system.gpu", "does not fit on one CU"]),
    "validate-tiny-array": (lambda t: ["validate", "--system", H200, "--out", t / "o", "--measured",
                                       write(t, "m.csv", "collective,gpus,size_mb,dtype,median_us\n"
                                                         "reduce_scatter,4,0.000001,bf16,5\n")],
                            ["m.csv:2", "size_mb=1e-06"]),
    "validate-huge-array": (lambda t: ["validate", "--system", H200, "--out", t / "o", "--measured",
                                       write(t, "m.csv", "collective,gpus,size_mb,dtype,median_us\n"
                                                         "reduce_scatter,4,1e9,bf16,5\n")],
                            ["m.csv:2", "HBM"]),
    "validate-huge-gemm": (lambda t: ["validate", "--system", H200, "--out", t / "o", "--gemm",
                                      write(t, "g.csv", "model,sublayer,tp,M,N,K,dtype,median_us\n"
                                                        "x,OP,8,1000000000,3072,384,bf16,5\n")],
                           ["g.csv:2", "too many to simulate"]),
    "validate-nul-csv": (lambda t: ["validate", "--system", H200, "--out", t / "o", "--measured",
                                    write(t, "m.csv", "collective,gpus,size_mb,dtype,median_us\nreduce\x00,4,6,bf16,5\n")],
                         ["m.csv"]),
    "validate-out-unwritable": (lambda t: ["validate", "--system", H200, "--measured", RS_CSV, "--out", "/proc/nope"],
                                ["--out /proc/nope"]),
    "trace-gen-out-unwritable": (lambda t: ["trace", "gen", "--model", "t-nlg", "--tp", "8", "--out", "/proc/nope"],
                                 ["--out /proc/nope"]),
    # a 1 Hz clock rounds to 0 kHz (t3sim.sim.clock counts whole kHz): once a traceback when the model was built
    "gpu-clock-1Hz": (lambda t: ["run", EXP, "--out", t / "o", "--set", "system.gpu.clock_GHz=1e-9", "--set",
                                 "workload.tokens=256"], ["--set system.gpu.clock_GHz", "1e-9", "0.001"]),
    # a cycle under 2 ps (1 ps ticks): once refused by the memory model only after the sweep had started
    "hbm-clock-1e6GHz": (lambda t: ["run", EXP, "--out", t / "o", "--set", "system.hbm.clock_GHz=1e6"],
                         ["--set system.hbm.clock_GHz", "1e6", "500"]),
    "l2-clock-1e6GHz": (lambda t: ["run", EXP, "--out", t / "o", "--set", "system.l2.clock_GHz=1e6"],
                        ["--set system.l2.clock_GHz", "1e6", "500"]),
}


@pytest.mark.parametrize("case", sorted(ISSUE_CASES))
def test_issue_inputs(case, tmp_path):
    build, fragments = ISSUE_CASES[case]
    rc, _, err = cli(*build(tmp_path))
    assert_clean(rc, err, *fragments)


# --------------------------------------------------------------------------- malformed files

FILE_CASES = {
    # file content -> fragments; each checked with `config check` and (if an experiment is expected) `run`
    "empty-list": ("[]\n", ["a list at top level"]),
    "scalar": ("42\n", ["a int at top level"]),
    "tab-indent": ("gpu:\n\tnum_cus: 4\n", ["malformed YAML"]),
    "unclosed-flow": ("gpu: {num_cus: 4\n", ["malformed YAML"]),
    "python-tag": ("gpu: !!python/object/apply:os.system ['true']\n", ["unsupported YAML", "python/object"]),
    "python-tag-scalar": ("gpu: !!python/name:os.system\n", ["unsupported YAML"]),
    "unknown-tag": ("gpu: !custom 3\n", ["unsupported YAML"]),
    "list-as-key": ("? [a, b]\n: 1\n", ["a list as a mapping key"]),
    "duplicate-key": ("gpu: {num_cus: 4}\ngpu: {num_cus: 5}\n", ["duplicate key 'gpu'"]),
    "control-char": ("name: \"a\x07b\"\n", ["malformed YAML"]),
    "billion-laughs": ("a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                       "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n", ["aliases"]),
    "deep-nesting": ("a: " + "[" * 300 + "]" * 300 + "\n", ["nested too deeply"]),
    "base-missing": ("base: nothere.yaml\n", ["nothere.yaml", "not found"]),
    "base-self": ("base: self.yaml\n", ["circular base chain"]),
    "base-not-string": ("base: [1]\n", ["base: [1]"]),
    "base-binary": ("base: bin.yaml\n", ["bin.yaml", "not UTF-8"]),
    "unknown-section": ("gpu: {num_cus: 4}\nwarp: 1\n", ["unknown key 'warp'"]),
    "string-for-section": ("gpu: fast\n", ["gpu"]),
    "null-section": ("hbm: ~\n", ["hbm"]),
    "huge-int": ("gpu: {num_cus: 1" + "0" * 400 + "}\n", ["gpu.num_cus", "64-bit"]),
    "nan-clock": ("gpu: {clock_GHz: .nan}\n", ["gpu.clock_GHz"]),
    "inf-bandwidth": ("interconnect: {link_bandwidth_GBps: .inf}\n", ["link_bandwidth_GBps", "finite"]),
    "bool-for-int": ("hbm: {channels: true}\n", ["hbm.channels", "a boolean where a number is expected"]),
    "experiment-without-name": ("workload: {model: {base: models/t-nlg.yaml}}\n", ["name"]),
    "experiment-bad-sweep-axis": ("name: x\nworkload: {model: {base: models/t-nlg.yaml}, tokens: 256}\n"
                                  "sweep: {grid: {workload.tokens: []}}\n", ["has no values"]),
    "experiment-sweep-point-bad": ("name: x\nworkload: {model: {base: models/t-nlg.yaml}, tokens: 256}\n"
                                   "sweep: {grid: {system.hbm.rows: [16384, 1]}}\n", ["system.hbm.rows=1", "footprint"]),
    "experiment-tp-mismatch": ("name: x\nworkload: {model: {base: models/t-nlg.yaml}, tp: 16}\n", ["workload.tp=16"]),
    "experiment-missing-trace": ("name: x\nworkload: {model: {base: models/t-nlg.yaml}, trace: nope.jsonl}\n",
                                 ["workload.trace", "nope.jsonl", "no such file"]),
}


@pytest.mark.parametrize("case", sorted(FILE_CASES))
def test_malformed_config_files(case, tmp_path):
    text, fragments = FILE_CASES[case]
    write(tmp_path, "bin.yaml", b"\xff\xfe\xfd")
    f = write(tmp_path, "self.yaml" if case == "base-self" else "c.yaml", text)
    named = str(tmp_path / "bin.yaml") if case == "base-binary" else f  # the file that holds the problem
    rc, _, err = cli("config", "check", f)
    assert_clean(rc, err, named, *fragments)
    rc, _, err = cli("run", f, "--out", tmp_path / "r")
    if case.startswith("experiment-") or rc != 2 or "not an experiment" not in err:
        assert_clean(rc, err, named)


def test_config_check_reports_every_file_and_every_error(tmp_path):
    a = write(tmp_path, "a.yaml", "gpu:\n  num_cus: -1\n  clock_GHz: fast\n")
    b = write(tmp_path, "b.yaml", b"\xff")
    rc, out, err = cli("config", "check", a, SYS, b, EXP)
    lines = assert_clean(rc, err, lines=4).splitlines()
    assert "a.yaml:2: gpu.num_cus" in lines[0] and "a.yaml:3: gpu.clock_GHz" in lines[1] and "b.yaml" in lines[2]
    assert lines[3] == "t3sim: 2 of 4 files have errors"
    assert out.splitlines() == [f"ok  system     {SYS}", f"ok  experiment {EXP}"]


# ------------------------------------------------------------------------------ argv mistakes

ARGV_CASES = {
    "no-command": [],
    "unknown-command": ["frobnicate"],
    "run-no-config": ["run"],
    "run-bad-jobs": ["run", EXP, "-j", "many"],
    "run-negative-jobs": ["run", EXP, "-j", "-3", "--set", "workload.tokens=256"],
    "run-dask-no-scheduler": ["run", EXP, "--executor", "dask", "--set", "workload.tokens=256"],
    "run-missing-file": ["run", "configs/experiments/nope.yaml"],
    "run-directory": ["run", str(REPO / "configs")],
    "set-no-equals": ["config", "show", EXP, "--set", "workload.tokens"],
    "set-empty-path": ["config", "show", EXP, "--set", "=3"],
    "set-bad-yaml": ["config", "show", EXP, "--set", "workload.tokens=[1"],
    "set-through-scalar": ["config", "show", EXP, "--set", "name.x=1"],
    "set-python-tag": ["config", "show", EXP, "--set", "name=!!python/name:os.system"],
    "memtest-no-pattern": ["memtest"],
    "memtest-zero-requests": ["memtest", "--pattern", "stream-read", "--requests", "0"],
    "memtest-negative-compare": ["memtest", "--pattern", "stream-read", "--compare-requests", "-1"],
    "memtest-bad-system": ["memtest", "--pattern", "stream-read", "--system", EXP],
    "memtest-bad-set": ["memtest", "--pattern", "stream-read", "--set", "hbm.channels=0"],
    "validate-no-csv": ["validate", "--system", H200],
    "validate-missing-csv": ["validate", "--system", H200, "--measured", "nope.csv"],
    "validate-directory-csv": ["validate", "--system", H200, "--measured", str(REPO / "configs")],
    "trace-check-missing": ["trace", "check", "nope.jsonl"],
    "trace-check-directory": ["trace", "check", str(REPO / "traces")],
    "trace-check-yaml": ["trace", "check", EXP],
    "trace-gen-bad-tp": ["trace", "gen", "--model", "t-nlg", "--tp", "5"],
    "config-show-missing": ["config", "show", "nope.yaml"],
    "bench-unknown-case": ["bench", "--case", "nope"],
    "reproduce-unknown-only": ["reproduce", "--only", "fig99", "--no-run"],
}


@pytest.mark.parametrize("case", sorted(ARGV_CASES))
def test_argv_mistakes(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths name nothing; nothing is written into the repo
    rc, _, err = cli(*ARGV_CASES[case])
    assert_clean(rc, err)


# ------------------------------------------------------------------------------- hypothesis

PATHS = [p for p, _, _ in LEAVES]
VALUES = st.one_of(
    st.integers(min_value=-10**6, max_value=10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["true", "false", "null", "~", "[]", "{}", "[1, 2]", "{a: 1}", "''", "'x y'", "1e400", "-0",
                     "0x10", "1_000", ".inf", "-.inf", ".nan", "ring", "t3", "FC-2", "!!str 3", "*alias", "&a 1"]),
    st.text(max_size=12),
)


@FUZZ
@given(path=st.sampled_from(PATHS), value=VALUES)
def test_any_override_is_valid_or_one_clean_line(path, value):
    rc, _, err = cli("config", "show", EXP, "--set", f"{path}={value}")
    clean_or_ok(rc, err)
    if rc == 2:
        assert len(err.strip().splitlines()) == 1


@FUZZ
@given(data=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass"))))
def test_any_file_is_a_config_or_one_clean_line(data, tmp_path_factory):
    f = write(tmp_path_factory.mktemp("fz"), "f.yaml", data)
    rc, _, err = cli("config", "check", f)
    clean_or_ok(rc, err)


TRACE_LINES = TRACE.read_text().splitlines()
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-10**15, 10**15) | st.floats(allow_nan=False)
                           | st.text(max_size=8), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                           max_leaves=6)


@FUZZ
@given(field=st.sampled_from(sorted(json.loads(TRACE_LINES[1]))), value=JSON_VALUES)
def test_any_trace_field_value_is_valid_or_one_clean_line(field, value, tmp_path_factory):
    rec = json.loads(TRACE_LINES[1])
    rec[field] = value
    f = write(tmp_path_factory.mktemp("fz"), "t.jsonl", TRACE_LINES[0] + "\n" + json.dumps(rec) + "\n")
    rc, _, err = cli("trace", "check", f)
    clean_or_ok(rc, err)


CSV_CELLS = st.one_of(st.sampled_from(["reduce_scatter", "all_gather", "bf16", "fp16", "4", "8", "6", "-1", "0", "nan",
                                       "1e9", "inf", "", "x", "\"", "2.5"]), st.text(max_size=6))


@FUZZ
@given(rows=st.lists(st.lists(CSV_CELLS, min_size=3, max_size=6), max_size=4))
def test_any_measured_csv_fails_cleanly_before_simulating(rows, tmp_path_factory):
    """Random rows, then one row that is certainly bad: every row is checked before anything is simulated."""
    body = "collective,gpus,size_mb,dtype,median_us\n" + "".join(",".join(r) + "\n" for r in rows)
    body += "reduce_scatter,4,6,bf16,-5\n"  # a negative measured time
    t = tmp_path_factory.mktemp("fz")
    rc, out, err = cli("validate", "--system", H200, "--measured", write(t, "m.csv", body), "--out", t / "o")
    assert_clean(rc, err, "m.csv")
    assert not (t / "o").exists() and out == ""


# ------------------------------------------------------------------------------- subprocesses


def _subprocess(*argv, cwd=REPO):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "t3sim.cli", *map(str, argv)], capture_output=True, text=True,
                       timeout=120, cwd=cwd, env=env)
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize("case", ["binary-yaml", "out-in-proc", "given-system"])
def test_real_entry_point(case, tmp_path):
    argv = {"binary-yaml": ["config", "check", write(tmp_path, "b.yaml", b"\x80\x81name: x")],
            "out-in-proc": ["run", EXP, "--set", "workload.tokens=256", "--out", "/proc/nope"],
            "given-system": ["run", SYS]}[case]
    rc, _, err = _subprocess(*argv, cwd=tmp_path)
    assert_clean(rc, err)


@pytest.mark.parametrize("clock", ["system.gpu.clock_GHz=1e-9", "system.hbm.clock_GHz=1e6"])
def test_clock_out_of_range_is_refused_before_anything_runs(clock, tmp_path):
    """A clock the simulator's time cannot represent (below 1 MHz: 0 kHz; above 500 GHz: a cycle under 2 ps) is one
    line of bad input from the real entry point before the sweep starts: no progress lines, no results folder."""
    rc, out, err = _subprocess("run", EXP, "--set", clock, "--set", "workload.tokens=256", "--out", tmp_path / "o",
                               cwd=tmp_path)
    assert_clean(rc, err, f"--set {clock.split('=')[0]}", clock.split("=")[1])
    assert out == "" and not (tmp_path / "o").exists()


def test_memtest_json_is_strict_json_without_reads():
    """stream-write has no reads, so no read latency: ``null``, not a bare ``NaN``."""
    rc, out, err = cli("memtest", "--pattern", "stream-write", "--requests", "1000", "--compare-requests", "0",
                       "--no-check", "--json")
    assert rc == 0, err

    def reject(c):
        raise ValueError(f"non-standard JSON constant {c}")

    r = json.loads(out, parse_constant=reject)
    assert r["read_latency_mean_ns"] is None and r["requests"] == 1000 and r["pattern"] == "stream-write"
