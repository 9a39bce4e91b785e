"""A wafer fabric as data: NPUs, switches and I/O controllers joined by directed links.

Nodes are numbered NPUs first (0..N-1, in the order the description gives them; worker
placement maps onto these ids), then I/O controllers, then switches. Every physical link is
two directed links, one per direction, each with its own bandwidth (bytes/s) and latency (s).

Three routing disciplines are supported, and each constrains the graph:

* ``xy`` (2D mesh): every NPU has grid coordinates (x, y) filling a W x H rectangle,
  grid neighbours are linked both ways, I/O controllers hang off one NPU each, no switches.
  A route goes along X first, then along Y (dimension-order routing).
* ``tree`` (FRED): switches form a tree whose leaves are NPUs and I/O controllers; the root
  is the one switch of the highest level. A route goes up to the lowest common ancestor and
  down again (the only path in a tree).
* ``dims`` (ASTRA-sim's multi-dimensional topologies: Ring, FullyConnected and Switch
  dimensions): built from a fredfab.model.system.dims.Dims, which gives the graph and
  the dimension-order routes. Its switches are ideal (no FRED timing card applies).

A FRED switch adds a per-hop latency and may sustain less than line rate for some collective
kinds: fredfab.model.system.switch_timing.SwitchTiming turns a switch timing card
(fredfab.model.timing_card) into those numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from fredfab.model.system.collective_library import IDEAL, CollectiveLibrary
from fredfab.model.system.dims import Dims
from fredfab.model.system.elements import (
    NODE_KINDS,
    NODE_ORDER,
    FabricError,
    Link,
    Node,
    check_counts,
)
from fredfab.model.system.switch_timing import SwitchTiming
from fredfab.model.system.units import GB, to_ns
from fredfab.model.timing_card import KINDS
from fredfab.model.toml_fields import check_int

ROUTINGS = ("xy", "tree")
#: Routing of ASTRA-sim topologies: built from dimensions, never from an explicit graph.
DIMS = "dims"
#: What a fabric of each routing is, for messages that refuse one.
ROUTING_FORMS = {"xy": "a mesh", "tree": "a switch tree", DIMS: "a topology of dimensions"}

#: The m of Fred_m(P): the paper uses Fred_3(P) everywhere (paper §6.2, §7.1).
SWITCH_M = 3
MAX_SWITCH_M = 64


class Fabric:
    """A validated fabric graph with routes. Build one with generators or load_fabric()."""

    def __init__(
        self,
        name: str,
        nodes: Sequence[Node],
        links: Sequence[Link],
        routing: str,
        *,
        in_switch: bool = False,
        switch_m: int = SWITCH_M,
        timing: SwitchTiming | None = None,
        description: str = "",
        dims: Dims | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.routing = routing
        self.in_switch = bool(in_switch)
        self.switch_m = check_int(
            switch_m, f"fabric {name!r}: switch_m", lo=2, hi=MAX_SWITCH_M, error=FabricError
        )
        self.timing = timing or SwitchTiming()
        #: What the collective library adds to the network's time (fixed cost, protocols);
        #: a file's [collectives] table sets it (fredfab.model.system.loader).
        self.library: CollectiveLibrary = IDEAL
        #: Whether the links carry FRED's packet mode (a header flit per packet,
        #: docs/switch-rtl.md): the wafer's fabrics, the FRED trees and the mesh whose routers
        #: forward the same packets; not ASTRA-sim's networks (GPU clusters). A file's
        #: top-level ``packet_headers`` sets it.
        self.packet_headers: bool = routing != DIMS
        self.nodes = tuple(nodes)
        self.links = tuple(links)
        self._validate_basic()
        n = len(self.nodes)
        self.npus = tuple(v.id for v in self.nodes if v.kind == "npu")
        self.ios = tuple(v.id for v in self.nodes if v.kind == "io")
        self.switches = tuple(v.id for v in self.nodes if v.kind == "switch")
        self.link_id = {(lk.src, lk.dst): lk.id for lk in self.links}
        self.bandwidth = np.array([lk.bandwidth for lk in self.links], dtype=float)
        self.link_latency = np.array([lk.latency for lk in self.links], dtype=float)
        self.link_src = np.array([lk.src for lk in self.links], dtype=np.int64)
        self.link_dst = np.array([lk.dst for lk in self.links], dtype=np.int64)
        is_switch = np.zeros(n, dtype=bool)
        is_switch[list(self.switches)] = True
        # Only FRED switches have a pipeline and a throughput card; ASTRA-sim's are ideal.
        timed = is_switch if routing != DIMS else np.zeros(n, dtype=bool)
        #: Latency of crossing each link, including the pipeline of the switch it leaves.
        self.hop_latency = self.link_latency + np.where(
            timed[self.link_src], self.timing.hop_latency, 0.0
        )
        self.leaves_switch = timed[self.link_src]
        self.neighbours: list[list[int]] = [[] for _ in range(n)]
        for lk in self.links:
            self.neighbours[lk.src].append(lk.dst)
        for lst in self.neighbours:
            lst.sort()
        self._routes: dict[tuple[int, int], tuple[int, ...]] = {}
        if routing == "xy":
            self._init_xy()
        elif routing == "tree":
            self._init_tree()
        elif routing == DIMS:
            self.dims = self._init_dims(dims)
        else:
            raise FabricError(f"fabric {name!r}: routing {routing!r} unknown; use {ROUTINGS}")
        if self.in_switch and routing != "tree":
            raise FabricError(
                f"fabric {name!r}: in-switch collectives need a tree of FRED switches"
            )

    # ------------------------------------------------------------------ validation
    def _validate_basic(self) -> None:
        where = f"fabric {self.name!r}"
        names: dict[str, int] = {}
        order = NODE_ORDER
        for i, v in enumerate(self.nodes):
            if v.id != i:
                raise FabricError(f"{where}: node {v.name!r} has id {v.id}, expected {i}")
            if v.kind not in NODE_KINDS:
                raise FabricError(f"{where}: node {v.name!r} kind {v.kind!r} not in {NODE_KINDS}")
            if v.name in names:
                raise FabricError(f"{where}: node name {v.name!r} used twice")
            names[v.name] = i
            if i and order[v.kind] < order[self.nodes[i - 1].kind]:
                raise FabricError(f"{where}: nodes must be ordered NPUs, I/O controllers, switches")
        if not any(v.kind == "npu" for v in self.nodes):
            raise FabricError(f"{where}: has no NPU")
        check_counts(
            sum(v.kind == "npu" for v in self.nodes),
            sum(v.kind == "io" for v in self.nodes),
            sum(v.kind == "switch" for v in self.nodes),
            where,
        )
        seen: set[tuple[int, int]] = set()
        for i, lk in enumerate(self.links):
            if lk.id != i:
                raise FabricError(f"{where}: link {i} has id {lk.id}")
            for end in (lk.src, lk.dst):
                if not 0 <= end < len(self.nodes):
                    raise FabricError(f"{where}: link {i} names node {end}, which does not exist")
            a, b = self.nodes[lk.src].name, self.nodes[lk.dst].name
            if lk.src == lk.dst:
                raise FabricError(f"{where}: link {a}->{b} is a self-loop")
            if (lk.src, lk.dst) in seen:
                raise FabricError(f"{where}: link {a}->{b} given twice")
            seen.add((lk.src, lk.dst))
            if not (lk.bandwidth > 0 and math.isfinite(lk.bandwidth)):
                raise FabricError(
                    f"{where}: link {a}->{b} bandwidth must be > 0, got {lk.bandwidth}"
                )
            if not (lk.latency >= 0 and math.isfinite(lk.latency)):
                raise FabricError(f"{where}: link {a}->{b} latency must be >= 0, got {lk.latency}")
        for s, d in seen:
            if (d, s) not in seen:
                a, b = self.nodes[s].name, self.nodes[d].name
                raise FabricError(f"{where}: link {a}->{b} has no reverse link {b}->{a}")

    def _init_xy(self) -> None:
        where = f"fabric {self.name!r}"
        if self.switches:
            raise FabricError(f"{where}: routing 'xy' is for meshes of NPUs, found switches")
        pos: dict[tuple[int, int], int] = {}
        for u in self.npus:
            v = self.nodes[u]
            if v.x is None or v.y is None:
                raise FabricError(f"{where}: NPU {v.name!r} needs x and y for routing 'xy'")
            if (v.x, v.y) in pos:
                raise FabricError(
                    f"{where}: NPUs {self.nodes[pos[v.x, v.y]].name!r} and "
                    f"{v.name!r} share position ({v.x}, {v.y})"
                )
            pos[v.x, v.y] = u
        xs = sorted({x for x, _ in pos})
        ys = sorted({y for _, y in pos})
        self.width, self.height = len(xs), len(ys)
        if (
            xs != list(range(self.width))
            or ys != list(range(self.height))
            or len(pos) != (self.width * self.height)
        ):
            raise FabricError(f"{where}: NPU positions must fill a W x H rectangle from (0, 0)")
        self.grid = pos
        for u in self.npus:
            v = self.nodes[u]
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                w = pos.get((v.x + dx, v.y + dy))
                if w is not None and (u, w) not in self.link_id:
                    raise FabricError(
                        f"{where}: grid neighbours {v.name!r} and {self.nodes[w].name!r} "
                        "are not linked"
                    )
            for w in self.neighbours[u]:
                o = self.nodes[w]
                if o.kind == "npu" and abs(o.x - v.x) + abs(o.y - v.y) != 1:
                    raise FabricError(
                        f"{where}: link {v.name}->{o.name} joins NPUs that are not grid neighbours"
                    )
        self.attach: dict[int, int] = {}
        for u in self.ios:
            nb = self.neighbours[u]
            if len(nb) != 1 or self.nodes[nb[0]].kind != "npu":
                raise FabricError(
                    f"{where}: I/O controller {self.nodes[u].name!r} must link to exactly one NPU"
                )
            self.attach[u] = nb[0]

    def _init_tree(self) -> None:
        where = f"fabric {self.name!r}"
        if not self.switches:
            raise FabricError(f"{where}: routing 'tree' needs switches")
        top = max(self.nodes[s].level for s in self.switches)
        roots = [s for s in self.switches if self.nodes[s].level == top]
        if len(roots) != 1:
            names = [self.nodes[s].name for s in roots]
            raise FabricError(
                f"{where}: the tree needs one root switch of the top level, got {names}"
            )
        self.root = roots[0]
        n = len(self.nodes)
        parent = [-1] * n
        depth = [0] * n
        order = [self.root]
        seen = {self.root}
        for u in order:
            for w in self.neighbours[u]:
                if w in seen:
                    if w != parent[u]:
                        raise FabricError(
                            f"{where}: links form a cycle through "
                            f"{self.nodes[w].name!r}; a tree is required"
                        )
                    continue
                seen.add(w)
                parent[w] = u
                depth[w] = depth[u] + 1
                order.append(w)
        if len(seen) != n:
            missing = [self.nodes[u].name for u in range(n) if u not in seen][:5]
            raise FabricError(f"{where}: nodes not connected to the root: {missing}")
        for u in range(n):
            v = self.nodes[u]
            if v.kind != "switch":
                if len(self.neighbours[u]) != 1 or self.nodes[parent[u]].kind != "switch":
                    raise FabricError(
                        f"{where}: {v.kind} {v.name!r} must link to exactly one switch"
                    )
            elif u != self.root and self.nodes[parent[u]].level <= v.level:
                raise FabricError(
                    f"{where}: switch {v.name!r} (level {v.level}) hangs below "
                    f"{self.nodes[parent[u]].name!r} (level {self.nodes[parent[u]].level}); "
                    "levels must grow towards the root"
                )
            elif v.level < 1:
                raise FabricError(f"{where}: switch {v.name!r} level must be >= 1")
        self.parent = tuple(parent)
        self.depth = tuple(depth)
        self.children: tuple[tuple[int, ...], ...] = tuple(
            tuple(w for w in self.neighbours[u] if parent[w] == u) for u in range(n)
        )
        # A switch-to-switch link is a bundle of ports ("lanes"): a logical FRED switch is
        # several Fred_3(P) chiplets (paper §6.2), so concurrent flows
        # crossing one tree link use different physical ports. Assumption: a switch has as
        # many lanes towards its parent as it has downward non-I/O ports, so every child can
        # send its own flow up at once. Their bandwidth is shared: the link's bandwidth is the
        # bundle's total.
        self.lanes = tuple(
            sum(1 for c in self.children[u] if self.nodes[c].kind != "io")
            if self.nodes[u].kind == "switch" and u != self.root
            else 1
            for u in range(n)
        )
        self._port_base: dict[int, dict[int, int]] = {}

    # ------------------------------------------------------------------ queries
    def _init_dims(self, shape: Dims | None) -> Dims:
        """``shape``, once this fabric's nodes and links are exactly those of ``shape``."""
        where = f"fabric {self.name!r}"
        if not isinstance(shape, Dims):
            raise FabricError(
                f"{where}: routing 'dims' needs its dimensions (build it with "
                "topologies.dims_fabric, a [dims] table or an ASTRA-sim network file)"
            )
        if self.num_npus != shape.num_npus or len(self.switches) != shape.num_switches:
            raise FabricError(
                f"{where}: topology {shape.label} has {shape.num_npus} NPUs and "
                f"{shape.num_switches} switches, the graph {self.num_npus} and "
                f"{len(self.switches)}"
            )
        if self.ios:
            raise FabricError(f"{where}: ASTRA-sim topologies have no I/O controllers")
        want = {}
        for a, b, bw, lat in shape.link_pairs():
            want[a, b] = want[b, a] = (bw, lat)
        have = {(lk.src, lk.dst): (lk.bandwidth, lk.latency) for lk in self.links}
        if have != want:
            odd = sorted(set(have.items()) ^ set(want.items()))[:1]
            (a, b), _ = odd[0]
            raise FabricError(
                f"{where}: link {self.nodes[a].name}->{self.nodes[b].name} does not match "
                f"topology {shape.label} (missing, extra or with other bandwidth or latency)"
            )
        return shape

    @property
    def has_fred_switches(self) -> bool:
        """True when switch timing applies: FRED switches (ASTRA-sim's switches are ideal)."""
        return bool(self.switches) and self.routing != DIMS

    @property
    def num_npus(self) -> int:
        return len(self.npus)

    def node_by_name(self, name: str) -> int:
        for v in self.nodes:
            if v.name == name:
                return v.id
        raise FabricError(f"fabric {self.name!r} has no node {name!r}")

    def check_npus(self, group: Iterable[int], what: str = "group") -> tuple[int, ...]:
        """Validate a list of NPU ids (distinct, in range); return it as a tuple."""
        g = tuple(int(u) for u in group)
        if not g:
            raise FabricError(f"{what} is empty")
        if len(set(g)) != len(g):
            raise FabricError(f"{what} names an NPU twice")
        bad = [u for u in g if not 0 <= u < self.num_npus]
        if bad:
            raise FabricError(
                f"{what}: NPU(s) {bad} out of range 0..{self.num_npus - 1} on {self.name}"
            )
        return g

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """Directed link ids from ``src`` to ``dst`` under the fabric's routing."""
        key = (src, dst)
        r = self._routes.get(key)
        if r is None:
            if self.routing == "xy":
                path = self._xy_path(src, dst)
            elif self.routing == "tree":
                path = self._tree_path(src, dst)
            else:
                path = self.dims.path(src, dst)
            r = tuple(self.link_id[a, b] for a, b in zip(path, path[1:], strict=False))
            self._routes[key] = r
        return r

    def _xy_path(self, src: int, dst: int) -> list[int]:
        a = self.attach.get(src, src)
        b = self.attach.get(dst, dst)
        path = [src] + ([a] if a != src else []) + self.grid_walk(a, b)
        if b != dst:
            path.append(dst)
        return path

    def grid_walk(self, a: int, b: int, order: str = "xy") -> list[int]:
        """The mesh NPUs after ``a`` up to ``b`` on the dimension-order walk ``order`` ("xy":
        along the row first, the routing's own; "yx": along the column first)."""
        x, y = self.nodes[a].x, self.nodes[a].y
        to = {"x": self.nodes[b].x, "y": self.nodes[b].y}
        out = []
        for axis in order:
            while (x, y)[axis == "y"] != to[axis]:
                if axis == "x":
                    x += 1 if to["x"] > x else -1
                else:
                    y += 1 if to["y"] > y else -1
                out.append(int(self.grid[x, y]))
        return out

    def _tree_path(self, src: int, dst: int) -> list[int]:
        up, down = [src], [dst]
        a, b = src, dst
        while self.depth[a] > self.depth[b]:
            a = self.parent[a]
            up.append(a)
        while self.depth[b] > self.depth[a]:
            b = self.parent[b]
            down.append(b)
        while a != b:
            a, b = self.parent[a], self.parent[b]
            up.append(a)
            down.append(b)
        return up + down[-2::-1]

    def lca(self, nodes: Iterable[int]) -> int:
        """Lowest common ancestor of ``nodes`` in the switch tree."""
        it = iter(nodes)
        a = next(it)
        for b in it:
            while self.depth[a] > self.depth[b]:
                a = self.parent[a]
            while self.depth[b] > self.depth[a]:
                b = self.parent[b]
            while a != b:
                a, b = self.parent[a], self.parent[b]
        return a

    def ports_of(self, switch: int) -> tuple[int, ...]:
        """Neighbours of ``switch`` in port order: children by id, then the parent."""
        ch = self.children[switch]
        p = self.parent[switch]
        return ch + ((p,) if p >= 0 else ())

    def port_base(self, switch: int) -> dict[int, int]:
        """First port of ``switch`` facing each neighbour (a child switch or the parent
        occupies ``lanes`` consecutive ports: ``lanes[child]``, or ``lanes[switch]``)."""
        base = self._port_base.get(switch)
        if base is None:
            base, k = {}, 0
            for c in self.children[switch]:
                base[c] = k
                k += self.lanes[c]
            if self.parent[switch] >= 0:
                base[self.parent[switch]] = k
            self._port_base[switch] = base
        return base

    def num_ports(self, switch: int) -> int:
        """Ports of the Fred_m(P) interconnect of ``switch`` (P), lanes counted."""
        p = sum(self.lanes[c] for c in self.children[switch])
        return p + (self.lanes[switch] if self.parent[switch] >= 0 else 0)

    def l1_of(self, u: int) -> int:
        """The switch an NPU or I/O controller hangs off (tree fabrics)."""
        return self.parent[u]

    def kind_weight(self, links: Sequence[int], kind: str) -> np.ndarray:
        """Capacity used per byte/s on each link by a flow of ``kind`` (1 / switch fraction)."""
        if kind not in KINDS:
            raise FabricError(f"unknown flow kind {kind!r}; have {KINDS}")
        ls = np.asarray(links, dtype=np.int64)
        f = self.timing.fraction(kind)
        return np.where(self.leaves_switch[ls], 1.0 / f, 1.0)

    def summary(self) -> dict:
        bw = self.bandwidth
        return {
            "name": self.name,
            "routing": self.routing,
            "in_switch_collectives": self.in_switch,
            "npus": self.num_npus,
            "io_controllers": len(self.ios),
            "switches": len(self.switches),
            "directed_links": len(self.links),
            "min_link_GBps": float(bw.min() / GB),
            "max_link_GBps": float(bw.max() / GB),
            "switch_hop_latency_ns": (
                to_ns(self.timing.hop_latency) if self.has_fred_switches else 0.0
            ),
            "timing_card": self.timing.card.name,
        }

    def __repr__(self) -> str:
        return (
            f"Fabric({self.name!r}, npus={self.num_npus}, ios={len(self.ios)}, "
            f"switches={len(self.switches)}, routing={self.routing!r})"
        )
