"""Every number the T3 paper (Pati et al., ASPLOS'24) states in its text for the studied results (pure data).

Sections 2.4, 3.2.1, 5.1.1, 6.1-6.4 and 7.5. Each entry (:class:`~t3sim.reproduction.stated.PaperNumber`) names
the section, a verbatim quote, the paper's value, how it compares with t3sim's (``kind``, as
:mod:`t3sim.reproduction.stated` defines them) and the metric key that :func:`t3sim.reproduction.t3.metrics.metrics`
computes.

Figures 14-20 appear in the text only through these numbers (their captions survive, their bars do not).
"""

from __future__ import annotations

from typing import Tuple

from t3sim.reproduction.stated import PaperNumber

#: the models of Secs. 6.1-6.3 (TP 8 and 16) and the large ones of Sec. 6.4 (TP 32)
SMALL = ("mega-gpt-2", "t-nlg")
LARGE = ("gpt-3", "palm", "mt-nlg")

P = PaperNumber
NUMBERS: Tuple[PaperNumber, ...] = (
    # ---- Sec. 2.4 (Fig. 4)
    P("s24_comm_mega_max", "2.4", "Megatron-GPT-2 (Mega-GPT-2) and T-NLG spend up to 34% and 43% of their training and inference (prompt phase) time on communication", 34, "pct", "fig04"),
    P("s24_comm_tnlg_max", "2.4", "Megatron-GPT-2 (Mega-GPT-2) and T-NLG spend up to 34% and 43% of their training and inference (prompt phase) time on communication", 43, "pct", "fig04"),
    P("s24_comm_large_max", "2.4", "These trends also hold for the very large and futuristic Transformers: communication can be up to 46% and 44% of their runtime", 46, "pct", "fig04"),
    P("s24_comm_future_max", "2.4", "communication can be up to 46% and 44% of their runtime, respectively (futuristic 1T/10T models at 64-way TP)", 44, "pct", "fig04"),
    P("s24_comm_gemm2x", "2.4", "if the GEMMs become 2x faster, communication increases to 75% of model execution time", 75, "pct", "fig04"),
    # ---- Sec. 3.2.1 (Fig. 6)
    P("s321_ideal_pos", "3.2.1", "the ideal case has the maximum potential overlap speedup of 1.67x geomean", 1.67, "speedup_x", "fig06"),
    P("s321_ar_slow_8", "3.2.1", "AR slows down considerably (geomean ~41% slowdown) when allocated only eight CUs (72-8 case)", 41, "pct", "fig06"),
    P("s321_pos_72_8", "3.2.1", "This significantly decreases the potential-overlap-speedup to 1.18x geomean", 1.18, "speedup_x", "fig06"),
    P("s321_ar_slow_16", "3.2.1", "While AR performance improves with 16 CUs (only ~7% slowdown in 64-16 case)", 7, "pct", "fig06"),
    P("s321_gemm_slow_64", "3.2.1", "GEMMs slow down (geomean ~21% slowdown) since they now only have 64 CUs", 21, "pct", "fig06"),
    P("s321_pos_64_16", "3.2.1", "potential speedups fall short (1.49x geomean) compared to the ideal case", 1.49, "speedup_x", "fig06"),
    # ---- Sec. 5.1.1 (Fig. 14)
    P("s511_rs_error", "5.1.1", "simulation closely follows hardware trends for a range of sizes (6-192 MB): 6% geomean error versus the ideal dotted line", 6, "pct", "fig14"),
    # ---- Sec. 6.1.1 (Fig. 16)
    P("s611_ideal_geo", "6.1.1", "Ideal-GEMM-RS-Overlap ... 50% max speedup and 35% geomean versus Sequential", 35, "pct", "fig16"),
    P("s611_ideal_max", "6.1.1", "Ideal-GEMM-RS-Overlap ... 50% max speedup and 35% geomean versus Sequential", 50, "pct", "fig16"),
    P("s611_tnlg_fc1_16", "6.1.1", "For example, FC-1 in T-NLG with TP=16 obtains 50% speedup", 50, "pct", "fig16"),
    P("s611_mega_op_16", "6.1.1", "Ideal-GEMM-RS-Overlap speedup is only 15% for OP in Mega-GPT with TP=16", 15, "pct", "fig16"),
    P("s611_nmc_rs_8", "6.1.1", "This speeds up RS by 7% and 3% with TP=8 and TP=16, respectively", 7, "pct", "fig16"),
    P("s611_nmc_rs_16", "6.1.1", "This speeds up RS by 7% and 3% with TP=8 and TP=16, respectively", 3, "pct", "fig16"),
    P("s611_nmc_extra_max", "6.1.1", "this faster RS can reduce overlapped time and provide additional speedups of up to 4%", 4, "pct", "fig16"),
    # ---- Sec. 6.1.2 / 6.1.3 (Fig. 16)
    P("s612_t3_max", "6.1.2", "T3 achieves speedups of up to 39% (20% geomean, yellow bars, Figure 16)", 39, "pct", "fig16"),
    P("s612_t3_geo", "6.1.2", "T3 achieves speedups of up to 39% (20% geomean, yellow bars, Figure 16)", 20, "pct", "fig16"),
    P("s613_mca_max", "6.1.3", "T3-MCA provides considerable benefits over sequential execution; maximum of 47% and geomean of 30%", 47, "pct", "fig16"),
    P("s613_mca_geo", "6.1.3", "T3-MCA provides considerable benefits over sequential execution; maximum of 47% and geomean of 30%", 30, "pct", "fig16"),
    P("s613_mca_over_t3_max", "6.1.3", "(29% maximum and 13% geomean over T3)", 29, "pct", "fig16"),
    P("s613_mca_over_t3_geo", "6.1.3", "(29% maximum and 13% geomean over T3)", 13, "pct", "fig16"),
    P("s613_gap_to_ideal", "6.1.3", "the geomean speedup with T3-MCA is only 5% smaller than Ideal-GEMM-RS-Overlap", 5, "pct", "fig16"),
    # ---- Sec. 6.2 (Fig. 18)
    P("s62_dram_geo", "6.2", "T3 and T3-MCA also reduce data movement to and from DRAM by a maximum of 36% and an average of 22%", 22, "pct", "fig18"),
    P("s62_dram_max", "6.2", "T3 and T3-MCA also reduce data movement to and from DRAM by a maximum of 36% and an average of 22%", 36, "pct", "fig18"),
    P("s62_rs_rd", "6.2", "RS's reads reduce by 2.4x geomean (2.5x for TP=8, 2.2x for TP=16)", 2.4, "reduction_x", "fig18"),
    P("s62_rs_rd_8", "6.2", "RS's reads reduce by 2.4x geomean (2.5x for TP=8, 2.2x for TP=16)", 2.5, "reduction_x", "fig18"),
    P("s62_rs_rd_16", "6.2", "RS's reads reduce by 2.4x geomean (2.5x for TP=8, 2.2x for TP=16)", 2.2, "reduction_x", "fig18"),
    P("s62_wr", "6.2", "both GEMM's and RS's writes reduce by 10% geomean (14% for TP=8, 7% for TP=16)", 10, "pct", "fig18"),
    P("s62_wr_8", "6.2", "both GEMM's and RS's writes reduce by 10% geomean (14% for TP=8, 7% for TP=16)", 14, "pct", "fig18"),
    P("s62_wr_16", "6.2", "both GEMM's and RS's writes reduce by 10% geomean (14% for TP=8, 7% for TP=16)", 7, "pct", "fig18"),
    P("s62_gemm_rd", "6.2", "GEMM's reads decrease by 1.56x geomean (1.2x for TP=8, 2x for TP=16)", 1.56, "reduction_x", "fig18"),
    P("s62_gemm_rd_8", "6.2", "GEMM's reads decrease by 1.56x geomean (1.2x for TP=8, 2x for TP=16)", 1.2, "reduction_x", "fig18"),
    P("s62_gemm_rd_16", "6.2", "GEMM's reads decrease by 1.56x geomean (1.2x for TP=8, 2x for TP=16)", 2.0, "reduction_x", "fig18"),
    # ---- Sec. 6.3 (Fig. 19; Mega-GPT-2 and T-NLG at TP 8 and 16)
    P("s63_train_t3_max", "6.3", "T3 and T3-MCA speed up model training by a maximum of 9% and 12%, and geomean of 7% and 10%", 9, "pct", "fig19"),
    P("s63_train_mca_max", "6.3", "T3 and T3-MCA speed up model training by a maximum of 9% and 12%, and geomean of 7% and 10%", 12, "pct", "fig19"),
    P("s63_train_t3_geo", "6.3", "T3 and T3-MCA speed up model training by a maximum of 9% and 12%, and geomean of 7% and 10%", 7, "pct", "fig19"),
    P("s63_train_mca_geo", "6.3", "T3 and T3-MCA speed up model training by a maximum of 9% and 12%, and geomean of 7% and 10%", 10, "pct", "fig19"),
    P("s63_prompt_t3_max", "6.3", "prompt processing ... is also sped up by a maximum of 12% and 15%, and geomean of 9% and 12% with T3 and T3-MCA", 12, "pct", "fig19"),
    P("s63_prompt_mca_max", "6.3", "prompt processing ... is also sped up by a maximum of 12% and 15%, and geomean of 9% and 12% with T3 and T3-MCA", 15, "pct", "fig19"),
    P("s63_prompt_t3_geo", "6.3", "prompt processing ... is also sped up by a maximum of 12% and 15%, and geomean of 9% and 12% with T3 and T3-MCA", 9, "pct", "fig19"),
    P("s63_prompt_mca_geo", "6.3", "prompt processing ... is also sped up by a maximum of 12% and 15%, and geomean of 9% and 12% with T3 and T3-MCA", 12, "pct", "fig19"),
    P("s63_attention_share", "6.3", "makes the non-sliced attention operations a significant 40-45% of execution time", 40, "range_pct", "fig04", hi=45),
    # ---- Sec. 6.4 (Fig. 19; GPT-3, PALM, MT-NLG at TP=32)
    P("s64_layer_max", "6.4", "layer-level speedups are high; max 35% and geomean of 29% for GPT-3 (175B parameters), PALM (530B parameters), and MT-NLG (540B parameters)", 35, "pct", "fig19"),
    P("s64_layer_geo", "6.4", "layer-level speedups are high; max 35% and geomean of 29% for GPT-3 (175B parameters), PALM (530B parameters), and MT-NLG (540B parameters)", 29, "pct", "fig19"),
    P("s64_train_max", "6.4", "These lead to up to 12% and 14% end-to-end speedup in their training and prompt phase of inference, respectively", 12, "pct", "fig19"),
    P("s64_prompt_max", "6.4", "These lead to up to 12% and 14% end-to-end speedup in their training and prompt phase of inference, respectively", 14, "pct", "fig19"),
    # ---- Sec. 7.5 (Fig. 20): stated as directions only
    P("s75_fc2_benefit", "7.5", "for larger layers (FC-2) where compute time dominates, compute becomes faster with 2x CUs ... leads to larger benefits with overlapping compute and communication with T3", "higher", "direction", "fig20"),
    P("s75_op_benefit", "7.5", "for smaller layers (OP), where compute and communication are more balanced, faster compute exposes communication on critical path, lowering T3's benefits", "lower", "direction", "fig20"),
    P("s75_ratio", "7.5", "compute becomes faster with 2x CUs which lowers the compute:communication ratio across the models", "lower", "direction", "fig20"),
)

BY_KEY = {n.key: n for n in NUMBERS}
