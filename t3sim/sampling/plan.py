"""Sampled simulation: detailed runs of a workload's first GEMM waves, the rest advanced at steady-state rates
(``simulation.sampling``).

The field's GPU sampling methods simulate part of a kernel in detail and project the rest once its behaviour
is stable: PKA (Baddouh et al., *Principal Kernel Analysis*, MICRO'21, the kernel sampling of Accel-Sim)
stops a kernel's detailed simulation when its IPC has stabilised and projects the remaining cycles at that
IPC; TBPoint (Huang et al., IISWC'14) groups a kernel's thread blocks into homogeneous regions and simulates
one representative region per group; Photon (Liu et al., MICRO'23) samples at the warp and basic-block level
and stops once the sampled units' timing is stable. A GEMM's *wave* (stage: the WGs the CUs hold at once) is
the natural unit here: after the first waves have warmed the L2 and the memory controllers, every wave loads
the same kind of A and B slices and stores the same kind of output, and so do the collectives that consume
the output (their bytes are a fixed amount per wave of output rows).

What a sampled run does (:func:`t3sim.sampling.waves.simulate_sampled`; this module's own reading of those
methods):

1. **Detailed runs.** The workload is cut to its first rows (``workload.tokens`` or ``workload.gemm.M``, a
   multiple of whole tile rows, every GPU's chunk whole): runs of about ``d/4``, ``d/2`` and ``d`` waves
   (``d = detail_waves``), each ending with a last wave as full as the full workload's where the tile grid
   allows (:meth:`Plan.rows_for`), are simulated in full detail -- GEMM, the communication that overlaps it
   (T3's tracker-triggered DMA, concurrent or chunked collectives) and the kernels after it. Each is exactly
   the full workload's first waves followed by the same kind of tail: the GEMM's dispatch order walks the
   rows (``row_major``), so its first waves are the full kernel's.
2. **Steady state** (:func:`steady_state`, :func:`rates_agree`), both required:
   (a) in the largest run, the mean time of the last ``window_waves`` complete GEMM waves (a wave: the time
   between the retirements of each ``stage_wgs``-th WG of GPU 0's GEMM kernels) and that of the
   ``window_waves`` before them differ by at most ``tolerance_pct`` (PKA's test of a stable IPC over
   consecutive intervals); (b) the rates hold as the workload grows: the steady wave time of the two larger
   runs differs by at most ``tolerance_pct`` (:func:`wave_rates_agree`; it does not where a scheme's structure
   scales with the rows, e.g. T3's ring chunks of ``1/tp`` of the GEMM), and every communication phase
   extrapolated from the two smaller and from the two larger runs differs by at most ``tolerance_pct`` of
   the extrapolated total, and a GEMM cut into one chunk per GPU (T3) has chunks of at least
   ``2 x window_waves + 1`` waves in the largest run (:func:`t3sim.sampling.waves.criterion_b`). If either fails the detailed runs double
   (the two larger runs are kept) up to ``max_detail_waves``; when the next run would reach the workload, or
   the detailed runs would hold as many waves as the workload, it is simulated whole instead (``sampling.sampled`` false), and a run that stops at ``max_detail_waves`` is extrapolated
   with ``sampling.criterion_met`` false.
3. **Extrapolation** (:func:`extrapolate_gemm`, :func:`extrapolate`, :func:`extrapolate_stats`): the GEMM
   phase is the largest run's plus the CU rounds it lacks (:meth:`Plan.rounds`: a last wave of at most one
   WG per CU runs each WG at the CU's whole rate, so GEMM time steps with the busiest CU's WG count) at its
   steady wave time (the window of (a)); with ``r`` the row count and ``B``, ``C`` the two largest runs, every
   other additive statistic (times, bytes, counts, cycles: per wave they grow by a fixed amount in steady
   state) is ``v_C + (v_C - v_B) (r - r_C) / (r_C - r_B)``: the remaining ``r - r_C`` rows advanced at the
   per-row rates the two runs differ by -- DRAM bytes per wave, link bytes per wave, the communication
   phases per wave -- with warm-up and drain taken from the detailed run. Integer statistics stay integers (rounded). Statistics that do not add up over
   waves (means, maxima, percentiles, rates, ratios, histograms, text) are the largest detailed run's.
   Every statistic keeps its unit; its description is labelled ``[sampled: ...]``. A scheme's composed total
   (e.g. the ideal schemes' ``max(GEMM, RS) + AG``) is composed again from the extrapolated phases.

``stats.json`` says what was sampled under ``sampling.*``: the kernels (every GEMM kernel of the workload
with what overlaps it), rows and waves of the full workload and of each detailed run, the waves extrapolated,
the criterion and whether it was met, the wave times, and the per-wave rates used.

Limits: workloads given by a model sub-layer or a GEMM shape (not a GEMV or an embedding layer, not a
trace file, whose shape is fixed), with a ``row_major`` WG order; no ``--timeline`` (a timeline traces one
detailed run). A scheme whose behaviour changes with the rows per GPU chunk relative to a wave (T3's ring
chunks are ``1/tp`` of the GEMM) converges only once each chunk spans several waves: the rate criterion
catches it (docs/performance.md, sampled simulation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from math import gcd, lcm
from typing import List, Optional, Sequence, Tuple, Union

from t3sim.compute.gemm_kernel import stage_wgs
from t3sim.config.experiment import ExperimentConfig
from t3sim.errors import InputError
from t3sim.results.store import RunResult
from t3sim.results.stats import Stats
from t3sim.sim.clock import TICKS_PER_US
from t3sim.system.core import Resolved, resolve
from t3sim.system.kernels import point_kernel

FIELD = "simulation.sampling.mode"
#: units of statistics that add up over waves (extrapolated); any other unit is the largest detailed run's
ADDITIVE_UNITS = {"count", "B", "us", "ns", "ps", "ticks", "cycles"}
#: statistic names (last component) that do not add up over waves although their unit would
NON_ADDITIVE = re.compile(r"(^|_)(mean|max|min|peak|p\d+|ever|bin|capacity|storage|start)(_|$)")


# ---------------------------------------------------------------- the pure parts (unit-tested)

@dataclass(frozen=True)
class Steady:
    """The wave-time part of the steady-state criterion over a run's complete waves (ticks)."""

    met: bool
    window: Tuple[int, ...]  #: the wave times looked at (ticks), oldest first
    mean_ticks: float
    spread_pct: float  #: max |wave - mean| / mean, percent (inf when there was no window)


def wave_times(retire_ticks: Sequence[int], start_tick: int, stage_wgs: int) -> List[int]:
    """Times of the complete waves (ticks): wave ``k`` ends when the ``k * stage_wgs``-th WG retires (WGs
    counted in retirement order over every GEMM kernel of the GPU), the first from ``start_tick``."""
    ends = sorted(int(t) for t in retire_ticks)
    out, prev = [], int(start_tick)
    for k in range(1, len(ends) // stage_wgs + 1):
        t = ends[k * stage_wgs - 1]
        out.append(t - prev)
        prev = t
    return out


def steady_state(waves: Sequence[int], window: int, tolerance_pct: float) -> Steady:
    """Criterion (a): the mean of the last ``window`` complete waves and the mean of the ``window`` waves before
    them (never the first wave, which includes the launch and the cold L2) differ by at most ``tolerance_pct``
    percent of the later mean. Means over windows, not single waves: a wave's time may vary periodically (its
    WGs' share of each B column slice repeats every ``lcm(tiles_n, stage_wgs) / stage_wgs`` waves) while the
    rate is steady. ``window`` holds the last ``2 x window`` wave times, ``spread_pct`` the difference."""
    w = tuple(int(x) for x in waves[1:][-2 * window:])
    if len(w) < 2 * window or window < 1:
        return Steady(False, w, float(sum(w)) / len(w) if w else 0.0, float("inf"))
    before, last = sum(w[:window]) / window, sum(w[window:]) / window
    spread = 100.0 * abs(last - before) / last if last > 0 else float("inf")
    return Steady(spread <= tolerance_pct, w, last, spread)


def rates_agree(phases: Sequence[Sequence[int]], xs: Sequence[Sequence[int]], x_full: Sequence[int],
                tolerance_pct: float, total: Optional[int] = None) -> Tuple[bool, float]:
    """Criterion (b): ``phases[i]`` = the phase times (ticks) of detailed run ``i`` of three, ``xs[i]`` the
    value of each phase's extrapolation variable in that run (:meth:`Plan.x`) and ``x_full`` in the full
    workload. Each phase extrapolated to the full workload from runs 0-1 and from runs 1-2 (the rates measured
    at two sizes) differ by at most ``tolerance_pct`` percent of the total from runs 1-2, and so do the
    totals. Returns (met, the largest difference in percent of that total)."""
    first = [Fraction(extrapolate(a, b, xa, xb, xf)) for a, b, xa, xb, xf in zip(phases[0], phases[1], xs[0], xs[1], x_full)]
    second = [Fraction(extrapolate(b, c, xb, xc, xf)) for b, c, xb, xc, xf in zip(phases[1], phases[2], xs[1], xs[2], x_full)]
    first.append(sum(first))
    second.append(sum(second))
    total = second[-1] if total is None else Fraction(total)
    if total <= 0:
        return False, float("inf")
    worst = max(abs(b - a) for a, b in zip(first, second)) / total * 100
    return worst <= tolerance_pct, float(worst)


def window_mean(waves: Sequence[int], window: int) -> Optional[Fraction]:
    """Mean of the last ``window`` complete waves, never the first (None: too few waves)."""
    w = list(waves[1:])[-window:]
    return Fraction(sum(w), len(w)) if len(w) == window and window > 0 else None


def wave_rates_agree(waves_small: Sequence[int], waves_large: Sequence[int], window: int,
                     tolerance_pct: float) -> Tuple[bool, float]:
    """Criterion (b), GEMM part: the steady wave time (:func:`window_mean`) of the smaller and of the larger
    detailed run differ by at most ``tolerance_pct`` percent of the larger's: the rate does not change as
    the workload grows (it does where a scheme's structure scales with the rows, e.g. T3's ring chunks)."""
    a, b = window_mean(waves_small, window), window_mean(waves_large, window)
    if a is None or b is None or b <= 0:
        return False, float("inf")
    diff = float(abs(a - b) / b * 100)
    return diff <= tolerance_pct, diff


def extrapolate_gemm(gemm_ticks: int, rounds: int, rounds_full: int, wave_ticks: Fraction,
                     rounds_per_wave: Fraction) -> int:
    """The GEMM phase of the full workload (ticks): the detailed run's, plus the CU rounds it lacks at the
    steady wave time (``wave_ticks`` per ``rounds_per_wave`` rounds: WGs per CU in a full wave). Rounds, not
    waves: a last wave of at most one WG per CU runs each WG at the CU's whole rate, so GEMM time is a
    staircase in WGs whose steps are the busiest CU's WG count (:meth:`Plan.rounds`)."""
    f = Fraction(gemm_ticks) + (rounds_full - rounds) * Fraction(wave_ticks) / Fraction(rounds_per_wave)
    return int(f.numerator * 2 + f.denominator) // (2 * f.denominator)


def extrapolate(v_small, v_large, rows_small: int, rows_large: int, rows: int):
    """``v_large + (v_large - v_small) (rows - rows_large) / (rows_large - rows_small)``: the value at ``rows``
    rows on the line through the two detailed runs; exact (fractions), an int for int inputs (rounded half
    away from zero) and never below zero (an additive statistic)."""
    if rows_large <= rows_small:
        raise ValueError(f"extrapolation needs rows_large > rows_small, got {rows_small}, {rows_large}")
    f = Fraction(v_large) + (Fraction(v_large) - Fraction(v_small)) * Fraction(rows - rows_large,
                                                                              rows_large - rows_small)
    f = max(f, Fraction(0))
    if isinstance(v_small, int) and isinstance(v_large, int):
        return int(f.numerator * 2 + f.denominator) // (2 * f.denominator)
    return float(f)


def additive(name: str, unit: str, value) -> bool:
    """Does statistic ``name`` add up over waves (so it is extrapolated)? Numbers (not bools) of an additive
    unit whose last name component is not a mean, maximum, percentile, bin or capacity."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or unit not in ADDITIVE_UNITS:
        return False
    return not NON_ADDITIVE.search(name.rsplit(".", 1)[-1])


def extrapolate_stats(small: Stats, large: Stats, rows_small: int, rows_large: int, rows: int,
                      label: str, given: Optional[dict] = None, unit: str = "rows") -> Stats:
    """``large``'s statistics, the additive ones extrapolated to ``rows`` (:func:`extrapolate`), each
    description labelled with ``label`` and how the value was obtained. ``given``: name -> (value, how) for
    statistics extrapolated otherwise (the GEMM phase, :func:`extrapolate_gemm`); ``unit``: what ``rows``
    counts (rows, or an embedding layer's tables), for the labels."""
    given = given or {}
    out = Stats()
    for name, st in large.items():
        if name in given:
            v, how = given[name]
        elif name in small and additive(name, st.unit, st.value) and additive(name, st.unit, small.value(name)):
            v = extrapolate(small.value(name), st.value, rows_small, rows_large, rows)
            how = f"extrapolated to the full workload in {unit}"
        else:
            v, how = st.value, "of the largest detailed run, not extrapolated"
        out.add(name, v, st.unit, f"{st.description} [sampled: {how}; {label}]")
    return out


# ---------------------------------------------------------------- a sampled point's results

def sampling_header(mode: str, sampled: bool, note: str, unit: str, kernels: str, criterion: str,
                    module: str) -> Stats:
    """The ``sampling.*`` statistics every sampled mode records first: the mode, whether the result was
    extrapolated (from detailed runs of the first ``unit``) and why, what was sampled and the criterion."""
    out = Stats()
    out.add("mode", mode, "text", "simulation.sampling.mode of this run")
    out.add("sampled", sampled, "bool", f"true: the result is extrapolated from detailed runs of the first {unit}; "
                                        "false: the workload was simulated whole")
    out.add("note", note, "text", "why the run was or was not extrapolated")
    out.add("kernels", kernels if sampled else "none", "text", "what was sampled")
    out.add("criterion", criterion, "text", f"the steady-state criterion ({module})")
    return out


def detailed_stats(out: Stats, i: int, times: Sequence[Tuple[str, str]], ticks: Sequence[int], wall_s: float) -> None:
    """Add detailed run ``i``'s phase times (``detailed.run<i>.<phase>_us`` from ``ticks``; ``times``: each
    phase's name and description) and its wall time (s) to ``out``."""
    for (name, desc), t in zip(times, ticks):
        out.add(f"detailed.run{i}.{name}_us", t / TICKS_PER_US, "us", desc)
    out.add(f"detailed.run{i}.wall_s", round(wall_s, 3), "s", f"wall time of detailed run {i}")


def detailed_events(out: Stats, runs: Sequence) -> None:
    """Add ``detailed.events``: the simpy events all detailed ``runs`` (each with its ``results``) processed."""
    out.add("detailed.events", sum(int(r.results[0].stats.value("sim.events")) for r in runs), "count",
            "simpy events processed by all detailed runs")


def result(exp, res, stats: Stats, summary: dict, meta: dict):
    """A sampled point's :class:`~t3sim.results.store.RunResult`: ``stats`` and ``summary`` with ``res``'s meta
    updated by ``meta``."""
    return RunResult(exp.name, exp.model_dump(mode="json"), stats, summary, exp.simulation.seed,
                     {**res.meta, **meta}, None)


# ---------------------------------------------------------------- the workload cut to its first rows

def _reject(found: str, allowed: str = "simulation.sampling.mode=off") -> InputError:
    return InputError(FIELD, found, allowed)


def rows_of(exp: ExperimentConfig) -> int:
    """The rows the sampling cuts: tokens (a model sub-layer) or the simulated M (a GEMM shape)."""
    w = exp.workload
    if w.kind == "model" and w.trace is None:
        return w.num_tokens
    if w.kind == "gemm":
        return w.gemm.sim_M
    what = f"a trace file ({w.trace})" if w.trace else f"a {w.kind} workload"
    raise _reject(f"waves with {what}, whose rows cannot be cut",
                  "sampling of a workload.model sub-layer (without workload.trace) or a workload.gemm shape")


def with_rows(exp: ExperimentConfig, rows: int) -> ExperimentConfig:
    """``exp`` with its workload cut to ``rows`` rows and sampling off (one detailed run)."""
    d = exp.model_dump(mode="json", exclude_unset=True)  # the fields as given: validators see what was set
    d.setdefault("simulation", {})["sampling"] = {"mode": "off"}
    w = d["workload"]
    if exp.workload.kind == "gemm":
        w["gemm"]["M"] = rows * exp.workload.gemm.scale_M
    else:
        w["tokens"] = rows
    try:
        return ExperimentConfig.model_validate(d)
    except ValueError as exc:
        raise _reject(f"waves, but the workload cut to {rows} rows is invalid "
                      f"({' '.join(str(exc).split())[:300]})") from None


@dataclass(frozen=True)
class Plan:
    """How a sampled run cuts the workload (rows: tokens, or a GEMM shape's simulated M)."""

    rows: int  #: rows of the full workload
    unit: int  #: detailed runs hold a multiple of this many rows (whole tile rows on every GPU, whole shards)
    rows_per_tile_row: int  #: rows per GEMM tile row (tile_m, x tp when each GPU's GEMM gets rows / tp)
    tiles_n: int
    stage_wgs: int
    chunks: int  #: the WGs must split into this many equal chunks (a fused GEMM-RS: one per GPU; else 1)
    cus: int  #: CUs the WGs are spread over

    def rounds(self, rows: int) -> int:
        """WGs the busiest CU runs: ``ceil(WGs / cus)`` (the dispatcher spreads WGs over the CUs evenly)."""
        return -(-self.wgs(rows) // self.cus)

    def wgs(self, rows: int) -> int:
        """GEMM WGs of ``rows`` rows."""
        return -(-rows // self.rows_per_tile_row) * self.tiles_n

    def waves(self, rows: int) -> Fraction:
        """GEMM waves of ``rows`` rows (WGs / stage_wgs, exact)."""
        return Fraction(self.wgs(rows), self.stage_wgs)

    def period_waves(self) -> Fraction:
        """Waves after which a run's last-wave WG count repeats (as rows grow by :attr:`unit` steps, WGs a
        multiple of :attr:`chunks`): runs this many waves apart end alike."""
        step = self.tiles_n * self.unit // self.rows_per_tile_row  # WGs per unit of rows
        units = lcm(self.stage_wgs // gcd(self.stage_wgs, step), self.chunks // gcd(self.chunks, step))
        return self.waves(units * self.unit)

    def rows_for(self, waves: int, above: int = 0, exact: bool = False) -> int:
        """Rows of a detailed run of at least ``waves`` waves and more than ``above`` rows (a multiple of
        :attr:`unit` whose WGs are a multiple of :attr:`chunks`). ``exact``: the fewest whose last wave holds
        exactly as many WGs as the full workload's (the run and the full workload then differ by whole waves;
        there is one within :meth:`period_waves`), below the full workload. Otherwise, or if there is none: the
        candidate below ``waves + 1`` waves (above ``above``) whose last wave is nearest in fullness to the
        full workload's (the fewest rows at equal distance)."""
        tail_wgs = self.wgs(self.rows) % self.stage_wgs
        tail = self.waves(self.rows) % 1
        k = max(1, -(-waves * self.stage_wgs * self.rows_per_tile_row // (self.tiles_n * self.unit)),
                above // self.unit + 1)
        first = self.waves(k * self.unit)
        limit = first + (self.period_waves() + 1 if exact else 1)
        best = None
        while True:
            r = k * self.unit
            w = self.waves(r)
            if w >= limit:
                if best is not None:
                    return best[1]
                limit += 1  # no candidate with whole chunks yet
            if self.wgs(r) % self.chunks == 0:
                if exact and self.wgs(r) % self.stage_wgs == tail_wgs and r < self.rows:
                    return r
                if w < first + 1 and (best is None or abs(w % 1 - tail) < best[0]):
                    best = (abs(w % 1 - tail), r)
            k += 1


def plan(point: Union[Resolved, ExperimentConfig]) -> Plan:
    """The sampling plan of a point (raises InputError for a workload that cannot be cut); ``point``: the
    resolved point (:func:`t3sim.system.core.resolve`: its kernel and scheme), or its config, resolved here."""
    exp = point.exp if isinstance(point, Resolved) else point
    rows = rows_of(exp)
    r = point if isinstance(point, Resolved) else resolve(exp)
    k = r.kernel
    if k.wg_order.get("kind") != "row_major":
        raise _reject(f"waves with a {k.wg_order.get('kind')} WG order, whose first waves are not the first rows'",
                      "sampling of a row_major GEMM")
    tp = exp.workload.tp
    per_gpu = exp.workload.direction in ("a2a_gemm", "gemm_a2a")  # each GPU's expert GEMM gets rows / tp
    per_tile_row = k.tile_m * (tp if per_gpu else 1)
    unit = lcm(per_tile_row, tp * tp if per_gpu else tp)
    chunks = tp if r.scheme.fused_rs else 1  # T3's ring cuts the WGs into one chunk per GPU
    p = Plan(rows, unit, per_tile_row, k.tiles_n, stage_wgs(exp.system.gpu, k), chunks, exp.system.gpu.num_cus)
    probe = with_rows(exp, p.rows_for(1))
    kp = point_kernel(probe)
    if (kp.tile_m, kp.tile_n, kp.tiles_n, kp.num_wgs) != (k.tile_m, k.tile_n, k.tiles_n, p.wgs(p.rows_for(1))):
        raise _reject(f"waves, but the GEMM cut to {p.rows_for(1)} rows is tiled differently ({kp.tile_m}x{kp.tile_n}, "
                      f"{kp.tiles_n} tile columns vs {k.tile_m}x{k.tile_n}, {k.tiles_n})")
    return p


def detailed_configs(point: Union[Resolved, ExperimentConfig]) -> List[ExperimentConfig]:
    """The largest runs a sampled point may simulate in detail (for the pre-run checks of
    :mod:`t3sim.exec.checks`): the doubling's largest run below the full workload, and the whole workload
    when the doubling may end in a full simulation. ``point``: resolved (with its plan) or a config."""
    exp = point.exp if isinstance(point, Resolved) else point
    s = exp.simulation.sampling
    p = point.plan if isinstance(point, Resolved) and point.plan is not None else plan(point)
    d = s.detail_waves
    last = ladder(p, d)[-1]
    if last >= p.rows:
        return [with_rows(exp, p.rows)]
    while 2 * d <= s.max_detail_waves:
        nr = p.rows_for(2 * d, above=last, exact=p.period_waves() <= 2 * d)
        if nr >= p.rows:
            return [with_rows(exp, last), with_rows(exp, p.rows)]
        d, last = 2 * d, nr
    return [with_rows(exp, last)]


def ladder(p: Plan, detail_waves: int) -> List[int]:
    """Rows of the three first detailed runs, strictly increasing. When runs ending like the full workload
    recur within ``d`` waves (:meth:`Plan.period_waves`), the first three such runs from ``d/4`` waves on
    (each at least a wave beyond the last); otherwise about ``d/4``, ``d/2`` and ``d`` waves, each ending as
    nearly like the full workload as the tile grid allows (:meth:`Plan.rows_for`)."""
    exact = p.period_waves() <= detail_waves
    out: List[int] = []
    for w in (max(1, detail_waves // 4), max(1, detail_waves // 2), detail_waves):
        if out and exact:
            w = max(w, int(p.waves(out[-1])) + 1)
        out.append(p.rows_for(w, above=out[-1] if out else 0, exact=exact))
    return out
