"""numba's cache is kept per version of the compiled sources (``t3sim.numba_cache``): an edited callee in another
file is recompiled, not loaded stale from its caller's cache."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba.core.config
import pytest

from t3sim.numba_cache import configure, sources_digest

CALLER = """
import numba as nb
from pk.callee import f

@nb.njit(cache=True)
def g(x):
    return f(x) * 10
"""


def _package(tmp: Path) -> Path:
    pk = tmp / "pk"
    pk.mkdir()
    (pk / "__init__.py").write_text("")
    (pk / "callee.py").write_text("import numba as nb\n\n@nb.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    (pk / "caller.py").write_text(CALLER)
    return pk


def _g1(tmp: Path, numba_first: bool):
    """``pk.caller.g(1)`` in a fresh process, numba's cache configured for ``pk`` first (inside ``tmp``: the
    process's ``NUMBA_CACHE_DIR``); and the cache directory."""
    code = textwrap.dedent(f"""
        {'import numba' if numba_first else ''}
        from pathlib import Path
        from t3sim.numba_cache import configure
        d = configure(Path({str(tmp / 'pk')!r}))
        from pk.caller import g
        print(d, g(1))
    """)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(tmp), str(Path(__file__).resolve().parents[1])])
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp, capture_output=True, text=True, check=True)
    d, v = out.stdout.split()[-2:]
    assert Path(d).is_relative_to(tmp / "cache")
    return int(v), d


@pytest.mark.parametrize("numba_first", [False, True])
def test_a_callee_edited_in_another_file_is_recompiled(tmp_path, numba_first):
    """Without the digest directory numba loads the caller's cached code with the old callee in it (20, not 30)."""
    pk = _package(tmp_path)
    v, d = _g1(tmp_path, numba_first)
    assert v == 20
    assert _g1(tmp_path, numba_first) == (20, d)  # from the cache
    assert any(Path(d).rglob("*.nbi"))
    (pk / "callee.py").write_text((pk / "callee.py").read_text().replace("x + 1", "x + 2"))
    v, d2 = _g1(tmp_path, numba_first)
    assert v == 30 and d2 != d  # a directory per version of the sources


def test_digest_follows_the_sources_that_use_numba_and_what_they_import(tmp_path):
    pk = tmp_path / "pk"
    (pk / "sub").mkdir(parents=True)
    (pk / "k.py").write_text("import numba\nfrom pk.consts import C\nfrom pk.sub import table as T, other\n")
    (pk / "consts.py").write_text("C = 1\n")
    (pk / "sub" / "__init__.py").write_text("")
    (pk / "sub" / "table.py").write_text("X = 1\n")
    (pk / "plain.py").write_text("x = 1\n")
    d0 = sources_digest(pk)
    (pk / "plain.py").write_text("x = 2\n")
    (pk / "__pycache__").mkdir()
    (pk / "__pycache__" / "cached.py").write_text("import numba  # not a source\n")
    assert sources_digest(pk) == d0
    for f, text in (("sub/table.py", "X = 2\n"), ("consts.py", "C = 2\n"),
                    ("k.py", "import numba  # edited\nfrom pk.consts import C\n")):
        (pk / f).write_text(text)
        assert sources_digest(pk) != d0
        d0 = sources_digest(pk)


def test_a_users_cache_dir_holds_the_digest_directory(tmp_path, monkeypatch):
    (tmp_path / "k.py").write_text("import numba\n")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", numba.core.config.CACHE_DIR)
    d = configure(tmp_path)
    assert d == str(tmp_path / "mine" / f"numba-{sources_digest(tmp_path)}")
    assert os.environ["NUMBA_CACHE_DIR"] == d == numba.core.config.CACHE_DIR
    assert configure(tmp_path) == d  # a worker process that inherits the variable keeps it


def test_importing_t3sim_configures_its_cache():
    import t3sim

    root = Path(t3sim.__file__).resolve().parent
    assert Path(numba.core.config.CACHE_DIR).name == f"numba-{sources_digest(root)}"
