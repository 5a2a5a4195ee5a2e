"""Shared test helpers."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]


def load_script(rel: str) -> ModuleType:
    """The repository's script at ``rel`` (not in a package: benchmarks/, experiments/) loaded as a module."""
    path = REPO / rel
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """Run ``t3sim`` in-process from the repo root; return (rc, stdout, stderr)."""
    from t3sim.cli import main

    def _run(*argv: str, cwd: Path | None = None):
        monkeypatch.chdir(cwd or REPO)
        try:
            rc = main(list(argv))
        except SystemExit as exc:  # argparse usage errors
            rc = exc.code
        out, err = capsys.readouterr()
        return rc, out, err

    return _run


def assert_one_line_error(rc, err, *fragments):
    """The bad-input contract: exit 2, exactly one stderr line, no traceback."""
    assert rc == 2, f"exit code {rc}, stderr={err!r}"
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, f"expected one stderr line, got {lines!r}"
    assert "Traceback" not in err
    for frag in fragments:
        assert frag in lines[0], f"{frag!r} not in {lines[0]!r}"


@pytest.fixture(autouse=True, scope="module")
def _release_memory_after_module():
    """Free each test module's simulations before the next runs in the same worker: collect reference cycles
    (simpy processes and the models they close over) and hand freed heap pages back to the OS, so a worker's
    memory does not grow with every module it runs (a 2-worker suite on a 24 GiB machine ran out of memory)."""
    yield
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


#: the cuBLAS sm90 kernel of the large Mega-GPT-2 GEMMs on the H200 (gemm_calibration.csv; gemm_pipeline/)
LARGE = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA"


def with_kernel(system, name: str, **update):
    """``system`` whose GEMM library is just its kernel ``name`` (fields ``update``d), picked for every shape."""
    k = next(k for k in system.gemm_library.kernels if k.name == name).model_copy(update=update)
    lib = system.gemm_library.model_copy(update={"kernels": [k], "selection": "first_fit", "choices": []})
    return system.model_copy(update={"gemm_library": lib})
