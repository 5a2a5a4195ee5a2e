"""Simulation side of ``t3sim validate`` for GEMM / copy contention rows.

A row of ``gemm_copy_contention.csv`` times one GEMM (``M x K`` by ``K x N``, bf16, the
:func:`~t3sim.system.kernels.gemm_kernel_record` kernel that ``t3sim validate`` checks against
gemm_calibration.csv) alone and while copies run without pause on other streams
(:data:`BACKGROUNDS`). Every (row, background) pair is one independent simulation
(:func:`simulate_contention_rows` spreads them over processes), as are the copies alone.

How a pair is simulated depends on what executes the copies (``copy_engine.d2d_path``):

* **SM copy kernel** (``d2d_path: sm``; H200, measured): the copy kernels and the GEMMs are kernels on
  the GPU's one WG dispatcher (:class:`~t3sim.compute.dispatcher.CuDispatcher`), dispatched in launch
  order. Back-to-back on two streams they settle into a lockstep of period ``P``: copy ``i+1`` (issued when copy ``i`` ends) waits
  behind GEMM ``i`` until GEMM ``i``'s last stage is dispatched, then takes the CUs that stage leaves
  and frees; GEMM ``i+1`` (issued when GEMM ``i`` ends) waits behind copy ``i+1``. The simulation
  starts in that state: the previous GEMM's last stages (``GemmKernel.start(first_wg)``), the copy kernels launched behind
  it, then the GEMM, launched when the last stage ends, with the copy streams issuing their next copy
  whenever one ends. The GEMM time is the GEMM's CUDA-event interval: from the previous GEMM's end to
  its end, i.e. ``P``. By the lockstep, each copy's event interval is ``P`` too (one copy per GEMM per
  stream, as measured); ``copy_run_us`` is the copy kernel's own span (launch to last CTA).
* **copy engines** (``d2d_path: ce``, and always for host copies): the copies run beside the GEMM;
  they are started ``WARM_US`` before it, the GEMM time is launch to end, and the copy slowdown is the
  copies' alone rate over their rate (bytes done) during the GEMM.

Times are microseconds; slowdowns are ratios.
"""

from __future__ import annotations

import hashlib
import json
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from t3sim.compute.dispatcher import CuDispatcher
from t3sim.compute.gemm_kernel import GemmKernel
from t3sim.compute.sinks import CachedLocalOutput
from t3sim.compute.memhier import MemoryHierarchy
from t3sim.config.system import SystemConfig
from t3sim.config.workload import DTYPE_BYTES
from t3sim.dma.copy_engine import CopyEngines
from t3sim.dma.copy_kernel import SMCopyKernel
from t3sim.sim.clock import TICKS_PER_NS, ns_to_ticks
from t3sim.sim.engine import Engine
from t3sim.system.kernels import gemm_kernel_record
from t3sim.workload.wg_order import wg_order

MiB = 1 << 20
GiB = 1 << 30
#: background copies of each measured column: (direction, bytes) per stream (H200 measurements, experiments/validation/README.md)
BACKGROUNDS: Dict[str, Tuple[Tuple[str, int], ...]] = {
    "d2d1": (("d2d", 256 * MiB),),
    "d2d2": (("d2d", 256 * MiB), ("d2d", 256 * MiB)),
    "pcie": (("h2d", 64 * MiB), ("d2h", 64 * MiB)),
}
#: copy-engine backgrounds start this long before the GEMM (they reach their steady rate)
WARM_US = 10.0
COPY_BASE_B = 4 * GiB  # copy buffers live above the GEMM's operands


@dataclass(frozen=True)
class ContentionOutcome:
    """One simulated (row, background): times in us, ratios, wall-clock seconds."""

    gemm_us: float
    copy_us: float  # a copy's CUDA-event time (SM path: the lockstep period; CE path: nbytes / rate in the GEMM window)
    copy_run_us: float  # a copy's own span (SM path: launch to last CTA; CE path: = copy_us)
    wall_s: float
    detail: Dict[str, float]


def _us(ticks: int) -> float:
    return ticks / TICKS_PER_NS / 1e3


class _Setup:
    """One simulation: engine, memory hierarchy, dispatcher, copiers and the GEMM's operands."""

    def __init__(self, system: SystemConfig, M: int = 0, N: int = 0, K: int = 0, dtype: str = "bf16"):
        self.system = system
        self.eng = Engine(seed=0)
        self.env = self.eng.env
        self.hier = MemoryHierarchy(self.env, system)
        self.disp = CuDispatcher(system.gpu, "gpu0")
        cfg = system.copy_engine
        self.ce = CopyEngines(self.eng, 0, self.hier, cfg)
        self.sm = SMCopyKernel(self.eng, 0, self.hier, self.disp, system.gpu, cfg) if cfg.d2d_path == "sm" else None
        self.done_B: List[Tuple[int, int]] = []  # (tick, bytes) of finished copy requests
        for p in (self.ce, self.sm):
            if p is not None:
                p.on_bytes_done = lambda t, b: self.done_B.append((t, b))
        self.stop = False
        if M:
            self.kernel = gemm_kernel_record(system, M, N, K, dtype)
            eb = DTYPE_BYTES[dtype]
            align = 2 * MiB
            up = lambda x: -(-x // align) * align  # noqa: E731
            self.a, self.b = 0, up(M * K * eb)
            self.c = up(self.b + K * N * eb)
            self.ws = up(self.c + M * N * eb) if self.kernel.split_k > 1 else None  # split-K partials

    def gemm(self, name: str) -> GemmKernel:
        k = self.kernel
        g = GemmKernel(self.eng, name, self.hier, self.system.gpu, k, wg_order(k),
                       self.a, self.b, self.c, CachedLocalOutput(self.hier), dispatcher=self.disp, workspace_B=self.ws)
        g.wg_spans = []  # (cu, seq, start, end) of every WG: when its first WG was dispatched
        return g

    def copier(self, direction: str):
        return self.sm if (direction == "d2d" and self.sm is not None) else self.ce

    def stream(self, i: int, direction: str, nbytes: int, log: List):
        """A stream of back-to-back copies until :attr:`stop`; ``log`` gets each finished :class:`Copy`."""
        src = COPY_BASE_B + 2 * i * GiB
        dst = src + GiB
        while not self.stop:
            c = yield self.copier(direction).copy(src, dst, nbytes, direction)
            log.append(c)

    def bytes_between(self, t0: int, t1: int) -> int:
        return sum(b for t, b in self.done_B if t0 <= t < t1)


def _sm_lockstep(system: SystemConfig, M: int, N: int, K: int, dtype: str, streams) -> Dict[str, float]:
    """GEMM beside SM copy kernels in the steady lockstep (module doc); times in us."""
    s = _Setup(system, M, N, K, dtype)
    env = s.env
    prev = s.gemm("gpu0.gemm_prev")
    slots = prev.slots
    n = s.kernel.num_wgs
    last = n - (prev.stages - 1) * slots
    first = max(0, n - last - slots)  # the last two stages
    logs = [[] for _ in streams]
    out: Dict[str, float] = {"last_stage_wgs": float(last)}

    def run():
        prev_done = prev.start(first_wg=first)
        yield env.timeout(1)  # the copies are issued just after the last stage's launch: queued behind it
        for i, (d, nb) in enumerate(streams):
            env.process(s.stream(i, d, nb, logs[i]))
        yield prev_done
        t_prev = env.now
        g = s.gemm("gpu0.gemm")
        r = yield g.start()
        s.stop = True
        out["gemm_us"] = _us(env.now - t_prev)
        out["gemm_run_us"] = _us(r.duration_ticks)
        out["gemm_first_dispatch_us"] = _us(min(t0 for _cu, _seq, t0, _t1 in g.wg_spans) - t_prev)
        if s.sm.launches:  # the copy kernels issued behind the last stage
            ks = s.sm.launches[:len(streams)]
            out["copy_first_dispatch_us"] = _us(min(k.first_dispatch_tick for k in ks) - t_prev)
            out["copy_last_dispatch_us"] = _us(max(k.last_dispatch_tick for k in ks) - t_prev)
        firsts = [lg[0] for lg in logs if lg]
        if firsts:
            out["copy_run_us"] = max(_us(c.end_tick - c.issue_tick) for c in firsts)
            out["copy_end_after_prev_end_us"] = max(_us(c.end_tick - t_prev) for c in firsts)
        s.eng.finish()

    env.process(run())
    s.eng.run()
    return out


def _ce_beside(system: SystemConfig, M: int, N: int, K: int, dtype: str, streams) -> Dict[str, float]:
    """GEMM beside copy-engine copies started WARM_US earlier; times in us, copy rate in GB/s."""
    s = _Setup(system, M, N, K, dtype)
    env = s.env
    logs = [[] for _ in streams]
    out: Dict[str, float] = {}

    def run():
        for i, (d, nb) in enumerate(streams):
            env.process(s.stream(i, d, nb, logs[i]))
        yield env.timeout(ns_to_ticks(WARM_US * 1e3))
        g = s.gemm("gpu0.gemm")
        t0 = env.now
        r = yield g.start()
        s.stop = True
        out["gemm_us"] = _us(env.now - t0)
        out["gemm_run_us"] = _us(r.duration_ticks)
        out["copy_rate_GBps"] = s.bytes_between(t0, env.now) / (env.now - t0) * 1e3  # B/ps*1e3 = GB/s
        s.eng.finish()

    env.process(run())
    s.eng.run()
    return out


def simulate_gemm_alone(system: SystemConfig, M: int, N: int, K: int, dtype: str = "bf16") -> Dict[str, float]:
    """The GEMM alone on the dispatcher, launch to end (us), as its CUDA events time it."""
    s = _Setup(system, M, N, K, dtype)
    g = s.gemm("gpu0.gemm")
    done = g.start()
    done.callbacks.append(lambda _e: s.eng.finish())
    s.eng.run()
    return {"gemm_us": _us(done.value.duration_ticks)}


def _streams(background) -> Tuple[Tuple[str, int], ...]:
    """A background by name (:data:`BACKGROUNDS`) or given as ``((direction, bytes), ...)`` per stream."""
    return BACKGROUNDS[background] if isinstance(background, str) else tuple(background)


def simulate_copies_alone(system: SystemConfig, background, window_us: float = 0.0) -> Dict[str, float]:
    """The background's copies alone: each stream's copy time (us) and their rate (GB/s of copied bytes).

    SM/CE d2d: one copy per stream, all issued at once, issue to end (back-to-back copies repeat
    it). Host copies: the rate over ``window_us`` (default: one copy's time at the link rate) after
    WARM_US, expressed as the time of one copy at that rate.
    """
    streams = _streams(background)
    s = _Setup(system)
    env = s.env
    logs = [[] for _ in streams]
    out: Dict[str, float] = {}
    if all(d == "d2d" for d, _ in streams):
        evs = [s.copier(d).copy(COPY_BASE_B + 2 * i * GiB, COPY_BASE_B + (2 * i + 1) * GiB, nb, d)
               for i, (d, nb) in enumerate(streams)]
        all_done = env.all_of(evs)
        all_done.callbacks.append(lambda _e: s.eng.finish())
        s.eng.run()
        times = [_us(e.value.duration_ticks) for e in evs]
        out["copy_us"] = max(times)
        out["copy_rate_GBps"] = sum(nb for _, nb in streams) / (max(e.value.end_tick for e in evs)) * 1e3
        return out
    eff = system.copy_engine.host_link_effective_GBps
    win = window_us or max(nb for _, nb in streams) / eff / 1e3

    def run():
        for i, (d, nb) in enumerate(streams):
            env.process(s.stream(i, d, nb, logs[i]))
        yield env.timeout(ns_to_ticks(WARM_US * 1e3))
        t0 = env.now
        yield env.timeout(ns_to_ticks(win * 1e3))
        rate = s.bytes_between(t0, env.now) / (env.now - t0) * 1e3
        out["copy_rate_GBps"] = rate
        out["copy_us"] = sum(nb for _, nb in streams) / rate / 1e3
        s.stop = True
        s.eng.finish()

    env.process(run())
    s.eng.run()
    return out


def simulate_contention(system: SystemConfig, M: int, N: int, K: int, background,
                        dtype: str = "bf16") -> ContentionOutcome:
    """One (row, background) pair (module doc); ``background``: a name of :data:`BACKGROUNDS`, a tuple of
    ``(direction, bytes)`` per stream, or None (the GEMM alone)."""
    t0 = time.perf_counter()
    if background is None:
        d = simulate_gemm_alone(system, M, N, K, dtype)
        return ContentionOutcome(d["gemm_us"], 0.0, 0.0, time.perf_counter() - t0, d)
    streams = _streams(background)
    sm = system.copy_engine.d2d_path == "sm" and all(dr == "d2d" for dr, _ in streams)
    if sm:
        d = _sm_lockstep(system, M, N, K, dtype, streams)
        return ContentionOutcome(d["gemm_us"], d["gemm_us"], d.get("copy_run_us", 0.0), time.perf_counter() - t0, d)
    d = _ce_beside(system, M, N, K, dtype, streams)
    per_copy = sum(nb for _, nb in streams) / max(d["copy_rate_GBps"], 1e-9) / 1e3
    return ContentionOutcome(d["gemm_us"], per_copy, per_copy, time.perf_counter() - t0, d)


# ---------------------------------------------------------------------------- rows in parallel
def _task(args):
    kind, system, payload = args
    if kind == "alone_copy":
        t0 = time.perf_counter()
        d = simulate_copies_alone(system, payload)
        return ContentionOutcome(0.0, d["copy_us"], d["copy_us"], time.perf_counter() - t0, d)
    M, N, K, bg = payload
    return simulate_contention(system, M, N, K, bg)


_FINGERPRINT: Optional[str] = None


def code_fingerprint() -> str:
    """Hash of the simulator's source (every ``t3sim/**/*.py`` but ``analysis/``, ``reproduction/`` and
    ``commands/``, which only report): a cached outcome is reused only by the code that simulated it."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        for f in sorted(root.rglob("*.py")):
            rel = f.relative_to(root).as_posix()
            if rel.split("/")[0] not in ("analysis", "reproduction", "commands"):
                h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
        _FINGERPRINT = h.hexdigest()[:16]
    return _FINGERPRINT


def task_key(system: SystemConfig, task: tuple) -> str:
    """Cache key of one simulation: a hash of the code, the system config and the task (kind, shape, background)."""
    kind, _sys, payload = task
    text = json.dumps([code_fingerprint(), system.model_dump(mode="json"), kind, payload], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def load_cache(path) -> Dict[str, ContentionOutcome]:
    """Outcomes saved by :func:`simulate_contention_rows` (``cache=``); empty if the file does not exist."""
    p = Path(path)
    if not p.exists():
        return {}
    return {k: ContentionOutcome(**v) for k, v in json.loads(p.read_text()).items()}


def simulate_contention_rows(system: SystemConfig, rows: Sequence[dict], backgrounds: Sequence[str] = tuple(BACKGROUNDS),
                             jobs: int = 1, cache=None, only: Optional[Sequence[str]] = None
                             ) -> Tuple[List[Dict[str, ContentionOutcome]], Dict[str, ContentionOutcome]]:
    """Every row alone and with every background, plus each background's copies alone.

    Returns ``(per_row, copies_alone)``: ``per_row[i]`` maps ``"alone"`` and each background to its
    :class:`ContentionOutcome`; ``copies_alone`` maps each background to its copies alone.
    ``jobs`` > 1 runs the simulations on that many processes (largest first). ``cache``: a JSON file
    of outcomes keyed by :func:`task_key` (same code, config and task): found ones are reused, new ones
    added (simulations are deterministic, so a cached outcome is the simulation's). ``only``: simulate
    just these backgrounds (``alone`` for the GEMMs alone) and their copies alone, e.g. to fill a cache
    in parts; the result then holds None for the rest.
    """
    # rows of one shape (e.g. FC-1 and FC-2) share their simulations: they are deterministic
    tasks: List[tuple] = [("alone_copy", system, bg) for bg in backgrounds]
    index: Dict[tuple, int] = {("alone_copy", bg): i for i, bg in enumerate(backgrounds)}
    for r in rows:
        for bg in (None, *backgrounds):
            key = ("pair", r["M"], r["N"], r["K"], bg)
            if key not in index:
                index[key] = len(tasks)
                tasks.append(("pair", system, (r["M"], r["N"], r["K"], bg)))
    keys = [task_key(system, t) for t in tasks]
    cached = load_cache(cache) if cache else {}
    result: List[Optional[ContentionOutcome]] = [cached.get(k) for k in keys]

    def wanted(t) -> bool:
        if only is None:
            return True
        bg = t[2] if t[0] == "alone_copy" else (t[2][3] or "alone")
        return bg in only

    todo = [j for j, t in enumerate(tasks) if result[j] is None and wanted(t)]
    cost = {j: (1.0 if tasks[j][0] == "alone_copy" else
                tasks[j][2][0] * tasks[j][2][1] * tasks[j][2][2] * (3 if tasks[j][2][3] in ("d2d1", "d2d2") else 1))
            for j in todo}
    order = sorted(todo, key=lambda j: -cost[j])

    def save(j: int) -> None:  # each finished simulation goes into the cache at once
        if cache:
            cached[keys[j]] = result[j]
            Path(cache).parent.mkdir(parents=True, exist_ok=True)
            Path(cache).write_text(json.dumps({k: asdict(v) for k, v in sorted(cached.items())}, indent=1))

    if jobs <= 1 or len(order) <= 1:
        for j in order:
            result[j] = _task(tasks[j])
            save(j)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(_task, tasks[j]): j for j in order}
            for f in as_completed(futures):
                j = futures[f]
                result[j] = f.result()
                save(j)
    alone = {bg: result[index[("alone_copy", bg)]] for bg in backgrounds}
    per_row = [{(bg or "alone"): result[index[("pair", r["M"], r["N"], r["K"], bg)]] for bg in (None, *backgrounds)}
               for r in rows]
    return per_row, alone  # type: ignore[return-value]
