"""Statistics of a MemorySystem as :class:`~t3sim.results.stats.Stats`.

Counted over requests whose column command has issued. Bandwidth is bytes
over the span from the first arrival to the last completion. Latency is
completion minus arrival at the controller (pending-FIFO wait included), in
ns. Queue occupancy is the read + write queue entries of one channel,
time-weighted over every simulated cycle of every channel.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from t3sim.memory import timing as T
from t3sim.memory.request import Kind, Source, Stream
from t3sim.results.stats import Stats

ROW_CLASSES = ("hits", "misses", "conflicts")


def _ns(ms, cycles) -> float:
    return float(cycles) / ms.clock.GHz


def summary(ms) -> Dict[str, float]:
    """Headline numbers (plain floats) for reports and the memtest command."""
    ms.sync()
    n = ms.n
    done = ms.r_done[:n] >= 0
    nreq = int(done.sum())
    if nreq == 0:
        return {"requests": 0}
    first = int(ms.r_arrive[:n][done].min())
    last = int(ms.r_done[:n][done].max())
    span = max(1, last - first)
    nbytes = nreq * ms.access_B
    bw = nbytes / _ns(ms, span)
    peak = ms.hbm.peak_bandwidth_GBps
    cls = np.bincount(ms.r_class[:n][done], minlength=3)
    rd = done & (ms.r_kind[:n] == Kind.READ)
    lat = (ms.r_done[:n] - ms.r_arrive[:n])[rd]
    occ = ms.occ_hist.sum(0)
    return {
        "requests": nreq, "bytes": nbytes, "span_ns": _ns(ms, span), "achieved_GBps": bw, "peak_GBps": peak,
        "efficiency": bw / peak, "row_hit_rate": cls[0] / nreq, "row_hits": int(cls[0]), "row_misses": int(cls[1]),
        "row_conflicts": int(cls[2]), "read_latency_mean_ns": _ns(ms, lat.mean()) if lat.size else float("nan"),
        "turnarounds": int(ms.turnarounds.sum()), "refreshes": int(ms.cmd_count[:, T.REF].sum()),
        "queue_occupancy_mean": float((occ * np.arange(occ.size)).sum() / max(1, occ.sum())),
    }


def collect(ms, prefix: str = "", bin_cycles: int = 1000) -> Stats:
    """All memory statistics under ``prefix`` (e.g. ``gpu0.hbm``)."""
    st = Stats()
    p = (prefix + ".") if prefix else ""
    s = summary(ms)
    st.add(p + "requests", s.get("requests", 0), "count", "64 B requests completed")
    if not s.get("requests"):
        return st
    n = ms.n
    done = ms.r_done[:n] >= 0
    kind, stream, source = ms.r_kind[:n][done], ms.r_stream[:n][done], ms.r_source[:n][done]
    B = ms.access_B
    st.add(p + "bytes", s["bytes"], "B", "bytes moved to/from DRAM")
    for cat, enum, arr in (("stream", Stream, stream), ("kind", Kind, kind), ("source", Source, source)):
        cnt = np.bincount(arr, minlength=len(enum))
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
    t0 = int(ms.r_arrive[:n][done].min())
    bins = (ms.r_done[:n][done] - t0) // bin_cycles
    nb = int(bins.max()) + 1
    scale = B / _ns(ms, bin_cycles)
    st.add(p + "bandwidth_over_time.bin_ns", _ns(ms, bin_cycles), "ns", "width of one bandwidth bin")
    st.add(p + "bandwidth_over_time.start_ns", _ns(ms, t0), "ns", "time of the first bin's start")
    for sm in Stream:
        for km in Kind:
            sel = (stream == sm) & (kind == km)
            if sel.any():
                series = np.bincount(bins[sel], minlength=nb) * scale
                st.add(f"{p}bandwidth_over_time.{sm.name.lower()}_{km.name.lower()}_GBps", series, "GB/s",
                       f"{sm.name.lower()} {km.name.lower()} bandwidth per bin (paper Fig. 17)")
    # read latency
    rd = kind == Kind.READ
    if rd.any():
        lat_c = (ms.r_done[:n][done] - ms.r_arrive[:n][done])[rd]
        lat = lat_c / ms.clock.GHz
        for q, name in ((50, "p50"), (95, "p95"), (99, "p99")):
            st.add(f"{p}read_latency.{name}_ns", float(np.percentile(lat, q)), "ns", f"{name} read latency (arrival to data)")
        st.add(p + "read_latency.mean_ns", float(lat.mean()), "ns", "mean read latency (arrival to data)")
        st.add(p + "read_latency.max_ns", float(lat.max()), "ns", "max read latency")
        width = 8
        st.add(p + "read_latency.histogram_bin_cycles", width, "cycles", "width of one latency histogram bin")
        st.add(p + "read_latency.histogram", np.bincount(lat_c // width), "count", "reads per latency bin")
        for sm in Stream:
            sel = stream[rd] == sm
            if sel.any():
                st.add(f"{p}read_latency.{sm.name.lower()}_mean_ns", float(lat[sel].mean()), "ns", f"mean latency of {sm.name.lower()} reads")
    return st
