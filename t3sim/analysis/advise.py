"""Which overlap scheme wins for one operation on one machine: ranking and binding resources (pure).

Input: one *candidate* per scheme variant that ``t3sim advise`` tried on the operation (a mapping: ``scheme``,
``variant``, ``label``, ``status`` and, for a run, ``total_us``, its ``summary`` and its statistics as a flat
``{name: value}`` dict, names as in ``stats.json``). Nothing here simulates or imports simulation code.

Status: ``ok`` (simulated or composed), ``not_applicable`` (the scheme cannot run the operation: wrong direction or
workload, a feature the system lacks, a check that rejects it; ``reason`` says which), ``failed`` (the simulation
failed; ``reason``) or ``skipped`` (not asked for). A ``bound`` candidate (the ``ideal_*`` schemes) is composed from Sequential's isolated kernels,
not run: it is reported beside the ranking but never ranked.

Per candidate that ran (all times in microseconds, of the simulated GPU 0; ratios are dimensionless):

* ``gemm_alone_us``: the GEMM alone, Sequential's ``gemm_us`` (FLUX Sec. 2.3's best non-split GEMM);
* ``exposed_comm_us`` = ``total_us - gemm_alone_us``: FLUX's effective communication time, ECT
  (:func:`t3sim.analysis.overlap.ect_us`);
* ``overlap_efficiency`` = ``1 - ECT / ECT_sequential`` (FLUX's E, :func:`t3sim.analysis.overlap.overlap_efficiency`);
* ``speedup_x`` = ``T_sequential / total_us``;
* utilisations over the candidate's whole time ``T = total_us`` (each a fraction of its peak, 0..1):
  ``cu_utilisation_frac`` = the GEMM's useful FLOPs / (``T`` x the GPU's peak dense FLOP rate: CUs x FLOP per
  cycle x clock) -- the share of the CUs' math the operation keeps busy, lowered by WGs that wait (FLUX's and
  T3's epilogues, a collective's CTAs holding CUs) as much as by idle CUs; ``hbm_bandwidth_utilisation_frac`` =
  ``gpu0.hbm.bytes`` / (``T`` x peak, peak = ``gpu0.hbm.achieved_bandwidth_GBps / gpu0.hbm.efficiency``);
  ``hbm_queue_occupancy_frac`` = ``gpu0.hbm.queue.occupancy_mean`` / the queue's capacity (the length of
  ``gpu0.hbm.queue.occupancy_histogram`` less one); ``link_utilisation_frac`` = the busiest link's
  ``network.link.<link>.busy_ns`` / ``T``;
* ``binding_resource``: the one of ``CUs``, ``HBM`` and ``links`` with the highest utilisation (queue occupancy
  is reported, not compared: it is no share of a peak); ``none`` when even that one is busy less than
  :data:`SATURATED` of the time: the time then goes to waiting -- start-up latencies, dependencies, phases that run
  one after another -- which is what overlap can win back.

Ranking: candidates that ran and are not bounds, fastest first (ties by scheme, then variant); ``rank`` 1 is the
winner. Rows come back ranked, then bounds, then not-applicable and failed candidates, each in the order given.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from t3sim.analysis.overlap import ect_us, overlap_efficiency

OK, NOT_APPLICABLE, FAILED, SKIPPED = "ok", "not_applicable", "failed", "skipped"
#: the resources whose utilisation decides the binding one, in tie order
RESOURCES = (("CUs", "cu_utilisation_frac"), ("HBM", "hbm_bandwidth_utilisation_frac"),
             ("links", "link_utilisation_frac"))
#: the utilisation below which no resource binds (``binding_resource`` ``none``): half of its peak over the run
SATURATED = 0.5
#: every key of a ranked row, in output order (``--json`` writes exactly these)
ROW_KEYS = ("rank", "scheme", "variant", "label", "status", "bound", "heuristic_pick", "total_us", "gemm_alone_us",
            "exposed_comm_us", "overlap_efficiency", "speedup_x", "cu_utilisation_frac",
            "hbm_bandwidth_utilisation_frac", "hbm_queue_occupancy_frac", "link_utilisation_frac", "binding_resource",
            "reason", "result_dir", "reused")


def peak_TFLOPS(system: Mapping[str, Any], dtype: str) -> float:
    """A GPU's peak dense rate, TFLOP/s, from a resolved system config (plain data): CUs x FLOP/cycle x clock
    (``gpu.fp32_flops_per_cycle`` for fp32, ``gpu.fp16_flops_per_cycle`` otherwise)."""
    gpu = system["gpu"]
    per_cycle = gpu["fp32_flops_per_cycle"] if dtype == "fp32" else gpu["fp16_flops_per_cycle"]
    return float(gpu["num_cus"]) * float(per_cycle) * float(gpu["clock_GHz"]) / 1e3


def _num(stats: Mapping[str, Any], name: str) -> Optional[float]:
    v = stats.get(name)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def utilisation(stats: Mapping[str, Any], total_us: float, gemm_flops: float, peak_tflops: float) -> Dict[str, Any]:
    """The utilisations of one run over its time ``total_us`` (module doc); a value the statistics lack is None."""
    t_s = total_us * 1e-6
    out: Dict[str, Any] = {k: None for _, k in RESOURCES}
    out["hbm_queue_occupancy_frac"] = None
    if t_s <= 0:
        return out
    if peak_tflops > 0 and gemm_flops > 0:
        out["cu_utilisation_frac"] = gemm_flops / (t_s * peak_tflops * 1e12)
    hbm_b, bw, eff = (_num(stats, f"gpu0.hbm.{n}") for n in ("bytes", "achieved_bandwidth_GBps", "efficiency"))
    if hbm_b is not None and bw and eff:
        out["hbm_bandwidth_utilisation_frac"] = hbm_b / (t_s * bw / eff * 1e9)
    occ, hist = _num(stats, "gpu0.hbm.queue.occupancy_mean"), stats.get("gpu0.hbm.queue.occupancy_histogram")
    if occ is not None and isinstance(hist, Sequence) and len(hist) > 1:
        out["hbm_queue_occupancy_frac"] = occ / (len(hist) - 1)
    busy = [v for n in stats if n.startswith("network.link.") and n.endswith(".busy_ns")
            if (v := _num(stats, n)) is not None]
    if busy:
        out["link_utilisation_frac"] = max(busy) / (total_us * 1e3)
    return out


def binding_resource(util: Mapping[str, Any]) -> str:
    """The resource of :data:`RESOURCES` with the highest utilisation (the first on a tie), ``none`` if that one is
    under :data:`SATURATED`; ``""`` if no utilisation is known."""
    known = [(util[k], -i, name) for i, (name, k) in enumerate(RESOURCES) if util.get(k) is not None]
    if not known:
        return ""
    top = max(known)
    return top[2] if top[0] >= SATURATED else "none"


def rank(candidates: Iterable[Mapping[str, Any]], gemm_flops: float, peak_tflops: float,
         heuristic_picks: Optional[Mapping[str, Mapping[str, Any]]] = None) -> List[Dict[str, Any]]:
    """Rows of :data:`ROW_KEYS`, ranked (module doc). ``gemm_flops``: the GEMM's useful FLOPs on one GPU
    (``2 M N K`` of its share); ``peak_tflops``: that GPU's peak (:func:`peak_TFLOPS`); ``heuristic_picks``: per
    scheme, the options its own heuristic picks for the operation (``Scheme.heuristic_pick``, e.g. FiCCO's schedule):
    a candidate of that scheme with those options is marked ``heuristic_pick``."""
    cands = list(candidates)
    seq = next((c for c in cands if c["scheme"] == "sequential" and c.get("status") == OK), None)
    t_seq = float(seq["total_us"]) if seq else None
    g = float(seq["summary"]["gemm_us"]) if seq else None
    rows = []
    for c in cands:
        r: Dict[str, Any] = {k: None for k in ROW_KEYS}
        r.update({k: c.get(k) for k in ("scheme", "variant", "label", "status", "reason", "result_dir", "reused")})
        r["variant"] = r["variant"] or ""
        r["reason"] = r["reason"] or ""
        r["bound"] = bool(c.get("bound"))
        picked = (heuristic_picks or {}).get(c["scheme"])
        r["heuristic_pick"] = bool(picked) and all(c.get("options", {}).get(k) == v for k, v in picked.items())
        if c.get("status") == OK:
            t = float(c["total_us"])
            r["total_us"] = t
            if g is not None:
                e = overlap_efficiency(t, g, t_seq)  # NaN when Sequential exposes nothing: None (JSON has no NaN)
                r.update(gemm_alone_us=g, exposed_comm_us=ect_us(t, g), overlap_efficiency=e if math.isfinite(e) else None,
                         speedup_x=t_seq / t if t > 0 else None)
            if not r["bound"]:
                u = utilisation(c.get("stats") or {}, t, gemm_flops, peak_tflops)
                r.update(u, binding_resource=binding_resource(u))
            else:
                r["binding_resource"] = ""
        rows.append(r)
    ranked = sorted((r for r in rows if r["status"] == OK and not r["bound"]),
                    key=lambda r: (r["total_us"], r["scheme"], r["variant"]))
    for i, r in enumerate(ranked, 1):
        r["rank"] = i
    rest = [r for r in rows if r["status"] == OK and r["bound"]] + [r for r in rows if r["status"] != OK]
    return ranked + rest


def scheme_order(rows: Iterable[Mapping[str, Any]], schemes: Sequence[str]) -> List[str]:
    """``schemes`` (those of them that ran) fastest first, each by its best variant: the ranking a user reads
    for a choice between schemes."""
    best: Dict[str, float] = {}
    for r in rows:
        if r["scheme"] in schemes and r["status"] == OK and not r["bound"]:
            best[r["scheme"]] = min(best.get(r["scheme"], math.inf), float(r["total_us"]))
    return sorted(best, key=lambda s: (best[s], s))


def measured_order(times_us: Mapping[str, float]) -> List[str]:
    """Schemes by measured time, fastest first (ties by name)."""
    return sorted(times_us, key=lambda s: (float(times_us[s]), s))


def _cell(v: Any, fmt: str) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return fmt.format(v)


#: the terminal table's columns: (row key, heading, format)
COLUMNS = (("rank", "#", "{}"), ("label", "scheme", "{}"), ("total_us", "time us", "{:.1f}"),
           ("exposed_comm_us", "exposed us", "{:.1f}"), ("overlap_efficiency", "E", "{:.2f}"),
           ("speedup_x", "speedup", "{:.2f}x"), ("cu_utilisation_frac", "CU", "{:.0%}"),
           ("hbm_bandwidth_utilisation_frac", "HBM bw", "{:.0%}"), ("hbm_queue_occupancy_frac", "HBM q", "{:.0%}"),
           ("link_utilisation_frac", "link", "{:.0%}"), ("binding_resource", "binding", "{}"))


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The ranked rows as a text table; bounds marked ``bound``, a scheme's own heuristic pick ``*``, and a line per
    scheme that did not run with its reason."""
    ran = [r for r in rows if r["status"] == OK]
    cells = [[h for _, h, _ in COLUMNS]]
    for r in ran:
        label = r["label"] + (" *" if r["heuristic_pick"] else "")
        cells.append([("bound" if r["bound"] else _cell(r["rank"], "{}")), label]
                     + [_cell(r[k], f) for k, _, f in COLUMNS[2:]])
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i in (1, len(COLUMNS) - 1) else c.rjust(w) for i, (c, w) in
                       enumerate(zip(row, widths))).rstrip() for row in cells]
    out = [lines[0], "  ".join("-" * w for w in widths), *lines[1:]]
    if any(r["heuristic_pick"] for r in ran):
        out.append("* the scheme's own heuristic picks this variant (FiCCO's: Sec. V-C)")
    not_run = [r for r in rows if r["status"] in (NOT_APPLICABLE, FAILED)]
    if not_run:
        out += ["", "not run:"]
        out += [f"  {r['label']}: {'not applicable' if r['status'] == NOT_APPLICABLE else 'failed'}: {r['reason']}"
                for r in not_run]
    skipped = [r for r in rows if r["status"] == SKIPPED]
    if skipped:
        out += ["", f"not asked for: {', '.join(r['scheme'] for r in skipped)}"]
    return "\n".join(out) + "\n"
