"""Functional data mode: the memory keeps real values for the lines it touches.

Values live in a sparse store: ``dict`` of 64 B line index -> numpy array of
``64 / itemsize`` elements (zeros until first written). Operations take effect
at their column command, in issue order: WR stores, UPD (near-memory
op-and-store) adds in place (the bank ALU's "op" is addition, as a reduction
needs), RD returns a copy of the current value. Because a channel orders
same-line requests by admission (see ``system``), a read admitted after an
update sees it.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from t3sim.memory.request import Kind


class FunctionalStore:
    """Sparse per-line values plus the data of in-flight batches."""

    def __init__(self, line_B: int, dtype=np.float32) -> None:
        self.dtype = np.dtype(dtype)
        if line_B % self.dtype.itemsize:
            raise ValueError("line size must be a multiple of the element size")
        self.elems = line_B // self.dtype.itemsize
        self.lines: Dict[int, np.ndarray] = {}
        self._wdata: Dict[int, np.ndarray] = {}
        self._rdata: Dict[int, np.ndarray] = {}

    def on_submit(self, bid: int, kind: Kind, n: int, data) -> None:
        if kind == Kind.READ:
            if data is not None:
                raise ValueError("reads take no data")
            self._rdata[bid] = np.zeros((n, self.elems), dtype=self.dtype)
            return
        if data is None:
            raise ValueError("functional mode: writes and updates need data of shape (n, elems)")
        d = np.asarray(data, dtype=self.dtype).reshape(n, self.elems)
        self._wdata[bid] = d

    def value(self, line: int) -> np.ndarray:
        """Current value of a 64 B line (a copy)."""
        v = self.lines.get(int(line))
        return np.zeros(self.elems, dtype=self.dtype) if v is None else v.copy()

    def read_addr(self, addr: int, access_B: int = 64) -> np.ndarray:
        return self.value(int(addr) // access_B)

    def preload(self, addrs, data, access_B: int = 64) -> None:
        """Set the lines at byte addresses ``addrs`` to ``data`` (``(n, elems)``) at once: a buffer's initial
        contents, placed without timed traffic (as :meth:`read_addr` reads them)."""
        d = np.asarray(data, dtype=self.dtype).reshape(len(addrs), self.elems)
        for a, v in zip(np.asarray(addrs, dtype=np.int64).tolist(), d):
            self.lines[a // access_B] = v.copy()

    def apply(self, ms, issued: np.ndarray) -> None:
        """Apply the column commands ``issued`` (request indices, in issue order per channel)."""
        first = ms.batches.first
        for r in issued.tolist():
            bid = int(ms.r_batch[r])
            i = r - first[bid]
            line = int(ms.r_line[r])
            k = int(ms.r_kind[r])
            if k == Kind.READ:
                v = self.lines.get(line)
                if v is not None:
                    self._rdata[bid][i] = v
            elif k == Kind.WRITE:
                self.lines[line] = self._wdata[bid][i].copy()
            else:
                v = self.lines.get(line)
                if v is None:
                    self.lines[line] = self._wdata[bid][i].copy()
                else:
                    v += self._wdata[bid][i]

    def read_result(self, bid: int) -> np.ndarray:
        return self._rdata[bid]
