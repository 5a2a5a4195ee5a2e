"""Compile a numba function template with some of the functions it calls bound per use.

The fast controller's cycle loop calls the arbitration policy's decision and wake-up functions
(:mod:`t3sim.memory.policies.base`). numba binds the functions a compiled function calls at
compile time, from the function's globals, and inlines those compiled with ``inline="always"``;
so a loop specialised on a policy is the template's code compiled over the template module's
globals with those names rebound: :func:`specialise`.

Caching. numba's on-disk cache names a function's files by its module and qualified name and
checks only the source file of the function itself (the template's), so each specialisation
gets its own qualified name, which carries a digest of the source files of the bound functions
and of any other files it depends on: editing a policy's module compiles anew instead of loading stale
code, and a fresh process loads each specialisation it has compiled before. (A bound function
without a source file -- defined interactively -- is compiled without caching.) Within the package,
:mod:`t3sim.numba_cache` also keeps the whole cache per version of the compiled sources, which covers
the kernels that are not specialised; the digest here still covers bound functions defined elsewhere.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import types
from typing import Dict, Iterable, Optional

import numba as nb
from numba.core.dispatcher import Dispatcher


def inlined(fn):
    """``fn`` compiled to be inlined into its callers (a dispatcher passes through)."""
    if isinstance(fn, Dispatcher):
        return fn
    return nb.njit(inline="always")(fn)


def source_digest(objs: Iterable) -> Optional[str]:
    """Digest of the source files defining ``objs`` (functions or dispatchers); None if one has none."""
    h = hashlib.sha256()
    for path in sorted({_source_file(o) for o in objs}, key=str):
        if path is None:
            return None
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def _source_file(obj) -> Optional[str]:
    fn = getattr(obj, "py_func", obj)
    try:
        path = inspect.getsourcefile(fn)
    except TypeError:
        return None
    return path if path and os.path.isfile(path) else None


def specialise(template, tag: str, bindings: Dict[str, object], depends: Iterable = (), **options):
    """Compile ``template`` (a plain function) with the global names in ``bindings`` rebound.

    Plain functions among the bindings are compiled for inlining (:func:`inlined`). ``tag`` names
    the specialisation (a Python identifier); ``depends`` lists further functions whose source
    files the compiled code depends on (for the cache digest). ``options`` go to ``numba.njit``.
    """
    bound = {k: (v if isinstance(v, Dispatcher) or not callable(v) else inlined(v)) for k, v in bindings.items()}
    g = dict(template.__globals__)
    g.update(bound)
    fn = types.FunctionType(template.__code__, g, template.__name__, template.__defaults__, template.__closure__)
    fn.__kwdefaults__ = template.__kwdefaults__
    fn.__doc__ = template.__doc__
    digest = source_digest([*bindings.values(), *depends])  # numba itself checks the template's file
    fn.__qualname__ = f"{template.__qualname__}__{tag}_{digest or 'nocache'}"
    return nb.njit(cache=digest is not None, **options)(fn)
