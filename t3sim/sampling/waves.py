"""Running a sampled simulation by GEMM waves: the detailed runs, the steady-state checks and the
extrapolated results. What is simulated and why, the criterion and the arithmetic: :mod:`t3sim.sampling.plan`.
Each detailed run is a point simulated whole by the core (:func:`t3sim.system.core.simulate_shared`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import List, Optional, Sequence, Tuple

from t3sim.results.stats import Stats
from t3sim.sampling.plan import (Plan, Steady, _reject, detailed_events, detailed_stats, extrapolate, extrapolate_gemm,
                                 extrapolate_stats, ladder, rates_agree, result, sampling_header, steady_state,
                                 wave_rates_agree, wave_times, window_mean, with_rows)
from t3sim.schemes.runtime.program import Phases
from t3sim.sim.clock import TICKS_PER_US
from t3sim.system.core import Resolved, simulate_shared, traffic_summary
from t3sim.system.kernels import footprint_B, hbm_capacity_B


# ---------------------------------------------------------------- running it

@dataclass
class Detailed:
    """One detailed run of the workload cut to ``rows`` rows."""

    rows: int
    results: list  #: RunResult per point
    waves: List[int]  #: complete GEMM wave times of GPU 0 (ticks)
    phases: Tuple[int, int, int]  #: gemm, rs, ag (ticks)
    marks: dict  #: phase -> tick at which it ends, from the program start, in the program's phase order
    wall_s: float = 0.0
    check: Optional[Tuple[float, float]] = None  #: criteria (a), (b) in percent when this run was the largest


class _Probe:
    """Handed to :func:`t3sim.system.core.simulate_shared`: has the model record its GEMM WGs' retirements."""

    def __init__(self) -> None:
        self.model = None

    def __call__(self, model) -> None:
        model.record_wg_spans = True
        self.model = model

    def waves(self, stage_wgs: int) -> List[int]:
        m = self.model
        pre = f"gpu{m.sim_gpus[0]}."
        ends = [span[3] for gk in m.gemm_kernels if gk.name.startswith(pre) for span in (gk.wg_spans or [])]
        return wave_times(ends, m.marks.get("start", 0), stage_wgs)


def _ticks(stats: Stats, name: str) -> int:
    return int(round(stats.value(name) * TICKS_PER_US))


def _detailed(points: Sequence[Resolved], rows: int, p: Plan) -> Detailed:
    t0 = time.perf_counter()
    probe = _Probe()
    results = simulate_shared([with_rows(e.exp, rows) for e in points], probe=probe)
    st = results[0].stats
    phases = tuple(_ticks(st, f"time.{ph}_us") for ph in ("gemm", "rs", "ag"))
    m = probe.model.marks
    marks = {ph: m[ph] - m["start"] for ph in m if ph != "start"}  # in the program's phase order
    return Detailed(rows, results, probe.waves(p.stage_wgs), phases, marks, wall_s=time.perf_counter() - t0)


def phase_marks(phases: dict, order: Sequence[str]) -> dict:
    """Phase -> the tick it ends at from the program start, the phases (durations) summed in ``order``."""
    out, t = {}, 0
    for ph in order:
        t += phases[ph]
        out[ph] = t
    return out


def move_with_marks(small: Stats, large: Stats, out: Stats, marks_small: dict, marks_large: dict,
                    marks_full: dict) -> Stats:
    """``out`` with every kernel launch/end time (``kernels.*_us``) and ``sim.end_us`` that sits on a phase
    boundary in both detailed runs moved to that boundary in the full workload (so kernel records and phase
    times agree); other times stay as extrapolated."""
    res = Stats()
    for name, st in out.items():
        v = st.value
        if (name.startswith("kernels.") and name.endswith("_us") or name == "sim.end_us") and name in small \
                and isinstance(v, float):
            tb, tc = (int(round(x.value(name) * TICKS_PER_US)) for x in (small, large))
            for ph, mc in marks_large.items():
                if tc == mc and tb == marks_small[ph]:
                    v = marks_full[ph] / TICKS_PER_US
                    break
        res.add(name, v, st.unit, st.description)
    return res


def simulate_sampled(points: Sequence[Resolved], timeline: bool = False) -> list:
    """Simulate resolved points sharing one simulation with ``simulation.sampling.mode: waves`` (module doc;
    each point's ``plan``: its :class:`~t3sim.sampling.plan.Plan`); one :class:`~t3sim.results.store.RunResult`
    per point, as :func:`t3sim.system.core.simulate_resolved`."""
    if timeline:
        raise _reject("waves with --timeline (a timeline traces one detailed simulation)",
                      "simulation.sampling.mode=off for a timeline")
    t0 = time.perf_counter()
    s = points[0].exp.simulation.sampling
    p = points[0].plan
    d = s.detail_waves
    rows = ladder(p, d)
    if rows[-1] >= p.rows:
        return _whole(points, p, [], f"the workload has {float(p.waves(p.rows)):.2f} waves, too few for detailed "
                                   f"runs of about {d} waves below it", t0)
    runs = [_detailed(points, r, p) for r in rows]
    checks: List[Tuple[float, float]] = []
    while True:
        steady = steady_state(runs[-1].waves, s.window_waves, s.tolerance_pct)
        agree, worst = criterion_b(p, runs[-3:], s.window_waves, s.tolerance_pct)
        checks.append((steady.spread_pct, worst))
        runs[-1].check = checks[-1]
        if (steady.met and agree) or 2 * d > s.max_detail_waves:
            break
        d *= 2
        nr = p.rows_for(d, above=runs[-1].rows, exact=p.period_waves() <= d)
        if nr >= p.rows or sum(p.waves(r.rows) for r in runs) + p.waves(nr) >= p.waves(p.rows):
            return _whole(points, p, runs, f"steady state not reached with {d // 2} detailed waves (wave spread "
                                         f"{steady.spread_pct:.2f} %, rate difference {worst:.2f} %) and the next "
                                         "doubling would simulate at least as many waves as the whole workload", t0)
        runs.append(_detailed(points, nr, p))
    return _extrapolated(points, p, runs, steady, agree, worst, t0)


def criterion_b(p: Plan, runs: Sequence[Detailed], window: int, tolerance_pct: float) -> Tuple[bool, float]:
    """Criterion (b) over the three latest detailed runs: :func:`wave_rates_agree` of the two larger,
    :func:`rates_agree` of the communication phases (in rows, relative to the extrapolated total) and
    :func:`chunks_steady` of the largest."""
    a, b, c = runs
    ok_g, diff_g = wave_rates_agree(b.waves, c.waves, window, tolerance_pct)
    mean = window_mean(c.waves, window)
    gemm = extrapolate_gemm(c.phases[0], p.rounds(c.rows), p.rounds(p.rows), mean,
                            Fraction(p.stage_wgs, p.cus)) if mean is not None else c.phases[0]
    comm = [r.phases[1:] for r in runs]
    total = gemm + sum(extrapolate(x, y, b.rows, c.rows, p.rows) for x, y in zip(b.phases[1:], c.phases[1:]))
    ok_c, diff_c = rates_agree(comm, [(r.rows, r.rows) for r in runs], (p.rows, p.rows), tolerance_pct, total)
    return ok_g and ok_c and chunks_steady(p, c.rows, window), max(diff_g, diff_c)


def chunks_steady(p: Plan, rows: int, window: int) -> bool:
    """A scheme that cuts the GEMM into one chunk per GPU (T3's ring) behaves per chunk: its wave time depends
    on where a wave falls in its chunk, so each chunk of the run must itself hold the two windows and the
    first wave of criterion (a) (``2 x window + 1`` waves); always true without chunks."""
    return p.chunks == 1 or p.waves(rows) / p.chunks >= 2 * window + 1


def _criterion(s) -> str:
    w, t = s.window_waves, s.tolerance_pct
    return (f"(a) the mean of the last {w} complete GEMM waves of the largest detailed run within {t:g} % of the "
            f"mean of the {w} before them; (b) the mean of the last {w} waves of the two largest runs within {t:g} "
            f"% of each other, and every communication phase extrapolated to the full workload from the two "
            f"smaller and from the two larger runs within {t:g} % of the extrapolated total, and with a GEMM cut "
            f"into one chunk per GPU (T3) each chunk of the largest run holding at least {2 * w + 1} waves")


def _sampling_stats(point: Resolved, p: Plan, runs: List[Detailed], sampled: bool, note: str,
                    steady: Optional[Steady] = None, agree: bool = False, worst: float = float("inf")) -> Stats:
    exp = point.exp
    s = exp.simulation.sampling
    out = sampling_header(s.mode, sampled, note, "rows", "every GEMM kernel of the workload (its waves) with the "
                          "communication that overlaps it and the kernels after it",
                          _criterion(s), "t3sim/sampling/plan.py")
    out.add("rows", p.rows, "count", "rows of the full workload (tokens, or the simulated M of a GEMM shape)")
    out.add("waves", float(p.waves(p.rows)), "waves", "GEMM waves (WGs / stage_wgs) of the full workload")
    out.add("stage_wgs", p.stage_wgs, "count", "WGs per wave: the GEMM's WG slots on the GPU")
    need = footprint_B(point.kernel)
    out.add("full_footprint_B", need, "B", "A, B, C and a receive buffer of the full workload on one GPU (the "
                                           "detailed runs' footprints are checked against HBM, this one is not)")
    out.add("full_footprint_fits_hbm", need <= hbm_capacity_B(exp.system.hbm), "bool",
            "the full workload's footprint fits one GPU's HBM")
    for i, r in enumerate(runs):
        out.add(f"detailed.run{i}.rows", r.rows, "count", f"rows of detailed run {i}")
        out.add(f"detailed.run{i}.waves", float(p.waves(r.rows)), "waves", f"GEMM waves of detailed run {i}")
        out.add(f"detailed.run{i}.wave_us", [t / TICKS_PER_US for t in r.waves], "us",
                f"complete GEMM wave times of detailed run {i} (GPU 0)")
        detailed_stats(out, i, [(ph, f"{ph} phase time of detailed run {i}") for ph in ("gemm", "rs", "ag")], r.phases,
                       r.wall_s)
        if r.check is not None:
            out.add(f"detailed.run{i}.wave_spread_pct", r.check[0], "%",
                    f"criterion (a) with run {i} the largest (module doc), percent")
            out.add(f"detailed.run{i}.rate_difference_pct", r.check[1], "%",
                    f"criterion (b) with runs {i - 2}-{i}, percent of the total")
    detailed_events(out, runs)
    if not sampled:
        return out
    b, c = runs[-2], runs[-1]
    out.add("waves_detailed", float(p.waves(c.rows)), "waves", "GEMM waves of the larger run extrapolated from")
    out.add("waves_extrapolated", float(p.waves(p.rows - c.rows)), "waves",
            "GEMM waves advanced at the steady-state rates (not simulated)")
    out.add("criterion_met", bool(steady.met and agree), "bool", "the steady-state criterion held")
    out.add("wave_spread_pct", steady.spread_pct if steady.window else None, "%",
            "criterion (a): |mean of the last window - mean of the window before| / the last mean, percent")
    out.add("window_mean_wave_us", steady.mean_ticks / TICKS_PER_US, "us",
            "criterion (a): mean time of the last window's waves")
    out.add("rate_difference_pct", worst, "%", "criterion (b): largest difference between the phases (and totals) "
                                               "extrapolated from the two smaller and from the two larger runs, "
                                               "percent of the total")
    dw = p.waves(c.rows) - p.waves(b.rows)
    mean = window_mean(c.waves, s.window_waves)
    out.add("rate.gemm_us_per_wave", float(mean) / TICKS_PER_US if mean is not None else None, "us/wave",
            "steady GEMM wave time of the larger run (its last window): the rate the GEMM phase advances at")
    for ph, v0, v1 in zip(("rs", "ag"), b.phases[1:], c.phases[1:]):
        out.add(f"rate.{ph}_us_per_wave", float(Fraction(v1 - v0) / dw) / TICKS_PER_US, "us/wave",
                f"{ph} phase time per added GEMM wave's rows (the steady-state rate)")
    sb, sc = b.results[0].stats, c.results[0].stats
    for name, key, desc in (("dram_B_per_wave", "gpu0.hbm.bytes", "GPU 0 DRAM bytes"),
                            ("link_B_per_wave", "network.link.", "bytes sent on all links")):
        vb = sum(v.value for n, v in sb.items() if n.startswith(key) and (n == key or n.endswith(".bytes_sent")))
        vc = sum(v.value for n, v in sc.items() if n.startswith(key) and (n == key or n.endswith(".bytes_sent")))
        out.add(f"rate.{name}", float(Fraction(vc - vb) / dw), "B/wave", f"{desc} per added GEMM wave")
    return out


def _whole(points: Sequence[Resolved], p: Plan, runs: List[Detailed], note: str, t0: float) -> list:
    """Simulate the workload whole (sampling declined), recording why."""
    full = simulate_shared([with_rows(e.exp, p.rows) for e in points])
    out = []
    for point, res in zip(points, full):
        st = Stats()
        st.merge("", res.stats)
        st.merge("sampling", _sampling_stats(point, p, runs, False, note))
        out.append(result(point.exp, res, st, dict(res.summary),
                           {"wall_s": round(time.perf_counter() - t0, 3), "sampled": False}))
    return out


def _extrapolated(points: Sequence[Resolved], p: Plan, runs: List[Detailed], steady: Steady, agree: bool,
                  worst: float, t0: float) -> list:
    b, c = runs[-2], runs[-1]
    label = (f"detailed runs of {b.rows} and {c.rows} of {p.rows} rows, {float(p.waves(c.rows)):.2f} of "
             f"{float(p.waves(p.rows)):.2f} GEMM waves")
    note = "extrapolated" + ("" if steady.met and agree else " although the steady-state criterion failed")
    out = []
    for i, point in enumerate(points):
        exp = point.exp
        mean = window_mean(c.waves, exp.simulation.sampling.window_waves)
        gemm = extrapolate_gemm(c.phases[0], p.rounds(c.rows), p.rounds(p.rows), mean, Fraction(p.stage_wgs, p.cus))
        ext = extrapolate_stats(b.results[i].stats, c.results[i].stats, b.rows, c.rows, p.rows, label, {
            "time.gemm_us": (gemm / TICKS_PER_US, "the larger run's GEMM phase plus the CU rounds it lacks at its "
                                                  "steady wave time")})
        g, r, a = (_ticks(ext, f"time.{ph}_us") for ph in ("gemm", "rs", "ag"))
        full_marks = phase_marks({"gemm": g, "rs": r, "ag": a}, list(c.marks))
        ext = move_with_marks(b.results[i].stats, c.results[i].stats, ext, b.marks, c.marks, full_marks)
        phases = point.scheme.compose(Phases(g, r, a, g + r + a))
        st = Stats()
        for name, v in ext.items():
            if name == "time.total_us":
                v = type(v)(phases.total / TICKS_PER_US, v.unit, v.description)
            elif name == "sim.events":
                v = type(v)(sum(int(x.results[i].stats.value(name)) for x in runs), v.unit,
                            "simpy events processed [sampled: summed over all detailed runs, not extrapolated]")
            st.add(name, v.value, v.unit, v.description)
        st.merge("sampling", _sampling_stats(point, p, runs, True, note, steady, agree, worst))
        summary = {**c.results[i].summary, **phases.summary(), **traffic_summary(st)}
        out.append(result(exp, c.results[i], st, summary,
                           {"wall_s": round(time.perf_counter() - t0, 3), "sampled": True}))
    return out
