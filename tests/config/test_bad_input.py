"""Bad input -> one line on stderr naming file/line/field, what was found and what is allowed; exit 2."""

from __future__ import annotations

import pytest

from tests.conftest import assert_one_line_error

EXP = "configs/experiments/default.yaml"


#: a config file written and checked (``t3sim config check``): id, file name, its text, what the error line names
BAD_FILES = [
    ("unknown_key", "s.yaml", "gpu:\n  num_cus: 80\n  num_cuz: 3\n",
     ("s.yaml:3", "gpu.num_cuz", "unknown key 'num_cuz'", "num_cus")),
    ("wrong_type", "s.yaml", "gpu:\n  clock_GHz: fast\n", ("s.yaml:2", "gpu.clock_GHz", "'fast'", "number")),
    ("zero_bandwidth", "s.yaml", "interconnect:\n  link_bandwidth_GBps: 0\n",
     ("s.yaml:2", "interconnect.link_bandwidth_GBps", "greater than 0")),
    ("negative_bandwidth", "s.yaml", "interconnect:\n  link_bandwidth_GBps: -150\n",
     ("s.yaml:2", "interconnect.link_bandwidth_GBps", "greater than 0")),
    ("gpu_count_does_not_fit_topology", "s.yaml", "interconnect:\n  kind: direct\n  num_gpus: 8\n  links_per_gpu: 3\n",
     ("s.yaml", "num_gpus=8 does not fit a direct topology", "needs 7 links")),
    ("tp_in_model_preset", "m.yaml", "name: m\nhidden_size: 1000\nlayers: 2\nseq_len: 8\nbatch: 1\ntp_degrees: [8, 3]\n",
     ("m.yaml", "TP degree 3 does not divide the hidden size H=1000")),
    ("missing_base", "s.yaml", "base: nothere.yaml\n", ("s.yaml:1", "nothere.yaml")),
    ("malformed_yaml", "s.yaml", "gpu:\n  num_cus: [80\n", ("s.yaml:", "malformed YAML")),
    ("duplicate_key", "s.yaml", "gpu:\n  num_cus: 80\n  num_cus: 40\n", ("s.yaml:3", "duplicate key 'num_cus'")),
    ("missing_required", "e.yaml", "name: e\nworkload:\n  tp: 8\n", ("workload.model", "required")),
]


@pytest.mark.parametrize("name,text,expect", [c[1:] for c in BAD_FILES], ids=[c[0] for c in BAD_FILES])
def test_bad_file(tmp_path, run_cli, name, text, expect):
    f = tmp_path / name
    f.write_text(text)
    rc, _, err = run_cli("config", "check", str(f))
    assert_one_line_error(rc, err, *expect)


#: ``t3sim config show`` of a config with ``--set`` overrides: id, config, overrides, what the error line names
BAD_OVERRIDES = [
    ("nonpositive_bandwidth_override", EXP, ["system.interconnect.link_bandwidth_GBps=0"],
     ("--set system.interconnect.link_bandwidth_GBps", "greater than 0")),
    ("gpu_count_does_not_fit_switch", "configs/systems/h200-4gpu.yaml",
     ["interconnect.num_gpus=8", "interconnect.switch_ports=4"], ("does not fit a switch",)),
    ("gpu_count_must_match_tp", EXP, ["workload.tp=16"], ("default.yaml", "workload.tp=16", "num_gpus=8")),
    ("tp_does_not_divide_hidden", EXP, ["workload.tp=5", "system.interconnect.num_gpus=5"],
     ("TP degree 5 does not divide the hidden size H=4256",)),
    ("unknown_topology_kind", EXP, ["system.interconnect.kind=torus"], ("system.interconnect.kind", "torus", "ring")),
    ("unknown_scheme", EXP, ["scheme.kind=magic"], ("scheme.kind", "magic", "t3_mca")),
    ("bad_override_syntax", EXP, ["system.gpu.num_cus"], ("--set system.gpu.num_cus", "dotted.path=VALUE")),
    ("override_unknown_path", EXP, ["system.gpu.warp_drive=1"],
     ("--set system.gpu.warp_drive", "unknown key 'warp_drive'")),
    ("watermarks_ordered", "configs/systems/t3-table1.yaml", ["memory_controller.write_low_watermark=0.9"],
     ("write_low_watermark (0.9) must be below write_high_watermark",)),
]


@pytest.mark.parametrize("config,sets,expect", [c[1:] for c in BAD_OVERRIDES], ids=[c[0] for c in BAD_OVERRIDES])
def test_bad_override(run_cli, config, sets, expect):
    rc, _, err = run_cli("config", "show", config, *[a for s in sets for a in ("--set", s)])
    assert_one_line_error(rc, err, *expect)


def test_missing_config_file(run_cli):
    rc, _, err = run_cli("config", "check", "configs/nope.yaml")
    assert_one_line_error(rc, err, "configs/nope.yaml", "no such file")


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
