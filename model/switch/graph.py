"""A switch interconnect as a graph of configurable nodes: the shared vocabulary.

Every architecture (the paper's recursive Clos, model/switch/topology.py; the crossbar with a
reduction tree, model/switch/xbar_topology.py) is a ``SwitchGraph``: nodes with inputs and
outputs, point-to-point links, and the switch ports at the boundary. A node is configured
by choosing, for each of its outputs, a *source*: nothing, one input, or, for reducing
kinds, the sum of inputs 0 and 1 (model/switch/node.py names the codes); ``config_layout``
(model/switch/config_layout.py) says where each output's code sits in the configuration
bits. The configuration encoding (model/switch/config.py), the functional model
(model/switch/network.py), the RTL (hw/interconnect.py) and the manifest only ever see this
graph. The architectures that build
graphs are listed in model/switch/arches.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fredfab.model.switch.config_layout import ConfigLayout
from fredfab.model.switch.node import (  # noqa: F401  (re-exported: the shared vocabulary)
    NONE,
    REDUCING,
    SUM_OPERANDS,
    Kind,
    Node,
    Source,
    SourceKind,
)


@dataclass(frozen=True, order=True)
class Endpoint:
    """Port ``port`` of node ``node``; node -1 is the switch boundary (its external ports)."""

    node: int
    port: int


BOUNDARY = -1


@dataclass(frozen=True)
class Link:
    """A point-to-point connection from an output of one node to an input of another."""

    src: Endpoint  # (node, output index) or (BOUNDARY, switch input port)
    dst: Endpoint  # (node, input index) or (BOUNDARY, switch output port)


class SwitchGraph:
    """Nodes, links and boundary ports of one switch interconnect (see module docstring).

    Builders add nodes with ``_add`` and links with ``_connect``, set ``inputs`` and
    ``outputs`` (the endpoint each switch port enters and leaves by), then call
    ``_finalize``, which orders nodes topologically and indexes the links.
    """

    arch = "graph"

    def __init__(self, ports: int) -> None:
        self.ports = ports
        self.nodes: list[Node] = []
        self.links: list[Link] = []
        self.inputs: list[Endpoint] = []
        self.outputs: list[Endpoint] = []

    def _add(
        self, name: str, kind: Kind, n_in: int, n_out: int, stage: int, registered: bool = True
    ) -> int:
        index = len(self.nodes)
        self.nodes.append(Node(index, name, kind, n_in, n_out, stage, registered))
        return index

    def _connect(self, src: Endpoint, dst: Endpoint) -> None:
        self.links.append(Link(src, dst))

    def _finalize(self) -> dict[int, int]:
        """Wire the boundary, order nodes by stage (every link then goes forward), index the
        links; return the renumbering old index -> new index."""
        for p in range(self.ports):
            self._connect(Endpoint(BOUNDARY, p), self.inputs[p])
            self._connect(self.outputs[p], Endpoint(BOUNDARY, p))
        order = sorted(range(len(self.nodes)), key=lambda i: (self.nodes[i].stage, i))
        renum = {old: new for new, old in enumerate(order)}
        renum[BOUNDARY] = BOUNDARY
        self.nodes = [replace(self.nodes[old], index=new) for new, old in enumerate(order)]

        def re(e: Endpoint) -> Endpoint:
            return Endpoint(renum[e.node], e.port)

        self.links = [Link(re(lk.src), re(lk.dst)) for lk in self.links]
        self.inputs = [re(e) for e in self.inputs]
        self.outputs = [re(e) for e in self.outputs]
        self.driver: dict[Endpoint, Endpoint] = {lk.dst: lk.src for lk in self.links}
        self.sink: dict[Endpoint, Endpoint] = {lk.src: lk.dst for lk in self.links}
        #: node_inputs[i][k]: the endpoint driving input k of node i.
        self.node_inputs: list[list[Endpoint]] = [
            [self.driver[Endpoint(n.index, k)] for k in range(n.n_in)] for n in self.nodes
        ]
        #: Where each output's source code sits in the configuration bits.
        self.config_layout = ConfigLayout.of_nodes(self.nodes)
        return renum

    # -- queries ------------------------------------------------------------------------

    @property
    def stages(self) -> int:
        """Number of node columns."""
        return 1 + max(n.stage for n in self.nodes)

    @property
    def register_depth(self) -> int:
        """Registered nodes on the longest input-to-output path (latency per register slice)."""
        depth = [0] * len(self.nodes)
        for n in self.nodes:
            before = [depth[e.node] for e in self.node_inputs[n.index] if e.node != BOUNDARY]
            depth[n.index] = int(n.registered) + max(before, default=0)
        return max(depth[e.node] for e in self.outputs)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no node named {name!r} in this {self.arch} switch of {self.ports} ports")

    def counts(self) -> dict[str, int]:
        """Nodes by kind, adders (one per reducing node and lane), stages, links, bits."""
        out = {k.value: 0 for k in Kind}
        for n in self.nodes:
            out[n.kind.value] += 1
        out["uswitches"] = len(self.nodes)
        out["adders"] = sum(1 for n in self.nodes if n.kind in REDUCING)
        out["stages"] = self.stages
        out["register_depth"] = self.register_depth
        out["internal_links"] = sum(
            1 for lk in self.links if lk.src.node != BOUNDARY and lk.dst.node != BOUNDARY
        )
        out["config_bits"] = self.config_bits
        return out

    @property
    def config_bits(self) -> int:
        """Bits of one full configuration (every output's source code)."""
        return self.config_layout.bits

    def to_dict(self) -> dict:
        """The structure as plain data (for manifests and other tools)."""
        return {
            "arch": self.arch,
            "ports": self.ports,
            "m": getattr(self, "m", None),
            "stages": self.stages,
            "nodes": [
                {
                    "index": n.index,
                    "name": n.name,
                    "kind": n.kind.value,
                    "n_in": n.n_in,
                    "n_out": n.n_out,
                    "stage": n.stage,
                    "registered": n.registered,
                    "code_bits": n.code_bits,
                }
                for n in self.nodes
            ],
            "links": [[lk.src.node, lk.src.port, lk.dst.node, lk.dst.port] for lk in self.links],
            "counts": self.counts(),
        }
