"""FiCCO's static operator metrics and its schedule-picking heuristic (paper 001, Secs. IV-C1, IV-D1, V-C).

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

#: FiCCO's four schedules (Sec. V-B), the names ``scheme.ficco_schedule`` takes.
SCHEDULES = ("uniform_fused_1d", "hetero_fused_1d", "hetero_unfused_1d", "uniform_fused_2d")


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


#: Smallest K a scaled shape keeps (:func:`scale_for`): K >= 2048 keeps every Table I GEMM's op-to-byte
#: ratio above ~900 FLOP/B, several times an MI300X's machine balance (1307 TFLOPS / 5.3 TB/s = 247 FLOP/B),
#: so no scaled GEMM turns memory-bound.
MIN_SCALED_K = 2048


def scale_for(M: int, N: int, K: int, *, tp: int, direction: str, flop_budget: float) -> tuple:
    """``(scale_M, scale_K)`` (``workload.gemm.scale_M/K``) that shrink the whole-operator GEMM until one
    GPU's share, ``2 M N K / tp`` FLOPs, is at most ``flop_budget`` (issue 14: scaled shapes while t3sim has
    no sampled simulation; keep the study within ~4 CPU-hours).

    The rule, fixed before any result (never per scenario): find the smallest power of two ``s`` with
    ``2MNK / (tp s^2) <= flop_budget``; divide K by ``s_K = min(s, K / MIN_SCALED_K)`` (a power of two; K
    stays >= :data:`MIN_SCALED_K` so the GEMM stays compute-bound), and M by the smallest divisor
    ``s_M >= s^2 / s_K`` of M that leaves whole pieces (M / s_M a multiple of ``tp^2``, FiCCO's 1D pieces;
    ``tp^3`` for a2a_gemm, whose GPU gets M/tp rows). N is kept: with M and K shrunk alike the
    communication (M x K) and the GEMM (M x N x K) shrink alike, so the communication-to-GEMM ratio that
    sets the overlap's ideal speedup (FiCCO Sec. VI-B) stays. Where that would turn an M > K GEMM into
    M <= K (the relation that picks 1D or 2D), K takes further factors of two (below MIN_SCALED_K if it
    must) until M > K again. OTB and MT cannot both stay: their product is the FLOP count (module doc)."""
    flops = 2 * M * N * K / tp
    s = 1
    while flops / (s * s) > flop_budget:
        s *= 2
    s_k = 1
    while s_k < s and K % (2 * s_k) == 0 and K // (2 * s_k) >= MIN_SCALED_K:
        s_k *= 2
    granule = tp ** 3 if direction == "a2a_gemm" else tp ** 2

    def scale_m(s_k: int) -> int:
        for s_m in range(-(-s * s // s_k), M + 1):
            if M % s_m == 0 and (M // s_m) % granule == 0:
                return s_m
        raise ValueError(f"scale_for: no scale of M = {M} leaves a multiple of {granule} rows")

    s_m = scale_m(s_k)
    while M > K and M // s_m <= K // s_k and K % (2 * s_k) == 0:  # keep M > K: shift scale from M to K
        s_k *= 2
        s_m = scale_m(s_k)
    return s_m, s_k
