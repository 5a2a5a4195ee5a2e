"""Whole-system configuration: GPUs, memory, T3 hardware, interconnect, collectives."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import field_validator, model_validator

from t3sim.config.base import F, Model, check_kind
from t3sim.config.collective_latency import CollectiveLatencyConfig
from t3sim.config.gemm_library import GemmLibraryConfig
from t3sim.config.gpu import GPUConfig, L2Config
from t3sim.config.memory import AddressMapConfig, HBMConfig, MemoryControllerConfig


#: bytes of one memory request between CUs, L2 and DMA engines (t3sim/compute/memhier.py REQ_B); the DRAM moves it
#: in hbm.access_size_B accesses, a divisor of it
REQUEST_B = 64


class InterconnectConfig(Model):
    """Inter-GPU network (paper Table 1: ring, 150 GB/s bi-directional, 500 ns links)."""

    kind: str = F("ring", unit="name", desc="topology: ring, direct (fully connected), switch, multinode (nodes of gpus_per_node GPUs joined through NICs), or pcie (PCIe switch trees under CPU sockets joined by a socket link)", source="paper Table 1; multinode: fused computation-collective paper Table I; pcie: FLUX Sec. 5 (the A100 PCIe node)")
    num_gpus: int = F(8, unit="count", desc="GPUs in the tensor-parallel group (1: a single GPU, no collectives)", source="paper Table 1 (8, 16)", ge=1)
    link_bandwidth_GBps: float = F(
        75.0, unit="GBps", desc="bandwidth of one link in one direction (a switch: per port, per direction)",
        source="paper Table 1: 150 GB/s bi-directional ring link = 75 GB/s each way", gt=0)
    bidirectional: bool = F(True, unit="bool", desc="links carry traffic both ways at full rate (ring: both neighbours reachable)", source="paper Table 1 (bi-directional)")
    link_latency_ns: float = F(500.0, unit="ns", desc="one-way latency of a link (switch: per hop)", source="paper Table 1", ge=0)
    links_per_gpu: Optional[int] = F(
        None, unit="count", desc="physical links each GPU has (None = as many as the topology needs); ring needs 2, direct needs num_gpus-1, switch 1",
        source="system datasheet (e.g. MI210: 3 Infinity Fabric links)", gt=0)
    switch_ports: int = F(64, unit="count", desc="switch (and each PCIe switch of kind pcie): ports available for GPUs", source="assumption: NVSwitch-class radix", gt=0)
    packet_size_B: int = F(4096, unit="B", desc="transfers are split into packets of this size (simulation granularity, not the link protocol's packet)", source="assumption: coarse enough for speed; link time is bandwidth-bound at this size", gt=0)
    packet_header_B: int = F(
        0, unit="B",
        desc="protocol overhead of one link-protocol packet besides its payload (NVLink: a 16 B header flit per write request); "
             "a transfer whose link packets carry p payload bytes occupies the wire for (n + ceil(n/p) x packet_header_B) bytes. "
             "0: link_bandwidth_GBps is the payload rate of every transfer (max_payload_B and sm_store_payload_B then change nothing)",
        source="assumption for paper Table 1 (its ring link bandwidth is a payload rate)", ge=0)
    max_payload_B: int = F(
        256, unit="B",
        desc="payload of one link-protocol packet of a bulk copy (copy engine, DMA engine); link_bandwidth_GBps is the payload "
             "rate at this size, so the wire carries link_bandwidth_GBps x (max_payload_B + packet_header_B) / max_payload_B",
        source="NVLink: copy engines write 256 B payloads (S. Jeaugey, NVIDIA, github.com/NVIDIA/nccl-tests/issues/149)", gt=0)
    sm_store_payload_B: int = F(
        128, unit="B",
        desc="payload of one link-protocol packet of the stores a CU (SM) issues to a peer GPU's memory (collective kernels)",
        source="NVLink: \"SMs are limited to 128B payload size, when Copy Engines can use 256B\" (S. Jeaugey, NVIDIA, "
               "github.com/NVIDIA/nccl-tests/issues/149)", gt=0)
    receive_buffer_B: int = F(
        0, unit="B",
        desc="payload bytes a GPU buffers at its end of each incoming link: packets that landed there and whose memory "
             "writes are not done (a packet it forwards frees its space on arrival). Links into a GPU run credit-based "
             "flow control over it: a packet leaves the sender only with credit for its bytes, and the credit returns "
             "one link latency after the writes are done, so a full buffer holds the link back. 0: no bound (every "
             "packet is accepted at once and its writes queue in the memory controllers)",
        source="assumption: no vendor document gives a GPU's buffering of incoming peer writes; a preset's value says "
               "what it is sized to (Dally and Towles, Principles and Practices of Interconnection Networks, Sec. 13.3: a "
               "credit-based link needs bandwidth x credit round trip of buffer to run at full rate)", ge=0)

    # ---- multi-node (kind: multinode; t3sim/interconnect/multinode.py) ----
    gpus_per_node: int = F(
        1, unit="count", desc="kind multinode: GPUs in one node (num_gpus must be a multiple); inside a node the GPUs are "
                              "joined by node_kind links of link_bandwidth_GBps / link_latency_ns, nodes by one NIC each",
        source="fused-collective paper Table I (scale-out: 2 nodes with 1 GPU each; scale-up: 4 GPUs per node)", gt=0)
    node_kind: str = F(
        "direct", unit="name", desc="kind multinode: topology inside a node (ring, direct or switch)",
        source="fused-collective paper Table I (4 GPUs fully connected inside a node)")
    nic_bandwidth_GBps: float = F(
        25.0, unit="GBps", desc="kind multinode: bandwidth of a node's NIC port, each direction (the network's links run at "
                                "this rate too: a non-blocking fabric)",
        source="NVIDIA ConnectX-6 product brief (docs.nvidia.com/networking/display/ConnectX6EN/Introduction): 200 Gb/s "
               "per port = 25 GB/s", gt=0)
    nic_latency_ns: float = F(
        600.0, unit="ns", desc="kind multinode: one-way latency of a message from the sending NIC to the receiving NIC "
                               "(NICs and fabric), besides serialisation",
        source="NVIDIA ConnectX-6 product brief: \"sub-600ns latency\"", ge=0)
    nic_message_rate_Mps: float = F(
        215.0, unit="Mmsg/s", desc="kind multinode: millions of messages (RDMA puts: one per network transfer) a NIC's send port "
                                  "starts per second; each message holds the port for at least 1/rate",
        source="NVIDIA ConnectX-6 product brief: \"215 million messages per second\"", gt=0)

    # ---- PCIe tree under CPU sockets (kind: pcie; t3sim/interconnect/pcie.py) ----
    sockets: int = F(
        2, unit="count", desc="kind pcie: CPU sockets, each the root complex of a PCIe tree of num_gpus / sockets GPUs "
                              "(GPU g under socket g // (num_gpus / sockets)); every two sockets are joined by a socket link",
        source="FLUX Sec. 5: the A100 PCIe node has 2 CPU sockets with 4 GPUs (and 1 NIC) each", gt=0)
    gpus_per_switch: int = F(
        4, unit="count", desc="kind pcie: GPUs behind one PCIe switch (a socket's GPUs must be a multiple); the switch's "
                              "upstream port to its socket's root complex is one more link_bandwidth_GBps / link_latency_ns "
                              "link, shared by all its GPUs' traffic leaving the switch. 1: every GPU on a root port of its "
                              "own, no switch",
        source="assumption: one 96-lane PCIe 4.0 switch per socket, its GPUs' four x16 ports, the NIC's x16 and one x16 "
               "upstream port (FLUX Sec. 4.3: 4 GPUs and 1 NIC per socket, inter-socket and inter-node traffic contend)", gt=0)
    socket_link_bandwidth_GBps: float = F(
        67.2, unit="GBps", desc="kind pcie: bandwidth between two sockets' root complexes, each direction (all the "
                                "CPU-to-CPU links of the pair together), the payload rate of bulk transfers as "
                                "link_bandwidth_GBps is",
        source="Intel Xeon Platinum 83xx (3rd gen Xeon Scalable, Ice Lake-SP) datasheet: 3 UPI links at 11.2 GT/s, 2 B "
               "per transfer and direction = 22.4 GB/s per link; assumption: FLUX names no CPU, the UPI protocol's "
               "own overhead is not counted", gt=0)
    socket_link_latency_ns: float = F(
        500.0, unit="ns", desc="kind pcie: one-way latency of the socket link, from one root complex to the other "
                               "(both root complexes' forwarding included)",
        source="assumption: as much as one PCIe hop (configs/systems/a100-pcie-8gpu.yaml: link_latency_ns from NCCL's "
               "PCI latency); no published figure for GPU peer writes crossing sockets", ge=0)

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        return check_kind("topology", v)

    @field_validator("node_kind")
    @classmethod
    def _node_kind(cls, v: str) -> str:
        if v == "multinode":
            raise ValueError("node_kind 'multinode': a node's GPUs are joined by ring, direct or switch links")
        return check_kind("topology", v)

    @model_validator(mode="after")
    def _receive_buffer(self) -> "InterconnectConfig":
        if 0 < self.receive_buffer_B < self.packet_size_B:
            raise ValueError(f"receive_buffer_B={self.receive_buffer_B} is smaller than one packet "
                             f"(packet_size_B={self.packet_size_B}): no packet could ever be sent; use 0 (no bound) or "
                             f"at least {self.packet_size_B}")
        return self

    @model_validator(mode="after")
    def _pcie_shape(self) -> "InterconnectConfig":
        if self.kind == "pcie":
            n, k, per = self.num_gpus, self.sockets, self.gpus_per_switch
            if n % k:
                raise ValueError(f"kind pcie: num_gpus={n} is not a multiple of sockets={k} (every socket holds "
                                 "the same number of GPUs)")
            if (n // k) % per:
                raise ValueError(f"kind pcie: the {n // k} GPUs of a socket (num_gpus={n} / sockets={k}) are not a "
                                 f"multiple of gpus_per_switch={per} (every switch holds the same number of GPUs)")
            if per > self.switch_ports:
                raise ValueError(f"kind pcie: gpus_per_switch={per} exceeds switch_ports={self.switch_ports}")
        return self

    @property
    def num_nodes(self) -> int:
        """Nodes of a multinode topology (num_gpus / gpus_per_node); 1 for every other kind."""
        return self.num_gpus // self.gpus_per_node if self.kind == "multinode" else 1

    def node_of(self, gpu: int) -> int:
        """The node GPU ``gpu`` sits in (0 unless kind is multinode)."""
        return gpu // self.gpus_per_node if self.kind == "multinode" else 0

    @property
    def gpu_links(self) -> int:
        """Links one GPU sends on (and receives on) in the topology ``kind`` (t3sim/interconnect/topology.py):
        ring 2 (bidirectional, > 2 GPUs), 1, or none with one GPU; direct num_gpus - 1; switch 1 (its port)."""
        n = self.num_gpus
        if self.kind == "ring":
            return 0 if n < 2 else 2 if self.bidirectional and n > 2 else 1
        if self.kind == "direct":
            return n - 1
        if self.kind == "multinode":  # the intra-node links (the NIC is not counted)
            return self.model_copy(update={"kind": self.node_kind, "num_gpus": self.gpus_per_node}).gpu_links
        return 1

    @property
    def gpu_link_GBps(self) -> float:
        """Bandwidth one GPU's links carry in each direction (GB/s): :attr:`gpu_links` x link_bandwidth_GBps."""
        return self.gpu_links * self.link_bandwidth_GBps


class TrackerConfig(Model):
    """T3 wavefront-granular tracker at each memory controller (paper Sec. 4.2.1, Fig. 9)."""

    entries: int = F(256, unit="count", desc="tracker sets, indexed by the WG id's low bits", source="paper Sec. 4.2.1 (256 entries)", gt=0)
    ways: int = F(8, unit="count", desc="ways per set, tagged by (wg_msb, wf_id)", source="paper Sec. 4.2.1 (wf_id is 3 bits: up to 8 WFs per WG)", gt=0)
    granularity: Literal["wf", "wg"] = F("wf", unit="enum", desc="region tracked by one entry: a WF's or a WG's output tile", source="paper Sec. 4.2.1 (WF granularity)")
    granularity_multiple: int = F(1, unit="count", desc="tiles per tracked region (coarser tracking)", source="t3sim extension (the paper tracks one tile per region, Sec. 4.2.1)", gt=0)
    address_bits: int = F(48, unit="bits", desc="bits of the starting virtual address stored per entry", source="assumption: 48-bit virtual addresses (x86-64/GPU VA width)", gt=0)
    counter_bits: int = F(16, unit="bits", desc="bits of the access counter per entry", source="assumption: enough for wf_tile_size x 2 updates; with address_bits=48 and wg_id_bits=16 gives the paper's 19 KB (t3sim/dma/tracker.py)", gt=0)
    wg_id_bits: int = F(16, unit="bits", desc="bits of a WG id; the tag's wg_msb is wg_id_bits - log2(entries)", source="assumption: 16-bit WG ids (64K WGs per kernel) make the paper's stated fields total its 19 KB (Sec. 4.2.1)", gt=0)
    full_policy: Literal["stall"] = F("stall", unit="enum", desc="what an access does when its set is full", source="t3sim model choice (the paper states no policy for full sets, Sec. 4.2.1)",
                                      descriptive="stalling is the only policy implemented: the field names the model's choice and accepts no other")
    admission: str = F(
        "reserve_ready", unit="name",
        desc="who may take a free way of a set (t3sim/dma/tracker_policy.py): reserve_ready = the last free way only for an "
             "access that leaves a ready region (one whose every access is sure to arrive) in the set, deadlock-free, one "
             "ready bit per way (19.25 KiB at the paper's geometry); first_come = any access, can deadlock round the ring",
        source="the paper sizes the tracker for one producer stage (Sec. 4.2.1) and states no policy for "
               "full sets; first_come deadlocks GPT-3 FC-1/IP at TP=32 (experiments/t3-sublayers/README.md item 7)")

    @field_validator("admission")
    @classmethod
    def _admission(cls, v: str) -> str:
        return check_kind("tracker_admission", v)


class DMAConfig(Model):
    """DMA engines that execute T3's pre-programmed commands (paper Sec. 4.2.2)."""

    engines: int = F(4, unit="count", desc="DMA engines per GPU", source="assumption: AMD CDNA GPUs expose several SDMA engines", gt=0)
    issue_latency_ns: float = F(100.0, unit="ns", desc="delay from a ready entry to the engine's first request", source="assumption: commands are pre-queued (paper Sec. 5.1.1), leaving only a short start-up", ge=0)
    max_outstanding_requests: int = F(
        256, unit="count", desc="64 B memory requests in flight per engine",
        source="assumption: 256 x 64 B = 16 KiB in flight per engine (credits shared by the engine's pipelined commands); at the ~0.22 us mean communication read latency measured in full-size T3 runs that is ~70 GB/s per engine (Little's law), so 4 engines can feed the 2 x 75 GB/s of a bi-directional ring port", gt=0)
    batch_requests: int = F(16, unit="count", desc="requests an engine reads (and sends) as one batch", source="assumption: 1 KiB DMA bursts", gt=0)


NCCL_SRC = "NCCL 2.28.9 (github.com/NVIDIA/nccl, tag v2.28.9-1)"


class NcclConfig(Model):
    """NCCL's Simple protocol on a ring (``collective.protocol: nccl_simple``; :mod:`t3sim.collectives.nccl`).

    Its per-hop latency is the library's tuning-model constant (``collective.latency``: library and link)."""

    buffer_B: int = F(4 << 20, unit="B", desc="FIFO buffer of one ring connection (per channel, per peer) that the sender writes into",
                      source=f"{NCCL_SRC} src/init.cc: DEFAULT_BUFFSIZE = 1 << 22 (NCCL_BUFFSIZE)", gt=0)
    steps: int = F(8, unit="count", desc="slots the FIFO buffer is divided into; a sender may run this many steps ahead of its receiver",
                   source=f"{NCCL_SRC} src/include/device.h: NCCL_STEPS = 8", gt=0)
    chunk_steps: int = F(4, unit="count", desc="FIFO steps of one chunk: a channel moves its data in chunks of buffer_B / steps x chunk_steps",
                         source=f"{NCCL_SRC} src/include/collectives.h: REDUCESCATTER/ALLGATHER/ALLREDUCE_CHUNKSTEPS = NCCL_STEPS/2", gt=0)
    slice_steps: int = F(2, unit="count", desc="FIFO steps of one slice: each ring step of a chunk is sent in chunk_steps / slice_steps slices, each followed by a flag",
                         source=f"{NCCL_SRC} src/include/collectives.h: REDUCESCATTER/ALLGATHER/ALLREDUCE_SLICESTEPS = NCCL_STEPS/4", gt=0)
    @model_validator(mode="after")
    def _steps(self) -> "NcclConfig":
        if self.chunk_steps % self.slice_steps or self.steps % self.slice_steps or self.chunk_steps >= self.steps:
            # chunk_steps = steps fills the whole FIFO with one op's slices: every GPU's first receive-and-send op then
            # waits for a slot that its receiver frees only after its own send -- a ring-wide deadlock (NCCL itself
            # keeps CHUNKSTEPS = NCCL_STEPS / 2)
            raise ValueError(f"collective.nccl: need slice_steps | chunk_steps < steps and slice_steps | steps; a chunk "
                             f"of the whole FIFO (chunk_steps = steps) deadlocks the ring (got steps={self.steps}, "
                             f"chunk_steps={self.chunk_steps}, slice_steps={self.slice_steps})")
        if self.buffer_B % self.steps:
            raise ValueError(f"collective.nccl.buffer_B={self.buffer_B} is not a multiple of steps={self.steps}")
        return self


class CopyEngineConfig(Model):
    """GPU copy engines executing cudaMemcpyAsync-style copies (t3sim/dma/copy_engine.py).

    A copy runs on one engine; each engine streams its copy in requests of ``request_B``, keeping at
    most ``max_outstanding_requests`` 64 B requests in flight (issued, not yet written), no faster
    than ``engine_bandwidth_GBps``. Device memory is reached through the L2 (NVIDIA's L2 is
    memory-side: every DRAM access passes the L2 slice of its memory partition); host memory through
    the PCIe link (``host_link_*``), one per direction.
    """

    engines: int = F(
        4, unit="count", desc="copy engines a program can drive at once (copies on different streams run on different engines; more copies than engines queue)",
        source="assumption: a few DMA engines per GPU (AMD CDNA SDMA engines); the H200 preset sets its measured asyncEngineCount", gt=0)
    max_outstanding_requests: int = F(
        4096, unit="count", desc="64 B requests one engine keeps in flight (a request counts from its read until its write is accepted)",
        source="assumption: not published; no preset sets it (the H200's host copies are bound by the PCIe link with it: "
               "experiments/validation/copy_contention/README.md)", gt=0)
    request_B: int = F(
        2048, unit="B", desc="bytes an engine moves per request it issues (a batch of 64 B memory requests, one read then one write)",
        source="assumption: copy engines move data in bursts of whole pages of 64 B requests; 2 KiB keeps a 256 MiB copy to 131072 requests", gt=0)
    engine_bandwidth_GBps: float = F(
        10000.0, unit="GBps", desc="cap on the bytes one engine reads per second (its own throughput limit, before memory)",
        source="assumption: none binding by default (a copy is limited by its requests in flight and the memory)", gt=0)
    launch_latency_ns: float = F(
        2000.0, unit="ns", desc="delay from a copy's issue to its engine's first request (driver and engine start-up)",
        source="assumption: a few us from cudaMemcpyAsync to the first DMA request", ge=0)
    l2_allocate: bool = F(
        False, unit="bool", desc="copy-engine reads and writes allocate L2 lines (True) or pass through the L2 slice to DRAM without allocating (False)",
        source="assumption: copy traffic streams through the memory-side L2 (evict-first) rather than displacing kernels' working sets")
    mc_stream: Literal["compute", "comm"] = F(
        "compute", unit="enum",
        desc="arbitration stream of copy-engine DRAM requests at the memory controllers: compute (one arrival-order queue with the CUs' L2 misses) or comm (the communication stream of memory_controller.arbitration)",
        source="assumption: an L2 slice's misses reach its memory controller in one queue whatever their client; comm lets T3-MCA-style policies separate them")
    d2d_path: Literal["ce", "sm"] = F(
        "ce", unit="enum",
        desc="what executes a device-to-device copy: a copy engine (ce) or an SM copy kernel dispatched with the other kernels (sm, t3sim/dma/copy_kernel.py)",
        source="assumption: DMA engines (AMD SDMA) copy device-to-device; the H200 preset says sm (measured)")
    sm_copy_ctas_per_cu: int = F(
        2, unit="count", desc="sm path: CTAs of a copy kernel per CU (grid = this x num_cus; CTA i copies the i-th 1/grid of the bytes)",
        source="assumption: a grid-stride copy kernel sized to fill the GPU", gt=0)
    sm_copy_threads_per_cta: int = F(
        512, unit="count", desc="sm path: threads per copy-kernel CTA", source="assumption: not published", gt=0)
    sm_copy_registers_per_thread: int = F(
        32, unit="count", desc="sm path: registers per copy-kernel thread", source="assumption: a load/store loop needs few registers", gt=0)
    sm_copy_inflight_per_cu_B: int = F(
        131072, unit="B", desc="sm path: bytes of copy requests the copy-kernel CTAs on one CU keep in flight together (load issued until its store is written)",
        source="assumption: not published, not fitted (configs/systems/h200-4gpu.yaml sets 256 KiB, fitted to the H200's "
               "one-stream 256 MiB D2D copy alone in experiments/validation/copy_contention/h200_copy_contention.json (1 row))", gt=0)
    host_link_bandwidth_GBps: float = F(
        63.0, unit="GBps", desc="host link (PCIe) data rate in each direction, before packet overhead",
        source="PCIe 5.0 x16: 32 GT/s x 16 lanes x 128b/130b encoding / 8 = 63.0 GB/s per direction", gt=0)
    host_link_payload_B: int = F(
        256, unit="B", desc="data bytes per PCIe transaction-layer packet (max payload size)",
        source="PCIe 5.0: common max payload size 256 B on server root ports", gt=0)
    host_link_overhead_B: int = F(
        24, unit="B", desc="per-packet overhead on the link (TLP header, sequence number, LCRC, framing)",
        source="PCIe 5.0: 16 B 4DW TLP header (64-bit addresses) + 2 B sequence + 4 B LCRC + 2 B framing token", ge=0)
    host_link_latency_ns: float = F(
        1000.0, unit="ns", desc="round trip from a copy engine's host request to its data or acknowledgement",
        source="assumption: ~1 us PCIe round trip through the root complex to host DRAM", ge=0)

    @property
    def host_link_effective_GBps(self) -> float:
        """Host-link payload rate per direction (GB/s): the raw rate times payload / (payload + overhead)."""
        p = self.host_link_payload_B
        return self.host_link_bandwidth_GBps * p / (p + self.host_link_overhead_B)


class CollectiveConfig(Model):
    """Collectives run as GPU kernels (RCCL/NCCL style; paper Secs. 2.3, 3.2.1)."""

    algorithm: Literal["ring", "direct"] = F("ring", unit="enum", desc="reduce-scatter / all-gather implementation", source="paper Sec. 2.3, 7.1")
    protocol: Literal["steps", "nccl_simple"] = F(
        "steps", unit="enum",
        desc="how the kernel runs the algorithm: 'steps' = plan steps pipelined in pipeline_slices slices over a CU pool, a GPU "
             "starting a step when the previous one's data arrived (t3sim.collectives.runner); 'nccl_simple' = NCCL's ring Simple "
             "protocol: one CTA per channel (cus channels), each its own ring over its share of the data, chunks of "
             "nccl.chunk_steps FIFO steps, a flag after every slice (t3sim.collectives.nccl; ring only; "
             "ring_bidirectional and pipeline_slices do not apply). NCCL has no near-memory reductions: the nmc variant (ideal_rs_nmc) "
             "runs 'steps' under either value (under nccl_simple on a one-way ring)",
        source=f"'steps': paper Sec. 2.3 (RCCL ring); 'nccl_simple': {NCCL_SRC} src/device/prims_simple.h, reduce_scatter.h, all_gather.h, all_reduce.h, src/enqueue.cc")
    cus: Optional[int] = F(None, unit="count", desc="CUs given to a collective kernel (None = all CUs); protocol nccl_simple: the number of channels (one CTA each)", source="paper Fig. 6 (72-8, 64-16 splits)", gt=0)
    nccl: NcclConfig = F(NcclConfig, unit="mapping", desc="NCCL Simple-protocol constants (used by protocol nccl_simple only)", source=NCCL_SRC)
    latency: CollectiveLatencyConfig = F(
        CollectiveLatencyConfig, unit="mapping",
        desc="fixed latencies: the software start-up and the collective library's tuning-model latencies (base, per hop)",
        source="t3sim/config/collective_latency.py (NVIDIA/nccl and ROCm/rccl src/graph/tuning.cc)")
    ring_bidirectional: bool = F(
        True, unit="bool", desc="protocol 'steps': ring RS/AG split every chunk in halves sent around the ring both ways at once (needs interconnect.bidirectional; else one direction)",
        source="assumption: RCCL/NCCL run rings in both directions (channels) so the 150 GB/s bi-directional ring of paper Table 1 is usable")
    pipeline_slices: int = F(
        4, unit="count", desc="protocol 'steps': slices each step's transfer is cut into, so reading/reducing one slice overlaps sending the previous",
        source="assumption: NCCL/RCCL pipeline a chunk in slices (NCCL_STEPS-style); 4 slices per chunk", ge=1)
    inflight_per_cu_B: int = F(
        8192, unit="B",
        desc="bytes of loads, per source buffer, that one CU running a collective keeps in flight; a CU issues its next sub-batch "
             "only when the previous one returned, so throughput = CUs x this / load latency (Little's law)",
        source="RCCL ring kernels: one 256-thread block per CU (channel), 16 B (dwordx4) loads per thread, COLL_UNROLL = 2 "
               "(ROCm/rccl src/device/common.h): 256 x 16 B x 2 = 8 KiB per source", gt=0)
    cu_bandwidth_GBps: Optional[float] = F(
        None, unit="GBps",
        desc="bytes one CU running a collective moves per second through its memory pipe, loads plus stores (local stores "
             "and stores to a peer GPU): a CU piece takes at least its bytes at this rate (None: no such limit, the piece "
             "is bound by its loads' latency and in-flight bytes alone)",
        source="assumption: no per-CU limit, not fitted (configs/systems/h200-4gpu.yaml sets 88 GB/s, fitted to the 24-CTA rows of the reduce-copy benchmark experiments/validation/cta_copy/cta_copy_h200.json (6 rows))", gt=0)
    cta_threads: int = F(
        256, unit="count", desc="threads of one collective CTA (one per channel/CU); with cta_registers_per_thread and "
                                "cta_lds_B, what a CTA holds on its CU, so it shares CUs with concurrent kernels only as "
                                "the occupancy rules allow (t3sim/compute/dispatcher.py)",
        source="RCCL ring kernels: 256-thread blocks (ROCm/rccl src/device/common.h); NCCL Simple: NCCL_SIMPLE_MAX_NTHREADS = 512", gt=0)
    cta_registers_per_thread: int = F(
        96, unit="count", desc="32-bit registers per thread of a collective CTA",
        source="assumption: NCCL/RCCL device kernels are built with __launch_bounds__(NCCL_MAX_NTHREADS=640, 1), which caps "
               "them at 65536 / 640 = 102, i.e. 96 allocatable registers per thread", gt=0)
    cta_lds_B: int = F(
        16384, unit="B", desc="LDS (shared memory) bytes of one collective CTA",
        source="assumption: NCCL keeps its per-CTA state (struct ncclShmemData: channel, work and group descriptors) in "
               "static shared memory of the order of 10-20 KB", ge=0)


class SystemConfig(Model):
    """A complete multi-GPU system."""

    name: str = F("system", unit="name", desc="short name used in results and plots", source="user",
                  descriptive="names the system in results and plots; not simulated")
    description: str = F("", unit="text", desc="free text describing the system and its sources", source="user",
                         descriptive="free text for readers; not simulated")
    gpu: GPUConfig = F(GPUConfig, unit="mapping", desc="per-GPU compute", source="paper Table 1")
    gemm_library: GemmLibraryConfig = F(
        GemmLibraryConfig, unit="mapping", desc="the GEMM kernels this system's BLAS library has and how it picks one per "
                                                 "GEMM shape (t3sim/compute/selection.py: every GEMM of every scheme asks it)",
        source="per preset: measured kernel choices (h200-4gpu: experiments/validation/gemm_kernels/) or the vendor library's sources")
    l2: L2Config = F(L2Config, unit="mapping", desc="L2 cache", source="paper Table 1")
    hbm: HBMConfig = F(HBMConfig, unit="mapping", desc="HBM device", source="paper Table 1")
    address_map: AddressMapConfig = F(AddressMapConfig, unit="mapping", desc="address interleaving", source="t3sim/memory/README.md")
    memory_controller: MemoryControllerConfig = F(MemoryControllerConfig, unit="mapping", desc="per-channel memory controller", source="t3sim/memory/README.md")
    tracker: TrackerConfig = F(TrackerConfig, unit="mapping", desc="T3 tracker", source="paper Sec. 4.2.1")
    dma: DMAConfig = F(DMAConfig, unit="mapping", desc="DMA engines", source="paper Sec. 4.2.2")
    copy_engine: CopyEngineConfig = F(CopyEngineConfig, unit="mapping", desc="copy engines (cudaMemcpyAsync)", source="experiments/validation/copy_contention/README.md")
    interconnect: InterconnectConfig = F(InterconnectConfig, unit="mapping", desc="inter-GPU network", source="paper Table 1")
    collective: CollectiveConfig = F(CollectiveConfig, unit="mapping", desc="collective kernels", source="paper Sec. 2.3")

    @model_validator(mode="after")
    def _consistency(self) -> "SystemConfig":
        ic = self.interconnect
        n = ic.num_gpus
        if ic.kind == "multinode" and n % ic.gpus_per_node:
            raise ValueError(f"interconnect.num_gpus={n} is not a multiple of interconnect.gpus_per_node={ic.gpus_per_node} "
                             "(kind multinode: whole nodes)")
        kind, n = (ic.node_kind, ic.gpus_per_node) if ic.kind == "multinode" else (ic.kind, n)
        need = {"ring": 2 if n > 2 else min(n - 1, 1), "direct": n - 1, "switch": 1}.get(kind, 1)
        if ic.links_per_gpu is not None and need > ic.links_per_gpu:
            raise ValueError(
                f"{'a node of ' if ic.kind == 'multinode' else 'interconnect.'}num_gpus={n} does not fit a {kind} topology with links_per_gpu={ic.links_per_gpu} "
                f"(needs {need} links per GPU)")
        if kind == "switch" and n > ic.switch_ports:
            raise ValueError(f"interconnect.num_gpus={n} does not fit a switch with switch_ports={ic.switch_ports}")
        gran, row, access = self.address_map.interleave_granularity_B, self.hbm.row_size_B, self.hbm.access_size_B
        if REQUEST_B % access:
            raise ValueError(f"hbm.bus_width_B x burst_length = {access} B per DRAM access does not divide the {REQUEST_B} B "
                             "memory request of the CUs, L2 and DMA engines, which the memory splits into whole accesses; "
                             f"allowed: an access size of {', '.join(str(d) for d in range(1, REQUEST_B + 1) if REQUEST_B % d == 0)} B")
        cols, gran_cols = row // access, max(1, gran // access)
        if gran_cols < cols and cols % gran_cols:
            raise ValueError(f"address_map.interleave_granularity_B={gran} does not divide hbm.row_size_B={row} into whole "
                             f"chunks of {access} B columns: the address map cannot decode it")
        if ic.packet_size_B % REQUEST_B:
            raise ValueError(f"interconnect.packet_size_B={ic.packet_size_B} is not a multiple of the {REQUEST_B} B memory "
                             "request: packets are written into memory as whole requests")
        if self.collective.cus is not None and self.collective.cus > self.gpu.num_cus:
            raise ValueError(f"collective.cus={self.collective.cus} exceeds gpu.num_cus={self.gpu.num_cus}")
        if self.collective.protocol == "nccl_simple" and self.collective.algorithm != "ring":
            raise ValueError(f"collective.protocol=nccl_simple runs NCCL's ring; collective.algorithm={self.collective.algorithm!r} "
                             "needs protocol 'steps'")
        if self.collective.protocol == "nccl_simple" and self.collective.latency.protocol != "simple":
            raise ValueError(f"collective.protocol=nccl_simple runs NCCL's Simple protocol; collective.latency.protocol="
                             f"{self.collective.latency.protocol!r} names another one's latencies (use simple)")
        return self
