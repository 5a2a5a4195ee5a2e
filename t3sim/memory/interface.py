"""The memory system's value types: the device organisation the controllers schedule (:class:`Geometry`) and
what the enqueue hook sees of requests entering controller queues (:class:`EnqueueInfo`, T3's tracker)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


@dataclass(frozen=True)
class Geometry:
    """Organisation of the device as the controllers see it."""

    channels: int
    pseudo_channels: int
    bank_groups: int
    banks_per_group: int

    @property
    def units(self) -> int:
        """Independently scheduled channels (channels x pseudo-channels)."""
        return self.channels * self.pseudo_channels

    @property
    def banks(self) -> int:
        return self.bank_groups * self.banks_per_group


class EnqueueInfo(NamedTuple):
    """Requests that entered controller queues (arrays of equal length), for T3's tracker.
    (A NamedTuple, not a frozen dataclass: one is built per pump step that admitted writes.)"""

    tick: np.ndarray
    channel: np.ndarray
    kind: np.ndarray
    stream: np.ndarray
    source: np.ndarray
    wg_id: np.ndarray
    wf_id: np.ndarray
    batch: np.ndarray
    bytes: int
