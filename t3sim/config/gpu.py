"""GPU compute and L2 configuration (paper Table 1, "Per-GPU Config").

The Table 1 GPU is Accel-Sim's validated Volta (QV100) model with a 16 MB L2:
80 CUs at 1.4 GHz, 2K threads, 128 KB unified LDS+L1 and 256 KB of registers
per CU. Values Table 1 does not give come from the V100 whitepaper or are
labelled as assumptions.
"""

from __future__ import annotations

from typing import List, Literal, Optional

from pydantic import model_validator

from t3sim.config.base import F, Model

#: the clocks a simulated clock domain can take (GHz): t3sim.sim.clock counts a frequency in whole kHz (so at least
#: 1 MHz, where rounding to a kHz moves it by under 0.05 %) and time in 1 ps ticks (so a cycle of at least 2 ps)
CLOCK_GHZ = {"ge": 0.001, "le": 500.0}

V100_WP = "NVIDIA Tesla V100 GPU Architecture whitepaper (2017)"


class GPUConfig(Model):
    """One GPU's compute resources."""

    num_cus: int = F(80, unit="count", desc="compute units (CUs/SMs) per GPU", source="paper Table 1", gt=0)
    clock_GHz: float = F(1.4, unit="GHz", desc="CU clock", source="paper Table 1", **CLOCK_GHZ)
    max_threads_per_cu: int = F(2048, unit="count", desc="resident threads per CU", source="paper Table 1 (2K threads)", gt=0)
    lds_l1_size_KiB: int = F(128, unit="KiB", desc="unified LDS + L1 cache capacity per CU", source="paper Table 1", gt=0)
    l1_write_allocate: bool = F(False, unit="bool", desc="L1 allocates lines on writes", source="paper Table 1 (no write-allocate)",
                                descriptive="no L1 cache is simulated (CU loads and stores go to the L2, t3sim/compute/memhier.py; the L1 share of the LDS+L1 array only sets the LDS carve-out); records the paper's Table 1 L1")
    register_file_size_KiB: int = F(256, unit="KiB", desc="vector register file per CU", source="paper Table 1", gt=0)
    lds_carveouts: List[int] = F(
        [0, 8, 16, 32, 64, 96], unit="list", desc="allowed LDS carve-outs in KiB, ascending; those above lds_l1_size_KiB are unusable, the largest usable is the LDS limit, the rest is L1",
        source="CUDA C++ Programming Guide, compute capability 7.0 (cudaFuncAttributePreferredSharedMemoryCarveout: 0, 8, 16, 32, 64, 96 KB)")
    lds_alloc_unit_B: int = F(256, unit="B", desc="LDS allocation granularity per WG", source="CUDA Occupancy Calculator, sm_70 shared memory allocation unit 256 B", gt=0)
    register_alloc_unit_per_wf: int = F(
        256, unit="count", desc="registers are allocated to a WF in multiples of this many 32-bit registers",
        source="CUDA Occupancy Calculator, sm_70 register allocation unit size 256 (per warp)", gt=0)
    max_registers_per_thread: int = F(255, unit="count", desc="architectural limit on 32-bit registers per thread", source=f"{V100_WP}: 255 registers per thread", gt=0)
    max_wgs_per_cu: int = F(32, unit="count", desc="hardware cap on resident workgroups per CU", source=f"{V100_WP}: 32 thread blocks per SM", gt=0)
    threads_per_wf: int = F(32, unit="count", desc="threads per wavefront (warp)", source=f"{V100_WP}: 32-thread warps", gt=0)
    fp16_flops_per_cycle: int = F(
        1024, unit="FLOP/cycle", desc="peak fp16 tensor FLOPs per CU per cycle (MAC throughput x 2)",
        source=f"{V100_WP}: 8 tensor cores/SM x 64 FMA/clock", gt=0)
    fp32_flops_per_cycle: int = F(128, unit="FLOP/cycle", desc="peak fp32 FLOPs per CU per cycle", source=f"{V100_WP}: 64 FP32 lanes/SM x FMA", gt=0)
    l1_hit_latency_cycles: int = F(28, unit="cycles", desc="L1 hit latency in CU cycles", source="Jia et al., Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking (2018)", ge=0,
                                   descriptive="no L1 cache is simulated (CU loads and stores go to the L2, t3sim/compute/memhier.py); records the measured Volta L1 latency")
    kernel_launch_overhead_ns: float = F(
        3000.0, unit="ns", desc="time from kernel launch to first WG dispatch",
        source="assumption: typical measured launch latency of a few microseconds on discrete GPUs", ge=0)
    l2_to_cu_B_per_cycle: int = F(
        0, unit="B/cycle",
        desc="bytes of L2 read data one CU can receive per CU cycle (its port on the network from the L2 slices): a "
             "GEMM WG's load batch is back no sooner than its CU's port has passed the batch's bytes after the "
             "batches issued before it (t3sim.compute.memhier); 0: no limit",
        source="assumption: no limit (the H800 preset sets a value measured on an H100)", ge=0)
    dependent_launch_gap_ns: Optional[float] = F(
        None, unit="ns",
        desc="time from a kernel's end to the first WG of the kernel launched behind it as its programmatic dependent "
             "(CUDA programmatic dependent launch: cuBLAS's split-K reduction behind its split kernel); unset: "
             "kernel_launch_overhead_ns, as any stream's next kernel",
        source="assumption: a dependent kernel launches as any other (the H200 and H800 presets set a value measured on an H100; programmatic dependent launch needs compute capability 9.0)",
        ge=0)
    atomic_add_dtypes: List[Literal["fp16", "bf16", "fp32", "fp8"]] = F(
        ["fp16", "fp32"], unit="list",
        desc="element types a CU can reduce into (local or peer) memory with one atomic/red add instruction (FLUX's fused "
             "atomic reduce-scatter, scheme.flux_reduce=atomic, runs only for these)",
        source="CUDA C++ Programming Guide, atomicAdd(): __half on compute capability 7.x and higher, __nv_bfloat16 only "
               "8.x and higher (the Table 1 GPU is a V100, 7.0)")

    @property
    def dependent_launch_gap(self) -> float:
        """ns from a kernel's end to its programmatic dependent's first WG (``dependent_launch_gap_ns``, or
        ``kernel_launch_overhead_ns`` where unset)."""
        d = self.dependent_launch_gap_ns
        return self.kernel_launch_overhead_ns if d is None else d

    @model_validator(mode="after")
    def _carveouts(self) -> "GPUConfig":
        c = self.lds_carveouts
        if not c or any(b <= a for a, b in zip(c, c[1:])) or c[0] < 0:
            raise ValueError(f"lds_carveouts must be non-empty, non-negative and strictly ascending, got {c}")
        return self


class L2Config(Model):
    """Shared, banked last-level cache (paper Table 1: 16 MB, 64 banks, 1.4 GHz)."""

    size_MiB: float = F(16.0, unit="MiB", desc="total L2 capacity", source="paper Table 1", gt=0)
    banks: int = F(64, unit="count", desc="independent L2 banks (slices)", source="paper Table 1", gt=0)
    clock_GHz: float = F(1.4, unit="GHz", desc="L2 clock", source="paper Table 1", **CLOCK_GHZ)
    line_size_B: int = F(128, unit="B", desc="cache line size", source=f"{V100_WP}: 128 B L2 lines", gt=0)
    sector_size_B: int = F(32, unit="B", desc="sector (fill/transfer) granularity within a line", source=f"{V100_WP}: 32 B sectors", gt=0)
    associativity: int = F(16, unit="count", desc="ways per set", source="assumption: Table 1 gives size and banks only; 16-way gives a power-of-two set count per bank", gt=0)
    hit_latency_cycles: int = F(193, unit="cycles", desc="L2 hit latency in L2 cycles, as seen by a CU", source="Jia et al. 2018 (V100 L2 hit latency ~193 cycles)", ge=0)
    bank_bandwidth_B_per_cycle: int = F(64, unit="B/cycle", desc="bytes each bank can return per L2 cycle", source="assumption: 64 B/clk/slice as in Volta-class L2s (Accel-Sim QV100 uses 32 B sectors at 2/clk)", gt=0)
    write_allocate: bool = F(True, unit="bool", desc="allocate lines on write misses (write-back L2)", source="Accel-Sim QV100 L2 (write-back, allocate-on-write)")
    write_queue_accesses: int = F(
        0, unit="count",
        desc="compute-stream DRAM write accesses (hbm.access_size_B each: write-backs of dirty lines, uncached stores "
             "and updates) the L2 keeps outstanding, all slices together: an L2 access that adds some while more are "
             "outstanding completes only once they have drained to this bound, so its requester stalls (a storing WG "
             "before it retires, a copy engine's or kernel's credit, a load's data); 0: unbounded (writes no one "
             "awaits are posted and never stall anyone)",
        source="assumption: no vendor document gives the L2's write buffering; 0 keeps the writes unbounded, the model "
               "before this bound. Accel-Sim's QV100 configuration queues 64 requests from each of its 64 L2 "
               "sub-partitions to DRAM (-gpgpu_dram_partition_queues 64:64:64:64, reads and writes together)", ge=0)
    index_hash: Literal["xor", "skew", "linear"] = F(
        "xor", unit="enum",
        desc="line -> bank and set index function (t3sim/cache/common.py): xor-folded line bits (xor: power-of-two "
             "banks and sets only), plain modulo skewed by the xor-fold of the bits above it (skew: any counts; "
             "bank = (line + fold(line // banks)) mod banks, likewise the set), or plain modulo (linear)",
        source="assumption: xor-based hashed indexing as in Accel-Sim's L2 (IPOLY-style set/partition hashing) so "
               "power-of-two strides spread over banks; skew carries the same higher-bit mixing to slice counts that "
               "are not powers of two, whose hash no vendor document gives (GPGPU-Sim hashing.cc's bitwise hash XORs "
               "the higher bits into the index; adding them modulo the count keeps each aligned block of banks x sets "
               "lines one line per (bank, set))")
    replacement: Literal["lru"] = F("lru", unit="enum", desc="replacement policy", source="t3sim model choice (LRU)",
                                    descriptive="LRU is the only policy implemented: the field names the model's choice and accepts no other")

    @model_validator(mode="after")
    def _geometry(self) -> "L2Config":
        """The cache must split into whole sets: size = banks x sets per bank x ways x line (t3sim/cache/common.py)."""
        line, sector = self.line_size_B, self.sector_size_B
        if not (is_pow2(line) and is_pow2(sector) and line % sector == 0 and line // sector <= 8):
            raise ValueError(f"l2.line_size_B={line} / sector_size_B={sector}: both must be powers of two, "
                             "the sector dividing the line, with at most 8 sectors per line")
        size_B = self.size_MiB * 2**20
        per_set_row = self.banks * self.associativity * line
        if size_B != int(size_B) or int(size_B) % per_set_row or int(size_B) < per_set_row:
            raise ValueError(f"L2 of {size_B:.0f} B (size_MiB={self.size_MiB:g}) does not split into banks={self.banks} "
                             f"x associativity={self.associativity} ways of {line} B lines; the size must be a whole "
                             f"multiple of {per_set_row} B (banks x ways x line)")
        sets = int(size_B) // per_set_row
        if self.index_hash == "xor" and not (is_pow2(self.banks) and is_pow2(sets)):
            raise ValueError(f"l2.index_hash='xor' needs power-of-two banks ({self.banks}) and sets per bank ({sets}); "
                             "use index_hash: skew (or linear)")
        return self


def is_pow2(x: int) -> bool:
    """Whether ``x`` is a positive power of two."""
    return x > 0 and x & (x - 1) == 0
