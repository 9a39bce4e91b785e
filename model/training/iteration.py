"""One training iteration as a task graph (fredfab.model.training.timeline).

The collective times come from a ``CommCost``: ``time(op, groups, sizes)`` gives the seconds
until every one of the concurrent collectives ``op`` over ``groups`` (sizes in bytes, one per
group) has finished. fredfab.sim.engines.training provides one backed by the network
simulator; tests pass closed forms.

Weight-stationary (per stage s, microbatch i; MP collectives block the stage's compute,
as in Megatron):

* input: microbatch i is loaded from the I/O controllers into the first stage's NPUs
  (I/O broadcast to each replica's MP group), in order, overlapping earlier compute;
* F(s, i), B(s, i) on the stage's compute stream in 1F1B (or GPipe) order; activations
  (gradients) go to the next (previous) stage point-to-point on a channel per direction;
* DP: the gradients of a bucket of layers are reduced (All-Reduce, or Reduce-Scatter under
  ZeRO) as soon as the last microbatch's backward of those layers is done, overlapping the
  rest of the backward; then the optimizer step (memory-bound) and, under ZeRO, the
  All-Gather of the updated FP16 weights.

Weight-streaming (layer l on stage l mod PP; a *group* is PP consecutive layers):

* for every use of a layer group (forward, then backward in reverse order, per
  accumulation pass) its weights are broadcast from the I/O controllers unless still held;
  buffers hold ``stream_buffers`` groups, so the next group streams while one computes
  (prefetch), and a load waits until the buffer's previous group finished computing;
* every microbatch goes through the group's layers (pipelined across the stages, activations
  point-to-point between consecutive layers' stages), forward then backward;
* after a group's backward its gradients are reduced over the DP replicas toward the I/O
  controllers (io-reduce), gradient buffers likewise limited to ``stream_buffers`` groups.

Concurrent collectives of *different* kinds are timed as if alone (their link contention is
not modelled); the ones of one kind queue on their channel. On FRED fabrics the training
engine then applies the switch's phase rule to the graph
(fredfab.model.training.phase_priority): each task names the NPU groups it communicates
among (``where``) so that the rule knows which switches it shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.training.config import NPU, TrainingConfig
from fredfab.model.training.parallel import Layout, mp_split
from fredfab.model.training.timeline import Timeline
from fredfab.model.training.workload import FP16, Workload


class CommCost(Protocol):
    def time(self, op: str, groups: Sequence[tuple[int, ...]], sizes: Sequence[float]) -> float: ...


@dataclass(frozen=True)
class LayerCosts:
    """Per layer, per microbatch, on one NPU: seconds of compute and of MP collectives."""

    fwd: np.ndarray
    bwd: np.ndarray  # including the recomputed forward when recomputing
    fwd_mp: np.ndarray
    bwd_mp: np.ndarray
    grad_bytes: np.ndarray  # FP16 gradient bytes per NPU (after the MP split)
    stage: np.ndarray  # stage of each layer


def layer_costs(
    wl: Workload,
    cfg: TrainingConfig,
    npu: NPU,
    layout: Layout,
    comm: CommCost,
    stage_of: np.ndarray,
    b: int,
    recompute: str,
) -> LayerCosts:
    a = wl.arrays()
    st = cfg.strategy
    # The slowest MP rank's share of each split layer (1/MP unless the heads split unevenly).
    div = np.where(a["split"], mp_split(wl, st.mp).divisor, 1).astype(float)
    wbytes = FP16 * a["params"] / div
    rate = npu.peak_flops * npu.efficiency
    hbm_f = a["hbm_bytes"] * b / div + wbytes
    fwd = np.maximum(a["fwd_flops"] * b / div / rate, hbm_f / npu.hbm_bandwidth)
    # Backward: its own FLOPs; HBM traffic twice the forward's (read the stash, write the
    # gradients of inputs and weights). Assumption; only memory-bound layers notice.
    bwd = np.maximum(a["bwd_flops"] * b / div / rate, 2 * hbm_f / npu.hbm_bandwidth)
    n = wl.num_layers
    fmp = np.zeros(n)
    bmp = np.zeros(n)
    if st.mp > 1:
        for i, lyr in enumerate(wl.layers):
            if lyr.mp != "split":
                continue
            groups = layout.mp_groups(int(stage_of[i]))
            for c in lyr.mp_comm:
                t = comm.time(c.op, groups, [c.bytes * b] * len(groups))
                if c.pass_ == "fwd":
                    fmp[i] += t
                else:
                    bmp[i] += t
    if recompute == "full":
        bwd = bwd + fwd
        bmp = bmp + fmp
    return LayerCosts(fwd, bwd, fmp, bmp, wbytes, stage_of)


def _input(tl: Timeline, wl, layout, comm, b, name, resource="io") -> int:
    groups = layout.mp_groups(0)
    t = comm.time(CollectiveKind.IO_BROADCAST, groups, [wl.input_bytes * b] * len(groups))
    return tl.add(name, resource, t, "input")


def _parts(c: LayerCosts, idx, backward: bool) -> list[tuple[str, float]]:
    if backward:
        return [("compute", float(c.bwd[idx].sum())), ("mp", float(c.bwd_mp[idx].sum()))]
    return [("compute", float(c.fwd[idx].sum())), ("mp", float(c.fwd_mp[idx].sum()))]


def stationary(
    wl: Workload,
    cfg: TrainingConfig,
    npu: NPU,
    layout: Layout,
    comm: CommCost,
    ranges: list[tuple[int, int]],
    recompute: str,
) -> Timeline:
    st = cfg.strategy
    P, m, b = st.pp, cfg.microbatches, cfg.microbatch_size
    stage_of = np.concatenate([np.full(e - s, k) for k, (s, e) in enumerate(ranges)])
    c = layer_costs(wl, cfg, npu, layout, comm, stage_of, b, recompute)
    tl = Timeline()
    mp_of = [layout.mp_groups(s) for s in range(P)]
    inputs = [_input(tl, wl, layout, comm, b, f"in{i}") for i in range(m)]
    # Pipeline transfers: forward activations s -> s+1 and gradients s+1 -> s.
    act_t, grad_t = [], []
    for s in range(P - 1):
        last, first = ranges[s][1] - 1, ranges[s + 1][0]
        fw = layout.pp_pairs(s, s + 1)
        bw = layout.pp_pairs(s + 1, s)
        act_t.append(comm.time(CollectiveKind.P2P, fw, [wl.layers[last].out_bytes * b] * len(fw)))
        grad_t.append(comm.time(CollectiveKind.P2P, bw, [wl.layers[first].in_bytes * b] * len(bw)))
    F: dict[tuple[int, int], int] = {}
    B: dict[tuple[int, int], int] = {}  # the task that ends the backward of (s, i)
    Bfirst: dict[tuple[int, int], int] = {}  # the task that starts it
    dp_tasks: dict[int, list[int]] = {s: [] for s in range(P)}
    dp_op = CollectiveKind.ALL_REDUCE if cfg.zero_stage == 0 else CollectiveKind.REDUCE_SCATTER
    for s in range(P):
        a, e = ranges[s]
        idx = np.arange(a, e)
        warm = m if cfg.pipeline == "gpipe" else min(P - s - 1, m)
        order = [("F", i) for i in range(warm)]
        for i in range(m - warm):
            order += [("F", warm + i), ("B", i)]
        order += [("B", i) for i in range(m - warm, m)]
        for kind, i in order:
            if kind == "F":
                F[s, i] = tl.add(f"F{s}.{i}", f"stage{s}", _parts(c, idx, False), where=mp_of[s])
                continue
            if i < m - 1 or st.dp == 1:
                B[s, i] = Bfirst[s, i] = tl.add(
                    f"B{s}.{i}", f"stage{s}", _parts(c, idx, True), where=mp_of[s]
                )
                continue
            # Last microbatch: backward in buckets, each followed by its DP reduction.
            groups = layout.dp_groups(s)
            first = None
            for k, bucket in enumerate(_buckets(c.grad_bytes, idx[::-1], cfg.dp_bucket_bytes)):
                t = tl.add(f"B{s}.{i}.b{k}", f"stage{s}", _parts(c, bucket, True), where=mp_of[s])
                first = t if first is None else first
                size = float(c.grad_bytes[bucket].sum())
                r = tl.add(
                    f"DP{s}.b{k}",
                    f"dp{s}",
                    comm.time(dp_op, groups, [size] * len(groups)),
                    "dp",
                    deps=[t],
                    where=groups,
                )
                dp_tasks[s].append(r)
            B[s, i], Bfirst[s, i] = t, first
    for s in range(P):
        for i in range(m):
            if s == 0:
                tl.depend(F[s, i], inputs[i])
            else:
                a_ = tl.add(
                    f"A{s - 1}.{i}",
                    f"pp-fwd{s - 1}",
                    act_t[s - 1],
                    "pp",
                    [F[s - 1, i]],
                    where=layout.pp_pairs(s - 1, s),
                )
                tl.depend(F[s, i], a_)
            if s < P - 1:
                g = tl.add(
                    f"G{s}.{i}",
                    f"pp-bwd{s}",
                    grad_t[s],
                    "pp",
                    [B[s + 1, i]],
                    where=layout.pp_pairs(s + 1, s),
                )
                tl.depend(Bfirst[s, i], g)
    # Optimizer step (memory-bound) and, under ZeRO, the All-Gather of updated weights.
    for s in range(P):
        a, e = ranges[s]
        p = float(c.grad_bytes[a:e].sum()) / FP16
        shard = p / (st.dp if cfg.zero_stage >= 1 else 1)
        t_opt = shard * cfg.optimizer_hbm_bytes_per_param / npu.hbm_bandwidth
        o = tl.add(f"OPT{s}", f"stage{s}", t_opt, "compute", deps=dp_tasks[s])
        if cfg.zero_stage >= 1 and st.dp > 1:
            groups = layout.dp_groups(s)
            tl.add(
                f"AG{s}",
                f"dp{s}",
                comm.time(CollectiveKind.ALL_GATHER, groups, [FP16 * p] * len(groups)),
                "dp",
                deps=[o],
                where=groups,
            )
    return tl


def _buckets(grad_bytes: np.ndarray, order: np.ndarray, cap: float) -> list[np.ndarray]:
    out, cur, acc = [], [], 0.0
    for i in order:
        cur.append(i)
        acc += grad_bytes[i]
        if acc >= cap:
            out.append(np.array(cur))
            cur, acc = [], 0.0
    if cur:
        out.append(np.array(cur))
    return out


def streaming(
    wl: Workload,
    cfg: TrainingConfig,
    npu: NPU,
    layout: Layout,
    comm: CommCost,
    recompute: str,
    accumulation: int,
) -> Timeline:
    st = cfg.strategy
    P, m = st.pp, cfg.microbatches
    L = wl.num_layers
    b = cfg.samples_per_replica // (accumulation * m)
    stage_of = np.arange(L) % P
    c = layer_costs(wl, cfg, npu, layout, comm, stage_of, b, recompute)
    ngroups = -(-L // P)
    members = [np.arange(g * P, min((g + 1) * P, L)) for g in range(ngroups)]

    st_cache: dict[tuple[int, str], float] = {}

    def stream_time(g: int, op: str) -> float:
        if (g, op) not in st_cache:
            st_cache[g, op] = _stream_time(g, op)
        return st_cache[g, op]

    def _stream_time(g: int, op: str) -> float:
        groups, sizes = [], []
        for lyr in members[g]:
            for grp in layout.dp_groups(int(stage_of[lyr])):
                groups.append(grp)
                sizes.append(float(c.grad_bytes[lyr]))
        return comm.time(op, groups, sizes)

    pp_cache: dict[tuple[int, int, float], float] = {}

    def pp_time(src: int, dst: int, size: float) -> float:
        key = (src, dst, size)
        if key not in pp_cache:
            pairs = layout.pp_pairs(src, dst)
            pp_cache[key] = comm.time(CollectiveKind.P2P, pairs, [size] * len(pairs))
        return pp_cache[key]

    tl = Timeline()
    mp_of = [layout.mp_groups(s) for s in range(P)]
    resident: dict[int, list[int]] = {}  # group -> compute tasks of its last use
    last_use: dict[int, int] = {}  # group -> use counter of its last use
    use_no = 0
    grad_uses: list[int] = []  # gradient-reduction tasks, in order
    for p in range(accumulation):
        inputs = [_input(tl, wl, layout, comm, b, f"in{p}.{i}", resource="ws-in") for i in range(m)]
        prev_out: dict[int, int] = {}  # microbatch -> task producing the current activation
        prev_layer: int | None = None
        for direction in ("fwd", "bwd"):
            seq = range(ngroups) if direction == "fwd" else range(ngroups - 1, -1, -1)
            for g in seq:
                use_no += 1
                load = None
                if g not in resident:
                    if len(resident) >= cfg.stream_buffers:
                        victim = min(resident, key=lambda k: last_use[k])
                        free_after = resident.pop(victim)
                    else:
                        free_after = []
                    load = tl.add(
                        f"W{p}.{direction}.{g}",
                        "ws-in",
                        stream_time(g, CollectiveKind.IO_BROADCAST),
                        "weights",
                        deps=free_after,
                    )
                tasks: list[int] = []
                layers = members[g] if direction == "fwd" else members[g][::-1]
                for lyr in layers:
                    s = int(stage_of[lyr])
                    for i in range(m):
                        t = tl.add(
                            f"{direction}{p}.{lyr}.{i}",
                            f"stage{s}",
                            _parts(c, np.array([lyr]), direction == "bwd"),
                            where=mp_of[s],
                        )
                        tasks.append(t)
                        tl.depend(t, load)
                        src = prev_out.get(i)
                        if src is None:
                            tl.depend(t, inputs[i])
                        elif prev_layer is not None and int(stage_of[prev_layer]) != s:
                            size = (
                                wl.layers[prev_layer].out_bytes
                                if direction == "fwd"
                                else wl.layers[lyr].out_bytes
                            ) * b
                            x = tl.add(
                                f"PP{p}.{direction}.{lyr}.{i}",
                                f"pp{stage_of[prev_layer]}-{s}",
                                pp_time(int(stage_of[prev_layer]), s, size),
                                "pp",
                                deps=[src],
                                where=layout.pp_pairs(int(stage_of[prev_layer]), s),
                            )
                            tl.depend(t, x)
                        else:
                            tl.depend(t, src)
                        if direction == "bwd" and len(grad_uses) >= cfg.stream_buffers:
                            tl.depend(t, grad_uses[-cfg.stream_buffers])
                        prev_out[i] = t
                    prev_layer = lyr
                resident[g] = tasks
                last_use[g] = use_no
                if direction == "bwd":
                    r = tl.add(
                        f"R{p}.{g}",
                        "ws-out",
                        stream_time(g, CollectiveKind.IO_REDUCE),
                        "weights",
                        deps=tasks,
                    )
                    grad_uses.append(r)
    return tl
