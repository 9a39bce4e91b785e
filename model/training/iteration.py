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
from fredfab.model.training.gemm_shapes import transformer_gemms
from fredfab.model.training.parallel import Layout, mp_split
from fredfab.model.training.timeline import Timeline
from fredfab.model.training.workload import FP16, Workload

#: Layer kinds full recomputation does not repeat (workload.transformer_layers' ends).
NOT_RECOMPUTED = ("embedding", "head")


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
    """Per layer and microbatch of ``b`` samples, on the slowest MP rank: forward =
    max(GEMM FLOPs / (peak x kernel efficiency), FP16 weights / HBM) + memory-bound kernels'
    bytes / HBM; backward: its FLOPs, the weights twice and the kernels' traffic twice (read
    the stash and the output gradient, write the input gradient; an assumption); the MP
    collectives of each pass. Full recomputation repeats the forward (and its collectives) in
    backward; selective recomputation its attention core (Layer.selective_*)."""
    a = wl.arrays()
    st = cfg.strategy
    # The slowest MP rank's share of each split layer (1/MP unless the heads split unevenly).
    div = np.where(a["split"], mp_split(wl, st.mp).divisor, 1).astype(float)
    # What MP replicates on its ranks, sequence parallelism splits along the sequence.
    div_rep = div if cfg.sequence_parallel else np.ones_like(div)
    wbytes = FP16 * a["params"] / div
    rate = npu.peak_flops * npu.efficiency
    hbm = npu.hbm_rate
    kernels = (a["hbm_bytes"] * b / div + a["hbm_replicated_bytes"] * b / div_rep) / hbm
    gemm_fwd, gemm_bwd, gemm_core = _gemm_seconds(wl, npu, st.mp, b, a, div, rate)
    fwd = np.maximum(gemm_fwd, wbytes / hbm) + kernels
    bwd = np.maximum(gemm_bwd, 2 * wbytes / hbm) + 2 * kernels
    n = wl.num_layers
    fmp = np.zeros(n)
    bmp = np.zeros(n)
    if st.mp > 1:
        for i, lyr in enumerate(wl.layers):
            if lyr.mp != "split":
                continue
            groups = layout.mp_groups(int(stage_of[i]))
            for c in lyr.mp_comm:
                t = _mp_time(comm, cfg, c.op, groups, c.bytes * b)
                if c.pass_ == "fwd":
                    fmp[i] += t
                else:
                    bmp[i] += t
    if recompute == "full":
        # The checkpointed unit is the layer between its input and output (a transformer
        # block, a convolution); the embedding and the LM head are not recomputed (as in
        # Megatron-LM, whose --checkpoint-activations covers the transformer layers).
        again = np.array([lyr.kind not in NOT_RECOMPUTED for lyr in wl.layers])
        bwd = bwd + np.where(again, fwd, 0.0)
        bmp = bmp + np.where(again, fmp, 0.0)
    elif recompute == "selective":
        bwd = bwd + gemm_core + a["selective_hbm_bytes"] * b / div / hbm
    return LayerCosts(fwd, bwd, fmp, bmp, wbytes, stage_of)


def _gemm_seconds(
    wl: Workload, npu: NPU, mp: int, b: int, a: dict, div: np.ndarray, rate: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per layer, seconds of its forward GEMMs, its backward GEMMs and the attention core
    selective recomputation repeats: FLOPs at ``rate``, or, on an NPU with a GEMM model and
    a transformer workload, each GEMM of the layer timed by the model (gemm_shapes)."""
    fwd = a["fwd_flops"] * b / div / rate
    bwd = a["bwd_flops"] * b / div / rate
    core = a["selective_flops"] * b / div / rate
    shapes = transformer_gemms(dict(wl.shape), b, mp) if npu.gemm is not None else None
    if shapes is None:
        return fwd, bwd, core
    kinds = np.array([lyr.kind for lyr in wl.layers])

    def secs(gemms) -> float:
        return sum(npu.gemm.time(g, npu.peak_flops, npu.efficiency, npu.hbm_rate) for g in gemms)

    for kind, lg in shapes.items():
        at = kinds == kind
        fwd = np.where(at, secs(lg.fwd), fwd)
        bwd = np.where(at, secs(lg.bwd), bwd)
        core = np.where(at & (a["selective_flops"] > 0), secs(lg.attention_core), core)
    return fwd, bwd, core


def _mp_time(comm: CommCost, cfg: TrainingConfig, op: str, groups, size: float) -> float:
    """An MP collective over ``groups``; under sequence parallelism an All-Reduce is a
    Reduce-Scatter and an All-Gather of the same size (Korthikanti et al., sec. 4.2.2)."""
    sizes = [size] * len(groups)
    if cfg.sequence_parallel and op == CollectiveKind.ALL_REDUCE:
        return comm.time(CollectiveKind.REDUCE_SCATTER, groups, sizes) + comm.time(
            CollectiveKind.ALL_GATHER, groups, sizes
        )
    return comm.time(op, groups, sizes)


def pp_transfer_time(
    comm: CommCost, cfg: TrainingConfig, layout: Layout, src: int, dst: int, size: float
) -> float:
    """Seconds to pass an activation (or gradient) of ``size`` bytes per MP rank's stage
    output from stage ``src`` to stage ``dst``: each MP rank to its counterpart, the whole
    tensor, or 1/MP of it (TrainingConfig.pp_scatter_gather, sequence_parallel) followed,
    without sequence parallelism, by the receiving MP groups' All-Gather."""
    pairs = layout.pp_pairs(src, dst)
    mp = cfg.strategy.mp
    if mp == 1 or not (cfg.pp_scatter_gather or cfg.sequence_parallel):
        return comm.time(CollectiveKind.P2P, pairs, [size] * len(pairs))
    t = comm.time(CollectiveKind.P2P, pairs, [size / mp] * len(pairs))
    if not cfg.sequence_parallel:
        groups = layout.mp_groups(dst)
        t += comm.time(CollectiveKind.ALL_GATHER, groups, [size] * len(groups))
    return t


def _input(tl: Timeline, wl, layout, comm, b, name, resource="io") -> int:
    groups = layout.mp_groups(0)
    t = comm.time(CollectiveKind.IO_BROADCAST, groups, [wl.input_bytes * b] * len(groups))
    return tl.add(name, resource, t, "input")


def _parts(c: LayerCosts, idx, backward: bool) -> list[tuple[str, float]]:
    if backward:
        return [("compute", float(c.bwd[idx].sum())), ("mp", float(c.bwd_mp[idx].sum()))]
    return [("compute", float(c.fwd[idx].sum())), ("mp", float(c.fwd_mp[idx].sum()))]


def stage_order(stage: int, stages: int, microbatches: int, chunks: int, gpipe: bool):
    """The compute order of one pipeline stage: ("F" | "B", model chunk, microbatch).

    One chunk per stage: GPipe (every forward, then every backward) or 1F1B (PipeDream-flush,
    Narayanan et al., SC'21, sec. 2.2.1: min(stages - stage - 1, m) forwards, then one
    forward and one backward in turn, then the remaining backwards). Several chunks: the
    interleaved 1F1B schedule of Megatron-LM (sec. 2.2.2; its
    forward_backward_pipelining_with_interleaving): (stages - stage - 1) x 2 + (chunks - 1) x
    stages warm-up forwards (all of them when microbatches = stages); the k-th forward runs
    chunk (k // stages) % chunks on microbatch (k // (stages x chunks)) x stages + k %
    stages, the k-th backward the chunks in reverse."""
    P, m, v = stages, microbatches, chunks
    if v == 1:
        warm = m if gpipe else min(P - stage - 1, m)
        order = [("F", 0, i) for i in range(warm)]
        for i in range(m - warm):
            order += [("F", 0, warm + i), ("B", 0, i)]
        return order + [("B", 0, i) for i in range(m - warm, m)]
    total = m * v
    warm = total if m == P else min((P - stage - 1) * 2 + (v - 1) * P, total)

    def fwd(k):
        return ("F", (k // P) % v, (k // (P * v)) * P + k % P)

    def bwd(k):
        return ("B", v - 1 - (k // P) % v, (k // (P * v)) * P + k % P)

    order = [fwd(k) for k in range(warm)]
    for j in range(total - warm):
        order += [fwd(warm + j), bwd(j)]
    return order + [bwd(j) for j in range(total - warm, total)]


def stationary(
    wl: Workload,
    cfg: TrainingConfig,
    npu: NPU,
    layout: Layout,
    comm: CommCost,
    ranges: list[tuple[int, int]],
    recompute: str,
) -> Timeline:
    """Weight-stationary: ``ranges`` are the PP x virtual_stages model chunks (contiguous
    layer ranges); chunk k runs on stage k mod PP."""
    st = cfg.strategy
    P, m, b, v = st.pp, cfg.microbatches, cfg.microbatch_size, cfg.virtual_stages
    K = P * v
    if len(ranges) != K:
        raise ValueError(f"{len(ranges)} layer ranges for {P} stages x {v} model chunks")
    stage_of = np.concatenate([np.full(e - s, k % P) for k, (s, e) in enumerate(ranges)])
    c = layer_costs(wl, cfg, npu, layout, comm, stage_of, b, recompute)
    tl = Timeline()
    mp_of = [layout.mp_groups(s) for s in range(P)]
    down = [layout.pp_pairs(s, (s + 1) % P) for s in range(P)]  # pairs to the next stage
    up = [layout.pp_pairs(s, (s - 1) % P) for s in range(P)]  # ... and to the previous one
    inputs = [_input(tl, wl, layout, comm, b, f"in{i}") for i in range(m)]
    # Pipeline transfers: forward activations chunk k -> k+1, gradients k+1 -> k.
    act_t, grad_t = [], []
    for k in range(K - 1):
        last, first = ranges[k][1] - 1, ranges[k + 1][0]
        s1, s2 = k % P, (k + 1) % P
        act_t.append(pp_transfer_time(comm, cfg, layout, s1, s2, wl.layers[last].out_bytes * b))
        grad_t.append(pp_transfer_time(comm, cfg, layout, s2, s1, wl.layers[first].in_bytes * b))
    F: dict[tuple[int, int], int] = {}
    B: dict[tuple[int, int], int] = {}  # the task that ends the backward of (chunk, i)
    Bfirst: dict[tuple[int, int], int] = {}  # the task that starts it
    A: dict[tuple[int, int], int] = {}  # activation transfer out of chunk k
    G: dict[tuple[int, int], int] = {}  # gradient transfer out of chunk k (to k - 1)
    dp_tasks: dict[int, list[int]] = {s: [] for s in range(P)}
    dp_op = CollectiveKind.ALL_REDUCE if cfg.zero_stage == 0 else CollectiveKind.REDUCE_SCATTER
    buckets = cfg.dp_overlap and v == 1 and st.dp > 1

    def dp_reduce(name: str, s: int, size: float, dep: int) -> int:
        """Stage ``s``'s DP reduction of ``size`` gradient bytes after task ``dep``."""
        groups = layout.dp_groups(s)
        t = comm.time(dp_op, groups, [float(size)] * len(groups))
        return tl.add(name, f"dp{s}", t, "dp", deps=[dep], where=groups)

    for s in range(P):
        last_b = None
        for kind, chunk, i in stage_order(s, P, m, v, cfg.pipeline == "gpipe"):
            k = chunk * P + s
            a, e = ranges[k]
            idx = np.arange(a, e)
            if kind == "F":
                F[k, i] = tl.add(f"F{k}.{i}", f"stage{s}", _parts(c, idx, False), where=mp_of[s])
                if k < K - 1:
                    A[k, i] = tl.add(
                        f"A{k}.{i}",
                        f"pp-fwd{s}",
                        act_t[k],
                        "pp",
                        [F[k, i]],
                        where=down[s],
                    )
                continue
            if not (buckets and i == m - 1):
                B[k, i] = Bfirst[k, i] = tl.add(
                    f"B{k}.{i}", f"stage{s}", _parts(c, idx, True), where=mp_of[s]
                )
            else:
                # Last microbatch: backward in buckets, each followed by its DP reduction.
                first = t = None
                for j, bucket in enumerate(_buckets(c.grad_bytes, idx[::-1], cfg.dp_bucket_bytes)):
                    t = tl.add(
                        f"B{k}.{i}.b{j}", f"stage{s}", _parts(c, bucket, True), where=mp_of[s]
                    )
                    first = t if first is None else first
                    dp_tasks[s].append(dp_reduce(f"DP{s}.b{j}", s, c.grad_bytes[bucket].sum(), t))
                B[k, i], Bfirst[k, i] = t, first
            last_b = B[k, i]
            if k > 0:
                G[k, i] = tl.add(
                    f"G{k}.{i}",
                    f"pp-bwd{s}",
                    grad_t[k - 1],
                    "pp",
                    [B[k, i]],
                    where=up[s],
                )
        if not buckets and st.dp > 1:
            # All of the stage's gradients at once, after its last backward.
            size = sum(c.grad_bytes[a:e].sum() for a, e in ranges[s::P])
            dp_tasks[s].append(dp_reduce(f"DP{s}", s, size, last_b))
    for i in range(m):
        tl.depend(F[0, i], inputs[i])
        tl.depend(Bfirst[K - 1, i], F[K - 1, i])
        for k in range(1, K):
            tl.depend(F[k, i], A[k - 1, i])
        for k in range(K - 1):
            tl.depend(Bfirst[k, i], G[k + 1, i])
    # Optimizer step (memory-bound) and, under ZeRO, the All-Gather of updated weights.
    for s in range(P):
        p = float(sum(c.grad_bytes[a:e].sum() for a, e in ranges[s::P])) / FP16
        shard = p / (st.dp if cfg.zero_stage >= 1 else 1)
        t_opt = shard * cfg.optimizer_hbm_bytes_per_param / npu.hbm_rate
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
            pp_cache[key] = pp_transfer_time(comm, cfg, layout, src, dst, size)
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
