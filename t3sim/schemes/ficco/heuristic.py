"""FiCCO's static operator metrics and its schedule-picking heuristic (FiCCO Secs. IV-C1, IV-D1, V-C).

A pure function of a GEMM's shape and the machine's peak numbers: both the ``ficco`` scheme (which may
pick its schedule with it) and the analysis (which scores it against simulated optima) import it, so it
holds no simulation code.

Metrics of an ``M x N x K`` GEMM with ``e``-byte elements (FiCCO's definitions):

* op-to-byte ratio ``OTB = 2MNK / (e (MK + NK + MN))`` in FLOP/B: "arithmetic intensity, calculated using
  resultant GEMM dimensions, derived from MNK for ops and bytes" (Sec. IV-C1);
* memory traffic ``MT = e (MK + NK + MN)`` in bytes: "calculated as MK + NK + MN for a MNK GEMM"
  (Sec. IV-D1; t3sim counts it in bytes, the elements times ``e``).

Heuristic (Sec. V-C, Fig. 12(a), whose figure is lost): "1D if M>K or 2D otherwise" -- M <= K picks
``uniform_fused_2d``; for M > K "We define a combined machine threshold using combined OTB and MT for
underlying GPU in terms of its peak compute FLOPs (op-to-byte x memory bandwidth = FLOPs). We then assign
uniform-fused-1D to scenarios where the combined OTB and MT is below this machine-level threshold, while
hetero-unfused-1D is assigned when the combined metric exceeds the threshold by 5x", hetero-fused-1D
otherwise.

**Reading (t3sim's, the text is ambiguous).** The combined metric is the product ``OTB x MT`` (the
sentence's own "op-to-byte x memory bandwidth" pairing), which is the operation's FLOPs ``2MNK``; the
machine threshold is the machine's op-to-byte ratio times its memory bandwidth, i.e. its peak FLOP/s.
A FLOP count and a FLOP rate compare only through a time, which the paper does not state; t3sim reads
the comparison as the paper's numbers would be printed, the metric in GFLOP against the peak in
TFLOP/s, i.e. a time unit ``tau = 1 ms``: the metric is the per-GPU GEMM's time at peak, ``2MNK / (G
peak)`` for ``G`` GPUs sharing it, and the classes are ``< tau``, ``> 5 tau`` and between. ``tau_ms`` is an
argument so that the reading's sensitivity can be shown; it is never fitted to simulated optima.
"""

from __future__ import annotations

from dataclasses import dataclass

from t3sim.schemes.ficco.options import SCHEDULES

__all__ = ["SCHEDULES", "otb", "mt_B", "Pick", "pick", "MIN_SCALED_K", "scale_for"]


def otb(M: int, N: int, K: int, elem_B: int = 2) -> float:
    """Op-to-byte ratio of an M x N x K GEMM, FLOP/B (module doc)."""
    return 2 * M * N * K / mt_B(M, N, K, elem_B)


def mt_B(M: int, N: int, K: int, elem_B: int = 2) -> int:
    """Static memory traffic of an M x N x K GEMM, bytes: ``e (MK + NK + MN)`` (module doc)."""
    return elem_B * (M * K + N * K + M * N)


@dataclass(frozen=True)
class Pick:
    """The heuristic's choice and the quantities it compared."""

    schedule: str
    otb_FLOP_per_B: float       #: the GEMM's op-to-byte ratio
    mt_B: int                   #: the GEMM's static memory traffic
    metric_ms: float            #: OTB x MT / (GPUs x peak): the per-GPU GEMM's time at peak (reading)
    threshold_ms: float         #: tau
    reason: str


def pick(M: int, N: int, K: int, *, gpus: int, peak_TFLOPS: float, elem_B: int = 2, tau_ms: float = 1.0) -> Pick:
    """FiCCO's schedule for the whole-operator GEMM ``M x N x K`` shared by ``gpus`` GPUs of peak
    ``peak_TFLOPS`` each (module doc: the rule and t3sim's reading of its threshold)."""
    if min(M, N, K, gpus) < 1 or peak_TFLOPS <= 0 or tau_ms <= 0:
        raise ValueError(f"pick: need positive M, N, K, gpus, peak and tau (got {M}, {N}, {K}, {gpus}, {peak_TFLOPS}, {tau_ms})")
    o, m = otb(M, N, K, elem_B), mt_B(M, N, K, elem_B)
    metric = o * m / gpus / (peak_TFLOPS * 1e12) * 1e3
    if M <= K:
        s, why = "uniform_fused_2d", f"M = {M} <= K = {K}: 2D (K-sharded) communication"
    elif metric < tau_ms:
        s, why = "uniform_fused_1d", f"M > K and OTB x MT = {metric:.3g} ms of peak < {tau_ms:g} ms"
    elif metric > 5 * tau_ms:
        s, why = "hetero_unfused_1d", f"M > K and OTB x MT = {metric:.3g} ms of peak > 5 x {tau_ms:g} ms"
    else:
        s, why = "hetero_fused_1d", f"M > K and {tau_ms:g} <= OTB x MT = {metric:.3g} ms of peak <= 5 x {tau_ms:g} ms"
    return Pick(s, o, m, metric, tau_ms, why)


#: Smallest K a scaled shape keeps (:func:`scale_for`): 8 k-steps of a 64-deep tile. At K = 512 the scaled GEMMs'
#: op-to-byte ratio stays above ~400 FLOP/B, over an MI300X's machine balance (1307 TFLOPS / 5.3 TB/s = 247
#: FLOP/B), so none turns memory-bound.
MIN_SCALED_K = 512


def scale_for(M: int, N: int, K: int, *, tp: int, direction: str, flop_budget: float) -> tuple:
    """``(scale_M, scale_K)`` (``workload.gemm.scale_M/K``) that shrink the whole-operator GEMM until one
    GPU's share, ``2 M N K / tp`` FLOPs, is at most ``flop_budget`` (the FiCCO study's scaled shapes while t3sim has
    no sampled simulation).

    The rule, fixed before any scenario result (never per scenario), depth first:

    * N is kept, and M and K are only divided (by powers of two for K, by divisors that leave whole FiCCO
      pieces for M: M / scale_M a multiple of ``tp^2``, ``tp^3`` for a2a_gemm). Communication (M x K) and
      GEMM (M x N x K) then shrink by the same factor, so the communication-to-GEMM ratio that sets the
      overlap's ideal speedup (FiCCO Sec. VI-B) is kept.
    * K is halved first, down to :data:`MIN_SCALED_K`, and, where M <= K, only while it stays above M (the
      relation that picks 1D or 2D, Sec. V-C). Rows are the dimension FiCCO decomposes: every 1D schedule's
      GEMMs have M/tp or fewer rows, and their tile count against the GPU's CUs is the decomposition loss
      (Sec. IV-C1), so M is the last to shrink. (A first rule, M and K alike, left an 8-way shard of g2 with
      64 tiles on 304 CUs instead of 512 and made every 1D schedule 2-8x slower than at full size.)
    * Then M is divided (and, where M <= K, K again whenever K > 2M), until the budget is met -- unless the
      next divisor that leaves whole pieces would overshoot to under half the budget (g13's M = 785 x 2^11
      jumps from a divisor of 20 to 157), where the larger shape is kept, over the budget.

    OTB and MT cannot both stay: their product is the FLOP count (module doc); OTB falls with K."""
    granule = tp ** 3 if direction == "a2a_gemm" else tp ** 2
    s_m = s_k = 1
    while 2 * (M // s_m) * N * (K // s_k) / tp > flop_budget:
        m, k = M // s_m, K // s_k
        if K % (2 * s_k) == 0 and k // 2 >= MIN_SCALED_K and (M > K or k // 2 > m):
            s_k *= 2
            continue
        nxt = next((d for d in range(2 * s_m, M + 1) if M % d == 0 and (M // d) % granule == 0), None)
        if nxt is None:
            raise ValueError(f"scale_for: no scale of M = {M} leaves a multiple of {granule} rows under the budget")
        if 2 * (M // nxt) * N * (K // s_k) / tp < flop_budget / 2:
            break  # the next whole-piece divisor of M overshoots to under half the budget: keep the larger shape
        s_m = nxt
    return s_m, s_k
