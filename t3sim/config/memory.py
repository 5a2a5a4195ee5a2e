"""HBM device, address map and memory-controller configuration.

Defaults are the paper's Table 1 HBM2 (1 TB/s at 1 GHz, CCDWL=4, 4 bank
groups, "rest [11]"). Reference [11]'s timings at
1 GHz: nbk=16, CCD=1, RRD=4, RCD=14, RAS=33, RP=14, RC=47, CL=14, WL=2,
CDLR=3, WR=12, nbkgrp=4, CCDL=2, RTPL=4 (these are Accel-Sim's QV100 HBM
``dram_timing_opt``). Timing parameters are in HBM command-clock cycles (nCK).
"""

from __future__ import annotations

from typing import List, Literal, Optional

from pydantic import field_validator, model_validator

from t3sim import registry
from t3sim.config.base import F, Model, check_kind
from t3sim.config.gpu import CLOCK_GHZ, is_pow2

#: the digits of a physical address (t3sim/memory/address_map.py FIELDS)
ADDRESS_FIELDS = ("col_low", "channel", "col_high", "bankgroup", "bank", "row")

REF11 = "paper Table 1 via ref. [11] (Accel-Sim QV100 HBM2 dram_timing_opt)"

#: the paper's simulator: Accel-Sim's Volta (QV100) HBM2 configuration, gpgpu-sim_distribution
#: configs/tested-cfgs/SM7_QV100/gpgpusim.config (the paper's Table 1 is "the latest GPU architecture Accel-Sim
#: completely supports", Sec. 5.1.1)
QV100 = "Accel-Sim QV100 config (gpgpu-sim configs/tested-cfgs/SM7_QV100/gpgpusim.config)"

#: address_map kinds that read address_map.field_order (t3sim/memory/address_map.py)
ORDERED_MAPS = ("row_bank_column_channel",)


#: Ramulator 2's JESD238-derived HBM3 table and 6400 Mbps preset (python/ramulator/dram/hbm3.py)
R2_HBM3 = "Ramulator 2 HBM3 table (python/ramulator/dram/hbm3.py, from JESD238)"


class HBMTimingConfig(Model):
    """JEDEC timing constraints, in HBM clock cycles (nCK). Which of them apply is the standard's
    choice (``hbm.standard``, t3sim/memory/standards): a parameter its rule set does not read must be
    left unset (null), and optional ones, unset, equal the single value ref. [11] gives."""

    tCCD_S_nCK: int = F(1, unit="nCK", desc="column-to-column delay, different bank group", source=f"{REF11}: CCD=1", ge=1)
    tCCD_L_nCK: int = F(2, unit="nCK", desc="column-to-column delay, same bank group", source=f"{REF11}: CCDL=2", ge=1)
    tCCDWL_nCK: int = F(4, unit="nCK", desc="column delay after a near-memory op-and-store to the same bank group (2 x tCCD_L)", source="paper Table 1 and Sec. 5.1.1: CCDWL=4", ge=1)
    tRRD_nCK: int = F(4, unit="nCK", desc="ACT-to-ACT delay, different banks (tRRD_S: different bank groups when tRRD_L_nCK is set)", source=f"{REF11}: RRD=4", ge=1)
    tRRD_L_nCK: Optional[int] = F(
        None, unit="nCK", desc="ACT-to-ACT delay, same bank group (null: equal to tRRD_nCK, one value as in ref. [11])",
        source=f"JESD235/JESD238 via Ramulator 2's HBM2 and HBM3 tables (nRRDL); null for Table 1: {REF11} gives one RRD", ge=1)
    tRCD_nCK: int = F(14, unit="nCK", desc="ACT-to-column delay (reads; writes too unless tRCDWR_nCK is set)", source=f"{REF11}: RCD=14", ge=1)
    tRCDWR_nCK: Optional[int] = F(
        None, unit="nCK", desc="ACT-to-write delay (null: equal to tRCD_nCK)",
        source=f"JESD235/JESD238 via Ramulator 2's HBM2 and HBM3 tables (nRCDWR); null for Table 1: {REF11} gives one RCD", ge=1)
    tRAS_nCK: int = F(33, unit="nCK", desc="ACT-to-PRE minimum", source=f"{REF11}: RAS=33", ge=1)
    tRP_nCK: int = F(14, unit="nCK", desc="PRE-to-ACT delay", source=f"{REF11}: RP=14", ge=1)
    tRC_nCK: int = F(47, unit="nCK", desc="ACT-to-ACT delay, same bank", source=f"{REF11}: RC=47", ge=1)
    tCL_nCK: int = F(14, unit="nCK", desc="read column command to first data", source=f"{REF11}: CL=14", ge=1)
    tWL_nCK: int = F(2, unit="nCK", desc="write column command to first data", source=f"{REF11}: WL=2", ge=0)
    tWTR_nCK: int = F(3, unit="nCK", desc="end of write data to read command (write-to-read turnaround; CDLR in [11]; tWTR_S when tWTR_L_nCK is set)", source=f"{REF11}: CDLR=3", ge=0)
    tWTR_L_nCK: Optional[int] = F(
        None, unit="nCK", desc="end of write data to a read of the same bank group (null: equal to tWTR_nCK)",
        source=f"JESD235/JESD238 via Ramulator 2's HBM2 and HBM3 tables (nWTRL); null for Table 1: {REF11} gives one CDLR", ge=0)
    tWR_nCK: int = F(12, unit="nCK", desc="end of write data to PRE (write recovery)", source=f"{REF11}: WR=12", ge=0)
    tRTP_nCK: int = F(4, unit="nCK", desc="read to PRE delay (RTPL in [11])", source=f"{REF11}: RTPL=4", ge=1)
    tRTW_nCK: int = F(
        15, unit="nCK", desc="read command to write command on one channel (bus turnaround)",
        source="derived as GPGPU-Sim/Accel-Sim do (gpu-sim.h: tRTW = CL + BL/data_command_freq_ratio + 2 - WL): 14 + 1 + 2 - 2 = 15 (tBL = 1 cycle of BL2 on a DDR bus; no value given in [11])", ge=0)
    tFAW_nCK: int = F(16, unit="nCK", desc="four-activate window", source="JESD235 HBM2 / Ramulator HBM_1Gbps: nFAW=16", ge=0)
    tREFI_nCK: int = F(3900, unit="nCK", desc="average refresh interval (0 disables refresh)", source="JESD235 HBM2: tREFI = 3.9 us at 1 GHz", ge=0)
    tRFC_nCK: int = F(260, unit="nCK", desc="all-bank refresh cycle time (hbm.refresh all_bank; per_bank uses tRFCpb_nCK)", source="JESD235 HBM2 4 Gb die / Ramulator HBM: nRFC=260 at 1 GHz", ge=0)
    tRFCpb_nCK: Optional[int] = F(
        None, unit="nCK", desc="per-bank refresh cycle time: a REFpb's bank takes no ACT for this long (hbm.refresh per_bank only: required there, must be null otherwise)",
        source=f"{R2_HBM3}: nRFCpb = 200 ns (per-pseudo-channel density up to 8 Gb), 250 ns above", ge=1)
    tRREFD_nCK: Optional[int] = F(
        None, unit="nCK", desc="REFpb to REFpb or ACT of another bank of the (pseudo-)channel (hbm.refresh per_bank only: required there, must be null otherwise)",
        source=f"{R2_HBM3}: nRREFD = max(3 CK, 8 ns)", ge=1)
    tPPD_nCK: Optional[int] = F(
        None, unit="nCK", desc="PRE-to-PRE delay, any two banks of a (pseudo-)channel: HBM3/HBM3E rule sets only (required there, must be null otherwise)",
        source=f"{R2_HBM3}: tPPD is new in HBM3; its 6400 Mbps preset has nPPD = 2 CK of 0.625 ns = 1.25 ns", ge=1)


class HBMConfig(Model):
    """HBM stack organisation (paper Table 1: HBM2, 1 TB/s, 1 GHz, 4 bank groups)."""

    standard: str = F(
        "HBM2", unit="name",
        desc="DRAM standard: selects the registered timing rule set (t3sim/memory/standards: HBM2 and HBM2E = JESD235 rules; HBM3 and HBM3E = JESD238 rules, which add the PRE-to-PRE delay tPPD); what each does not model is listed in its file",
        source="paper Table 1 (HBM2); rule sets from JESD235/JESD238 as Ramulator 2 tabulates them")
    channels: int = F(32, unit="count", desc="independent channels (memory controllers) per GPU", source="paper Table 1: 32 channels x 32 B/clk x 1 GHz = 1 TB/s", gt=0)
    pseudo_channels: int = F(1, unit="count", desc="pseudo-channels per channel (1 = legacy mode)", source="assumption: legacy mode, as Accel-Sim models HBM2", ge=1)
    bank_groups: int = F(4, unit="count", desc="bank groups per (pseudo-)channel", source=f"{REF11}: nbkgrp=4; paper Table 1", gt=0)
    banks_per_group: int = F(4, unit="count", desc="banks per bank group", source=f"{REF11}: nbk=16 over 4 groups", gt=0)
    rows: int = F(16384, unit="count", desc="rows per bank", source="JESD235 HBM2 4 Gb die (16K rows per bank)", gt=0)
    row_size_B: int = F(2048, unit="B", desc="row (page) size per bank", source="JESD235 HBM2 legacy mode: 2 KB page", gt=0)
    bus_width_B: int = F(16, unit="B", desc="data bus width per (pseudo-)channel", source=f"{QV100}: -gpgpu_dram_buswidth 16 (128-bit HBM2 legacy-mode channel, JESD235)", gt=0)
    transfers_per_clock: int = F(2, unit="count", desc="data transfers per clock (2 = double data rate)", source="JESD235 HBM2 (DDR)", gt=0)
    clock_GHz: float = F(1.0, unit="GHz", desc="HBM command clock", source="paper Table 1", **CLOCK_GHZ)
    burst_length: int = F(
        2, unit="count", desc="data beats per column command: one DRAM access moves bus_width_B x burst_length bytes (hbm.access_size_B) in burst_length / transfers_per_clock clocks (tBL)",
        source=f"{QV100}: -gpgpu_dram_burst_length 2 with -dram_data_command_freq_ratio 2 (DDR): dram_atom_size = BL x busW = 32 B per column command, one command-clock cycle of data (gpu-sim.h); JESD235 legacy mode allows BL2 or BL4. Assumption: the paper's Table 1 keeps Accel-Sim's BL2 (it does not state the burst length)", gt=0)
    timing: HBMTimingConfig = F(HBMTimingConfig, unit="mapping", desc="timing constraints by JEDEC name", source=REF11)
    refresh: Literal["all_bank", "per_bank"] = F(
        "all_bank", unit="name",
        desc="refresh mode. all_bank: every tREFI each (pseudo-)channel closes all its banks and refreshes them for tRFC (REFab), serving nothing meanwhile. per_bank: every tREFI / banks it closes and refreshes one bank, round robin, for tRFCpb (REFpb), the other banks serving requests meanwhile (HBM3/HBM3E rule sets)",
        source="JESD235/JESD238 define both; Ramulator 2's HBM3 table has the REFpb rules (t3sim/memory/standards/base.py)")

    @field_validator("standard")
    @classmethod
    def _standard(cls, v: str) -> str:
        return check_kind("dram_standard", v)

    @model_validator(mode="after")
    def _rule_set_timing(self) -> "HBMConfig":
        """Exactly the timing parameters the standard's rule set reads are set (none accepted and ignored)."""
        registry.get("dram_standard", self.standard, "hbm.standard").check(self)
        return self

    @model_validator(mode="after")
    def _decodable(self) -> "HBMConfig":
        """Geometry the address map can decode and the timing model can run (t3sim/memory/address_map.py, timing.py)."""
        for name in ("bank_groups", "banks_per_group"):
            v = getattr(self, name)
            if not is_pow2(v):
                raise ValueError(f"hbm.{name}={v} is not a power of two: a DRAM command addresses bank groups and banks "
                                 "with binary BG/BA fields (JEDEC), so the address map cannot decode it; allowed: 1, 2, 4, 8, 16")
        if self.burst_length % self.transfers_per_clock:
            raise ValueError(f"hbm.burst_length={self.burst_length} is not a multiple of transfers_per_clock="
                             f"{self.transfers_per_clock}: a burst must last whole clock cycles")
        nbanks = self.bank_groups * self.banks_per_group
        if self.refresh == "per_bank" and 0 < self.timing.tREFI_nCK < nbanks:
            raise ValueError(f"hbm.timing.tREFI_nCK={self.timing.tREFI_nCK} with hbm.refresh=per_bank: each of the "
                             f"{nbanks} banks is refreshed every tREFI, so tREFI must be 0 (no refresh) or >= {nbanks}")
        if self.row_size_B % self.access_size_B:
            raise ValueError(f"hbm.row_size_B={self.row_size_B} is not a multiple of the {self.access_size_B} B column "
                             "access (bus_width_B x burst_length): a row must hold whole columns")
        return self

    @property
    def peak_bandwidth_GBps(self) -> float:
        """Peak data bandwidth of all channels (GB/s, 1e9 B/s)."""
        return self.channels * self.pseudo_channels * self.bus_width_B * self.transfers_per_clock * self.clock_GHz

    @property
    def access_size_B(self) -> int:
        """Bytes moved by one column command."""
        return self.bus_width_B * self.burst_length


class AddressMapConfig(Model):
    """Physical address -> (channel, bank group, bank, row, column)."""

    kind: str = F("channel_interleave", unit="name", desc="registered address map (see `t3sim params`)", source="t3sim model choice (t3sim/memory/README.md)")
    interleave_granularity_B: int = F(256, unit="B", desc="contiguous bytes mapped to one channel before moving to the next", source="assumption: 256 B channel interleave, common in GPU memory systems", gt=0)
    xor_bank_hash: bool = F(True, unit="bool", desc="XOR row bits into bank/bank-group bits to spread strided streams", source="t3sim model choice (t3sim/memory/README.md)")
    channel_hash: bool = F(
        True, unit="bool",
        desc="fold the address bits above the channel digit into the channel index, so strides that are multiples of channels x granularity (e.g. a column-major tile's columns) spread over channels",
        source="GPUs hash memory-partition selection (Accel-Sim's validated Volta model uses IPOLY partition hashing: paper ref. [31], Khairy et al. 2018)")
    field_order: str = F(
        "col_low,channel,col_high,bankgroup,bank,row", unit="text",
        desc="row_bank_column_channel map: address digits, least significant first (col_low = granularity-sized column chunk)",
        source="t3sim model choice (configurable interleaving); default equals channel_interleave")

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        return check_kind("address_map", v)

    @field_validator("field_order")
    @classmethod
    def _order(cls, v: str) -> str:
        names = [f.strip() for f in v.split(",")]
        if sorted(names) != sorted(ADDRESS_FIELDS):
            raise ValueError(f"field_order {v!r} must name each of {', '.join(ADDRESS_FIELDS)} exactly once")
        return v

    @model_validator(mode="after")
    def _order_applies(self) -> "AddressMapConfig":
        """Only the ordered map reads field_order: another order with another kind would be ignored."""
        if self.kind not in ORDERED_MAPS and [f.strip() for f in self.field_order.split(",")] != list(ADDRESS_FIELDS):
            raise ValueError(f"address_map.field_order={self.field_order!r} with kind={self.kind!r}, which does not read "
                             f"it; allowed: a field order only with kind {' or '.join(ORDERED_MAPS)}")
        return self


class ArbitrationConfig(Model):
    """Compute vs. communication stream arbitration at the memory controller (paper Sec. 4.5)."""

    kind: str = F("round_robin", unit="name", desc="registered arbitration policy (round_robin, compute_first, t3_mca, ...; t3sim/memory/policies)", source="paper Sec. 4.5, 6.1")
    occupancy_threshold: Optional[int] = F(
        None, unit="count", desc="t3_mca: issue communication only while queue occupancy is below this (None = unlimited)",
        source="paper Sec. 6.1.3 (thresholds 5, 10, 30 or no limit)", ge=1)
    threshold_mode: Literal["static", "dynamic"] = F(
        "dynamic", unit="enum", desc="t3_mca: static threshold, or set from the occupancy observed during the producer's first, isolated stage",
        source="paper Sec. 4.5")
    starvation_limit_cycles: Optional[int] = F(
        None, unit="cycles",
        desc="t3_mca: serve communication once it has waited this many memory cycles since its arrival or the last "
             "communication admission; None = the link rate: channels x 64 B x HBM clock / (the GPU's link bandwidth "
             "in + out), the longest limit at which communication, when compute requests are always queued, is still "
             "served as fast as the links move it (Table 1: 32 x 32 B accesses x 1 GHz / 300 GB/s -> 3 cycles; t3sim/memory/policies/t3_mca.py)",
        source="paper Sec. 4.5 names the limit (\"to ensure it is not starved\") but not its value; derived from Table 1's HBM "
               "and ring bandwidths (the formula in the description)", gt=0)
    dynamic_occupancy_levels: List[float] = F(
        [32.0, 8.0, 1.0], unit="list",
        desc="t3_mca dynamic: mean queue occupancy (entries) observed in the isolated stage at or above level i selects dynamic_thresholds[i]; below all levels = unlimited",
        source="assumption: paper Sec. 4.5/6.1.3 give the direction (memory-intensive -> smaller threshold) and the values 5, 10, 30, no limit, not the mapping")
    dynamic_thresholds: List[int] = F(
        [5, 10, 30], unit="list", desc="t3_mca dynamic: thresholds chosen by dynamic_occupancy_levels",
        source="paper Sec. 6.1.3 (thresholds 5, 10, 30 or no limit)")

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        return check_kind("arbitration", v)

    @model_validator(mode="after")
    def _mode_options(self) -> "ArbitrationConfig":
        """The static threshold and the dynamic mapping are read in their own mode only (t3_mca)."""
        if self.threshold_mode == "dynamic" and self.occupancy_threshold is not None:
            raise ValueError(f"occupancy_threshold={self.occupancy_threshold} with threshold_mode=dynamic, which sets the "
                             "threshold from dynamic_occupancy_levels/dynamic_thresholds; allowed: occupancy_threshold "
                             "only with threshold_mode=static")
        given = self.given(("dynamic_occupancy_levels", "dynamic_thresholds"))
        if self.threshold_mode == "static" and given:
            raise ValueError(f"{' and '.join(given)} with threshold_mode=static, which uses occupancy_threshold; allowed: "
                             "the dynamic mapping only with threshold_mode=dynamic")
        return self

    @model_validator(mode="after")
    def _levels(self) -> "ArbitrationConfig":
        if len(self.dynamic_occupancy_levels) != len(self.dynamic_thresholds):
            raise ValueError("dynamic_occupancy_levels and dynamic_thresholds must have the same length")
        if list(self.dynamic_occupancy_levels) != sorted(self.dynamic_occupancy_levels, reverse=True):
            raise ValueError("dynamic_occupancy_levels must be in decreasing order")
        if any(t < 1 for t in self.dynamic_thresholds):
            raise ValueError("dynamic_thresholds must be >= 1")
        return self


class MemoryControllerConfig(Model):
    """Per-channel memory controller."""

    read_queue_entries: int = F(64, unit="count", desc="read queue capacity per channel", source="Accel-Sim QV100: gpgpu_frfcfs_dram_sched_queue_size=64", gt=0)
    write_queue_entries: int = F(64, unit="count", desc="write queue capacity per channel", source="assumption: equal to the read queue", gt=0)
    write_drain: str = F(
        "watermark", unit="name",
        desc="registered write-drain policy (t3sim/memory/write_drain): when the controller serves its write queue instead of its read queue. watermark = drain from write_high_watermark down to write_low_watermark, or while no read waits; drain_when_full = drain once the write queue is full (or holds more than 8 writes and no read waits), then exactly the writes queued when the drain began. Every policy also drains once the oldest write has waited write_starvation_limit_cycles",
        source="watermark: Ramulator 2 ControllerBase::set_write_mode (src/ramulator/controller/controller_base.cpp); drain_when_full: DRAMsim3 Controller::ScheduleTransaction (src/controller.cc)")
    write_high_watermark: float = F(
        0.75, unit="ratio", desc="write_drain=watermark: start draining writes when the write queue is this full",
        source="assumption: between Ramulator 2's default 0.8 (wr_high_watermark) and Accel-Sim's HBM write queues (gpgpu-sim -dram_write_queue_size: 56 of 64 in its manual's HBM example = 0.875, 108 of 128 in the TITANV config = 0.84); the QV100 config leaves the separate write queue disabled", gt=0, le=1)
    write_low_watermark: float = F(
        0.25, unit="ratio", desc="write_drain=watermark: stop draining writes at this fill level (while reads wait)",
        source="assumption: between Ramulator 2's default 0.2 (wr_low_watermark) and Accel-Sim's HBM write queues (32 of 64 = 0.5 in gpgpu-sim's manual example, 32 of 128 = 0.25 in the TITANV config)", ge=0, lt=1)
    write_starvation_limit_cycles: int = F(
        2000, unit="cycles", desc="start draining writes once the oldest queued write has waited this long (bounds write latency when reads never stop; every write-drain policy)",
        source="assumption: liveness bound; Ramulator 2 and DRAMsim3 drain only at their thresholds or when reads run out", gt=0)
    admissions_per_cycle: int = F(
        1, unit="count", desc="requests moved from the pending FIFOs into the controller queues per memory cycle",
        source=f"{QV100} model: memory_partition_unit::dram_cycle moves one request per DRAM cycle towards the DRAM (l2cache.cc: 'the DRAM should only accept one request per cycle'); the column-command rate of 32 B accesses at tBL = 1", gt=0)
    frontend_latency_gpu_cycles: int = F(
        100, unit="cycles",
        desc="GPU core-clock cycles (gpu.clock_GHz) every DRAM request spends between the L2 and the controller's queues, before arbitration and scheduling (a fixed pipeline delay; replies take none): the controller pipeline the DRAM timing model does not cover",
        source=f"{QV100}: -dram_latency 100, counted in gpu_sim_cycle, the core clock (gpu-sim.cc), on the request path only (l2cache.cc memory_partition_unit::dram_cycle: the L2-to-DRAM queue enters m_dram_latency_queue, which feeds the DRAM scheduler when ready_cycle is reached); 100 cycles at Table 1's 1.4 GHz = 71.4 ns", ge=0)
    scheduler: Literal["frfcfs"] = F("frfcfs", unit="enum", desc="command scheduler (row hits first, then oldest)", source="Accel-Sim/GPGPU-Sim (FR-FCFS)",
                                     descriptive="FR-FCFS is the only scheduler implemented: the field names the model's choice and accepts no other")
    page_policy: Literal["open", "closed", "closed_adaptive"] = F(
        "open", unit="enum",
        desc="row-buffer policy (t3sim/memory/page_policy.py): open = a row stays open until a queued request to another row needs the bank and none of the active queue hits it; closed = every column command closes its row (auto-precharge at the earliest legal cycle); closed_adaptive = a column command closes its row unless another request of its queue still hits it",
        source="open: Accel-Sim/GPGPU-Sim (FR-FCFS keeps rows open); closed: DRAMsim3 row_buf_policy=CLOSE_PAGE (every access READ_/WRITE_PRECHARGE) and gem5 page_policy=close; closed_adaptive: gem5 page_policy=close_adaptive")
    arbitration: ArbitrationConfig = F(ArbitrationConfig, unit="mapping", desc="compute/communication arbitration", source="paper Sec. 4.5")

    @field_validator("write_drain")
    @classmethod
    def _write_drain(cls, v: str) -> str:
        return check_kind("write_drain", v)

    @model_validator(mode="after")
    def _watermarks(self) -> "MemoryControllerConfig":
        reads = registry.get("write_drain", self.write_drain, "memory_controller.write_drain").reads
        ignored = [n for n in self.given(("write_high_watermark", "write_low_watermark")) if n not in reads]
        if ignored:
            raise ValueError(f"{' and '.join(ignored)} with write_drain={self.write_drain!r}, which does not read "
                             f"{'it' if len(ignored) == 1 else 'them'}; allowed: the watermarks only with a write-drain "
                             "policy that reads them (watermark)")
        if self.write_low_watermark >= self.write_high_watermark:
            raise ValueError(
                f"write_low_watermark ({self.write_low_watermark}) must be below write_high_watermark ({self.write_high_watermark})")
        return self
