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
  involved; otherwise the flat ring. ``hierarchical-ring-pipelined`` runs it through
  PIPELINE_CHUNKS times more chunks, so that phase k of chunk c overlaps phase k-1 of chunk
  c+1 and the L1-L2 links stay busy (FRED-A: within 2% of the bound, against 37% above).
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
  paper §3.2). ``io-reduce`` runs the same trees reversed.
  ``io-relay`` (switch trees without in-switch collectives): each shard is forwarded along a
  chain through the group that visits every L1 switch's members once, starting with the
  members under the controller's own L1 switch; the reduce is the reversed chain.

In-switch algorithms (FRED-B/D), each a tree flow (fredfab.model.system.schedule.tree_flow):
All-Reduce, Reduce, Broadcast/Multicast and the I/O patterns are one flow each (L1 reduce,
L2 reduce, L2 to L1, L1 multicast, pipelined); Reduce-Scatter is N serial reduce flows of D/N,
All-Gather N serial multicasts, with a switch reconfiguration between steps. All-to-All and
point-to-point are unicast, routed online (the default configuration index), not circuits.

Every algorithm states a lower bound (``bound``, from the bytes it moves over each link,
fredfab.model.system.bounds); docs/system-model.md gives each in closed form. Which candidate
runs is decided by the simulator (fredfab.sim.engines.algorithm_choice): the fastest.

Chunks: the request is split into C chunks; chunk c+1 of every stream starts once chunk c has
been sent, so hierarchical phases and chains pipeline across chunks.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import numpy as np

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.errors import InputError
from fredfab.model.system.bounds import LinkLoad, ring_chain_seconds, split_seconds
from fredfab.model.system.elements import FabricError
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.registry import Algorithm, Steps, candidates, lookup, register
from fredfab.model.system.request import (  # noqa: F401  (re-exported)
    ALIASES,
    OPS,
    CollectiveRequest,
    Plan,
    bus_factor,
    normalize_op,
)
from fredfab.model.system.rings import folded, rectangle, ring_factor, rings
from fredfab.model.system.schedule import (
    NO_DEP,
    Relays,
    Schedule,
    prepare_relays,
    prepare_trees,
    tree_flow,
)


def plan_request(
    fabric: Fabric,
    req: CollectiveRequest,
    index: int = 0,
    endpoint: bool = False,
    algorithm: str | None = None,
) -> Plan:
    """The plan of ``req`` on ``fabric``: the named ``algorithm`` if given (it must apply),
    else the most preferred candidate (fredfab.model.system.registry); ``endpoint`` forbids
    in-switch algorithms."""
    check_request(fabric, req)
    op = req.op
    if len(req.group) == 1 and not op.uses_io:
        return Plan(index, req, "local")
    found = candidates(fabric, req, endpoint)
    if algorithm is not None:
        chosen = lookup(algorithm)
        if chosen.named_only and op in chosen.ops and chosen.applies(fabric, req):
            found = [chosen]
        if chosen not in found:
            names = ", ".join(a.name for a in found) or "none"
            raise InputError(
                f"algorithm {algorithm!r} does not apply to {op} over {len(req.group)} NPUs "
                f"on {fabric.name}; candidates: {names}"
            )
    elif found:
        chosen = found[0]
    else:
        raise FabricError(f"no algorithm runs {op} over {len(req.group)} NPUs on {fabric.name}")
    return chosen.plan(fabric, req, index)


def check_request(fabric: Fabric, req: CollectiveRequest) -> None:
    """A FabricError unless ``req`` can run on ``fabric`` (NPUs exist, I/O controllers)."""
    fabric.check_npus(req.group, f"{req.op} group")
    if req.op.uses_io and not fabric.ios:
        raise FabricError(f"{req.op}: fabric {fabric.name} has no I/O controllers")


def build(sched: Schedule, plan: Plan, chunks: int = 1) -> None:
    """Add the transfers of ``plan`` to ``sched``, split into ``chunks`` chunks."""
    if chunks < 1:
        raise InputError(f"chunks must be >= 1, got {chunks}")
    if plan.algorithm == "local":
        return
    lookup(plan.algorithm).build(sched, plan, chunks)


def _build_mesh_2d(sched: Schedule, plan: Plan, chunks: int) -> None:
    """Rows Reduce-Scatter, columns All-Reduce the D/W shard, rows All-Gather; even chunks
    run their rings one way, odd chunks the other (folded ring orders)."""
    req, r = plan.request, plan.index
    Dc = req.size_bytes / chunks
    M = rectangle(sched.fabric, req.group)
    H, W = M.shape
    M = M[folded(H)][:, folded(W)]  # rows and columns stay rows and columns
    prev = [None, None]
    for c in range(chunks):
        d = c % 2
        Mr = M[:, ::-1] if d else M
        e1, s1 = rings(sched, Mr, W - 1, Dc / W, r, None, prev[d] and prev[d][0])
        Mc = Mr.T[:, ::-1] if d else Mr.T
        ent = e1.T[:, ::-1] if d else e1.T
        e2, s2 = rings(sched, Mc, 2 * (H - 1), Dc / (W * H), r, ent, prev[d] and prev[d][1])
        back = e2[:, ::-1].T if d else e2.T
        _, s3 = rings(sched, Mr, W - 1, Dc / W, r, back, prev[d] and prev[d][2])
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
        e1, s1 = rings(sched, M, k - 1, Dc / k, r, None, prev and prev[0])
        e2, s2 = rings(sched, M.T, 2 * (G - 1), Dc / (k * G), r, e1.T, prev and prev[1])
        _, s3 = rings(sched, M, k - 1, Dc / k, r, e2.T, prev and prev[2])
        prev = (s1, s2, s3)


#: Chunks of hierarchical-ring-pipelined per requested chunk. With P chunks in flight the
#: phases overlap except while the first chunk fills the pipeline and the last drains it,
#: about (RS + AG time of one chunk) / P of idle bottleneck; 32 keeps FRED-A's All-Reduce
#: within 2% of its bound (tests/sim/engines/test_algorithm_bounds.py).
PIPELINE_CHUNKS = 32
#: At most this many transfers per pipelined plan (fewer chunks on large groups): the cost
#: of simulating a plan grows with its transfers, and a 1,024-NPU hierarchical ring already
#: has ~127,000 per chunk. Where the cap binds the variant pipelines less (or not at all).
PIPELINE_TRANSFERS = 2**17


def pipeline_chunks(group_size: int, l1_size: int, l1_count: int, chunks: int) -> int:
    """Chunks hierarchical-ring-pipelined runs for ``chunks`` requested: PIPELINE_CHUNKS x
    chunks, capped at PIPELINE_TRANSFERS transfers (never fewer than ``chunks``)."""
    per_chunk = group_size * (2 * (l1_size - 1) + 2 * (l1_count - 1))
    return max(chunks, min(chunks * PIPELINE_CHUNKS, PIPELINE_TRANSFERS // max(per_chunk, 1)))


def _pipelining_applies(f: Fabric, req: CollectiveRequest) -> bool:
    """Where the transfer cap leaves room for at least two chunks per requested one: past
    it the variant would build exactly hierarchical-ring's schedule (a second candidate of
    identical time, simulated for nothing)."""
    if f.routing != "tree" or (M := _l1_blocks(f, req.group)) is None:
        return False
    G, k = M.shape
    return pipeline_chunks(G * k, k, G, 1) >= 2


def _build_hierarchical_ring_pipelined(sched: Schedule, plan: Plan, chunks: int) -> None:
    """The hierarchical ring over more chunks (pipeline_chunks): chunk c+1 enters a phase
    once chunk c has left it, so phase k of chunk c overlaps phase k-1 of chunk c+1 and the
    L1 rings keep the NPU links busy while the L1-L2 links carry the middle phase."""
    G, k = _l1_blocks(sched.fabric, plan.request.group).shape
    _build_hierarchical_ring(sched, plan, pipeline_chunks(G * k, k, G, chunks))


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
        _, prev = rings(sched, M, steps, req.size_bytes / chunks / n, plan.index, None, prev)


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
        ex, s1 = rings(sched, M, n - 1, Dc / n, r, None, prev and prev[0])
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
        _, s2 = rings(sched, M, n - 1, Dc / n, r, ent.reshape(1, n), prev and prev[1])
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
    parent: dict[int, int] = {}
    for u in group:
        prev = e
        for v in f.grid_walk(e, u, order):
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


# ---------------------------------------------------------------------- bounds
# Each algorithm's lower bound (fredfab.model.system.bounds): the bytes it moves over each
# link, at full bandwidth, on its most loaded link. Closed forms: docs/system-model.md.


def _bound_ring(f: Fabric, req: CollectiveRequest) -> float:
    """The busiest hop's bytes, or the chain of its 2(N-1) (All-Reduce) or N-1 dependent
    steps, whichever is longer."""
    n = len(req.group)
    load = LinkLoad(f)
    load.ring(req.group, ring_factor(req.op, n) * req.size_bytes)
    steps = 2 * (n - 1) if req.op == CollectiveKind.ALL_REDUCE else n - 1
    return max(load.seconds(), ring_chain_seconds(f, req.group, steps))


def _bound_hierarchical(f: Fabric, req: CollectiveRequest) -> float:
    """Rings in each L1 switch carry 2(k-1)/k D per hop, rings across L1 switches
    2(G-1)/G D/k: one load for both variants (they differ in overlap, not in bytes)."""
    M = _l1_blocks(f, req.group)
    G, k = M.shape
    D = req.size_bytes
    load = LinkLoad(f)
    for row in M:
        load.ring(row, 2 * (k - 1) / k * D)
    for col in M.T:
        load.ring(col, 2 * (G - 1) / G * D / k)
    return load.seconds()


def _bound_mesh_2d(f: Fabric, req: CollectiveRequest) -> float:
    """Row rings 2(W-1)/W D per hop, column rings 2(H-1)/H D/W; chunks split between the
    two ring directions at any ratio (split_seconds)."""
    M = rectangle(f, req.group)
    H, W = M.shape
    M = M[folded(H)][:, folded(W)]
    D = req.size_bytes
    ways = []
    for d in (0, 1):
        Mr = M[:, ::-1] if d else M
        Mc = Mr.T[:, ::-1] if d else Mr.T
        load = LinkLoad(f)
        for row in Mr:
            load.ring(row, 2 * (W - 1) / W * D)
        for col in Mc:
            load.ring(col, 2 * (H - 1) / H * D / W)
        ways.append(load)
    return split_seconds(*ways)


def _bound_ring_reduce(f: Fabric, req: CollectiveRequest) -> float:
    g, n, D = list(req.group), len(req.group), req.size_bytes
    load = LinkLoad(f)
    load.ring(g, (n - 1) / n * D)
    others = [u for u in g if u != req.root_npu]
    load.paths(others, [req.root_npu] * len(others), D / n)
    return load.seconds()


def _bound_scatter_broadcast(f: Fabric, req: CollectiveRequest) -> float:
    g, n, D = list(req.group), len(req.group), req.size_bytes
    load = LinkLoad(f)
    others = [u for u in g if u != req.root_npu]
    load.paths([req.root_npu] * len(others), others, D / n)
    load.ring(g, (n - 1) / n * D)
    return load.seconds()


def _bound_direct_rounds(f: Fabric, req: CollectiveRequest) -> float:
    g, n = list(req.group), len(req.group)
    load = LinkLoad(f)
    for rnd in range(1, n):
        load.paths(g, g[rnd:] + g[:rnd], req.size_bytes / n)
    return load.seconds()


def _bound_direct(f: Fabric, req: CollectiveRequest) -> float:
    load = LinkLoad(f)
    load.path(req.group[0], req.group[1], req.size_bytes)
    return load.seconds()


def _bound_io_relays(f: Fabric, req: CollectiveRequest) -> float:
    """Each controller's D/K shard over its relay, every link carrying its share."""
    load = LinkLoad(f)
    rel = _io_relay_set(f, req.group, req.op == CollectiveKind.IO_REDUCE)
    load.links(rel.links, req.size_bytes / len(f.ios), rel.weights)
    return load.seconds()


def _bound_in_switch(f: Fabric, req: CollectiveRequest) -> float:
    """One tree flow of D (every link carries D); I/O patterns: K concurrent flows of D/K;
    Reduce-Scatter / All-Gather: N serial flows of D/N, each bounded alone, plus the N-1
    reconfigurations between them."""
    steps = _in_switch_steps(f, req)
    D, op = req.size_bytes, req.op
    if op in (CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALL_GATHER):
        total = 0.0
        for (tree,) in steps:
            load = LinkLoad(f)
            rel = prepare_trees(f, (tree,))
            load.links(rel.links, D / len(steps), rel.weights)
            total += load.seconds()
        return total + (len(steps) - 1) * f.timing.reconfiguration_time
    rel = prepare_trees(f, tuple(step[0] for step in steps))
    load = LinkLoad(f)
    load.links(rel.links, D / len(rel) if op.uses_io else D, rel.weights)
    return load.seconds()


# ---------------------------------------------------------------------- registry
def _in_switch_steps(fabric: Fabric, req: CollectiveRequest) -> Steps:
    """The tree flows of each in-switch algorithm (see the module docstring)."""
    g, op = req.group, req.op
    if op == CollectiveKind.ALL_REDUCE:
        return ((tree_flow(fabric, g, g),),)
    if op == CollectiveKind.REDUCE:
        return ((tree_flow(fabric, g, [req.root_npu]),),)
    if op == CollectiveKind.BROADCAST:
        return ((tree_flow(fabric, [req.root_npu], g),),)
    if op == CollectiveKind.REDUCE_SCATTER:
        return tuple((tree_flow(fabric, g, [u]),) for u in g)
    if op == CollectiveKind.ALL_GATHER:
        return tuple((tree_flow(fabric, [u], g),) for u in g)
    if op == CollectiveKind.IO_BROADCAST:
        return tuple((tree_flow(fabric, [io], g),) for io in fabric.ios)
    return tuple((tree_flow(fabric, g, [io]),) for io in fabric.ios)  # io-reduce


def _always(fabric: Fabric, req: CollectiveRequest) -> bool:
    return True


_IN_SWITCH_OPS = (
    CollectiveKind.ALL_REDUCE,
    CollectiveKind.REDUCE,
    CollectiveKind.BROADCAST,
    CollectiveKind.REDUCE_SCATTER,
    CollectiveKind.ALL_GATHER,
    CollectiveKind.IO_BROADCAST,
    CollectiveKind.IO_REDUCE,
)
for _op in _IN_SWITCH_OPS:
    register(
        Algorithm(
            f"in-switch-{_op}",
            f"{_op} as in-switch tree flows (switches reduce and multicast; FRED-B/D)",
            frozenset({_op}),
            lambda f, r: f.in_switch,
            _build_in_switch,
            steps=_in_switch_steps,
            multiplexed=_op.uses_io,
            bound=_bound_in_switch,
            preference=0,
        )
    )
register(
    Algorithm(
        "mesh-2d",
        "rows Reduce-Scatter, columns All-Reduce, rows All-Gather (full rectangle of a mesh)",
        frozenset({CollectiveKind.ALL_REDUCE}),
        lambda f, r: f.routing == "xy" and rectangle(f, r.group) is not None,
        _build_mesh_2d,
        bound=_bound_mesh_2d,
        preference=10,
    )
)
register(
    Algorithm(
        "hierarchical-ring",
        "Reduce-Scatter in each L1 switch, All-Reduce across L1 switches, All-Gather in each",
        frozenset({CollectiveKind.ALL_REDUCE}),
        lambda f, r: f.routing == "tree" and _l1_blocks(f, r.group) is not None,
        _build_hierarchical_ring,
        bound=_bound_hierarchical,
        preference=10,
    )
)
register(
    Algorithm(
        "hierarchical-ring-pipelined",
        f"hierarchical-ring through {PIPELINE_CHUNKS}x more chunks, so that its three phases "
        "overlap (L1 rings of one chunk while another crosses the L2 switch)",
        frozenset({CollectiveKind.ALL_REDUCE}),
        _pipelining_applies,
        _build_hierarchical_ring_pipelined,
        bound=_bound_hierarchical,
        preference=11,
    )
)
register(
    Algorithm(
        "ring",
        "one ring in group order (2(N-1) steps of D/N for All-Reduce)",
        frozenset(
            {
                CollectiveKind.ALL_REDUCE,
                CollectiveKind.REDUCE_SCATTER,
                CollectiveKind.ALL_GATHER,
            }
        ),
        _always,
        _build_ring,
        bound=_bound_ring,
        preference=50,
    )
)
register(
    Algorithm(
        "ring-reduce-scatter+gather",
        "ring Reduce-Scatter, then every member sends its shard to the root",
        frozenset({CollectiveKind.REDUCE}),
        _always,
        _build_ring_reduce,
        bound=_bound_ring_reduce,
        preference=50,
    )
)
register(
    Algorithm(
        "scatter+ring-all-gather",
        "the root scatters D/N shards, then a ring All-Gather",
        frozenset({CollectiveKind.BROADCAST}),
        _always,
        _build_scatter_broadcast,
        bound=_bound_scatter_broadcast,
        preference=50,
    )
)
register(
    Algorithm(
        "direct-rounds",
        "N-1 rounds, member i sending D/N to member i+r in round r",
        frozenset({CollectiveKind.ALL_TO_ALL}),
        _always,
        _build_direct_rounds,
        bound=_bound_direct_rounds,
        preference=50,
    )
)
register(
    Algorithm(
        "direct",
        "one route from source to destination",
        frozenset({CollectiveKind.P2P}),
        _always,
        _build_direct,
        bound=_bound_direct,
        preference=50,
    )
)
_IO_OPS = frozenset({CollectiveKind.IO_BROADCAST, CollectiveKind.IO_REDUCE})
register(
    Algorithm(
        "io-trees",
        "each controller's shard over X-Y and Y-X multicast trees (mesh)",
        _IO_OPS,
        lambda f, r: f.routing == "xy",
        _build_io_relays,
        bound=_bound_io_relays,
        preference=50,
    )
)
register(
    Algorithm(
        "io-relay",
        "each controller's shard relayed along a chain through the group (switch trees)",
        _IO_OPS,
        lambda f, r: f.routing == "tree",
        _build_io_relays,
        bound=_bound_io_relays,
        preference=50,
    )
)
