"""Statistics of a MemorySystem as :class:`~t3sim.results.stats.Stats`.

Counted over requests whose column command has issued, accumulated as they
issue (:mod:`t3sim.memory.accum`). Bandwidth is bytes over the span from the
first arrival to the last completion. Latency is
completion minus arrival at the controller (pending-FIFO wait included), in
ns. Queue occupancy is the read + write queue entries of one channel,
time-weighted over every simulated cycle of every channel.
"""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from t3sim.memory import timing as T
from t3sim.memory.accum import SC_A0, SC_FIRST_ARRIVE, SC_LAST_DONE, percentile_from_hist
from t3sim.memory.request import Kind, Source, Stream
from t3sim.results.stats import Stats

ROW_CLASSES = ("hits", "misses", "conflicts")


def _ns(ms, cycles) -> float:
    return float(cycles) / ms.clock.GHz


def summary(ms, at_tick: Optional[int] = None) -> Dict[str, float]:
    """Headline numbers (plain floats) for reports and the memtest command, at tick ``at_tick`` (None: the
    frontier's; ``MemorySystem.settle``)."""
    if at_tick is not None:
        ms.settle(at_tick)
    else:
        ms.sync()
    acc = ms.acc
    nreq = acc.requests
    if nreq == 0:
        return {"requests": 0}
    first = int(acc.sc[SC_FIRST_ARRIVE])
    last = int(acc.sc[SC_LAST_DONE])
    span = max(1, last - first)
    nbytes = nreq * ms.access_B
    bw = nbytes / _ns(ms, span)
    peak = ms.hbm.peak_bandwidth_GBps
    cls = acc.rowcls
    h = acc.read_latency_hist()
    nrd = int(h.sum())
    occ = ms.occ_hist.sum(0)
    return {
        "requests": nreq, "bytes": nbytes, "span_ns": _ns(ms, span), "achieved_GBps": bw, "peak_GBps": peak,
        "efficiency": bw / peak, "row_hit_rate": cls[0] / nreq, "row_hits": int(cls[0]), "row_misses": int(cls[1]),
        "row_conflicts": int(cls[2]), "read_latency_mean_ns": _mean_ns(ms, h) if nrd else float("nan"),
        "turnarounds": int(ms.turnarounds.sum()), "refreshes": int(ms.cmd_count[:, T.REF].sum()),
        "queue_occupancy_mean": float((occ * np.arange(occ.size)).sum() / max(1, occ.sum())),
    }


def _mean_ns(ms, hist: np.ndarray) -> float:
    """Mean latency in ns of a per-cycle latency histogram (exact integer sum, then one division)."""
    n = int(hist.sum())
    return int((hist * np.arange(hist.size, dtype=np.int64)).sum()) / n / ms.clock.GHz


def collect(ms, prefix: str = "", at_tick: Optional[int] = None) -> Stats:
    """All memory statistics under ``prefix`` (e.g. ``gpu0.hbm``), from ``ms.acc`` (:mod:`t3sim.memory.accum`)."""
    st = Stats()
    p = (prefix + ".") if prefix else ""
    s = summary(ms, at_tick)
    st.add(p + "requests", s.get("requests", 0), "count", "DRAM accesses (hbm.access_size_B each) completed")
    if not s.get("requests"):
        return st
    acc = ms.acc
    B = ms.access_B
    st.add(p + "bytes", s["bytes"], "B", "bytes moved to/from DRAM")
    for cat, enum, axes in (("stream", Stream, (1, 2)), ("kind", Kind, (0, 2)), ("source", Source, (0, 1))):
        cnt = acc.cnt.sum(axis=axes)
        for m in enum:
            st.add(f"{p}by_{cat}.{m.name.lower()}.requests", int(cnt[m]), "count", f"requests of {cat} {m.name.lower()}")
            st.add(f"{p}by_{cat}.{m.name.lower()}.bytes", int(cnt[m]) * B, "B", f"bytes of {cat} {m.name.lower()}")
    st.add(p + "span_ns", s["span_ns"], "ns", "first arrival to last completion")
    st.add(p + "achieved_bandwidth_GBps", s["achieved_GBps"], "GB/s", "bytes / span")
    st.add(p + "peak_bandwidth_GBps", s["peak_GBps"], "GB/s", "channels x bus width x transfers per clock x clock")
    st.add(p + "efficiency", s["efficiency"], "ratio", "achieved / peak bandwidth")
    for name in ROW_CLASSES:
        st.add(f"{p}row.{name}", s[f"row_{name}"], "count", f"requests that were row-buffer {name} (conflict: needed a PRE; miss: an ACT)")
    st.add(p + "row.hit_rate", s["row_hit_rate"], "ratio", "row hits / requests")
    for c, name in enumerate(T.CMD_NAMES):
        st.add(f"{p}commands.{name}", int(ms.cmd_count[:, c].sum()), "count", f"{name} commands issued")
    st.add(p + "turnarounds", s["turnarounds"], "count", "data-bus direction changes (read<->write)")
    occ = ms.occ_hist.sum(0)
    st.add(p + "queue.occupancy_mean", s["queue_occupancy_mean"], "count", "time-weighted mean read+write queue entries per channel")
    st.add(p + "queue.occupancy_histogram", occ, "cycles", "channel-cycles spent at each occupancy 0..read+write capacity")
    total_cycles = np.maximum(ms.occ_hist.sum(1), 1)
    st.add(p + "channel_utilisation", ms.bus_busy / total_cycles, "ratio", "per channel: data-bus busy cycles / simulated cycles")
    # bandwidth over time, per (stream, kind)
    bin_cycles = acc.bin_cycles
    t0 = int(acc.sc[SC_A0])
    used = np.flatnonzero(acc.bw.sum(axis=(0, 1)))
    nb = int(used[-1]) + 1
    scale = B / _ns(ms, bin_cycles)
    st.add(p + "bandwidth_over_time.bin_ns", _ns(ms, bin_cycles), "ns", "width of one bandwidth bin")
    st.add(p + "bandwidth_over_time.start_ns", _ns(ms, t0), "ns", "time of the first bin's start (the first request's arrival)")
    for sm in Stream:
        for km in Kind:
            if acc.cnt[sm, km].sum():
                series = acc.bw[sm, km, :nb] * scale
                st.add(f"{p}bandwidth_over_time.{sm.name.lower()}_{km.name.lower()}_GBps", series, "GB/s",
                       f"{sm.name.lower()} {km.name.lower()} bandwidth per bin (paper Fig. 17)")
    # read latency
    h = acc.read_latency_hist()
    if h.sum():
        GHz = ms.clock.GHz
        for q, name in ((50, "p50"), (95, "p95"), (99, "p99")):
            st.add(f"{p}read_latency.{name}_ns", percentile_from_hist(h, q, GHz), "ns", f"{name} read latency (arrival to data)")
        st.add(p + "read_latency.mean_ns", _mean_ns(ms, h), "ns", "mean read latency (arrival to data)")
        st.add(p + "read_latency.max_ns", float(h.size - 1) / GHz, "ns", "max read latency")
        width = 8
        st.add(p + "read_latency.histogram_bin_cycles", width, "cycles", "width of one latency histogram bin")
        groups = np.zeros(-(-h.size // width) * width, dtype=np.int64)
        groups[: h.size] = h
        st.add(p + "read_latency.histogram", groups.reshape(-1, width).sum(1), "count", "reads per latency bin")
        for sm in Stream:
            hs = acc.read_latency_hist(sm)
            if hs.sum():
                st.add(f"{p}read_latency.{sm.name.lower()}_mean_ns", _mean_ns(ms, hs), "ns", f"mean latency of {sm.name.lower()} reads")
    return st
