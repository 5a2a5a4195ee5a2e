"""Scale-out DLRM iterations from per-kernel times and a network model (fused-collective paper
Sec. IV-D, Table II, Fig. 15).

The paper ran its 128-node DLRM study in ASTRA-sim with per-kernel times profiled on an MI210. t3sim does the same
with its own pieces: per-kernel times from small cycle-level t3sim runs (:class:`KernelTimes`, fitted by
``experiments/fused-scale/study.py``), and the analytical 2D-torus model :class:`~t3sim.interconnect.torus.Torus2D`
for the collectives. One iteration of DLRM training on one node (all nodes alike; one GPU per node):

* **baseline** (bulk-synchronous): embedding pooling kernel, then the all-to-all of the pooled vectors, then the
  MLPs forward and backward, then the all-to-all of the pooled vectors' gradients, then the embedding backward
  kernel; the MLPs' weight-gradient all-reduce overlaps the MLP backward (only its excess is exposed);
* **fused**: the forward pooling kernel puts its remote slices while it runs (:func:`fused_forward_ns`), and the
  backward embedding kernel consumes gradient slices as they arrive (:func:`fused_backward_ns`); the MLP part and
  the all-reduce as in the baseline.

Event model of the overlap (both directions): a node's remote traffic is ``slices`` equal slices; the network
serves them first-come first-served at the all-to-all's bottleneck-limited rate (the all-to-all's time less its
latency part, divided evenly), and a slice arrives one route latency (``latency_ns``: the longest route's hops) after
it left. The fused kernel orders its remote slices first (communication-aware) and round-robin over destinations,
so at any time the traffic is spread over all peers as in the library's all-to-all (an assumption: the paper
describes the order for 2 nodes only). Times are ns (float).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

from t3sim.interconnect.torus import Torus2D


def fused_forward_ns(kernel_ns: float, slices: int, remote_fraction: float, a2a_ns: float, latency_ns: float) -> float:
    """End of a fused producer kernel of ``kernel_ns`` whose first ``remote_fraction`` of work yields ``slices``
    remote slices, each put as soon as it is complete (module doc); ``a2a_ns`` the same traffic's all-to-all time."""
    if slices <= 0 or a2a_ns <= 0:
        return kernel_ns
    serve = max(a2a_ns - latency_ns, 0.0) / slices
    dep = 0.0
    for i in range(slices):
        ready = (i + 1) * kernel_ns * remote_fraction / slices
        dep = max(dep, ready) + serve
    flag_ns = latency_ns  # the last slice's ready flag follows it
    return max(kernel_ns, dep + latency_ns + flag_ns)


def fused_backward_ns(kernel_ns: float, slices: int, remote_fraction: float, a2a_ns: float, latency_ns: float) -> float:
    """End of a fused consumer kernel of ``kernel_ns`` that does its local work first, then each of ``slices``
    remote slices once it arrived (they all leave their senders at time 0, FIFO at the all-to-all's rate)."""
    if slices <= 0 or a2a_ns <= 0:
        return kernel_ns
    serve = max(a2a_ns - latency_ns, 0.0) / slices
    per_slice = kernel_ns * remote_fraction / slices
    t = kernel_ns * (1.0 - remote_fraction)
    for i in range(slices):
        t = max(t, (i + 1) * serve + latency_ns) + per_slice
    return t


@dataclass(frozen=True)
class KernelTimes:
    """Per-kernel times of one node in ns (module doc): the embedding pooling kernels (forward; backward =
    ``emb_bwd_factor`` x forward) and one forward MLP layer GEMM (backward = 2 GEMMs of the same size)."""

    emb_fwd_base_ns: float
    emb_fwd_fused_ns: float
    mlp_layer_fwd_ns: float
    emb_bwd_factor: float = 2.0

    def __post_init__(self) -> None:
        if min(self.emb_fwd_base_ns, self.emb_fwd_fused_ns, self.mlp_layer_fwd_ns) < 0 or self.emb_bwd_factor <= 0:
            raise ValueError(f"kernel times must be >= 0 and emb_bwd_factor > 0: {self}")


@dataclass(frozen=True)
class DlrmScaleOut:
    """The DLRM of one scale-out point: model-parallel tables (``tables_per_node`` each), data-parallel MLPs."""

    nodes: int
    tables_per_node: int
    global_batch: int
    embedding_dim: int
    elem_B: int
    mlp_layers: int
    mlp_size: int
    slice_bags: int

    @property
    def local_batch(self) -> int:
        return self.global_batch // self.nodes

    @property
    def bytes_per_pair(self) -> float:
        """Pooled-vector bytes one node sends each other node in the forward all-to-all (and gets back, backward)."""
        return self.tables_per_node * self.local_batch * self.embedding_dim * self.elem_B

    @property
    def remote_slices(self) -> int:
        return (self.nodes - 1) * self.tables_per_node * -(-self.local_batch // self.slice_bags)

    @property
    def mlp_weight_B(self) -> float:
        return self.mlp_layers * self.mlp_size * self.mlp_size * self.elem_B


def iteration(d: DlrmScaleOut, k: KernelTimes, net: Torus2D) -> Dict[str, float]:
    """One training iteration, baseline and fused, and its parts (ns; module doc)."""
    if d.nodes != net.nodes:
        raise ValueError(f"{d.nodes} nodes on a {net.kx} x {net.ky} torus")
    a2a = net.all_to_all_ns(d.bytes_per_pair)
    lat = net.max_hops() * net.hop_ns
    remote = (d.nodes - 1) / d.nodes
    mlp_f = d.mlp_layers * k.mlp_layer_fwd_ns
    mlp_b = 2 * mlp_f
    ar = net.all_reduce_ns(d.mlp_weight_B)
    ar_exposed = max(0.0, ar - mlp_b)
    emb_b_base, emb_b_fused = k.emb_bwd_factor * k.emb_fwd_base_ns, k.emb_bwd_factor * k.emb_fwd_fused_ns
    mlp = mlp_f + mlp_b + ar_exposed
    base_fwd, base_bwd = k.emb_fwd_base_ns + a2a, a2a + emb_b_base
    fused_fwd = fused_forward_ns(k.emb_fwd_fused_ns, d.remote_slices, remote, a2a, lat)
    fused_bwd = fused_backward_ns(emb_b_fused, d.remote_slices, remote, a2a, lat)
    base, fused = base_fwd + mlp + base_bwd, fused_fwd + mlp + fused_bwd
    return {"a2a_ns": a2a, "mlp_fwd_ns": mlp_f, "mlp_bwd_ns": mlp_b, "allreduce_ns": ar, "allreduce_exposed_ns": ar_exposed,
            "emb_fwd_base_ns": k.emb_fwd_base_ns, "emb_fwd_fused_ns": k.emb_fwd_fused_ns,
            "emb_bwd_base_ns": emb_b_base, "emb_bwd_fused_ns": emb_b_fused,
            "base_fwd_ns": base_fwd, "base_bwd_ns": base_bwd, "fused_fwd_ns": fused_fwd, "fused_bwd_ns": fused_bwd,
            "baseline_ns": base, "fused_ns": fused, "reduction": 1.0 - fused / base}
