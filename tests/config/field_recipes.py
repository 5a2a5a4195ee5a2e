"""How to show that each config field matters: a small run it changes (tests/config/test_every_field_matters.py).

A :class:`Recipe` names a *context* (a small experiment: a base config file and overrides that make
the field active, e.g. ``scheme.kind=flux_rs`` for the FLUX options) and a perturbed value. The test
runs the context as is and with the field set to the value (plus ``with_``: companion settings the new
value needs and that are read only through it, e.g. the tPPD an HBM3 rule set requires) and compares
every statistic of the two runs. ``rejects=True`` instead expects the perturbed config to be refused
with an error naming the field: a limit that is checked, not simulated (e.g. ``switch_ports``).

Contexts run through :func:`run_context`: ``run`` contexts simulate a whole (tiny) experiment and compare
its stats.json; ``mem`` contexts drive the memory system alone with a mixed trace (both streams, every
request kind, the producer-kernel events the arbitration policies react to) and compare its statistics.

Fields declared descriptive in their ``F(...)`` need no recipe (and may not have one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, Tuple

import numpy as np

from tests.conftest import REPO

DEFAULT = REPO / "configs/experiments/default.yaml"
COPY = REPO / "configs/experiments/copy-contention.yaml"
FUSED_GEMV = REPO / "configs/experiments/fused-gemv.yaml"
FUSED_A2A = REPO / "configs/experiments/fused-a2a.yaml"
# 2 small tables per GPU, a global batch of 128 over 4 MI210s of 2 CUs (32 samples, one slice, per GPU)
EMB = ("workload.embedding_bag={name: e, global_batch: 128, tables_per_gpu: 2, embedding_dim: 64, rows_per_table: 1000}",
       "system.gpu.num_cus=2", "sweep.cases=[]", "sweep.grid={}")
# a 4096 x 4096 GEMV on 4 MI210s of 2 CUs: 16 tiles, so the occupancy sets the stages and the persistent grid
GEMV = ("workload.gemv={name: v, M: 4096, K: 4096}", "system.gpu.num_cus=2", "sweep.cases=[]", "sweep.grid={}")

# a 512-wide T-NLG OP sub-layer on 2 GPUs of 8 CUs: GEMM, reduce-scatter and all-gather in about a second
TINY = ("workload.sublayer=OP", "workload.tokens=256", "workload.model.hidden_size=512", "workload.tp=2",
        "system.interconnect.num_gpus=2", "system.gpu.num_cus=8")
TINY4 = ("workload.sublayer=OP", "workload.tokens=256", "workload.model.hidden_size=512", "workload.tp=4",
         "system.interconnect.num_gpus=4", "system.gpu.num_cus=8")


@dataclass(frozen=True)
class Context:
    """A small run: ``kind`` 'run' (whole experiment) or 'mem' (memory system alone)."""

    kind: str
    overrides: Tuple[str, ...]
    config: str = str(DEFAULT)


# the TINY sub-layer on 4 CUs with 4096 tokens: 16 GEMM waves, enough to sample
SAMPLE = ("workload.sublayer=OP", "workload.tokens=4096", "workload.model.hidden_size=512", "workload.tp=2",
          "system.interconnect.num_gpus=2", "system.gpu.num_cus=4")
SAMPLED = SAMPLE + ("simulation.sampling.mode=waves", "simulation.sampling.detail_waves=4",
                    "simulation.sampling.window_waves=1")

CONTEXTS: Dict[str, Context] = {
    "tiny": Context("run", TINY),
    # the same GEMM on 2 CUs: 8 WGs, so how many fit on a CU (occupancy) sets the stages
    "occ": Context("run", TINY[:-1] + ("system.gpu.num_cus=2",)),
    "tiny4": Context("run", TINY4),
    "tiny_fc2": Context("run", TINY[1:] + ("workload.sublayer=FC-2",)),
    "tiny_fp32": Context("run", TINY + ("workload.dtype=fp32",)),
    "model": Context("run", ("workload.sublayer=OP", "workload.model.hidden_size=512", "workload.model.seq_len=128",
                             "workload.model.batch=2", "workload.tp=2", "system.interconnect.num_gpus=2",
                             "system.gpu.num_cus=8")),
    "gemm": Context("run", ("workload={gemm: {name: g, M: 1024, N: 1024, K: 512}, direction: ag_gemm, tp: 2}",
                            "system.interconnect.num_gpus=2", "system.gpu.num_cus=8")),
    "trace": Context("run", ("workload.tp=8", "system.gpu.num_cus=8", "workload.tokens=256",
                             "workload.sublayer=OP")),
    "t3": Context("run", TINY4 + ("scheme.kind=t3",)),
    "t3_mca": Context("run", TINY4 + ("scheme.kind=t3_mca",)),
    "nccl": Context("run", TINY4 + ("system.collective.protocol=nccl_simple", "system.collective.cus=4")),
    "concurrent": Context("run", TINY[:-1] + ("system.gpu.num_cus=2", "system.collective.cus=2",
                                              "scheme.kind=concurrent")),
    "chunked": Context("run", TINY + ("scheme.kind=chunked", "scheme.chunks=2")),
    "explicit": Context("run", TINY4 + ("simulation.mode=explicit",)),
    "sample": Context("run", SAMPLE),
    "sampled": Context("run", SAMPLED),
    "switch": Context("run", TINY4 + ("system.interconnect.kind=switch",)),
    # the same sub-layer on 2 CPU sockets of 2 GPUs behind one PCIe switch each: ring steps cross the socket link
    "pcie": Context("run", TINY4 + ("system.interconnect.kind=pcie", "system.interconnect.gpus_per_switch=2")),
    # the same sub-layer on 2 nodes of 2 GPUs: the ring's steps cross the NICs
    "multinode": Context("run", TINY4 + ("system.interconnect.kind=multinode", "system.interconnect.gpus_per_node=2",
                                         "system.interconnect.node_kind=ring")),
    "flux_rs": Context("run", ("workload.sublayer=OP", "workload.tokens=256", "workload.model.hidden_size=1024",
                               "system.gpu.num_cus=2", "workload.tp=4", "system.interconnect.num_gpus=4",
                               "simulation.mode=explicit", "scheme.kind=flux_rs")),
    "flux_ag": Context("run", ("workload.sublayer=FC-1", "workload.tokens=1024", "workload.model.hidden_size=512",
                               "system.gpu.num_cus=8", "workload.direction=ag_gemm", "simulation.mode=explicit",
                               "workload.tp=4", "system.interconnect.num_gpus=4", "scheme.kind=flux_ag")),
    "ficco": Context("run", ("workload.sublayer=FC-1", "workload.tokens=512", "workload.model.hidden_size=512",
                             "system.gpu.num_cus=8", "workload.direction=ag_gemm", "workload.tp=4",
                             "system.interconnect.num_gpus=4", "scheme.kind=ficco")),
    "ficco_char": Context("run", ("workload.sublayer=FC-1", "workload.tokens=512", "workload.model.hidden_size=512",
                                  "system.gpu.num_cus=8", "workload.direction=ag_gemm", "workload.tp=4",
                                  "system.interconnect.num_gpus=4", "scheme.kind=ficco_char", "scheme.char_part=both",
                                  "scheme.chunks=4", "scheme.char_comm_steps=4")),
    "copy": Context("run", ("system.gpu.num_cus=16", "system.collective.cus=16", "system.hbm.channels=16",
                            "system.l2.banks=16", "system.l2.size_MiB=10", "workload.tokens=512", "workload.sublayer=OP",
                            "scheme.copy_size_MiB=2", "scheme.copy_streams=1", "sweep.cases=[]", "sweep.grid={}"),
                    str(COPY)),
    "emb": Context("run", EMB + ("scheme.kind=emb_a2a",), str(FUSED_A2A)),
    # the same layer with 16 tables, sampled by tables from runs of 1, 2 and 4
    "emb_sampled": Context("run", EMB + ("scheme.kind=emb_a2a", "workload.embedding_bag.tables_per_gpu=16",
                                         "simulation.sampling.mode=tables", "simulation.sampling.detail_tables=4"),
                           str(FUSED_A2A)),
    "fused_emb": Context("run", EMB + ("scheme.kind=fused_emb_a2a",), str(FUSED_A2A)),
    "gemv": Context("run", GEMV, str(FUSED_GEMV)),
    "fused_gemv": Context("run", GEMV + ("scheme.kind=fused_gemv_ar",), str(FUSED_GEMV)),
    "fused_gemv_x": Context("run", GEMV + ("scheme.kind=fused_gemv_ar", "simulation.mode=explicit"), str(FUSED_GEMV)),
    "mem": Context("mem", ("system.hbm.channels=4",)),
    # a fixed 1000-cycle starvation limit (the earlier default): under the link-rate default (a few cycles)
    # the limit serves communication so often that the occupancy thresholds rarely decide anything
    "mem_mca": Context("mem", ("system.hbm.channels=4", "system.memory_controller.arbitration.kind=t3_mca",
                               "system.memory_controller.read_queue_entries=8",
                               "system.memory_controller.write_queue_entries=8",
                               "system.memory_controller.arbitration.starvation_limit_cycles=1000")),
    "mem_hbm3": Context("mem", ("system.hbm.channels=4", "system.hbm.standard=HBM3", "system.hbm.timing.tPPD_nCK=1")),
    "mem_hbm3_pb": Context("mem", ("system.hbm.channels=4", "system.hbm.standard=HBM3", "system.hbm.timing.tPPD_nCK=1",
                                   "system.hbm.refresh=per_bank", "system.hbm.timing.tREFI_nCK=1000",
                                   "system.hbm.timing.tRFCpb_nCK=100", "system.hbm.timing.tRREFD_nCK=4")),
}


@dataclass(frozen=True)
class Recipe:
    """Set the field to ``value`` (YAML text) in context ``ctx`` (with ``extra`` overrides added to both runs
    and ``with_`` to the perturbed one only)."""

    ctx: str
    value: str
    extra: Tuple[str, ...] = ()
    with_: Tuple[str, ...] = ()
    rejects: bool = False


def R(ctx: str, value, *extra: str, with_: Tuple[str, ...] = (), rejects: bool = False) -> Recipe:
    return Recipe(ctx, value if isinstance(value, str) else json.dumps(value), tuple(extra), tuple(with_), rejects)


FLUX_PULL = ("scheme.flux_reduce=pull",)
#: a two-kernel library: ``big`` first (first_fit's pick), ``small`` a 64 x 64 tile
TWO_KERNELS = "[{name: big, tile_m: 128, tile_n: 128, tile_k: 32}, {name: small, tile_m: 64, tile_n: 64, tile_k: 32}]"
#: a one-kernel library whose kernel splits K in two (a reduction kernel follows)
SPLIT_KERNEL = "[{name: s2, tile_m: 64, tile_n: 64, tile_k: 32, split_k: 2}]"
HDR = ("system.interconnect.packet_header_B=16",)
H2D = ("scheme.copy_direction=h2d",)
CE = ("system.copy_engine.d2d_path=ce",)
FICCO_COMM = ("scheme.char_part=comm",)
RB = ("system.address_map.kind=row_bank_column_channel",)
STATIC = ("system.memory_controller.arbitration.threshold_mode=static",
          "system.memory_controller.arbitration.occupancy_threshold=2")

RECIPES: Dict[str, Recipe] = {
    # ---- gpu
    "system.gpu.num_cus": R("tiny", 4),
    "system.gpu.clock_GHz": R("tiny", 2.0),
    "system.gpu.max_threads_per_cu": R("occ", 256),
    "system.gpu.lds_l1_size_KiB": R("occ", 48),
    "system.gpu.register_file_size_KiB": R("occ", 128),
    "system.gpu.lds_carveouts": R("occ", [0, 8, 16, 32]),
    "system.gpu.lds_alloc_unit_B": R("occ", 65536),
    "system.gpu.register_alloc_unit_per_wf": R("occ", 8192),
    "system.gpu.max_registers_per_thread": R("tiny", 64, rejects=True),
    "system.gpu.max_wgs_per_cu": R("occ", 1),
    # the wavefront size a system's library kernels are built with (a trace's or the generator's kernel states its own
    # threads per WF; the GPU's rounds the registers per WF)
    "system.gpu.threads_per_wf": R("occ", 64, "system.gemm_library.kernels=[{name: k, tile_m: 128, tile_n: 128, tile_k: 32}]"),
    "system.gpu.fp16_flops_per_cycle": R("tiny", 256),
    "system.gpu.fp32_flops_per_cycle": R("tiny_fp32", 32),
    "system.gpu.kernel_launch_overhead_ns": R("tiny", 100),
    # a GEMM of split-K kernels: its reduction kernel waits the dependent gap (the default: the launch overhead)
    "system.gpu.dependent_launch_gap_ns": R("tiny", 0, "system.gemm_library.kernels=" + SPLIT_KERNEL),
    # a port of 1 B per cycle is far below what the GEMM's WGs load
    "system.gpu.l2_to_cu_B_per_cycle": R("tiny", 1),
    "system.gpu.atomic_add_dtypes": R("flux_rs", ["fp32"], rejects=True),
    # ---- GEMM library: the tiny context's 256 x 512 x 256 GEMM on the Table 1 GPU (whose library is empty)
    "system.gemm_library.kernels": R("tiny", "[{name: k64, tile_m: 64, tile_n: 64, tile_k: 64}]"),
    "system.gemm_library.selection": R("tiny", "measured", "system.gemm_library.kernels=" + TWO_KERNELS,
                                       with_=("system.gemm_library.choices=[[256, 512, 256, small]]",)),
    "system.gemm_library.choices": R("tiny", "[[256, 512, 256, small]]", "system.gemm_library.kernels=" + TWO_KERNELS,
                                     "system.gemm_library.selection=measured",
                                     "system.gemm_library.choices=[[256, 512, 256, big]]"),
    # ---- L2
    "system.l2.size_MiB": R("tiny", 0.25),
    "system.l2.banks": R("tiny", 16),
    "system.l2.clock_GHz": R("tiny", 0.5),
    "system.l2.line_size_B": R("tiny", 256),
    "system.l2.sector_size_B": R("tiny", 64),
    "system.l2.associativity": R("tiny", 2, "system.l2.size_MiB=0.25"),
    "system.l2.hit_latency_cycles": R("tiny", 20),
    "system.l2.bank_bandwidth_B_per_cycle": R("tiny", 16),
    "system.l2.write_allocate": R("tiny", False),
    # an L2 small enough that the GEMM's stores evict dirty lines; a bound of one access stalls each that does
    "system.l2.write_queue_accesses": R("tiny", 1, "system.l2.size_MiB=0.25"),
    "system.l2.index_hash": R("tiny", "linear"),
    # ---- HBM
    "system.hbm.standard": R("mem", "HBM3", with_=("system.hbm.timing.tPPD_nCK=12",)),
    "system.hbm.channels": R("mem", 8),
    "system.hbm.pseudo_channels": R("mem", 2),
    "system.hbm.bank_groups": R("mem", 2),
    "system.hbm.banks_per_group": R("mem", 2),
    "system.hbm.rows": R("mem", 1024),
    "system.hbm.row_size_B": R("mem", 1024),
    "system.hbm.bus_width_B": R("mem", 32),
    "system.hbm.transfers_per_clock": R("mem", 4, "system.hbm.burst_length=4"),
    "system.hbm.clock_GHz": R("mem", 2.0),
    "system.hbm.burst_length": R("mem", 4),
    "system.hbm.timing.tCCD_S_nCK": R("mem", 3),
    "system.hbm.timing.tCCD_L_nCK": R("mem", 4),
    "system.hbm.timing.tCCDWL_nCK": R("mem", 8),
    "system.hbm.timing.tRRD_nCK": R("mem", 8),
    "system.hbm.timing.tRRD_L_nCK": R("mem", 12),
    "system.hbm.timing.tRCD_nCK": R("mem", 20),
    "system.hbm.timing.tRCDWR_nCK": R("mem", 20),
    "system.hbm.timing.tRAS_nCK": R("mem", 40),
    "system.hbm.timing.tRP_nCK": R("mem", 20),
    "system.hbm.timing.tRC_nCK": R("mem", 70),
    "system.hbm.timing.tCL_nCK": R("mem", 20),
    "system.hbm.timing.tWL_nCK": R("mem", 4),
    "system.hbm.timing.tWTR_nCK": R("mem", 8),
    "system.hbm.timing.tWTR_L_nCK": R("mem", 10),
    "system.hbm.timing.tWR_nCK": R("mem", 20),
    "system.hbm.timing.tRTP_nCK": R("mem", 10),
    "system.hbm.timing.tRTW_nCK": R("mem", 24),
    "system.hbm.timing.tFAW_nCK": R("mem", 40),
    "system.hbm.timing.tREFI_nCK": R("mem", 1000),
    "system.hbm.timing.tRFC_nCK": R("mem", 400),
    "system.hbm.timing.tPPD_nCK": R("mem_hbm3", 12),
    "system.hbm.refresh": R("mem_hbm3", "per_bank", with_=("system.hbm.timing.tRFCpb_nCK=100",
                                                          "system.hbm.timing.tRREFD_nCK=4")),
    "system.hbm.timing.tRFCpb_nCK": R("mem_hbm3_pb", 400),
    "system.hbm.timing.tRREFD_nCK": R("mem_hbm3_pb", 40),
    # ---- address map
    "system.address_map.kind": R("mem", "row_bank_column_channel",
                                 with_=("system.address_map.field_order=col_low,col_high,channel,bankgroup,bank,row",)),
    "system.address_map.interleave_granularity_B": R("mem", 512),
    "system.address_map.xor_bank_hash": R("mem", False),
    "system.address_map.channel_hash": R("mem", False),
    "system.address_map.field_order": R("mem", "col_low,col_high,channel,bankgroup,bank,row", *RB),
    # ---- memory controller
    "system.memory_controller.read_queue_entries": R("mem", 8),
    "system.memory_controller.write_queue_entries": R("mem", 8),
    "system.memory_controller.write_high_watermark": R("mem", 0.4),
    "system.memory_controller.write_low_watermark": R("mem", 0.6),
    "system.memory_controller.write_starvation_limit_cycles": R("mem", 50),
    "system.memory_controller.write_drain": R("mem", "drain_when_full"),
    "system.memory_controller.frontend_latency_gpu_cycles": R("mem", 10),
    "system.memory_controller.admissions_per_cycle": R("mem", 2),
    "system.memory_controller.page_policy": R("mem", "closed"),
    "system.memory_controller.arbitration.kind": R("mem", "compute_first"),
    "system.memory_controller.arbitration.occupancy_threshold": R("mem_mca", 2, STATIC[0]),
    "system.memory_controller.arbitration.threshold_mode": R("mem_mca", "static",
                                                              with_=("system.memory_controller.arbitration.occupancy_threshold=2",)),
    "system.memory_controller.arbitration.starvation_limit_cycles": R("mem_mca", 20, *STATIC),
    "system.memory_controller.arbitration.dynamic_occupancy_levels": R("mem_mca", [64.0, 0.5, 0.1]),
    "system.memory_controller.arbitration.dynamic_thresholds": R("mem_mca", [1, 2, 3]),
    # ---- tracker, DMA
    "system.tracker.entries": R("t3", 16),
    "system.tracker.admission": R("t3", "first_come", "system.tracker.entries=16"),
    "system.tracker.ways": R("t3", 2),
    "system.tracker.granularity": R("t3", "wg"),
    "system.tracker.granularity_multiple": R("t3", 2),
    "system.tracker.address_bits": R("t3", 40),
    "system.tracker.counter_bits": R("t3", 8),
    "system.tracker.wg_id_bits": R("t3", 8),
    "system.dma.engines": R("t3", 1),
    "system.dma.issue_latency_ns": R("t3", 1000),
    "system.dma.max_outstanding_requests": R("t3", 8),
    "system.dma.batch_requests": R("t3", 4),
    # ---- copy engines
    "system.copy_engine.engines": R("copy", 1, "scheme.copy_streams=2", *CE),
    "system.copy_engine.max_outstanding_requests": R("copy", 256, *CE),
    "system.copy_engine.request_B": R("copy", 1024, *CE),
    "system.copy_engine.engine_bandwidth_GBps": R("copy", 10, *CE),
    "system.copy_engine.launch_latency_ns": R("copy", 100, *CE),
    "system.copy_engine.l2_allocate": R("copy", True, *CE),
    "system.copy_engine.mc_stream": R("copy", "comm", *CE),
    "system.copy_engine.d2d_path": R("copy", "ce"),
    "system.copy_engine.sm_copy_ctas_per_cu": R("copy", 1),
    "system.copy_engine.sm_copy_threads_per_cta": R("copy", 128),
    "system.copy_engine.sm_copy_registers_per_thread": R("copy", 64),
    "system.copy_engine.sm_copy_inflight_per_cu_B": R("copy", 16384),
    "system.copy_engine.host_link_bandwidth_GBps": R("copy", 10, *H2D),
    "system.copy_engine.host_link_payload_B": R("copy", 64, *H2D),
    "system.copy_engine.host_link_overhead_B": R("copy", 200, *H2D),
    "system.copy_engine.host_link_latency_ns": R("copy", 10000, *H2D),
    # ---- interconnect
    "system.interconnect.kind": R("tiny4", "direct"),
    "system.interconnect.num_gpus": R("tiny", 4, with_=("workload.tp=4",)),
    "system.interconnect.link_bandwidth_GBps": R("tiny", 20),
    "system.interconnect.bidirectional": R("tiny4", False),
    "system.interconnect.link_latency_ns": R("tiny", 2000),
    "system.interconnect.links_per_gpu": R("tiny4", 1, rejects=True),
    "system.interconnect.switch_ports": R("switch", 2, rejects=True),
    "system.interconnect.gpus_per_node": R("multinode", 4),
    "system.interconnect.node_kind": R("multinode", "switch"),
    "system.interconnect.nic_bandwidth_GBps": R("multinode", 5),
    "system.interconnect.nic_latency_ns": R("multinode", 5000),
    "system.interconnect.nic_message_rate_Mps": R("multinode", 0.01),
    "system.interconnect.sockets": R("pcie", 1),
    "system.interconnect.gpus_per_switch": R("pcie", 1),
    "system.interconnect.socket_link_bandwidth_GBps": R("pcie", 1.0),
    "system.interconnect.socket_link_latency_ns": R("pcie", 20000),
    "system.interconnect.packet_size_B": R("tiny", 1024),
    # one packet of buffer over 500 ns links: each packet waits a credit round trip
    "system.interconnect.receive_buffer_B": R("tiny", 4096),
    # the configured bandwidth is the payload rate of full max_payload_B packets: headers cost wire time only
    # for smaller packets, such as CU stores of sm_store_payload_B (NCCL's kernels)
    "system.interconnect.packet_header_B": R("nccl", 16),
    "system.interconnect.max_payload_B": R("nccl", 64, *HDR),
    "system.interconnect.sm_store_payload_B": R("nccl", 64, *HDR),
    # ---- collectives
    "system.collective.algorithm": R("tiny4", "direct"),
    "system.collective.protocol": R("tiny4", "nccl_simple"),
    "system.collective.cus": R("tiny", 2),
    "system.collective.nccl.buffer_B": R("nccl", 65536),
    "system.collective.nccl.steps": R("nccl", 16),
    "system.collective.nccl.chunk_steps": R("nccl", 2),
    "system.collective.nccl.slice_steps": R("nccl", 1),
    "system.collective.cu_bandwidth_GBps": R("tiny", 5),
    "system.collective.latency.software_ns": R("tiny", 100),
    "system.collective.latency.library": R("tiny", "rccl"),
    "system.collective.latency.protocol": R("tiny", "ll", "system.collective.latency.library=rccl"),
    "system.collective.latency.link": R("nccl", "pci", "system.collective.latency.library=nccl"),
    "system.collective.latency.rccl_tuning_model": R("nccl", 5, "system.collective.latency.library=rccl"),
    "system.collective.ring_bidirectional": R("tiny4", False),
    "system.collective.pipeline_slices": R("tiny4", 1),
    "system.collective.inflight_per_cu_B": R("tiny", 1024),
    "system.collective.cta_threads": R("concurrent", 640),
    "system.collective.cta_registers_per_thread": R("concurrent", 255),
    "system.collective.cta_lds_B": R("concurrent", 98304),
    # ---- workload
    "workload.model.hidden_size": R("tiny", 1024),
    "workload.model.seq_len": R("model", 256),
    "workload.model.batch": R("model", 4),
    "workload.model.ffn_multiplier": R("tiny_fc2", 2),
    "workload.gemm.M": R("gemm", 512),
    "workload.gemm.N": R("gemm", 512),
    "workload.gemm.K": R("gemm", 256),
    "workload.gemm.scale_M": R("gemm", 2),
    "workload.gemm.scale_K": R("gemm", 2),
    "simulation.seed": R("emb", 1),
    "workload.embedding_bag.global_batch": R("emb", 256),
    "workload.embedding_bag.tables_per_gpu": R("emb", 3),
    "workload.embedding_bag.embedding_dim": R("emb", 128),
    "workload.embedding_bag.pooling": R("emb", 20),
    "workload.embedding_bag.rows_per_table": R("emb", 100),
    "workload.embedding_bag.mode": R("emb", "mean"),
    "workload.embedding_bag.threads_per_wg": R("emb", 128),
    "workload.embedding_bag.grid_wgs": R("emb", 8),
    "workload.embedding_bag.registers_per_thread": R("fused_emb", 200),
    "workload.embedding_bag.rows_in_flight": R("emb", 4),
    "workload.embedding_bag.library_kernels": R("emb", "one"),
    "scheme.fused_slice_bags": R("fused_emb", 16),
    "workload.gemv.M": R("gemv", 2048),
    "workload.gemv.K": R("gemv", 2048),
    "workload.gemv.rows_per_wg": R("gemv", 128),
    "workload.gemv.threads_per_wg": R("gemv", 512),
    "workload.gemv.cols_per_step": R("gemv", 32),
    "workload.gemv.steps_in_flight": R("gemv", 2),
    "workload.gemv.registers_per_thread": R("gemv", 96),
    "workload.gemv.lds_per_wg_B": R("gemv", 65536),
    "scheme.fused_library_registers_per_thread": R("fused_gemv", 80),
    "scheme.fused_put_api_latency_ns": R("fused_gemv", 1000),
    "scheme.fused_bookkeeping_ns": R("fused_gemv", 1000),
    "scheme.fused_comm_aware": R("fused_gemv_x", False),
    "workload.sublayer": R("tiny", "FC-1"),
    "workload.tp": R("tiny", 4, with_=("system.interconnect.num_gpus=4",)),
    "workload.tokens": R("tiny", 128),
    "workload.dtype": R("tiny", "fp32"),
    "workload.direction": R("tiny", "ag_gemm", with_=("workload.sublayer=FC-1",)),
    "workload.collective": R("tiny", "reduce_scatter"),
    "workload.trace": R("trace", str(REPO / "traces/t-nlg/tp8/IP.jsonl")),
    # ---- schemes
    "scheme.kind": R("tiny", "t3"),
    "scheme.chunks": R("chunked", 4),
    "scheme.compute_streams": R("chunked", 2),
    "scheme.chunk_axis": R("chunked", "N"),
    "scheme.launch_first": R("concurrent", "comm"),
    "scheme.comm_cus": R("concurrent", 1),
    "scheme.copy_streams": R("copy", 2),
    "scheme.copy_size_MiB": R("copy", 1),
    "scheme.copy_direction": R("copy", "h2d"),
    "scheme.flux_reduce": R("flux_rs", "pull"),
    "scheme.flux_swizzle": R("flux_rs", False),
    "scheme.flux_ag_mode": R("flux_ag", "pull"),
    "scheme.flux_ag_copy_streams": R("flux_ag", 1),
    "scheme.flux_comm_tile_rows": R("flux_ag", 128),
    "scheme.flux_pull_ctas": R("flux_rs", 3, *FLUX_PULL),
    "scheme.flux_extra_registers_per_thread": R("flux_rs", 100),
    "scheme.flux_store_box_cols": R("flux_rs", 8),
    "scheme.flux_store_box_issue_ns": R("flux_rs", 400),
    "scheme.flux_tile_fence_ns": R("flux_rs", 0),
    "scheme.flux_tile_flag_ns": R("flux_rs", 0),
    "scheme.flux_signal_poll_ns": R("flux_ag", 0),
    "scheme.flux_signal_poll_interval_ns": R("flux_ag", 2000),
    "scheme.ficco_schedule": R("ficco", "hetero_fused_1d"),
    "scheme.ficco_comm": R("ficco", "rccl"),
    "scheme.char_part": R("ficco_char", "comm"),
    "scheme.char_comm_pattern": R("ficco_char", "p2p", *FICCO_COMM, with_=("scheme.char_comm_steps=1",)),
    "scheme.char_comm_steps": R("ficco_char", 2, *FICCO_COMM),
    "scheme.char_pieces": R("ficco_char", "first"),
    # ---- simulation
    "simulation.mode": R("tiny4", "explicit"),
    "simulation.functional_data": R("t3", True),
    "simulation.watchdog_idle_ns": R("tiny", 1, rejects=True),
    "simulation.sampling.mode": R("sample", "waves", with_=SAMPLED[len(SAMPLE) + 1:] + (
        "simulation.sampling.tolerance_pct=100",)),
    "simulation.sampling.detail_waves": R("sampled", 8, "simulation.sampling.tolerance_pct=100"),
    "simulation.sampling.window_waves": R("sampled", 2, "simulation.sampling.tolerance_pct=100",
                                          "simulation.sampling.detail_waves=8"),
    "simulation.sampling.tolerance_pct": R("sampled", 100),
    "simulation.sampling.max_detail_waves": R("sampled", 4, "simulation.sampling.tolerance_pct=0.001"),
    "simulation.sampling.detail_tables": R("emb_sampled", 8, "simulation.sampling.tolerance_pct=100"),
    "simulation.sampling.max_detail_tables": R("emb_sampled", 4, "simulation.sampling.tolerance_pct=0.001"),
}


# ---------------------------------------------------------------- running a context

def overrides(recipe: Recipe, path: str, perturbed: bool) -> Tuple[str, ...]:
    """The override list of a recipe's base (``perturbed`` False) or perturbed run."""
    ctx = CONTEXTS[recipe.ctx]
    out = ctx.overrides + recipe.extra
    if perturbed:
        out += (f"{path}={recipe.value}",) + recipe.with_
    return out


def run_context(ctx_name: str, ovr: Tuple[str, ...]) -> str:
    """Simulate context ``ctx_name`` with overrides ``ovr``; return its statistics as canonical JSON."""
    from t3sim.config import load_experiment
    from t3sim.exec.dispatch import simulate

    ctx = CONTEXTS[ctx_name]
    exp = load_experiment(ctx.config, list(ovr))
    if ctx.kind == "mem":
        return _memory_stats(exp.system)
    return json.dumps(simulate(exp).stats.to_dict(), sort_keys=True, default=str)


def _memory_stats(system) -> str:
    """A mixed trace through the memory system alone: reads, writes and op-and-stores of both streams, random
    and sequential, to few lines (hazards) and anywhere, with the producer kernel's events in between."""
    from t3sim.memory import MemorySystem

    ms = MemorySystem(system)
    rng = np.random.default_rng(5)
    cap = ms.amap.capacity_B // 64
    events = {6: ms.begin_isolated_stage, 12: ms.end_isolated_stage, 30: ms.kernel_boundary}
    tick = 0
    for i in range(40):
        tick += int(rng.integers(0, 300_000))
        n = int(rng.integers(16, 160))
        if i % 4 == 0:
            addrs = rng.integers(0, cap, n) * 64
        elif i % 4 == 1:
            addrs = int(rng.integers(0, cap // 2)) * 64 + rng.integers(0, 64, n) * 64
        else:
            addrs = int(rng.integers(0, cap // 2)) * 64 + np.arange(n) * 64
        ms.advance(tick)
        if i in events:
            events[i]()
        ms.submit(tick, addrs, ("read", "write", "update", "read")[i % 4], ("compute", "comm")[(i // 3) % 2], "gemm")
    ms.run_until_idle()
    d = ms.stats("m").to_dict()
    d["_r_done"] = ms.r_done[: ms.n].tolist()
    return json.dumps(d, sort_keys=True, default=str)
