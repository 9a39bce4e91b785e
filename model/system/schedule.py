"""A schedule of chunked transfers: what the collective algorithms produce, what simulators run.

A *transfer* moves ``size`` bytes over a set of directed links, all at one rate:

* a *path* (unicast): the fabric's route from one node to another;
* a *tree flow* (in-switch collectives): the union of the routes from every source up to
  their lowest common ancestor and from there down to every sink. Switches reduce on the
  way up and multicast on the way down at flit granularity, so every link of the tree carries
  ``size`` bytes, pipelined: the flow-level model gives the whole tree one rate.

A transfer starts when its dependencies are met: ``after`` transfers *delivered* (their last
byte arrived: data dependencies) and ``after_sent`` transfers *sent* (their last byte left the
sender: a sender pushes chunk c+1 of a stream once chunk c has left), then ``delay`` seconds
(e.g. a switch reconfiguration). It is delivered ``latency`` after its last byte is sent,
where latency is the longest chain of link and switch pipeline latencies through it.

Transfers are stored in bulk numpy arrays so that algorithms over 1,000 NPUs stay fast: ring
steps add a whole step of transfers at once and reuse the route template of the step.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from fredfab.model.collective_kind import CollectiveKind, flow_kind
from fredfab.model.errors import InputError
from fredfab.model.switch.flow import Flow
from fredfab.model.system.elements import FabricError
from fredfab.model.system.fabric import ROUTING_FORMS, Fabric

NO_DEP = -1


@dataclass(frozen=True)
class TreeFlow:
    """The links of one in-switch tree flow (see tree_flow)."""

    links: tuple[int, ...]
    preds: tuple[tuple[int, ...], ...]  # per link: indices (into links) feeding it
    kinds: tuple[str, ...]  # per link: kind of the switch flow driving it ("unicast" off NPUs)
    top: int  # the lowest common ancestor switch (or the single endpoint)
    up: frozenset[int]  # nodes whose link to their parent carries data upwards
    down: frozenset[int]  # nodes whose link from their parent carries data downwards


@dataclass(frozen=True)
class Template:
    lengths: np.ndarray
    links: np.ndarray
    weights: np.ndarray
    latency: np.ndarray


@dataclass(frozen=True)
class Relays:
    """Transfers over explicit link trees (tree flows or relays), prepared once for a fabric
    and added to schedules in bulk (Schedule.add_relays): per transfer its links, each link's
    capacity weight, the transfer's latency, and per link the indices of the links feeding it.
    """

    lengths: np.ndarray
    links: np.ndarray
    weights: np.ndarray
    latency: np.ndarray
    preds: tuple[tuple[tuple[int, ...], ...], ...]

    def __len__(self) -> int:
        return len(self.lengths)


def prepare_relays(
    fabric: Fabric,
    relays: Sequence[tuple[Sequence[int], Sequence[Sequence[int]], Sequence[float] | None]],
    kinds: Sequence[Sequence[str]] | None = None,
) -> Relays:
    """Relays from (links, preds, share) triples (see Schedule.add_relay); ``kinds`` gives
    per relay and link the switch flow kind (default unicast) for the capacity weight."""
    lengths, links, weights, lats, preds = [], [], [], [], []
    for r, (lk, pr, share) in enumerate(relays):
        la = np.asarray(lk, dtype=np.int64)
        pr = tuple(tuple(int(q) for q in ps) for ps in pr)
        if len(pr) != len(la) or any(q >= i or q < 0 for i, ps in enumerate(pr) for q in ps):
            raise ValueError("relay preds must give, per link, indices of earlier links")
        sh = np.ones(len(la)) if share is None else np.asarray(share, dtype=float)
        if sh.shape != la.shape or not ((sh > 0) & (sh <= 1)).all():
            raise ValueError("relay share must give, per link, a fraction in (0, 1]")
        if kinds is None:
            w = fabric.kind_weight(la, CollectiveKind.UNICAST) if len(la) else np.zeros(0)
        else:
            w = np.array(
                [fabric.kind_weight([x], kd)[0] for x, kd in zip(la, kinds[r], strict=True)]
            )
        hop = fabric.hop_latency[la]
        lat = np.zeros(len(la))
        for i, ps in enumerate(pr):
            lat[i] = hop[i] + max((lat[q] for q in ps), default=0.0)
        lengths.append(len(la))
        links.append(la)
        weights.append(w * sh)
        lats.append(lat.max(initial=0.0))
        preds.append(pr)
    return Relays(
        np.array(lengths, dtype=np.int64),
        np.concatenate(links) if links else np.zeros(0, np.int64),
        np.concatenate(weights) if weights else np.zeros(0),
        np.array(lats, dtype=float),
        tuple(preds),
    )


@functools.lru_cache(maxsize=4096)
def prepare_trees(fabric: Fabric, trees: tuple[TreeFlow, ...]) -> Relays:
    """In-switch tree flows as Relays (each link weighted by its switch flow kind); memoised."""
    return prepare_relays(
        fabric, [(t.links, t.preds, None) for t in trees], kinds=[t.kinds for t in trees]
    )


class Schedule:
    """Transfers over one fabric, added in bulk; ``finalize()`` returns the arrays."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.n = 0
        self._len: list[np.ndarray] = []
        self._links: list[np.ndarray] = []
        self._weights: list[np.ndarray] = []
        self._size: list[np.ndarray] = []
        self._lat: list[np.ndarray] = []
        self._delay: list[np.ndarray] = []
        self._req: list[np.ndarray] = []
        self._dep: list[tuple[np.ndarray, np.ndarray, int]] = []
        self.tree_preds: dict[int, tuple[tuple[int, ...], ...]] = {}
        self._templates: dict[tuple, Template] = {}
        self._final: dict[str, np.ndarray] | None = None

    # ------------------------------------------------------------------ building
    def _template(self, src: np.ndarray, dst: np.ndarray, kind: str) -> Template:
        key = (src.tobytes(), dst.tobytes(), kind)
        t = self._templates.get(key)
        if t is None:
            f = self.fabric
            routes = [f.route(int(a), int(b)) for a, b in zip(src, dst, strict=True)]
            lengths = np.array([len(r) for r in routes], dtype=np.int64)
            links = np.fromiter(
                (lk for r in routes for lk in r), dtype=np.int64, count=int(lengths.sum())
            )
            weights = f.kind_weight(links, kind) if len(links) else np.zeros(0)
            lat = np.zeros(len(routes))
            if len(links):
                owner = np.repeat(np.arange(len(routes)), lengths)
                lat = np.bincount(owner, weights=f.hop_latency[links], minlength=len(routes))
            t = Template(lengths, links, weights, lat)
            self._templates[key] = t
        return t

    def add_paths(
        self,
        src: Sequence[int] | np.ndarray,
        dst: Sequence[int] | np.ndarray,
        size: float | np.ndarray,
        *,
        after: Iterable[np.ndarray | Sequence[int]] = (),
        after_sent: Iterable[np.ndarray | Sequence[int]] = (),
        delay: float = 0.0,
        request: int = 0,
        kind: str = CollectiveKind.UNICAST,
    ) -> np.ndarray:
        """One unicast transfer per (src[i], dst[i]); return their ids.

        Each array in ``after`` / ``after_sent`` has one transfer id per new transfer
        (NO_DEP = none), so ``after=[prev]`` makes transfer i wait for ``prev[i]``.
        """
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        k = len(src)
        t = self._template(src, dst, kind)
        ids = np.arange(self.n, self.n + k, dtype=np.int64)
        self._append(t.lengths, t.links, t.weights, size, t.latency, delay, request, k)
        for dep in after:
            self._edges(dep, ids, 0)
        for dep in after_sent:
            self._edges(dep, ids, 1)
        return ids

    def add_routes(
        self,
        routes: Sequence[tuple[int, ...]],
        size: float | np.ndarray,
        *,
        after: Iterable[np.ndarray | Sequence[int]] = (),
        after_sent: Iterable[np.ndarray | Sequence[int]] = (),
        request: int = 0,
    ) -> np.ndarray:
        """One unicast transfer per explicit route (directed link ids from source to
        destination, e.g. a minimal route other than the fabric's own); otherwise as
        add_paths."""
        f = self.fabric
        lengths = np.array([len(r) for r in routes], dtype=np.int64)
        links = np.array([lk for r in routes for lk in r], dtype=np.int64)
        weights = f.kind_weight(links, CollectiveKind.UNICAST) if len(links) else np.zeros(0)
        owner = np.repeat(np.arange(len(routes)), lengths)
        lat = np.bincount(owner, weights=f.hop_latency[links], minlength=len(routes))
        k = len(routes)
        ids = np.arange(self.n, self.n + k, dtype=np.int64)
        self._append(lengths, links, weights, size, lat, 0.0, request, k)
        for dep in after:
            self._edges(dep, ids, 0)
        for dep in after_sent:
            self._edges(dep, ids, 1)
        return ids

    def add_tree(
        self,
        sources: Iterable[int],
        sinks: Iterable[int],
        size: float,
        *,
        after: Sequence[int] = (),
        after_sent: Sequence[int] = (),
        delay: float = 0.0,
        request: int = 0,
    ) -> int:
        """One in-switch tree flow reducing ``sources`` and delivering to ``sinks``."""
        rel = prepare_trees(self.fabric, (tree_flow(self.fabric, sources, sinks),))
        tid = int(self.add_relays(rel, size, delay=delay, request=request)[0])
        ids = np.array([tid])
        for dep in after:
            self._edges(np.array([dep]), ids, 0)
        for dep in after_sent:
            self._edges(np.array([dep]), ids, 1)
        return tid

    def add_relays(
        self,
        relays: Relays,
        size: float | np.ndarray,
        *,
        after_sent: np.ndarray | None = None,
        delay: float = 0.0,
        request: int = 0,
    ) -> np.ndarray:
        """One transfer per prepared relay (prepare_relays, prepare_trees); return their ids.
        ``after_sent[i]`` (NO_DEP = none): transfer i starts once that one has been sent."""
        k = len(relays)
        ids = np.arange(self.n, self.n + k, dtype=np.int64)
        self._append(
            relays.lengths,
            relays.links,
            relays.weights,
            size,
            relays.latency,
            delay,
            request,
            k,
        )
        for tid, pr in zip(ids.tolist(), relays.preds, strict=True):
            self.tree_preds[tid] = pr
        if after_sent is not None:
            self._edges(after_sent, ids, 1)
        return ids

    def add_relay(
        self,
        links: Sequence[int],
        preds: Sequence[Sequence[int]],
        size: float,
        *,
        share: Sequence[float] | None = None,
        after_sent: Sequence[int] = (),
        request: int = 0,
    ) -> int:
        """One transfer over an explicit tree of links, forwarded by the nodes it crosses.

        ``preds[i]`` are the indices (into ``links``, all smaller than i) of the links feeding
        link i: a node forwards a packet on link i once it has arrived on every link feeding
        it (a copy for a multicast tree, the sum of its inputs and its own contribution for a
        reduction tree). Forwarding is pipelined at packet granularity (4 KB against chunks
        of megabytes), so, like a tree flow, the whole tree moves at one rate and its
        latency is the longest chain of hop latencies. ``share[i]`` (default 1) is the
        fraction of the bytes that crosses link i: a source splitting its stream at a fixed
        ratio over two trees (packet i on one tree or the other) is one relay over their
        union, each link used in proportion. Used by the endpoint I/O patterns (mesh
        multicast trees, relay chains on switch trees without in-switch collectives).
        """
        rel = prepare_relays(self.fabric, [(links, preds, share)])
        tid = int(self.add_relays(rel, size, request=request)[0])
        for dep in after_sent:
            self._edges(np.array([dep]), np.array([tid]), 1)
        return tid

    def depend(self, before: Iterable[int], then: Iterable[int], sent: bool = False) -> None:
        """Every transfer in ``then`` waits for every transfer in ``before``."""
        b = np.fromiter(before, dtype=np.int64)
        t = np.fromiter(then, dtype=np.int64)
        if len(b) and len(t):
            self._edges(np.repeat(b, len(t)), np.tile(t, len(b)), 1 if sent else 0)

    def _append(self, lengths, links, weights, size, lat, delay, request, k) -> None:
        self._final = None
        self._len.append(np.asarray(lengths, dtype=np.int64))
        self._links.append(np.asarray(links, dtype=np.int64))
        self._weights.append(np.asarray(weights, dtype=float))
        self._size.append(np.broadcast_to(np.asarray(size, dtype=float), (k,)))
        self._lat.append(np.asarray(lat, dtype=float))
        self._delay.append(np.full(k, float(delay)))
        self._req.append(np.full(k, int(request), dtype=np.int64))
        self.n += k

    def _edges(self, dep, ids: np.ndarray, kind: int) -> None:
        dep = np.asarray(dep, dtype=np.int64)
        if dep.shape != ids.shape:
            raise ValueError(f"dependency array of shape {dep.shape} for {len(ids)} transfers")
        keep = dep != NO_DEP
        if keep.any():
            if (dep[keep] >= ids[0]).any():
                raise ValueError("a transfer may only depend on earlier transfers")
            self._dep.append((dep[keep], ids[keep], kind))
            self._final = None

    # ------------------------------------------------------------------ result
    def finalize(self) -> dict[str, np.ndarray]:
        """Arrays ptr, links, weights, size, latency, delay, request, dep_src/dst/kind."""
        if self._final is None:
            lengths = np.concatenate(self._len) if self._len else np.zeros(0, np.int64)
            ptr = np.zeros(self.n + 1, dtype=np.int64)
            np.cumsum(lengths, out=ptr[1:])

            def cat(parts, dtype):
                return (
                    np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)
                )

            self._final = {
                "ptr": ptr,
                "links": cat(self._links, np.int64),
                "weights": cat(self._weights, float),
                "size": cat(self._size, float),
                "latency": cat(self._lat, float),
                "delay": cat(self._delay, float),
                "request": cat(self._req, np.int64),
                "dep_src": cat([d[0] for d in self._dep], np.int64),
                "dep_dst": cat([d[1] for d in self._dep], np.int64),
                "dep_kind": cat([np.full(len(d[0]), d[2]) for d in self._dep], np.int64),
            }
        return self._final

    def links_of(self, tid: int) -> np.ndarray:
        a = self.finalize()
        return a["links"][a["ptr"][tid] : a["ptr"][tid + 1]]

    def preds_of(self, tid: int) -> tuple[tuple[int, ...], ...]:
        """Per link of transfer ``tid``: the indices of its links feeding it."""
        tp = self.tree_preds.get(tid)
        if tp is not None:
            return tp
        n = len(self.links_of(tid))
        return tuple(((i - 1,) if i else ()) for i in range(n))


def tree_flow(fabric: Fabric, sources: Iterable[int], sinks: Iterable[int]) -> TreeFlow:
    """The in-switch tree flow from ``sources`` to ``sinks`` (memoised; see _tree_flow)."""
    if fabric.routing != "tree":
        form = ROUTING_FORMS[fabric.routing]
        raise FabricError(f"in-switch collectives need a tree fabric; {fabric.name} is {form}")
    return _tree_flow(
        fabric, tuple(sorted({int(s) for s in sources})), tuple(sorted({int(t) for t in sinks}))
    )


@functools.lru_cache(maxsize=8192)
def _tree_flow(fabric: Fabric, src: tuple[int, ...], snk: tuple[int, ...]) -> TreeFlow:
    """The in-switch tree flow from ``sources`` (reduced) to ``sinks`` (multicast).

    Data climbs from every source to the lowest common ancestor switch of all endpoints,
    reducing in every switch it meets, and descends from there to every sink. At each switch
    this is one FRED flow when the switch is the common ancestor (children in, children out),
    else up to two: a reduce (children in, parent port out) and a multicast (parent port in,
    children out). Input and output ports are separate namespaces, so the two are disjoint.

    With a single source (multicast) the tree is the union of the routes from it: a switch on
    the source's way up also copies to its own sinks below (one flow: child in, parent port
    and children out), rather than sending them the data back down from above. With a single
    sink (reduce) likewise: a switch on the sink's way down adds its own sources below (one
    flow: children and parent port in, child out). Either way no link carries the data
    twice (an I/O controller's shard on FRED's L1-L2 links, for instance).
    """
    src, snk = list(src), list(snk)
    if not src or not snk:
        raise FabricError("a tree flow needs at least one source and one sink")
    par = fabric.parent
    top = fabric.lca(src + snk)
    up: dict[int, int] = {}  # child node -> link index in `links` (child -> parent)
    down: dict[int, int] = {}  # child node -> link index (parent -> child)
    links: list[int] = []
    # Single source: sinks branch off the source's path; single sink: sources merge into the
    # sink's path (all-reduce, many to many, keeps reduce-to-top then multicast).
    src_path = _path_up(par, src[0], top) if len(src) == 1 else set()
    snk_path = _path_up(par, snk[0], top) if len(snk) == 1 and len(src) > 1 else set()
    ups = set()
    for s in src:
        u = s
        while u != top and u not in ups and u not in snk_path:
            ups.add(u)
            u = par[u]
    downs = set(snk_path)
    for t in snk:
        u = t
        while u != top and u not in downs and u not in src_path:
            downs.add(u)
            u = par[u]
    depth = fabric.depth
    for u in sorted(ups, key=lambda v: (-depth[v], v)):
        up[u] = len(links)
        links.append(fabric.link_id[u, par[u]])
    for u in sorted(downs, key=lambda v: (depth[v], v)):
        down[u] = len(links)
        links.append(fabric.link_id[par[u], u])
    preds: list[tuple[int, ...]] = []
    for u in sorted(ups, key=lambda v: (-depth[v], v)):
        preds.append(tuple(up[c] for c in fabric.children[u] if c in up))
    for u in sorted(downs, key=lambda v: (depth[v], v)):
        p = par[u]
        below = tuple(up[c] for c in fabric.children[p] if c in up)
        if p == top or (p in up and p not in down):  # top, or a branch off the source's path
            preds.append(below)
        elif p in down and p not in up:  # merge into the single sink's path
            preds.append((down[p], *below))
        else:
            preds.append((down[p],))
    kinds = [CollectiveKind.UNICAST] * len(links)
    for x in {par[u] for u in ups | downs}:
        nin = sum(1 for c in fabric.children[x] if c in up)
        nout = sum(1 for c in fabric.children[x] if c in down)
        if x == top:
            k_down = flow_kind(nin, nout)
        elif x in up and x not in down and nout:  # one flow: children in, parent + children out
            k_down = kinds[up[x]] = flow_kind(nin, nout + 1)
        elif x in down and x not in up and nin:  # one flow: children + parent in, children out
            k_down = flow_kind(nin + 1, nout)
        else:
            if nin:
                kinds[up[x]] = flow_kind(nin, 1)
            k_down = flow_kind(1, nout)
        for c in fabric.children[x]:
            if c in down:
                kinds[down[c]] = k_down
    return TreeFlow(tuple(links), tuple(preds), tuple(kinds), top, frozenset(ups), frozenset(downs))


def _path_up(par, u: int, top: int) -> set[int]:
    """Nodes from ``u`` up to, not including, ``top``."""
    out = set()
    while u != top:
        out.add(u)
        u = par[u]
    return out


class LaneConflict(InputError):
    """More concurrent flows cross a switch-to-switch link than it has ports."""


def switch_flows(fabric: Fabric, trees: Sequence[TreeFlow]) -> dict[int, tuple[Flow, ...]]:
    """The FRED flows that a set of concurrent tree flows configures on every switch.

    A switch's ports are, in order: one per NPU or I/O child; ``fabric.lanes[c]`` per child
    switch c (the link to a child switch is a bundle of ports); ``fabric.lanes[x]`` towards
    its parent. Every tree flow crossing a switch-to-switch link takes the next free lane of
    the bundle (the same lane up and down). Per switch, a tree flow is one FRED flow at its
    top switch (children in, children out), otherwise a reduce (children in, parent out)
    and/or a multicast (parent in, children out). Raises LaneConflict when a bundle runs out.
    """
    lane: list[dict[int, int]] = []  # per tree: node -> lane on the link node<->parent
    used: dict[int, int] = {}
    for t in trees:
        mine = {}
        for u in sorted(t.up | t.down):
            if fabric.nodes[u].kind != "switch":
                mine[u] = 0
                continue
            k = used.get(u, 0)
            if k >= fabric.lanes[u]:
                raise LaneConflict(
                    f"more than {fabric.lanes[u]} concurrent flows cross the link from "
                    f"{fabric.nodes[u].name} to {fabric.nodes[fabric.parent[u]].name}"
                )
            used[u] = k + 1
            mine[u] = k
        lane.append(mine)
    out: dict[int, list[Flow]] = {}
    par = fabric.parent
    for t, mine in zip(trees, lane, strict=True):
        for x in sorted({par[u] for u in t.up | t.down}):
            base = fabric.port_base(x)
            cin = [base[c] + mine[c] for c in fabric.children[x] if c in t.up]
            cout = [base[c] + mine[c] for c in fabric.children[x] if c in t.down]
            fl = out.setdefault(x, [])
            if x == t.top:
                fl.append(Flow(cin, cout))
            else:
                pp = base[par[x]] + mine[x]
                if cin and cout and x in t.up and x not in t.down:  # branch (one source)
                    fl.append(Flow(cin, [pp, *cout]))
                elif cin and cout and x in t.down and x not in t.up:  # merge (one sink)
                    fl.append(Flow([*cin, pp], cout))
                else:
                    if cin:
                        fl.append(Flow(cin, [pp]))
                    if cout:
                        fl.append(Flow([pp], cout))
    return {x: tuple(f) for x, f in out.items()}
