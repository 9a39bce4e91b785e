"""A mesh ring over a group that is not a full rectangle, each hop on its better minimal route.

A ring over an irregular group (an L, a staircase) has hops between NPUs that differ in both
coordinates. X-Y routing sends such a hop along the source's row first, possibly through
NPUs of other groups whose rings use those links; the Y-X route of the same hop is just as
short and may instead run over the reverse directions of the group's own ring hops, which a
one-way ring leaves idle. Example, MP4-DP5-PP1 on the 5 x 4 mesh: group 12-15 is an L whose
closing hop 15 -> 12 follows row 3 through 16 and 17 under X-Y routing (the links of ring
16-19); its Y-X route 15 -> 14 -> 13 -> 12 uses only the links back along the ring.

``mesh-ring-routes`` is the ring in group order (as ``ring``) with each hop on its X-Y or
its Y-X route, chosen to minimise, in this order: the most loaded directed link of the ring
(in time, bytes over bandwidth), the number of links at that load, and the hops' links
leaving NPUs outside the group (so that a tie keeps the ring on its members' links and off
other groups' links); X-Y where nothing else decides. Both routes are minimal, and the choice
is made once per hop by the sending NPU (source routing, or dimension order chosen per
packet as in O1TURN), so this is a routing policy of the endpoints, not a different mesh.
Its bound is the ring bound with the chosen routes: every hop carries bus_factor x D.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from fredfab.model.collective_kind import CollectiveKind
from fredfab.model.system.bounds import LinkLoad
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.registry import Algorithm, register
from fredfab.model.system.request import CollectiveRequest, Plan
from fredfab.model.system.rings import rectangle, ring_factor
from fredfab.model.system.schedule import NO_DEP, Schedule

_OPS = frozenset(
    {CollectiveKind.ALL_REDUCE, CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALL_GATHER}
)
#: Hops with two routes up to which every combination is tried (2^12 = 4096); beyond that,
#: single-hop flips from the all-X-Y choice until none improves.
EXHAUSTIVE_HOPS = 12


def yx_route(f: Fabric, src: int, dst: int) -> tuple[int, ...]:
    """Directed link ids from NPU ``src`` to NPU ``dst``: along the column first, then the
    row (the mirror of the fabric's X-Y route; equally short)."""
    path = [src, *f.grid_walk(src, dst, "yx")]
    return tuple(f.link_id[a, b] for a, b in zip(path, path[1:], strict=False))


def _bends(f: Fabric, a: int, b: int) -> bool:
    """Whether the hop a -> b differs in both coordinates (so X-Y and Y-X differ)."""
    na, nb = f.nodes[a], f.nodes[b]
    return na.x != nb.x and na.y != nb.y


def _hops(group: tuple[int, ...]) -> list[tuple[int, int]]:
    return list(zip(group, group[1:] + group[:1], strict=True))


def _key(f: Fabric, routes: list[tuple[int, ...]], outside: np.ndarray) -> tuple:
    """What the choice minimises: (most loaded link's time, links at it, hop links leaving
    non-members)."""
    count = np.zeros(len(f.links))
    for r in routes:
        count[list(r)] += 1
    t = count / f.bandwidth
    worst = float(t.max(initial=0.0))
    return (worst, int((t >= worst * (1 - 1e-12)).sum()), int(count[outside].sum()))


@functools.lru_cache(maxsize=1024)
def ring_routes(f: Fabric, group: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Per hop of the ring in group order (member i to member i+1), its chosen route."""
    hops = _hops(group)
    xy = [f.route(a, b) for a, b in hops]
    yx = [yx_route(f, a, b) if _bends(f, a, b) else r for (a, b), r in zip(hops, xy, strict=True)]
    free = [i for i, (a, b) in enumerate(hops) if _bends(f, a, b)]
    members = set(group)
    outside = np.array([f.link_src[lk] not in members for lk in range(len(f.links))])

    def routes(flip: set[int]) -> list[tuple[int, ...]]:
        return [yx[i] if i in flip else xy[i] for i in range(len(hops))]

    def key(flip: set[int]) -> tuple:
        return (*_key(f, routes(flip), outside), len(flip))

    if len(free) <= EXHAUSTIVE_HOPS:
        subsets = (set(c) for k in range(len(free) + 1) for c in itertools.combinations(free, k))
        best = min(subsets, key=key)
    else:
        best: set[int] = set()
        improved = True
        while improved:
            improved = False
            for i in free:
                trial = best ^ {i}
                if key(trial) < key(best):
                    best, improved = trial, True
    return tuple(routes(best))


def _applies(f: Fabric, req: CollectiveRequest) -> bool:
    """Mesh groups that are not full rectangles (those have algorithms at the two-link bound
    whose hops run along rows and columns, where both routes coincide) with a bending hop."""
    if f.routing != "xy" or rectangle(f, req.group) is not None:
        return False
    return any(_bends(f, a, b) for a, b in _hops(tuple(req.group)))


def _bound(f: Fabric, req: CollectiveRequest) -> float:
    """Every hop's chosen route carries bus_factor x D (2(N-1)/N x D for All-Reduce)."""
    load = LinkLoad(f)
    links = [lk for r in ring_routes(f, tuple(req.group)) for lk in r]
    nbytes = ring_factor(req.op, len(req.group)) * req.size_bytes
    load.links(links, nbytes, f.kind_weight(np.array(links), CollectiveKind.UNICAST))
    return load.seconds()


def _build(sched: Schedule, plan: Plan, chunks: int) -> None:
    """The ring of ``ring`` (2(N-1) steps of D/N for All-Reduce, N-1 otherwise) over the
    chosen routes: in step k member i sends to member i+1 once it has received step k-1."""
    req = plan.request
    n = len(req.group)
    routes = ring_routes(sched.fabric, tuple(req.group))
    steps = 2 * (n - 1) if req.op == CollectiveKind.ALL_REDUCE else n - 1
    size = req.size_bytes / chunks / n
    prev: list[np.ndarray] | None = None
    for _c in range(chunks):
        recv = np.full(n, NO_DEP, dtype=np.int64)
        out = []
        for k in range(steps):
            t = sched.add_routes(
                routes,
                size,
                after=[recv] if k else (),
                after_sent=[prev[k]] if prev else (),
                request=plan.index,
            )
            out.append(t)
            recv = np.roll(t, 1)
        prev = out


register(
    Algorithm(
        "mesh-ring-routes",
        "one ring in group order over a mesh group that is not a rectangle, each hop on its "
        "X-Y or Y-X route (minimal), chosen to load the ring's links least",
        _OPS,
        _applies,
        _build,
        bound=_bound,
        preference=40,
    )
)
