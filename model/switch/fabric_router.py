"""The fabric router: in-switch tree flows of a fabric -> one configuration per switch.

A phase is a set of concurrent tree flows (model/system/schedule.py ``tree_flow``): one per
collective group, e.g. every MP group of a 3D-parallel strategy at once. ``switch_flows``
turns them into the FRED flows each switch must carry (it assigns the lanes of
switch-to-switch bundles and uses the fabric's port numbering); this module routes those
flows on every switch with the switch router (model/switch/router.py) and says, for every NPU that
receives data, in which order its result was added (``result_tree``), so that the golden
collectives can be evaluated in the order the fabric adds.

A flow set that a switch cannot route is a FabricRouteError naming the switch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fredfab.model.errors import InputError
from fredfab.model.golden import Tree
from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.config import Configuration
from fredfab.model.switch.fabric_wiring import BOUNDARY, Endpoint, FabricWiring
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.router import RouteConflict, Routing, route
from fredfab.model.system.elements import FabricError
from fredfab.model.system.fabric import Fabric
from fredfab.model.system.schedule import LaneConflict, TreeFlow, switch_flows, tree_flow


class FabricRouteError(InputError):
    """A phase that the fabric's switches cannot carry; the message names the switch."""


@dataclass(frozen=True)
class FabricRouting:
    """A routed phase: the tree flows and, per switch node, its routing (None: idle)."""

    wiring: FabricWiring
    trees: tuple[TreeFlow, ...]
    routings: dict[int, Routing]  # switch node -> routing (switches the phase uses)
    m: int
    arch: str

    def config(self, node: int) -> Configuration:
        """The configuration of switch ``node``: its routing's, or all outputs off."""
        r = self.routings.get(node)
        if r is not None:
            return r.config
        site = self.wiring.switches[self.wiring.switch_index(node)]
        return Configuration.idle(build_topology(site.ports, self.m, self.arch))

    def result_tree(self, npu: int) -> Tree:
        """The reduction tree (over fabric node ids) of what NPU or I/O port ``npu`` receives."""
        src = self.wiring.feeding(Endpoint(BOUNDARY, npu))
        return self._out_tree(src)

    def _out_tree(self, out: Endpoint) -> Tree:
        node = self.wiring.switches[out.switch].node
        routing = self.routings.get(node)
        flow = None
        if routing is not None:
            flow = next((f for f in routing.flows if out.port in f.ops), None)
        if flow is None:
            name = self.wiring.switches[out.switch].name
            raise FabricError(f"switch {name} sends nothing on port {out.port} in this phase")
        return _substitute(routing.tree_of(flow), lambda p: self._in_tree(out.switch, p))

    def _in_tree(self, switch: int, port: int) -> Tree:
        src = self.wiring.feeding(Endpoint(switch, port))
        if src.switch == BOUNDARY:
            return src.port
        return self._out_tree(src)


def _substitute(tree: Tree, leaf) -> Tree:
    if isinstance(tree, tuple):
        return (_substitute(tree[0], leaf), _substitute(tree[1], leaf))
    return leaf(tree)


def route_trees(
    fabric: Fabric, trees: Sequence[TreeFlow], *, m: int | None = None, arch: str = "clos"
) -> FabricRouting:
    """Route concurrent tree flows on every switch of ``fabric`` (Fred_m(P) or crossbar)."""
    m = fabric.switch_m if m is None else m
    wiring = FabricWiring.of(fabric)
    try:
        per_switch = switch_flows(fabric, trees)
    except LaneConflict as exc:
        raise FabricRouteError(f"fabric {fabric.name}: {exc}") from None
    routings: dict[int, Routing] = {}
    for node, flows in sorted(per_switch.items()):
        ports = fabric.num_ports(node)
        try:
            routings[node] = route(flows, ports, m, arch=arch)
        except (RouteConflict, ValueError) as exc:
            name = fabric.nodes[node].name
            raise FabricRouteError(f"fabric {fabric.name}: switch {name}: {exc}") from None
    return FabricRouting(wiring, tuple(trees), routings, m, arch)


def route_groups(
    fabric: Fabric,
    groups: Iterable[tuple[Iterable[int], Iterable[int]]],
    *,
    m: int | None = None,
    arch: str = "clos",
) -> FabricRouting:
    """Route concurrent (sources, sinks) groups of NPUs, one tree flow each."""
    trees = [tree_flow(fabric, src, snk) for src, snk in groups]
    return route_trees(fabric, trees, m=m, arch=arch)


def route_flows(
    fabric: Fabric, flows: Iterable[Flow], *, m: int | None = None, arch: str = "clos"
) -> FabricRouting:
    """Route NPU-level flows (ips reduced, sent to ops), one tree flow each."""
    return route_groups(fabric, [(f.ips, f.ops) for f in flows], m=m, arch=arch)
