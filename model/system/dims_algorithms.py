"""ASTRA-sim's collective algorithms on its multi-dimensional topologies (routing ``dims``).

ASTRA-sim runs a collective dimension by dimension (its system layer, astra-sim/system/
collective/ and inputs/system/README.md of github.com/astra-sim/astra-sim): Reduce-Scatter
along dimension 0, then dimension 1, ..., and All-Gather in reverse order; an All-Reduce is
the two. Each dimension runs the algorithm configured for it (``all-reduce-implementation:
["ring", "direct", "halvingDoubling"]`` in its sample Ring_FullyConnected_Switch.json). Phase
j works on D_j = D / (k_0 ... k_{j-1}) bytes per member (D the request's size, k_i the group
size of the i-th dimension the group spans): a Reduce-Scatter leaves D_j / k_j with each
member, an All-Gather restores D_j.

The per-dimension algorithms, within each group of k members of one dimension:

* ring: k-1 steps of D_j / k to the next member in coordinate order; where the dimension has
  separate links both ways (Ring and FullyConnected of k >= 3) half the data goes each way.
* direct: every member sends D_j / k to every other member at once.
* halving-doubling (Switch dimensions of k = 2^m): Reduce-Scatter in m steps exchanging
  D_j / 2, D_j / 4, ... with the member whose index differs in bit 0, 1, ...; All-Gather the
  reverse (bit m-1 first, D_j / k, 2 D_j / k, ...), as ASTRA-sim's HalvingDoubling.cc.

Registered (fredfab.model.system.registry) for All-Reduce, Reduce-Scatter and All-Gather when
the group is a sub-grid of the topology (every dimension either spanned in full or fixed):
``dims-ring`` (ring on every dimension, ASTRA-sim's default), ``dims-direct`` (direct on every
dimension, all FullyConnected or Switch; also All-to-All over one such dimension: every member
sends D / k to every other at once), ``dims-halving-doubling`` (all Switch dimensions of
power-of-two size) and ``dims-native`` (ring on Ring, direct on FullyConnected,
halving-doubling or else direct on Switch dimensions, when the group spans dimensions of
different kinds).

Bound (seconds, from link bandwidths; docs/astra-sim.md): in every phase on dimension d each
member sends (k-1)/k D_j over L links of that dimension (L = 2 for a two-way ring, k-1 for
direct on FullyConnected, else 1), evenly, so the busiest link of dimension d carries
P (k-1)/k D_j / L bytes, P = 2 phases for All-Reduce and 1 otherwise. Phases on different
dimensions use different links and chunks pipeline them, so the bound is the largest of these
loads over the dimensions' bandwidths B_d: max_d P (k_d - 1) D_d / (k_d L_d B_d).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.system.dims import FULLY_CONNECTED, RING, SWITCH, Dim
from fredfab.model.system.fabric import DIMS, Fabric
from fredfab.model.system.registry import Algorithm, register, registered
from fredfab.model.system.request import CollectiveRequest, Plan
from fredfab.model.system.schedule import NO_DEP, Schedule

RING_METHOD = "ring"  # ASTRA-sim's: one way round (Ring.cc)
TWO_WAY_RING = "ring-2way"  # half of the data each way round, where links go both ways
DIRECT = "direct"
HALVING_DOUBLING = "halving-doubling"
DOUBLE_BINARY_TREE = "double-binary-tree"
#: ASTRA-sim's ring directions (RingTopology::get_receiver): clockwise is the next index.
CLOCKWISE, ANTICLOCKWISE = 1, -1

_AR, _RS, _AG, _A2A = (
    CollectiveKind.ALL_REDUCE,
    CollectiveKind.REDUCE_SCATTER,
    CollectiveKind.ALL_GATHER,
    CollectiveKind.ALL_TO_ALL,
)
_REDUCTIONS = frozenset({_AR, _RS, _AG})

#: Per dimension, the algorithm its phases run.
Methods = Callable[[Dim], str]
#: Transfer ids an add_paths call returned, one array per call of a phase, in order.
Steps = list[np.ndarray]


def layout(fabric: Fabric, group: Sequence[int]) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """(M, spanned): if ``group`` is a sub-grid of the topology (each dimension spanned in full
    or fixed), the dimensions it spans (at least one) and the member tensor M, one axis per
    spanned dimension in order, M[i_0, i_1, ...] the NPU at those coordinates; else None."""
    if fabric.routing != DIMS:
        return None
    shape = fabric.dims
    g = np.asarray(group, dtype=np.int64)
    c = shape.coords(g)
    spanned = []
    for d, k in enumerate(shape.sizes):
        n_vals = len(np.unique(c[:, d]))
        if n_vals == k:
            spanned.append(d)
        elif n_vals != 1:
            return None
    ks = tuple(shape.sizes[d] for d in spanned)
    if not spanned or math.prod(ks) != len(g):
        return None
    M = np.empty(ks, dtype=np.int64)
    M[tuple(c[:, spanned].T)] = g
    return M, tuple(spanned)


def _two_way(dim: Dim) -> bool:
    """True when a ring in this dimension has separate links in both directions."""
    return dim.kind in (RING, FULLY_CONNECTED) and dim.size > 2


def _links_used(dim: Dim, method: str) -> int:
    """Links of this dimension each member sends over at once under ``method``."""
    if method == RING_METHOD:
        return 1
    if method == TWO_WAY_RING:
        return 2 if _two_way(dim) else 1
    return dim.out_links


# ---------------------------------------------------------------------- one phase
def _ring(
    sched: Schedule,
    P: np.ndarray,
    size: float,
    ways: int,
    entry: list[np.ndarray],
    prev: Steps | None,
    req: int,
    direction: int = CLOCKWISE,
) -> tuple[list[np.ndarray], Steps]:
    """Ring steps in each group (rows of P): k-1 steps of ``size`` split over ``ways``; one
    way (``ways`` 1) goes in ``direction``."""
    R, k = P.shape
    src = P.ravel()
    exits: list[np.ndarray] = []
    ids: Steps = []
    for step in (direction, -direction)[:ways]:
        dst = np.roll(P, -step, axis=1).ravel()
        recv: list[np.ndarray] = []
        for _ in range(k - 1):
            t = sched.add_paths(
                src,
                dst,
                size / ways,
                # A member adds its own data (entry) to what it received last step.
                after=[a.ravel() for a in entry + recv],
                after_sent=[prev[len(ids)]] if prev else (),
                request=req,
            )
            ids.append(t)
            recv = [np.roll(t.reshape(R, k), step, axis=1)]  # member i got it from i - step
        exits += recv
    return exits, ids


def _direct(
    sched: Schedule,
    P: np.ndarray,
    size: float,
    entry: list[np.ndarray],
    prev: Steps | None,
    req: int,
) -> tuple[list[np.ndarray], Steps]:
    """Every member of a group sends ``size`` to every other member at once."""
    R, k = P.shape
    exits: list[np.ndarray] = []
    ids: Steps = []
    for r in range(1, k):
        t = sched.add_paths(
            P.ravel(),
            np.roll(P, -r, axis=1).ravel(),
            size,
            after=[a.ravel() for a in entry],
            after_sent=[prev[len(ids)]] if prev else (),
            request=req,
        )
        ids.append(t)
        exits.append(np.roll(t.reshape(R, k), r, axis=1))
    return exits, ids


def _halving_doubling(
    sched: Schedule,
    P: np.ndarray,
    sizes: Sequence[float],
    bits: Sequence[int],
    entry: list[np.ndarray],
    prev: Steps | None,
    req: int,
) -> tuple[list[np.ndarray], Steps]:
    """One pairwise exchange per step: ``sizes[s]`` with the member whose index differs in
    bit ``bits[s]``."""
    R, k = P.shape
    recv: list[np.ndarray] = []
    ids: Steps = []
    for size, bit in zip(sizes, bits, strict=True):
        partner = np.arange(k) ^ (1 << bit)
        t = sched.add_paths(
            P.ravel(),
            P[:, partner].ravel(),
            size,
            after=[a.ravel() for a in entry + recv],
            after_sent=[prev[len(ids)]] if prev else (),
            request=req,
        )
        ids.append(t)
        recv = [t.reshape(R, k)[:, partner]]
    return recv, ids


def _phase(
    sched: Schedule,
    M: np.ndarray,
    axis: int,
    dim: Dim,
    method: str,
    gather: bool,
    data: float,
    entry: list[np.ndarray],
    prev: Steps | None,
    req: int,
    direction: int = CLOCKWISE,
) -> tuple[list[np.ndarray], Steps]:
    """Reduce-Scatter (or All-Gather if ``gather``) of ``data`` bytes per member along
    ``axis`` of M; ``entry``: transfers each member must have received first (shaped as M).
    Returns the transfers each member received last (shaped as M) and the phase's steps.
    ``direction``: the way a one-way ring goes round."""
    moved = np.moveaxis(M, axis, -1)
    k = moved.shape[-1]
    P = moved.reshape(-1, k)

    def rows(a: np.ndarray) -> np.ndarray:
        return np.moveaxis(a, axis, -1).reshape(-1, k)

    ent = [rows(a) for a in entry]
    if method == RING_METHOD:
        out, ids = _ring(sched, P, data / k, 1, ent, prev, req, direction)
    elif method == TWO_WAY_RING:
        out, ids = _ring(sched, P, data / k, 2 if _two_way(dim) else 1, ent, prev, req)
    elif method == DIRECT:
        out, ids = _direct(sched, P, data / k, ent, prev, req)
    else:
        m = k.bit_length() - 1
        if gather:
            sizes, bits = [data / k * 2**t for t in range(m)], list(range(m - 1, -1, -1))
        else:
            sizes, bits = [data / 2 ** (s + 1) for s in range(m)], list(range(m))
        out, ids = _halving_doubling(sched, P, sizes, bits, ent, prev, req)
    return [np.moveaxis(a.reshape(moved.shape), -1, axis) for a in out], ids


def _phases(op: CollectiveKind, n_axes: int) -> list[tuple[int, bool]]:
    """(axis, gather) per phase: Reduce-Scatter up the axes, All-Gather back down."""
    up = [(j, False) for j in range(n_axes)]
    down = [(j, True) for j in reversed(range(n_axes))]
    return {_AR: up + down, _RS: up, _AG: down}[op]


def _direction(op: CollectiveKind, axis: int, gather: bool, n_axes: int) -> int:
    """The way a one-way ring goes in a phase, as ASTRA-sim's system layer assigns queues
    (Sys::generate_collective with the default collective-optimization localBWAware and one
    queue per dimension, QueueLevelHandler): an All-Reduce's Reduce-Scatters and its
    All-Reduce on the last dimension clockwise, its All-Gathers on the other dimensions
    anticlockwise; a Reduce-Scatter or All-Gather alone clockwise."""
    if op == _AR and gather and axis != n_axes - 1:
        return ANTICLOCKWISE
    return CLOCKWISE


def hierarchical(
    methods: Methods, one_chunk_at_a_time: bool = False
) -> Callable[[Schedule, Plan, int], None]:
    """The build function of the dimension-by-dimension algorithm using ``methods``.

    Chunks pipeline: a chunk's step starts once the chunk before it has sent that step.
    ``one_chunk_at_a_time`` is ASTRA-sim's ``active-chunks-per-dimension: 1`` instead: a
    chunk's phase on a dimension starts once the chunk before it has finished that phase
    (ASTRA-sim's phases: an All-Reduce's Reduce-Scatter and All-Gather on the last dimension
    are one)."""

    def build(sched: Schedule, plan: Plan, chunks: int) -> None:
        req = plan.request
        shape = sched.fabric.dims
        M, spanned = layout(sched.fabric, req.group)
        dims = [shape.dims[d] for d in spanned]
        ks = [d.size for d in dims]
        steps = _phases(req.op, len(dims))
        prev: list[Steps] | None = None
        finished: list[list[np.ndarray]] | None = None  # per phase, the last chunk's exits
        for _c in range(chunks):
            entry = [np.full(M.shape, NO_DEP, dtype=np.int64)]
            done: list[Steps] = []
            exits: list[list[np.ndarray]] = []
            for axis, gather in steps:
                data = req.size_bytes / chunks / math.prod(ks[:axis])
                if one_chunk_at_a_time and finished:
                    # An All-Reduce's Reduce-Scatter and All-Gather on its last dimension are
                    # one phase of ASTRA-sim's (an All-Reduce there): wait for both.
                    j = len(done)
                    last = req.op == _AR and axis == len(dims) - 1 and not gather
                    entry = entry + finished[j + 1 if last else j]
                entry, ids = _phase(
                    sched,
                    M,
                    axis,
                    dims[axis],
                    methods(dims[axis]),
                    gather,
                    data,
                    entry,
                    prev[len(done)] if prev and not one_chunk_at_a_time else None,
                    plan.index,
                    _direction(req.op, axis, gather, len(dims)),
                )
                done.append(ids)
                exits.append(entry)
            prev, finished = done, exits

    return build


def hierarchical_bound(methods: Methods) -> Callable[[Fabric, CollectiveRequest], float]:
    """The bound of the algorithm using ``methods`` (module docstring)."""

    def bound(fabric: Fabric, req: CollectiveRequest) -> float:
        _, spanned = layout(fabric, req.group)
        dims = [fabric.dims.dims[d] for d in spanned]
        parts = 2 if req.op == _AR else 1
        worst, before = 0.0, 1
        for dim in dims:
            k = dim.size
            data = req.size_bytes / before
            load = parts * (k - 1) / k * data / _links_used(dim, methods(dim))
            worst = max(worst, load / dim.bandwidth)
            before *= k
        return worst

    return bound


# ---------------------------------------------------------------------- from the schedule
def load_bound(build: Callable[[Schedule, Plan, int], None]):
    """The bound of an algorithm from its own transfers: the bytes every link carries (one
    chunk; chunking moves the same bytes) over its bandwidth, the busiest link's."""

    def bound(fabric: Fabric, req: CollectiveRequest) -> float:
        sched = Schedule(fabric)
        build(sched, Plan(0, req, "bound"), 1)
        a = sched.finalize()
        if not len(a["links"]):
            return 0.0
        owner = np.repeat(np.arange(len(a["size"])), np.diff(a["ptr"]))
        load = np.bincount(
            a["links"], weights=a["size"][owner] * a["weights"], minlength=len(fabric.links)
        )
        return float((load / fabric.bandwidth).max())

    return bound


# ---------------------------------------------------------------------- double binary tree
def tree_parents(k: int, root_max: bool) -> np.ndarray:
    """Parent position of each of k = 2^m members (-1 for the root) in ASTRA-sim's binary
    tree (logical_topology/BinaryTree.cc): a full tree of m levels numbered in order, under
    a root of one child that takes the largest id (RootMax) or id 0 (RootMin)."""
    m = k.bit_length() - 1
    parent = np.full(k, -1, dtype=np.int64)
    offset = 0 if root_max else 1
    root = k - 1 if root_max else 0

    def number(levels: int, first: int, up: int) -> None:
        # A full tree of ``levels`` levels numbered in order from ``first``: its root is
        # the middle id, its subtrees the ids below and above.
        if levels == 0:
            return
        half = 2 ** (levels - 1) - 1
        me = first + half
        parent[me] = up
        number(levels - 1, first, me)
        number(levels - 1, me + 1, me)

    number(m, offset, root)
    parent[root] = -1
    return parent


def _build_double_binary_tree(sched: Schedule, plan: Plan, chunks: int) -> None:
    """ASTRA-sim's DoubleBinaryTreeAllReduce: chunk c runs on tree c mod 2 (RootMax first,
    DoubleBinaryTreeTopology::get_topology); each member sends the whole chunk to its
    parent once its children's have arrived, then the root's result travels back down, each
    member forwarding it to its children once it has it (store and forward per hop). A
    chunk starts when the chunk two before it (the same tree) has sent its first hops."""
    req = plan.request
    M, _ = layout(sched.fabric, req.group)
    members = M.ravel()
    k = len(members)
    Dc = req.size_bytes / chunks
    trees = [tree_parents(k, True), tree_parents(k, False)]
    last: dict[int, dict[tuple[str, int], int]] = {}
    for c in range(chunks):
        par = trees[c % 2]
        kids: list[list[int]] = [[] for _ in range(k)]
        for v in range(k):
            if par[v] >= 0:
                kids[par[v]].append(v)
        depth = np.zeros(k, dtype=np.int64)
        for v in range(k):
            u = v
            while par[u] >= 0:
                depth[v] += 1
                u = par[u]
        before = last.get(c - 2, {})
        ids: dict[tuple[str, int], int] = {}
        for v in sorted(np.flatnonzero(par >= 0).tolist(), key=lambda x: -depth[x]):
            prior = before.get(("up", v))
            ids["up", v] = int(
                sched.add_paths(
                    [members[v]],
                    [members[par[v]]],
                    Dc,
                    after=[np.array([ids["up", ch]]) for ch in kids[v]],
                    after_sent=[np.array([prior])] if prior is not None else (),
                    request=plan.index,
                )[0]
            )
        root = int(np.flatnonzero(par < 0)[0])
        for v in sorted(range(k), key=lambda x: depth[x]):
            got = [ids["up", ch] for ch in kids[v]] if v == root else [ids["down", v]]
            for ch in kids[v]:
                ids["down", ch] = int(
                    sched.add_paths(
                        [members[v]],
                        [members[ch]],
                        Dc,
                        after=[np.array([g]) for g in got],
                        request=plan.index,
                    )[0]
                )
        last[c] = ids


def _applies_dbt(fabric: Fabric, req: CollectiveRequest) -> bool:
    dims = _spanned_dims(fabric, req)
    return dims is not None and len(dims) == 1 and _power_of_two(dims[0].size)


# ---------------------------------------------------------------------- ring All-to-All
def _build_ring_all_to_all(sched: Schedule, plan: Plan, chunks: int) -> None:
    """ASTRA-sim's Ring All-to-All (Ring.cc with ComType All_to_All and the Normal injection
    policy): k(k-1)/2 ring steps (its ``stream_count``), in each every member sends one
    message of D/k to the next member clockwise once it has received the last step's: the
    messages for members d away are forwarded d hops, one message per link at a time."""
    req = plan.request
    M, _ = layout(sched.fabric, req.group)
    P = M.reshape(1, -1)
    k = P.shape[1]
    size = req.size_bytes / chunks / k
    src, dst = P.ravel(), np.roll(P, -1, axis=1).ravel()
    prev: Steps | None = None
    for _c in range(chunks):
        recv = np.full(k, NO_DEP, dtype=np.int64)
        ids: Steps = []
        for s in range(k * (k - 1) // 2):
            t = sched.add_paths(
                src,
                dst,
                size,
                after=[recv],
                after_sent=[prev[s]] if prev else (),
                request=plan.index,
            )
            ids.append(t)
            recv = np.roll(t, 1)  # member i received from member i - 1
        prev = ids


def _applies_ring_a2a(fabric: Fabric, req: CollectiveRequest) -> bool:
    dims = _spanned_dims(fabric, req)
    return dims is not None and len(dims) == 1


# ---------------------------------------------------------------------- All-to-All
def _build_all_to_all(sched: Schedule, plan: Plan, chunks: int) -> None:
    """Every member sends D/k to every other member at once (one FullyConnected or Switch
    dimension)."""
    req = plan.request
    M, _ = layout(sched.fabric, req.group)
    P = M.reshape(1, -1)
    prev: Steps | None = None
    none = [np.full(P.shape, NO_DEP, dtype=np.int64)]
    for _c in range(chunks):
        _, prev = _direct(sched, P, req.size_bytes / chunks / P.size, none, prev, plan.index)


def _all_to_all_bound(fabric: Fabric, req: CollectiveRequest) -> float:
    _, (d,) = layout(fabric, req.group)
    dim = fabric.dims.dims[d]
    k = dim.size
    return (k - 1) / k * req.size_bytes / dim.out_links / dim.bandwidth


# ---------------------------------------------------------------------- registry
def _ring_everywhere(dim: Dim) -> str:
    return RING_METHOD


def _direct_everywhere(dim: Dim) -> str:
    return DIRECT


def _hd_everywhere(dim: Dim) -> str:
    return HALVING_DOUBLING


def _two_way_everywhere(dim: Dim) -> str:
    return TWO_WAY_RING


def _native(dim: Dim) -> str:
    if dim.kind == RING:
        return RING_METHOD
    if dim.kind == SWITCH and _power_of_two(dim.size):
        return HALVING_DOUBLING
    return DIRECT


def _power_of_two(k: int) -> bool:
    return k & (k - 1) == 0


#: Largest dimension a direct exchange runs on. Its k - 1 rounds each wait on every round
#: of the phase before, so its schedule holds about k^3 dependencies per group: a Switch
#: dimension of 256 NPUs simulates in about 12 s and 3.4 GB, one of 512 filled 20 GB.
MAX_DIRECT_NPUS = 256


def _direct_fits(dims: Sequence[Dim], methods: Sequence[str]) -> bool:
    """No dimension the direct exchange would run on is larger than MAX_DIRECT_NPUS."""
    return all(m != DIRECT or d.size <= MAX_DIRECT_NPUS for d, m in zip(dims, methods, strict=True))


def _spanned_dims(fabric: Fabric, req: CollectiveRequest) -> list[Dim] | None:
    found = layout(fabric, req.group)
    return None if found is None else [fabric.dims.dims[d] for d in found[1]]


def _applies_ring(fabric: Fabric, req: CollectiveRequest) -> bool:
    return _spanned_dims(fabric, req) is not None


def _applies_direct(fabric: Fabric, req: CollectiveRequest) -> bool:
    dims = _spanned_dims(fabric, req)
    if dims is None or any(d.kind == RING for d in dims):
        return False
    if not _direct_fits(dims, [DIRECT] * len(dims)):
        return False
    return req.op != _A2A or len(dims) == 1


def _applies_hd(fabric: Fabric, req: CollectiveRequest) -> bool:
    dims = _spanned_dims(fabric, req)
    return dims is not None and all(_power_of_two(d.size) for d in dims)


def _applies_native(fabric: Fabric, req: CollectiveRequest) -> bool:
    dims = _spanned_dims(fabric, req)
    if dims is None or len({d.kind for d in dims}) < 2:
        return False
    return _direct_fits(dims, [_native(d) for d in dims])


def _build_direct(sched: Schedule, plan: Plan, chunks: int) -> None:
    if plan.request.op == _A2A:
        _build_all_to_all(sched, plan, chunks)
    else:
        hierarchical(_direct_everywhere)(sched, plan, chunks)


def _bound_direct(fabric: Fabric, req: CollectiveRequest) -> float:
    if req.op == _A2A:
        return _all_to_all_bound(fabric, req)
    return hierarchical_bound(_direct_everywhere)(fabric, req)


register(
    Algorithm(
        "dims-ring",
        "ASTRA-sim's ring: one way round, Reduce-Scatter dimension by dimension, All-Gather back",
        _REDUCTIONS,
        _applies_ring,
        hierarchical(_ring_everywhere),
        # One way round, an All-Reduce's All-Gathers go the other way from its
        # Reduce-Scatters except on the last dimension: counted link by link.
        bound=load_bound(hierarchical(_ring_everywhere)),
        preference=15,
    )
)
register(
    Algorithm(
        "dims-ring-2way",
        "ring dimension by dimension with half of the data each way round (two-way links)",
        _REDUCTIONS,
        _applies_ring,
        hierarchical(_two_way_everywhere),
        bound=hierarchical_bound(_two_way_everywhere),
        preference=16,
    )
)
register(
    Algorithm(
        "dims-double-binary-tree",
        "ASTRA-sim's double binary tree All-Reduce (one dimension of 2^m NPUs)",
        frozenset({_AR}),
        _applies_dbt,
        _build_double_binary_tree,
        bound=load_bound(_build_double_binary_tree),
        preference=17,
    )
)
register(
    Algorithm(
        "dims-ring-all-to-all",
        "ASTRA-sim's ring All-to-All: messages forwarded round one dimension's ring",
        frozenset({_A2A}),
        _applies_ring_a2a,
        _build_ring_all_to_all,
        bound=load_bound(_build_ring_all_to_all),
        preference=15,
    )
)
register(
    Algorithm(
        "dims-direct",
        "direct exchange dimension by dimension (FullyConnected and Switch dimensions of at "
        f"most {MAX_DIRECT_NPUS} NPUs)",
        _REDUCTIONS | {_A2A},
        _applies_direct,
        _build_direct,
        bound=_bound_direct,
        preference=10,
    )
)
register(
    Algorithm(
        "dims-halving-doubling",
        "halving-doubling dimension by dimension (dimensions of 2^m NPUs; on a Ring the "
        "partners are 2^b hops away)",
        _REDUCTIONS,
        _applies_hd,
        hierarchical(_hd_everywhere),
        bound=load_bound(hierarchical(_hd_everywhere)),
        preference=12,
    )
)
register(
    Algorithm(
        "dims-native",
        "each dimension's own algorithm: ring on Ring, direct on FullyConnected, "
        "halving-doubling on Switch",
        _REDUCTIONS,
        _applies_native,
        hierarchical(_native),
        bound=hierarchical_bound(_native),
        preference=10,
    )
)


# ---------------------------------------------------------------------- system files
#: ASTRA-sim's per-dimension implementation names (system/astraccl/CollectiveImplLookup.cc)
#: and the method each runs here; "direct" with a window ("direct4") runs as direct.
IMPLEMENTATIONS = {
    "ring": RING_METHOD,
    "direct": DIRECT,
    "halvingDoubling": HALVING_DOUBLING,
    "doubleBinaryTree": DOUBLE_BINARY_TREE,
}


def per_dimension(methods: Sequence[str], one_chunk_at_a_time: bool = False) -> str:
    """The name of the algorithm running ``methods[d]`` on dimension d (an ASTRA-sim system
    file's ``*-implementation`` list, translated by IMPLEMENTATIONS), registered on first
    use; it runs only when named (Algorithm.named_only). ``one_chunk_at_a_time``: see
    ``hierarchical``."""
    methods = tuple(methods)
    name = "astra-system:" + ",".join(methods) + (":serial-chunks" if one_chunk_at_a_time else "")
    if registered(name):
        return name

    def method_of(fabric: Fabric) -> Methods:
        dims = fabric.dims.dims

        def of(dim: Dim) -> str:
            return methods[next(i for i, d in enumerate(dims) if d is dim)]

        return of

    def spanned(fabric: Fabric, req: CollectiveRequest) -> list[int] | None:
        found = layout(fabric, req.group)
        if found is None or len(methods) != len(fabric.dims.dims):
            return None
        return list(found[1])

    def applies(fabric: Fabric, req: CollectiveRequest) -> bool:
        axes = spanned(fabric, req)
        if axes is None:
            return False
        used = [methods[d] for d in axes]
        sizes = [fabric.dims.dims[d].size for d in axes]
        if not _direct_fits([fabric.dims.dims[d] for d in axes], used):
            return False
        if req.op == _A2A:
            return len(axes) == 1 and used[0] in (RING_METHOD, DIRECT)
        if DOUBLE_BINARY_TREE in used:
            return req.op == _AR and len(axes) == 1 and _power_of_two(sizes[0])
        return all(
            m != HALVING_DOUBLING or _power_of_two(k) for m, k in zip(used, sizes, strict=True)
        )

    def build(sched: Schedule, plan: Plan, chunks: int) -> None:
        fab, req = sched.fabric, plan.request
        axes = spanned(fab, req)
        first = methods[axes[0]]
        if req.op == _A2A:
            run = _build_ring_all_to_all if first == RING_METHOD else _build_all_to_all
            run(sched, plan, chunks)
        elif first == DOUBLE_BINARY_TREE:
            _build_double_binary_tree(sched, plan, chunks)
        else:
            hierarchical(method_of(fab), one_chunk_at_a_time)(sched, plan, chunks)

    register(
        Algorithm(
            name,
            f"an ASTRA-sim system file's implementations per dimension: {', '.join(methods)}",
            _REDUCTIONS | {_A2A},
            applies,
            build,
            bound=load_bound(build),
            named_only=True,
        )
    )
    return name
