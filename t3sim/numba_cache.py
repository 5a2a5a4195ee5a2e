"""numba's on-disk cache, kept apart per version of t3sim's compiled code.

numba checks a cached function against its own source file only. A compiled function that calls one defined in
another file is cached with that callee compiled in, and after the callee's file changes numba still loads the old
code: a caller in one file and a callee in another, the callee edited, and the cached caller returns the old result
(``tests/test_numba_cache.py`` shows it). t3sim's kernels call across files (``compute.memhier_kernel`` calls
``cache.l2_kernel``, the GEMM window the memory controller, ...), so a checkout updated in place could run stale
compiled code and give wrong statistics with no error. (The specialised kernels,
:func:`t3sim.memory.specialise.specialise`, carry a digest of what they call in their names; the others did not.)

:func:`configure`, run when ``t3sim`` is imported, points numba's cache (``NUMBA_CACHE_DIR``) at a directory named
by a digest of every source file of the package that mentions numba: a change to any of them starts a fresh cache
(one recompile of what runs, about a minute), and an unchanged checkout loads what it compiled before. The directory
is ``<package>/__pycache__/numba-<digest>`` (or, where that is not writable, ``~/.cache/t3sim/numba-<digest>``), or
``numba-<digest>`` inside the user's own ``NUMBA_CACHE_DIR``. Directories of earlier versions are left in place
(delete them freely: each is at most ~100 MB).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Optional

_PREFIX = "numba-"


def sources_digest(root: Path) -> str:
    """A digest (16 hex digits) of the path and content of every ``*.py`` file under ``root`` that mentions numba."""
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != "__pycache__"]  # (where the caches themselves are)
        files += [Path(d) / n for n in names if n.endswith(".py")]
    h = hashlib.sha256()
    for p in sorted(files):
        data = p.read_bytes()
        if b"numba" in data:
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:16]


def _writable(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
        return os.access(d, os.W_OK)
    except OSError:
        return False


def configure(root: Optional[Path] = None) -> str:
    """Point numba's cache at the directory for ``root``'s compiled sources (module doc; default: this package);
    returns it. Sets ``NUMBA_CACHE_DIR`` (inherited by worker processes) and, if numba is already imported, its
    config."""
    root = Path(root) if root is not None else Path(__file__).resolve().parent
    name = _PREFIX + sources_digest(root)
    user = os.environ.get("NUMBA_CACHE_DIR", "")
    if user and Path(user).name == name:  # set by this function in a parent process
        cache = Path(user)
    elif user:
        cache = Path(user) / name
    else:
        local = root / "__pycache__"
        cache = (local if _writable(local) else Path.home() / ".cache" / "t3sim") / name
    os.environ["NUMBA_CACHE_DIR"] = str(cache)
    if "numba" in sys.modules:  # numba read the variable at its import: set its config too
        from numba.core import config

        config.CACHE_DIR = str(cache)
    return str(cache)
