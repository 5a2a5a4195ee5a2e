"""A GEMM alone and beside copies that stream into and out of its GPU's HBM, including peer copies over NVLink.

Question: how much does a bf16 GEMM on GPU ``--gpu`` slow down while copy engines move data between its HBM
and another GPU's (``p2p_out``: its HBM read and sent to the peer; ``p2p_in``: the peer's copy written into
it; ``p2p_both``: both at once), next to the local backgrounds of gemm_copy_contention.csv (``d2d1``, ``d2d2``:
256 MiB device-to-device copies on one or two streams; ``pcie``: 64 MiB host-to-device and device-to-host
copies on two streams), and how much do the copies slow down?

Method (``copy_contention/measure_h200_rows.py``'s protocol, one process, torch only): the GEMM rows of
gemm_copy_contention.csv (``--rows``); ``gemm_alone_us`` is the median of ``--reps`` back-to-back GEMMs after
5 warm-ups, a CUDA-event pair around each. Each background's copies alone: back to back, an event pair around
each, a stream's copy time = its median copy. Beside a background: its copies are enqueued first (enough to
outlast the slowed GEMMs), the GEMM stream sleeps about 0.3 ms, then ``--reps`` GEMMs run back to back; the
GEMM time is the median of the GEMMs lying entirely inside the copy window, the copy slowdown the mean over
streams of (median copy inside the GEMMs' span) / (copy alone) (``multigpu_common.copy_window_stats``).

A copy is issued on the stream of the GPU that holds its source: ``p2p_out`` on the GEMM's GPU, ``p2p_in`` on
the peer. ``--api copy_`` (default) issues ``dst.copy_(src, non_blocking=True)`` (a ``cudaMemcpyAsync``
between the two devices, run by the source GPU's copy engines when peer access is on; the destination
device's current stream is a separate idle one, so torch's cross-device barrier never waits on the GEMM);
``--api cudart`` calls ``cudaMemcpyPeerAsync`` through ``ctypes`` (PyTorch's CUDA runtime library). Events of
streams on the peer are put on the GEMM GPU's time base by a reference event: every copy stream first waits
for an event recorded on the GEMM stream and then records its own reference.

With one GPU the peer is the GPU itself (a self-copy: local device-to-device traffic, which on Hopper may run
on SMs rather than copy engines): for dry runs only; the sidecar says so.

Output under ``--out``: ``gemm_p2p_copy.csv`` (gemm_copy_contention.csv's columns for every background
measured; ``multigpu_common.contention_columns``), ``gemm_p2p_copy.env.json`` (versions, topology, peer
access, copies alone and their bandwidths), ``raw/gemm_p2p_copy.json`` (every window's detail).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import glob
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import multigpu_common as mc  # noqa: E402
import multigpu_launch as ml  # noqa: E402

MIB = mc.MIB


def parse_args(argv: List[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results/multigpu", help="output folder")
    ap.add_argument("--rows", default=str(HERE.parent / "gemm_copy_contention.csv"), help="CSV of GEMM shapes")
    ap.add_argument("--gpu", type=int, default=0, help="the GEMM's GPU")
    ap.add_argument("--peer", type=int, default=-1, help="the other GPU (default: the next one; itself if alone)")
    ap.add_argument("--backgrounds", default=",".join(mc.CONTENTION_BACKGROUNDS))
    ap.add_argument("--api", default="copy_", choices=("copy_", "cudart"))
    ap.add_argument("--d2d-mib", type=int, default=256)
    ap.add_argument("--pcie-mib", type=int, default=64)
    ap.add_argument("--p2p-mib", type=int, default=64)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dry-run", action="store_true", help="two tiny GEMMs, 8/4/4 MiB copies, 5 reps")
    return ap.parse_args(argv)


def load_cudart():
    """PyTorch's CUDA runtime library through ctypes (for ``cudaMemcpyPeerAsync``), or None."""
    import torch  # lazy: only on the GPU host

    here = Path(torch.__file__).parent
    cands = glob.glob(str(here / "lib" / "libcudart*.so*"))
    cands += glob.glob(str(here.parent / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so*"))
    found = ctypes.util.find_library("cudart")
    cands += [found] if found else []
    for c in cands:
        try:
            lib = ctypes.CDLL(c)
            f = lib.cudaMemcpyPeerAsync
        except (OSError, AttributeError):
            continue
        f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
        f.restype = ctypes.c_int
        return f, c
    return None, None


class CopyStream:
    """Back-to-back copies of one kind on one stream, each between a CUDA-event pair.

    ``kind``: ``d2d`` (on ``gpu``), ``h2d`` / ``d2h`` (pinned host memory), ``p2p_out`` (``gpu`` -> ``peer``,
    issued on ``gpu``), ``p2p_in`` (``peer`` -> ``gpu``, issued on ``peer``)."""

    def __init__(self, kind: str, nbytes: int, gpu: int, peer: int, api: str, peer_copy):
        import torch  # lazy: only on the GPU host

        self.torch, self.kind, self.n, self.api, self.peer_copy = torch, kind, nbytes, api, peer_copy
        g, p = torch.device("cuda", gpu), torch.device("cuda", peer)
        u8 = torch.uint8
        if kind == "d2d":
            src, dst = torch.empty(nbytes, dtype=u8, device=g), torch.empty(nbytes, dtype=u8, device=g)
        elif kind == "h2d":
            src, dst = torch.empty(nbytes, dtype=u8).pin_memory(), torch.empty(nbytes, dtype=u8, device=g)
        elif kind == "d2h":
            src, dst = torch.empty(nbytes, dtype=u8, device=g), torch.empty(nbytes, dtype=u8).pin_memory()
        elif kind == "p2p_out":
            src, dst = torch.empty(nbytes, dtype=u8, device=g), torch.empty(nbytes, dtype=u8, device=p)
        elif kind == "p2p_in":
            src, dst = torch.empty(nbytes, dtype=u8, device=p), torch.empty(nbytes, dtype=u8, device=g)
        else:
            raise ValueError(kind)
        self.src, self.dst = src, dst
        self.dev = peer if kind == "p2p_in" else gpu  # the source's GPU issues the copy
        self.other = gpu if kind == "p2p_in" else peer
        self.stream = torch.cuda.Stream(device=self.dev)
        self.aux = torch.cuda.Stream(device=self.other) if kind.startswith("p2p") else None
        self.events: List = []
        self.ref = None

    def _copy(self) -> None:
        torch = self.torch
        if self.api == "cudart" and self.kind.startswith("p2p"):
            rc = self.peer_copy(self.dst.data_ptr(), self.dst.device.index, self.src.data_ptr(),
                                self.src.device.index, self.n, self.stream.cuda_stream)
            if rc != 0:
                raise RuntimeError(f"cudaMemcpyPeerAsync returned {rc}")
            return
        if self.aux is not None:
            with torch.cuda.stream(self.aux), torch.cuda.stream(self.stream):
                self.dst.copy_(self.src, non_blocking=True)
        else:
            with torch.cuda.stream(self.stream):
                self.dst.copy_(self.src, non_blocking=True)

    def enqueue(self, count: int, ref0=None) -> None:
        """``count`` copies; with ``ref0`` (an event on the GEMM stream) the stream first waits for it and records
        its own reference event (the common time base)."""
        torch = self.torch
        self.events = []
        with torch.cuda.device(self.dev):
            if ref0 is not None:
                self.stream.wait_event(ref0)
                self.ref = torch.cuda.Event(enable_timing=True)
                self.ref.record(self.stream)
            for _ in range(count):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record(self.stream)
                self._copy()
                b.record(self.stream)
                self.events.append((a, b))

    def times_us(self) -> List[float]:
        return [a.elapsed_time(b) * 1e3 for a, b in self.events]

    def spans_us(self):
        """(start, end) of each copy relative to the reference event (us)."""
        return [(self.ref.elapsed_time(a) * 1e3, self.ref.elapsed_time(b) * 1e3) for a, b in self.events]


def backgrounds(args: argparse.Namespace) -> Dict[str, List[tuple]]:
    d, pc, pp = args.d2d_mib * MIB, args.pcie_mib * MIB, args.p2p_mib * MIB
    spec = {"d2d1": [("d2d", d)], "d2d2": [("d2d", d), ("d2d", d)], "pcie": [("h2d", pc), ("d2h", pc)],
            "p2p_out": [("p2p_out", pp)], "p2p_in": [("p2p_in", pp)], "p2p_both": [("p2p_out", pp), ("p2p_in", pp)]}
    want = [b for b in args.backgrounds.split(",") if b]
    bad = [b for b in want if b not in spec]
    if bad:
        raise SystemExit(f"measure_p2p_copy: unknown backgrounds {bad} (one of {', '.join(spec)})")
    return {b: spec[b] for b in want}


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    mc.apply_required_env()
    # lazy: torch exists only on the GPU host and must be imported after the environment is set
    import torch

    import multigpu_torch as mt

    if args.dry_run:
        args.d2d_mib, args.pcie_mib, args.p2p_mib, args.reps = 8, 4, 4, 5
    n = torch.cuda.device_count()
    if n < 1:
        print("measure_p2p_copy: no GPU", file=sys.stderr)
        return 2
    gpu = args.gpu
    peer = args.peer if args.peer >= 0 else ((gpu + 1) % n)
    self_copy = peer == gpu
    torch.cuda.set_device(gpu)
    if not self_copy:  # peer access both ways before anything is timed (torch enables it on first use too)
        for a, b in ((gpu, peer), (peer, gpu)):
            with torch.cuda.device(a):
                torch.empty(1, device=f"cuda:{b}").copy_(torch.ones(1, device=f"cuda:{a}"))
    peer_copy, cudart_path = load_cudart()
    if args.api == "cudart" and peer_copy is None:
        print("measure_p2p_copy: no libcudart with cudaMemcpyPeerAsync found; using copy_", flush=True)
        args.api = "copy_"
    rows = (mc.read_shapes(Path(args.rows)) if not args.dry_run else
            [mc.Shape("dry", "OP", 8, 2048, 1024, 256), mc.Shape("dry", "FC", 8, 2048, 1024, 512)])
    bgs = backgrounds(args)
    streams = {bg: [CopyStream(k, nb, gpu, peer, args.api, peer_copy) for k, nb in spec] for bg, spec in bgs.items()}
    gemm_stream = torch.cuda.Stream(device=gpu)
    res: Dict[str, object] = {"gpu": gpu, "peer": peer, "self_copy": self_copy, "api": args.api, "rows": [],
                              "copies_alone": {}}
    devices = sorted({gpu, peer})

    def sync_all() -> None:  # both GPUs: copies issued on the peer finish there
        for d in devices:
            torch.cuda.synchronize(d)

    # copies alone
    for bg, ss in streams.items():
        for s in ss:
            s.enqueue(2)
        sync_all()
        for s in ss:
            s.enqueue(12 if bg != "pcie" else 4)
        sync_all()
        per = [statistics.median(s.times_us()) for s in ss]
        res["copies_alone"][bg] = {"us": per, "GBps": [s.n / t / 1e3 for s, t in zip(ss, per)],
                                   "kinds": [s.kind for s in ss]}
        print(f"[p2p_copy] {bg} alone: " + ", ".join(f"{s.kind} {t:.1f} us ({s.n / t / 1e3:.0f} GB/s)"
                                                      for s, t in zip(ss, per)), flush=True)
    if args.dry_run and peer_copy is not None:  # the cudart path once, checked
        chk = CopyStream("p2p_out", 1 << 20, gpu, peer, "cudart", peer_copy)
        chk.src.random_(0, 255)
        chk.enqueue(1)
        sync_all()
        res["cudart_check"] = bool(torch.equal(chk.src.cpu(), chk.dst.cpu()))
    for sh in rows:
        with torch.cuda.device(gpu), torch.cuda.stream(gemm_stream):
            A = torch.randn(sh.M, sh.K, dtype=torch.bfloat16, device=f"cuda:{gpu}")
            B = torch.randn(sh.K, sh.N, dtype=torch.bfloat16, device=f"cuda:{gpu}")
            alone = mt.gemm_alone_us(A, B, args.reps)
            rec = {"shape": sh.row(), "gemm_alone_us": alone, "with": {}}
            for bg, ss in streams.items():
                rec["with"][bg] = _with_background(torch, A, B, ss, res["copies_alone"][bg]["us"], alone, args.reps,
                                                   gemm_stream)
            res["rows"].append(rec)
            print(f"[p2p_copy] {sh.sublayer} TP{sh.tp} K={sh.K}: alone {alone:.1f} us; " + "; ".join(
                f"{bg} {w.get('gemm_us', float('nan')):.1f} us (copy x{w.get('copy_slowdown', float('nan')):.3f})"
                for bg, w in rec["with"].items()), flush=True)
    out = Path(args.out)
    raw = out / "raw" / "gemm_p2p_copy.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(res, indent=1) + "\n")
    mc.write_csv(out / "gemm_p2p_copy.csv", mc.contention_columns(list(bgs)), mc.contention_rows(res),
                 mc.CONTENTION_DIGITS)
    ml.write_sidecar(out / "gemm_p2p_copy.env.json", {
        "what": "GEMM beside local and peer copies (measure_p2p_copy.py)", "dry_run": args.dry_run,
        "args": vars(args), "gpu": gpu, "peer": peer,
        "self_copy": "peer = the GEMM's own GPU (one GPU): p2p_* are local copies, a dry run only" if self_copy else False,
        "cudart": cudart_path, "copies_alone": res["copies_alone"], "cudart_check": res.get("cudart_check"),
        "versions": mt.versions(), "host": ml.host_info(), "pid": os.getpid(),
        "protocol": "copy_contention/measure_h200_rows.py's: copies enqueued first, ~0.3 ms sleep, back-to-back GEMMs; "
                    "GEMM = median inside the copy window; copy slowdown = median copy inside the GEMMs' span / alone"})
    print(f"[p2p_copy] wrote {len(res['rows'])} rows to {out / 'gemm_p2p_copy.csv'}", flush=True)
    return 0


def _with_background(torch, A, B, ss: List[CopyStream], alone_us: List[float], gemm_us: float, reps: int,
                     gemm_stream) -> Dict[str, object]:
    """The GEMMs beside one background (module doc); ``copy_window_stats`` of the run."""
    per_copy = max(alone_us)
    count = int((300 + reps * gemm_us * 8) / per_copy) + 6  # copies to outlast the (slowed) GEMMs
    ref0 = torch.cuda.Event(enable_timing=True)
    ref0.record(gemm_stream)
    for s in ss:
        s.enqueue(count, ref0)
    ge = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    with torch.cuda.device(A.device), torch.cuda.stream(gemm_stream):  # explicitly: the copies' contexts are left
        torch.cuda._sleep(int(300e-6 * 1.9e9))  # ~0.3 ms at ~1.9 GHz: the copies get going first
        for a, b in ge:
            a.record(gemm_stream)
            torch.matmul(A, B)
            b.record(gemm_stream)
    for d in sorted({torch.cuda.current_device(), *(s.dev for s in ss), *(s.other for s in ss)}):
        torch.cuda.synchronize(d)
    gemms = [(ref0.elapsed_time(a) * 1e3, ref0.elapsed_time(b) * 1e3) for a, b in ge]
    out = mc.copy_window_stats(gemms, [s.spans_us() for s in ss], alone_us)
    out["copies_enqueued_per_stream"] = count
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
