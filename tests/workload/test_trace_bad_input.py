"""Malformed traces -> one stderr line naming file:line/field, found and allowed; exit 2; no traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from t3sim.errors import InputError
from t3sim.workload import load_trace
from tests.conftest import REPO, assert_one_line_error

GOOD = (REPO / "traces/t-nlg/tp8/FC-2.jsonl").read_text()
HEADER, RECORD = GOOD.splitlines()


def _rec(**changes):
    d = json.loads(RECORD)
    for k, v in changes.items():
        if v is _DROP:
            del d[k]
        else:
            d[k] = v
    return json.dumps(d)


_DROP = object()


def _write(tmp_path, text, name="bad.jsonl"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _check(run_cli, path, *fragments):
    rc, out, err = run_cli("trace", "check", path)
    assert_one_line_error(rc, err, path, *fragments)
    return err


def test_good_trace_loads():
    t = load_trace(REPO / "traces/t-nlg/tp8/FC-2.jsonl")
    assert len(t) == 1 and t.kernels[0].name == "t-nlg.tp8.FC-2.fwd"


def test_missing_file(tmp_path, run_cli):
    _check(run_cli, str(tmp_path / "nope.jsonl"), "no such file", "allowed:")


def test_directory(tmp_path, run_cli):
    _check(run_cli, str(tmp_path), "a directory")


def test_truncated_record(tmp_path, run_cli):
    p = _write(tmp_path, HEADER + "\n" + RECORD[: len(RECORD) // 2])
    _check(run_cli, p, ":2:", "truncated or invalid JSON", "one complete JSON object per line")


def test_truncated_file_missing_records(tmp_path, run_cli):
    p = _write(tmp_path, HEADER.replace('"kernels": 1', '"kernels": 2') + "\n" + RECORD + "\n")
    _check(run_cli, p, ":2:", "1 kernel record(s)", "2 records")


def test_header_only(tmp_path, run_cli):
    _check(run_cli, _write(tmp_path, HEADER + "\n"), "0 kernel record(s)")


def test_empty_file(tmp_path, run_cli):
    _check(run_cli, _write(tmp_path, ""), "an empty file", "header")


def test_blank_line(tmp_path, run_cli):
    _check(run_cli, _write(tmp_path, HEADER + "\n\n" + RECORD + "\n"), ":2:", "blank line")


def test_not_utf8(tmp_path, run_cli):
    p = tmp_path / "bin.jsonl"
    p.write_bytes(HEADER.encode() + b"\n\xff\xfe\n")
    _check(run_cli, str(p), ":2:", "UTF-8")


@pytest.mark.parametrize("header,frags", [
    ('{"format": "other", "version": 1, "kernels": 1}', ("field 'format'", '"other"', "t3sim-gemm-trace")),
    ('{"format": "t3sim-gemm-trace", "version": 2, "kernels": 1}', ("field 'version'", "found 2", "allowed: 1")),
    ('{"format": "t3sim-gemm-trace", "kernels": 1}', ("field 'version'", "field missing")),
    ('{"format": "t3sim-gemm-trace", "version": 1}', ("field 'kernels'", "required field missing")),
    ('{"format": "t3sim-gemm-trace", "version": 1, "kernels": 1, "author": "x"}', ("field 'author'", "unknown field")),
    ('[1, 2]', (":1:", "a JSON list", "a JSON object")),
])
def test_bad_header(tmp_path, run_cli, header, frags):
    _check(run_cli, _write(tmp_path, header + "\n" + RECORD + "\n"), ":1", *frags)


@pytest.mark.parametrize("changes,frags", [
    (dict(M=-5), ("field 'M'", "found -5", "allowed: integer > 0")),
    (dict(K=0), ("field 'K'", "found 0", "integer > 0")),
    (dict(N="4256"), ("field 'N'", '"4256" (str)', "integer > 0")),
    (dict(M=8192.0), ("field 'M'", "8192.0 (float)", "integer > 0")),
    (dict(tp=True), ("field 'tp'", "true (bool)", "integer > 0")),
    (dict(trans_a=1), ("field 'trans_a'", "found 1", "true or false")),
    (dict(dtype="fp64"), ("field 'dtype'", '"fp64"', '"fp16"')),
    (dict(wf_grid=[2]), ("field 'wf_grid'", "[2]", "two integers")),
    (dict(wg_order={"kind": "spiral"}), ("field 'wg_order'", "spiral", "row_major")),
    (dict(wg_order={"kind": "row_major", "x": 1}), ("field 'wg_order'",)),
    (dict(registers_per_thread=300), ("field 'registers_per_thread'", "300", "1..255")),
    (dict(role="consumer"), ("field 'role'", '"consumer"', '"producer"')),
    (dict(colour="red"), ("field 'colour'", "unknown field", "name, model")),
    (dict(tile_k=_DROP), ("field 'tile_k'", "required field missing", "integer > 0")),
    # cross-field consistency
    (dict(tiles_n=33), ("field 'tiles_n'", "found 33", "ceil(4256 / 128) = 34")),
    (dict(tiles_m=65), ("field 'tiles_m'", "= 64")),
    (dict(num_wgs=2175), ("field 'num_wgs'", "2176")),
    (dict(wfs_per_wg=4), ("field 'wf_grid'", "wfs_per_wg = 4")),
    (dict(wf_grid=[3, 3], wfs_per_wg=9), ("field 'wf_grid'", "dividing the tile")),
    (dict(wf_grid=[8, 8], wfs_per_wg=64), ("field 'wfs_per_wg'", "1024 threads")),
    (dict(collective=None), ("field 'collective'", "role is")),
    (dict(role="none"), ("field 'collective'",)),
    (dict(**{"pass": "bwd"}), ("field 'pass'", '"fwd" for sub-layer FC-2')),
    (dict(wg_order={"kind": "explicit", "tiles": [0, 0, 1]}), ("field 'wg_order'", "not a permutation", "0..2175")),
])
def test_bad_record(tmp_path, run_cli, changes, frags):
    _check(run_cli, _write(tmp_path, HEADER + "\n" + _rec(**changes) + "\n"), ":2: ", *frags)


def test_duplicate_key(tmp_path, run_cli):
    rec = RECORD[:-1] + ', "M": 1}'
    _check(run_cli, _write(tmp_path, HEADER + "\n" + rec + "\n"), ":2:", "field 'M'", "duplicate")


def test_nan(tmp_path, run_cli):
    rec = RECORD.replace('"K": 2128', '"K": NaN')
    _check(run_cli, _write(tmp_path, HEADER + "\n" + rec + "\n"), ":2:", "NaN")


def test_duplicate_kernel_name(tmp_path, run_cli):
    h = HEADER.replace('"kernels": 1', '"kernels": 2')
    _check(run_cli, _write(tmp_path, h + "\n" + RECORD + "\n" + RECORD + "\n"), ":3:", "field 'name'", "line 2")


def test_explicit_order_round_trip(tmp_path):
    n = json.loads(RECORD)["num_wgs"]
    p = _write(tmp_path, HEADER + "\n" + _rec(wg_order={"kind": "explicit", "tiles": list(range(n))[::-1]}) + "\n")
    from t3sim.workload import wg_order, write_trace

    t = load_trace(p)
    assert wg_order(t.kernels[0])[:2] == [n - 1, n - 2]
    out = write_trace(tmp_path / "copy.jsonl", t)
    assert out.read_text() == (tmp_path / "bad.jsonl").read_text()


def test_check_stops_at_first_bad_file(tmp_path, run_cli):
    bad = _write(tmp_path, HEADER + "\n" + _rec(M=-1) + "\n")
    rc, out, err = run_cli("trace", "check", "traces/t-nlg/tp8/OP.jsonl", bad, "traces/t-nlg/tp8/IP.jsonl")
    assert_one_line_error(rc, err, bad)
    assert out.count("\n") == 1 and "OP.jsonl" in out


def test_api_raises_input_error(tmp_path):
    with pytest.raises(InputError) as exc:
        load_trace(_write(tmp_path, HEADER + "\n" + _rec(M=-5) + "\n"))
    assert exc.value.one_line().endswith(":2: field 'M': found -5; allowed: integer > 0")


@pytest.mark.parametrize("argv,frags", [
    (["--model", "no-such-model"], ("--model", "no-such-model", "t-nlg")),
    (["--model", "t-nlg", "--tp", "5"], ("tp", "5", "H=4256")),
    (["--model", "t-nlg", "--tp", "8", "--tp", "5"], ("tp", "5", "H=4256")),
    (["--model", "t-nlg", "--tile", "128x128"], ("--tile", "3 positive integers")),
    (["--model", "t-nlg", "--wf-grid", "3x4"], ("wf_grid", "3x4", "divide the tile")),
    (["--model", "t-nlg", "--registers-per-thread", "0"], ("--registers-per-thread", "integer > 0")),
    (["--model", "t-nlg", "--sublayer", "QKV"], ("invalid choice",)),
    (["--all", "--tp", "8"], ("--all",)),
    (["--model", "configs/systems/t3-table1.yaml"], ("system config", "model config")),
    (["--model", "missing.yaml"], ("missing.yaml", "no such file")),
])
def test_gen_bad_input(tmp_path, run_cli, argv, frags):
    rc, _, err = run_cli("trace", "gen", *argv, "--out", str(tmp_path))
    assert_one_line_error(rc, err, *frags)
    assert not any(tmp_path.iterdir())


def test_subprocess_no_traceback(tmp_path):
    p = _write(tmp_path, HEADER + "\n" + RECORD[:40])
    r = subprocess.run([sys.executable, "-m", "t3sim.cli", "trace", "check", p], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr and f"{p}:2:" in r.stderr


def test_check_kernel_that_does_not_fit(tmp_path, run_cli):
    rec = _rec(wf_grid=[4, 4], wfs_per_wg=16, threads_per_wf=64)  # 1024 threads x 128 registers > 64K registers
    p = _write(tmp_path, HEADER + "\n" + rec + "\n")
    _check(run_cli, p, "does not fit on one CU: limited by registers", "regs/WG=131072 of 65536")
