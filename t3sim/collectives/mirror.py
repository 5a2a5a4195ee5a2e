"""Homogeneous simulation (paper Sec. 5.1.1, Fig. 13): one GPU in full detail, the others mirror it.

In a symmetric multi-GPU run every GPU does the same work on rotated data, so
GPU ``g``'s action is GPU 0's action shifted by ``g``: for ring and direct
plans, GPU ``g``'s transfer at step ``s`` to peer ``g + d`` (mod N) matches
GPU 0's transfer at step ``s`` to peer ``d``. A :class:`MirrorBoard` records,
for every action of the *reference* GPU, when it started and completed, keyed
by a symmetry-invariant key; a *shadow* GPU asking for the cost of the
action with the same key gets an event that fires at::

    max(t_done_ref, t_start_shadow + (t_done_ref - t_start_ref))

i.e. when the reference's action completed (under exact symmetry the shadow
starts with the reference, and the two terms coincide), and never sooner than
the reference's duration after the shadow started. If the reference has not
finished the action yet, the shadow waits for it. Shadows have no memory
model; their packets still cross the simulated links and, where they are
addressed to the reference GPU, arrive at its memory controller as real
communication traffic: the incoming traffic is generated "at the rate this
GPU produces its own" (Fig. 13) and includes the reference GPU's memory
contention.

The board is generic (any hashable key): the fused GEMM-RS of T3 reuses it
for GEMM-produced traffic. :class:`MirrorHook` applies it to collective cost
hooks with keys ``(kind, step, (dst - src) mod N, ordinal, slice)``, where
``ordinal`` separates transfers of one GPU with the same step and relative
peer (the two ring directions when N = 2).

Exactness: the mirror is exact when the plan is rotation-symmetric, i.e.
when all chunks have the same size (``num_elems`` divisible by N, by 2N for
bidirectional rings); otherwise a shadow's slice may differ from the
reference's by one element.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, Hashable, List, Optional, Tuple

import simpy

from t3sim.collectives.plan import Plan, Xfer
from t3sim.collectives.runner import CostHook, StreamedSend
from t3sim.collectives.traffic import Traffic
from t3sim.sim.engine import Component, Engine


class MirrorBoard(Component):
    """Start/completion ticks of the reference GPU's actions, and mirrored events for shadows (module doc)."""

    def __init__(self, engine: Engine, name: str = "mirror"):
        super().__init__(engine, name)
        self.done: Dict[Hashable, Tuple[int, int]] = {}
        self._started: Dict[Hashable, int] = {}
        self._waiting: Dict[Hashable, List[Tuple[int, simpy.Event, str]]] = defaultdict(list)
        self.mirrored = 0

    def track(self, key: Hashable, ev: Optional[simpy.Event]) -> Optional[simpy.Event]:
        """The reference GPU starts action ``key`` now; ``ev`` (None = free) fires when it is done. Returns ``ev``."""
        if key in self.done or key in self._started:
            raise ValueError(f"{self.name}: reference action {key!r} tracked twice")
        start = self.env.now
        if ev is None:
            self._complete(key, start, start)
            return None
        self._started[key] = start
        if ev.processed:
            self._complete(key, start, self.env.now)
        else:
            ev.callbacks.append(lambda _e: self._complete(key, start, self.env.now))
        return ev

    def mirror(self, key: Hashable, who: str = "shadow") -> simpy.Event:
        """Event for a shadow starting action ``key`` now (fires per the module-doc rule)."""
        out = self.env.event()
        t = self.env.now
        if key in self.done:
            self._fire(out, t, *self.done[key])
        else:
            self._waiting[key].append((t, out, who))
        return out

    def _complete(self, key: Hashable, start: int, end: int) -> None:
        self._started.pop(key, None)
        self.done[key] = (start, end)
        self.progressed()
        for ts, out, _ in self._waiting.pop(key, []):
            self._fire(out, ts, start, end)

    def _fire(self, out: simpy.Event, t_start: int, ref_start: int, ref_end: int) -> None:
        at = max(ref_end, t_start + (ref_end - ref_start))
        self.mirrored += 1
        d = at - self.env.now
        if d <= 0:
            out.succeed()
        else:
            self.env.timeout(d).callbacks.append(lambda _e: out.succeed())

    def pending(self) -> str:
        waits = [f"{who} waits for reference {key!r}" for key, lst in self._waiting.items() for _, _, who in lst]
        if not waits:
            return ""
        more = f" (+{len(waits) - 6} more)" if len(waits) > 6 else ""
        return "; ".join(waits[:6]) + more


class MirrorHook(CostHook):
    """A cost hook for the homogeneous mode: the reference GPU pays real costs, the others mirror them.

    Args:
        engine: the simulation engine.
        plan: the plan the runner executes (for the ordinal of each transfer).
        inner: the real hook; only ever asked about ``ref_gpu``.
        ref_gpu: the GPU simulated in full (default 0).
    """

    def __init__(self, engine: Engine, plan: Plan, inner: CostHook, ref_gpu: int = 0):
        self.plan, self.inner, self.ref = plan, inner, ref_gpu
        self.board = MirrorBoard(engine, f"mirror:{plan.name}")
        n = plan.n
        self._ord: List[Dict[Xfer, Tuple[int, int]]] = []
        for step in plan.steps:
            seen_src: Dict[Tuple[int, int], int] = defaultdict(int)
            seen_dst: Dict[Tuple[int, int], int] = defaultdict(int)
            row = {}
            for x in step.xfers:
                rel = (x.dst - x.src) % n
                row[x] = (seen_src[(x.src, rel)], seen_dst[(x.dst, rel)])
                seen_src[(x.src, rel)] += 1
                seen_dst[(x.dst, rel)] += 1
            self._ord.append(row)

    def _key(self, kind: str, step: int, x: Xfer, j: int) -> tuple:
        o_src, o_dst = self._ord[step][x]
        return (kind, step, (x.dst - x.src) % self.plan.n, o_src if kind == "send" else o_dst, j)

    def on_send(self, gpu: int, step: int, xfer: Xfer, slice_idx: int, nbytes: int,
                traffic: Traffic) -> Optional[simpy.Event]:
        key = self._key("send", step, xfer, slice_idx)
        if gpu == self.ref:
            ev = self.inner.on_send(gpu, step, xfer, slice_idx, nbytes, traffic)
            if isinstance(ev, StreamedSend):
                for p, (pev, _) in enumerate(ev.parts):
                    self.board.track(key + (p,), pev)
                self.board.track(key, ev.done)
                return ev
            return self.board.track(key, ev)
        sizes = getattr(self.inner, "part_sizes", None)
        if sizes is not None and not xfer.is_local:
            # the reference streams this send in parts: mirror every part (same split by symmetry)
            return StreamedSend(self.board.env, [(self.board.mirror(key + (p,), f"gpu{gpu}"), nb)
                                                 for p, nb in enumerate(sizes(nbytes))])
        return self.board.mirror(key, f"gpu{gpu}")

    def on_receive(self, gpu: int, step: int, xfer: Xfer, slice_idx: int, nbytes: int,
                   traffic: Traffic) -> Optional[simpy.Event]:
        key = self._key("recv", step, xfer, slice_idx)
        if gpu == self.ref:
            return self.board.track(key, self.inner.on_receive(gpu, step, xfer, slice_idx, nbytes, traffic))
        return self.board.mirror(key, f"gpu{gpu}")

    def on_finalize(self, gpu: int, step: int, traffic: Traffic) -> Optional[simpy.Event]:
        key = ("finalize", step)
        if gpu == self.ref:
            return self.board.track(key, self.inner.on_finalize(gpu, step, traffic))
        return self.board.mirror(key, f"gpu{gpu}")
