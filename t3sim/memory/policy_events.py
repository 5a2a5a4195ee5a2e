"""The producer kernel's events for a :class:`~t3sim.memory.system.MemorySystem`'s arbitration policy (paper Sec.
4.5: T3-MCA's isolated first stage, its end and the kernel boundary; the policy's hooks decide what they change,
:mod:`t3sim.memory.policies.base`).

Two ways in. Applied at once (``kernel_boundary(at_tick)`` and the like): the controllers are brought up to
``at_tick`` (:meth:`MemorySystem.sync`; None: the frontier) and the hook applies from there -- for tests and
policies whose hooks do nothing. Posted (:meth:`PolicyEvents.post_policy_event`, what
:class:`~t3sim.memory.port.MemoryPort` does for a policy whose hooks act, a frontend latency after the event):
the event applies when :meth:`MemorySystem.advance` reaches its cycle (the controllers run up to it, then the
hook), no lookahead runs past it, and one due after the tick the statistics describe never applies (a run may end
within a frontend latency of its last producer event). Ticks are integer picoseconds, cycles the HBM clock's.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

from t3sim.memory.policies.base import ArbState

#: an event's name -> the policy hook it calls
HOOKS = {"kernel_boundary": "producer_end", "begin_isolated_stage": "producer_start",
         "end_isolated_stage": "first_stage_end"}


class PolicyEvents:
    """Mixin of :class:`~t3sim.memory.system.MemorySystem` (uses its ``policy``, ``arb_state``, ``clock``,
    ``frontier``, ``_kernel_at``, ``sync``, ``_run`` and ``_invalidate``). ``_posted``: the posted events, in cycle
    order, as (cycle, policy hook)."""

    _posted: List[Tuple[int, Callable[[ArbState], None]]]

    def kernel_boundary(self, at_tick: Optional[int] = None) -> None:
        """The producer kernel ended (:meth:`Policy.producer_end <t3sim.memory.policies.base.Policy.producer_end>`)."""
        self._policy_event(self.policy.producer_end, at_tick)

    def begin_isolated_stage(self, at_tick: Optional[int] = None) -> None:
        """A producer kernel starts; its first stage runs alone (``Policy.producer_start``)."""
        self._policy_event(self.policy.producer_start, at_tick)

    def end_isolated_stage(self, at_tick: Optional[int] = None) -> None:
        """The producer's first, isolated stage ended (``Policy.first_stage_end``)."""
        self._policy_event(self.policy.first_stage_end, at_tick)

    def _policy_event(self, hook: Callable[[ArbState], None], at_tick: Optional[int]) -> None:
        self.sync(at_tick)
        hook(self.arb_state)
        self._invalidate()

    def post_policy_event(self, name: str, at_tick: int) -> None:
        """Producer event ``name`` (``kernel_boundary``, ``begin_isolated_stage``, ``end_isolated_stage``) reaches
        the controllers at tick ``at_tick``, not before the frontier: it applies when :meth:`advance` reaches it
        (the controllers run up to its cycle, then the policy's hook), no lookahead runs past it, and one due after
        the tick the statistics describe never applies."""
        c = self.clock.next_cycle_at_or_after(int(at_tick))
        if c < self.frontier:
            raise ValueError(f"policy event {name} at t={at_tick} ps: the memory has run to cycle {self.frontier}")
        hook = getattr(self.policy, HOOKS[name])
        self._posted.append((c, hook))  # ticks come in order: the port posts at now + a fixed delay

    @property
    def posted_policy_events(self) -> int:
        """Producer events posted for cycles the memory has not reached (:meth:`post_policy_event`)."""
        return len(self._posted)

    def _apply_posted(self, hard: int, until: int) -> int:
        """Apply the posted producer events at cycles up to ``hard``; return ``until`` capped at the next one."""
        posted = self._posted
        while posted and posted[0][0] <= hard:
            c, hook = posted.pop(0)
            self.frontier = max(self.frontier, c)
            if self._kernel_at < c:
                self._run(c, False)
            hook(self.arb_state)
            self._invalidate()
        return min(until, posted[0][0]) if posted else until
