"""Loaded-latency curves: a dependent load's latency (ns) against the HBM bandwidth (GB/s) streaming beside it.

A curve is a list of ``(GBps, ns)`` points in the order of their streaming-SM counts. :func:`latency_at` reads a
curve at a bandwidth by linear interpolation between the two points around it; a point whose bandwidth does not
exceed an earlier one's (more SMs that moved no more) is skipped, so the curve it reads is increasing in bandwidth;
outside the measured span it returns None rather than extrapolate. :func:`compare` gives the three numbers a model is held to: the idle latency,
and the latency at 50 % and 90 % of the measured curve's peak bandwidth, measured and simulated, with their errors.
Pure arithmetic: it imports no simulation code.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

Curve = Sequence[Tuple[float, float]]


def monotone(curve: Curve) -> list:
    """The curve's points (in SM-count order) whose bandwidth exceeds every earlier point's."""
    out = []
    for g, ns in curve:
        if not out or g > out[-1][0]:
            out.append((g, ns))
    return out


def latency_at(curve: Curve, GBps: float) -> Optional[float]:
    """The curve's latency (ns) at ``GBps`` by linear interpolation; None outside its bandwidth span."""
    pts = monotone(curve)
    for (g0, n0), (g1, n1) in zip(pts, pts[1:]):
        if g0 <= GBps <= g1:
            return n0 + (n1 - n0) * (GBps - g0) / (g1 - g0)
    if pts and pts[-1][0] == GBps:
        return pts[-1][1]
    return None


def compare(idle_meas_ns: float, idle_sim_ns: float, meas: Curve, sim: Curve,
            fractions: Sequence[float] = (0.5, 0.9), peak_GBps: Optional[float] = None) -> Dict[str, Optional[float]]:
    """Idle and loaded latency, measured against simulated: ``peak_GBps`` (given: the highest bandwidth measured by
    any streaming row, with or without the chase beside it; default: the measured curve's highest bandwidth),
    ``idle_*``, and per fraction ``f`` ``at<f*100>_{meas,sim}_ns`` and ``..._error`` (sim / meas - 1; None where
    either curve does not reach that bandwidth: the measured one then has no row there)."""
    peak = max(g for g, _ in meas) if peak_GBps is None else float(peak_GBps)
    out: Dict[str, Optional[float]] = {"peak_GBps": peak, "idle_meas_ns": idle_meas_ns, "idle_sim_ns": idle_sim_ns,
                                       "idle_error": idle_sim_ns / idle_meas_ns - 1}
    for f in fractions:
        key = f"at{round(f * 100)}"
        m, s = latency_at(meas, f * peak), latency_at(sim, f * peak)
        out[f"{key}_GBps"] = f * peak
        out[f"{key}_meas_ns"], out[f"{key}_sim_ns"] = m, s
        out[f"{key}_error"] = None if m is None or s is None else s / m - 1
    return out
