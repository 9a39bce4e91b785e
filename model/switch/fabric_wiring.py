"""How the switches of a tree fabric are wired port to port, for the fabric RTL and its router.

The system model (model/system/fabric.py) numbers a switch's ports once: children in node id
order, a child switch taking ``fabric.lanes[child]`` consecutive ports (a bundle), then
``fabric.lanes[switch]`` ports towards the parent (``Fabric.port_base``). This module only
reads that numbering; it derives no port order of its own.

The fabric's *boundary* ports are its NPUs and I/O controllers: boundary port k is fabric node
k (NPUs first, then I/O controllers, as the fabric numbers nodes). A switch-to-switch bundle
joins lane j of the child's parent ports to lane j of the parent's ports for that child, in
both directions.
"""

from __future__ import annotations

from dataclasses import dataclass

from fredfab.model.system.elements import FabricError
from fredfab.model.system.fabric import Fabric

#: The switch index of a boundary endpoint (an NPU or I/O controller port).
BOUNDARY = -1


@dataclass(frozen=True)
class Endpoint:
    """A port: ``switch`` (index into FabricWiring.switches, or BOUNDARY) and its port."""

    switch: int
    port: int


@dataclass(frozen=True)
class Wire:
    """A directed connection: output ``src`` drives input ``dst``."""

    src: Endpoint
    dst: Endpoint


@dataclass(frozen=True)
class SwitchSite:
    """One switch of the fabric: its fabric node, name, tree level and port count."""

    node: int
    name: str
    level: int
    ports: int


@dataclass(frozen=True)
class FabricWiring:
    """The switches, boundary ports and directed wires of a tree fabric."""

    fabric: Fabric
    boundary: tuple[int, ...]  # fabric node of each boundary port
    switches: tuple[SwitchSite, ...]
    wires: tuple[Wire, ...]

    @classmethod
    def of(cls, fabric: Fabric) -> FabricWiring:
        if fabric.routing != "tree":
            raise FabricError(f"fabric {fabric.name!r}: only tree fabrics have switch RTL")
        boundary = tuple(v.id for v in fabric.nodes if v.kind != "switch")
        index = {s: i for i, s in enumerate(fabric.switches)}
        sites = tuple(
            SwitchSite(s, fabric.nodes[s].name, fabric.nodes[s].level, fabric.num_ports(s))
            for s in fabric.switches
        )
        wires: list[Wire] = []
        for s in fabric.switches:
            x = index[s]
            base = fabric.port_base(s)
            for c in fabric.children[s]:
                if fabric.nodes[c].kind != "switch":
                    b = Endpoint(BOUNDARY, c)
                    wires.append(Wire(b, Endpoint(x, base[c])))
                    wires.append(Wire(Endpoint(x, base[c]), b))
                    continue
                up = fabric.port_base(c)[s]
                for j in range(fabric.lanes[c]):
                    child, mine = Endpoint(index[c], up + j), Endpoint(x, base[c] + j)
                    wires.append(Wire(child, mine))
                    wires.append(Wire(mine, child))
        return cls(fabric, boundary, sites, tuple(wires))

    def switch_index(self, node: int) -> int:
        """Index into ``switches`` of fabric switch ``node``."""
        for i, s in enumerate(self.switches):
            if s.node == node:
                return i
        raise FabricError(f"fabric {self.fabric.name!r}: node {node} is not a switch")

    def feeding(self, dst: Endpoint) -> Endpoint:
        """The output that drives input ``dst``."""
        return self._into[dst]

    @property
    def _into(self) -> dict[Endpoint, Endpoint]:
        cached = self.__dict__.get("_into_map")
        if cached is None:
            cached = {w.dst: w.src for w in self.wires}
            object.__setattr__(self, "_into_map", cached)
        return cached

    def switch_to_switch(self) -> tuple[Wire, ...]:
        """The wires between two switches (those that carry a link pipeline)."""
        return tuple(w for w in self.wires if BOUNDARY not in (w.src.switch, w.dst.switch))
