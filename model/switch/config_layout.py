"""Where every source code sits in a switch's configuration bits: the one field table.

The configuration is one bit vector, least significant bit first. Nodes appear in
``SwitchGraph.nodes`` order (topological: by stage, then by construction order); within a
node, output 0 first. Each output's source code takes ``Node.code_bits`` bits. This module
turns that rule into a table of ``CodeField`` (node, output, lsb, width); everything that
packs, unpacks, stores or wires configuration bits reads the table:

* model/switch/config.py: ``Configuration.to_bits`` / ``from_bits`` / ``to_words``;
* hw/config_layout.py: the ``amaranth.lib.data`` layout of the interconnect's configuration input,
  from which every uSwitch reads its named fields, and the control unit's word count;
* hw/manifest.py: the table itself, as ``config_fields``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from fredfab.model.errors import InputError
from fredfab.model.switch.node import Kind, Node


@dataclass(frozen=True)
class CodeField:
    """The source code of output ``output`` of node ``node``: bits [lsb, lsb + width)."""

    node: int  # index in SwitchGraph.nodes
    name: str  # the node's name
    kind: Kind
    output: int
    lsb: int
    width: int

    def to_dict(self) -> dict:
        return {
            "node": self.node,
            "name": self.name,
            "kind": self.kind.value,
            "output": self.output,
            "lsb": self.lsb,
            "width": self.width,
        }


@dataclass(frozen=True)
class ConfigLayout:
    """The field table of one switch: ``fields`` in bit order, ``bits`` in all."""

    fields: tuple[CodeField, ...]
    bits: int

    @classmethod
    def of_nodes(cls, nodes: Sequence[Node]) -> ConfigLayout:
        """The table for ``nodes`` (in encoding order): consecutive fields, no gaps."""
        fields, lsb = [], 0
        for node in nodes:
            for q in range(node.n_out):
                fields.append(CodeField(node.index, node.name, node.kind, q, lsb, node.code_bits))
                lsb += node.code_bits
        return cls(tuple(fields), lsb)

    def node_fields(self, node: int) -> tuple[CodeField, ...]:
        """The fields of node ``node``, output 0 first."""
        return self.by_node[node]

    @cached_property
    def by_node(self) -> dict[int, tuple[CodeField, ...]]:
        """Node index -> its fields (output 0 first), in node order."""
        grouped: dict[int, list[CodeField]] = {}
        for f in self.fields:
            grouped.setdefault(f.node, []).append(f)
        return {n: tuple(fs) for n, fs in grouped.items()}

    def n_words(self, width: int) -> int:
        """Words of ``width`` bits that hold the configuration (the last one zero-padded)."""
        if width < 1:
            raise InputError(f"word width must be >= 1, got {width}")
        return -(-self.bits // width)

    def pack(self, codes: Sequence[Sequence[int]]) -> int:
        """The bit vector of ``codes`` (``codes[node][output]``); codes must fit their fields."""
        value = 0
        for f in self.fields:
            value |= codes[f.node][f.output] << f.lsb
        return value

    def unpack(self, value: int) -> tuple[tuple[int, ...], ...]:
        """``codes[node][output]`` of a bit vector (no check of what the codes mean)."""
        return tuple(
            tuple((value >> f.lsb) & ((1 << f.width) - 1) for f in fields)
            for fields in self.by_node.values()
        )

    def to_list(self) -> list[dict]:
        """The table as plain data (the manifest's ``config_fields``)."""
        return [f.to_dict() for f in self.fields]
