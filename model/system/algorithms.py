"""Collective algorithms: a request over an NPU group becomes chunked transfers in a Schedule.

Endpoint algorithms (the mesh, FRED-A/C, and fallbacks), all over unicast routes:

* ``ring``: logical ring in group order; All-Reduce = Reduce-Scatter then All-Gather,
  2(N-1) steps of D/N. On a mesh each hop follows X-Y routes, so non-neighbour hops share links.
* ``mesh-2d`` (wafer-wide or any full rectangle on a mesh): Reduce-Scatter along rows, All-Reduce
  of the D/W shard along columns, All-Gather along rows; even chunks run their rings one way,
  odd chunks the opposite way (the paper's "two chunks in opposite directions"). Each row and
  column ring uses the folded order (folded()), so no hop crosses the whole line.
* ``hierarchical-ring`` (FRED-A/C, BlueConnect style): Reduce-Scatter inside each L1 switch,
  All-Reduce of the shards across L1 switches among members of equal local rank (through L2),
  All-Gather inside each L1. Needs the same number (>= 2) of members under each L1 switch
  involved; otherwise the flat ring.
* Reduce = ring Reduce-Scatter then every member sends its shard to the root; Broadcast = the
  root scatters D/N shards, then ring All-Gather; All-to-All = N-1 rounds, member i sending
  D/N to member i+r in round r; point-to-point = one route.
* I/O patterns for weight streaming: ``io-broadcast`` (D bytes from off-wafer memory, 1/K from
  each of the K I/O controllers, to every group member) and ``io-reduce`` (gradients of D
  bytes summed over the group, 1/K delivered to each controller). Each controller's shard
  moves as a relay transfer (Schedule.add_relay): the NPUs it crosses forward it packet by
  packet (broadcast) or add their own gradients and forward the sum (reduce).
  ``io-trees`` (mesh): each shard is split between two multicast trees rooted at the
  controller's NPU, the union of the X-Y routes and the union of the Y-X routes to the
  members; the split fraction minimises the most loaded link (for the full 5 x 4 mesh it is
  4/7 X-Y, which loads every corner NPU's two in-links equally: the throttled rate of
  fred-reference.md section 3). ``io-reduce`` runs the same trees reversed.
  ``io-relay`` (switch trees without in-switch collectives): each shard is forwarded along a
  chain through the group that visits every L1 switch's members once, starting with the
  members under the controller's own L1 switch; the reduce is the reversed chain.

In-switch algorithms (FRED-B/D), each a tree flow (fredfab.model.system.schedule.tree_flow):
All-Reduce, Reduce, Broadcast/Multicast and the I/O patterns are one flow each (L1 reduce,
L2 reduce, L2 to L1, L1 multicast, pipelined); Reduce-Scatter is N serial reduce flows of D/N,
All-Gather N serial multicasts, with a switch reconfiguration between steps. All-to-All and
point-to-point are unicast, routed online (the default configuration index), not circuits.

Chunks: the request is split into C chunks; chunk c+1 of every stream starts once chunk c has
been sent, so hierarchical phases and chains pipeline across chunks.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from fredfab.model.collective_kind import SYSTEM_OPS, CollectiveKind
from fredfab.model.system.fabric import Fabric, FabricError
from fredfab.model.system.schedule import (
    NO_DEP,
    Relays,
    Schedule,
    TreeFlow,
    prepare_relays,
    prepare_trees,
    tree_flow,
)

OPS = SYSTEM_OPS
#: Other names accepted for the collectives of OPS.
ALIASES = {
    "allreduce": CollectiveKind.ALL_REDUCE,
    "reducescatter": CollectiveKind.REDUCE_SCATTER,
    "allgather": CollectiveKind.ALL_GATHER,
    CollectiveKind.MULTICAST: CollectiveKind.BROADCAST,
    "alltoall": CollectiveKind.ALL_TO_ALL,
    "point-to-point": CollectiveKind.P2P,
    "sendrecv": CollectiveKind.P2P,
    CollectiveKind.UNICAST: CollectiveKind.P2P,
}


def normalize_op(op: str) -> CollectiveKind:
    """The collective ``op`` names (case-insensitive, aliases accepted)."""
    o = str(op).lower()
    o = ALIASES.get(o, o)
    if o not in OPS:
        raise ValueError(f"collective {op!r} unknown; use one of {', '.join(OPS)} (or multicast)")
    return CollectiveKind(o)


def bus_factor(op: str, n: int) -> float:
    """Bytes each NPU sends (and receives) per byte of the request under the endpoint
    (ring) algorithms, NCCL's "bus bandwidth" factor: per-NPU effective bandwidth is
    factor * size / time. All-Reduce 2(N-1)/N; Reduce-Scatter, All-Gather, All-to-All
    (N-1)/N; Reduce, Broadcast, point-to-point and the I/O patterns 1."""
    op = normalize_op(op)
    if n <= 1:
        return 0.0
    if op == CollectiveKind.ALL_REDUCE:
        return 2 * (n - 1) / n
    if op in (CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALL_GATHER, CollectiveKind.ALL_TO_ALL):
        return (n - 1) / n
    return 1.0


@dataclass(frozen=True)
class CollectiveRequest:
    """One collective over ``group`` (NPU ids, in ring order) of ``size_bytes`` per NPU.

    ``root`` is the destination of Reduce and the source of Broadcast (default group[0]).
    A point-to-point request has ``group = (src, dst)``. ``size_bytes`` is the data each
    member contributes (All-Reduce, Reduce-Scatter, Reduce), holds at the end (All-Gather,
    Broadcast) or sends in all (All-to-All); for the I/O patterns, the bytes streamed.
    """

    op: str
    group: tuple[int, ...]
    size_bytes: float
    root: int | None = None
    label: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", normalize_op(self.op))
        object.__setattr__(self, "group", tuple(int(u) for u in self.group))
        if not (self.size_bytes >= 0 and np.isfinite(self.size_bytes)):
            raise ValueError(f"size must be a finite number of bytes >= 0, got {self.size_bytes}")
        object.__setattr__(self, "size_bytes", float(self.size_bytes))
        if not self.group:
            raise ValueError(f"{self.op}: the group is empty")
        if len(set(self.group)) != len(self.group):
            raise ValueError(f"{self.op}: the group names an NPU twice")
        if self.op == CollectiveKind.P2P and len(self.group) != 2:
            raise ValueError(f"p2p needs group = (src, dst), got {len(self.group)} NPUs")
        if self.root is not None:
            if self.op not in (CollectiveKind.REDUCE, CollectiveKind.BROADCAST):
                raise ValueError(f"{self.op} takes no root")
            if self.root not in self.group:
                raise ValueError(f"root {self.root} is not in the group")

    @property
    def root_npu(self) -> int:
        return self.group[0] if self.root is None else self.root


@dataclass(frozen=True)
class Plan:
    """How one request will run: algorithm name and, for in-switch ones, its switch phases."""

    index: int
    request: CollectiveRequest
    algorithm: str
    #: In-switch serial steps; each a tuple of tree flows configured at the same time.
    steps: tuple[tuple[TreeFlow, ...], ...] = ()
    #: True when ``steps`` run at once, time-multiplexed at packet granularity (several
    #: multicasts into the same output ports cannot share one circuit configuration).
    multiplexed: bool = False
    notes: tuple[str, ...] = field(default=())


def plan_request(
    fabric: Fabric, req: CollectiveRequest, index: int = 0, endpoint: bool = False
) -> Plan:
    """Choose the algorithm for ``req`` on ``fabric`` (``endpoint`` forbids in-switch ones)."""
    g = fabric.check_npus(req.group, f"{req.op} group")
    op = req.op
    n = len(g)
    if op.uses_io and not fabric.ios:
        raise FabricError(f"{op}: fabric {fabric.name} has no I/O controllers")
    if n == 1 and not op.uses_io:
        return Plan(index, req, "local")
    if (
        fabric.in_switch
        and not endpoint
        and op not in (CollectiveKind.ALL_TO_ALL, CollectiveKind.P2P)
    ):
        if op == CollectiveKind.ALL_REDUCE:
            steps = ((tree_flow(fabric, g, g),),)
        elif op == CollectiveKind.REDUCE:
            steps = ((tree_flow(fabric, g, [req.root_npu]),),)
        elif op == CollectiveKind.BROADCAST:
            steps = ((tree_flow(fabric, [req.root_npu], g),),)
        elif op == CollectiveKind.REDUCE_SCATTER:
            steps = tuple((tree_flow(fabric, g, [u]),) for u in g)
        elif op == CollectiveKind.ALL_GATHER:
            steps = tuple((tree_flow(fabric, [u], g),) for u in g)
        elif op == CollectiveKind.IO_BROADCAST:
            steps = tuple((tree_flow(fabric, [io], g),) for io in fabric.ios)
        else:  # io-reduce
            steps = tuple((tree_flow(fabric, g, [io]),) for io in fabric.ios)
        mux = op.uses_io
        return Plan(index, req, f"in-switch-{op}", steps, multiplexed=mux)
    if op == CollectiveKind.ALL_REDUCE:
        if fabric.routing == "xy" and _rectangle(fabric, g) is not None:
            return Plan(index, req, "mesh-2d")
        if fabric.routing == "tree" and _l1_blocks(fabric, g) is not None:
            return Plan(index, req, "hierarchical-ring")
        return Plan(index, req, "ring")
    names = {
        CollectiveKind.REDUCE_SCATTER: "ring",
        CollectiveKind.ALL_GATHER: "ring",
        CollectiveKind.REDUCE: "ring-reduce-scatter+gather",
        CollectiveKind.BROADCAST: "scatter+ring-all-gather",
        CollectiveKind.ALL_TO_ALL: "direct-rounds",
        CollectiveKind.P2P: "direct",
    }
    if op.uses_io:
        return Plan(index, req, "io-trees" if fabric.routing == "xy" else "io-relay")
    return Plan(index, req, names[op])


def build(sched: Schedule, plan: Plan, chunks: int = 1) -> None:
    """Add the transfers of ``plan`` to ``sched``, split into ``chunks`` chunks."""
    if chunks < 1:
        raise ValueError(f"chunks must be >= 1, got {chunks}")
    alg = plan.algorithm
    if alg == "local":
        return
    if alg.startswith("in-switch-"):
        _build_in_switch(sched, plan, chunks)
        return
    builder = _BUILDERS.get(alg)
    if builder is None:
        raise AssertionError(f"no builder for {alg}")
    builder(sched, plan, chunks)


def _build_mesh_2d(sched: Schedule, plan: Plan, chunks: int) -> None:
    """Rows Reduce-Scatter, columns All-Reduce the D/W shard, rows All-Gather; even chunks
    run their rings one way, odd chunks the other (folded ring orders)."""
    req, r = plan.request, plan.index
    Dc = req.size_bytes / chunks
    M = _rectangle(sched.fabric, req.group)
    H, W = M.shape
    M = M[folded(H)][:, folded(W)]  # rows and columns stay rows and columns
    prev = [None, None]
    for c in range(chunks):
        d = c % 2
        Mr = M[:, ::-1] if d else M
        e1, s1 = _rings(sched, Mr, W - 1, Dc / W, r, None, prev[d] and prev[d][0])
        Mc = Mr.T[:, ::-1] if d else Mr.T
        ent = e1.T[:, ::-1] if d else e1.T
        e2, s2 = _rings(sched, Mc, 2 * (H - 1), Dc / (W * H), r, ent, prev[d] and prev[d][1])
        back = e2[:, ::-1].T if d else e2.T
        _, s3 = _rings(sched, Mr, W - 1, Dc / W, r, back, prev[d] and prev[d][2])
        prev[d] = (s1, s2, s3)


def _build_hierarchical_ring(sched: Schedule, plan: Plan, chunks: int) -> None:
    """Reduce-Scatter inside each L1 switch, All-Reduce of the shards across L1 switches
    among equal local ranks, All-Gather inside each L1 switch."""
    req, r = plan.request, plan.index
    Dc = req.size_bytes / chunks
    M = _l1_blocks(sched.fabric, req.group)
    G, k = M.shape
    prev = None
    for _c in range(chunks):
        e1, s1 = _rings(sched, M, k - 1, Dc / k, r, None, prev and prev[0])
        e2, s2 = _rings(sched, M.T, 2 * (G - 1), Dc / (k * G), r, e1.T, prev and prev[1])
        _, s3 = _rings(sched, M, k - 1, Dc / k, r, e2.T, prev and prev[2])
        prev = (s1, s2, s3)


def _build_ring(sched: Schedule, plan: Plan, chunks: int) -> None:
    """One ring in group order: 2(N-1) steps of D/N for All-Reduce, N-1 for Reduce-Scatter
    and All-Gather."""
    req = plan.request
    n = len(req.group)
    M = np.array(req.group, dtype=np.int64).reshape(1, n)
    steps = {
        CollectiveKind.ALL_REDUCE: 2 * (n - 1),
        CollectiveKind.REDUCE_SCATTER: n - 1,
        CollectiveKind.ALL_GATHER: n - 1,
    }[req.op]
    prev = None
    for _c in range(chunks):
        _, prev = _rings(sched, M, steps, req.size_bytes / chunks / n, plan.index, None, prev)


def _build_ring_reduce(sched: Schedule, plan: Plan, chunks: int) -> None:
    """Reduce: ring Reduce-Scatter, then every member sends its shard to the root."""
    req, r = plan.request, plan.index
    g = np.array(req.group, dtype=np.int64)
    n = len(g)
    Dc = req.size_bytes / chunks
    M = g.reshape(1, n)
    root = req.root_npu
    others = g[g != root]
    prev = None
    for _c in range(chunks):
        ex, s1 = _rings(sched, M, n - 1, Dc / n, r, None, prev and prev[0])
        after = ex.ravel()[g != root]
        s2 = sched.add_paths(
            others,
            np.full(n - 1, root),
            Dc / n,
            after=[after],
            after_sent=[prev[1]] if prev else (),
            request=r,
        )
        prev = (s1, s2)


def _build_scatter_broadcast(sched: Schedule, plan: Plan, chunks: int) -> None:
    """Broadcast: the root scatters D/N shards, then a ring All-Gather."""
    req, r = plan.request, plan.index
    g = np.array(req.group, dtype=np.int64)
    n = len(g)
    Dc = req.size_bytes / chunks
    M = g.reshape(1, n)
    root = req.root_npu
    others = g[g != root]
    prev = None
    for _c in range(chunks):
        s1 = sched.add_paths(
            np.full(n - 1, root),
            others,
            Dc / n,
            after_sent=[prev[0]] if prev else (),
            request=r,
        )
        ent = np.full(n, NO_DEP, dtype=np.int64)
        ent[g != root] = s1
        _, s2 = _rings(sched, M, n - 1, Dc / n, r, ent.reshape(1, n), prev and prev[1])
        prev = (s1, s2)


def _build_direct_rounds(sched: Schedule, plan: Plan, chunks: int) -> None:
    """All-to-All: N-1 rounds, member i sending D/N to member i+r in round r."""
    req = plan.request
    g = np.array(req.group, dtype=np.int64)
    n = len(g)
    last = None
    for _c in range(chunks):
        for rnd in range(1, n):
            last = sched.add_paths(
                g,
                np.roll(g, -rnd),
                req.size_bytes / chunks / n,
                after_sent=[last] if last is not None else (),
                request=plan.index,
            )


def _build_direct(sched: Schedule, plan: Plan, chunks: int) -> None:
    """Point-to-point: one route."""
    req = plan.request
    g = np.array(req.group, dtype=np.int64)
    last = None
    for _c in range(chunks):
        last = sched.add_paths(
            g[:1],
            g[1:],
            req.size_bytes / chunks,
            after_sent=[last] if last is not None else (),
            request=plan.index,
        )


# ---------------------------------------------------------------------- helpers
def _rings(sched, M, steps, size, req, entry, prev):
    """Concurrent rings, one per row of member matrix M (R x n): in step k member M[r, i]
    sends ``size`` bytes to M[r, i+1] once it has received step k-1 (or its ``entry``
    transfer, aligned with M). ``prev``: the previous chunk's per-step transfer ids, whose
    same-position sends must have left first. Returns (exit, per-step ids): exit[r, i] is the
    last transfer member M[r, i] received (its entry if there were no steps)."""
    R, n = M.shape
    src = M.ravel()
    dst = np.roll(M, -1, axis=1).ravel()
    recv = None if entry is None else np.asarray(entry, dtype=np.int64)
    out = []
    for k in range(steps):
        t = sched.add_paths(
            src,
            dst,
            size,
            after=[recv.ravel()] if recv is not None else (),
            after_sent=[prev[k]] if prev else (),
            request=req,
        )
        out.append(t)
        recv = np.roll(t.reshape(R, n), 1, axis=1)
    if recv is None:
        recv = np.full((R, n), NO_DEP, dtype=np.int64)
    return recv, out


def _rectangle(f: Fabric, group: Iterable[int]) -> np.ndarray | None:
    """Member matrix (rows = y, columns = x) if ``group`` fills a rectangle of >= 2 x 2."""
    g = list(group)
    xs = sorted({f.nodes[u].x for u in g})
    ys = sorted({f.nodes[u].y for u in g})
    if len(xs) < 2 or len(ys) < 2 or len(xs) * len(ys) != len(g):
        return None
    if xs != list(range(xs[0], xs[-1] + 1)) or ys != list(range(ys[0], ys[-1] + 1)):
        return None
    return np.array([[f.grid[x, y] for x in xs] for y in ys], dtype=np.int64)


def folded(n: int) -> np.ndarray:
    """Ring order embedding a ring in a line of n nodes with hops of at most 2 links:
    0, 2, 4, ..., then the odd positions back (0 2 4 3 1 for n = 5). Every directed link of
    the line carries exactly one hop, like the naive order 0..n-1 whose closing hop crosses
    the whole line, but the latency of the steps stays even (no n-1-hop straggler)."""
    return np.concatenate([np.arange(0, n, 2), np.arange(n - 1 - (n % 2 == 1), 0, -2)])


def _l1_blocks(f: Fabric, group: Iterable[int]) -> np.ndarray | None:
    """Members per L1 switch (rows, in group order) if >= 2 switches of equal count >= 2."""
    by: dict[int, list[int]] = {}
    for u in group:
        by.setdefault(f.l1_of(u), []).append(u)
    sizes = {len(v) for v in by.values()}
    if len(by) < 2 or len(sizes) != 1 or sizes.pop() < 2:
        return None
    return np.array(list(by.values()), dtype=np.int64)


def _build_in_switch(sched: Schedule, plan: Plan, chunks: int) -> None:
    req, f = plan.request, sched.fabric
    D, r = req.size_bytes, plan.index
    reconf = f.timing.reconfiguration_time
    n = len(req.group)
    op = req.op

    if op in (CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALL_GATHER):
        # N serial steps of D/N, one circuit configuration each.
        last = None
        for u in req.group:
            srcs, sinks = (
                (req.group, [u]) if op == CollectiveKind.REDUCE_SCATTER else ([u], req.group)
            )
            last = sched.add_tree(
                srcs,
                sinks,
                D / n,
                after_sent=[last] if last is not None else (),
                delay=reconf if last is not None else 0.0,
                request=r,
            )
        return
    # One flow (or K multiplexed ones for the I/O patterns, D/K each), chunked: the plan's
    # steps hold one tree flow each.
    rel = prepare_trees(f, tuple(step[0] for step in plan.steps))
    size = D / len(rel) if op.uses_io else D
    last = None
    for _c in range(chunks):
        last = sched.add_relays(rel, size / chunks, after_sent=last, request=r)


def _build_io_relays(sched: Schedule, plan: Plan, chunks: int) -> None:
    """Endpoint I/O patterns: each controller's D/K shard as one relay (io_relays)."""
    req, f = plan.request, sched.fabric
    rel = _io_relay_set(f, req.group, req.op == CollectiveKind.IO_REDUCE)
    last = None
    for _c in range(chunks):
        last = sched.add_relays(
            rel, req.size_bytes / len(f.ios) / chunks, after_sent=last, request=plan.index
        )


#: The builder of each endpoint algorithm plan_request chooses.
_BUILDERS = {
    "mesh-2d": _build_mesh_2d,
    "hierarchical-ring": _build_hierarchical_ring,
    "ring": _build_ring,
    "ring-reduce-scatter+gather": _build_ring_reduce,
    "scatter+ring-all-gather": _build_scatter_broadcast,
    "direct-rounds": _build_direct_rounds,
    "direct": _build_direct,
    "io-trees": _build_io_relays,
    "io-relay": _build_io_relays,
}


@functools.lru_cache(maxsize=256)
def _io_relay_set(f: Fabric, group: tuple[int, ...], reduce: bool) -> Relays:
    return prepare_relays(f, _io_relays_cached(f, group, reduce))


@functools.lru_cache(maxsize=256)
def _io_relays_cached(f: Fabric, group: tuple[int, ...], reduce: bool):
    if f.routing == "xy":
        out = _mesh_io_trees(f, group)
    else:
        out = []
        for k, io in enumerate(f.ios):
            links, preds = _relay_chain(f, io, k, group)
            out.append((links, preds, (1.0,) * len(links)))
    if reduce:
        out = [_reversed_tree(f, *r) for r in out]
    return tuple(out)


def io_relays(
    f: Fabric, group: Iterable[int], reduce: bool = False
) -> tuple[tuple[tuple[int, ...], tuple[tuple[int, ...], ...], tuple[float, ...]], ...]:
    """Per I/O controller (in ``f.ios`` order): the relay carrying its shard as (links,
    preds, share), see Schedule.add_relay; for ``reduce`` the relay runs towards the
    controller. Memoised per fabric and group."""
    return _io_relays_cached(f, tuple(int(u) for u in group), bool(reduce))


def _mesh_io_trees(f: Fabric, group: tuple[int, ...]):
    """Per controller, the union of two multicast trees from its NPU to every member, the
    X-Y routes and the Y-X routes (those of one dimension order from one node form a tree:
    each is a shortest path and a prefix of the route to any node further along it); a
    fraction a of the shard takes the X-Y tree and 1 - a the Y-X tree.

    One a for every controller: the one minimising the most loaded link's bytes per unit of
    bandwidth (a 1-D minimax of lines, solved exactly at their crossings). On the full W x H
    mesh with one controller per outer side it is (W-1)/(W+H-2) (4/7 on 5 x 4): each corner
    NPU's two in-links then carry W+H-1 shards each, the reference's throttled rate.
    """
    trees = [(_dor_parents(f, io, group, "xy"), _dor_parents(f, io, group, "yx")) for io in f.ios]
    load = np.zeros((2, len(f.links)))
    for io, per_io in zip(f.ios, trees, strict=True):
        for o, par in enumerate(per_io):
            ls = [f.link_id[io, f.attach[io]]] + [f.link_id[p, v] for v, p in par.items()]
            np.add.at(load[o], np.array(ls), 1.0)
    a = _minimax_fraction(load[1] / f.bandwidth, (load[0] - load[1]) / f.bandwidth)
    out = []
    for io, (px, py) in zip(f.ios, trees, strict=True):
        e = f.attach[io]
        ex, ey = f.nodes[e].x, f.nodes[e].y
        share: dict[tuple[int, int], float] = {}
        for par, frac in ((px, a), (py, 1.0 - a)):
            if frac > 0:
                for v, p in par.items():
                    share[p, v] = share.get((p, v), 0.0) + frac
        links = [f.link_id[io, e]]
        shares = [1.0]
        preds: list[tuple[int, ...]] = [()]
        into: dict[int, list[int]] = {e: [0]}  # node -> indices of the links delivering to it
        hops = {pv: abs(f.nodes[pv[1]].x - ex) + abs(f.nodes[pv[1]].y - ey) for pv in share}
        for p, v in sorted(share, key=lambda pv: (hops[pv], pv)):  # parents before children
            links.append(f.link_id[p, v])
            shares.append(min(share[p, v], 1.0))
            preds.append(tuple(into[p]))
            into.setdefault(v, []).append(len(links) - 1)
        out.append((tuple(links), tuple(preds), tuple(shares)))
    return out


def _minimax_fraction(c: np.ndarray, d: np.ndarray) -> float:
    """The a in [0, 1] minimising max_l (c_l + a d_l); ties: the one closest to 1/2."""
    inc, dec = d > 0, d < 0
    cand = [0.0, 0.5, 1.0]
    if inc.any() and dec.any():
        ci, di = c[inc][:, None], d[inc][:, None]
        cj, dj = c[dec][None, :], d[dec][None, :]
        x = ((cj - ci) / (di - dj)).ravel()
        cand += list(x[(x > 0) & (x < 1)])
    cand_a = np.unique(np.array(cand))
    g = (c[None, :] + cand_a[:, None] * d[None, :]).max(axis=1)
    ok = cand_a[g <= g.min() * (1 + 1e-12)]
    return float(ok[np.argmin(np.abs(ok - 0.5))])


def _dor_parents(f: Fabric, io: int, group: tuple[int, ...], order: str) -> dict[int, int]:
    """The tree of dimension-order routes (``order`` "xy" or "yx") from controller ``io``'s
    NPU to every member, as child -> parent."""
    e = f.attach[io]
    ex, ey = f.nodes[e].x, f.nodes[e].y
    parent: dict[int, int] = {}
    for u in group:
        x, y = ex, ey
        bx, by = f.nodes[u].x, f.nodes[u].y
        prev = e
        for axis in order:
            while (x, y)[axis == "y"] != (bx, by)[axis == "y"]:
                if axis == "x":
                    x += 1 if bx > x else -1
                else:
                    y += 1 if by > y else -1
                v = f.grid[x, y]
                parent.setdefault(v, prev)
                prev = v
    return parent


def _relay_chain(f: Fabric, io: int, k: int, group: tuple[int, ...]):
    """Chain from controller ``io`` through every member (switch-tree fabrics): members
    grouped by L1 switch in group order, starting with the block under the controller's L1
    switch (or the nearest member's) at its (k mod block size)-th member, each block visited
    once, so each L1 switch's downlink carries the shard once (none for its own block)."""
    blocks: dict[int, list[int]] = {}
    for u in group:
        blocks.setdefault(f.l1_of(u), []).append(u)
    keys = list(blocks)
    home = f.l1_of(io)
    if home not in blocks:
        home = f.l1_of(_nearest_member(f, io, list(group), k))
    b = blocks[home]
    i = k % len(b)
    order = b[i:] + b[:i]
    j = keys.index(home)
    for key in keys[j + 1 :] + keys[:j]:
        order += blocks[key]
    links: list[int] = []
    for a, z in zip([io, *order], order, strict=False):
        links += f.route(a, z)
    preds = tuple(((i - 1,) if i else ()) for i in range(len(links)))
    return tuple(links), preds


def _reversed_tree(f: Fabric, links, preds, share):
    """The reduction relay of a multicast relay: every link reversed, children feed parents."""
    n = len(links)
    succ: list[list[int]] = [[] for _ in range(n)]
    for i, ps in enumerate(preds):
        for q in ps:
            succ[q].append(i)
    rl = tuple(int(f.link_id[f.link_dst[lk], f.link_src[lk]]) for lk in reversed(links))
    rp = tuple(tuple(sorted(n - 1 - j for j in succ[i])) for i in reversed(range(n)))
    return rl, rp, tuple(reversed(share))


def _nearest_member(f: Fabric, io: int, group: list[int], k: int) -> int:
    """The group member closest to I/O controller ``io`` (fewest hops; ties: group order),
    spreading controllers that tie over the group round-robin."""
    hops = [len(f.route(io, u)) for u in group]
    best = min(hops)
    cands = [u for u, h in zip(group, hops, strict=True) if h == best]
    return cands[k % len(cands)]
