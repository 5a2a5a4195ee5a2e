"""Options of FiCCO (finer-grained compute-communication overlap): its four AllGather+GEMM schedules and its
characterization of the overlap's inefficiencies. Pure: config models only."""

from __future__ import annotations

from typing import Literal

from t3sim.config.base import F, Model
from t3sim.config.scheme import ChunkAxis, Chunks, ComputeStreams, LaunchFirst, SchemeConfig, family, scheme_kind

#: FiCCO's four schedules (Sec. V-B), the names ``scheme.ficco_schedule`` takes.
SCHEDULES = ("uniform_fused_1d", "hetero_fused_1d", "hetero_unfused_1d", "uniform_fused_2d")


class FiccoComm(Model):
    ficco_comm: Literal["dma", "rccl"] = F(
        "dma", unit="enum",
        desc="ficco: what moves each step's pieces: dma (copy-engine copies, hipMemcpyDtoDAsync) or rccl (a "
             "CU-driven collective per step, FiCCO-rccl: t3sim/schemes/ficco/ficco_rccl.py); ficco_char: the same for "
             "its all-gather (rccl: one CU-driven all_gather collective per step)",
        source="FiCCO Secs. IV-B1, IV-D1, VI-E")


class FiccoOptions(ComputeStreams, FiccoComm, SchemeConfig):
    """``ficco``: the AllGather decomposed one level finer than shards, under one of FiCCO's schedules."""

    ficco_schedule: Literal[SCHEDULES] = F(
        "uniform_fused_1d", unit="enum",
        desc="ficco: which FiCCO schedule runs the AllGather+GEMM: uniform_fused_1d (every step gathers its N row "
             "pieces, local one included, into one GEMM, then scatters the output rows), hetero_fused_1d (the local "
             "shard's GEMM first, then one GEMM per step over the N-1 gathered remote pieces, scattered), "
             "hetero_unfused_1d (the local shard's GEMM, then one GEMM per remote piece, in place: no gather or "
             "scatter), uniform_fused_2d (K-sharded: every step gathers its N column blocks and runs an accumulating "
             "GEMM over the whole M rows); t3sim/schemes/ficco/ficco.py states the reading of each",
        source="FiCCO Sec. V-A, V-B (Fig. 11(b), lost: the reading is in t3sim/schemes/ficco/ficco.py)")


class FiccoCharOptions(LaunchFirst, ChunkAxis, Chunks, FiccoComm, SchemeConfig):
    """``ficco_char``: FiCCO's characterization runs (GEMM chunks, the all-gather, or both together)."""

    char_part: Literal["gemm", "comm", "both"] = F(
        "gemm", unit="enum",
        desc="ficco_char: what runs: gemm (the per-GPU GEMM as scheme.chunks chunks back to back, no communication: "
             "GEMM DIL), comm (the all-gather of A alone, no GEMM: communication DIL), both (the GEMM chunks on one "
             "stream beside the all-gather steps on others, launched together: CIL)",
        source="FiCCO Secs. IV-C1, IV-C2, IV-D")
    char_comm_pattern: Literal["a2a", "p2p"] = F(
        "a2a", unit="enum",
        desc="ficco_char: how the all-gather moves A: a2a (FiCCO: in each step every GPU sends 1/char_comm_steps of "
             "its shard to all N-1 peers at once) or p2p (shard-based overlap, PyTorch AsyncTP / chunked_dma: every "
             "GPU sends its whole shard to one peer at a time, peers r+1, r+2, ... one after another; copy engines "
             "only)",
        source="FiCCO Secs. III-A, IV-C2, IV-D1 (shard-based overlap CIL), VI-B (7x communication slowdown)")
    char_comm_steps: int = F(
        1, unit="count",
        desc="ficco_char with char_comm_pattern=a2a: steps the all-gather is cut into (1: the whole all-gather at "
             "once; N: FiCCO's steps, 'collective size scaled down 8-way for eight GPU system'); p2p: 1 only",
        source="FiCCO Secs. III-A, IV-C2", ge=1)
    char_pieces: Literal["all", "first"] = F(
        "all", unit="enum",
        desc="ficco_char: run every GEMM chunk and every all-gather step (p2p: every peer) back to back, or only the "
             "first of each (with char_part=both: one M/N-row GEMM shard beside one step, FiCCO Sec. IV-D's CIL unit)",
        source="FiCCO Sec. IV-D1 ('8-way M-sharded GEMM concurrently with RCCL or DMA-based all-gather')")


FAMILY = "ficco"
family(FAMILY, "FiCCO: the AllGather+GEMM decomposed one level finer than shards, and its characterization")
scheme_kind("ficco", family=FAMILY, module=f"{__package__}.ficco", options=FiccoOptions)
scheme_kind("ficco_char", family=FAMILY, module=f"{__package__}.ficco_char", options=FiccoCharOptions)
