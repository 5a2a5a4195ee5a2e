"""Pause the cyclic garbage collector while a large, long-lived model is built.

Setting up a full-size T3 run builds tens of thousands of long-lived objects (DMA blocks, tracker
callbacks); each generation-0 threshold crossing makes the collector scan them again, which cost a
third of T3's setup (CHANGELOG.md). Nothing built there is garbage, so the
collector is paused for the build and runs normally afterwards (the event loop then freezes the model
out of its scans: :meth:`t3sim.sim.engine.Engine.run`). Results are unaffected.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def gc_paused():
    """Disable the cyclic GC inside the block (restored on exit, also on error; nests)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
