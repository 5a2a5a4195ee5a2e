"""Functional data mode: the memory keeps real values for the lines it touches.

Values live in a sparse store: ``dict`` of access index (address // ``access_size_B``) ->
numpy array of ``access_size_B / itemsize`` elements (zeros until first written).
Callers outside the memory see the GPU's requests (``request_B`` = 64 B): :meth:`read_addr`
and :meth:`preload` take request addresses and ``elems = request_B / itemsize`` values each
(one request spans ``request_B / access_size_B`` accesses). Operations take effect
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

    def __init__(self, line_B: int, dtype=np.float32, request_B: int = 64) -> None:
        self.dtype = np.dtype(dtype)
        if line_B % self.dtype.itemsize or request_B % line_B:
            raise ValueError("the access size must be a multiple of the element size and divide the request size")
        self.line_B = line_B
        self.request_B = request_B
        #: elements of one DRAM access (what a batch's data rows hold)
        self.access_elems = line_B // self.dtype.itemsize
        #: elements of one GPU request (what read_addr returns and preload takes per address)
        self.elems = request_B // self.dtype.itemsize
        self.lines: Dict[int, np.ndarray] = {}
        self._wdata: Dict[int, np.ndarray] = {}
        self._rdata: Dict[int, np.ndarray] = {}

    def on_submit(self, bid: int, kind: Kind, n: int, data) -> None:
        if kind == Kind.READ:
            if data is not None:
                raise ValueError("reads take no data")
            self._rdata[bid] = np.zeros((n, self.access_elems), dtype=self.dtype)
            return
        if data is None:
            raise ValueError("functional mode: writes and updates need data of shape (n, access elements)")
        d = np.asarray(data, dtype=self.dtype).reshape(n, self.access_elems)
        self._wdata[bid] = d

    def value(self, line: int) -> np.ndarray:
        """Current value of one DRAM access-sized block (index = address // access size; a copy)."""
        v = self.lines.get(int(line))
        return np.zeros(self.access_elems, dtype=self.dtype) if v is None else v.copy()

    def read_addr(self, addr: int) -> np.ndarray:
        """Current value of the request-sized block at byte address ``addr`` (``elems`` values)."""
        first = int(addr) // self.request_B * self.request_B // self.line_B
        k = self.request_B // self.line_B
        return np.concatenate([self.value(first + j) for j in range(k)]) if k > 1 else self.value(first)

    def preload(self, addrs, data) -> None:
        """Set the request-sized blocks at byte addresses ``addrs`` to ``data`` (``(n, elems)``) at once: a
        buffer's initial contents, placed without timed traffic (as :meth:`read_addr` reads them)."""
        k = self.request_B // self.line_B
        d = np.asarray(data, dtype=self.dtype).reshape(len(addrs) * k, self.access_elems)
        i = 0
        for a in np.asarray(addrs, dtype=np.int64).tolist():
            first = a // self.request_B * self.request_B // self.line_B
            for j in range(k):
                self.lines[first + j] = d[i].copy()
                i += 1

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
