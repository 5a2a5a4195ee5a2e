"""A scheme's config is its kind plus its own options (t3sim.config.scheme): found by name in the registry, validated
without simulation code, each family's schemes loaded only when a run needs them."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from t3sim import registry
from t3sim.config import load_experiment
from t3sim.config.scheme import SchemeConfig, kinds, option_fields, options_for
from t3sim.config.sweep import expand
from t3sim.errors import InputError
from t3sim.schemes import FAMILIES
from t3sim.schemes.runtime import SCHEMES, scheme_for

from tests.conftest import REPO

DEFAULT = REPO / "configs/experiments/default.yaml"


def test_every_kind_has_options_a_family_and_a_module_that_defines_it():
    assert set(FAMILIES) == {"baseline", "t3", "decomposed", "flux", "ficco", "fused"}
    assert {k.family for k in kinds()} == set(FAMILIES)
    assert [k.name for k in kinds()] == list(SCHEMES)
    for k in kinds():
        assert issubclass(k.options, SchemeConfig)
        assert k.module.startswith(f"t3sim.schemes.{k.family}.")
        assert scheme_for(k.name).name == k.name  # the module registers the scheme its family names


def test_an_option_means_one_thing():
    fields = option_fields()  # raises if two schemes declare one name differently
    assert fields["chunks"][1] == ["chunked", "chunked_dma", "ficco_char"]
    assert fields["flux_swizzle"][1] == ["flux_rs", "flux_ag"]
    assert "kind" not in fields


#: flux_rs with flux_reduce=pull, every other option at its default, in the resolved config's order
FLUX_RS_PULL = {"kind": "flux_rs", "flux_swizzle": True, "flux_extra_registers_per_thread": 0,
                "flux_store_box_cols": 32, "flux_store_box_issue_ns": 20.0, "flux_tile_fence_ns": None,
                "flux_tile_flag_ns": None, "flux_reduce": "pull", "flux_pull_ctas": 8}


def test_a_resolved_config_holds_the_kind_and_its_options_only():
    exp = load_experiment(DEFAULT, ["scheme.kind=flux_rs", "scheme.flux_reduce=pull"])
    assert type(exp.scheme) is options_for("flux_rs")
    assert exp.model_dump()["scheme"] == FLUX_RS_PULL
    assert load_experiment(DEFAULT).model_dump()["scheme"] == {"kind": "sequential"}


def test_another_schemes_option_at_its_default_is_dropped(tmp_path):
    """A config written out with every field at its default (or a sweep base naming another kind's option at its
    default) still validates: the option changes nothing."""
    exp = load_experiment(DEFAULT, ["scheme.kind=t3", "scheme.chunks=4", "scheme.flux_reduce=atomic"])
    assert exp.model_dump()["scheme"] == {"kind": "t3"}


@pytest.mark.parametrize("kind,opt,owners", [("sequential", "chunks=8", "chunked, chunked_dma, ficco_char"),
                                             ("t3", "flux_swizzle=false", "flux_rs, flux_ag"),
                                             ("ficco", "char_part=both", "ficco_char")])
def test_another_schemes_option_set_is_one_line_naming_its_schemes(kind, opt, owners):
    name, value = opt.split("=")
    with pytest.raises(InputError) as e:
        load_experiment(DEFAULT, [f"scheme.kind={kind}", f"scheme.{opt}"])
    shown = repr(yaml.safe_load(value))
    assert str(e.value) == (f"scheme.{name}: found {shown} with scheme.kind={kind}, which does not use it; "
                            f"allowed: scheme.{name} only with {owners}")


def test_an_unknown_option_lists_the_kinds_own(run_cli):
    rc, _, err = run_cli("config", "show", str(DEFAULT), "--set", "scheme.kind=flux_rs", "--set",
                         "scheme.flux_reduc=pull")
    assert rc == 2
    assert err.strip().splitlines()[-1].endswith("--set scheme.flux_reduc: scheme.flux_reduc: found unknown key "
                                                  "'flux_reduc'; allowed: " + ", ".join(FLUX_RS_PULL))


def test_config_show_prints_the_schemes_options(run_cli):
    rc, out, _ = run_cli("config", "show", str(DEFAULT), "--set", "scheme.kind=copy")
    assert rc == 0
    scheme = yaml.safe_load(out)["scheme"]
    assert scheme == {"kind": "copy", "launch_first": "gemm", "copy_streams": 1, "copy_size_MiB": 256.0,
                      "copy_direction": "d2d"}


def test_a_sweep_over_kinds_takes_their_options_from_the_base(tmp_path):
    """The base's scheme section may name options only the points' kinds take (the sweep sets the kind)."""
    f = tmp_path / "e.yaml"
    f.write_text(f"base: {DEFAULT}\nscheme: {{kind: sequential, flux_reduce: pull, chunks: 4}}\n"
                 "sweep:\n  cases: [{scheme.kind: flux_rs}, {scheme.kind: chunked, scheme.flux_reduce: atomic}]\n")
    pts = expand(f)
    assert [p.config.model_dump()["scheme"] for p in pts] == [
        FLUX_RS_PULL,
        {"kind": "chunked", "compute_streams": 1, "comm_cus": 0, "chunk_axis": "M", "chunks": 4}]
    f.write_text(f"base: {DEFAULT}\nscheme: {{kind: sequential, flux_reduce: pull}}\n"
                 "sweep:\n  grid:\n    scheme.kind: [chunked]\n")
    with pytest.raises(InputError, match="scheme.flux_reduce: found 'pull' with scheme.kind=chunked"):
        expand(f)


def test_a_point_changed_without_validation_is_refused_by_its_scheme():
    flux = load_experiment(DEFAULT, ["scheme.kind=flux_rs", "scheme.flux_reduce=pull"]).scheme
    with pytest.raises(InputError, match="scheme.flux_reduce: found 'pull' with scheme.kind=t3"):
        scheme_for("t3").check_options(flux.model_copy(update={"kind": "t3"}))


def test_options_load_without_simulation_code():
    """One family's options (and a config validated with them) import no scheme module of any family, nor the
    runtime; a run imports only its own scheme's family modules."""
    script = (
        "import sys\n"
        "import t3sim.schemes.flux.options\n"
        "from t3sim.config import load_experiment\n"
        f"load_experiment({str(DEFAULT)!r}, ['scheme.kind=flux_rs', 'scheme.flux_reduce=pull'])\n"
        "mods = sorted(m for m in sys.modules if m.startswith('t3sim.schemes.'))\n"
        "print(' '.join(m for m in mods if not (m.endswith('.options') or m.count('.') == 2)))\n"
        "from t3sim.schemes.runtime import scheme_for\n"
        "scheme_for('flux_rs')\n"
        "mods = sorted(m for m in sys.modules if m.startswith('t3sim.schemes.') and not m.endswith('.options'))\n"
        "print(' '.join(m for m in mods if m.count('.') == 3 and m.split('.')[2] not in ('runtime', 'common')))\n")
    r = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    before, after = r.stdout.splitlines()
    assert before == ""
    assert set(after.split()) == {"t3sim.schemes.flux.flux_rs", "t3sim.schemes.flux.flux_pull",
                                  "t3sim.schemes.flux.costs"}


def test_lazy_registry_entries():
    registry.add_lazy("test-lazy", "x", "t3sim.schemes.t3.t3")
    assert "x" in registry.names("test-lazy")
    with pytest.raises(RuntimeError, match="registered no test-lazy plug-in 'x'"):
        registry.get("test-lazy", "x")
    with pytest.raises(registry.DuplicateRegistration):
        registry.add_lazy("test-lazy", "x", "elsewhere")


def test_every_scheme_pickles():
    """A scheme travels to sweep workers by pickle (t3sim.exec.executors): none may hold a lambda or a closure."""
    import pickle

    for k in kinds():
        scheme = scheme_for(k.name)
        again = pickle.loads(pickle.dumps(scheme))
        assert again.name == scheme.name
        assert again.operation_options("ag_gemm", 4) == scheme.operation_options("ag_gemm", 4)
