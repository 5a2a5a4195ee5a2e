"""numba's on-disk cache, kept apart per version of t3sim's compiled code.

numba checks a cached function against its own source file only. A compiled function that calls one defined in
another file is cached with that callee compiled in, and after the callee's file changes numba still loads the old
code: a caller in one file and a callee in another, the callee edited, and the cached caller returns the old result
(``tests/test_numba_cache.py`` shows it). t3sim's kernels call across files (``compute.fast.memhier_kernel`` calls
``cache.fast.l2_kernel``, the GEMM window the memory controller, ...), so a checkout updated in place could run stale
compiled code and give wrong statistics with no error. (The specialised kernels,
:func:`t3sim.memory.fast.specialise.specialise`, carry a digest of what they call in their names; the others did not.)

:func:`configure`, run when ``t3sim`` is imported, points numba's cache (``NUMBA_CACHE_DIR``) at a directory named
by a digest of every source file of the package that mentions numba and of the package's modules those import
from (a compiled function freezes the constants it reads, such as ``config.system.REQUEST_B``): a change to any of them starts a fresh cache
(one recompile of what runs, about a minute), and an unchanged checkout loads what it compiled before. The directory
is ``<package>/__pycache__/numba-<digest>`` (or, where that is not writable, ``~/.cache/t3sim/numba-<digest>``), or
``numba-<digest>`` inside the user's own ``NUMBA_CACHE_DIR``. Directories of earlier versions are left in place
(delete them freely: each is at most ~100 MB). The setting is the process's: other numba code cached in a process
that imported t3sim is cached there too.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Optional

_PREFIX = "numba-"


def sources_digest(root: Path) -> str:
    """A digest (16 hex digits) of the path and content of every ``*.py`` file under ``root`` (a package) that
    mentions numba, and of the package's modules those import from (compiled code freezes the constants it reads)."""
    texts = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != "__pycache__"]  # (where the caches themselves are)
        for n in names:
            if n.endswith(".py"):
                p = Path(d) / n
                texts[p.relative_to(root).as_posix()] = p.read_bytes()
    pkg = re.escape(root.name.encode())
    used = set()
    for rel, data in texts.items():
        if b"numba" in data:
            used.add(rel)
            mods = re.findall(rb"^\s*import\s+" + pkg + rb"\.([\w.]+)", data, re.M)
            for m, names in re.findall(rb"^\s*from\s+" + pkg + rb"((?:\.\w+)*)\s+import\s+\(?([^)\n]*)", data, re.M):
                m = m.lstrip(b".")
                mods.append(m)  # the module, and any of the names that are modules of it
                mods += [(m + b"." if m else b"") + n.split()[0] for n in names.split(b",") if n.strip()]
            for m in mods:
                mod = m.decode().replace(".", "/")
                used.update(x for x in (mod + ".py", mod + "/__init__.py") if x in texts)
    h = hashlib.sha256()
    for rel in sorted(used):
        h.update(rel.encode() + b"\0" + texts[rel] + b"\0")
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
        from numba.core import config  # lazy: numba is imported only where a kernel compiles

        config.CACHE_DIR = str(cache)
    return str(cache)
