"""The configuration bits as an ``amaranth.lib.data`` layout, built from the model's table.

The field table (model/switch/config_layout.py, ``SwitchGraph.config_layout``) says where every
node output's source code sits. Here it becomes a layout with one field per node, named by
the node (``"m0.in1"``), each itself a layout with one field per output (``0``, ``1``, ...),
at exactly the table's offsets. The interconnect's ``config`` input has this layout and
hands every uSwitch its node's field; a uSwitch reads ``codes[q]``, never an offset.
"""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.hdl import unsigned
from amaranth.lib import data

from fredfab.model.switch.config_layout import CodeField, ConfigLayout


def node_codes_layout(fields: Sequence[CodeField]) -> data.FlexibleLayout:
    """The codes of one node (its rows of the table): output q at its offset in the node."""
    base = fields[0].lsb
    size = fields[-1].lsb + fields[-1].width - base
    return data.FlexibleLayout(
        size, {f.output: data.Field(unsigned(f.width), f.lsb - base) for f in fields}
    )


def config_data_layout(table: ConfigLayout) -> data.FlexibleLayout:
    """The whole configuration: node name -> that node's codes, at the node's first lsb."""
    nodes = {}
    for fields in table.by_node.values():
        nodes[fields[0].name] = data.Field(node_codes_layout(fields), fields[0].lsb)
    return data.FlexibleLayout(table.bits, nodes)
