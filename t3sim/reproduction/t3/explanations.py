"""Causes of known differences between t3sim and the T3 paper, as checked claims (maintained by hand; pure data).

Each entry is a :class:`~t3sim.analysis.claims.Claim`: the conditions it explains (the direction of the
difference, a range for t3sim's value, or the mechanism's own measured quantity) and a text whose numbers are
filled from the results when the report is made (fact names: :mod:`t3sim.reproduction.t3.facts`; ``P_<key>``,
``D_<key>``, ``A_<key>``: a stated number's paper value, t3sim - paper in points, and its size;
``value``/``paper``/``diff``: the row's own). A row whose claim's conditions fail is reported "not yet
explained", with the condition that failed -- never a stale text. Only causes that were checked go here, each
saying where the check is written down. Keys are :mod:`t3sim.reproduction.t3.numbers` keys. The other papers'
claims: ``t3sim.reproduction.<paper>.explanations``.
"""

from __future__ import annotations

from typing import Dict

from t3sim.analysis.claims import ABOVE, BELOW, DISAGREES, NO_VALUE, Claim, Cond

C = Cond
#: "barely": below the shortfall the paper reports for its T3 in the FC layers, "far from those with
#: Ideal-GEMM-RS-Overlap (>15% slower)" (Sec. 6.1.2). (An earlier bound was the report's 5-point
#: tolerance, a choice of t3sim's; 32 B DRAM accesses moved the largest TP=8 slowdown to 6.6 %.)
_BARELY = C("T3's GEMM slows by less than the >15 % the paper's T3 falls short of the ideal in the FC layers "
            "(Sec. 6.1.2; largest over the MCA sweep's TP=8 sub-layers)", "t3_gemm_slow_pct", "<", 15.0)
_GEMM_NOTE = ("{t3_gemm_slow_case}: GEMM {t3_gemm_slow_seq_us:.0f} -> {t3_gemm_slow_t3_us:.0f} us under T3, "
              "{t3_gemm_slow_pct:+.1f} %")


def _noslow(key: str, ideal: str) -> Claim:
    return Claim(
        "t3sim's GEMMs are slowed little by the overlapped RS traffic (" + _GEMM_NOTE + "; the higher read latency is "
        "hidden by the double-buffered k-loop), whereas the paper's T3 falls >15 % short of the ideal in the FC layers "
        "(Sec. 6.1.2, Fig. 17); so it reaches the ideal overlap ({value:.1f} % against Ideal-GEMM-RS-Overlap's {"
        + ideal + ":.1f} %) (experiments/t3-sublayers/README.md, item 1)",
        (ABOVE, _BARELY, C("within 5 points of Ideal-GEMM-RS-Overlap", f"{key}_minus_ideal", ">=", -5.0)))


def _mca() -> Claim:
    return Claim(
        "nothing for MCA to recover: T3's GEMM slowdown is only {t3_gemm_slow_pct:+.1f} % in t3sim "
        "({t3_gemm_slow_case}, item 1) against the {paper:.0f} % the paper's MCA gains over T3, and in RS-bound OP at "
        "TP=16 MCA's compute priority delays the fused RS ({op16_case}: T3-MCA {op16_mca_pct:.1f} % vs T3 "
        "{op16_t3_pct:.1f} %) (experiments/t3-sublayers/README.md, item 2)",
        (BELOW, C("T3's GEMM slowdown below the paper's gain of T3-MCA over T3", "t3_gemm_slow_pct", "<", "paper"),
         C("T3-MCA behind T3 on an OP TP=16 case", "op16_mca_minus_t3", "<", 0.0)))


_GAP = Claim(
    "T3-MCA's geomean ({s613_mca_geo:.1f} %) reaches Ideal-GEMM-RS-Overlap's ({s611_ideal_geo:.1f} %): the fused RS "
    "has no kernel launch or per-step barrier, and the uncached GEMM output can make the GEMM faster than the "
    "Sequential GEMM the ideal uses ({t3_gemm_fast_case}: {t3_gemm_fast_seq_us:.0f} -> {t3_gemm_fast_t3_us:.0f} us "
    "under T3) (experiments/t3-sublayers/README.md, items 1 and 5)",
    (BELOW, C("T3-MCA's geomean at or above the ideal's", "value", "<=", 0.0),
     C("T3's GEMM faster than Sequential's on some sub-layer", "t3_gemm_fast_pct", "<", 0.0)))
_GEMM_RD = Claim(
    "under Sequential t3sim's L2 already holds the GEMM inputs in {gemm_rd16_same_n} of {gemm_rd16_n} TP=16 cases "
    "(GEMM reads within 5 % of T3-MCA's, e.g. {gemm_rd16_case}: {gemm_rd16_MB:.1f} MB, the compulsory A + B), so "
    "bypassing the output removes no reads there; the paper's LLC lost inputs to output writes "
    "(experiments/t3-sublayers/README.md, item 3)",
    (BELOW, C("Sequential's GEMM reads within 5 % of T3-MCA's in at least half the TP=16 cases", "gemm_rd16_same_share",
              ">=", 0.5)))


def _e2e(sub: str) -> Claim:
    return Claim(
        "end-to-end speedups inherit the sub-layer speedups ({" + sub + ":.1f} % geomean against the paper's {P_" + sub
        + ":.0f} %), which are above the paper's because t3sim's GEMMs barely slow down under overlap ("
        + _GEMM_NOTE + "; experiments/t3-sublayers/README.md, item 1)",
        (ABOVE, C("the sub-layer geomean above the paper's by over 5 points", f"D_{sub}", ">", 5.0), _BARELY))


_TP32 = Claim(
    "at TP=32 the fused RS slows t3sim's GEMMs by {tp32_slow_lo:.0f}-{tp32_slow_hi:.0f} % under T3-MCA (each sub-layer's "
    "GEMM against Sequential's): the small-K TP=32 GEMMs are memory-bound, and the link-rate starvation limit serves "
    "communication at the links' rate whatever the compute priority (t3sim/memory/policies/t3_mca.py), so T3-MCA's "
    "sub-layer geomeans ({tp32_mca_lo:.1f}-{tp32_mca_hi:.1f} % per model) stay under the ideal overlap of the same "
    "sub-layers ({tp32_ideal_lo:.1f}-{tp32_ideal_hi:.1f} %, Sequential's phase times), which the paper's T3-MCA nearly "
    "reaches (Sec. 6.4) (experiments/fig19/README.md)",
    (BELOW, C("T3-MCA over 5 points under the ideal overlap of its own sub-layers, for every TP=32 model",
              "tp32_mca_minus_ideal_max", "<", -5.0),
     C("the fused RS slows some TP=32 GEMM by more than the >15 % the paper's T3 loses in the FC layers (Sec. 6.1.2)",
       "tp32_slow_hi", ">", 15.0)))

EXPLANATIONS: Dict[str, Claim] = {
    "s612_t3_max": _noslow("s612_t3_max", "s611_ideal_max"),
    "s612_t3_geo": _noslow("s612_t3_geo", "s611_ideal_geo"),
    "s613_mca_max": _noslow("s613_mca_max", "s611_ideal_max"),
    "s613_mca_geo": _noslow("s613_mca_geo", "s611_ideal_geo"),
    "s613_gap_to_ideal": _GAP,
    "s613_mca_over_t3_max": _mca(),
    "s613_mca_over_t3_geo": _mca(),
    "s62_gemm_rd": _GEMM_RD,
    "s62_gemm_rd_8": Claim(
        "the paper's mechanism (c) at another size: bypassing GEMM outputs helps the GEMMs whose inputs just miss the "
        "LLC under Sequential; in t3sim those are the TP=8 ones (Sequential reads {value:.2f}x T3-MCA's, "
        "{s62_gemm_rd_16:.2f}x at TP=16, where Sequential already reads within 5 % of T3-MCA in {gemm_rd16_same_n} of "
        "{gemm_rd16_n} cases), in the paper the TP=16 ones ({P_s62_gemm_rd_16:.0f}x: \"larger TP/slicing leads to "
        "smaller, more LLC-amenable GEMMs\"), so t3sim is above the paper at TP=8 and below it at TP=16 "
        "(experiments/t3-sublayers/README.md, item 3)",
        (ABOVE, C("t3sim's GEMM-read reduction larger at TP=8 than at TP=16", "value", ">", "s62_gemm_rd_16"),
         C("Sequential's GEMM reads within 5 % of T3-MCA's in at least half the TP=16 cases", "gemm_rd16_same_share",
           ">=", 0.5))),
    "s62_gemm_rd_16": _GEMM_RD,
    "s62_dram_max": Claim(
        "driven by {dram_max_case}'s {dram_max_gemm_rd_x:.1f}x GEMM-read reduction (experiments/t3-sublayers/"
        "README.md, item 4)",
        (ABOVE, C("the largest DRAM reduction's case cuts GEMM reads by more than the paper's geomean",
                  "dram_max_gemm_rd_x", ">", "P_s62_gemm_rd"))),
    **{k: _e2e("s612_t3_geo") for k in ("s63_train_t3_max", "s63_train_t3_geo", "s63_prompt_t3_max", "s63_prompt_t3_geo")},
    **{k: _e2e("s613_mca_geo") for k in ("s63_train_mca_max", "s63_train_mca_geo", "s63_prompt_mca_max",
                                         "s63_prompt_mca_geo")},
    "s63_attention_share": Claim(
        "method: the paper's share is a measured MI210 MLPerf-BERT profile; t3sim's ({value:.1f} %) is analytical "
        "(softmax/dropout at HBM peak, QK^T/AV at the sliced-GEMM FLOP rate: a lower bound; t3sim/reproduction/t3/endtoend.py)",
        (BELOW, C("t3sim's attention, its FLOPs at the sliced GEMMs' rate (S/2H of theirs) and its score passes at "
                  "HBM peak, takes less time than the sliced GEMMs in every Mega-GPT-2 and T-NLG training layer "
                  "(fig04.csv; a share measured at 40-45 % would exceed them)", "attention_over_sliced_max", "<", 1.0))),
    **{k: _TP32 for k in ("s64_layer_max", "s64_layer_geo", "s64_train_max", "s64_prompt_max")},
    "s611_nmc_rs_8": Claim(
        "t3sim's Sequential RS runs {rs_over_link_8_lo:.0f}-{rs_over_link_8_hi:.0f} % above its link-bound time at "
        "TP=8 (results/figures/fig15.csv, rs_link_bound_us): each ring step's CU reduction reads both operands and "
        "writes the sum, a read/write mix in DRAM beside the link transfer. NMC turns the received operand's reads "
        "into op-and-store updates (RS reads {s62_rs_rd_8:.2f}x fewer, the paper's {P_s62_rs_rd_8:.1f}x), and the RS "
        "comes to {nmc_over_link_8:.1f} % above its link bound; the same read cut gives the paper {paper:.0f} %, so "
        "its RS spent less time in DRAM above its link bound than t3sim's (experiments/t3-sublayers/README.md, NMC)",
        (ABOVE, C("NMC cuts RS reads as the paper's (within 5 points)", "A_s62_rs_rd_8", "<=", 5.0),
         C("the Sequential RS's time above its link bound exceeds the paper's NMC gain", "rs_over_link_8_geo", ">",
           "paper"),
         C("NMC's RS still at or above its link bound", "nmc_over_link_8", ">=", 0.0))),
    "s611_tnlg_fc1_16": Claim(
        "a {paper:.0f} % ideal-overlap speedup needs GEMM = RS = AG; t3sim's T-NLG FC-1 TP=16 GEMM is "
        "{fc1_16_gemm_us:.0f} us against RS {fc1_16_rs_us:.0f} and AG {fc1_16_ag_us:.0f} us (Sequential, "
        "results/figures/fig15.csv), so max(GEMM, RS) hides only the {fc1_16_rs_us:.0f} us RS: {fc1_16_seq_us:.0f} / "
        "{fc1_16_ideal_us:.0f} = {fc1_16_bound_x:.2f}x",
        (BELOW, C("the phase-time bound (GEMM+RS+AG) / (max(GEMM, RS)+AG) below the paper's speedup", "fc1_16_bound_pct",
                  "<", "paper"),
         C("the ideal's speedup at that bound (within 1 point)", "fc1_16_bound_gap_abs", "<=", 1.0))),
    "s75_fc2_benefit": Claim(
        "mixed by TP: where FC-2's compute dominates (TP=8, GEMM/RS {fc2_8_ratio_lo:.1f}-{fc2_8_ratio_hi:.1f}x) 2x CUs "
        "raise T3-MCA's speedup by {fc2_8_delta_lo:+.1f} to {fc2_8_delta_hi:+.1f} points, as the paper says; at TP=16 "
        "the GEMM/RS ratio is already {fc2_16_ratio_lo:.1f}-{fc2_16_ratio_hi:.1f}x, 2x CUs make the RS the long pole "
        "and the speedup changes by {fc2_16_delta_lo:+.1f} to {fc2_16_delta_hi:+.1f} points (results/figures/fig20.csv)",
        (DISAGREES, C("2x CUs raise T3-MCA's FC-2 speedup at TP=8", "fc2_8_delta_lo", ">", 0.0),
         C("2x CUs lower T3-MCA's FC-2 speedup at TP=16", "fc2_16_delta_hi", "<", 0.0))),
    "s321_ideal_pos": Claim(
        "set by the GEMM:AR time ratios: t3sim's are {ideal_ratios}, giving {ideal_pos_lo:.2f}-{ideal_pos_hi:.2f}x; "
        "their balance min(GEMM, AR) / max(GEMM, AR) is {ideal_balance_geo:.2f} geomean, where the paper's "
        "{paper:.2f}x needs about {paper_balance_needed:.2f} (results/figures/fig06.csv)",
        (BELOW, C("the GEMM:AR balance below what the paper's speedup needs", "ideal_balance_geo", "<",
                  "paper_balance_needed"))),
    "s321_ar_slow_8": Claim(
        "t3sim's 8-CU AR takes only {ar8_norm_lo:.2f}-{ar8_norm_hi:.2f}x its 80-CU time (the paper: {paper_ar8_norm:.2f}x "
        "geomean): each CU keeps a fixed number of bytes per source in flight (RCCL block x unroll, "
        "collective.inflight_per_cu_B) against the read latency, so 8 CUs still move most of the 80-CU rate; the "
        "paper's +{paper:.0f} % implies a lower per-CU rate on MI210 (results/figures/fig06.csv)",
        (BELOW, C("every 8-CU AR slows less than the paper's geomean", "ar8_norm_hi", "<", "paper_ar8_norm"))),
    "s321_pos_72_8": Claim(
        "follows from the 8-CU AR slowing less than the paper's ({s321_ar_slow_8:+.1f} vs +{P_s321_ar_slow_8:.0f} %, "
        "s321_ar_slow_8)",
        (ABOVE, C("the 8-CU AR slowdown over 5 points below the paper's", "D_s321_ar_slow_8", "<", -5.0))),
    "s321_pos_64_16": Claim(
        "follows from the lower ideal ({s321_ideal_pos:.2f}x vs {P_s321_ideal_pos:.2f}x, s321_ideal_pos); the 64-16 "
        "slowdowns are within {A_s321_ar_slow_16:.1f} (AR) and {A_s321_gemm_slow_64:.1f} (GEMM) points",
        (BELOW, C("the ideal's speedup over 5 points below the paper's", "D_s321_ideal_pos", "<", -5.0),
         C("the 16-CU AR slowdown within 5 points", "A_s321_ar_slow_16", "<=", 5.0),
         C("the 64-CU GEMM slowdown within 5 points", "A_s321_gemm_slow_64", "<=", 5.0))),
    "s24_comm_gemm2x": Claim(
        "not reachable from the paper's own stated shares by halving GEMM time: a share c becomes c / (c + (1 - c) / 2), "
        "at most {gemm2x_paper_bound:.0f} % for c = {gemm2x_paper_share:.0f} %; t3sim halves only the GEMMs of its "
        "per-layer model (memory-bound ops and communication unchanged): {value:.1f} % at most, within the "
        "{gemm2x_t3_bound:.1f} % that its largest share ({comm_share_max:.1f} %) gives if all the rest were GEMM",
        (BELOW, C("halving GEMMs from the paper's largest stated share stays below its 75 %", "gemm2x_paper_bound", "<",
                  "paper"),
         C("t3sim's value within the halving bound of its own largest share", "value", "<=", "gemm2x_t3_bound"),
         C("t3sim's value is its largest communication share with only the sliced and other GEMMs of each layer's "
           "breakdown halved (fig04.csv parts; within 0.5 points)", "gemm2x_gemms_only_gap_abs", "<=", 0.5))),
    "s24_comm_mega_max": Claim(
        "method: t3sim's non-sliced attention is an analytical lower bound ({s63_attention_share:.1f} % of the time vs "
        "the paper's measured {P_s63_attention_share:.0f}-45 %, s63_attention_share), so the communication share is "
        "larger",
        (ABOVE, C("t3sim's attention share over 5 points below the paper's", "D_s63_attention_share", "<", -5.0))),
    "s24_comm_large_max": Claim(
        "scaling: per device, communication ~ T*H and sliced GEMMs ~ T*H^2/TP, so from T-NLG to the large models at "
        "TP=32 comm:GEMM falls (simulated {comm_gemm_change_x:.2f}x, {comm_tnlg_case} to {comm_large_case}) and the "
        "share falls, {s24_comm_tnlg_max:.1f} -> {value:.1f} %; the paper's rise to {paper:.0f} % needs "
        "{comm_needed_x:.2f}x t3sim's communication time at TP=32, a model-dependent term its MI210-profile method does "
        "not give (experiments/fig04/README.md, known difference)",
        (BELOW, C("comm:GEMM falls from T-NLG to the TP=32 models", "comm_gemm_change_x", "<", 1.0),
         C("the communication share falls from T-NLG's", "value", "<", "s24_comm_tnlg_max"))),
    "s24_comm_future_max": Claim("not reproducible: the paper does not give the 1T/10T models' hyperparameters",
                                 (NO_VALUE,)),
}

#: keys whose t3sim value cannot exist (the paper gives no inputs for it)
NOT_REPRODUCIBLE = {"s24_comm_future_max"}
