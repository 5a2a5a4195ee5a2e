"""The inter-node half of ``fused_emb_a2a``: slices put through the NIC (fused-collective paper Sec. III-A, Fig. 6).

On a ``multinode`` interconnect a bag whose sample is kept by a GPU of *another node* does not go out as per-thread
stores (those are the intra-node zero-copy path): as in the paper's scale-out kernel,

* the logical WG stores its pooled vector into its own GPU's symmetric send buffer (``send + (t B + b) D e``, so a
  slice ``(t, c)`` is one contiguous block; uncached, as symmetric-heap data), sets its WG_Done bit, and moves on;
* the WG that completes the slice issues, as library calls (each ``fused_put_api_latency_ns`` of the WG's time, then
  it goes on pooling: "asynchronous network transactions allow the communicating WGs ... to continue performing
  embedding pooling without being blocked", Sec. IV-C): the slice's put, a fence, and the sliceRdy flag put;
* the NIC executes them in order (:meth:`SlicePuts.put`, a process): once every store of the slice has been
  written into the send buffer it reads the slice from the GPU's memory (GPU-direct RDMA: uncached communication-
  stream reads) and sends it as **one message** over the NIC path (bulk payload, ``max_payload_B``); the fence
  holds the flag until the slice has been written at the destination and acknowledged (one path latency back:
  assumption -- the paper's "remote fence ensures that the sliceRdy flag is only set after the prior PUT has
  completed"), then the flag is put (one 64 B message). The kernel's communication record (``fused_a2a``) ends only
  when every flag has landed: each put holds the kernel's completion count from its issue to its flag's landing.

Homogeneous mode mirrors GPU 0's puts onto the shadows by the same rotation as the stores (``FusedEmbA2A``); it is
refused unless every GPU is its own node (then every peer is remote, and the rotation keeps that).

Statistics ``fused.nic_*`` count the slice puts, their bytes and the time from a slice's completion to its flag
landing at the destination.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from t3sim.compute.embedding_kernel import span_requests
from t3sim.dma.engine import Payload
from t3sim.memory.request import Stream
from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_NS


class SlicePuts:
    """Slices of one fused embedding kernel put through the NIC (module doc). ``ctx`` is the ``FusedEmbA2A``."""

    def __init__(self, ctx):
        self.ctx = c = ctx
        m = c.model
        self.env = c.env
        ic = m.system.interconnect
        self.node_of = ic.node_of
        self.send_B = m.alloc(c.geom.B * c.geom.T * c.geom.row_B) if self.any_remote_node() else 0
        #: (gpu, t, c) -> the write events of the slice's pooled vectors into the send buffer (simulated GPUs)
        self.staged: Dict[Tuple[int, int, int], List] = {}
        self.puts = self.put_B = 0
        self.put_to_flag_ticks = 0

    def any_remote_node(self) -> bool:
        return any(self.node_of(a) != self.node_of(b) for a in range(self.ctx.N) for b in range(self.ctx.N))

    def remote_node(self, g: int, dst: int) -> bool:
        """Bags from GPU ``g`` to GPU ``dst`` go through the NIC (module doc)."""
        return self.node_of(g) != self.node_of(dst)

    def send_requests(self, t: int, b: int) -> np.ndarray:
        row = self.ctx.geom.row_B
        lo = self.send_B + (t * self.ctx.geom.B + b) * row
        return span_requests(np.array([lo]), np.array([lo + row]))

    def stage(self, k, hier, g: int, t: int, b: int) -> None:
        """A logical WG of GPU ``g`` stores bag ``(t, b)`` into its send buffer (uncached, posted)."""
        c = self.ctx
        data = c.geom.pooled(g, t, b) if c.functional else None
        w = hier.write(self.send_requests(t, b), "gemm", uncached=True, data=data)
        k.track_write(w)
        self.staged.setdefault((g, t, b // c.S), []).append(w)
        if g in c.model.hiers:
            c.remote_store_B += c.geom.row_B

    def issue(self, g: int, t: int, ch: int):
        """The slice's last WG posts put + fence + flag (a generator: the WG's API time); the NIC runs them."""
        api = self.ctx.costs.api_ticks
        if api:
            yield self.env.timeout(3 * api)
        c = self.ctx
        todo = [(g, ch, self.staged.pop((g, t, ch), []))]
        if c.homogeneous and g == 0:
            todo += [(j, (ch + j * c.cpg) % c.C, []) for j in range(1, c.N)]
        for src, sch, writes in todo:
            c.completion.add()  # the put's work until its flag is sent (the kernel cannot end before this call)
            self.env.process(self.put(src, t, sch, writes))

    def put(self, g: int, t: int, ch: int, writes):
        """The NIC's work for slice ``(t, ch)`` of GPU ``g`` (module doc)."""
        c, env = self.ctx, self.env
        t0 = env.now
        dst = ch // c.cpg
        bags = range(ch * c.S, ch * c.S + c.S)
        if writes:
            yield env.all_of(writes)
        if g in c.model.hiers:
            reads = np.concatenate([self.send_requests(t, b) for b in bags])
            yield c.model.hiers[g].read(reads, "other", Stream.COMM, uncached=True)
        addrs = np.concatenate([c.recv_requests(g, t, b) for b in bags])
        data = np.concatenate([c.geom.pooled(g, t, b) for b in bags]) if c.functional else None
        for b in bags:
            c.checks.sent(dst, g, t, b)
        landed = env.event()

        def done(_pl):
            for b in bags:
                c.checks.arrived(dst, g, t, b)
            landed.succeed()

        pl = Payload(addrs, None, None, "store", data, category="other", then=done)
        self.puts += 1
        self.put_B += pl.nbytes
        c.fabric.send(g, dst, pl)
        yield landed
        yield env.timeout(c.model.network.path_latency_ticks(dst, g))  # the fence's acknowledgement
        c.flags.send(g, dst, (g, t, ch), c.payload_B)
        c.completion.finish()  # the flag's own payload now holds the completion open until it lands
        if g in c.model.hiers:
            self.put_to_flag_ticks += env.now - t0

    def stats(self) -> Stats:
        s = Stats()
        s.add("nic_slice_puts", self.puts, "count", "slices put through the NIC (one message each; shadows' included)")
        s.add("nic_put_B", self.put_B, "B", "bytes of those puts")
        s.add("nic_put_to_flag_ns", self.put_to_flag_ticks / TICKS_PER_NS, "ns", "summed over the simulated GPUs' "
              "NIC slices: from the slice's completion to its flag put (staging writes, RDMA read, transfer, fence)")
        return s
