"""Switch configuration: what every uSwitch output carries, and its bit-level encoding.

A configuration assigns each output of each node of a ``SwitchGraph`` a *source code*
(model/switch/node.py): ``NONE`` nothing, ``node.source_input(i)`` input i,
``node.source_sum()`` the sum of inputs 0 and 1 (reducing kinds only); ``node.decode(code)``
says which. What each kind
may do (paper §4):

===== ========================================================================
R     no input feeds two outputs (no multicast); SUM feeds at most one output
D     any input to any output; the same input to both outputs is a multicast
RD    each output takes nothing, either input, or the sum (also both: multicast)
DEMUX its one input feeds at most one output
MUX   its one output takes nothing or one input
ART   like R (no multicast), over four inputs; SUM adds inputs 0 and 1
FORK  its one input feeds any outputs (multicast)
===== ========================================================================

For every reducing kind, a node that sends the sum somewhere may not also pass input 0 or
input 1 on its own: the sum consumes both together (hw/uswitch.py).

Bit-level encoding (what the control unit stores per configuration slot)
------------------------------------------------------------------------
The configuration is one bit vector, least significant bit first. Nodes appear in
``SwitchGraph.nodes`` order (topological: by stage, then by construction order); within a
node, output 0 first. Each output's source code takes ``Node.code_bits`` =
``ceil(log2(n_sources))`` bits with ``n_sources = 1 + n_in (+1 if reducing)``. The graph's
``config_layout`` (model/switch/config_layout.py) is this rule as a table of fields (node, output,
lsb, width), which packing here, the RTL and the manifest all read. Unused code
values (e.g. 3 in a 2-bit MUX field of m = 2) are invalid. ``to_words(width)`` cuts the vector
into ``width``-bit words, word 0 holding bits 0..width-1; the last word is zero-padded. The
all-zero vector is the idle configuration (nothing flows). The JSON form carries the
parameters, the flows that produced it, every node's codes by name, and the bit vector in
hex; ``from_json`` checks that they agree.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from fredfab.model.errors import InputError
from fredfab.model.switch.arches import build_topology
from fredfab.model.switch.flow import Flow
from fredfab.model.switch.graph import NONE, SUM_OPERANDS, Kind, Node, SourceKind, SwitchGraph

CONFIG_SCHEMA = "fred-config/1"


class ConfigError(InputError):
    """A configuration that the hardware cannot realise, or a malformed encoding."""


@dataclass(frozen=True)
class Configuration:
    """Source codes for every node output of ``topology``; ``codes[i]`` belongs to node i."""

    topology: SwitchGraph
    codes: tuple[tuple[int, ...], ...]
    flows: tuple[Flow, ...] = ()

    def __post_init__(self) -> None:
        if len(self.codes) != len(self.topology.nodes):
            raise ConfigError(f"{len(self.codes)} code tuples for {len(self.topology.nodes)} nodes")
        for node, codes in zip(self.topology.nodes, self.codes, strict=True):
            check_node_codes(node, codes)

    @classmethod
    def idle(cls, topology: SwitchGraph) -> Configuration:
        return cls(topology, tuple((NONE,) * n.n_out for n in topology.nodes))

    # -- bits ---------------------------------------------------------------------------

    def to_bits(self) -> int:
        return self.topology.config_layout.pack(self.codes)

    @classmethod
    def from_bits(
        cls, topology: SwitchGraph, value: int, flows: Sequence[Flow] = ()
    ) -> Configuration:
        layout = topology.config_layout
        if value < 0 or value >> layout.bits:
            raise ConfigError(
                f"configuration value has bits beyond the {layout.bits} this switch uses"
            )
        return cls(topology, layout.unpack(value), tuple(flows))

    def to_words(self, width: int = 32) -> list[int]:
        if width < 1:
            raise ConfigError(f"word width must be >= 1, got {width}")
        n_words = self.topology.config_layout.n_words(width)
        value, mask = self.to_bits(), (1 << width) - 1
        return [(value >> (i * width)) & mask for i in range(n_words)]

    @classmethod
    def from_words(
        cls,
        topology: SwitchGraph,
        words: Sequence[int],
        width: int = 32,
        flows: Sequence[Flow] = (),
    ) -> Configuration:
        if width < 1:
            raise ConfigError(f"word width must be >= 1, got {width}")
        expected = topology.config_layout.n_words(width)
        if len(words) != expected:
            raise ConfigError(f"expected {expected} words of {width} bits, got {len(words)}")
        value = 0
        for i, w in enumerate(words):
            if not 0 <= w < (1 << width):
                raise ConfigError(f"word {i} = {w:#x} does not fit in {width} bits")
            value |= w << (i * width)
        return cls.from_bits(topology, value, flows)

    # -- JSON ---------------------------------------------------------------------------

    def to_json(self) -> str:
        topo = self.topology
        return json.dumps(
            {
                "schema": CONFIG_SCHEMA,
                "arch": topo.arch,
                "ports": topo.ports,
                "m": getattr(topo, "m", None),
                "flows": [str(f) for f in self.flows],
                "config_bits": topo.config_bits,
                "bits_hex": f"{self.to_bits():x}",
                "codes": {n.name: list(c) for n, c in zip(topo.nodes, self.codes, strict=True)},
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> Configuration:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"configuration is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("schema") != CONFIG_SCHEMA:
            raise ConfigError(f"not a {CONFIG_SCHEMA} configuration (schema field)")
        missing = {"ports", "m", "bits_hex", "codes", "flows"} - set(data)
        if missing:
            raise ConfigError(f"configuration JSON lacks {sorted(missing)}")
        topo = build_topology(data["ports"], data["m"], data.get("arch", "clos"))
        flows = [Flow.parse(f) for f in data["flows"]]
        config = cls.from_bits(topo, int(data["bits_hex"], 16), flows)
        by_name = {n.name: n for n in topo.nodes}
        if set(data["codes"]) != set(by_name):
            raise ConfigError("node names in 'codes' do not match the topology")
        for name, codes in data["codes"].items():
            if tuple(codes) != config.codes[by_name[name].index]:
                raise ConfigError(f"codes of {name} disagree with bits_hex")
        return config


def check_node_codes(node: Node, codes: Sequence[int]) -> None:
    """Raise ConfigError if ``codes`` is not something ``node`` can do."""
    if len(codes) != node.n_out:
        raise ConfigError(f"{node.name}: {len(codes)} codes for {node.n_out} outputs")
    for q, c in enumerate(codes):
        if not 0 <= c < node.n_sources:
            raise ConfigError(
                f"{node.name} ({node.kind}): output {q} code {c} not in 0..{node.n_sources - 1}"
            )
    used = [c for c in codes if c != NONE]
    sources = [node.decode(c) for c in used]
    adds = any(s.kind is SourceKind.SUM for s in sources)
    if adds and any(s.kind is SourceKind.INPUT and s.input in SUM_OPERANDS for s in sources):
        # The sum consumes inputs 0 and 1 together; passing one of them as well would tie
        # two unrelated handshakes to one flit.
        raise ConfigError(
            f"{node.name} ({node.kind}): adds inputs 0 and 1 and also passes one of them, "
            f"codes {tuple(codes)}"
        )
    if node.kind in (Kind.R, Kind.ART):
        if len(set(used)) != len(used):
            raise ConfigError(
                f"{node.name} ({node.kind}): this kind cannot multicast, codes {tuple(codes)}"
            )
    elif node.kind is Kind.DEMUX and len(used) > 1:
        raise ConfigError(f"{node.name} (DEMUX): feeds more than one output, codes {tuple(codes)}")
