"""Routing concurrent flows through Fred_m(P): the paper's recursive conflict-graph colouring.

At each level of the recursion (model/switch/topology.py), every flow is given one middle
subnetwork (a colour). Two flows that share an input uSwitch or an output uSwitch must take
different middles: that is the conflict graph, coloured with the level's number of middles.
The flows of colour j then form a flow set on middle j, whose port k is uSwitch k of this
level, and the router recurses into it. An input uSwitch whose two inputs belong to one flow
reduces; an output uSwitch whose two outputs belong to one flow multicasts (paper
§5.3).

Beyond the paper
----------------
* Exact colouring: a depth-first search over colourings (largest degree first, colour
  symmetry broken because the middles are identical) instead of a heuristic, so a level
  fails only if no colouring exists.
* Backtracking: when middle j cannot route the set S of flows it was given, S is recorded as a
  *nogood* (S may not be monochromatic again; a superset of an unroutable set is unroutable,
  since dropping flows from a routing leaves a routing) and the level searches for another
  colouring. The level fails only when no colouring satisfies the conflict graph and all
  nogoods. ``backtrack=False`` reproduces the paper's rule: one colouring per level, and the
  whole set conflicts if any middle fails.
* A conflict names a minimal conflicting subset (every proper subset routes), found by
  deletion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fredfab.model.errors import InputError
from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.config import Configuration
from fredfab.model.switch.flow import Flow, validate_flows
from fredfab.model.switch.network import Tree, reduction_trees
from fredfab.model.switch.topology import NONE, Subnet, Topology
from fredfab.model.switch.xbar_router import route_xbar


class RouteConflict(InputError):
    """The flows cannot run concurrently on this switch; ``flows`` is a minimal such subset."""

    def __init__(self, flows: Sequence[Flow], ports: int, m: int) -> None:
        self.flows = tuple(flows)
        self.ports, self.m = ports, m
        names = ", ".join(str(f) for f in self.flows)
        super().__init__(
            f"flows {names} cannot run concurrently on Fred_{m}({ports}) "
            "(no assignment of middle subnetworks; serialise them, raise m or re-place ports)"
        )


@dataclass(frozen=True)
class Routing:
    """A routed flow set: the configuration and, per flow, the reduction tree it realises."""

    flows: tuple[Flow, ...]
    config: Configuration
    trees: tuple[Tree, ...]  # trees[i]: the order in which flows[i]'s inputs are added

    @property
    def topology(self) -> Topology:
        return self.config.topology

    def tree_of(self, flow: Flow) -> Tree:
        return self.trees[self.flows.index(flow)]


def route(
    flows: Sequence[Flow], ports: int, m: int = 3, backtrack: bool = True, arch: str = "clos"
) -> Routing:
    """Route ``flows`` concurrently on Fred_m(ports) (or on the crossbar switch, arch "xbar",
    where every flow set routes and ``m`` and ``backtrack`` do not apply).

    Raises FlowError for malformed flow sets and RouteConflict (naming a minimal
    conflicting subset) when no routing exists under the chosen search.
    """
    flows = validate_flows(flows, ports)
    topo = build_topology(ports, m, arch)
    if arch == "xbar":
        codes = route_xbar(topo, flows)
    else:
        codes = _try_route(topo, flows, backtrack)
        if codes is None:
            raise RouteConflict(_minimal_conflict(topo, flows, backtrack), ports, m)
    config = Configuration(topo, codes, flows)
    return Routing(flows, config, reduction_trees(config, flows))


def routable(
    flows: Sequence[Flow], ports: int, m: int = 3, backtrack: bool = True, arch: str = "clos"
) -> bool:
    """Whether ``flows`` route concurrently (flows must be well formed)."""
    flows = validate_flows(flows, ports)
    if arch == "xbar":
        return True  # non-blocking: see model/switch/xbar_router.py
    return _try_route(build_topology(ports, m, arch), flows, backtrack, codes=False) is not None


# -- search -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Local:
    """A flow as seen inside one subnetwork: its global id and its local port sets."""

    id: int
    ips: frozenset[int]
    ops: frozenset[int]


class _Fail(Exception):
    """A subnetwork could not route the flows with these global ids."""

    def __init__(self, ids: frozenset[int]) -> None:
        self.ids = ids


def _try_route(
    topo: Topology, flows: Sequence[Flow], backtrack: bool, codes: bool = True
) -> tuple[tuple[int, ...], ...] | None:
    """The uSwitch codes that route ``flows``, or None when they do not route; with
    ``codes`` False only whether they route (``()`` when they do), without building the
    table of every uSwitch of a wide switch."""
    local = [_Local(i, f.ips, f.ops) for i, f in enumerate(flows)]
    table = [[NONE] * n.n_out for n in topo.nodes] if codes else None
    try:
        for node, q, code in _Search(topo, backtrack).route(topo.root, local):
            if table is not None:
                table[node][q] = code
    except _Fail:
        return None
    return () if table is None else tuple(tuple(c) for c in table)


def _minimal_conflict(topo: Topology, flows: Sequence[Flow], backtrack: bool) -> list[Flow]:
    core = list(flows)
    for f in list(core):
        trial = [g for g in core if g is not f]
        if trial and _try_route(topo, trial, backtrack) is None:
            core = trial
    return core


Assignment = list[tuple[int, int, int]]  # (node, output, source code)
_Shape = frozenset[tuple[frozenset[int], frozenset[int]]]  # a local flow set, ids dropped


class _Search:
    """One routing search. Every Fred_m(p) inside it is wired alike, so whether a local flow
    set routes on a p-port subnetwork is a fact about (p, flow set) that is memoised, and the
    minimal unroutable subset of a failure is memoised with it."""

    def __init__(self, topo: Topology, backtrack: bool) -> None:
        self.topo = topo
        self.backtrack = backtrack
        self.routes: set[tuple[int, _Shape]] = set()
        self.cores: dict[tuple[int, _Shape], _Shape] = {}

    def route(self, sub: Subnet, flows: list[_Local]) -> Assignment:
        if not flows:
            return []
        key = (sub.ports, frozenset((f.ips, f.ops) for f in flows))
        core = self.cores.get(key)
        if core is not None:
            raise _Fail(frozenset(f.id for f in flows if (f.ips, f.ops) in core))
        try:
            assignment = (
                _route_base(self.topo, sub, flows)
                if sub.base is not None
                else self._level(sub, flows)
            )
        except _Fail as fail:
            self.cores[key] = frozenset((f.ips, f.ops) for f in flows if f.id in fail.ids)
            raise
        self.routes.add(key)
        return assignment

    def routes_on(self, sub: Subnet, flows: list[_Local]) -> bool:
        key = (sub.ports, frozenset((f.ips, f.ops) for f in flows))
        if key in self.routes:
            return True
        try:
            self.route(sub, flows)
        except _Fail:
            return False
        return True

    def shrink(self, sub: Subnet, flows: list[_Local]) -> list[_Local]:
        """A minimal subset of ``flows`` that ``sub`` cannot route (flows must not route)."""
        core = list(flows)
        for f in list(core):
            trial = [g for g in core if g is not f]
            if trial and not self.routes_on(sub, trial):
                core = trial
        return core

    def _level(self, sub: Subnet, flows: list[_Local]) -> Assignment:
        r, n_mid = sub.r, len(sub.middles)
        # Which flows sit on each 2-port uSwitch; the odd last port (p // 2 == r) has its own
        # demux/mux reaching every middle, so it conflicts with nobody.
        on_in: list[list[int]] = [[] for _ in range(r)]
        on_out: list[list[int]] = [[] for _ in range(r)]
        for i, f in enumerate(flows):
            for k in {p // 2 for p in f.ips if p // 2 < r}:
                on_in[k].append(i)
            for k in {p // 2 for p in f.ops if p // 2 < r}:
                on_out[k].append(i)
        adj: list[set[int]] = [set() for _ in flows]
        for owners in on_in + on_out:
            if len(owners) == 2:
                a, b = owners
                adj[a].add(b)
                adj[b].add(a)
        mids = [
            _Local(f.id, frozenset(p // 2 for p in f.ips), frozenset(p // 2 for p in f.ops))
            for f in flows
        ]
        nogoods: list[frozenset[int]] = []  # sets of local indices that may not share a colour
        while True:
            colour = _colour(adj, nogoods, n_mid)
            if colour is None:
                involved = {i for i, a in enumerate(adj) if a} | set().union(*nogoods)
                raise _Fail(frozenset(flows[i].id for i in involved))
            inner: Assignment = []
            failed = False
            for j, mid in enumerate(sub.middles):
                members = [i for i in range(len(flows)) if colour[i] == j]
                try:
                    inner += self.route(mid, [mids[i] for i in members])
                except _Fail as fail:
                    if not self.backtrack:
                        raise _Fail(frozenset(f.id for f in flows)) from None
                    bad = [mids[i] for i in members if flows[i].id in fail.ids]
                    core_ids = {f.id for f in self.shrink(mid, bad)}
                    nogoods.append(frozenset(i for i in members if flows[i].id in core_ids))
                    failed = True
                    break
            if not failed:
                return inner + _outer_stage_codes(self.topo, sub, flows, colour)


def _route_base(topo: Topology, sub: Subnet, flows: list[_Local]) -> Assignment:
    """Fred_m(2): the RD-uSwitch's output q takes the flow that leaves on q."""
    rd = topo.nodes[sub.base]
    out: Assignment = []
    for f in flows:
        source = rd.source_sum() if f.ips == {0, 1} else rd.source_input(min(f.ips))
        out += [(sub.base, q, source) for q in f.ops]
    return out


def _outer_stage_codes(
    topo: Topology, sub: Subnet, flows: list[_Local], colour: list[int]
) -> Assignment:
    """Source codes of this level's input/output uSwitches, demux and mux."""
    r, last = sub.r, sub.ports - 1
    out: Assignment = []
    for i, f in enumerate(flows):
        j = colour[i]
        for k in {p // 2 for p in f.ips if p // 2 < r}:
            a, b = 2 * k in f.ips, 2 * k + 1 in f.ips
            node = topo.nodes[sub.ins[k]]
            source = node.source_sum() if a and b else node.source_input(0 if a else 1)
            out.append((sub.ins[k], j, source))
        for p in f.ops:
            if p // 2 < r:
                out.append((sub.outs[p // 2], p % 2, topo.nodes[sub.outs[p // 2]].source_input(j)))
        if sub.odd and last in f.ips:
            out.append((sub.demux, j, topo.nodes[sub.demux].source_input(0)))
        if sub.odd and last in f.ops:
            out.append((sub.mux, 0, topo.nodes[sub.mux].source_input(j)))
    return out


def _colour(adj: list[set[int]], nogoods: list[frozenset[int]], m: int) -> list[int] | None:
    """An m-colouring where adjacent nodes differ and no nogood set is monochromatic."""
    n = len(adj)
    colour = [-1] * n
    ng_of: list[list[frozenset[int]]] = [[] for _ in range(n)]
    for ng in nogoods:
        for v in ng:
            ng_of[v].append(ng)
    order = sorted(range(n), key=lambda v: (-len(adj[v]) - len(ng_of[v]), v))

    def fits(v: int, c: int) -> bool:
        if any(colour[u] == c for u in adj[v]):
            return False
        return not any(all(colour[u] == c for u in ng if u != v) for ng in ng_of[v])

    def search(i: int, used: int) -> bool:
        if i == n:
            return True
        v = order[i]
        # Middles are interchangeable: a fresh colour is only ever the next unused one.
        for c in range(min(used + 1, m)):
            if fits(v, c):
                colour[v] = c
                if search(i + 1, max(used, c + 1)):
                    return True
                colour[v] = -1
        return False

    return colour if search(0, 0) else None
