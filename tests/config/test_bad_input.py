"""Bad input -> one line on stderr naming file/line/field, what was found and what is allowed; exit 2."""

from __future__ import annotations

import pytest

from tests.conftest import assert_one_line_error

EXP = "configs/experiments/default.yaml"


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_unknown_key(tmp_path, run_cli):
    f = _write(tmp_path, "s.yaml", "gpu:\n  num_cus: 80\n  num_cuz: 3\n")
    rc, _, err = run_cli("config", "check", f)
    assert_one_line_error(rc, err, "s.yaml:3", "gpu.num_cuz", "unknown key 'num_cuz'", "num_cus")


def test_wrong_type(tmp_path, run_cli):
    f = _write(tmp_path, "s.yaml", "gpu:\n  clock_GHz: fast\n")
    rc, _, err = run_cli("config", "check", f)
    assert_one_line_error(rc, err, "s.yaml:2", "gpu.clock_GHz", "'fast'", "number")


@pytest.mark.parametrize("value", ["0", "-150"])
def test_nonpositive_bandwidth(tmp_path, run_cli, value):
    f = _write(tmp_path, "s.yaml", f"interconnect:\n  link_bandwidth_GBps: {value}\n")
    rc, _, err = run_cli("config", "check", f)
    assert_one_line_error(rc, err, "s.yaml:2", "interconnect.link_bandwidth_GBps", "greater than 0")


def test_nonpositive_bandwidth_override(run_cli):
    rc, _, err = run_cli("config", "show", EXP, "--set", "system.interconnect.link_bandwidth_GBps=0")
    assert_one_line_error(rc, err, "--set system.interconnect.link_bandwidth_GBps", "greater than 0")


def test_gpu_count_does_not_fit_topology(tmp_path, run_cli):
    f = _write(tmp_path, "s.yaml", "interconnect:\n  kind: direct\n  num_gpus: 8\n  links_per_gpu: 3\n")
    rc, _, err = run_cli("config", "check", f)
    assert_one_line_error(rc, err, "s.yaml", "num_gpus=8 does not fit a direct topology", "needs 7 links")


def test_gpu_count_does_not_fit_switch(run_cli):
    rc, _, err = run_cli("config", "show", "configs/systems/h200-4gpu.yaml",
                         "--set", "interconnect.num_gpus=8", "--set", "interconnect.switch_ports=4")
    assert_one_line_error(rc, err, "does not fit a switch")


def test_gpu_count_must_match_tp(run_cli):
    rc, _, err = run_cli("config", "show", EXP, "--set", "workload.tp=16")
    assert_one_line_error(rc, err, "default.yaml", "workload.tp=16", "num_gpus=8")


def test_tp_does_not_divide_hidden(run_cli):
    rc, _, err = run_cli("config", "show", EXP, "--set", "workload.tp=5", "--set", "system.interconnect.num_gpus=5")
    assert_one_line_error(rc, err, "TP degree 5 does not divide the hidden size H=4256")


def test_tp_in_model_preset(tmp_path, run_cli):
    f = _write(tmp_path, "m.yaml", "name: m\nhidden_size: 1000\nlayers: 2\nseq_len: 8\nbatch: 1\ntp_degrees: [8, 3]\n")
    rc, _, err = run_cli("config", "check", f)
    assert_one_line_error(rc, err, "m.yaml", "TP degree 3 does not divide the hidden size H=1000")


def test_missing_config_file(run_cli):
    rc, _, err = run_cli("config", "check", "configs/nope.yaml")
    assert_one_line_error(rc, err, "configs/nope.yaml", "no such file")


def test_missing_base(tmp_path, run_cli):
    f = _write(tmp_path, "s.yaml", "base: nothere.yaml\n")
    rc, _, err = run_cli("config", "check", f)
    assert_one_line_error(rc, err, "s.yaml:1", "nothere.yaml")


def test_malformed_yaml(tmp_path, run_cli):
    f = _write(tmp_path, "s.yaml", "gpu:\n  num_cus: [80\n")
    rc, _, err = run_cli("config", "check", f)
    assert_one_line_error(rc, err, "s.yaml:", "malformed YAML")


def test_duplicate_key(tmp_path, run_cli):
    f = _write(tmp_path, "s.yaml", "gpu:\n  num_cus: 80\n  num_cus: 40\n")
    rc, _, err = run_cli("config", "check", f)
    assert_one_line_error(rc, err, "s.yaml:3", "duplicate key 'num_cus'")


def test_unknown_topology_kind(run_cli):
    rc, _, err = run_cli("config", "show", EXP, "--set", "system.interconnect.kind=torus")
    assert_one_line_error(rc, err, "system.interconnect.kind", "torus", "ring")


def test_unknown_scheme(run_cli):
    rc, _, err = run_cli("config", "show", EXP, "--set", "scheme.kind=magic")
    assert_one_line_error(rc, err, "scheme.kind", "magic", "t3_mca")


def test_bad_override_syntax(run_cli):
    rc, _, err = run_cli("config", "show", EXP, "--set", "system.gpu.num_cus")
    assert_one_line_error(rc, err, "--set system.gpu.num_cus", "dotted.path=VALUE")


def test_override_unknown_path(run_cli):
    rc, _, err = run_cli("config", "show", EXP, "--set", "system.gpu.warp_drive=1")
    assert_one_line_error(rc, err, "--set system.gpu.warp_drive", "unknown key 'warp_drive'")


def test_missing_required(tmp_path, run_cli):
    f = _write(tmp_path, "e.yaml", "name: e\nworkload:\n  tp: 8\n")
    rc, _, err = run_cli("config", "check", f)
    assert_one_line_error(rc, err, "workload.model", "required")


def test_watermarks_ordered(run_cli):
    rc, _, err = run_cli("config", "show", "configs/systems/t3-table1.yaml",
                         "--set", "memory_controller.write_low_watermark=0.9")
    assert_one_line_error(rc, err, "write_low_watermark (0.9) must be below write_high_watermark")


def test_usage_error_is_one_line(run_cli):
    rc, _, err = run_cli("config", "frobnicate")
    assert_one_line_error(rc, err, "invalid choice")


@pytest.mark.parametrize("sets,expect", [
    # an option read only by another kind or mode would be accepted and ignored
    (["system.address_map.field_order=col_low,col_high,channel,bankgroup,bank,row"],
     ("field_order", "channel_interleave", "row_bank_column_channel")),
    (["system.memory_controller.arbitration.occupancy_threshold=5"], ("occupancy_threshold=5", "threshold_mode=dynamic")),
    (["system.memory_controller.arbitration.threshold_mode=static",
      "system.memory_controller.arbitration.dynamic_thresholds=[1, 2, 3]"], ("dynamic_thresholds", "threshold_mode=static")),
    (["system.hbm.timing.tPPD_nCK=2"], ("tPPD_nCK=2", "HBM2 rule set", "HBM3")),
    (["system.hbm.standard=HBM3E"], ("tPPD_nCK", "needs tPPD")),
])
def test_options_that_would_be_ignored_are_refused(run_cli, sets, expect):
    args = [a for s in sets for a in ("--set", s)]
    rc, _, err = run_cli("config", "show", EXP, *args)
    assert_one_line_error(rc, err, *expect)


def test_arbitration_the_scheme_replaces_is_refused(run_cli, tmp_path):
    """T3 and T3-MCA set the memory-controller arbitration; another one given explicitly would be ignored."""
    rc, _, err = run_cli("run", EXP, "--set", "scheme.kind=t3_mca", "--set",
                         "system.memory_controller.arbitration.kind=compute_first", "--out", str(tmp_path))
    assert_one_line_error(rc, err, "system.memory_controller.arbitration.kind", "'compute_first'", "t3_mca")
