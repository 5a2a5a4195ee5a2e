"""T3 and T3-MCA: the GEMM fused with its reduce-scatter, then the all-gather (paper Secs. 4.1-4.5, 5.3).

Wiring on every simulated GPU ``g`` (:func:`run_t3`):

1. Address space (Sec. 4.4): the predefined :mod:`t3sim.dma.addrspace`
   configuration for the system's collective algorithm (``ring`` ->
   :func:`ring_reduce_scatter`, ``direct`` -> :func:`direct_reduce_scatter`)
   built for N GPUs over the kernel's W WGs. WG ids (the tracker's key) are
   base-order positions, identical on all GPUs, so the ``wg_id`` a DMA
   carries names the same tile at the destination (Sec. 4.2.2).
2. Staggered dispatch (Sec. 4.4, Fig. 7): GPU ``g`` runs the base order
   rotated to start at its first chunk. The rotation is by *chunk* (W/N WGs),
   which is the paper's "one stage per GPU" when the GEMM has N stages (Fig.
   7's setting) and keeps the ring's data dependences right when it has more
   or fewer stages than ring steps. With bidirectional ring links and
   ``collective.ring_bidirectional`` (as the baseline RS uses them), each
   chunk's halves go round the ring in opposite directions and each step
   dispatches the two halves interleaved (``AddressSpace.seq``); otherwise
   the fused RS would get half the link bandwidth the baseline RS gets.
3. Output sink (:class:`T3Output`, Sec. 4.3): the output allocation is
   uncached and the stores carry the update flag, so local stores become
   near-memory op-and-store requests at the controller; remote-mapped WGs'
   stores are sent to the peer as update packets instead (ring step 1).
4. Tracker (Sec. 4.2.1) hooked to the GPU's memory-system enqueue hook,
   programmed with every ``dma_map``-ped region and its threshold; a fired
   region marks its pre-queued DMA block ready; the DMA engines (Sec. 4.2.2)
   read it (communication stream) ``issue_latency_ns`` after the admission
   that completed it and update it into the peer's memory, whose tracker
   counts it in turn. The tracker sees admissions in canonical order, so the
   results do not depend on the memory's pump cadence or lookahead.
5. Arbitration (Sec. 4.5): the scheme's policy; for ``t3_mca`` the first
   stage of the GEMM is the isolated stage whose queue occupancy sets the
   dynamic threshold, and the kernel boundary drains communication (each
   event reaching the controllers a frontend latency after it happens).
6. After the fused RS completes (every payload landed and every triggered
   block sent), the all-gather runs as
   in Sequential (``SystemModel.collective("all_gather")``).

Homogeneous mode (Sec. 5.1.1, Fig. 13): GPU 0 only is simulated. By
symmetry GPU ``j`` does at time ``t`` what GPU 0 does at ``t`` with the same
dispatch index ``seq``; so when GPU 0 stores WG ``seq``, every shadow whose
WG ``seq`` is remote-mapped to GPU 0 sends it to GPU 0 now, and when GPU
0's DMA engine sends a batch of the block that starts at ``(seq, wf)``, the
shadow whose block at ``(seq, wf)`` targets GPU 0 sends the same fraction of
it. Exact when chunks are equal (W divisible by N); with unequal chunks a
shadow block without a counterpart in GPU 0 is sent when GPU 0's local
store of that ``seq`` is written (documented approximation).

Phase times reported: ``gemm`` = GEMM kernel time; ``rs`` = the exposed
reduce-scatter after the GEMM ends (fused RS end - GEMM end); ``ag``;
``total`` = start to AG end.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from t3sim.compute.addresses import StoreRequests
from t3sim.compute.gemm_kernel import gemm_geometry, stage_wgs
from t3sim.compute.sinks import Stored
from t3sim.compute.memhier import REQ_B
from t3sim.dma import addrspace as A
from t3sim.dma.engine import Completion, DMAEngines, DmaBlock, Fabric, Payload
from t3sim.dma.tracker import Tracker
from t3sim.errors import InputError
from t3sim.memory.request import Stream
from t3sim.results.stats import Stats
from t3sim.schemes.runtime.base import Scheme, register_scheme, register_simulation
from t3sim.schemes.common.functional_data import check_summed, store_data
from t3sim.schemes.common.outputs import OutputTable
from t3sim.schemes.runtime.program import Kernel, Program, ProgramRun, boundary, run_program
from t3sim.sim.clock import TICKS_PER_US
from t3sim.sim.engine import Component
from t3sim.sim.gcpause import gc_paused
from t3sim.workload.wg_order import base_order

class T3Watch(Component):
    """Reports the fused RS's outstanding work to the watchdog, so a stuck run names its cause
    (e.g. tracker sets full of regions that wait for updates which are themselves stalled)."""

    def __init__(self, engine, ctx: "T3Context"):
        super().__init__(engine, "t3.fused_rs")
        self.ctx = ctx

    def pending(self) -> str:
        ctx = self.ctx
        if ctx.completion.done.triggered:
            return ""
        parts = []
        for g, tr in ctx.trackers.items():
            waiting, stalled, full = tr.waiting()
            if stalled or waiting:
                parts.append(f"gpu{g} tracker: {waiting} regions below threshold, {stalled} accesses stalled "
                             f"on {full} full sets")
        parts.append(f"{ctx.blocks_left} DMA blocks not started, {ctx.completion.n} payloads not landed or blocks "
                     f"not sent, GEMM {'done' if ctx.gemm_done else 'running'}")
        return "; ".join(parts)


class T3Context:
    """Everything the fused GEMM-RS needs on every simulated GPU (module doc)."""

    def __init__(self, model):
        with gc_paused():  # tens of thousands of long-lived objects: no GC passes over them meanwhile
            self._build(model)

    def _build(self, model) -> None:
        self.model = model
        self.watch = T3Watch(model.engine, self)
        env, eng = model.env, model.engine
        sysc = model.system
        k = model.kernel
        self.N = model.n
        self.W = k.num_wgs
        self.algorithm = sysc.collective.algorithm
        self.base = base_order(k.wg_order, k.tiles_m, k.tiles_n)
        self.pos_of_tile = np.empty(self.W, dtype=np.int64)
        self.pos_of_tile[np.asarray(self.base)] = np.arange(self.W)
        self.geom = gemm_geometry(k, model.a_base, model.b_base, model.c_base)
        self.stage_wgs = stage_wgs(sysc.gpu, k)
        if self.algorithm == "ring":
            # the same rule as the baseline RS plan (collectives.runner.plan_for_system): both ring
            # directions when the links run both ways and the collective is configured to use them
            bidir = sysc.collective.ring_bidirectional and sysc.interconnect.bidirectional
            self.spaces = A.ring_reduce_scatter(self.N, self.W, bidirectional=bidir)
        else:
            self.spaces = A.direct_reduce_scatter(self.N, self.W, self.stage_wgs)
        self.table = OutputTable(self.geom, self.base, k.tiles_n)
        self.positions = {g: self.spaces[g].positions() for g in range(self.N)}
        self.seq_of = {g: np.argsort(self.positions[g]) for g in range(self.N)}
        self.functional = model.exp.simulation.functional_data
        self.completion = Completion(env)
        self.fabric = Fabric(eng, model.network, model.hiers, self.completion)
        self.homogeneous = model.mode == "homogeneous"
        self.trackers: Dict[int, Tracker] = {}
        self.dmas: Dict[int, DMAEngines] = {}
        self.blocks: Dict[int, List[DmaBlock]] = {}
        self.blocks_left = 0
        self.shadow_blocks: Dict[Tuple[int, int], List[Tuple[int, DmaBlock]]] = {}
        self.orphans: Dict[int, List[Tuple[int, DmaBlock]]] = {}
        self.gemm_done = False
        self.wgs_stored = 0
        self.words_checked = 0
        self._deliv = A.deliveries(self.spaces) if (self.functional and self.homogeneous) else {}
        self.senders = peer_senders(self.spaces)
        for g in model.sim_gpus:
            self._setup_gpu(g)
        if self.homogeneous:
            self._setup_shadows()

    # ---------------------------------------------------------------- results
    def stats(self) -> Stats:
        """Tracker, DMA and fabric statistics of the fused RS (``gpu<g>.tracker``, ``gpu<g>.dma``, ``t3.fabric``)."""
        s = Stats()
        for g in self.model.hiers:
            s.merge(f"gpu{g}.tracker", self.trackers[g].stats())
            s.merge(f"gpu{g}.dma", self.dmas[g].stats())
        s.merge("t3.fabric", self.fabric.stats())
        return s

    def timeline(self, g: int, pid: int) -> list:
        """Trace events of GPU ``g``'s DMA commands: each from its trigger (tracker threshold reached) to its
        last batch read back and sent (async track "DMA", tid 3)."""
        ev = []
        for i, blk in enumerate(self.blocks.get(g, [])):
            if blk.trigger_tick < 0 or blk.done_tick < 0:
                continue
            common = {"cat": "dma", "name": f"DMA to GPU {blk.peer}", "pid": pid, "tid": 3, "id": f"{g}.{i}"}
            ev.append({**common, "ph": "b", "ts": blk.trigger_tick / TICKS_PER_US,
                       "args": {"wg": int(blk.wg_id[0]), "wf": int(blk.wf_id[0]), "bytes": REQ_B * len(blk.addrs)}})
            ev.append({**common, "ph": "e", "ts": blk.done_tick / TICKS_PER_US})
        if ev:
            ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": 3, "args": {"name": "DMA"}})
        return ev

    # ---------------------------------------------------------------- setup
    def _blocks_for(self, g: int, peer: Optional[int] = None
                    ) -> List[Tuple[DmaBlock, List[Tuple[int, int]], List[int], List[int]]]:
        """DMA blocks of GPU ``g``'s mapping (only those sent to ``peer`` if given): (block, its tracker
        regions, their thresholds, the number of peers that send each region's positions to ``g``).

        A region's threshold is its store requests x the rule's updates per element (tracker doc), in DRAM
        accesses: the tracker counts every write or update access the controller admits, and a 64 B store or
        update request is ``REQ_B / hbm.access_size_B`` of them (two 32 B accesses on Table 1).

        Vectorised per ``dma_map`` rule (:meth:`_regions_of` groups the rule's requests by region in one
        pass): a block's requests are one contiguous slice of the rule's grouped requests, and the blocks'
        arrays are views of the rule's gathered addresses and ids (read-only, like the blocks).
        """
        sp = self.spaces[g]
        tracker = next(iter(self.trackers.values()))  # region mapping: the same config on every GPU
        rq = self.table.reqs
        per = REQ_B // self.model.system.hbm.access_size_B  # DRAM accesses per store request
        out = []
        by_rule: Dict[A.DmaRule, List[int]] = {}
        for p in sp.dma_positions():
            by_rule.setdefault(sp.dma[p], []).append(p)
        self._check_regions_within_rules(sp)
        senders = self.senders[g]
        for rule, ps in by_rule.items():
            if peer is not None and rule.peer != peer:
                continue
            k0, k1, idx, bounds = self._regions_of(tracker, np.asarray(ps, dtype=np.int64))
            nreg = len(k0)
            addr, wg, wf = rq.addr[idx], rq.wg_id[idx], rq.wf_id[idx]
            thr = (np.diff(bounds) * (rule.updates_per_element * per)).tolist()
            npeer = np.maximum.reduceat(senders[wg], bounds[:-1]).tolist() if nreg else []
            keys = list(zip(k0.tolist(), k1.tolist()))
            bnd = bounds.tolist()
            m = rule.wf_tiles_per_block
            for i in range(0, nreg, m):
                j = min(i + m, nreg)
                a, b = bnd[i], bnd[j]
                blk = DmaBlock(key=keys[i], peer=rule.peer, op=rule.op, addrs=addr[a:b], wg_id=wg[a:b],
                               wf_id=wf[a:b], regions_left=j - i)
                out.append((blk, keys[i:j], thr[i:j], npeer[i:j]))
        return out

    def _regions_of(self, tracker: Tracker, ps: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The store requests of positions ``ps`` grouped by tracker region: ``(k0, k1, idx, bounds)``, the
        regions' keys in order of first appearance over (position, WF id) ascending, and region ``r``'s
        request indices ``idx[bounds[r]:bounds[r + 1]]`` (sorted)."""
        start = self.table.start
        lo, n = start[ps], start[ps + 1] - start[ps]
        idx = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n) + np.repeat(lo, n)
        pos = np.repeat(ps, n)
        wf = self.table.reqs.wf_id[idx].astype(np.int64)
        k0, k1 = tracker.regions(pos, wf)
        first = np.lexsort((wf, pos))  # the (position, WF) visiting order
        span = int(k1.max()) + 1 if len(k1) else 1
        uniq, at, inv = np.unique((k0 * span + k1)[first], return_index=True, return_inverse=True)
        rank_of_uniq = np.empty(len(uniq), dtype=np.int64)
        rank_of_uniq[np.argsort(at, kind="stable")] = np.arange(len(uniq))
        rank = np.empty(len(idx), dtype=np.int64)
        rank[first] = rank_of_uniq[inv.reshape(-1)]
        grouped = np.lexsort((idx, rank))
        bounds = np.searchsorted(rank[grouped], np.arange(len(uniq) + 1))
        keys = uniq[np.argsort(rank_of_uniq, kind="stable")]  # the key of each rank
        return keys // span, keys % span, idx[grouped], bounds

    def _check_regions_within_rules(self, sp: "A.AddressSpace") -> None:
        """A tracked region must cover WGs that share one ``dma_map`` rule: the tracker counts every
        write to a region and fires one threshold, so a region straddling two chunks (different peers)
        or a DMA'd and a non-DMA'd WG cannot be tracked (WG granularity with a multiple > 1)."""
        cfg = self.model.system.tracker
        m = int(cfg.granularity_multiple)
        if cfg.granularity != "wg" or m == 1:
            return
        for lo in range(0, self.W, m):
            rules = {sp.dma[p] for p in range(lo, min(lo + m, self.W))}  # frozen DmaRule or None
            if len(rules) > 1:
                raise InputError("system.tracker.granularity_multiple",
                                 f"{m} WGs per tracked region: region of WGs {lo}-{min(lo + m, self.W) - 1} on GPU "
                                 f"{sp.gpu} straddles WGs with different DMA mappings",
                                 "1, or WF granularity (a WG-granular region must stay within one dma_map range)")

    def _setup_gpu(self, g: int) -> None:
        model = self.model
        h = model.hiers[g]
        tr = Tracker(model.system.tracker, f"gpu{g}.tracker")
        self.trackers[g] = tr
        on_batch = self._mirror_dma if (self.homogeneous and g == 0) else None
        # a triggered block holds the completion until it is sent (its payloads hold it from then until they land):
        # else the RS could end between the last trigger and that block's first read
        self.dmas[g] = DMAEngines(model.engine, g, h, self.fabric, model.system.dma, on_batch_sent=on_batch,
                                  completion=self.completion)
        self.blocks[g] = []
        regions, thresholds, callbacks, addrs, peer_input = [], [], [], [], []
        for blk, keys, thrs, peers in self._blocks_for(g):
            if tr.uses_ready and max(peers) > 1:
                raise InputError("system.tracker.admission",
                                 f"{tr.policy.name}: a region of GPU {g} receives from {max(peers)} peers (the readiness "
                                 "rule assumes at most one; t3sim/dma/tracker_policy.py)", "first_come for this mapping")
            self.blocks[g].append(blk)
            self.blocks_left += 1

            def fired(_region, tick, blk=blk, g=g):
                blk.regions_left -= 1
                if blk.regions_left == 0:
                    self.dmas[g].trigger(blk, tick)
                    self._block_started()

            regions += keys
            thresholds += thrs
            callbacks += [fired] * len(keys)
            addrs += [int(blk.addrs[0])] * len(keys)
            peer_input += [n > 0 for n in peers]
        tr.program_many(regions, thresholds, callbacks, addrs, peer_input)
        h.port.set_enqueue_hook(tr.on_enqueue, writes_only=True)

    def _setup_shadows(self) -> None:
        """Homogeneous mode: the shadows' DMA blocks aimed at GPU 0, keyed by (seq, wf) of their first region."""
        ref_keys = set()
        for blk in self.blocks[0]:
            ref_keys.add(self._seq_key(0, blk))
        for j in range(1, self.N):
            for blk, *_ in self._blocks_for(j, peer=0):
                self.blocks_left += 1
                key = self._seq_key(j, blk)
                if key in ref_keys:
                    self.shadow_blocks.setdefault(key, []).append((j, blk))
                else:
                    self.orphans.setdefault(key[0], []).append((j, blk))

    def _seq_key(self, g: int, blk: DmaBlock) -> Tuple[int, int]:
        return (int(self.seq_of[g][int(blk.wg_id[0])]), int(blk.wf_id[0]))

    def _block_started(self) -> None:
        self.blocks_left -= 1
        self._maybe_seal()

    def _maybe_seal(self) -> None:
        if self.gemm_done and self.blocks_left == 0 and not self.completion.sealed:
            self.completion.seal()

    # ---------------------------------------------------------------- homogeneous mirror
    def _mirror_dma(self, blk: DmaBlock, j0: int, j1: int) -> None:
        key = self._seq_key(0, blk)
        n0 = len(blk.addrs)
        for j, sb in self.shadow_blocks.get(key, []):
            n = len(sb.addrs)
            a, b = j0 * n // n0, j1 * n // n0
            if b > a:
                self._shadow_send(j, sb, a, b)
            if j1 == n0:
                self._block_started()

    def _shadow_send(self, j: int, sb: DmaBlock, a: int, b: int) -> None:
        data = None
        if self.functional:
            # the shadow's block holds the sum of what reached it: its own partial and (ring) its successor's
            data = sum(store_data(src, sb.addrs[a:b], np.full(b - a, np.uint64(0xFFFF_FFFF_FFFF_FFFF)))
                       for src in self._contributors(j, int(sb.wg_id[0])))
        self.fabric.send(j, sb.peer, Payload(sb.addrs[a:b], sb.wg_id[a:b], sb.wf_id[a:b], sb.op, data))

    def _contributors(self, j: int, p: int) -> List[int]:
        return [o for o, _ in self._deliv[(j, p)]]

    def on_ref_store(self, seq: int, written) -> None:
        """GPU 0 stored WG ``seq`` now: shadows' remote stores aimed at GPU 0 happen now too."""
        for j in range(1, self.N):
            p = int(self.positions[j][seq])
            for peer, op in self.spaces[j].remote[p]:
                if peer == 0:
                    r = self.table.of(p)
                    data = store_data(j, r.addr, r.mask) if self.functional else None
                    self.fabric.send(j, 0, Payload(r.addr, r.wg_id, r.wf_id, op, data))
        for j, sb in self.orphans.pop(seq, []):
            def go(_e=None, j=j, sb=sb):
                self._shadow_send(j, sb, 0, len(sb.addrs))
                self._block_started()
            if written is None:
                go()
            else:
                written.callbacks.append(go)


def peer_senders(spaces) -> np.ndarray:
    """``(N, W)`` int: how many peers send each position to each GPU (remote stores or DMA)."""
    N, W = spaces[0].num_gpus, spaces[0].num_wgs
    out = np.zeros((N, W), dtype=np.int64)
    for a in spaces:
        for p in range(W):
            for peer, _op in a.remote[p]:
                out[peer, p] += 1
            if a.dma[p] is not None:
                out[a.dma[p].peer, p] += 1
    return out


class T3Output:
    """The GEMM output sink of T3 on GPU ``g`` (module doc, item 3)."""

    def __init__(self, ctx: T3Context, g: int):
        self.ctx, self.g = ctx, g
        self.h = ctx.model.hiers[g]
        self.space = ctx.spaces[g]

    def store(self, seq: int, tile: int, reqs: StoreRequests):
        ctx = self.ctx
        p = int(ctx.pos_of_tile[tile])
        wg = np.full(len(reqs.addr), p, dtype=np.int64)
        data = store_data(self.g, reqs.addr, reqs.mask) if ctx.functional else None
        op = self.space.local_op[p]
        written = room = None
        if op:  # the WG waits only where its stores met a full write queue (l2.write_queue_accesses)
            written, room = self.h.posted_write(reqs.addr, "gemm", Stream.COMPUTE, uncached=True, update=op == "update",
                                                wg_id=wg, wf_id=reqs.wf_id, data=data)
        ctx.wgs_stored += 1
        for peer, rop in self.space.remote[p]:
            ctx.fabric.send(self.g, peer, Payload(reqs.addr, wg, reqs.wf_id, rop, data))
        if ctx.homogeneous and self.g == 0:
            ctx.on_ref_store(seq, written)
        return Stored(retire=room, written=written)  # posted stores; the kernel's end waits for its own local writes


def t3_program(model, ctx: T3Context) -> Program:
    """The fused GEMM (with its companion, the tracker/DMA-driven RS), then the all-gather (module doc)."""
    # the producer's events go to the memory controllers' arbitration policy, which decides what they mean
    # (t3_mca: observe the first, isolated stage's queue occupancy for its dynamic threshold, Sec. 4.5)
    def stage_done(g, s):
        if s == 0:
            model.hiers[g].port.end_isolated_stage()

    def gemm():
        for h in model.hiers.values():
            h.port.begin_isolated_stage()
        # the GEMM kernel ends when its last WG retired and its own local stores are written
        # (GemmKernel's per-kernel drain); incoming RS updates do not hold it
        return model.gemm("t3_gemm", sink_for=lambda g: T3Output(ctx, g),
                          order_for=lambda g: ctx.spaces[g].order(ctx.base), on_stage_done=stage_done)

    mc_boundary = boundary(model)

    def gemm_end():
        mc_boundary()
        ctx.gemm_done = True
        ctx._maybe_seal()

    def rs_end():
        for g, tr in ctx.trackers.items():
            tr.check_done()
            model.hiers[g].port.set_enqueue_hook(None)
        if ctx.functional:  # check the reduced chunks now: a functional run stops after the reduce-scatter
            ctx.words_checked = final_chunk_check(model)

    p = Program()
    p.add("main", Kernel("t3_gemm", "fused", "gemm", gemm, on_end=gemm_end))
    p.add("dma", Kernel("fused_rs", "dma", "rs", lambda: ctx.completion.done, comm=True, start_with="t3_gemm",
                        on_end=rs_end))
    if model.with_ag and not ctx.functional:  # the all-gather kernel has no functional data path
        p.add("main", Kernel("ag", "collective", "ag", lambda: model.collective("all_gather").done, comm=True,
                             after=("fused_rs",)))
    return p


def run_t3(model) -> ProgramRun:
    """Run the fused GEMM-RS then the all-gather on ``model`` (module doc)."""
    ctx = T3Context(model)
    model.attach(ctx)
    model.add_timeline(ctx.timeline)
    return run_program(model, t3_program(model, ctx))


def final_chunk_check(model) -> int:
    """Functional mode: every simulated GPU's result chunk equals the sum of all GPUs' partials.

    Returns the number of 4 B words checked; raises AssertionError on the first mismatch.
    (A functional :func:`run_t3` calls this at the end of the reduce-scatter.)
    """
    ctx: T3Context = model.context
    if ctx.words_checked:
        return ctx.words_checked
    checked = 0
    for g in model.sim_gpus:
        fs = model.hiers[g].mem.functional
        ps = np.flatnonzero(ctx.spaces[g].final)
        for p in ps.tolist():
            r = ctx.table.of(p)  # its mask: the words this position's WFs own (others: neighbours' tiles)
            checked += check_summed(fs, r.addr, r.mask, ctx.N, f"GPU {g} WG {p}")
    return checked


register_simulation("t3", run_t3)
register_simulation("t3_mca", run_t3)
register_scheme(Scheme("t3", "fused GEMM-RS with tracker-triggered DMA and NMC reductions, round-robin MC arbitration; then AG",
                       label="T3", color="#e6b800", fused_rs=True, nmc=True, fused_epilogue=True, arbitration="round_robin",
                       paper_section="4.1-4.4, 5.3", simulation="t3"))
register_scheme(Scheme("t3_mca", "T3 plus communication-aware MC arbitration (Sec. 4.5); then AG",
                       label="T3-MCA", color="#2ca02c", fused_rs=True, nmc=True, fused_epilogue=True, arbitration="t3_mca",
                       paper_section="4.5, 5.3", simulation="t3_mca"))
