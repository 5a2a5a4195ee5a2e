"""The timing table is data, names real JEDEC parameters, and resolves to the Table 1 values."""

import re

import numpy as np

from t3sim.config import HBMConfig, HBMTimingConfig
from t3sim.memory import timing as T


def _standards():
    from t3sim import registry

    return [registry.get("dram_standard", n) for n in registry.names("dram_standard")]


def test_every_rule_names_known_commands_scopes_and_timings():
    names = {k.removesuffix("_nCK") for k in HBMTimingConfig.model_fields} | {"tBL"}
    for std in _standards():
        for mode in ("all_bank", "per_bank") if std.per_bank_refresh else ("all_bank",):
            for r in std.rules_for(mode):
                assert r.prev in T.CMD_NAMES and r.nxt in T.CMD_NAMES and r.scope in T.SCOPES
                for tok in re.findall(r"t[A-Za-z_]+", r.latency):
                    assert tok in names and (tok == "tBL" or tok in std.reads(mode)), (std.name, mode, r, tok)


def test_every_timing_parameter_is_used_by_some_rule():
    """Every parameter a standard reads is used by one of its rules (or by the controllers directly), and
    every timing field of the config is read by some standard."""
    read = set()
    for std in _standards():
        for mode in ("all_bank", "per_bank") if std.per_bank_refresh else ("all_bank",):
            used = " ".join(r.latency for r in std.rules_for(mode)) + " " + " ".join(w.window for w in std.windows)
            used += " tCL tWL tREFI"  # data offsets and the refresh interval are used by the controllers directly
            for p in std.reads(mode):
                # tRFC is read in either mode, used by all-bank refresh only (its field says so)
                assert re.search(rf"\b{p}\b", used) or (mode, p) == ("per_bank", "tRFC"), (std.name, mode, p)
            read |= set(std.reads(mode))
    assert {k.removesuffix("_nCK") for k in HBMTimingConfig.model_fields} == read


def test_table1_defaults_resolve():
    t = T.resolve(HBMConfig())
    v = t.values
    assert (v["tCCD_S"], v["tCCD_L"], v["tRRD"], v["tRCD"], v["tRAS"], v["tRP"], v["tRC"], v["tCL"], v["tWL"]) == (1, 2, 4, 14, 33, 14, 47, 14, 2)
    assert v["tCCDWL"] == 2 * v["tCCD_L"]  # paper Sec. 5.1.1
    assert v["tBL"] == 1  # BL2 on a DDR bus (Accel-Sim QV100): one clock of data
    assert HBMConfig().access_size_B == 32  # BL2 x 16 B
    L = t.lat
    assert L[T.SC_BANKGROUP, T.UPD, T.UPD] == v["tCCDWL"]
    assert L[T.SC_BANKGROUP, T.RD, T.RD] == v["tCCD_L"]
    assert L[T.SC_CHANNEL, T.RD, T.RD] == max(v["tCCD_S"], v["tBL"])
    assert L[T.SC_BANK, T.ACT, T.RD] == v["tRCD"]
    assert L[T.SC_CHANNEL, T.RD, T.WR] == v["tRTW"]
    assert L[T.SC_CHANNEL, T.WR, T.RD] == v["tWL"] + v["tBL"] + v["tWTR"]
    assert (t.faw, t.faw_count) == (v["tFAW"], 4)
    assert np.all(L[T.SC_BANK, :, T.REF] == -1)  # refresh is a channel-level command
