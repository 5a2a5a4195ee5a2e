"""Sampled vs full simulation of experiment points (docs/performance.md, "Sampled simulation").

For each point: the sampled run as configured by ``--sampling`` (YAML mapping of ``simulation.sampling``) and the
full run (sampling off); prints one JSON line per point with both phase times, the relative errors, the
criterion values and both wall times. Usage:

    python benchmarks/sampling_error.py EXPERIMENT [--set a.b=V ...] [--sampling '{mode: waves, ...}'] [--no-full]
"""

from __future__ import annotations

import argparse
import json
import time

from t3sim.config.sweep import expand
from t3sim.exec.dispatch import simulate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("experiment")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--sampling", default="{mode: waves}")
    ap.add_argument("--no-full", action="store_true")
    a = ap.parse_args()
    for pt in expand(a.experiment, a.set + [f"simulation.sampling={a.sampling}"]):
        t0 = time.perf_counter()
        smp = simulate(pt.config)
        ws = time.perf_counter() - t0
        st = smp.stats
        row = {"point": pt.label, "sets": a.set, "sampled": st.value("sampling.sampled"),
               "sampled_wall_s": round(ws, 1), "note": st.value("sampling.note"),
               "waves_full": st.value("sampling.waves")}
        for k in ("waves_detailed", "criterion_met", "wave_spread_pct", "rate_difference_pct"):
            if f"sampling.{k}" in st:
                row[k] = st.value(f"sampling.{k}")
        row.update({f"sampled_{ph}_us": smp.summary[f"{ph}_us"] for ph in ("gemm", "rs", "ag", "total")})
        if not a.no_full:
            d = pt.config.model_dump(mode="json")
            d["simulation"]["sampling"] = {"mode": "off"}
            full_exp = type(pt.config).model_validate(d)
            t0 = time.perf_counter()
            full = simulate(full_exp)
            row["full_wall_s"] = round(time.perf_counter() - t0, 1)
            for ph in ("gemm", "rs", "ag", "total"):
                f, s = full.summary[f"{ph}_us"], smp.summary[f"{ph}_us"]
                row[f"full_{ph}_us"] = f
                row[f"err_{ph}_pct_of_total"] = round(100 * (s - f) / full.summary["total_us"], 3)
            fb, sb = full.stats.value("gpu0.hbm.bytes"), st.value("gpu0.hbm.bytes")
            row["err_dram_bytes_pct"] = round(100 * (sb - fb) / fb, 3)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
