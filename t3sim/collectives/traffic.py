"""DRAM traffic of a collective plan, per GPU and step, in the paper's Fig. 10/18 terms.

Two implementations of the receive-side reduction (``variant``):

``"baseline"`` -- a CU-based collective kernel (RCCL/NCCL; paper Sec. 3.2.2,
Fig. 10(a)). A ``reduce`` transfer's data is *written* into the receiver's
memory (a receive buffer: ``rs_write``); the receiver's CUs reduce it lazily,
fused with the next use of that range: when the GPU next sends the range it
reads its local copy (``rs_read_local``) **and** each received copy
(``rs_read_received``), adds them on CUs (``cu_reduce``: bytes of received
data added) and sends the sum (the write lands in the next GPU's memory). At
the end of a phase (after the last reduce-scatter step) any range still holding
received copies is reduced and written back locally (the final step's
reduction: local + received reads, one ``rs_write``). Steady-state ring RS
step with chunk ``C``: 2C read, C written per GPU (Fig. 10(a)).

``"nmc"`` -- near-memory op-and-store (paper Sec. 4.3, Fig. 10(b)): a
``reduce`` transfer arrives as an *update* (``rs_update``: the DRAM adds it in
place), so the local copy is never read for the reduction and there is no
final reduction; the sender reads only the (already reduced) range it sends.
Steady-state ring RS step: C read, C updated.

``store`` transfers (all-gather, all-to-all) cost one read at the sender
(``ag_read``) and one write at the receiver (``ag_write``) in both variants;
a local copy (``src == dst``) is one read and one write on that GPU.
Traffic is attributed to the GPU whose DRAM it touches.

Per-GPU totals for a ring RS of chunk ``C`` over ``N`` GPUs (derived in the
tests): baseline reads ``(2N-1) C`` and writes ``N C``; NMC reads ``(N-1) C``
and updates ``(N-1) C``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Dict, List, Tuple

from t3sim.collectives.plan import Plan, Xfer

VARIANTS = ("baseline", "nmc")


@dataclass
class Traffic:
    """Bytes of DRAM traffic (all fields in B)."""

    rs_read_local_B: int = 0      #: RS: reads of the local copy (to send or reduce)
    rs_read_received_B: int = 0   #: RS: reads of received partial copies (baseline only)
    rs_write_B: int = 0           #: RS: writes of received copies and final reduced chunks
    rs_update_B: int = 0          #: RS: near-memory op-and-store updates (NMC only)
    ag_read_B: int = 0            #: AG / all-to-all / local copy: reads of data to send
    ag_write_B: int = 0           #: AG / all-to-all / local copy: writes of received data
    cu_reduce_B: int = 0          #: bytes of received data added into the local copy on CUs

    def __iadd__(self, o: "Traffic") -> "Traffic":
        for name in _FIELDS:
            setattr(self, name, getattr(self, name) + getattr(o, name))
        return self

    def __add__(self, o: "Traffic") -> "Traffic":
        t = Traffic(**self.as_dict())
        t += o
        return t

    def as_dict(self) -> Dict[str, int]:
        return {name: getattr(self, name) for name in _FIELDS}

    def scaled(self, part: int, whole: int) -> "Traffic":
        """``self * part / whole`` field by field, rounded down (exact where every field is a multiple of
        ``whole``); all zero if ``whole`` is 0. A slice's share of a transfer's traffic, once per slice."""
        if whole == 0:
            return Traffic()
        return Traffic(*[getattr(self, name) * part // whole for name in _FIELDS])

    @property
    def reads_B(self) -> int:
        return self.rs_read_local_B + self.rs_read_received_B + self.ag_read_B

    @property
    def writes_B(self) -> int:
        """Plain writes plus NMC updates (an update is a write-type DRAM access)."""
        return self.rs_write_B + self.rs_update_B + self.ag_write_B


#: Traffic's field names, in declaration order (dataclasses.fields() costs ~3 us a call; scaled() runs per slice)
_FIELDS = tuple(f.name for f in fields(Traffic))


@dataclass
class PlanTraffic:
    """Accounting of one plan.

    Attributes:
        send: per step, per transfer index: traffic at the sender before the send.
        recv: per step, per transfer index: traffic at the receiver on arrival.
        finalize: per step, per GPU: final reductions done after that step
            (end of a phase, baseline only; empty Traffic otherwise).
    """

    plan: Plan
    variant: str
    send: List[List[Traffic]]
    recv: List[List[Traffic]]
    finalize: List[List[Traffic]]

    def per_step(self, step: int, gpu: int) -> Traffic:
        """Everything ``gpu``'s DRAM sees in ``step`` (sends, receipts, final reductions)."""
        t = Traffic()
        for k, x in enumerate(self.plan.steps[step].xfers):
            if x.src == gpu:
                t += self.send[step][k]
            if x.dst == gpu:
                t += self.recv[step][k]
        t += self.finalize[step][gpu]
        return t

    def per_gpu(self, gpu: int) -> Traffic:
        t = Traffic()
        for s in range(self.plan.num_steps):
            t += self.per_step(s, gpu)
        return t

    def total(self) -> Traffic:
        t = Traffic()
        for g in range(self.plan.n):
            t += self.per_gpu(g)
        return t


def account(plan: Plan, variant: str = "baseline") -> PlanTraffic:
    """Attribute every DRAM access of ``plan`` under ``variant`` (module doc)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    eb = plan.elem_bytes
    pending: Dict[Tuple[int, str, int, int], int] = {}  # (gpu, buf, lo, hi) -> unreduced received copies
    send, recv, fin = [], [], []
    for si, step in enumerate(plan.steps):
        s_row, r_row = [], []
        for x in step.xfers:
            s_row.append(_send_side(x, eb, variant, pending))
        for x in step.xfers:
            r_row.append(_recv_side(x, eb, variant, pending))
        send.append(s_row)
        recv.append(r_row)
        f_row = [Traffic() for _ in range(plan.n)]
        last_of_phase = si + 1 == plan.num_steps or plan.steps[si + 1].phase != step.phase
        if last_of_phase:
            for (g, _buf, lo, hi), k in sorted(pending.items()):
                b = (hi - lo) * eb
                f_row[g] += Traffic(rs_read_local_B=b, rs_read_received_B=k * b, rs_write_B=b, cu_reduce_B=k * b)
            pending.clear()
        fin.append(f_row)
    return PlanTraffic(plan, variant, send, recv, fin)


def _send_side(x: Xfer, eb: int, variant: str, pending: Dict) -> Traffic:
    b = x.nbytes(eb)
    lo, hi = x.src_range
    k = pending.pop((x.src, x.src_buf, lo, hi), 0)
    if k == 0:
        _check_no_partial_overlap(x.src, x.src_buf, lo, hi, pending)
    if x.op == "store" and k == 0:
        t = Traffic(ag_read_B=b)
    else:
        # a reduce-scatter send (or a store of a range with unreduced copies): read local,
        # baseline also reads and adds the received copies on CUs
        t = Traffic(rs_read_local_B=b, rs_read_received_B=k * b, cu_reduce_B=k * b)
    if x.is_local:
        t += Traffic(ag_write_B=b)
    return t


def _recv_side(x: Xfer, eb: int, variant: str, pending: Dict) -> Traffic:
    if x.is_local:
        return Traffic()
    b = x.nbytes(eb)
    if x.op == "store":
        return Traffic(ag_write_B=b)
    if variant == "nmc":
        return Traffic(rs_update_B=b)
    lo, hi = x.dst_range
    key = (x.dst, x.dst_buf, lo, hi)
    if key not in pending:
        _check_no_partial_overlap(x.dst, x.dst_buf, lo, hi, pending)
    pending[key] = pending.get(key, 0) + 1
    return Traffic(rs_write_B=b)


def _check_no_partial_overlap(gpu: int, buf: str, lo: int, hi: int, pending: Dict) -> None:
    for (g, b, a, z) in pending:
        if g == gpu and b == buf and a < hi and lo < z:
            raise ValueError(f"traffic accounting needs received ranges to be reused whole: GPU {gpu} {buf}"
                             f"[{lo},{hi}) overlaps pending received copy [{a},{z})")
