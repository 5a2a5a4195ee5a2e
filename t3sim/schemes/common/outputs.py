"""GEMM output helpers shared by several families: the store requests of every WG position
(:class:`OutputTable`: T3, FLUX) and a functional-mode output sink (:class:`FunctionalOutput`: the chunked DMA
decomposition, FLUX's AllGather+GEMM)."""

from __future__ import annotations

from typing import List

import numpy as np

from t3sim.compute.addresses import StoreRequests, wg_store_requests
from t3sim.compute.sinks import Stored
from t3sim.memory.request import Stream
from t3sim.schemes.common.functional_data import store_data


class OutputTable:
    """Store requests of every WG position (computed once, in position order)."""

    def __init__(self, geom, base: List[int], tiles_n: int):
        W = len(base)
        tiles = np.asarray(base, dtype=np.int64)
        self.reqs = wg_store_requests(geom, tiles // tiles_n, tiles % tiles_n, wg_id=np.arange(W))
        self.start = np.searchsorted(self.reqs.wg_id, np.arange(W + 1))

    def of(self, p: int) -> StoreRequests:
        a, b = self.start[p], self.start[p + 1]
        r = self.reqs
        return StoreRequests(r.addr[a:b], r.mask[a:b], r.nbytes[a:b], r.wg_id[a:b], r.wf_id[a:b])


class FunctionalOutput:
    """Functional mode: a chunk GEMM's stores carry GPU ``g``'s partial values (uncached op-and-store, so
    WGs sharing a 64 B line both land)."""

    def __init__(self, hier, g: int):
        self.hier, self.g = hier, g

    def store(self, seq: int, tile: int, reqs) -> Stored:
        written, room = self.hier.posted_write(reqs.addr, "gemm", Stream.COMPUTE, update=True,
                                               data=store_data(self.g, reqs.addr, reqs.mask))
        return Stored(retire=room, written=written)
